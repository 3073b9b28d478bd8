package session

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// ReadAccount implements account/read: apserver calls the configured
// provider itself, so there is no OpenAI account to log in to.
func (m *Manager) ReadAccount(_ context.Context, _ protocol.Empty, reply Reply) {
	reply(protocol.AccountReadResult{Account: nil, RequiresOpenaiAuth: false}, nil)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ReadConfigRequirements implements configRequirements/read: apserver has
// no administrator requirements.
func (m *Manager) ReadConfigRequirements(_ context.Context, _ protocol.Empty, reply Reply) {
	reply(protocol.ConfigRequirementsReadResult{Requirements: nil}, nil)
}

// ListSkills implements skills/list: the SKILL.md files under Codex's skill
// locations (~/.codex/skills, ~/.agents/skills, and a workspace's
// .codex/skills, .agents/skills and .apserver/skills), per cwd.
func (m *Manager) ListSkills(ctx context.Context, p protocol.CwdsParams, reply Reply) {
	cwds := p.Cwds
	if len(cwds) == 0 {
		cwds = []string{m.defaultSettings().Cwd}
	}
	go func() {
		res := protocol.SkillsListResult{Data: make([]protocol.SkillsListEntry, 0, len(cwds))}
		home, _ := os.UserHomeDir()
		codexHome := os.Getenv("CODEX_HOME")
		if codexHome == "" && home != "" {
			codexHome = filepath.Join(home, ".codex")
		}
		for _, cwd := range cwds {
			e := protocol.SkillsListEntry{Cwd: cwd, Skills: []protocol.SkillMetadata{}, Errors: []protocol.SkillError{}}
			var roots []skillRoot
			if codexHome != "" {
				roots = append(roots, skillRoot{filepath.Join(codexHome, "skills"), "user"})
			}
			if home != "" {
				roots = append(roots, skillRoot{filepath.Join(home, ".agents", "skills"), "user"})
			}
			for _, d := range []string{".codex", ".agents", ".apserver"} {
				roots = append(roots, skillRoot{filepath.Join(cwd, d, "skills"), "repo"})
			}
			for _, r := range roots {
				scanSkills(r, &e)
			}
			res.Data = append(res.Data, e)
		}
		reply(res, nil)
	}()
}

type skillRoot struct{ dir, scope string }

// scanSkills adds the skills of root's subdirectories (each with a
// SKILL.md whose front matter names it) to e.
func scanSkills(r skillRoot, e *protocol.SkillsListEntry) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		path := filepath.Join(r.dir, d.Name(), "SKILL.md")
		name, desc, err := skillFrontMatter(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			e.Errors = append(e.Errors, protocol.SkillError{Path: path, Message: err.Error()})
			continue
		}
		if name == "" {
			name = d.Name()
		}
		e.Skills = append(e.Skills, protocol.SkillMetadata{Name: name, Description: desc, Path: path, Scope: r.scope, Enabled: true})
	}
}

// skillFrontMatter reads name and description from a SKILL.md's "---"
// front matter.
func skillFrontMatter(path string) (name, desc string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return "", "", nil
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			name = v
		case "description":
			desc = v
		}
	}
	return name, desc, sc.Err()
}

// ListHooks implements hooks/list: apserver runs no Codex hooks, so each
// cwd has none.
func (m *Manager) ListHooks(_ context.Context, p protocol.CwdsParams, reply Reply) {
	cwds := p.Cwds
	if len(cwds) == 0 {
		cwds = []string{m.defaultSettings().Cwd}
	}
	res := protocol.HooksListResult{Data: []protocol.HooksListEntry{}}
	for _, c := range cwds {
		res.Data = append(res.Data, protocol.HooksListEntry{Cwd: c, Hooks: []any{}, Errors: []any{}, Warnings: []string{}})
	}
	reply(res, nil)
}

// ListCollaborationModes implements collaborationMode/list: plan mode
// (read-only planning that ends in a <proposed_plan>, planmode.go) and the
// default mode.
func (m *Manager) ListCollaborationModes(_ context.Context, _ protocol.Empty, reply Reply) {
	plan, def := protocol.ModePlan, protocol.ModeDefault
	reply(protocol.DataResult[protocol.CollaborationModeMask]{Data: []protocol.CollaborationModeMask{
		{Name: "Plan", Mode: &plan}, {Name: "Default", Mode: &def}}}, nil)
}

// ListLoadedThreads implements thread/loaded/list: the ids of the threads
// in memory, sorted, in pages.
func (m *Manager) ListLoadedThreads(_ context.Context, p protocol.PageParams, reply Reply) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.threads))
	for id := range m.threads {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	sort.Strings(ids)
	reply(page(ids, p.Cursor, p.Limit, func(id string) string { return id }))
}

// Loaded reports whether a thread is in memory.
func (m *Manager) Loaded(id string) bool { return m.loaded(id) != nil }

// ListBackgroundTerminals implements thread/backgroundTerminals/list:
// apserver's commands end with their tool call, so none runs in the
// background.
func (m *Manager) ListBackgroundTerminals(ctx context.Context, p protocol.ThreadTurnsListParams, reply Reply) {
	if _, _, err := m.storedThread(ctx, p.ThreadID); err != nil && m.loaded(p.ThreadID) == nil {
		reply(nil, err)
		return
	}
	reply(protocol.PageResult[any]{Data: []any{}}, nil)
}

// CheckBedrockGovCloud implements account/bedrock/checkGovCloudRequirements:
// apserver has no Bedrock login, so nothing is GovCloud.
func (m *Manager) CheckBedrockGovCloud(_ context.Context, _ protocol.Empty, reply Reply) {
	reply(map[string]bool{"isGovCloud": false, "shouldWarn": false}, nil)
}

// ListTurns implements thread/turns/list: the thread's turns with their
// items, newest first unless sortDirection is "asc".
func (m *Manager) ListTurns(ctx context.Context, p protocol.ThreadTurnsListParams, reply Reply) {
	go func() {
		turns, err := m.turnsOf(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		if p.SortDirection == nil || *p.SortDirection == "desc" {
			slices.Reverse(turns)
		}
		reply(page(turns, p.Cursor, p.Limit, func(t protocol.Turn) string { return t.ID }))
	}()
}

// ListItems implements thread/items/list: the items of the thread (of one
// turn with turnId), oldest first unless sortDirection is "desc".
func (m *Manager) ListItems(ctx context.Context, p protocol.ThreadItemsListParams, reply Reply) {
	go func() {
		turns, err := m.turnsOf(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		items := []protocol.ThreadItemEntry{}
		found := p.TurnID == nil
		for _, t := range turns {
			if p.TurnID != nil && t.ID != *p.TurnID {
				continue
			}
			found = true
			for _, it := range t.Items {
				items = append(items, protocol.ThreadItemEntry{Item: it, TurnID: t.ID})
			}
		}
		if !found {
			reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "turn not found: %s", *p.TurnID))
			return
		}
		if p.SortDirection != nil && *p.SortDirection == "desc" {
			slices.Reverse(items)
		}
		after, _ := p.CursorItem() // checked by Validate
		var cursor *string
		if after != "" {
			cursor = &after
		}
		reply(page(items, cursor, p.Limit, func(e protocol.ThreadItemEntry) string { return e.Item.ItemID() }))
	}()
}

// turnsOf returns a thread's turns, oldest first: from the thread itself
// when it is loaded (an ephemeral thread is nowhere else), else the store.
func (m *Manager) turnsOf(ctx context.Context, id string) ([]protocol.Turn, error) {
	if t := m.loaded(id); t != nil && t.meta.Ephemeral {
		done := make(chan []protocol.Turn, 1)
		t.post(func() { done <- t.wire(true).Turns })
		select {
		case ts := <-done:
			return ts, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	db, meta, err := m.storedThread(ctx, id)
	if err != nil {
		return nil, err
	}
	return loadTurns(ctx, db, meta.ID)
}

// page cuts a list after the element whose key is cursor, limit long; the
// next cursor is the key of the last element returned when more follow.
func page[T any](all []T, cursor *string, limit *int, key func(T) string) (protocol.PageResult[T], error) {
	start := 0
	if cursor != nil && *cursor != "" {
		start = -1
		for i, x := range all {
			if key(x) == *cursor {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return protocol.PageResult[T]{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: invalid cursor")
		}
	}
	rest := all[start:]
	res := protocol.PageResult[T]{Data: rest}
	if limit != nil && *limit > 0 && *limit < len(rest) {
		res.Data = rest[:*limit]
		next := key(res.Data[len(res.Data)-1])
		res.NextCursor = &next
	}
	if res.Data == nil {
		res.Data = []T{}
	}
	return res, nil
}

// ListInstalledPlugins implements plugin/installed: apserver has no
// plugin marketplaces.
func (m *Manager) ListInstalledPlugins(_ context.Context, _ protocol.Empty, reply Reply) {
	reply(map[string][]any{"marketplaces": {}, "marketplaceLoadErrors": {}}, nil)
}

// ReleaseEphemeral unloads an ephemeral thread that no client follows any
// more, if no turn is running on it: nothing could ever read it again (it
// is not stored), so keeping it would only grow memory. The server calls
// it when the last subscriber of a thread unsubscribes or disconnects;
// Codex's TUI makes one such thread per prompt, for the title.
func (m *Manager) ReleaseEphemeral(id string) {
	t := m.loaded(id)
	if t == nil || !t.meta.Ephemeral { // meta.Ephemeral never changes after creation
		return
	}
	idle := make(chan bool, 1)
	t.post(func() { idle <- t.turn == nil })
	select {
	case ok := <-idle:
		if ok {
			t.unload()
		}
	case <-t.done:
	}
}
