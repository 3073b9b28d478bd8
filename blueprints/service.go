// Package blueprints drives blueprint ingestions and serves the
// blueprint/* methods (docs/blueprints.md) over the store: it reads the
// document, asks the planner model for each chunk's outline (at most
// max_concurrent_model_calls requests at once; one retry with a stricter
// instruction after an invalid answer, then the job fails naming the
// chunk and its offsets), records each finished chunk so that a job
// resumed after a crash never asks for it again, merges the outlines and
// stores the tree. The decisions (chunks, validation, merge, coverage,
// diff, next) are package blueprint's; this package does the I/O.
//
// It imports blueprint, protocol, store, model and config; never server or
// session.
package blueprints

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// MaxDocumentBytes bounds a document: 8 MiB, over twice a 500,000-word
// specification.
const MaxDocumentBytes = 8 << 20

// Notifier sends notifications to the client (the server's Client).
type Notifier interface {
	Notify(method string, params any)
}

// Options configure a Service.
type Options struct {
	Store  func() (*store.Store, error)
	Config config.Config
	// Client gets blueprint/progress and blueprint/updated; nil: none.
	Client Notifier
	Logger *slog.Logger
	// PageNodes is K, the most nodes per answer (blueprint.DefaultPageNodes
	// when 0).
	PageNodes int
}

// Service runs ingestions and answers blueprint/* requests. Its methods
// are safe for concurrent use.
type Service struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	sem  chan struct{} // model requests in flight

	// edit serialises the read-modify-write of node edits.
	edit sync.Mutex
	// planMu serialises the writes of plan.md.
	planMu sync.Mutex

	mu       sync.Mutex
	jobs     map[string]*job // by blueprint id
	restored bool
	// trees caches decoded trees of ready versions, by version id, the
	// newest last (at most maxCachedTrees). A cached tree is never
	// mutated: an edit replaces it.
	trees []cachedTree
	// work caches PhaseWork's answers (manager.go).
	work workCache
}

// maxCachedTrees bounds the trees kept decoded.
const maxCachedTrees = 4

type cachedTree struct {
	version string
	tree    *blueprint.Tree
}

func (s *Service) cached(versionID string) *blueprint.Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.trees {
		if c.version == versionID {
			return c.tree
		}
	}
	return nil
}

func (s *Service) cache(versionID string, t *blueprint.Tree) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.trees {
		if c.version == versionID {
			s.trees = append(s.trees[:i], s.trees[i+1:]...)
			break
		}
	}
	s.trees = append(s.trees, cachedTree{versionID, t})
	if len(s.trees) > maxCachedTrees {
		s.trees = s.trees[1:]
	}
}

// job is an ingestion in flight.
type job struct {
	versionID string
	cancel    context.CancelFunc
	cancelled bool // by blueprint/cancel (not by Close)
	done      chan struct{}
}

// New makes a Service. Call Restore to take up the ingestions of an
// earlier process, and Close to stop.
func New(opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	n := opts.Config.MaxConcurrentModelCalls
	if n <= 0 {
		n = config.DefaultMaxConcurrentModelCalls
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Service{opts: opts, log: opts.Logger, ctx: ctx, stop: stop, sem: make(chan struct{}, n), jobs: map[string]*job{}}
}

// Close stops the ingestions in flight; what they finished is stored and
// the next process takes them up (Restore).
func (s *Service) Close() {
	s.stop()
	s.wg.Wait()
}

func (s *Service) store() (*store.Store, error) {
	if s.opts.Store == nil {
		return nil, errors.New("blueprints: no store")
	}
	return s.opts.Store()
}

func (s *Service) notify(method string, params any) {
	if s.opts.Client != nil {
		s.opts.Client.Notify(method, params)
	}
}

func (s *Service) pageNodes() int {
	if s.opts.PageNodes > 0 {
		return s.opts.PageNodes
	}
	return blueprint.DefaultPageNodes
}

func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func invalid(format string, args ...any) error {
	return protocol.Errorf(protocol.ErrInvalidParams, format, args...)
}

// Restore starts again every ingestion an earlier process left in flight.
// Only the first call does anything.
func (s *Service) Restore() {
	s.mu.Lock()
	if s.restored {
		s.mu.Unlock()
		return
	}
	s.restored = true
	s.mu.Unlock()
	st, err := s.store()
	if err != nil {
		s.log.Error("blueprints: restore", "err", err)
		return
	}
	vs, err := st.IngestingBlueprintVersions(s.ctx)
	if err != nil {
		s.log.Error("blueprints: restore", "err", err)
		return
	}
	for _, v := range vs {
		s.mu.Lock()
		_, running := s.jobs[v.BlueprintID]
		s.mu.Unlock()
		if running {
			continue // started by this process (blueprint/ingest before initialized)
		}
		s.log.Info("blueprints: resuming ingestion", "blueprint", v.BlueprintID, "version", v.ID, "chunksDone", v.ChunksDone, "chunksTotal", v.ChunksTotal)
		s.start(v.BlueprintID, v.ID, "")
	}
}

// Ingest implements blueprint/ingest: it validates the document, stores a
// new version and starts its ingestion; the answer does not wait for it.
func (s *Service) Ingest(ctx context.Context, p protocol.BlueprintIngestParams) (protocol.BlueprintIngestResult, error) {
	var res protocol.BlueprintIngestResult
	text, err := readDocument(p)
	if err != nil {
		return res, err
	}
	if p.ChunkTokens < 0 {
		return res, invalid("chunkTokens: must be positive")
	}
	doc, err := blueprint.Parse(text)
	if err != nil {
		what := "text"
		if p.Path != "" {
			what = "path: " + p.Path
		}
		return res, invalid("%s: %v", what, err)
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	budget := p.ChunkTokens
	if budget == 0 {
		budget = blueprint.DefaultChunkTokens
	}
	chunks := blueprint.Split(doc, budget)
	bp := store.BlueprintRow{ID: p.BlueprintID, Cwd: p.Cwd, Title: strings.TrimSpace(p.Title)}
	v := store.BlueprintVersionRow{ID: newID("bpv_"), Status: string(protocol.JobIngesting), ChunkTokens: budget,
		PageNodes: s.pageNodes(), ChunksTotal: len(chunks), Document: text}
	if p.BlueprintID != "" {
		old, err := st.Blueprint(ctx, p.BlueprintID)
		if errors.Is(err, store.ErrNotFound) {
			return res, invalid("blueprintId: unknown blueprint %s", p.BlueprintID)
		}
		if err != nil {
			return res, err
		}
		bp = old
		vs, err := st.BlueprintVersions(ctx, bp.ID)
		if err != nil {
			return res, err
		}
		for i := len(vs) - 1; i >= 0; i-- {
			if vs[i].Status == string(protocol.JobReady) {
				v.ParentID = vs[i].ID
				break
			}
		}
	} else {
		bp.ID = newID("bp_")
		if bp.Title == "" {
			bp.Title = defaultTitle(doc, p.Path)
		}
	}
	s.mu.Lock()
	if _, busy := s.jobs[bp.ID]; busy {
		s.mu.Unlock()
		return res, protocol.Errorf(protocol.ErrInvalidRequest, "blueprint %s is being ingested; cancel it first (blueprint/cancel)", bp.ID)
	}
	s.jobs[bp.ID] = &job{versionID: v.ID, done: make(chan struct{})} // reserved; start fills it
	s.mu.Unlock()
	ev, _ := json.Marshal(map[string]any{"bytes": len(text), "chunks": len(chunks), "chunkTokens": budget, "path": p.Path, "parent": v.ParentID})
	if err := st.CreateBlueprintVersion(ctx, bp, v, ev); err != nil {
		s.mu.Lock()
		close(s.jobs[bp.ID].done)
		delete(s.jobs, bp.ID)
		s.mu.Unlock()
		return res, err
	}
	s.start(bp.ID, v.ID, text)
	b, err := s.blueprint(ctx, st, bp.ID)
	if err != nil {
		return res, err
	}
	res.Blueprint = b
	vs, err := st.BlueprintVersions(ctx, bp.ID)
	if err != nil {
		return res, err
	}
	for _, x := range vs {
		if x.ID == v.ID {
			res.Version = versionView(x)
		}
	}
	return res, nil
}

// readDocument reads the document of an ingestion: Text, or the file at
// Path (relative to Cwd).
func readDocument(p protocol.BlueprintIngestParams) (string, error) {
	switch {
	case p.Path != "" && p.Text != "":
		return "", invalid("path and text: give one of them")
	case p.Text != "":
		if len(p.Text) > MaxDocumentBytes {
			return "", invalid("text: %d bytes, at most %d", len(p.Text), MaxDocumentBytes)
		}
		return p.Text, nil
	case p.Path == "":
		return "", invalid("path: missing (or give text)")
	}
	path := p.Path
	if !filepath.IsAbs(path) {
		if p.Cwd == "" {
			return "", invalid("cwd: missing for the relative path %s", p.Path)
		}
		path = filepath.Join(p.Cwd, path)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", invalid("path: no such file: %s", p.Path)
	case err != nil:
		return "", invalid("path: %v", err)
	case fi.IsDir():
		return "", invalid("path: %s is a directory", p.Path)
	case fi.Size() > MaxDocumentBytes:
		return "", invalid("path: %s has %d bytes, at most %d", p.Path, fi.Size(), MaxDocumentBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", invalid("path: %v", err)
	}
	return string(b), nil
}

// defaultTitle is the first heading, else the file's name.
func defaultTitle(d *blueprint.Doc, path string) string {
	if len(d.Headings) > 0 {
		return d.Headings[0].Text
	}
	if path != "" {
		return filepath.Base(path)
	}
	return "Blueprint"
}

// Cancel implements blueprint/cancel.
func (s *Service) Cancel(ctx context.Context, p protocol.BlueprintCancelParams) (protocol.BlueprintCancelResult, error) {
	s.mu.Lock()
	j, ok := s.jobs[p.BlueprintID]
	if ok {
		j.cancelled = true // start cancels at once a job not started yet
		if j.cancel != nil {
			j.cancel()
		}
	}
	s.mu.Unlock()
	if !ok {
		return protocol.BlueprintCancelResult{}, invalid("blueprintId: no ingestion in flight for %q", p.BlueprintID)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return protocol.BlueprintCancelResult{}, ctx.Err()
	}
	return protocol.BlueprintCancelResult{}, nil
}

// Wait blocks until the blueprint has no ingestion in flight (headless
// front ends).
func (s *Service) Wait(ctx context.Context, bpID string) error {
	s.mu.Lock()
	j, ok := s.jobs[bpID]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// blueprint is the wire view of a blueprint and its primary version.
func (s *Service) blueprint(ctx context.Context, st *store.Store, id string) (protocol.Blueprint, error) {
	b, err := st.Blueprint(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return protocol.Blueprint{}, invalid("blueprintId: unknown blueprint %s", id)
	}
	if err != nil {
		return protocol.Blueprint{}, err
	}
	vs, err := st.BlueprintVersions(ctx, id)
	if err != nil {
		return protocol.Blueprint{}, err
	}
	out := protocol.Blueprint{ID: b.ID, Cwd: b.Cwd, Title: b.Title}
	for _, v := range vs {
		if v.ID == b.Primary {
			out.Primary = versionView(v)
		}
	}
	return out, nil
}

func versionView(v store.BlueprintVersionRow) protocol.BlueprintVersion {
	return protocol.BlueprintVersion{ID: v.ID, BlueprintID: v.BlueprintID, Number: v.Number, ParentID: v.ParentID, ReplacedBy: v.ReplacedBy,
		Status: protocol.BlueprintJobStatus(v.Status), Error: v.Error, Bytes: v.Bytes, ChunksTotal: v.ChunksTotal, ChunksDone: v.ChunksDone,
		Nodes: v.NodeCount, CreatedAt: v.CreatedAt}
}

// List implements blueprint/list.
func (s *Service) List(ctx context.Context, p protocol.BlueprintListParams) (protocol.BlueprintListResult, error) {
	res := protocol.BlueprintListResult{Data: []protocol.Blueprint{}}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	rows, err := st.Blueprints(ctx, p.Cwd)
	if err != nil {
		return res, err
	}
	for _, r := range rows {
		b, err := s.blueprint(ctx, st, r.ID)
		if err != nil {
			return res, err
		}
		res.Data = append(res.Data, b)
	}
	return res, nil
}

// version resolves a version of a blueprint: id, or the primary one,
// without its document (see document).
func (s *Service) version(ctx context.Context, st *store.Store, bpID, id string) (protocol.Blueprint, store.BlueprintVersionRow, error) {
	if bpID == "" {
		return protocol.Blueprint{}, store.BlueprintVersionRow{}, protocol.MissingField("blueprintId")
	}
	b, err := s.blueprint(ctx, st, bpID)
	if err != nil {
		return b, store.BlueprintVersionRow{}, err
	}
	if id == "" {
		id = b.Primary.ID
	}
	vs, err := st.BlueprintVersions(ctx, bpID)
	if err != nil {
		return b, store.BlueprintVersionRow{}, err
	}
	for _, v := range vs {
		if v.ID == id {
			return b, v, nil
		}
	}
	return b, store.BlueprintVersionRow{}, invalid("versionId: unknown version %s of blueprint %s", id, bpID)
}

// tree loads a ready version's tree. The tree is shared: callers must
// not modify it (NodeUpdate copies it).
func (s *Service) tree(ctx context.Context, st *store.Store, v store.BlueprintVersionRow) (*blueprint.Tree, error) {
	if v.Status != string(protocol.JobReady) {
		return nil, protocol.Errorf(protocol.ErrInvalidRequest, "version %s is %s, not ready", v.ID, v.Status)
	}
	if t := s.cached(v.ID); t != nil {
		return t, nil
	}
	raws, err := st.BlueprintNodes(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	t := &blueprint.Tree{Nodes: make([]protocol.BlueprintNode, len(raws))}
	for i, r := range raws {
		if err := json.Unmarshal(r, &t.Nodes[i]); err != nil {
			return nil, fmt.Errorf("blueprints: node %d of version %s: %w", i, v.ID, err)
		}
	}
	s.cache(v.ID, t)
	return t, nil
}

// Read implements blueprint/read.
func (s *Service) Read(ctx context.Context, p protocol.BlueprintReadParams) (protocol.BlueprintReadResult, error) {
	var res protocol.BlueprintReadResult
	if p.Depth < 0 || p.Limit < 0 {
		return res, invalid("depth and limit: must not be negative")
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	b, v, err := s.version(ctx, st, p.BlueprintID, p.VersionID)
	if err != nil {
		return res, err
	}
	res.Blueprint = b
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return res, err
	}
	nodes, next, err := blueprint.Read(t, p.NodeID, p.Depth, p.Cursor, p.Limit)
	switch {
	case errors.Is(err, blueprint.ErrUnknownNode):
		return res, invalid("nodeId: unknown node %s", p.NodeID)
	case errors.Is(err, blueprint.ErrBadCursor):
		return res, invalid("cursor: %v", err)
	}
	if nodes == nil {
		nodes = []protocol.BlueprintNode{}
	}
	res.Nodes, res.NextCursor = nodes, next
	return res, nil
}

// NodeUpdate implements blueprint/node/update: a human's edit of a node of
// the primary version, stored with its event in one transaction.
func (s *Service) NodeUpdate(ctx context.Context, p protocol.BlueprintNodeUpdateParams) (protocol.BlueprintNodeUpdateResult, error) {
	var res protocol.BlueprintNodeUpdateResult
	if p.NodeID == "" {
		return res, protocol.MissingField("nodeId")
	}
	s.edit.Lock()
	defer s.edit.Unlock()
	st, err := s.store()
	if err != nil {
		return res, err
	}
	b, v, err := s.version(ctx, st, p.BlueprintID, "")
	if err != nil {
		return res, err
	}
	shared, err := s.tree(ctx, st, v)
	if err != nil {
		return res, err
	}
	t := &blueprint.Tree{Nodes: slices.Clone(shared.Nodes)}
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return res, err
	}
	i, ok := t.Index()[p.NodeID]
	if !ok {
		return s.updateTask(ctx, st, b, v, shared, tasks, p)
	}
	n := &t.Nodes[i]
	if p.Title != nil {
		if strings.TrimSpace(*p.Title) == "" {
			return res, invalid("title: empty")
		}
		n.Title = strings.TrimSpace(*p.Title)
	}
	if p.Summary != nil {
		n.Summary = *p.Summary
	}
	if p.Priority != nil {
		if *p.Priority == "" || p.Priority.Rank() < 0 {
			return res, invalid("priority: unknown priority %q (critical, high, medium, low)", *p.Priority)
		}
		n.Priority = *p.Priority
	}
	if p.Status != nil {
		if !p.Status.Valid() {
			return res, invalid("status: unknown status %q (planned, in_progress, blocked, done)", *p.Status)
		}
		wt := blueprint.WithTasks(t, tasks)
		if j := wt.Index()[n.ID]; j+1 < len(wt.Nodes) && wt.Nodes[j+1].Depth > n.Depth {
			return res, invalid("status: the status of %s %s follows the tasks and nodes under it; edit theirs", n.Kind, n.ID)
		}
		n.Status = *p.Status
	}
	if p.DependsOn != nil {
		n.DependsOn = append([]string(nil), (*p.DependsOn)...)
		for _, d := range n.DependsOn {
			if d == n.ID {
				return res, invalid("dependsOn: node %s cannot depend on itself", n.ID)
			}
		}
		wt := blueprint.WithTasks(t, tasks)
		if unknown := blueprint.UnknownDeps(wt, n.DependsOn); len(unknown) > 0 {
			return res, invalid("dependsOn: unknown node %s", strings.Join(unknown, ", "))
		}
		if err := blueprint.CheckDeps(wt.Nodes); err != nil {
			return res, invalid("dependsOn: %v", err)
		}
	}
	changed := blueprint.Rollup(t, tasks)
	if !slices.Contains(changed, i) {
		changed = append([]int{i}, changed...)
	}
	rows, err := nodeRows(t, changed)
	if err != nil {
		return res, err
	}
	ev, _ := json.Marshal(p)
	if err := st.UpdateBlueprint(ctx, b.ID, v.ID, rows, nil, "node.updated", ev); err != nil {
		return res, err
	}
	s.cache(v.ID, t)
	res.Node = t.Nodes[i]
	for _, j := range changed {
		s.notify(protocol.NotifyBlueprintUpdated, protocol.BlueprintUpdatedNotification{BlueprintID: b.ID, VersionID: v.ID, Node: t.Nodes[j]})
	}
	s.writePlan(ctx, st, b.ID)
	return res, nil
}

// nodeRows are the store rows of some nodes of t.
func nodeRows(t *blueprint.Tree, idx []int) ([]store.BlueprintNodeRow, error) {
	rows := make([]store.BlueprintNodeRow, 0, len(idx))
	for _, j := range idx {
		raw, err := json.Marshal(t.Nodes[j])
		if err != nil {
			return nil, err
		}
		rows = append(rows, store.BlueprintNodeRow{Ord: j, ID: t.Nodes[j].ID, Node: raw})
	}
	return rows, nil
}

// Next implements blueprint/next.
func (s *Service) Next(ctx context.Context, p protocol.BlueprintNextParams) (protocol.BlueprintNextResult, error) {
	var res protocol.BlueprintNextResult
	if p.Limit < 0 {
		return res, invalid("limit: must not be negative")
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	_, v, err := s.version(ctx, st, p.BlueprintID, "")
	if err != nil {
		return res, err
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return res, err
	}
	tasks, err := s.tasks(ctx, st, v.ID)
	if err != nil {
		return res, err
	}
	page, err := blueprint.Next(blueprint.WithTasks(t, tasks), blueprint.NextOptions{Phase: p.Phase, Cursor: p.Cursor, Limit: p.Limit})
	switch {
	case errors.Is(err, blueprint.ErrUnknownPhase):
		return res, invalid("phase: %v", err)
	case errors.Is(err, blueprint.ErrBadCursor):
		return res, invalid("cursor: %v", err)
	case err != nil:
		return res, err
	}
	res.Phase, res.Data, res.NextCursor = page.Phase, page.Tasks, page.Next
	if res.Data == nil {
		res.Data = []protocol.NextTask{}
	}
	return res, nil
}

// Coverage implements blueprint/coverage.
func (s *Service) Coverage(ctx context.Context, p protocol.BlueprintCoverageParams) (protocol.BlueprintCoverageResult, error) {
	var res protocol.BlueprintCoverageResult
	if p.Limit < 0 {
		return res, invalid("limit: must not be negative")
	}
	st, err := s.store()
	if err != nil {
		return res, err
	}
	_, v, err := s.version(ctx, st, p.BlueprintID, p.VersionID)
	if err != nil {
		return res, err
	}
	t, err := s.tree(ctx, st, v)
	if err != nil {
		return res, err
	}
	full, err := st.BlueprintVersion(ctx, v.ID)
	if err != nil {
		return res, err
	}
	d, err := blueprint.Parse(full.Document)
	if err != nil {
		return res, err
	}
	c := blueprint.Measure(d, t)
	res.TotalBytes, res.CoveredBytes, res.Ratio, res.Gaps = c.Total, c.Covered, c.Ratio(), c.Gaps
	if res.Gaps == nil {
		res.Gaps = []protocol.ByteRange{}
	}
	res.NormativeTotal = len(c.Normative)
	res.Uncovered = []protocol.NormativeSentence{}
	for _, n := range c.Normative {
		if n.NodeID == "" {
			res.Uncovered = append(res.Uncovered, n)
		} else {
			res.NormativeMapped++
		}
	}
	off := 0
	if p.Cursor != "" {
		if _, err := fmt.Sscanf(p.Cursor, "%d", &off); err != nil || off < 0 || off > len(c.Normative) {
			return res, invalid("cursor: bad cursor %q", p.Cursor)
		}
	}
	limit := p.Limit
	if limit == 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	end := min(off+limit, len(c.Normative))
	res.Normative = append([]protocol.NormativeSentence{}, c.Normative[off:end]...)
	if end < len(c.Normative) {
		res.NextCursor = fmt.Sprint(end)
	}
	return res, nil
}

// Diff implements blueprint/diff.
func (s *Service) Diff(ctx context.Context, p protocol.BlueprintDiffParams) (protocol.BlueprintDiffResult, error) {
	var res protocol.BlueprintDiffResult
	st, err := s.store()
	if err != nil {
		return res, err
	}
	_, to, err := s.version(ctx, st, p.BlueprintID, p.To)
	if err != nil {
		return res, err
	}
	from := p.From
	if from == "" {
		from = to.ParentID
	}
	if from == "" {
		return res, invalid("from: version %s has no parent; name the version to compare with", to.ID)
	}
	_, fv, err := s.version(ctx, st, p.BlueprintID, from)
	if err != nil {
		return res, err
	}
	a, err := s.tree(ctx, st, fv)
	if err != nil {
		return res, err
	}
	b, err := s.tree(ctx, st, to)
	if err != nil {
		return res, err
	}
	res.From, res.To = fv.ID, to.ID
	res.Added, res.Modified, res.Removed, res.Moved = blueprint.Diff(a, b)
	ftasks, err := s.tasks(ctx, st, fv.ID)
	if err != nil {
		return res, err
	}
	flag := map[string]bool{}
	for _, c := range append(slices.Clone(res.Modified), res.Removed...) {
		flag[c.ID] = true
	}
	res.Review = []protocol.BlueprintTask{}
	for _, x := range ftasks {
		if flag[x.NodeID] {
			res.Review = append(res.Review, x)
		}
	}
	for _, l := range []*[]protocol.NodeChange{&res.Added, &res.Modified, &res.Removed, &res.Moved} {
		if *l == nil {
			*l = []protocol.NodeChange{}
		}
	}
	return res, nil
}
