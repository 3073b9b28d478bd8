package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/rules"
)

// evidence reads the checks the task's thread ran (command items that run
// a check of the command rules) and returns what runs.MissingEvidence
// finds unproven. The task's own acceptance checks are left to the
// validator, which runs them itself.
func (x *run) evidence(ctx context.Context, cfg runs.Config, t protocol.RunTask) ([]string, error) {
	if t.ThreadID == nil || *t.ThreadID == "" {
		return nil, nil
	}
	if x.rn.unknownThread(ctx, *t.ThreadID) {
		// The thread is another process's (a cluster worker that died
		// or lost the run): its attempts cannot be read here; the checks
		// themselves were just run by the validation.
		return nil, nil
	}
	items, err := x.rn.threads.Items(ctx, *t.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("reading the checks of task %s's thread: %w", t.ID, err)
	}
	set := x.checkRules()
	home, _ := os.UserHomeDir()
	rc := rules.Context{Cwd: cfg.Worktree, Home: home}
	var attempts []runs.CheckAttempt
	for _, e := range items {
		var c protocol.CommandExecutionItem
		switch v := e.Item.(type) {
		case protocol.CommandExecutionItem:
			c = v
		case *protocol.CommandExecutionItem:
			c = *v
		case protocol.RawItem: // as the store gives it back
			if v.Type != "commandExecution" || json.Unmarshal(v.Raw, &c) != nil {
				continue
			}
		default:
			continue
		}
		if !set.IsCheck(c.Command, rc) {
			continue
		}
		a := runs.CheckAttempt{Command: script(c.Command), Declined: c.Status == protocol.ItemDeclined, ExitCode: c.ExitCode}
		if c.Status == protocol.ItemInProgress {
			a.ExitCode = nil
		}
		attempts = append(attempts, a)
	}
	covered := make([]string, 0, 2*len(t.Acceptance.Checks))
	for _, c := range t.Acceptance.Checks {
		covered = append(covered, c, tools.DisplayCommand(c))
	}
	return runs.MissingEvidence(attempts, covered), nil
}

// script is the command a command item ran, as the model wrote it: its
// command line is the shell running it (tools.DisplayCommand).
func script(display string) string {
	empty := tools.DisplayCommand("")
	prefix := empty[:len(empty)-1]
	if len(display) >= len(empty) && strings.HasPrefix(display, prefix) && strings.HasSuffix(display, "'") {
		return strings.ReplaceAll(display[len(prefix):len(display)-1], `'\''`, "'")
	}
	return display
}

// checkRules are the command rules (builtin and the user's rules file),
// which say what a check is.
func (x *run) checkRules() *rules.Set {
	var files []string
	if f := x.rn.opts.Config.RulesFile; f != "" {
		files = append(files, f)
	}
	set, err := rules.Load(files...)
	if err != nil {
		set = rules.Builtin()
	}
	return set
}
