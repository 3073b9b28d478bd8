package protocol

import (
	"encoding/json"
	"path/filepath"
)

// Methods a Codex client (the 0.169 TUI among them) calls at start-up and
// while it runs, besides threads and turns (docs/protocol.md).
// Their method names are constants in methods_gen.go, generated from the
// schema (see internal/protogen).

// AccountReadResult is account/read's result. apserver talks to the
// configured provider itself: no OpenAI login is ever required.
type AccountReadResult struct {
	Account            any  `json:"account"`
	RequiresOpenaiAuth bool `json:"requiresOpenaiAuth"`
}

// ConfigReadParams are config/read's params.
type ConfigReadParams struct {
	Cwd           *string `json:"cwd,omitempty"`
	IncludeLayers bool    `json:"includeLayers,omitempty"`
}

// ConfigReadResult is config/read's result: the effective config in
// Codex's keys, each key's origin, and (when asked) the layers.
type ConfigReadResult struct {
	Config  map[string]any                 `json:"config"`
	Origins map[string]ConfigLayerMetadata `json:"origins"`
	Layers  []ConfigLayer                  `json:"layers,omitempty"`
}

// ConfigLayerMetadata names the layer a value comes from.
type ConfigLayerMetadata struct {
	Name    ConfigLayerSource `json:"name"`
	Version string            `json:"version"`
}

// ConfigLayer is one config layer, lowest precedence first.
type ConfigLayer struct {
	Name    ConfigLayerSource `json:"name"`
	Version string            `json:"version"`
	Config  map[string]any    `json:"config"`
}

// ConfigLayerSource is Codex's layer name: {"type":"user","file":…},
// {"type":"project","dotCodexFolder":…} or {"type":"sessionFlags"}.
type ConfigLayerSource struct {
	Type           string `json:"type"`
	File           string `json:"file,omitempty"`
	DotCodexFolder string `json:"dotCodexFolder,omitempty"`
}

// ConfigRequirementsReadResult: apserver has no admin requirements.
type ConfigRequirementsReadResult struct {
	Requirements any `json:"requirements"`
}

// CwdsParams are the params of skills/list and hooks/list.
type CwdsParams struct {
	Cwds        []string `json:"cwds,omitempty"`
	ForceReload bool     `json:"forceReload,omitempty"`
	ThreadID    *string  `json:"threadId,omitempty"`
}

// SkillsListResult is skills/list's result.
type SkillsListResult struct {
	Data []SkillsListEntry `json:"data"`
}

// SkillsListEntry lists the skills found for one cwd.
type SkillsListEntry struct {
	Cwd    string          `json:"cwd"`
	Skills []SkillMetadata `json:"skills"`
	Errors []SkillError    `json:"errors"`
}

// SkillMetadata describes one skill (a SKILL.md).
type SkillMetadata struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Path        string `json:"path"`
	Scope       string `json:"scope"`
	Enabled     bool   `json:"enabled"`
}

// SkillError is a SKILL.md that could not be read.
type SkillError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// HooksListResult is hooks/list's result: apserver runs no Codex hooks.
type HooksListResult struct {
	Data []HooksListEntry `json:"data"`
}

// HooksListEntry lists the hooks of one cwd.
type HooksListEntry struct {
	Cwd      string   `json:"cwd"`
	Hooks    []any    `json:"hooks"`
	Errors   []any    `json:"errors"`
	Warnings []string `json:"warnings"`
}

// CollaborationModeMask is one mode of collaborationMode/list.
type CollaborationModeMask struct {
	Name            string  `json:"name"`
	Mode            *string `json:"mode"`
	Model           *string `json:"model"`
	ReasoningEffort *string `json:"reasoning_effort"`
}

// DataResult is a result whose only field is a list.
type DataResult[T any] struct {
	Data []T `json:"data"`
}

// PageResult is a paginated list.
type PageResult[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

// ThreadUnsubscribeResult is thread/unsubscribe's result: "unsubscribed",
// "notSubscribed" or "notLoaded".
type ThreadUnsubscribeResult struct {
	Status string `json:"status"`
}

// ThreadTurnsListParams are thread/turns/list's params (and, with TurnID,
// thread/items/list's).
type ThreadTurnsListParams struct {
	ThreadID      string  `json:"threadId"`
	TurnID        *string `json:"turnId,omitempty"`
	Cursor        *string `json:"cursor,omitempty"`
	Limit         *int    `json:"limit,omitempty"`
	SortDirection *string `json:"sortDirection,omitempty"`
}

func (p *ThreadTurnsListParams) Validate() error {
	if p.ThreadID == "" {
		return MissingField("threadId")
	}
	if p.SortDirection != nil && *p.SortDirection != "asc" && *p.SortDirection != "desc" {
		return Errorf(ErrInvalidParams, "Invalid params: unknown sortDirection `%s`", *p.SortDirection)
	}
	if p.Limit != nil && *p.Limit < 0 {
		return Errorf(ErrInvalidParams, "Invalid params: limit must not be negative")
	}
	return nil
}

// PageParams are the params of a plain paginated list
// (thread/loaded/list).
type PageParams struct {
	Cursor *string `json:"cursor,omitempty"`
	Limit  *int    `json:"limit,omitempty"`
}

// CodexVersion is the Codex release whose app-server protocol apserver
// speaks (the vendored schema in protocol/codex). It is the version in the
// initialize result's userAgent.
const CodexVersion = "0.171.0"

// ThreadItemsListParams are thread/items/list's params. Cursor is a string
// (an item id from nextCursor) or an anchor {"type":"item","itemId":…};
// either way the page starts after that item.
type ThreadItemsListParams struct {
	ThreadID      string          `json:"threadId"`
	TurnID        *string         `json:"turnId,omitempty"`
	Cursor        json.RawMessage `json:"cursor,omitempty"`
	Limit         *int            `json:"limit,omitempty"`
	SortDirection *string         `json:"sortDirection,omitempty"`
}

func (p *ThreadItemsListParams) Validate() error {
	q := ThreadTurnsListParams{ThreadID: p.ThreadID, Limit: p.Limit, SortDirection: p.SortDirection}
	if err := q.Validate(); err != nil {
		return err
	}
	_, err := p.CursorItem()
	return err
}

// CursorItem is the id of the item the page starts after ("": the start).
func (p *ThreadItemsListParams) CursorItem() (string, error) {
	if len(p.Cursor) == 0 || string(p.Cursor) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(p.Cursor, &s) == nil {
		return s, nil
	}
	var a struct {
		Type   string `json:"type"`
		ItemID string `json:"itemId"`
	}
	if json.Unmarshal(p.Cursor, &a) != nil || a.Type != "item" || a.ItemID == "" {
		return "", Errorf(ErrInvalidParams, "Invalid params: cursor must be a string or {\"type\":\"item\",\"itemId\":…}")
	}
	return a.ItemID, nil
}

// ThreadItemEntry is one entry of thread/items/list.
type ThreadItemEntry struct {
	Item   ThreadItem `json:"item"`
	TurnID string     `json:"turnId"`
}

// FuzzyFileSearchParams are fuzzyFileSearch's params.
type FuzzyFileSearchParams struct {
	Query             string   `json:"query"`
	Roots             []string `json:"roots"`
	CancellationToken *string  `json:"cancellationToken,omitempty"`
}

func (p *FuzzyFileSearchParams) Validate() error {
	if p.Roots == nil {
		return MissingField("roots")
	}
	for _, r := range p.Roots {
		if !filepath.IsAbs(r) {
			return Errorf(ErrInvalidParams, "Invalid params: roots must be absolute paths: %s", r)
		}
	}
	return nil
}

// FuzzyFileSearchResult is fuzzyFileSearch's result.
type FuzzyFileSearchResult struct {
	Files []FuzzyFileMatch `json:"files"`
}

// FuzzyFileMatch is one match; Path is relative to Root, Indices are the
// matched characters' positions in Path.
type FuzzyFileMatch struct {
	Root      string   `json:"root"`
	Path      string   `json:"path"`
	FileName  string   `json:"file_name"`
	MatchType string   `json:"match_type"`
	Score     uint32   `json:"score"`
	Indices   []uint32 `json:"indices"`
}
