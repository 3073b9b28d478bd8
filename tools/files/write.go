package files

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
)

// WriteParams are the arguments of write_file.
type WriteParams struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

//go:embed descriptions/write_file.md
var writeDescription string

// Description tells the model what write_file does.
func (WriteParams) Description() string { return writeDescription }

// Parameters returns the JSON schema of WriteParams.
func (WriteParams) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to write, relative to the workspace root or absolute. Missing parent directories are created."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`)
}

// Write proposes creating a file with the given content, or replacing the
// content of an existing one. Nothing is written until Commit.
func (w *Workspace) Write(p WriteParams) ([]Change, error) {
	if p.Path == "" {
		return nil, errors.New("path is required")
	}
	abs, err := w.ResolveWrite(p.Path)
	if err != nil {
		return nil, err
	}
	rel := w.display(abs)
	content := []byte(p.Content)
	old, err := w.readForWrite(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return []Change{{Kind: KindAdd, Path: rel, New: content, Diff: p.Content}}, nil
	}
	if err != nil {
		return nil, err
	}
	if bytes.Equal(old, content) {
		return nil, fmt.Errorf("%s already has exactly this content; nothing to change", rel)
	}
	return []Change{{Kind: KindUpdate, Path: rel, Old: old, New: content, Diff: unifiedDiff(old, content)}}, nil
}
