package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// errReplayDiffers is returned (after the report) when a decision differs.
var errReplayDiffers = errors.New("replay: decisions differ")

// runReplay is `apserver replay THREAD`: every receipt of the thread's
// full-auto runs is re-decided by today's controller and state machine
// (fullauto.ReplayDecision: the decision and how it was carried out,
// overrides included) from its stored inputs, and every alignment verdict
// by today's rules of the project brain (brain.ReplayVerdict, the
// validator's stored answers given back). It prints one line per receipt
// and exits 1 naming each decision that differs.
func runReplay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver replay [--data-dir DIR] [--config FILE] [-v] THREAD
       apserver replay [--data-dir DIR] [--config FILE] --project DIR

Re-runs the full-auto controller on the inputs stored with every decision
(and every automatic approval) of THREAD, and the project brain's rules on
every action it judged, and compares with what was decided then. Exits 0 when all agree, 1 naming each one that differs.
With --project, decides again on every manager tick and intent routing of
the project in DIR instead (as apserver project replay).

`)
		printFlags(fs.Output(), fs)
	}
	dataDir := fs.String("data-dir", "", "apserver's data directory (default: from the config)")
	cfgFile := fs.String("config", "", "user config file (default: $XDG_CONFIG_HOME/apserver/config.toml)")
	verbose := fs.Bool("v", false, "also print the reason of each decision")
	project := fs.String("project", "", "replay the manager's ticks and intent routings of the project in this directory, not a thread")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if *project != "" {
		if fs.NArg() != 0 {
			fs.Usage()
			return errUsage
		}
		pargs := []string{"replay", "--cd", *project}
		if *dataDir != "" {
			pargs = append(pargs, "--data-dir", *dataDir)
		}
		if *cfgFile != "" {
			pargs = append(pargs, "--config", *cfgFile)
		}
		_, err := runProjectManager(pargs)
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	dir := *dataDir
	if dir == "" {
		cwd, _ := os.Getwd()
		cfg, err := config.Load(config.LoadOptions{UserFile: *cfgFile, Workspace: cwd, Getenv: os.Getenv})
		if err != nil {
			return err
		}
		dir = cfg.DataDir
	}
	db, err := store.OpenReadOnly(filepath.Join(dir, store.FileName))
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer db.Close()
	rs, err := db.Receipts(context.Background(), fs.Arg(0))
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	err = replay(os.Stdout, rs, *verbose)
	lg, lerr := db.GetFullAutoLog(context.Background(), fs.Arg(0))
	if errors.Is(lerr, store.ErrNotFound) {
		return err // no run, or one stored before runs had a log
	}
	if lerr != nil {
		return fmt.Errorf("replay: %w", lerr)
	}
	if lerr := replayLog(os.Stdout, lg, rs); lerr != nil && err == nil {
		err = lerr
	}
	return err
}

// replayLog replays the event log of the thread's latest run through
// today's machine (fullauto.ReplayLog) and checks that every decision it
// makes again is the one stored under the receipt the log names.
func replayLog(w io.Writer, sl store.FullAutoLog, rs []store.Receipt) error {
	lg, err := fullauto.DecodeLog(sl.Base, sl.Entries)
	if err != nil {
		return fmt.Errorf("replay: the run's event log: %w", err)
	}
	byID := map[string]store.Receipt{}
	for _, r := range rs {
		byID[r.ID] = r
	}
	var differ []string
	got := fullauto.ReplayLog(lg)
	for _, d := range got {
		stored, ok := byID[d.ReceiptID]
		if !ok {
			if d.ReceiptID != "" {
				differ = append(differ, fmt.Sprintf("receipt %s, named by the log, is not stored", d.ReceiptID))
			}
			continue
		}
		var want controller.Decision
		if err := json.Unmarshal(stored.Output, &want); err != nil {
			differ = append(differ, fmt.Sprintf("#%d: undecodable output: %v", stored.Seq, err))
			continue
		}
		now, _ := d.Receipt.Output.(controller.Decision)
		wantJSON, _ := json.Marshal(want)
		nowJSON, _ := json.Marshal(now)
		if string(wantJSON) != string(nowJSON) || stored.Executed != d.Receipt.Executed || stored.Override != d.Receipt.Override {
			differ = append(differ, fmt.Sprintf("#%d (turn %s): stored %s, the log now gives %s", stored.Seq, stored.TurnID, describeDecision(want), describeDecision(now)))
		}
	}
	fmt.Fprintf(w, "event log: %d events, %d decisions replayed, %d differ\n", len(lg.Events), len(got), len(differ))
	if len(differ) > 0 {
		for _, d := range differ {
			fmt.Fprintln(os.Stderr, "apserver replay: the event log differs:", d)
		}
		return errReplayDiffers
	}
	return nil
}

// replay checks each receipt and reports on w.
func replay(w io.Writer, rs []store.Receipt, verbose bool) error {
	var differ []string
	decisions := 0
	sets := brain.DecisionSets{} // alignment receipts hold a set of decisions once
	for _, r := range rs {
		var rec brain.Record
		if r.Kind == brain.ReceiptKind && json.Unmarshal(r.Input, &rec) == nil {
			sets.Add(rec)
		}
	}
	for _, r := range rs {
		var line, why string
		var same bool
		switch r.Kind {
		case store.ReceiptDecision:
			decisions++
			line, why, same = replayDecision(r)
		case store.ReceiptApproval:
			line, why, same = replayApproval(r)
		case brain.ReceiptKind:
			line, why, same = replayAlignment(r, sets)
		default:
			line, same = fmt.Sprintf("unknown receipt kind %q", r.Kind), false
		}
		mark := "ok  "
		if !same {
			mark = "DIFF"
			differ = append(differ, fmt.Sprintf("#%d (%s, turn %s): %s", r.Seq, r.Kind, r.TurnID, why))
		}
		fmt.Fprintf(w, "%s #%d %-8s turn %s  %s\n", mark, r.Seq, r.Kind, r.TurnID, line)
		if verbose && why != "" && same {
			fmt.Fprintf(w, "       %s\n", why)
		}
	}
	fmt.Fprintf(w, "%d receipts (%d decisions), %d differ\n", len(rs), decisions, len(differ))
	if len(differ) > 0 {
		for _, d := range differ {
			fmt.Fprintln(os.Stderr, "apserver replay: differs:", d)
		}
		return errReplayDiffers
	}
	return nil
}

func replayDecision(r store.Receipt) (line, why string, same bool) {
	var in fullauto.DecisionInput
	var want controller.Decision
	if err := json.Unmarshal(r.Input, &in); err != nil {
		return "undecodable input", err.Error(), false
	}
	if err := json.Unmarshal(r.Output, &want); err != nil {
		return "undecodable output", err.Error(), false
	}
	got, why, same := fullauto.ReplayDecision(in, want, r.PolicyHash, r.Executed, r.Override)
	line = describeDecision(want)
	if r.Override != "" {
		line += " [" + r.Override + "]"
	}
	if !same {
		return line + "  now: " + describeDecision(got), "stored " + describeDecision(want) + ", now " + describeDecision(got) + ": " + why, false
	}
	return line, want.Reason, true
}

func describeDecision(d controller.Decision) string {
	s := fmt.Sprintf("%s (rule %s", d.Action, d.Rule)
	if d.StopCondition != "" {
		s += ", " + string(d.StopCondition)
	}
	if d.WrapUp {
		s += ", wrap-up"
	}
	if d.Source == "model" {
		s += ", model"
	}
	return s + ")"
}

// replayApproval re-runs controller.Approve (fullauto.ReplayApproval).
func replayApproval(r store.Receipt) (line, why string, same bool) {
	var in fullauto.ApprovalInput
	var out fullauto.ApprovalOutput
	if err := json.Unmarshal(r.Input, &in); err != nil {
		return "undecodable input", err.Error(), false
	}
	if err := json.Unmarshal(r.Output, &out); err != nil {
		return "undecodable output", err.Error(), false
	}
	got, why, same := fullauto.ReplayApproval(in, out)
	want := out.ApprovalVerdict
	line = fmt.Sprintf("%s %s: %s (rule %s)", in.Request.Kind, label(in.Request), want.Outcome, want.Rule)
	switch {
	case !same && out.Source != controller.SourceModel:
		line += fmt.Sprintf("  now: %s (rule %s)", got.Outcome, got.Rule)
	case same && out.Source == controller.SourceModel:
		line += " [decision model]"
	}
	return line, why, same
}

func label(r controller.ApprovalRequest) string {
	if r.Command != "" {
		return fmt.Sprintf("%q", r.Command)
	}
	if len(r.Paths) > 0 {
		return fmt.Sprint(r.Paths)
	}
	return ""
}

// replayAlignment judges an alignment receipt's action again from its
// record (brain.ReplayVerdict: today's rules, the validator's stored
// answers) and compares with the stored verdict. Its decisions are its
// own or, left out, those another receipt of the thread holds (sets).
func replayAlignment(r store.Receipt, sets brain.DecisionSets) (line, why string, same bool) {
	var rec brain.Record
	var want protocol.AlignmentVerdict
	if err := json.Unmarshal(r.Input, &rec); err != nil {
		return "undecodable input", err.Error(), false
	}
	if err := json.Unmarshal(r.Output, &want); err != nil {
		return "undecodable output", err.Error(), false
	}
	if err := sets.Resolve(&rec); err != nil {
		return "decisions missing", err.Error(), false
	}
	got := brain.ReplayVerdict(rec)
	what := rec.Action.Command
	if rec.Action.Kind != protocol.ActionCommand {
		what = string(rec.Action.Kind) + " " + rec.Action.Path
	}
	line = fmt.Sprintf("%q: %s", what, describeVerdict(want))
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		return line + "  now: " + describeVerdict(got), "stored " + string(wb) + ", now " + string(gb), false
	}
	return line, strings.Join(want.Reasons, "; "), true
}

func describeVerdict(v protocol.AlignmentVerdict) string {
	s := fmt.Sprintf("%s (%s", v.Status, v.Pass)
	for _, d := range v.Decisions {
		s += ", " + d.ID
	}
	return s + ")"
}
