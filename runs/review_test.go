package runs

import (
	"strings"
	"testing"
)

// The validator's answer is checked field by field; the error names what
// is wrong.
func TestParseReview(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Review
		err  string
	}{
		{`{"pass":true,"findings":"fine"}`, Review{Pass: true, Findings: "fine"}, ""},
		{"```json\n{\"pass\": false, \"findings\": \"no test\"}\n```", Review{Findings: "no test"}, ""},
		{`looks good to me`, Review{}, "not a JSON object"},
		{`{"findings":"fine"}`, Review{}, "pass is missing"},
		{`{"pass":"yes","findings":"fine"}`, Review{}, `pass must be a boolean, got "yes"`},
		{`{"pass":null,"findings":"fine"}`, Review{}, "pass must be a boolean, got null"},
		{`{"pass":true}`, Review{}, "findings is missing"},
		{`{"pass":true,"findings":["a"]}`, Review{}, "findings must be a string"},
		{`{"pass":true,"findings":"x","score":9}`, Review{}, `unknown field "score"`},
		{`[true, "x"]`, Review{}, "not a JSON object"},
	} {
		got, err := ParseReview(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseReview(%q) = %+v, %v, want %+v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseReview(%q) = %+v, %v, want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}
