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
	"strings"
	"sync"
	"syscall"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// newBlueprints makes the blueprints service over mgr's store; c gets its
// notifications.
func newBlueprints(cfg config.Config, mgr *session.Manager, c blueprints.Notifier, log *slog.Logger) *blueprints.Service {
	return blueprints.New(blueprints.Options{Store: mgr.Store, Config: cfg, Client: c, Logger: log})
}

// runBlueprint is `apserver blueprint`: ingest a specification into a plan
// tree, show the tree, or the next work, headless (docs/blueprints.md).
func runBlueprint(args []string) error {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	if sub == "build" {
		return runBlueprintBuild(args)
	}
	fs := flag.NewFlagSet("blueprint "+sub, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver blueprint ingest [flags] FILE
       apserver blueprint show [flags] [--depth N]
       apserver blueprint next [flags] [--phase P]
       apserver blueprint tasks [flags] [--regenerate] NODE
       apserver blueprint verify [flags] NODE
       apserver blueprint list [flags]
       apserver blueprint build NODE [run flags]

ingest turns a Markdown or plain-text specification into a plan tree with the
planner model (progress on stderr; on a terminal, a bar) and prints the
blueprint's id. Run again on the same file after an interruption, it takes
the ingestion up where it stopped. show prints the tree of the latest
blueprint of this directory (or --blueprint), next the tasks that can start
now, tasks the tasks that implement a node (asked of the planner once), verify
runs the checks of a node's done tasks again and reopens those that fail,
build starts a run from a node (apserver run's flags; its tasks are the plan).
Exit codes: 0 done, 1 error or failed ingestion, 2 usage, 130
interrupted (the ingestion stays stored).

`)
		printFlags(fs.Output(), fs)
	}
	var f serveFlags
	f.register(fs)
	bpID := fs.String("blueprint", "", "the blueprint (default: the newest of this directory)")
	title := fs.String("title", "", "ingest: the blueprint's title (default: the first heading)")
	chunkTokens := fs.Int("chunk-tokens", 0, "ingest: the chunk budget in tokens (default 12000)")
	depth := fs.Int("depth", 0, "show: levels to print (0: all)")
	phase := fs.String("phase", "", "next: the phase, by id or title (default: the first unfinished)")
	limit := fs.Int("limit", 20, "next: how many tasks")
	regenerate := fs.Bool("regenerate", false, "tasks: ask the planner again")
	words, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	withArg := sub == "ingest" || sub == "tasks" || sub == "verify"
	switch {
	case withArg && len(words) != 1, !withArg && len(words) != 0,
		!withArg && sub != "show" && sub != "next" && sub != "list":
		fs.Usage()
		return errUsage
	}
	h, err := openHeadless(&f)
	if err != nil {
		return err
	}
	defer h.Close()
	log, cfg, cwd, st := h.log, h.cfg, h.cwd, h.st
	bar := &progressBar{w: os.Stderr, tty: isTerminal(os.Stderr)}
	svc := blueprints.New(blueprints.Options{Store: func() (*store.Store, error) { return st, nil }, Config: cfg, Client: bar, Logger: log})
	defer svc.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch sub {
	case "ingest":
		return blueprintIngest(ctx, st, svc, bar, cwd, words[0], *bpID, *title, *chunkTokens)
	case "list":
		l, err := svc.List(ctx, protocol.BlueprintListParams{})
		if err != nil {
			return err
		}
		for _, b := range l.Data {
			fmt.Printf("%s\t%s\tv%d %s\t%d nodes\t%s\n", b.ID, b.Title, b.Primary.Number, b.Primary.Status, b.Primary.Nodes, b.Cwd)
		}
		return nil
	}
	id, err := pickBlueprint(ctx, svc, cwd, *bpID)
	if err != nil {
		return err
	}
	if sub == "show" {
		return blueprintShow(ctx, svc, id, *depth)
	}
	if sub == "tasks" {
		r, err := svc.NodeTasks(ctx, protocol.BlueprintNodeTasksParams{BlueprintID: id, NodeID: words[0], Regenerate: *regenerate})
		if err != nil {
			return err
		}
		fmt.Printf("%s %s: %d tasks\n", r.Node.Kind, r.Node.Title, len(r.Tasks))
		for _, t := range r.Tasks {
			fmt.Printf("%s\t%s\t%s\tdepends on %s", t.ID, t.Title, t.Status, orDash(strings.Join(t.DependsOn, ",")))
			if len(t.Unresolved) > 0 {
				fmt.Printf("\tunresolved: %s", strings.Join(t.Unresolved, "; "))
			}
			fmt.Println()
		}
		return nil
	}
	if sub == "verify" {
		r, err := svc.Verify(ctx, protocol.BlueprintVerifyParams{BlueprintID: id, NodeID: words[0]})
		if err != nil {
			return err
		}
		for _, v := range r.Data {
			verdict := "passed"
			switch {
			case v.Reopened:
				verdict = "failed, reopened"
			case !v.Passed:
				verdict = "not run"
			}
			fmt.Printf("%s\t%s\t%s\n", v.TaskID, v.Title, verdict)
		}
		if len(r.Data) == 0 {
			fmt.Fprintln(os.Stderr, "no done task to verify")
		}
		return nil
	}
	nx, err := svc.Next(ctx, protocol.BlueprintNextParams{BlueprintID: id, Phase: *phase, Limit: *limit})
	if err != nil {
		return err
	}
	for _, t := range nx.Data {
		fmt.Printf("%s\t%s\t%s\tpriority %s\tsize %s\tchain %d\n", t.Node.ID, t.Node.Title, t.Node.Status, orDash(string(t.Node.Priority)), orDash(string(t.Node.Estimate)), t.Chain)
	}
	if len(nx.Data) == 0 {
		fmt.Fprintln(os.Stderr, "nothing can start now")
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// blueprintIngest ingests path, or takes up the interrupted ingestion of
// the same document.
func blueprintIngest(ctx context.Context, st *store.Store, svc *blueprints.Service, bar *progressBar, cwd, path, bpID, title string, chunkTokens int) error {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, path)
	}
	text, _ := os.ReadFile(abs) // errors are Ingest's to report
	id := ""
	if pending, err := st.IngestingBlueprintVersions(ctx); err == nil {
		for _, v := range pending {
			if full, err := st.BlueprintVersion(ctx, v.ID); err == nil && len(text) > 0 && full.Document == string(text) {
				id = v.BlueprintID
				fmt.Fprintf(os.Stderr, "resuming the ingestion of %s (%d of %d chunks done)\n", path, v.ChunksDone, v.ChunksTotal)
			}
		}
	}
	svc.Restore()
	if id == "" {
		res, err := svc.Ingest(ctx, protocol.BlueprintIngestParams{Cwd: cwd, Path: path, Title: title, BlueprintID: bpID, ChunkTokens: chunkTokens})
		if err != nil {
			return err
		}
		id = res.Blueprint.ID
	}
	if err := svc.Wait(ctx, id); err != nil {
		bar.end()
		return &exitError{code: 130, msg: "interrupted; run the same command again to go on"}
	}
	bar.end()
	l, err := svc.List(ctx, protocol.BlueprintListParams{})
	if err != nil {
		return err
	}
	for _, b := range l.Data {
		if b.ID == id {
			if b.Primary.Status != protocol.JobReady {
				return fmt.Errorf("ingestion %s: %s", b.Primary.Status, b.Primary.Error)
			}
			fmt.Printf("%s\t%s\tv%d\t%d nodes\n", b.ID, b.Title, b.Primary.Number, b.Primary.Nodes)
			return nil
		}
	}
	return fmt.Errorf("blueprint %s vanished", id)
}

// pickBlueprint is id, or the newest blueprint of cwd, else the newest.
func pickBlueprint(ctx context.Context, svc *blueprints.Service, cwd, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	l, err := svc.List(ctx, protocol.BlueprintListParams{})
	if err != nil {
		return "", err
	}
	for _, b := range l.Data {
		if b.Cwd == cwd {
			return b.ID, nil
		}
	}
	if len(l.Data) > 0 {
		return l.Data[0].ID, nil
	}
	return "", errors.New("no blueprint yet: apserver blueprint ingest FILE")
}

// blueprintShow prints the tree, indented, a page at a time.
func blueprintShow(ctx context.Context, svc *blueprints.Service, id string, depth int) error {
	cursor := ""
	for {
		r, err := svc.Read(ctx, protocol.BlueprintReadParams{BlueprintID: id, Depth: depth, Cursor: cursor, Limit: 1000})
		if err != nil {
			return err
		}
		if cursor == "" {
			fmt.Printf("%s (%s, version %d)\n", r.Blueprint.Title, r.Blueprint.ID, r.Blueprint.Primary.Number)
		}
		for _, n := range r.Nodes {
			fmt.Printf("%s%-7s %s [%s] %s bytes %d-%d\n", strings.Repeat("  ", n.Depth+1), n.Kind, n.Title, n.Status, n.ID, n.Start, n.End)
		}
		if r.NextCursor == "" {
			return nil
		}
		cursor = r.NextCursor
	}
}

// progressBar prints blueprint/progress: a bar redrawn in place on a
// terminal, a line per change otherwise.
type progressBar struct {
	w   io.Writer
	tty bool

	mu    sync.Mutex
	drawn bool
	last  string
}

func (p *progressBar) Notify(method string, params any) {
	n, ok := params.(protocol.BlueprintProgressNotification)
	if !ok || method != protocol.NotifyBlueprintProgress {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	total := max(n.ChunksTotal, 1)
	line := fmt.Sprintf("%s: %d/%d chunks, %d nodes", n.Status, n.ChunksDone, n.ChunksTotal, n.Nodes)
	if n.Error != "" {
		line += ": " + n.Error
	}
	if line == p.last {
		return
	}
	p.last = line
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	const width = 30
	fill := width * n.ChunksDone / total
	fmt.Fprintf(p.w, "\r[%s%s] %s\x1b[K", strings.Repeat("#", fill), strings.Repeat(".", width-fill), line)
	p.drawn = true
}

// end finishes the bar's line.
func (p *progressBar) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
