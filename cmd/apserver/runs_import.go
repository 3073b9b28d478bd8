package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/store"
)

// runRunsImport is `apserver runs import`: the runs recorded in a
// repository's branches rebuilt into the data dir (docs/runs.md, "History
// from git").
func runRunsImport(args []string) error {
	fs := flag.NewFlagSet("runs import", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver runs import [--repo DIR] [flags]

Rebuilds the runs recorded in the repository's branches (each run's
.apserver/runs/<id>/context.json and the commits) into the data dir, for a
data dir that is gone or a second machine: run/list and run/read then show
them as the first machine had them. Runs already in the data dir are left
alone. Prints one line per run: imported or skipped, and why.

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	repoDir := fs.String("repo", "", "the repository (default: the current directory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	dir := *repoDir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	dir, _ = filepath.Abs(dir)
	if f.logFile == "" {
		f.logLevel = "warn"
	}
	log, closeLog, err := newLogger(&f)
	if err != nil {
		return err
	}
	defer closeLog()
	cfg, err := config.Load(config.LoadOptions{UserFile: f.configFile, Workspace: dir, Getenv: execGetenv, Overrides: f.overrides()})
	if err != nil {
		return err
	}
	dataDir, err := resolveDataDir(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	var (
		once  sync.Once
		db    *store.Store
		dbErr error
	)
	open := func() (*store.Store, error) {
		once.Do(func() {
			db, dbErr = store.Open(filepath.Join(dataDir, store.FileName), store.Options{Synchronous: "FULL"})
		})
		return db, dbErr
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	rn := runner.New(runner.Options{Store: open, Config: cfg, DataDir: dataDir, Logger: log})
	defer rn.Close()
	res, err := rn.Import(context.Background(), dir)
	for _, r := range res {
		if r.Skipped != "" {
			fmt.Fprintf(os.Stdout, "skipped %s: %s\n", r.Run.ID, r.Skipped)
			continue
		}
		fmt.Fprintf(os.Stdout, "imported %s %s %s: %s\n", r.Run.ID, r.Run.Status, r.Run.Branch, strings.SplitN(r.Run.Request, "\n", 2)[0])
	}
	if err != nil {
		return fmt.Errorf("apserver runs import: %w", err)
	}
	if len(res) == 0 {
		fmt.Fprintf(os.Stdout, "no run recorded in the branches of %s\n", dir)
	}
	return nil
}
