package report

import (
	"strings"
	"testing"
)

func TestColorize(t *testing.T) {
	in := "exp-a · t\n" +
		"+-----+---------+\n" +
		"| row | verdict |\n" +
		"| a   | pass    |\n" +
		"| b   | FAIL: x |\n" +
		"tolerance ±100 ms · 1/2 rows pass · FAIL\n" +
		"all: 0/1 experiments pass, failed: exp-a\n"
	want := "exp-a · t\n" +
		"+-----+---------+\n" +
		"| row | verdict |\n" +
		"| a   | " + green + "pass" + reset + "    |\n" +
		"| b   | " + red + "FAIL: x" + reset + " |\n" +
		"tolerance ±100 ms · 1/2 rows pass · " + red + "FAIL" + reset + "\n" +
		red + "all: 0/1 experiments pass, failed: exp-a" + reset + "\n"
	got := string(Colorize([]byte(in)))
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// Without the escape codes the text is unchanged, so the alignment is kept.
	plain := strings.NewReplacer(green, "", red, "", yellow, "", reset, "").Replace(got)
	if plain != in {
		t.Errorf("colour changed the text:\n%s", plain)
	}
}
