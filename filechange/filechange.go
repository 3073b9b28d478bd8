package filechange

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/files"
	"github.com/apserver/apserver/tools/patch"
)

// FromPatch parses a patch and applies it in memory to ws's files: the
// changes it would make, each with its diff. Its errors say that nothing
// was changed and why.
func FromPatch(ws *files.Workspace, text string) ([]files.Change, error) {
	p, err := patch.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("the patch is malformed, nothing was changed: %w", err)
	}
	results, err := patch.Apply(p, ws.ReadForWrite)
	if err != nil {
		return nil, fmt.Errorf("the patch does not apply, nothing was changed: %w", err)
	}
	changes := make([]files.Change, 0, len(results))
	for _, r := range results {
		c := files.Change{Path: r.Path, MoveTo: r.MoveTo, Old: r.Old, New: r.New}
		switch r.Kind {
		case patch.Add:
			c.Kind = "add"
			if r.Old != nil {
				c.Kind = "update"
			}
		case patch.Delete:
			c.Kind = "delete"
		default:
			c.Kind = "update"
		}
		c.Diff = Diff(c)
		changes = append(changes, c)
	}
	return changes, nil
}

// Diff is what a fileChange item shows for one change: the contents
// of an added or deleted file, the hunks of an update.
func Diff(c files.Change) string {
	switch c.Kind {
	case "add":
		return string(c.New)
	case "delete":
		return string(c.Old)
	}
	return patch.Hunks(c.Old, c.New)
}

// Paths are the paths the changes touch, a move's destination after its
// source.
func Paths(changes []files.Change) []string {
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.Path)
		if c.MoveTo != "" {
			paths = append(paths, c.MoveTo)
		}
	}
	return paths
}

// Item is a fileChange item's changes.
func Item(changes []files.Change) []protocol.FileUpdateChange {
	var out []protocol.FileUpdateChange
	for _, c := range changes {
		fc := protocol.FileUpdateChange{Path: c.Path, Kind: protocol.PatchChangeKind{Type: c.Kind}, Diff: c.Diff}
		if c.MoveTo != "" {
			mv := c.MoveTo
			fc.Kind.MovePath = &mv
		}
		out = append(out, fc)
	}
	return out
}

// Summary is what the model is told of committed changes: a line per
// file, A added, D deleted, M modified (with its move).
func Summary(changes []files.Change) string {
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, c := range changes {
		switch {
		case c.Kind == "add":
			fmt.Fprintf(&b, "A %s\n", c.Path)
		case c.Kind == "delete":
			fmt.Fprintf(&b, "D %s\n", c.Path)
		case c.MoveTo != "":
			fmt.Fprintf(&b, "M %s -> %s\n", c.Path, c.MoveTo)
		default:
			fmt.Fprintf(&b, "M %s\n", c.Path)
		}
	}
	return b.String()
}

// Stamps are what the agent last read or wrote of each file, by the
// workspace-relative path file changes carry.
type Stamps map[string]files.Stamp

// Stale lists, sorted, the paths of changes whose file differs from what
// the agent last read or wrote: someone else edited it. A file the agent
// never saw is not stale.
func (s Stamps) Stale(ws *files.Workspace, changes []files.Change) []string {
	var stale []string
	for _, c := range changes {
		seen, ok := s[c.Path]
		if !ok {
			continue
		}
		now, err := ws.Stamp(c.Path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if !now.Same(seen) {
			stale = append(stale, c.Path)
		}
	}
	sort.Strings(stale)
	return stale
}

// Record records what the agent just wrote.
func (s Stamps) Record(ws *files.Workspace, changes []files.Change) {
	for _, c := range changes {
		for _, p := range []string{c.Path, c.MoveTo} {
			if p == "" {
				continue
			}
			if st, err := ws.Stamp(p); err == nil {
				s[p] = st
			}
		}
	}
}

// Refresh stamps every recorded file again: the agent's own commands may
// have changed those files, which is not an outside edit.
func (s Stamps) Refresh(ws *files.Workspace) {
	for p := range s {
		if st, err := ws.Stamp(p); err == nil {
			s[p] = st
		}
	}
}
