package blueprints

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/tools/sandbox"
)

// checkTimeout bounds one acceptance check of blueprint/verify.
const checkTimeout = 10 * time.Minute

// Verify implements blueprint/verify: the acceptance (checks and files) of
// every done task under the node runs again in the blueprint's cwd, each
// check in the sandbox (workspace-write on the cwd); a task that fails is
// planned again, with its event, and blueprint/updated is sent.
func (s *Service) Verify(ctx context.Context, p protocol.BlueprintVerifyParams) (protocol.BlueprintVerifyResult, error) {
	res := protocol.BlueprintVerifyResult{Data: []protocol.TaskVerification{}}
	if p.NodeID == "" {
		return res, protocol.MissingField("nodeId")
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	b, v, err := s.version(ctx, st, p.BlueprintID, "")
	if err != nil {
		return res, err
	}
	if b.Cwd == "" || !filepath.IsAbs(b.Cwd) {
		return res, invalid("blueprintId: blueprint %s has no cwd to verify in (ingest it with cwd)", b.ID)
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return res, err
	}
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return res, err
	}
	wt := blueprint.WithTasks(t, tasks)
	idx := wt.Index()
	root, ok := idx[p.NodeID]
	if !ok {
		return res, invalid("nodeId: unknown node %s", p.NodeID)
	}
	under := map[string]bool{}
	for i := root; i < len(wt.Nodes) && (i == root || wt.Nodes[i].Depth > wt.Nodes[root].Depth); i++ {
		under[wt.Nodes[i].ID] = true
	}
	c := s.opts.Config
	pol := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{b.Cwd}, ReadableRoots: c.SandboxReadableRoots,
		Network: c.SandboxNetwork, AllowTmp: true}
	var reopened []string
	for _, x := range tasks {
		if !under[x.ID] || x.Status != protocol.NodeDone {
			continue
		}
		tv := protocol.TaskVerification{TaskID: x.ID, Title: x.Title, Passed: true, Checks: []protocol.CheckResult{}}
		couldNotRun := false
		for _, f := range x.Acceptance.Files {
			if present, err := files.Inside(b.Cwd, f); err != nil || !present {
				tv.Passed = false
				tv.MissingFiles = append(tv.MissingFiles, f)
			}
		}
		for _, check := range x.Acceptance.Checks {
			r, err := tools.Exec(ctx, tools.ExecRequest{Command: check, Dir: b.Cwd, Timeout: checkTimeout, MaxOutputBytes: 16 << 10, Sandbox: pol}, nil)
			cr := protocol.CheckResult{Command: check, ExitCode: r.ExitCode}
			switch {
			case ctx.Err() != nil:
				return res, ctx.Err()
			case err != nil:
				cr.ExitCode, cr.Error = -1, err.Error()
				couldNotRun = true
			case r.ExitCode != 0:
				tv.Passed = false
				out := strings.TrimSpace(r.Output)
				if len(out) > 2000 {
					out = out[len(out)-2000:]
				}
				cr.Output = out
			}
			tv.Checks = append(tv.Checks, cr)
		}
		if couldNotRun && tv.Passed {
			tv.Passed = false // not proven either way: left as it was
		}
		if !tv.Passed && !couldNotRun {
			tv.Reopened = true
			reopened = append(reopened, x.ID)
		}
		res.Data = append(res.Data, tv)
	}
	if len(reopened) > 0 {
		if err := s.reopen(ctx, st, b.ID, v.ID, reopened, res.Data); err != nil {
			return res, err
		}
	}
	s.writePlan(ctx, st, b.ID)
	return res, nil
}

// reopen plans tasks again after a failed verification, with the nodes
// whose status follows them, in one transaction.
func (s *Service) reopen(ctx context.Context, st *store.Store, bpID, versionID string, ids []string, report []protocol.TaskVerification) error {
	s.edit.Lock()
	defer s.edit.Unlock()
	v, err := st.BlueprintVersion(ctx, versionID)
	if err != nil {
		return err
	}
	v.Document = ""
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return err
	}
	tasks, err := s.tasks(ctx, st, versionID)
	if err != nil {
		return err
	}
	for i := range tasks {
		if slices.Contains(ids, tasks[i].ID) {
			// Its evidence no longer holds: the event log keeps it.
			tasks[i].Status, tasks[i].Evidence = protocol.NodePlanned, nil
		}
	}
	ev, _ := json.Marshal(map[string]any{"reopened": ids, "verification": report})
	if err := s.commitTasks(ctx, st, bpID, versionID, t, tasks, ids, "tasks.reopened", ev); err != nil {
		return fmt.Errorf("reopening tasks %v: %w", ids, err)
	}
	return nil
}
