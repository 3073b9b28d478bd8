package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/apserver/apserver/internal/demo"
)

// runDemo is `apserver demo`: flags, then internal/demo does the work.
func runDemo(args []string) error {
	runMode := len(args) > 0 && args[0] == "run"
	if runMode {
		args = args[1:]
	}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver demo [--json] [--keep]
       apserver demo run [--keep]

Runs an offline demo: a scripted model, a temp workspace, and this binary as
an app-server child, driven over the JSON-RPC protocol through three turns
(a streamed answer, a command behind an approval, an edit shown as a diff and
approved, the tests re-run in the sandbox), then undoes the last turn.

"apserver demo run" carries a request through a run, offline: in a temp git
repository, "apserver run" plans two tasks with the scripted model, asks to
approve the plan (the demo answers y), implements and validates each task
(its check run in the sandbox), commits each and merges into main.

`)
		printFlags(fs.Output(), fs)
	}
	jsonOut := fs.Bool("json", false, "also print every raw protocol line (→ sent, ← received)")
	keep := fs.Bool("keep", false, "keep the temp workspace, data dir and server log, and print where they are")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("demo: unexpected arguments %q", fs.Args())
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: finding this binary: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if runMode {
		err = demo.RunRun(ctx, demo.Options{Exe: exe, Out: os.Stdout, Keep: *keep, Color: demo.ShouldColor(os.Stdout)})
		if errors.Is(err, context.Canceled) {
			return errors.New("demo interrupted")
		}
		return err
	}
	err = demo.Run(ctx, demo.Options{
		Exe:   exe,
		Out:   os.Stdout,
		JSON:  *jsonOut,
		Keep:  *keep,
		Color: demo.ShouldColor(os.Stdout),
	})
	if errors.Is(err, context.Canceled) {
		return errors.New("demo interrupted")
	}
	return err
}
