package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apserver/apserver/cluster"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// runWorker is `apserver worker`: claims the cluster's jobs and drives
// their runs (docs/cluster.md).
func runWorker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver worker [--database-url URL] [--repo-cache DIR] [--concurrency N] [flags]

Claims the runs' jobs queued in PostgreSQL (River), fetches each project
from its remote into the cache, drives the run in a worktree there as
apserver does on one machine (sandbox, checks, commits with trailers), and
pushes the run's branch to the remote after each commit. See
docs/cluster.md.

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	url := fs.String("database-url", "", "PostgreSQL database URL (default: [cluster] database_url, then $APSERVER_DATABASE_URL)")
	cache := fs.String("repo-cache", "", "directory of the projects' clones and the runs' worktrees (default: DATA_DIR/cluster)")
	conc := fs.Int("concurrency", 2, "jobs worked at once")
	id := fs.String("id", "", "the worker's name in cluster status (default: host-pid)")
	jobTimeout := fs.Duration("job-timeout", 2*time.Hour, "longest a job (a run driven until it waits or ends) may take")
	rescue := fs.Duration("rescue-after", 0, "when River hands a job still running to another worker (default: job-timeout + 5m)")
	beat := fs.Duration("heartbeat", cluster.HeartbeatEvery, "how often the worker beats; one that misses three is dead and its jobs go to the others")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if f.logFile == "" && f.logLevel == "" {
		f.logLevel = "info"
	}
	log, closeLog, err := newLogger(&f)
	if err != nil {
		return err
	}
	defer closeLog()
	cwd, _ := os.Getwd()
	cfg, err := config.Load(config.LoadOptions{UserFile: f.configFile, Workspace: cwd, Getenv: os.Getenv, Overrides: f.overrides()})
	if err != nil {
		return err
	}
	u := *url
	if u == "" {
		u = cfg.Cluster.DatabaseURL
	}
	if u == "" {
		return errors.New("worker: no database: pass --database-url, set [cluster] database_url or APSERVER_DATABASE_URL")
	}
	dataDir, err := resolveDataDir(cfg)
	if err != nil {
		return err
	}
	if *cache == "" {
		*cache = filepath.Join(dataDir, "cluster")
	}
	if *id == "" {
		host, _ := os.Hostname()
		*id = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pool, err := cluster.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := cluster.NewStore(pool)
	if err != nil {
		return err
	}
	w := cluster.NewWorker(s, cluster.WorkerOptions{ID: *id, Concurrency: *conc, CacheDir: *cache,
		JobTimeout: *jobTimeout, RescueAfter: *rescue, Heartbeat: *beat, Logger: log})
	mgr := session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) {
			return store.Open(filepath.Join(dataDir, store.FileName), store.Options{})
		},
		// Requests of the threads (approvals, questions) go to the editors
		// through the database (cluster/relay.go).
		Config: cfg, Client: cluster.NewRelayClient(ctx, pool, *id, newExecClient(io.Discard, io.Discard, execHuman, cwd), log), Logger: log, Version: version,
		CoalesceDeltas: true, DataDir: dataDir,
	})
	defer mgr.Close()
	// The worker carries out every effect of the runs it drives itself;
	// River bounds how many at once.
	cfg.Runs.MaxParallel = max(*conc, 1)
	rn := runner.New(runner.Options{Threads: mgr.Threads(), Store: mgr.Store, Config: cfg, DataDir: dataDir, Logger: log,
		Runs: s, Queue: runner.InProcess{}, Local: w.Local, Push: w.Push, Merging: w.Merging})
	defer rn.Close()
	w.SetDriver(rn)
	go cluster.Follow(ctx, pool, rn, log)
	log.Info("worker: working", "id", *id, "concurrency", *conc, "cache", *cache)
	return w.Run(ctx)
}

// gitRemote is the URL of the origin remote of the repository at cwd,
// "" when it has none: where the cluster's workers fetch the project.
func gitRemote(cwd string) string {
	out, err := exec.Command("git", "-C", cwd, "remote", "get-url", "origin").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
