package runs

import (
	"reflect"
	"strings"
	"testing"
)

func TestMissingEvidence(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name     string
		attempts []CheckAttempt
		covered  []string
		want     []string // substrings, one per line
	}{
		{"none", nil, nil, nil},
		{"passed", []CheckAttempt{{Command: "make test", ExitCode: code(0)}}, nil, nil},
		{"declined", []CheckAttempt{{Command: "make test", Declined: true}}, nil, []string{"`make test` in the task's thread was declined"}},
		{"failed", []CheckAttempt{{Command: "go test ./...", ExitCode: code(1)}}, nil, []string{"`go test ./...` in the task's thread failed (exit 1)"}},
		{"never ran", []CheckAttempt{{Command: "pytest"}}, nil, []string{"`pytest` in the task's thread never finished"}},
		{"failed then passed", []CheckAttempt{{Command: "make test", ExitCode: code(2)}, {Command: "make test", ExitCode: code(0)}}, nil, nil},
		{"passed then failed", []CheckAttempt{{Command: "make test", ExitCode: code(0)}, {Command: "make test", ExitCode: code(2)}}, nil, []string{"failed (exit 2)"}},
		{"the validator runs it", []CheckAttempt{{Command: "make test", Declined: true}}, []string{"make test"}, nil},
		{"two", []CheckAttempt{{Command: "a", Declined: true}, {Command: "b", ExitCode: code(0)}, {Command: "c", ExitCode: code(3)}}, nil,
			[]string{"`a`", "`c`"}},
	} {
		got := MissingEvidence(tc.attempts, tc.covered)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s: MissingEvidence = %q, want lines with %q", tc.name, got, tc.want)
		}
	}
	if got := MissingEvidence(nil, nil); !reflect.DeepEqual(got, []string(nil)) {
		t.Errorf("MissingEvidence(nil) = %q", got)
	}
}
