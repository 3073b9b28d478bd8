package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Archive is a parsed txtar file: a comment, then files, each introduced
// by a "-- name --" line. The scenario files keep their workspace, script,
// answers and golden decisions this way.
type Archive struct {
	Comment string
	Files   []File
}

// File is one file of an Archive.
type File struct{ Name, Data string }

// ParseArchive parses txtar text; it never fails (text before the first
// file marker is the comment).
func ParseArchive(text string) Archive {
	var a Archive
	cur := -1
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			a.Files = append(a.Files, File{Name: strings.TrimSpace(trimmed[3 : len(trimmed)-3])})
			cur = len(a.Files) - 1
			continue
		}
		if cur < 0 {
			a.Comment += line
		} else {
			a.Files[cur].Data += line
		}
	}
	return a
}

// Get returns the named file's data.
func (a Archive) Get(name string) (string, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return "", false
}

// Format renders the archive as txtar text again.
func (a Archive) Format() string {
	var b strings.Builder
	b.WriteString(a.Comment)
	for _, f := range a.Files {
		fmt.Fprintf(&b, "-- %s --\n%s", f.Name, f.Data)
		if f.Data != "" && !strings.HasSuffix(f.Data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Set replaces the named file's data, or adds the file.
func (a *Archive) Set(name, data string) {
	for i := range a.Files {
		if a.Files[i].Name == name {
			a.Files[i].Data = data
			return
		}
	}
	a.Files = append(a.Files, File{Name: name, Data: data})
}

// Answers reads the "answers" file: one "method result" line per
// server→client request the editor answers (blank lines and # comments
// skipped).
func (a Archive) Answers() map[string]string {
	answers := map[string]string{}
	s, _ := a.Get("answers")
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		method, result, _ := strings.Cut(l, " ")
		answers[method] = strings.TrimSpace(result)
	}
	return answers
}

// WriteWorkspace writes the files named workspace/… into dir.
func (a Archive) WriteWorkspace(dir string) error {
	for _, f := range a.Files {
		if rel, ok := strings.CutPrefix(f.Name, "workspace/"); ok {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(f.Data), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
