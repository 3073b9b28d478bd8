package tooloutput

import (
	"fmt"
	"strings"
	"testing"
)

// TestElideOutput: a cut output keeps whole lines of its head and tail
// within the budget, and its marker names the lines left out and how to
// read them; a single line longer than the budget is cut at a rune
// boundary.
func TestElideOutput(t *testing.T) {
	var log strings.Builder
	for i := 1; i <= 2600; i++ {
		fmt.Fprintf(&log, "test case %04d: ok\n", i)
	}
	for _, tc := range []struct {
		name, in  string
		budget    int
		head      string // the output starts with it
		tail      string // and ends with it
		marker    string // the marker says it
		maxLength int
	}{
		{"log", log.String(), 4096, "test case 0001: ok\n", "test case 2600: ok\n", `read_output {"id": "0123456789abcdef", "offset": `, 4096 + 300},
		{"one long line", strings.Repeat("é", 10000), 2048, "éé", "", "lines 1 to 1 of 1", 2048 + 300},
	} {
		got := Elide(tc.in, tc.budget, "0123456789abcdef")
		if !strings.HasPrefix(got, tc.head) || !strings.HasSuffix(got, tc.tail) || !strings.Contains(got, tc.marker) || len(got) > tc.maxLength {
			t.Errorf("%s: Elide = %d bytes, head %q…, tail …%q", tc.name, len(got), got[:min(60, len(got))], got[max(0, len(got)-60):])
		}
		if !strings.Contains(got, "The whole output is kept") {
			t.Errorf("%s: no marker in %q", tc.name, got[:min(200, len(got))])
		}
	}
	// The marker's line numbers are those of the lines left out.
	got := Elide(log.String(), 4096, "0123456789abcdef")
	var first, last, total int
	if i := strings.Index(got, "[… lines "); i < 0 {
		t.Fatal("no marker")
	} else if _, err := fmt.Sscanf(got[i:], "[… lines %d to %d of %d", &first, &last, &total); err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprintf("test case %04d: ok\n", first-1)
	after := fmt.Sprintf("test case %04d: ok\n", last+1)
	if total != 2600 || !strings.Contains(got, before) || !strings.Contains(got, after) ||
		strings.Contains(got, fmt.Sprintf("test case %04d:", first)) || strings.Contains(got, fmt.Sprintf("test case %04d:", last)) {
		t.Errorf("marker says lines %d to %d of %d, which does not match what is kept", first, last, total)
	}
}
