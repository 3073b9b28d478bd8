package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/internal/scenario"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/store"
)

var update = flag.Bool("update", false, "rewrite the golden decision scripts of controller/testdata/scenarios")

// scenarioDir holds the public full-auto scenario suite.
const scenarioDir = "../controller/testdata/scenarios"

// binaryScenarios are the scenarios run through the real binary: a plain
// completion, approvals answered by the editor and by the rules, and an
// override (onApprovalTimeout=pause) that `apserver replay` must
// reproduce. session's TestScenarios runs the whole suite in process on a
// fake clock.
var binaryScenarios = []string{"done", "approval-answered", "approval-timeout-pause", "denied-prefix"}

// TestScenarios runs full-auto scenarios of the public suite through the
// real binary and the scripted model, and checks the final action, stop
// condition and number of turns, the golden decision script (rewritten by
// -update), and that `apserver replay` reproduces every decision and how
// it was carried out.
//
// A scenario is a txtar archive:
//
//	-- script.json --    the scripted model (model/scripted.LoadScript)
//	-- start.json --     fullAuto/start params (threadId is added)
//	-- expect.json --    {"action", "stopCondition", "turns"}: the run's end
//	-- decisions --      the golden decision script
//	-- config.toml --    (optional) the user config file
//	-- thread.json --    (optional) thread/start params (cwd is added)
//	-- answers --        (optional) how the editor answers server requests:
//	                     one "METHOD RESULT-JSON" or "METHOD none" per line
//	-- workspace/PATH -- (optional) files of the workspace
func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, name := range binaryScenarios {
		f := filepath.Join(scenarioDir, name+".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, f)
		})
	}
}

func runScenario(t *testing.T, path string) {
	cwd := t.TempDir()
	sc, err := scenario.Load(path, cwd)
	if err != nil {
		t.Fatal(err)
	}
	ar, want, answers, cfg := sc.Archive, sc.Expect, sc.Answers, sc.Config
	var start map[string]any
	if err := json.Unmarshal(sc.Start, &start); err != nil {
		t.Fatalf("start.json: %v", err)
	}
	threadParams := map[string]any{"approvalPolicy": "never"}
	if sc.Thread != nil {
		if err := json.Unmarshal(sc.Thread, &threadParams); err != nil {
			t.Fatalf("thread.json: %v", err)
		}
	}

	model, err := scripted.Start(sc.Script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)
	dataDir := t.TempDir()
	c := newFAClient(t, model, faOptions{dataDir: dataDir, config: cfg, inProcess: true})
	threadParams["cwd"] = cwd
	r := c.call("thread/start", threadParams)
	threadID := r.str("thread.id")
	c.startFullAuto(threadID, start)

	// Answer requests as the scenario says until the run stops or pauses.
	answered := map[int]bool{}
	var end *message
	for end == nil {
		m := c.waitMsg("a request or the end of the run", 0, func(m *message) bool {
			if m.isRequest() && !answered[m.Seq] {
				return true
			}
			return m.Method == "fullAuto/statusChanged" && m.str("threadId") == threadID &&
				(m.str("state") == "stopped" || m.str("state") == "paused")
		})
		if !m.isRequest() {
			end = m
			break
		}
		answered[m.Seq] = true
		a, ok := answers[m.Method]
		switch {
		case !ok:
			t.Fatalf("unexpected request %s (the scenario's answers do not cover it)", m.Raw)
		case a == "none":
			c.mu.Lock()
			c.noReply[string(m.ID)] = true
			c.mu.Unlock()
		default:
			c.answer(m, json.RawMessage(a))
		}
	}

	turns := int(jget(end.params, "run.spent.turns").(float64))
	last, _ := jget(end.params, "run.lastDecision").(map[string]any)
	gotAction, _ := last["action"].(string)
	gotCond, _ := jget(end.params, "run.stopCondition").(string)
	if gotAction != want.Action || gotCond != want.StopCondition || turns != want.Turns {
		t.Errorf("run ended with %s/%s after %d turns, want %s/%s after %d\n%s",
			gotAction, gotCond, turns, want.Action, want.StopCondition, want.Turns, end.Raw)
	}
	if n := len(c.find("turn/completed", nil)); n != want.Turns {
		t.Errorf("%d turn/completed, want %d", n, want.Turns)
	}

	golden := decisionScript(t, dataDir, threadID)
	if *update {
		ar.Set("decisions", golden)
		if err := os.WriteFile(path, []byte(ar.Format()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if g, _ := ar.Get("decisions"); g != golden {
		t.Errorf("decision script differs (run with -update and review the diff):\ngot:\n%swant:\n%s", golden, g)
	}

	// apserver replay reproduces every decision.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, binPath, "replay", "--data-dir", dataDir, threadID).CombinedOutput()
	if err != nil {
		t.Errorf("apserver replay: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte(" 0 differ")) {
		t.Errorf("apserver replay output:\n%s", out)
	}
	// and so does the run's event log, replayed through the machine.
	if !bytes.Contains(out, []byte("decisions replayed, 0 differ")) {
		t.Errorf("apserver replay did not replay the run's event log:\n%s", out)
	}
}

// decisionScript renders the thread's receipts as the golden decision
// script: one line per receipt, with what the controller saw and decided
// (nothing that depends on timing, ids or token counts).
func decisionScript(t *testing.T, dataDir, threadID string) string {
	t.Helper()
	db, err := store.OpenReadOnly(filepath.Join(dataDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Receipts(context.Background(), threadID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := scenario.DecisionScript(rs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
