package session

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
		got := elideOutput(tc.in, tc.budget, "0123456789abcdef")
		if !strings.HasPrefix(got, tc.head) || !strings.HasSuffix(got, tc.tail) || !strings.Contains(got, tc.marker) || len(got) > tc.maxLength {
			t.Errorf("%s: elideOutput = %d bytes, head %q…, tail …%q", tc.name, len(got), got[:min(60, len(got))], got[max(0, len(got)-60):])
		}
		if !strings.Contains(got, "The whole output is kept") {
			t.Errorf("%s: no marker in %q", tc.name, got[:min(200, len(got))])
		}
	}
	// The marker's line numbers are those of the lines left out.
	got := elideOutput(log.String(), 4096, "0123456789abcdef")
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

// TestReadOutput: read_output pages through a saved output by line, says
// what is left, and refuses an id that names no saved output or no file.
func TestReadOutput(t *testing.T) {
	th := &thread{id: "thread-1", m: &Manager{opts: Options{DataDir: t.TempDir()}}}
	tr := &turn{}
	var log strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&log, "line %03d\n", i)
	}
	id := outputID(log.String())
	if err := th.saveOutput(id, log.String()); err != nil {
		t.Fatal(err)
	}
	args := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		args string
		want []string // the page contains each
		not  []string // and none of these
	}{
		{`{"id":"` + id + `","offset":10,"limit":3}`, []string{"Lines 10 to 12 of 500", "line 010\nline 011\nline 012\n", `"offset": 13`}, []string{"line 009", "line 013"}},
		{`{"id":"` + id + `"}`, []string{"Lines 1 to 200 of 500", "line 200\n", "300 more lines"}, []string{"line 201"}},
		{`{"id":"` + id + `","offset":499}`, []string{"Lines 499 to 500 of 500", "line 500\n"}, []string{"more lines"}},
		{`{"id":"` + id + `","offset":900}`, []string{"has 500 lines; offset 900 is past its end"}, nil},
	} {
		got, err := th.readOutput(tr, args(tc.args))
		if err != nil {
			t.Errorf("readOutput(%s): %v", tc.args, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("readOutput(%s) = %q, want it to contain %q", tc.args, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("readOutput(%s) = %q, want no %q", tc.args, got, n)
			}
		}
	}
	for _, bad := range []string{`{}`, `{"id":"../../etc/passwd"}`, `{"id":"0123456789abcdef"}`, `not json`} {
		if got, err := th.readOutput(tr, args(bad)); err == nil {
			t.Errorf("readOutput(%s) = %q, want an error", bad, got)
		}
	}
}
