package results

import (
	"fmt"
	"strings"
)

// Analogy words how a probe's rows compare with the clients labrun knows: the closest is
// named only when at least half of the judged rows agree with it and no other client
// (tied) agrees as well; a tie is named as one.
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

// maxTiedNamed is how many tied clients Analogy names; it counts the others.
const maxTiedNamed = 3

// TiedSep separates the clients of a probe's "tied" parameter.
const TiedSep = "; "
