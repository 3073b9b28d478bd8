package files

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// EditParams are the arguments of edit_file.
type EditParams struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

//go:embed descriptions/edit_file.md
var editDescription string

// Description tells the model what edit_file does.
func (EditParams) Description() string { return editDescription }

// Parameters returns the JSON schema of EditParams.
func (EditParams) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to edit, relative to the workspace root or absolute."},
    "old_string": {"type": "string", "description": "The exact text to replace, including whitespace and indentation. Empty to create a new file."},
    "new_string": {"type": "string", "description": "The text to put in its place."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string instead of requiring exactly one."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`)
}

// maxListedLines is how many occurrence line numbers an error lists.
const maxListedLines = 10

// Edit proposes replacing old_string with new_string in a file: exactly one
// occurrence, or every one with replace_all. An empty old_string creates a
// file that does not exist yet. Nothing is written until Commit.
func (w *Workspace) Edit(p EditParams) ([]Change, error) {
	if p.Path == "" {
		return nil, errors.New("path is required")
	}
	abs, err := w.ResolveWrite(p.Path)
	if err != nil {
		return nil, err
	}
	rel := w.display(abs)
	old, err := w.readForWrite(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if p.OldString != "" {
			return nil, fmt.Errorf("%s does not exist; to create it, call edit_file with an empty old_string or use write_file", rel)
		}
		return []Change{{Kind: KindAdd, Path: rel, New: []byte(p.NewString), Diff: p.NewString}}, nil
	}
	if err != nil {
		return nil, err
	}
	switch {
	case p.OldString == "":
		return nil, fmt.Errorf("%s already exists; old_string must quote the text to replace (use write_file to replace the whole file)", rel)
	case p.OldString == p.NewString:
		return nil, errors.New("old_string and new_string are the same; nothing would change")
	case isBinary(old):
		return nil, fmt.Errorf("%s is a binary file; edit_file changes text files only", rel)
	}
	content := string(old)
	from, to := p.OldString, p.NewString
	n := strings.Count(content, from)
	if n == 0 && strings.Contains(content, "\r\n") && strings.Contains(from, "\n") && !strings.Contains(from, "\r") {
		// read_file shows lines without their \r; match the file's endings.
		crlf := strings.ReplaceAll(from, "\n", "\r\n")
		if c := strings.Count(content, crlf); c > 0 {
			from, n = crlf, c
			if !strings.Contains(to, "\r") {
				to = strings.ReplaceAll(to, "\n", "\r\n")
			}
		}
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("old_string was not found in %s. %s", rel, nearMiss(content, p.OldString))
	case n > 1 && !p.ReplaceAll:
		return nil, fmt.Errorf("old_string occurs %d times in %s (%s); include more surrounding lines to make it unique, or set replace_all to change every occurrence", n, rel, occurrenceLines(content, from))
	}
	limit := 1
	if p.ReplaceAll {
		limit = -1
	}
	updated := []byte(strings.Replace(content, from, to, limit))
	return []Change{{Kind: KindUpdate, Path: rel, Old: old, New: updated, Diff: unifiedDiff(old, updated)}}, nil
}

// ReadForWrite reads the file p names before a change replaces it (a
// patch's old text): resolved as ResolveWrite does, then opened without
// following a link below its root and checked again through the opened
// file, as edit_file reads. A missing file is an error that
// errors.Is(err, fs.ErrNotExist).
func (w *Workspace) ReadForWrite(p string) ([]byte, error) {
	abs, err := w.ResolveWrite(p)
	if err != nil {
		return nil, err
	}
	return w.readForWrite(abs)
}

// readForWrite reads the file at abs, resolved by ResolveWrite, checking
// again through the opened file that it may be written.
func (w *Workspace) readForWrite(abs string) ([]byte, error) {
	f, fi, err := openEntry(within(w.writable, abs), abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if reason := unwritable(fi); reason != "" {
		return nil, &PathError{Path: w.display(abs), Reason: reason}
	}
	return readLimited(f, maxFileSize)
}

// nearMiss suggests why old was not found in content.
func nearMiss(content, old string) string {
	first := ""
	for l := range strings.Lines(old) {
		if strings.TrimSpace(l) != "" {
			first = strings.TrimRight(l, "\r\n")
			break
		}
	}
	if first != "" {
		n := 0
		for l := range strings.Lines(content) {
			n++
			l = strings.TrimRight(l, "\r\n")
			switch {
			case l == first && strings.Contains(old, "\n"):
				return fmt.Sprintf("Its first line matches line %d, so a later line differs; re-read the file with read_file and copy the text exactly.", n)
			case strings.TrimSpace(l) == strings.TrimSpace(first):
				return fmt.Sprintf("Line %d differs from its first line only in whitespace: %q. old_string must match exactly, including indentation.", n, l)
			}
		}
	}
	return "Re-read the file with read_file; it may not contain what you expect."
}

// occurrenceLines lists the line numbers where s starts in content.
func occurrenceLines(content, s string) string {
	var lines []string
	line, at := 1, 0
	for len(lines) < maxListedLines {
		i := strings.Index(content[at:], s)
		if i < 0 {
			break
		}
		line += strings.Count(content[at:at+i], "\n")
		lines = append(lines, strconv.Itoa(line))
		line += strings.Count(s, "\n")
		at += i + len(s)
	}
	return "lines " + strings.Join(lines, ", ")
}
