package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/tooloutput"
)

// TestReadOutput: read_output pages through a saved output by line, says
// what is left, and refuses an id that names no saved output or no file.
func TestReadOutput(t *testing.T) {
	th := &thread{id: "thread-1", m: &Manager{opts: Options{DataDir: t.TempDir()}}}
	tr := &turn{}
	var log strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&log, "line %03d\n", i)
	}
	id := tooloutput.ID(log.String())
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
