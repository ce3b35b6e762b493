package results

import (
	"fmt"
	"strings"
)

// Analogy words a probe's likeness: closest is named alone only when half the judged rows
// or more agree with it and no other (tied) agrees as well.
func Analogy(closest string, tied []string, agree, judged int) string {
	switch {
	case judged == 0:
		return "behaves like no client labrun can name: no row was judged"
	case 2*agree < judged:
		return fmt.Sprintf("behaves like no client labrun knows: at most %d of %d rows agree with one (%s)", agree, judged, closest)
	case len(tied) > 0:
		names := append([]string{closest}, tied...)
		if len(names) > maxTiedNamed {
			names = append(names[:maxTiedNamed:maxTiedNamed], fmt.Sprintf("%d others", len(names)-maxTiedNamed))
		}
		return fmt.Sprintf("behaves like %s and %s alike, a tie the rows cannot break (%d of %d rows agree with each)",
			strings.Join(names[:len(names)-1], ", "), names[len(names)-1], agree, judged)
	}
	return fmt.Sprintf("behaves most like %s (%d of %d rows agree)", closest, agree, judged)
}

const maxTiedNamed = 3 // Analogy counts the others

// TiedSep separates the clients of a probe's "tied" parameter.
const TiedSep = "; "
