package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apserver/apserver/commandpolicy"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/threadwire"
	"github.com/apserver/apserver/tools"
	"github.com/apserver/apserver/tools/checkpoint"
	"github.com/apserver/apserver/tools/rules"
	"github.com/apserver/apserver/tools/sandbox"
)

// DeleteThread implements thread/delete: a loaded thread is unloaded
// (its turn interrupted), its stored turns, items, events, full-auto
// records and checkpoint references are removed, then {} and
// thread/deleted. Deleting is final; thread/archive hides a thread instead.
func (m *Manager) DeleteThread(ctx context.Context, p protocol.ThreadIDParams, reply Reply) {
	go func() {
		t := m.loaded(p.ThreadID)
		ephemeral := t != nil && t.meta.Ephemeral // never changes after creation
		var db *store.Store
		if !ephemeral {
			var err error
			if db, _, err = m.storedThread(ctx, p.ThreadID); err != nil {
				reply(nil, err)
				return
			}
		}
		if t != nil {
			t.unload()
		}
		if db != nil {
			if err := db.DeleteThread(ctx, p.ThreadID); err != nil {
				reply(nil, wrapNotFound(p.ThreadID, err))
				return
			}
			if keys, err := db.ListState(ctx, checkpoint.TurnKey(p.ThreadID, "")); err == nil {
				for k := range keys {
					_ = db.DeleteState(ctx, k)
				}
			}
		}
		reply(protocol.Empty{}, nil)
		m.notifyAbout(p.ThreadID, protocol.NotifyThreadDeleted, protocol.ThreadIDNotification(p))
	}()
}

// UpdateThreadMetadata implements thread/metadata/update: it patches the
// thread's stored git metadata (absent keeps a field, null clears it) and
// answers with the thread. apserver keeps no projects, so projectId may
// only be cleared; daybreakEnabled is accepted and not kept.
func (m *Manager) UpdateThreadMetadata(ctx context.Context, p protocol.ThreadMetadataUpdateParams, reply Reply) {
	if t := m.loaded(p.ThreadID); t != nil {
		t.post(func() {
			t.settings.GitInfo = threadwire.PatchGitInfo(t.settings.GitInfo, p.GitInfo)
			if t.persistent() {
				if err := t.saveMeta(); err != nil {
					reply(nil, err)
					return
				}
			} else {
				t.meta.Settings, _ = json.Marshal(t.settings)
			}
			reply(protocol.ThreadResult{Thread: t.wire(false)}, nil)
		})
		return
	}
	go func() {
		db, meta, err := m.storedThread(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		s := threadwire.SettingsFromStore(meta, m.defaultSettings())
		s.GitInfo = threadwire.PatchGitInfo(s.GitInfo, p.GitInfo)
		meta.Settings, _ = json.Marshal(s)
		if err := db.UpdateThread(ctx, meta); err != nil {
			reply(nil, err)
			return
		}
		reply(protocol.ThreadResult{Thread: m.wireThread(meta, m.liveStatus(meta.ID))}, nil)
	}()
}

// userShellTimeout is how long a thread/shellCommand may run when the
// client names no timeout (Codex's default).
const userShellTimeout = time.Hour

// ShellCommand implements thread/shellCommand, the TUI's `!cmd`: the
// user's own command, run in the thread's workspace. It is answered {} at
// once; the command runs as a turn of its own (turn/started, a
// commandExecution item with source "userShell" and its output deltas,
// turn/completed), and its output joins the conversation so that the
// model sees it next turn. It needs no approval (the user is the human
// who would give it), but the rules and the sandbox apply as to the
// agent's commands: forbidden is refused, and it runs confined to the
// thread's sandbox (Codex runs it unsandboxed; see docs/protocol.md).
// A thread with a turn in progress or a full-auto run refuses it.
func (m *Manager) ShellCommand(ctx context.Context, p protocol.ThreadShellCommandParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.shellCommand(p, reply) })
}

func (t *thread) shellCommand(p protocol.ThreadShellCommandParams, reply Reply) {
	switch {
	case t.turn != nil:
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "a turn is in progress on thread %s; run the command when it ends", t.id))
		return
	case t.autoDrive().Active():
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "a full-auto run is active on thread %s; pause it first", t.id))
		return
	}
	tr, err := t.beginTurn(protocol.TurnStartParams{ThreadID: t.id})
	if err != nil {
		reply(nil, err)
		return
	}
	reply(protocol.Empty{}, nil)
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{}})
	started := tr.wire(protocol.ItemsNotLoaded)
	started.StartedAt = ptr(tr.started.Unix())
	t.notify(protocol.NotifyTurnStarted, protocol.TurnNotification{ThreadID: t.id, Turn: started})
	tr.histStart = len(t.history)

	timeout := userShellTimeout
	if p.TimeoutMs != nil {
		timeout = max(time.Duration(*p.TimeoutMs)*time.Millisecond, time.Nanosecond)
	}
	run := &commandRun{command: p.Command, dir: t.settings.Cwd, timeout: timeout}
	run.item = protocol.CommandExecutionItem{
		ID:             t.uniqueItemID(""),
		Command:        tools.DisplayCommand(p.Command),
		Cwd:            run.dir,
		Source:         "userShell",
		Status:         protocol.ItemInProgress,
		CommandActions: commandpolicy.CommandActions(p.Command),
	}
	t.notifyItemStarted(tr, run.item)
	sb, refuse := t.judge().userCommandPlan(p.Command)
	if refuse != "" {
		run.item.AggregatedOutput = ptr(refuse)
		t.finishUserShell(tr, run, protocol.ItemDeclined, refuse)
		return
	}
	// The turn's checkpoints, as for the agent's commands: thread/revert
	// undoes what the user's command changed, and the turn has a diff.
	t.afterStartCheckpoint(tr, func() {
		run.started = t.m.clock.Now()
		ctx := tr.ctx
		req := tools.ExecRequest{Command: run.command, Dir: run.dir, Timeout: run.timeout, Sandbox: sb}
		go func() {
			res, err := tools.Exec(ctx, req, func(b []byte) {
				t.postEvent(ctx, func() { t.onCommandOutput(tr, run, b) })
			})
			t.postEvent(ctx, func() { t.onUserShellDone(tr, run, res, err) })
		}()
	})
}

func (t *thread) onUserShellDone(tr *turn, run *commandRun, res tools.ExecResult, err error) {
	if t.turn != tr {
		return
	}
	run.item.DurationMs = ptr(t.m.clock.Now().Sub(run.started).Milliseconds())
	if err != nil {
		run.item.ExitCode = ptr(-1)
		run.item.AggregatedOutput = ptr(err.Error())
		t.finishUserShell(tr, run, protocol.ItemFailed, "The command could not be started: "+err.Error())
		return
	}
	run.item.ExitCode = ptr(res.ExitCode)
	run.item.AggregatedOutput = ptr(res.Output)
	status := protocol.ItemCompleted
	if res.ExitCode != 0 {
		status = protocol.ItemFailed
	}
	t.finishUserShell(tr, run, status, tools.FormatForModel(res))
}

// finishUserShell completes the user's command item, gives the model its
// outcome as a user message (as Codex does) and ends the turn.
func (t *thread) finishUserShell(tr *turn, run *commandRun, status protocol.ItemStatus, result string) {
	run.item.Status = status
	text := fmt.Sprintf("<user_shell_command>\n<command>\n%s\n</command>\n<result>\n%s\n</result>\n</user_shell_command>",
		run.command, strings.TrimRight(result, "\n"))
	if err := t.commitItem(tr, run.item, []model.Entry{{Kind: model.EntryUser, Text: text}}); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.completeTurn(tr, protocol.TurnCompleted, nil)
}

// userCommandPlan judges a command the user runs through apserver
// (thread/shellCommand, command/exec): the user is the human an approval
// would ask, so nothing is asked, but what the rules forbid is refused
// and the command runs in the thread's sandbox. Where the kernel cannot
// enforce that sandbox it is refused too, unless the thread has full
// access. It returns the sandbox (nil: unconfined) or the refusal.
func (j judge) userCommandPlan(cmd string) (*sandbox.Policy, string) {
	v := j.commandRules().Evaluate(cmd, j.rulesContext())
	if v.Decision == rules.Forbidden {
		return nil, "Not run: " + v.Reason + " (forbidden by the rules)"
	}
	sb, err := j.sandboxPolicy(false)
	if err != nil {
		return nil, "Not run: the " + string(j.settings.Sandbox) + " sandbox cannot be enforced here: " + err.Error()
	}
	return sb, ""
}

// UpdateThreadSettings implements thread/settings/update: the settings
// stick for the thread's next turns, as turn/start's overrides do (the
// running turn keeps its own). Codex's TUI switches plan mode this way.
func (m *Manager) UpdateThreadSettings(ctx context.Context, p protocol.ThreadSettingsUpdateParams, reply Reply) {
	m.onThread(p.ThreadID, reply, func(t *thread) { t.updateSettings(p, reply) })
}

func (t *thread) updateSettings(p protocol.ThreadSettingsUpdateParams, reply Reply) {
	s, err := t.settings.Updated(p)
	if err != nil {
		reply(nil, err)
		return
	}
	if s != t.settings {
		old := t.settings
		t.settings = s
		if err := t.saveMeta(); err != nil {
			t.settings = old
			reply(nil, err)
			return
		}
	}
	reply(protocol.Empty{}, nil)
}
