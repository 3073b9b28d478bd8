package files

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

const (
	// defaultMaxResults is how many matching lines search returns by default.
	defaultMaxResults = 200
	// maxMaxResults caps max_results.
	maxMaxResults = 2000
	// maxSearchFileSize is the largest file search looks in.
	maxSearchFileSize = 1 << 20
	// maxMatchChars is where search cuts a matching line.
	maxMatchChars = 500
)

// SearchParams are the arguments of search.
type SearchParams struct {
	Pattern         string `json:"pattern"`
	Path            string `json:"path,omitempty"`
	Glob            string `json:"glob,omitempty"`
	MaxResults      int    `json:"max_results,omitempty"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
}

//go:embed descriptions/search.md
var searchDescription string

// Description tells the model what search does.
func (SearchParams) Description() string { return searchDescription }

// Parameters returns the JSON schema of SearchParams.
func (SearchParams) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "A regular expression in Go (RE2) syntax, matched against each line."},
    "path": {"type": "string", "description": "The directory or file to search, relative to the workspace root or absolute. Default: the workspace root."},
    "glob": {"type": "string", "description": "Only search files matching this glob, such as *.go, *.{ts,tsx} or src/**/*.py. Without a / it matches the file name."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "The most matching lines to return. Default 200."},
    "case_insensitive": {"type": "boolean", "description": "Ignore case when matching."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

// Search returns the lines matching a regular expression in the files under
// a directory (or in one file), as path:line:text, in path order. It skips
// .git, symlinks, binary files, files over 1 MiB and files the workspace's
// .gitignore files ignore.
func (w *Workspace) Search(p SearchParams) (string, error) {
	if p.Pattern == "" {
		return "", errors.New("pattern is required")
	}
	if p.MaxResults < 0 {
		return "", errors.New("max_results must be positive")
	}
	expr := p.Pattern
	if p.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("invalid pattern (Go regular expression syntax): %w", err)
	}
	s := &searcher{w: w, re: re, max: p.MaxResults}
	if s.max == 0 {
		s.max = defaultMaxResults
	}
	s.max = min(s.max, maxMaxResults)
	if p.Glob != "" {
		g, ok := compileGlob(p.Glob)
		if !ok {
			return "", fmt.Errorf("invalid glob %q", p.Glob)
		}
		s.glob = &g
	}
	path := p.Path
	if path == "" {
		path = "."
	}
	abs, err := w.ResolveRead(path)
	if err != nil {
		return "", err
	}
	rel := w.display(abs)
	s.root = within(w.readable, abs)
	f, fi, err := openEntry(s.root, abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist", rel)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	if !fi.IsDir() {
		data, err := readLimited(f, maxSearchFileSize)
		if errors.Is(err, errTooLarge) {
			return "", fmt.Errorf("%s is over 1 MiB; search skips files that large (use read_file with an offset)", rel)
		}
		if err != nil {
			return "", err
		}
		if isBinary(data) {
			return "", fmt.Errorf("%s is a binary file; search looks in text files only", rel)
		}
		s.scan(abs, data)
		return s.output(), nil
	}
	s.top = abs
	s.ignoreTop = abs
	if inside(w.root, abs) {
		s.ignoreTop = w.root
	}
	s.ignore = make(ignorer)
	s.loadAncestorIgnores(abs)
	s.walk(f, abs)
	return s.output(), nil
}

// searcher is the state of one Search.
type searcher struct {
	w    *Workspace
	re   *regexp.Regexp
	glob *glob
	max  int
	// root is the readable root searched under; top is the searched
	// directory; ignoreTop is where .gitignore files start to apply: the
	// workspace root, or top when searching outside it.
	root, top, ignoreTop string
	ignore               ignorer
	results              []string
	capped               bool
}

// loadAncestorIgnores loads the .gitignore files from ignoreTop down to
// (not including) dir.
func (s *searcher) loadAncestorIgnores(dir string) {
	for d := dir; d != s.ignoreTop && d != filepath.Dir(d); {
		d = filepath.Dir(d)
		if !inside(s.root, d) {
			return
		}
		if f, _, err := openDir(s.root, d, false); err == nil {
			s.loadIgnore(f, d)
			f.Close()
		}
	}
}

// loadIgnore reads the .gitignore file in dir (open as f), if there is one.
func (s *searcher) loadIgnore(f *os.File, dir string) {
	g, fi, err := openAt(f, ".gitignore", filepath.Join(dir, ".gitignore"))
	if err != nil {
		return
	}
	defer g.Close()
	if fi.IsDir() {
		return
	}
	data, err := readLimited(g, maxSearchFileSize)
	if err != nil {
		return
	}
	s.ignore[s.ignoreRel(dir)] = parseIgnore(string(data))
}

// ignoreRel returns abs relative to ignoreTop in slash form, "" for the top.
func (s *searcher) ignoreRel(abs string) string {
	rel, err := filepath.Rel(s.ignoreTop, abs)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// walk searches the directory abs, open as dir, depth first in name order.
// It opens each entry relative to its directory without following symlinks.
func (s *searcher) walk(dir *os.File, abs string) {
	s.loadIgnore(dir, abs)
	des, err := dir.ReadDir(-1)
	if err != nil && len(des) == 0 {
		return
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, de := range des {
		if s.capped {
			return
		}
		name := de.Name()
		child := filepath.Join(abs, name)
		isDir := de.IsDir()
		if name == ".git" || (!isDir && !de.Type().IsRegular()) || s.ignore.ignored(s.ignoreRel(child), isDir) {
			continue
		}
		if isDir {
			fd, err := unix.Openat(int(dir.Fd()), name, dirFlags, 0)
			if err != nil {
				continue
			}
			sub := os.NewFile(uintptr(fd), child)
			s.walk(sub, child)
			sub.Close()
			continue
		}
		if s.glob != nil {
			rel, err := filepath.Rel(s.top, child)
			if err != nil || !s.glob.match(filepath.ToSlash(rel)) {
				continue
			}
		}
		s.searchFile(dir, name, child)
	}
}

// searchFile searches the regular file name in dir.
func (s *searcher) searchFile(dir *os.File, name, abs string) {
	f, fi, err := openAt(dir, name, abs)
	if err != nil {
		return
	}
	defer f.Close()
	if fi.IsDir() || fi.Size() > maxSearchFileSize {
		return
	}
	data, err := readLimited(f, maxSearchFileSize)
	if err != nil || isBinary(data) {
		return
	}
	s.scan(abs, data)
}

// scan adds the matching lines of data, the content of abs.
func (s *searcher) scan(abs string, data []byte) {
	rel := s.w.display(abs)
	n := 0
	for line := range bytes.Lines(data) {
		n++
		line = bytes.TrimRight(line, "\r\n")
		if !s.re.Match(line) {
			continue
		}
		if len(s.results) == s.max {
			s.capped = true
			return
		}
		text := strings.ToValidUTF8(string(line), "\uFFFD")
		if utf8.RuneCountInString(text) > maxMatchChars {
			text = string([]rune(text)[:maxMatchChars]) + " [cut]"
		}
		s.results = append(s.results, fmt.Sprintf("%s:%d:%s", rel, n, text))
	}
}

func (s *searcher) output() string {
	if len(s.results) == 0 {
		return "No matches found.\n"
	}
	out := strings.Join(s.results, "\n") + "\n"
	if s.capped {
		out += fmt.Sprintf("[results capped at %d; narrow the pattern, path or glob, or raise max_results]\n", s.max)
	}
	return out
}
