package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/apserver/apserver/brains"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// The brain is the session's alignment check.
var _ session.Aligner = (*brains.Service)(nil)

// newBrain makes the project brain's service over the session's store.
// APSERVER_TEST_HOLD_PROJECTIONS=1 (tests of a crash only) writes no
// projection, as if the process were killed before each rewrite.
func newBrain(cfg config.Config, st func() (*store.Store, error), log *slog.Logger) *brains.Service {
	return brains.New(brains.Options{Store: st, Config: cfg, Logger: log, HoldProjections: os.Getenv("APSERVER_TEST_HOLD_PROJECTIONS") == "1"})
}

// newRunnerWithBrain is newRunner whose stages get the project's context
// and whose ended runs refresh the projections.
func newRunnerWithBrain(cfg config.Config, dataDir string, mgr *session.Manager, log *slog.Logger, br *brains.Service) *runner.Runner {
	return clusterRunner(runner.Options{Threads: mgr.Threads(), Store: mgr.Store, Config: cfg, DataDir: dataDir, Logger: log, Brain: br}, cfg, log)
}

// runProjectBrain is `apserver project decisions | snapshot`: the project
// brain of this directory, headless (docs/brain.md).
func runProjectBrain(args []string) error {
	return projectBrain(context.Background(), args, os.Stdout)
}

func projectBrain(ctx context.Context, args []string, out io.Writer) error {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("project "+sub, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver project decisions [--all] [--json]
       apserver project snapshot [--write]
       apserver project status|tick|autopilot|replay [flags]   (the manager: apserver project status --help)

decisions lists the decisions recorded for this directory (the active and
proposed ones; --all adds the superseded and revoked). snapshot prints the
project snapshot, as project/snapshot/read gives it; --write also rewrites
.apserver/memory.md and .apserver/snapshot.md.

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	all := fs.Bool("all", false, "decisions: include superseded and revoked ones")
	asJSON := fs.Bool("json", false, "decisions: print JSON")
	write := fs.Bool("write", false, "snapshot: rewrite the projections too")
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if (sub != "decisions" && sub != "snapshot") || len(words) != 0 {
		fs.Usage()
		return errUsage
	}
	h, err := openHeadless(&f)
	if err != nil {
		return err
	}
	defer h.Close()
	log, cfg, cwd, st := h.log, h.cfg, h.cwd, h.st
	svc := newBrain(cfg, func() (*store.Store, error) { return st, nil }, log)
	defer svc.Close()
	switch sub {
	case "decisions":
		l, err := svc.ListDecisions(ctx, protocol.ProjectDecisionListParams{Cwd: cwd, All: *all})
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(l)
		}
		for _, d := range l.Decisions {
			line := fmt.Sprintf("%s\t%s\t%s", d.ID, d.Status, d.Title)
			if d.SupersededBy != "" {
				line += "\t(superseded by " + d.SupersededBy + ")"
			}
			if len(d.Alternatives) > 0 {
				line += "\trejected: " + strings.Join(d.Alternatives, ", ")
			}
			fmt.Fprintln(out, line)
		}
		return nil
	default:
		if *write {
			if err := svc.Flush(ctx, cwd); err != nil {
				return err
			}
		}
		r, err := svc.SnapshotRead(ctx, protocol.ProjectSnapshotReadParams{Cwd: cwd})
		if err != nil {
			return err
		}
		_, err = io.WriteString(out, r.Markdown)
		return err
	}
}
