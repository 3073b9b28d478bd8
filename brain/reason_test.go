package brain

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apserver/apserver/protocol"
)

func TestAlignmentReason(t *testing.T) {
	v := protocol.AlignmentVerdict{Status: protocol.AlignmentConflicting, Reasons: []string{"adds MySQL", "the project uses PostgreSQL"},
		Decisions: []protocol.DecisionRef{{ID: "d1", Title: "Use PostgreSQL"}}}
	want := `The project brain judged this conflicting against decision d1 "Use PostgreSQL": adds MySQL; the project uses PostgreSQL. Approving records a decision that supersedes it.`
	if got := AlignmentReason(v); got != want {
		t.Errorf("AlignmentReason = %q, want %q", got, want)
	}
	v = protocol.AlignmentVerdict{Status: protocol.AlignmentConflicting, Reasons: []string{strings.Repeat("é", 400)}}
	got := AlignmentReason(v)
	if len(got) > 600 || len(got) < 598 || !utf8.ValidString(got) {
		t.Errorf("a long reason gives %d bytes (valid UTF-8: %v), want at most 600 cut at a rune", len(got), utf8.ValidString(got))
	}
}
