// Command apserver is a Codex-compatible app-server: editors spawn it and
// speak JSON-RPC (JSONL) over stdio to run coding-agent turns.
//
//	apserver [flags]            serve the app-server protocol on stdio, or on a socket (listen.go)
//	apserver demo               run the offline demo (scripted model, temp workspace)
//	apserver exec "objective"   work on an objective headless (exec.go)
//	apserver run "request"      carry a request through a run headless (run.go)
//	apserver replay THREAD      re-decide a thread's full-auto receipts (replay.go)
//	apserver blueprint ...      ingest a specification, show its plan tree (blueprint.go)
//	apserver version            print the version
//
// This file parses flags, sets up logging and wires the packages together;
// the behaviour lives in server, session, store, model and tools.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/server"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// exitUnfinished is serve's exit status when stdin ended with work that
// could not end normally: a turn interrupted, or an approval or question
// cancelled because no client was left to answer it (docs/protocol.md).
const exitUnfinished = 3

func main() {
	args := os.Args[1:]
	cmd := ""
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || topLevel[args[0]]) {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "", "serve", "app-server":
		err = serve(args)
	case "demo":
		err = runDemo(args)
	case "fake-model":
		err = runFakeModel(args)
	case "exec":
		err = runExec(args)
	case "run":
		err = runRun(args)
	case "runs":
		err = runRuns(args)
	case "replay":
		err = runReplay(args)
	case "cluster":
		err = runCluster(args)
	case "worker":
		err = runWorker(args)
	case "blueprint":
		err = runBlueprint(args)
	case "project":
		if ok, perr := runProjectManager(args); ok { // the manager's verbs (manager.go)
			err = perr
		} else {
			err = runProjectBrain(args)
		}
	case "version", "--version":
		fmt.Println("apserver", version)
	case "help", "-h", "--help":
		usage(os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "apserver: unknown command %q\n\n", cmd)
		usage(os.Stderr)
		os.Exit(2)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "apserver:", ee.msg)
		}
		os.Exit(ee.code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apserver:", err)
		os.Exit(1)
	}
}

// topLevel are the flags that are commands of their own rather than
// serve's flags: `apserver --help` lists the commands, not serve's flags.
var topLevel = map[string]bool{"--version": true, "-h": true, "-help": true, "--help": true}

func usage(w io.Writer) {
	fmt.Fprint(w, `apserver: a Codex-compatible coding-agent app-server (JSON-RPC over stdio)

Usage:
  apserver [serve] [flags]   serve the app-server protocol on stdin/stdout
                             (--listen ws://IP:PORT or unix://PATH: several clients)
  apserver demo              offline demo: scripted model, temp workspace, live view
  apserver fake-model        serve the scripted test model on 127.0.0.1; print its URL
  apserver exec "objective"  work on an objective headless in this directory (--full-auto: until done)
  apserver run "request"     carry a request through a run (plan, tasks, commits) on a branch of its own
  apserver runs list|show|approve|reject|edit|answer|pause|resume|cancel|prune|import
                             see and steer the stored runs from a terminal
  apserver replay THREAD     re-decide a thread's full-auto receipts; exit 1 naming each that differs
  apserver cluster migrate   create the cluster's tables in PostgreSQL (status: workers, jobs, runs)
  apserver worker            drive the runs queued in PostgreSQL (--database-url, --concurrency)
  apserver blueprint ingest FILE | show [--depth N] | next | tasks | verify | list | build NODE
                             turn a long specification into a plan tree, and build it (docs/blueprints.md)
  apserver project decisions [--all] | snapshot
                             the project brain of this directory (docs/brain.md)
  apserver project status | tick | autopilot [--mode full_auto] [--phase ID] | replay
                             the manager: build a phase by itself (docs/manager.md)
  apserver version           print the version
  apserver help              this text

Examples:
  apserver demo                                  # see it work offline, in under 5 s
  apserver --model gpt-5.5                       # an editor spawns this and speaks JSON-RPC
  apserver serve --listen ws://127.0.0.1:4500    # several clients share one session
  apserver exec --full-auto "Make the tests pass."
  apserver run "add a shout function"
  apserver runs show RUN_ID                      # the plan as a table; approve with runs approve

"apserver COMMAND --help" prints a command's flags; "apserver serve --help" the
server's. Configuration: docs/configuration.md; the protocol: docs/protocol.md.
`)
}

// serveFlags are the flags shared by serve and the commands that embed a server.
type serveFlags struct {
	dataDir, configFile, model, provider, baseURL, wire, logFile, logLevel, durability string
	cpuProfile                                                                         string
	onEOF                                                                              session.EOFMode
	maxLine                                                                            int
	trace, noCoalesce                                                                  bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "", "directory for apserver's database (default: the user's data dir)")
	fs.StringVar(&f.configFile, "config", "", "user config file (default: $XDG_CONFIG_HOME/apserver/config.toml)")
	fs.StringVar(&f.model, "model", "", "default model")
	fs.StringVar(&f.provider, "provider", "", "default provider (a [providers.NAME] entry)")
	fs.StringVar(&f.baseURL, "base-url", "", "base URL of the default provider (overrides OPENAI_BASE_URL)")
	fs.StringVar(&f.wire, "wire", "", "wire API of the default provider: responses or chat")
	fs.IntVar(&f.maxLine, "max-line-bytes", 0, "largest accepted JSONL line (default 16 MiB)")
	fs.StringVar(&f.logFile, "log-file", "", "write logs here instead of stderr")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&f.trace, "trace", false, "log every wire message (to the log, never stdout)")
	fs.StringVar(&f.durability, "durability", "", "normal (survives a crash of apserver) or full (fsync every commit)")
	fs.BoolVar(&f.noCoalesce, "no-coalesce", false, "send every model delta as its own notification, even when the client falls behind")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile here (for benchmarking)")
}

func (f *serveFlags) overrides() config.Overrides {
	o := config.Overrides{}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	o.Model, o.Provider, o.BaseURL, o.Wire = str(f.model), str(f.provider), str(f.baseURL), str(f.wire)
	o.DataDir, o.Durability = str(f.dataDir), str(f.durability)
	if f.maxLine > 0 {
		o.MaxLineBytes = &f.maxLine
	}
	return o
}

func newLogger(f *serveFlags) (*slog.Logger, func(), error) {
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if f.logFile != "" {
		lf, err := os.OpenFile(f.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("opening log file: %w", err)
		}
		w, closeFn = lf, func() { lf.Close() }
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("bad -log-level %q", f.logLevel)
	}
	if f.trace {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), closeFn, nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver [serve] [flags]

Serves the Codex app-server protocol (JSON-RPC, one message per line) on
stdin/stdout, or with --listen to several clients on a WebSocket or unix
socket. stdout carries only protocol; logs go to stderr or --log-file.
"apserver help" lists the other commands.

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	var lf listenFlags
	lf.register(fs)
	fs.Func("on-eof", "when stdin ends: drain (finish running turns, then exit) or interrupt (interrupt them, exit at once) (default drain)", func(v string) error {
		m, err := session.ParseEOFMode(v)
		f.onEOF = m
		return err
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log, closeLog, err := newLogger(&f)
	if err != nil {
		return err
	}
	defer closeLog()
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cwd, _ := os.Getwd()
	cfg, err := config.Load(config.LoadOptions{UserFile: f.configFile, Workspace: cwd, Getenv: os.Getenv, Overrides: f.overrides()})
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if lf.listen != "" && lf.listen != "stdio://" {
		return runListener(context.Background(), cfg, &f, &lf, log)
	}
	err = runServer(context.Background(), cfg, &f, os.Stdin, os.Stdout, log)
	if errors.Is(err, session.ErrUnfinished) {
		return &exitError{code: exitUnfinished, msg: err.Error()}
	}
	return err
}

// runServer serves one connection until its input ends and the work in
// flight is drained (f.onEOF).
func runServer(ctx context.Context, cfg config.Config, f *serveFlags, in io.Reader, out io.Writer, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dataDir, err := resolveDataDir(cfg)
	if err != nil {
		return err
	}
	var mgr *session.Manager
	srv := server.New(in, out, server.Options{
		MaxLineBytes: cfg.MaxLineBytes,
		Logger:       log,
		Trace:        f.trace,
		ServerInfo:   server.ServerInfo{Name: "apserver", Version: version, Home: dataDir},
		OnInputEnd:   func(ctx context.Context) error { return mgr.Drain(ctx, f.onEOF) },
		// With --on-eof interrupt, command/exec processes end at once.
		OnInputClosed: func() { mgr.InputClosed(f.onEOF) },
	})
	mgr = newManager(cfg, f, dataDir, srv.Client(), log)
	br := newBrain(cfg, mgr.Store, log)
	mgr.SetAligner(br)
	br.SetAttention(mgr.SetDecisionAttention) // proposed decisions waiting on a human
	rn := newRunnerWithBrain(cfg, dataDir, mgr, log, br)
	server.Register(srv, mgr)
	server.RegisterServices(srv, server.NewServices(mgr))
	server.RegisterRuns(srv, rn)
	bs := newBlueprints(cfg, mgr, srv.Client(), log)
	rn.SetBlueprints(bs) // runs from a blueprint, and their evidence
	server.RegisterBlueprints(srv, bs)
	server.RegisterBrain(srv, br)
	ps := newProjects(cfg, mgr, rn, bs, srv.Client(), log)
	server.RegisterManager(srv, ps)
	stopBeat := heartbeat(ctx, ps, cfg.Manager)
	stopRelay := startRelay(cfg, mgr, srv.Client(), func() bool { _, ok := srv.Initialized(); return ok }, log)
	err = srv.Run(ctx)
	stopRelay()
	stopBeat()
	bs.Close()
	rn.Close()
	br.Close()
	if cerr := mgr.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func resolveDataDir(cfg config.Config) (string, error) {
	if cfg.DataDir != "" {
		return cfg.DataDir, nil
	}
	d, err := store.DefaultDir()
	if err != nil {
		return "", fmt.Errorf("finding the data dir (use --data-dir): %w", err)
	}
	return d, nil
}

// newRunner makes the runs' driver over mgr's thread port.
// With [cluster] database_url the runs are in PostgreSQL (cluster.go).
func newRunner(cfg config.Config, dataDir string, mgr *session.Manager, log *slog.Logger) *runner.Runner {
	return clusterRunner(runner.Options{Threads: mgr.Threads(), Store: mgr.Store, Config: cfg, DataDir: dataDir, Logger: log}, cfg, log)
}

// clusterRunner makes a runner with opts, its runs in PostgreSQL when the
// config names a database (cluster.go).
func clusterRunner(opts runner.Options, cfg config.Config, log *slog.Logger) *runner.Runner {
	rs, q, follow, err := clusterRuns(cfg, log)
	if err != nil {
		log.Error("the cluster's database: run/* requests will fail", "err", err)
		opts.Runs = brokenRuns{err}
		return runner.New(opts)
	}
	if rs == nil {
		return runner.New(opts)
	}
	opts.Runs, opts.Queue = rs, q
	var stop func()
	opts.OnClose = func() { stop() }
	rn := runner.New(opts)
	stop = follow(rn)
	return rn
}

// newManager makes the session for a server whose client is c.
func newManager(cfg config.Config, f *serveFlags, dataDir string, c session.Client, log *slog.Logger) *session.Manager {
	sync := "NORMAL"
	if strings.EqualFold(cfg.Durability, "full") {
		sync = "FULL"
	}
	return session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) {
			return store.Open(filepath.Join(dataDir, store.FileName), store.Options{Synchronous: sync})
		},
		Config:  cfg,
		Client:  c,
		Logger:  log,
		Version: version,
		DataDir: dataDir,

		CoalesceDeltas: !f.noCoalesce,
		ConfigSources:  configSources(f),
	})
}

// configSources names the layers config/read reports: the same files
// config.Load read, and the flags given.
func configSources(f *serveFlags) session.ConfigSources {
	src := session.ConfigSources{UserFile: f.configFile, Flags: map[string]any{}}
	if src.UserFile == "" {
		src.UserFile = config.DefaultUserFile()
	}
	if abs, err := filepath.Abs(src.UserFile); err == nil {
		src.UserFile = abs
	}
	if cwd, err := os.Getwd(); err == nil {
		src.WorkspaceFile = filepath.Join(cwd, ".apserver", "config.toml")
	}
	for k, v := range map[string]string{"model": f.model, "provider": f.provider} {
		if v != "" {
			src.Flags[k] = v
		}
	}
	return src
}
