package files

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"
)

const (
	// defaultReadLimit is how many lines read_file shows by default.
	defaultReadLimit = 2000
	// maxReadBytes caps the text read_file returns.
	maxReadBytes = 256 << 10
	// maxLineChars is where read_file cuts a long line.
	maxLineChars = 2000
)

// ReadParams are the arguments of read_file.
type ReadParams struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

//go:embed descriptions/read_file.md
var readDescription string

// Description tells the model what read_file does.
func (ReadParams) Description() string { return readDescription }

// Parameters returns the JSON schema of ReadParams.
func (ReadParams) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to read, relative to the workspace root or absolute."},
    "offset": {"type": "integer", "minimum": 1, "description": "The 1-based line to start at. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show. Default 2000."}
  },
  "required": ["path"],
  "additionalProperties": false
}`)
}

// Read returns lines of a text file numbered like cat -n (number, tab,
// line), from offset for at most limit lines, with notes on what was left
// out. Binary files are refused.
func (w *Workspace) Read(p ReadParams) (string, error) {
	if p.Path == "" {
		return "", errors.New("path is required")
	}
	if p.Offset < 0 || p.Limit < 0 {
		return "", errors.New("offset and limit must be positive")
	}
	offset, limit := max(p.Offset, 1), p.Limit
	if limit == 0 {
		limit = defaultReadLimit
	}
	abs, err := w.ResolveRead(p.Path)
	if err != nil {
		return "", err
	}
	rel := w.display(abs)
	f, fi, err := openEntry(within(w.readable, abs), abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist; list_dir shows what is there", rel)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list_dir to see what is in it", rel)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	head, err := r.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("reading %s: %w", rel, err)
	}
	if isBinary(head) {
		return "", fmt.Errorf("%s is a binary file (%d bytes); read_file shows text files only", rel, fi.Size())
	}
	var sb strings.Builder
	n, shown := 0, 0
	for {
		line, long, err := readLine(r, maxLineChars*utf8.UTFMax)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", rel, err)
		}
		n++
		if n < offset {
			continue
		}
		if shown == limit {
			fmt.Fprintf(&sb, "[more lines follow; continue with offset=%d]\n", n)
			return sb.String(), nil
		}
		text := numbered(n, line, long)
		if sb.Len()+len(text) > maxReadBytes {
			fmt.Fprintf(&sb, "[output capped at %d KiB; continue with offset=%d]\n", maxReadBytes>>10, n)
			return sb.String(), nil
		}
		sb.WriteString(text)
		shown++
	}
	switch {
	case n == 0:
		return "[empty file]\n", nil
	case shown == 0:
		return "", fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, rel, n)
	}
	return sb.String(), nil
}

// numbered formats line n as cat -n does, cutting it at maxLineChars.
func numbered(n int, line []byte, long bool) string {
	text := strings.ToValidUTF8(string(line), "\uFFFD")
	if utf8.RuneCountInString(text) > maxLineChars {
		text = string([]rune(text)[:maxLineChars])
		long = true
	}
	if long {
		text += fmt.Sprintf(" [line cut at %d characters]", maxLineChars)
	}
	return fmt.Sprintf("%6d\t%s\n", n, text)
}

// readLine reads one line from r without its line ending, keeping at most
// keep bytes of it; long reports that the line was longer. It returns io.EOF
// only when no line is left.
func readLine(r *bufio.Reader, keep int) (line []byte, long bool, err error) {
	started := false
	for {
		frag, err := r.ReadSlice('\n')
		if len(frag) == 0 && errors.Is(err, io.EOF) && !started {
			return nil, false, io.EOF
		}
		started = true
		line = append(line, bytes.TrimSuffix(frag, []byte("\n"))...)
		if len(line) > keep {
			line, long = line[:keep], true
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil, errors.Is(err, io.EOF):
			if !long {
				line = bytes.TrimSuffix(line, []byte("\r"))
			}
			return line, long, nil
		}
		return nil, false, err
	}
}

// ReadHead returns the first n bytes of the regular file p names, under the
// same confinement as Read: p, and every symbolic link on the way, must
// resolve inside the workspace or a writable or readable root, or the error
// is a *PathError. It also returns the resolved path. Callers that read a
// file for the model outside a tool call (AGENTS.md) use it, so that such a
// file can bring into the prompt only what read_file could.
func (w *Workspace) ReadHead(p string, n int) ([]byte, string, error) {
	abs, err := w.ResolveRead(p)
	if err != nil {
		return nil, "", err
	}
	f, fi, err := openEntry(within(w.readable, abs), abs)
	if err != nil {
		return nil, abs, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, abs, fmt.Errorf("%s is not a regular file", w.display(abs))
	}
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, abs, fmt.Errorf("reading %s: %w", w.display(abs), err)
	}
	return buf[:m], abs, nil
}
