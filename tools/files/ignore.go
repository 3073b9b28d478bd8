package files

import (
	"path"
	"strings"
)

// pattern is a compiled gitignore pattern or glob: path segments, each a
// path.Match pattern or "**" for any number of segments.
type pattern []string

// compilePattern splits a slash-separated pattern into segments, turning the
// gitignore negated class [!...] into path.Match's [^...]. It reports false
// for a malformed pattern.
func compilePattern(p string) (pattern, bool) {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		s = strings.ReplaceAll(s, "[!", "[^")
		if _, err := path.Match(s, ""); err != nil {
			return nil, false
		}
		segs[i] = s
	}
	return segs, true
}

// match reports whether the pattern matches all of the path segments. A
// leading or inner "**" matches zero or more segments; a trailing one, one or
// more (so "a/**" matches what is inside a, not a itself).
func (p pattern) match(segs []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			if len(p) == 1 {
				return len(segs) > 0
			}
			for i := range len(segs) + 1 {
				if p[1:].match(segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], segs[0]); !ok {
			return false
		}
		p, segs = p[1:], segs[1:]
	}
	return len(segs) == 0
}

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	pat     pattern
	negate  bool
	dirOnly bool
}

// parseIgnore parses the content of a .gitignore file: blank lines and
// #comments are skipped, trailing unescaped spaces dropped, ! negates, a
// trailing / matches only directories, and a pattern with a / elsewhere is
// anchored to the file's directory; one without matches at any depth.
func parseIgnore(data string) []ignoreRule {
	var rules []ignoreRule
	for line := range strings.Lines(data) {
		line = strings.TrimRight(line, "\r\n")
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if !strings.Contains(line, "/") {
			line = "**/" + line
		}
		pat, ok := compilePattern(strings.TrimPrefix(line, "/"))
		if !ok {
			continue
		}
		r.pat = pat
		rules = append(rules, r)
	}
	return rules
}

// ignorer holds the .gitignore rules of a tree, by the slash path of their
// directory relative to the tree's top ("" for the top).
type ignorer map[string][]ignoreRule

// ignored reports whether the rules ignore rel, a slash path relative to the
// top. Rules in deeper files, and later rules in a file, take precedence.
// Only rel itself is judged: a caller walking the tree does not enter
// ignored directories, and so never asks about what is inside them.
func (m ignorer) ignored(rel string, isDir bool) bool {
	segs := strings.Split(rel, "/")
	ignored := false
	for i := range segs {
		for _, r := range m[strings.Join(segs[:i], "/")] {
			if (!r.dirOnly || isDir) && r.pat.match(segs[i:]) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}

// glob is search's file filter: alternatives from {a,b} expansion, matched
// against the file name when the glob has no /, else against the path
// relative to the searched directory.
type glob struct {
	alts     []pattern
	wantPath bool
}

// compileGlob compiles g; it reports false for a malformed glob.
func compileGlob(g string) (glob, bool) {
	var out glob
	out.wantPath = strings.Contains(g, "/")
	for _, alt := range expandBraces(g) {
		p, ok := compilePattern(strings.TrimPrefix(alt, "/"))
		if !ok {
			return glob{}, false
		}
		out.alts = append(out.alts, p)
	}
	return out, true
}

// match reports whether rel, a slash path relative to the searched
// directory, passes the glob.
func (g glob) match(rel string) bool {
	segs := []string{path.Base(rel)}
	if g.wantPath {
		segs = strings.Split(rel, "/")
	}
	for _, p := range g.alts {
		if p.match(segs) {
			return true
		}
	}
	return false
}

// expandBraces expands the first {a,b,...} group in s, recursively; a brace
// without a matching close is left as it is.
func expandBraces(s string) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	depth, parts, start := 0, []string(nil), open+1
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				parts = append(parts, s[start:i])
				var out []string
				for _, p := range parts {
					out = append(out, expandBraces(s[:open]+p+s[i+1:])...)
				}
				return out
			}
		case ',':
			if depth == 1 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return []string{s}
}
