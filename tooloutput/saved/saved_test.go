package saved

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/tooloutput"
)

func TestSaveAndRead(t *testing.T) {
	dir := t.TempDir()
	o := Outputs{DataDir: dir}
	text := strings.Repeat("line\n", 10)
	id := tooloutput.ID(text)
	if err := o.Save("th", id, text); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, tooloutput.Dir, "th", id+".txt")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved output %s: %v, mode %v; want 0600", p, err, fi)
	}
	got, err := o.Read("th", []byte(`{"id":"`+id+`","limit":2}`), func() int { return 1 << 10 })
	if err != nil || !strings.Contains(got, "Lines 1 to 2 of 10") {
		t.Errorf("Read = %q, %v", got, err)
	}
	if _, err := o.Read("other", []byte(`{"id":"`+id+`"}`), func() int { return 1 << 10 }); err == nil || !strings.Contains(err.Error(), "no saved output") {
		t.Errorf("Read of another thread's output = %v, want no saved output", err)
	}
	if _, err := (Outputs{}).Path("th", id); err == nil {
		t.Error("Path without a data directory succeeded")
	}
	if _, err := o.Path("th", "../../x"); err == nil {
		t.Error("Path of a bad id succeeded")
	}
}

func TestCut(t *testing.T) {
	o := Outputs{DataDir: t.TempDir()}
	long := strings.Repeat("0123456789\n", 500) // 5500 bytes
	short := "ok\n"
	hist := []model.Entry{
		{Kind: model.EntryToolCall, CallID: "c1", Name: "exec_command"},
		{Kind: model.EntryToolOutput, CallID: "c1", Output: long},
		{Kind: model.EntryToolOutput, CallID: "c2", Output: short},
	}
	asked := 0
	budget := func() int { asked++; return 2048 }
	fail := func(callID string, err error) { t.Errorf("save of %s failed: %v", callID, err) }
	got := o.Cut("th", hist, nil, budget, fail)
	if hist[1].Output != long {
		t.Fatal("Cut changed the caller's slice")
	}
	id := tooloutput.ID(long)
	if len(got[1].Output) > 2048+200 || !strings.Contains(got[1].Output, id) || got[2].Output != short || asked != 1 {
		t.Errorf("Cut: output %d bytes naming %s: %v; short %q; budget asked %d times", len(got[1].Output), id, strings.Contains(got[1].Output, id), got[2].Output, asked)
	}
	if saved, err := os.ReadFile(filepath.Join(o.DataDir, tooloutput.Dir, "th", id+".txt")); err != nil || string(saved) != long {
		t.Errorf("the whole output was not saved: %v", err)
	}

	// A command's whole output is its aggregated output, under the head.
	whole := strings.Repeat("abcdefghij\n", 600)
	cmd := []model.Entry{{Kind: model.EntryToolOutput, CallID: "c3", Output: "Exit code: 1\nWall time: 1 seconds\nOutput:\n" + long}}
	if got := o.Cut("th", cmd, &whole, budget, fail); !strings.HasPrefix(got[0].Output, "Exit code: 1\n") || !strings.Contains(got[0].Output, tooloutput.ID(whole)) {
		t.Errorf("Cut of a command's output = %q, want its head and the aggregated output's id", got[0].Output[:min(200, len(got[0].Output))])
	}

	// No budget (unknown window), or a failed save: left as it is.
	if got := o.Cut("th", hist, nil, func() int { return 0 }, fail); got[1].Output != long {
		t.Error("Cut without a budget cut an output")
	}
	var failed []string
	got = Outputs{}.Cut("th", hist, nil, budget, func(callID string, err error) { failed = append(failed, callID) })
	if got[1].Output != long || len(failed) != 1 || failed[0] != "c1" {
		t.Errorf("Cut without a data directory: output cut %v, failed %q; want left, c1 failed", got[1].Output != long, failed)
	}
}
