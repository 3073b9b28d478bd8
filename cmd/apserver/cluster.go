package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/apserver/apserver/cluster"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// databaseURL is the --database-url flag's value, else the config's
// [cluster] database_url, else APSERVER_DATABASE_URL.
func databaseURL(flagValue, cfgFile string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	cwd, _ := os.Getwd()
	cfg, err := config.Load(config.LoadOptions{UserFile: cfgFile, Workspace: cwd, Getenv: os.Getenv})
	if err != nil {
		return "", err
	}
	if cfg.Cluster.DatabaseURL == "" {
		return "", errors.New("no database: pass --database-url, set [cluster] database_url or APSERVER_DATABASE_URL")
	}
	return cfg.Cluster.DatabaseURL, nil
}

// runCluster is `apserver cluster migrate|status`.
func runCluster(args []string) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver cluster migrate|status [--database-url URL] [--json]

  migrate   create or update apserver's tables and River's in the database
  status    workers alive, jobs queued/running/retrying, the oldest waiting, runs

The database is --database-url, else [cluster] database_url of the config,
else $APSERVER_DATABASE_URL (a password: PGPASSWORD or ~/.pgpass).
See docs/cluster.md.

`)
		printFlags(fs.Output(), fs)
	}
	url := fs.String("database-url", "", "PostgreSQL database URL (postgres://user@host/db)")
	cfgFile := fs.String("config", "", "user config file (default: $XDG_CONFIG_HOME/apserver/config.toml)")
	asJSON := fs.Bool("json", false, "status: print JSON")
	if len(args) == 0 || (args[0] != "migrate" && args[0] != "status") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fs.Usage()
			return nil
		}
		fs.Usage()
		return errUsage
	}
	sub := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	u, err := databaseURL(*url, *cfgFile)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", sub, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pool, err := cluster.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch sub {
	case "migrate":
		res, err := cluster.Migrate(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Printf("migrated: apserver's tables %v, River's %v applied\n", res.Ours, res.River)
	case "status":
		st, err := cluster.ReadStatus(ctx, pool)
		if err != nil {
			return err
		}
		if *asJSON {
			b, _ := json.MarshalIndent(st, "", "  ")
			fmt.Println(string(b))
			return nil
		}
		st.Write(os.Stdout)
	}
	return nil
}

// clusterRuns is the run store and work queue of a server whose config
// names a database ([cluster] database_url), and a function that starts
// following the log for rn; nil, nil, nil without one (the SQLite default).
// The pool connects lazily: a database that is down is an error of the
// run/* request that needs it.
func clusterRuns(cfg config.Config, log *slog.Logger) (runner.RunStore, runner.WorkQueue, func(*runner.Runner) func(), error) {
	if cfg.Cluster.DatabaseURL == "" {
		return nil, nil, nil, nil
	}
	pool, err := cluster.Connect(context.Background(), cfg.Cluster.DatabaseURL)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := cluster.NewStore(pool)
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	var q runner.WorkQueue = runner.InProcess{}
	var lease *cluster.Lease
	if cfg.Cluster.Execute != "workers" {
		// This process does its runs' work: it holds their leases, and
		// takes up the runs of processes that died (cluster/lease.go).
		lease = cluster.NewLease(pool, log)
		s.Execute, s.Lease = cluster.ExecuteHere, lease
	} else {
		s.Execute = "workers"
	}
	if cfg.Cluster.Execute == "workers" {
		// Every slow effect: the run is driven by whichever worker claims
		// its job; this process only appends what its clients answer.
		q = cluster.NewQueue("worktree", "plan", "task", "validate", "commit", "merge")
		s.RemoteOf = gitRemote
	}
	follow := func(rn *runner.Runner) func() {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			cluster.Follow(ctx, pool, rn, log)
		}()
		if lease != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cluster.KeepDriving(ctx, s, lease, rn, 0, log)
			}()
		}
		return func() {
			cancel()
			wg.Wait()
			if lease != nil {
				lease.Close()
			}
			pool.Close()
		}
	}
	return s, q, follow, nil
}

// startRelay forwards the requests that workers' threads relay
// (approvals, questions) to this server's client and shows them in its
// attention summary, when the config names a database (cluster/relay.go).
// Nothing is sent before ready says the client initialized (nil: always).
// The returned function stops it.
func startRelay(cfg config.Config, mgr *session.Manager, c session.Client, ready func() bool, log *slog.Logger) func() {
	if cfg.Cluster.DatabaseURL == "" {
		return func() {}
	}
	pool, err := cluster.Connect(context.Background(), cfg.Cluster.DatabaseURL)
	if err != nil {
		log.Error("the cluster's database: workers' approvals will not reach this editor", "err", err)
		return func() {}
	}
	host, _ := os.Hostname()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cluster.Relayed(ctx, pool, c, mgr, fmt.Sprintf("%s-%d", host, os.Getpid()), ready, log)
	}()
	return func() {
		cancel()
		<-done
		pool.Close()
	}
}

// brokenRuns is the run store of a server whose cluster database cannot
// be used: every run/* request fails with why.
type brokenRuns struct{ err error }

func (b brokenRuns) AppendRunEvent(context.Context, store.RunRow, string, json.RawMessage, int64, []runner.Work) (int64, error) {
	return 0, b.err
}
func (b brokenRuns) RunEvents(context.Context, string) ([]store.RunEvent, error) { return nil, b.err }
func (b brokenRuns) RunRows(context.Context) ([]store.RunRow, error)             { return nil, b.err }

// RecordRunUsage implements runner.UsageRecorder: the usage of a run
// belongs in the database too, which cannot be used.
func (b brokenRuns) RecordRunUsage(context.Context, string, store.RunUsage) error { return b.err }

// RunsUsage implements runner.UsageRecorder: the budgets cannot be read
// (rather than read as nothing spent from this process's SQLite).
func (b brokenRuns) RunsUsage(context.Context, []string, int64) ([]store.RunUsage, error) {
	return nil, b.err
}

var _ runner.UsageRecorder = brokenRuns{}
