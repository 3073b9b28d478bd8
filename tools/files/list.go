package files

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

const (
	// defaultListDepth is how deep list_dir goes by default.
	defaultListDepth = 2
	// maxListDepth caps list_dir's depth.
	maxListDepth = 10
	// maxListEntries caps how many entries list_dir shows.
	maxListEntries = 500
)

// ListParams are the arguments of list_dir.
type ListParams struct {
	Path  string `json:"path,omitempty"`
	Depth int    `json:"depth,omitempty"`
}

//go:embed descriptions/list_dir.md
var listDescription string

// Description tells the model what list_dir does.
func (ListParams) Description() string { return listDescription }

// Parameters returns the JSON schema of ListParams.
func (ListParams) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The directory to list, relative to the workspace root or absolute. Default: the workspace root."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many levels to descend; 1 lists only the directory itself. Default 2."}
  },
  "additionalProperties": false
}`)
}

// List returns the entries under a directory down to depth levels, one path
// a line, sorted, directories ending in / and symlinks in @ (not followed);
// .git is skipped. The shallower levels are listed first when the listing is
// cut at maxListEntries.
func (w *Workspace) List(p ListParams) (string, error) {
	if p.Depth < 0 {
		return "", errors.New("depth must be positive")
	}
	depth := p.Depth
	if depth == 0 {
		depth = defaultListDepth
	}
	depth = min(depth, maxListDepth)
	path := p.Path
	if path == "" {
		path = "."
	}
	abs, err := w.ResolveRead(path)
	if err != nil {
		return "", err
	}
	root := within(w.readable, abs)
	type pending struct {
		abs   string
		depth int
	}
	queue := []pending{{abs, 1}}
	var entries []string
	full := false
	for len(queue) > 0 && !full {
		d := queue[0]
		queue = queue[1:]
		dir, _, err := openDir(root, d.abs, false)
		if err != nil {
			if d.abs == abs {
				return "", listError(w.display(abs), err)
			}
			continue // vanished or unreadable since it was listed
		}
		des, err := dir.ReadDir(-1)
		dir.Close()
		if err != nil && d.abs == abs {
			return "", fmt.Errorf("listing %s: %w", w.display(abs), err)
		}
		slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, de := range des {
			if de.Name() == ".git" {
				continue
			}
			if len(entries) == maxListEntries {
				full = true
				break
			}
			child := filepath.Join(d.abs, de.Name())
			name := w.display(child)
			switch {
			case de.IsDir():
				name += "/"
				if d.depth < depth {
					queue = append(queue, pending{child, d.depth + 1})
				}
			case de.Type()&fs.ModeSymlink != 0:
				name += "@"
			}
			entries = append(entries, name)
		}
	}
	if len(entries) == 0 {
		return "[empty directory]\n", nil
	}
	slices.Sort(entries)
	out := strings.Join(entries, "\n") + "\n"
	if full {
		out += fmt.Sprintf("[listing cut at %d entries; list a subdirectory or use a smaller depth]\n", maxListEntries)
	}
	return out, nil
}

// listError explains why the directory rel cannot be listed.
func listError(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s is not a directory; use read_file to read a file", rel)
	}
	return fmt.Errorf("listing %s: %w", rel, err)
}
