package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestRunRestoresFromLog: a run waiting on the editor when apserver stops
// comes back from its event log (replayed through the machine), and a run
// stored before runs had a log — only its snapshot — comes back from the
// snapshot, which starts its log. Either way the request is re-sent and
// its answer carries the run to its end.
func TestRunRestoresFromLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		snapshot bool // drop the log: the run was stored before logs
		first    string
	}{
		{"event log", false, "start"},
		{"snapshot stored before logs", true, "loaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, id, _ := waitingRun(t, scripted.ToolCall{Command: "touch marker.txt"})
			ctx := context.Background()
			db, err := store.Open(h.dbPath, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			lg := readLog(t, db, id)
			if got := kinds(lg); len(got) < 4 || got[0] != "start" || !contains(got, "requestForwarded") {
				t.Fatalf("stored log %v, want it to begin with start and hold requestForwarded", got)
			}
			if tc.snapshot {
				if err := db.DeleteFullAutoLog(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			_ = db.Close()

			h.open(t, false)
			h.m.RestoreFullAuto()
			var again *fakeCall
			select {
			case again = <-h.c.calls:
			case <-time.After(testTimeout):
				t.Fatal("the run did not re-send the request it waited on")
			}
			if again.method != protocol.RequestCommandApproval {
				t.Fatalf("re-sent %s, want %s", again.method, protocol.RequestCommandApproval)
			}
			again.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
			_ = h.m.Close()

			db, err = store.Open(h.dbPath, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			got := kinds(readLog(t, db, id))
			if got[0] != tc.first || !contains(got, "resentAnswered") {
				t.Errorf("log after the restart %v, want it to begin with %s and hold resentAnswered", got, tc.first)
			}
			// The log alone gives the run as stored.
			sr, err := db.GetDrive(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			lg = readLog(t, db, id)
			m := fullauto.Replay(lg.Base.Options, lg)
			b, _ := json.Marshal(m.Drive())
			if string(b) != string(sr.Data) {
				t.Errorf("run replayed from its log:\n%s\nwant the stored one:\n%s", b, sr.Data)
			}
		})
	}
}

func readLog(t *testing.T, db *store.Store, id string) fullauto.Log {
	t.Helper()
	sl, err := db.GetFullAutoLog(context.Background(), id)
	if err != nil {
		t.Fatalf("the run's log: %v", err)
	}
	lg, err := fullauto.DecodeLog(sl.Base, sl.Entries)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

func kinds(lg fullauto.Log) []string {
	var out []string
	for _, e := range lg.Events {
		b, _ := json.Marshal(e)
		var w struct{ Type string }
		_ = json.Unmarshal(b, &w)
		out = append(out, w.Type)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
