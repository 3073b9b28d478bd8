package brain

import (
	"encoding/json"
	"path"
	"sort"
	"strings"
)

// IsManifest reports whether the file at p declares dependencies the
// first pass reads: requirements*.txt, package.json, go.mod, Cargo.toml,
// pyproject.toml.
func IsManifest(p string) bool {
	b := path.Base(p)
	switch b {
	case "package.json", "go.mod", "Cargo.toml", "pyproject.toml":
		return true
	}
	return strings.HasPrefix(b, "requirements") && strings.HasSuffix(b, ".txt")
}

// ManifestDeps returns the dependencies a manifest declares, by name, lower
// case; ok is false when the text cannot be read (package.json that is not
// JSON).
func ManifestDeps(p, text string) (deps []string, ok bool) {
	set := map[string]bool{}
	switch b := path.Base(p); {
	case b == "package.json":
		if strings.TrimSpace(text) == "" {
			return nil, true
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &m) != nil {
			return nil, false
		}
		for _, k := range []string{"dependencies", "devDependencies", "peerDependencies", "optionalDependencies"} {
			var d map[string]any
			if raw, has := m[k]; has && json.Unmarshal(raw, &d) == nil {
				for name := range d {
					set[strings.ToLower(name)] = true
				}
			}
		}
	case b == "go.mod":
		in := false
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(stripComment(line, "//"))
			switch {
			case line == ")":
				in = false
			case strings.HasPrefix(line, "require ("):
				in = true
			case strings.HasPrefix(line, "require "):
				if f := strings.Fields(line); len(f) >= 2 {
					set[strings.ToLower(f[1])] = true
				}
			case in && line != "":
				set[strings.ToLower(strings.Fields(line)[0])] = true
			}
		}
	case b == "Cargo.toml":
		section := ""
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(stripComment(line, "#"))
			if strings.HasPrefix(line, "[") {
				section = strings.Trim(line, "[] ")
				if strings.HasSuffix(section, "dependencies") || !strings.Contains(section, "dependencies.") {
					continue
				}
				// [dependencies.serde]
				set[strings.ToLower(section[strings.LastIndex(section, ".")+1:])] = true
				continue
			}
			if strings.HasSuffix(section, "dependencies") {
				if k, _, found := strings.Cut(line, "="); found {
					set[strings.ToLower(strings.Trim(strings.TrimSpace(k), `"`))] = true
				}
			}
		}
	case b == "pyproject.toml":
		section, inArray := "", false
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(stripComment(line, "#"))
			if !inArray && strings.HasPrefix(line, "[") {
				section = strings.Trim(line, "[] ")
				continue
			}
			k, v, found := strings.Cut(line, "=")
			key := strings.TrimSpace(k)
			switch {
			case inArray:
				collectQuoted(line, set)
				if strings.Contains(line, "]") {
					inArray = false
				}
			case found && (key == "dependencies" || section == "project.optional-dependencies" || strings.HasSuffix(key, "-dependencies")) && strings.Contains(v, "["):
				collectQuoted(v, set)
				inArray = !strings.Contains(v, "]")
			case found && strings.HasPrefix(section, "tool.poetry") && strings.HasSuffix(section, "dependencies"):
				if key != "python" {
					set[strings.ToLower(strings.Trim(key, `"`))] = true
				}
			}
		}
	default:
		if !IsManifest(p) {
			return nil, false
		}
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(stripComment(line, "#"))
			if line == "" || strings.HasPrefix(line, "-") {
				continue
			}
			if n := packageName(line); n != "" {
				set[strings.ToLower(n)] = true
			}
		}
	}
	for k := range set {
		deps = append(deps, k)
	}
	sort.Strings(deps)
	return deps, true
}

func stripComment(line, marker string) string {
	if i := strings.Index(line, marker); i >= 0 {
		return line[:i]
	}
	return line
}

// collectQuoted adds the package names of the quoted requirements in s.
func collectQuoted(s string, set map[string]bool) {
	for {
		i := strings.IndexAny(s, `"'`)
		if i < 0 {
			return
		}
		q := s[i]
		j := strings.IndexByte(s[i+1:], q)
		if j < 0 {
			return
		}
		if n := packageName(s[i+1 : i+1+j]); n != "" {
			set[strings.ToLower(n)] = true
		}
		s = s[i+2+j:]
	}
}

// DepChange is what a manifest's change or a command adds and removes.
type DepChange struct {
	Added, Removed []string
	// Tools are the package managers a command runs (pip, npm, poetry …).
	Tools []string
}

// ManifestDiff compares a manifest's dependencies before and after.
func ManifestDiff(p, before, after string) (DepChange, bool) {
	b, ok1 := ManifestDeps(p, before)
	a, ok2 := ManifestDeps(p, after)
	if !ok1 || !ok2 {
		return DepChange{}, false
	}
	return DepChange{Added: minus(a, b), Removed: minus(b, a)}, true
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// installers: the words after which a command's arguments are packages
// added (or removed): "pip install", "npm i", "go get", "cargo add" ….
var installers = []struct {
	prefix []string
	remove bool
}{
	{[]string{"pip", "install"}, false}, {[]string{"pip3", "install"}, false},
	{[]string{"python", "-m", "pip", "install"}, false}, {[]string{"python3", "-m", "pip", "install"}, false},
	{[]string{"uv", "add"}, false}, {[]string{"uv", "pip", "install"}, false}, {[]string{"poetry", "add"}, false}, {[]string{"pipenv", "install"}, false},
	{[]string{"npm", "install"}, false}, {[]string{"npm", "i"}, false}, {[]string{"npm", "add"}, false},
	{[]string{"yarn", "add"}, false}, {[]string{"pnpm", "add"}, false}, {[]string{"pnpm", "install"}, false}, {[]string{"bun", "add"}, false},
	{[]string{"go", "get"}, false}, {[]string{"cargo", "add"}, false}, {[]string{"gem", "install"}, false}, {[]string{"bundle", "add"}, false},
	{[]string{"apt-get", "install"}, false}, {[]string{"apt", "install"}, false}, {[]string{"brew", "install"}, false},
	{[]string{"composer", "require"}, false},
	{[]string{"pip", "uninstall"}, true}, {[]string{"pip3", "uninstall"}, true}, {[]string{"uv", "remove"}, true}, {[]string{"poetry", "remove"}, true},
	{[]string{"npm", "uninstall"}, true}, {[]string{"npm", "remove"}, true}, {[]string{"npm", "rm"}, true},
	{[]string{"yarn", "remove"}, true}, {[]string{"pnpm", "remove"}, true}, {[]string{"cargo", "remove"}, true},
	{[]string{"apt-get", "remove"}, true}, {[]string{"apt-get", "purge"}, true},
}

// readOnly are commands that only read: a command made of them alone is
// aligned whatever it names.
var readOnly = map[string]bool{"ls": true, "cat": true, "grep": true, "rg": true, "head": true, "tail": true, "wc": true,
	"pwd": true, "echo": true, "tree": true, "stat": true, "file": true, "less": true, "diff": true, "which": true, "true": true}

// ReadOnly reports whether every simple command of cmd only reads: ls,
// cat, grep …, find without -delete or -exec, git status, diff, log, show.
func ReadOnly(cmd string) bool {
	segs := Segments(cmd)
	for _, seg := range segs {
		switch {
		case readOnly[seg[0]]:
		case seg[0] == "find":
			for _, a := range seg {
				if a == "-delete" || a == "-exec" || a == "-execdir" || a == "-fprint" {
					return false
				}
			}
		case seg[0] == "git" && len(seg) > 1 && (seg[1] == "status" || seg[1] == "diff" || seg[1] == "log" || seg[1] == "show"):
		default:
			return false
		}
	}
	return len(segs) > 0
}

// Segments splits a shell command into its simple commands' words: on
// ; && || | and newlines, with quotes removed and a leading sudo or env
// assignment dropped. It is a reading for rules, not an interpreter.
func Segments(cmd string) [][]string {
	var out [][]string
	var cur []string
	var word strings.Builder
	inWord := false
	var quote byte
	flushWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushSeg := func() {
		flushWord()
		for len(cur) > 0 && (cur[0] == "sudo" || (strings.Contains(cur[0], "=") && !strings.HasPrefix(cur[0], "-"))) {
			cur = cur[1:]
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ';' || c == '\n' || c == '|' || c == '&' || c == '(' || c == ')':
			flushSeg()
		case c == ' ' || c == '\t':
			flushWord()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flushSeg()
	return out
}

// CommandDeps returns the packages a command installs or removes.
func CommandDeps(cmd string) DepChange {
	var ch DepChange
	for _, seg := range Segments(cmd) {
		// .venv/bin/pip is pip.
		seg = append([]string{path.Base(seg[0])}, seg[1:]...)
		for _, in := range installers {
			if len(seg) < len(in.prefix) {
				continue
			}
			match := true
			for i, w := range in.prefix {
				if seg[i] != w {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			ch.Tools = append(ch.Tools, seg[0])
			for _, arg := range seg[len(in.prefix):] {
				if strings.HasPrefix(arg, "-") || arg == "" || strings.HasSuffix(arg, ".txt") || arg == "." {
					continue
				}
				n := strings.ToLower(arg)
				if !strings.HasPrefix(n, "@") {
					n = packageName(n)
				} else if i := strings.LastIndex(n, "@"); i > 0 {
					n = n[:i]
				}
				if in.prefix[0] == "go" {
					n, _, _ = strings.Cut(n, "@")
				}
				if in.remove {
					ch.Removed = append(ch.Removed, n)
				} else {
					ch.Added = append(ch.Added, n)
				}
			}
			break
		}
	}
	return ch
}
