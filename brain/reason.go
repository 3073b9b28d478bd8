package brain

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apserver/apserver/protocol"
)

// maxReason bounds an approval reason from a verdict, in bytes.
const maxReason = 600

// AlignmentReason is the approval reason of an action the alignment check
// stopped: the verdict, the decisions it goes against, the reasons; at
// most 600 bytes, cut at a rune boundary.
func AlignmentReason(v protocol.AlignmentVerdict) string {
	var names []string
	for _, d := range v.Decisions {
		names = append(names, fmt.Sprintf("%s %q", d.ID, d.Title))
	}
	s := "The project brain judged this " + string(v.Status)
	if len(names) > 0 {
		s += " against decision " + strings.Join(names, ", ")
	}
	s += ": " + strings.Join(v.Reasons, "; ") + ". Approving records a decision that supersedes it."
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
