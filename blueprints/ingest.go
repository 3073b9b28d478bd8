package blueprints

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// start runs the ingestion of a version in the background. text is the
// document when the caller has it ("" to read it from the store).
func (s *Service) start(bpID, versionID, text string) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	j, ok := s.jobs[bpID]
	if !ok || j.versionID != versionID {
		j = &job{versionID: versionID, done: make(chan struct{})}
		s.jobs[bpID] = j
	}
	j.cancel = cancel
	if j.cancelled {
		cancel()
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(j.done)
		defer cancel()
		err := s.ingest(ctx, bpID, versionID, text)
		s.mu.Lock()
		cancelled := j.cancelled
		delete(s.jobs, bpID)
		s.mu.Unlock()
		if err == nil {
			return
		}
		if s.ctx.Err() != nil && !cancelled {
			return // shutting down: the next process resumes the job
		}
		status, msg := protocol.JobFailed, err.Error()
		if cancelled {
			status, msg = protocol.JobCancelled, "cancelled"
		}
		s.log.Warn("blueprints: ingestion ended", "blueprint", bpID, "version", versionID, "status", status, "err", msg)
		st, serr := s.store()
		if serr == nil {
			ev, _ := json.Marshal(map[string]string{"error": msg})
			serr = st.EndBlueprintVersion(context.WithoutCancel(ctx), versionID, string(status), msg, ev)
		}
		if serr != nil {
			s.log.Error("blueprints: ending ingestion", "version", versionID, "err", serr)
		}
		p := protocol.BlueprintProgressNotification{BlueprintID: bpID, VersionID: versionID, Status: status, Error: msg}
		if st != nil {
			if v, err := st.BlueprintVersion(context.WithoutCancel(ctx), versionID); err == nil {
				p.ChunksDone, p.ChunksTotal = v.ChunksDone, v.ChunksTotal
			}
		}
		s.notify(protocol.NotifyBlueprintProgress, p)
	}()
}

// chunkResult is what a chunk's pages found, as stored.
type chunkResult struct {
	Nodes []blueprint.Found `json:"nodes"`
}

// ingest outlines the chunks not done yet, then merges and stores the
// tree.
func (s *Service) ingest(ctx context.Context, bpID, versionID, text string) error {
	st, err := s.store()
	if err != nil {
		return err
	}
	v, err := st.BlueprintVersion(ctx, versionID)
	if err != nil {
		return err
	}
	if text == "" {
		text = v.Document
	}
	v.Document = "" // one copy of the document is enough
	doc, err := blueprint.Parse(text)
	if err != nil {
		return err
	}
	chunks := blueprint.Split(doc, v.ChunkTokens)
	if len(chunks) != v.ChunksTotal {
		return fmt.Errorf("the document splits into %d chunks, the version recorded %d", len(chunks), v.ChunksTotal)
	}
	doneRaw, err := st.BlueprintChunks(ctx, versionID)
	if err != nil {
		return err
	}
	results := make([][]blueprint.Found, len(chunks))
	nodes := 0
	for i, raw := range doneRaw {
		if i < 0 || i >= len(chunks) {
			continue
		}
		var cr chunkResult
		if err := json.Unmarshal(raw, &cr); err != nil {
			return fmt.Errorf("stored outline of chunk %d: %w", i+1, err)
		}
		results[i] = cr.Nodes
		nodes += len(cr.Nodes)
	}
	var (
		mu       sync.Mutex
		done     = len(doneRaw)
		firstErr error
	)
	progress := func() {
		s.notify(protocol.NotifyBlueprintProgress, protocol.BlueprintProgressNotification{BlueprintID: bpID, VersionID: versionID,
			Status: protocol.JobIngesting, ChunksDone: done, ChunksTotal: len(chunks), Nodes: nodes})
	}
	mu.Lock()
	progress()
	mu.Unlock()

	var mc *model.Client
	var modelName string
	if len(doneRaw) < len(chunks) {
		mc, modelName, err = s.planner()
		if err != nil {
			return err
		}
	}
	jctx, fail := context.WithCancel(ctx)
	defer fail()
	var wg sync.WaitGroup
	for _, c := range chunks {
		if results[c.Index] != nil || doneRaw[c.Index] != nil {
			continue
		}
		select {
		case s.sem <- struct{}{}:
		case <-jctx.Done():
		}
		if jctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(c blueprint.Chunk) {
			defer wg.Done()
			defer func() { <-s.sem }()
			found, err := s.outline(jctx, mc, modelName, doc, c, len(chunks), v.PageNodes)
			if err == nil {
				raw, _ := json.Marshal(chunkResult{Nodes: found})
				err = st.SaveBlueprintChunk(jctx, versionID, c.Index, raw, len(found))
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					fail()
				}
				return
			}
			results[c.Index] = found
			done++
			nodes += len(found)
			progress()
		}(c)
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var all []blueprint.Found
	for _, r := range results {
		all = append(all, r...)
	}
	t, err := blueprint.Merge(doc, all)
	if err != nil {
		return fmt.Errorf("merging the outlines: %w", err)
	}
	var carried []protocol.BlueprintTask
	if v.ParentID != "" {
		pv, err := st.BlueprintVersion(ctx, v.ParentID)
		if err != nil {
			return err
		}
		pv.Document = ""
		prev, err := s.tree(ctx, st, pv)
		if err != nil {
			return err
		}
		blueprint.Reconcile(prev, t)
		ptasks, err := s.tasks(ctx, st, pv.ID)
		if err != nil {
			return err
		}
		carried = blueprint.CarryTasks(doc, prev, t, ptasks)
		blueprint.Rollup(t, carried)
	}
	trows := make([]store.BlueprintTaskRow, len(carried))
	for i, x := range carried {
		raw, err := json.Marshal(x)
		if err != nil {
			return err
		}
		trows[i] = store.BlueprintTaskRow{NodeID: x.NodeID, Ord: x.Order, ID: x.ID, Task: raw}
	}
	rows := make([]store.BlueprintNodeRow, len(t.Nodes))
	for i, n := range t.Nodes {
		raw, err := json.Marshal(n)
		if err != nil {
			return err
		}
		rows[i] = store.BlueprintNodeRow{Ord: i, ID: n.ID, Node: raw}
	}
	ev, _ := json.Marshal(map[string]int{"nodes": len(t.Nodes), "chunks": len(chunks)})
	if err := st.FinishBlueprintVersion(ctx, versionID, rows, trows, ev); err != nil {
		return err
	}
	s.writePlan(ctx, st, bpID)
	s.notify(protocol.NotifyBlueprintProgress, protocol.BlueprintProgressNotification{BlueprintID: bpID, VersionID: versionID,
		Status: protocol.JobReady, ChunksDone: len(chunks), ChunksTotal: len(chunks), Nodes: len(t.Nodes)})
	return nil
}

// planner is the model client and model name of the "planner" role.
func (s *Service) planner() (*model.Client, string, error) {
	name, prov, err := s.opts.Config.ResolveModel("planner", "")
	if err != nil {
		return nil, "", err
	}
	return model.NewClient(prov, nil), name, nil
}

// outline asks the planner for every page of a chunk's outline, as the
// chunk's Pages core says: an invalid page is asked again once with a
// stricter instruction; a second invalid answer fails the chunk, naming it
// and its offsets.
func (s *Service) outline(ctx context.Context, mc *model.Client, name string, doc *blueprint.Doc, c blueprint.Chunk, total, k int) ([]blueprint.Found, error) {
	p := blueprint.ChunkPages(doc, c, total, k)
	for p.Step() == blueprint.Ask {
		raw, err := ask(ctx, mc, name, p.Prompt())
		if err != nil {
			return nil, fmt.Errorf("%s: asking the planner: %w", p.What, err)
		}
		p.Feed(raw)
	}
	if p.Step() == blueprint.Failed {
		return nil, p.Err()
	}
	return p.Items(), nil
}

// ask sends one outline request and returns the answer's text.
func ask(ctx context.Context, mc *model.Client, name, prompt string) ([]byte, error) {
	return askWith(ctx, mc, name, blueprint.Instructions, blueprint.Schema, "blueprint_outline", prompt)
}

// askSlot is askWith in a slot of max_concurrent_model_calls.
func (s *Service) askSlot(ctx context.Context, mc *model.Client, name, instructions string, schema json.RawMessage, schemaName, prompt string) ([]byte, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	return askWith(ctx, mc, name, instructions, schema, schemaName, prompt)
}

// askWith sends one structured-output request and returns the answer's
// text.
func askWith(ctx context.Context, mc *model.Client, name, instructions string, schema json.RawMessage, schemaName, prompt string) ([]byte, error) {
	req := model.Request{
		Model:        name,
		Instructions: instructions,
		Input:        []model.Entry{{Kind: model.EntryUser, Text: prompt}},
		OutputSchema: &model.OutputSchema{Name: schemaName, Schema: schema, Strict: true},
	}
	var deltas strings.Builder
	var whole string
	err := mc.Stream(ctx, req, func(ev model.Event) {
		switch ev.Kind {
		case model.EvTextDelta:
			deltas.WriteString(ev.Text)
		case model.EvMessageDone:
			if ev.Text != "" {
				whole = ev.Text
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if whole == "" {
		whole = deltas.String()
	}
	return []byte(whole), nil
}
