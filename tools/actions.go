package tools

import (
	"path"
	"regexp"
	"strings"

	"github.com/apserver/apserver/tools/shell"
)

// Command action types, matching Codex's CommandAction variants.
const (
	ActionRead      = "read"
	ActionListFiles = "listFiles"
	ActionSearch    = "search"
	ActionUnknown   = "unknown"
)

// CommandAction is a best-effort reading of what part of a command does, for
// display. Command is the part it describes. Name and Path are set for read
// (Name is the file's base name); Path is the listed directory for listFiles
// and the searched path for search, empty when the command names none; Query
// is the search pattern, empty when there is none.
type CommandAction struct {
	Type    string
	Command string
	Name    string
	Path    string
	Query   string
}

// ParseCommandActions reads command (bash, as tools/shell parses it, so a
// `/bin/bash -c '...'` wrapper and wrappers such as timeout are looked
// through) and describes each simple command it runs: "cat a.go" is a read
// of a.go, "ls src" lists src, "rg foo src" searches src for foo. A
// preceding `cd dir` is applied to relative paths; `cd` itself, echo-style
// noise in a sequence, and formatting filters after a pipe (head, wc,
// sort, ...) are dropped. A command with an expansion ($x, $(...)) or an
// output redirection, or one that does not parse, is one unknown action
// holding the whole command; so is one that describes to nothing.
func ParseCommandActions(command string) []CommandAction {
	whole := []CommandAction{{Type: ActionUnknown, Command: command}}
	parts, err := shell.Parse(command, shell.Options{})
	if err != nil {
		return whole
	}
	var cmds []*shell.Command
	for _, p := range parts {
		for _, r := range p.Redirs {
			if r.Target.Kind != shell.Literal || r.Target.Text != "/dev/null" {
				return whole // writes a file
			}
		}
		if p.Unknown != "" {
			return whole
		}
		if p.Neutral {
			continue // a shell running a script, whose commands follow
		}
		for _, w := range p.Cmd() {
			if w.Kind == shell.Dynamic {
				return whole
			}
		}
		cmds = append(cmds, p)
	}
	var out []CommandAction
	dir := ""
	for _, c := range cmds {
		words := make([]string, len(c.Cmd()))
		for i, w := range c.Cmd() {
			words[i] = w.Text
		}
		prog := path.Base(words[0])
		switch {
		case prog == "cd":
			if len(words) == 2 {
				dir = joinDir(dir, words[1])
			}
			continue
		case c.Piped && formatters[prog] && !c.Extra:
			continue
		case len(cmds) > 1 && (prog == "echo" || prog == "printf" || prog == "true"):
			continue
		}
		acts := describe(prog, words, dir)
		if c.Extra { // xargs: more arguments come from standard input
			acts = []CommandAction{{Type: ActionUnknown, Command: shell.Join(words)}}
		}
		for _, a := range acts {
			if n := len(out); n > 0 && out[n-1] == a {
				continue
			}
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return whole
	}
	return out
}

// sedPrintRange matches a sed script that prints a line or a range.
var sedPrintRange = regexp.MustCompile(`^(\d+|\$)(,(\d+|\$))?p$`)

// formatters only reshape the output of what is piped into them.
var formatters = map[string]bool{
	"head": true, "tail": true, "wc": true, "sort": true, "uniq": true, "cut": true,
	"tr": true, "nl": true, "column": true, "less": true, "more": true, "cat": true,
	"awk": true, "sed": true, "grep": true, "rg": true,
}

// valueOptions lists, per program, options whose value is the next word.
var valueOptions = map[string][]string{
	"head": {"-n", "-c", "--lines", "--bytes"},
	"tail": {"-n", "-c", "--lines", "--bytes", "--pid", "-s", "--sleep-interval"},
	"nl":   {"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"},
	"ls":   {"-I", "--ignore", "-w", "--width", "-T", "--tabsize", "--hide"},
	"tree": {"-L", "-I", "-P", "-o", "--filelimit"},
	"rg": {"-e", "--regexp", "-f", "--file", "-g", "--glob", "--iglob", "-t", "--type",
		"-T", "--type-not", "-m", "--max-count", "-A", "-B", "-C", "--after-context",
		"--before-context", "--context", "-M", "--max-columns", "-j", "--threads",
		"--max-depth", "-d", "-E", "--encoding", "-r", "--replace", "--sort", "--sortr",
		"--type-add", "--color", "--colors", "--max-filesize", "--pre-glob"},
	"grep": {"-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "-B", "-C",
		"--after-context", "--before-context", "--context", "--include", "--exclude",
		"--exclude-dir", "-d", "-D", "--label"},
	"fd": {"-e", "--extension", "-t", "--type", "-d", "--max-depth", "-E", "--exclude",
		"-x", "--exec", "-X", "--exec-batch", "--min-depth", "-j", "--threads"},
}

func init() {
	for _, p := range []string{"egrep", "fgrep", "ag", "ack"} {
		valueOptions[p] = valueOptions["grep"]
	}
	valueOptions["git-grep"] = valueOptions["grep"]
	valueOptions["fdfind"] = valueOptions["fd"]
}

// operands splits words (without the program) into operands and the values
// of the options named in patternOpts (such as -e for grep), skipping other
// options and their values.
func operands(prog string, words []string, patternOpts ...string) (ops, patterns []string) {
	opts := valueOptions[prog]
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			return append(ops, words[i+1:]...), patterns
		case contains(patternOpts, w):
			if i+1 < len(words) {
				patterns = append(patterns, words[i+1])
				i++
			}
		case contains(opts, w):
			i++
		case strings.HasPrefix(w, "-") && w != "-":
			if name, val, ok := strings.Cut(w, "="); ok && contains(patternOpts, name) {
				patterns = append(patterns, val)
			}
		default:
			ops = append(ops, w)
		}
	}
	return ops, patterns
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func describe(prog string, words []string, dir string) []CommandAction {
	cmd := shell.Join(words)
	unknown := []CommandAction{{Type: ActionUnknown, Command: cmd}}
	args := words[1:]
	reads := func(files []string) []CommandAction {
		if len(files) == 0 {
			return unknown
		}
		var out []CommandAction
		for _, f := range files {
			if f == "-" {
				return unknown
			}
			out = append(out, CommandAction{Type: ActionRead, Command: cmd, Name: path.Base(f), Path: joinDir(dir, f)})
		}
		return out
	}
	list := func(p string) []CommandAction {
		return []CommandAction{{Type: ActionListFiles, Command: cmd, Path: joinDir(dir, p)}}
	}
	search := func(query, p string) []CommandAction {
		return []CommandAction{{Type: ActionSearch, Command: cmd, Query: query, Path: joinDir(dir, p)}}
	}

	switch prog {
	case "cat", "bat", "less", "more", "head", "tail", "nl":
		ops, _ := operands(prog, args)
		return reads(ops)
	case "sed":
		if len(args) >= 3 && args[0] == "-n" && sedPrintRange.MatchString(args[1]) {
			return reads(args[2:])
		}
	case "ls", "tree", "eza", "exa":
		ops, _ := operands(prog, args)
		switch len(ops) {
		case 0:
			return list("")
		case 1:
			return list(ops[0])
		}
	case "rg", "grep", "egrep", "fgrep", "ag", "ack":
		if prog == "rg" && contains(args, "--files") {
			ops, _ := operands(prog, args)
			if len(ops) <= 1 {
				return list(first(ops))
			}
			return unknown
		}
		return searchAction(prog, args, search, unknown)
	case "fd", "fdfind":
		ops, _ := operands(prog, args)
		if len(ops) <= 2 {
			return search(first(ops), second(ops))
		}
	case "find":
		// find [path...] [expression]: the paths come before the first
		// word that starts an expression.
		var paths []string
		i := 0
		for ; i < len(args); i++ {
			if a := args[i]; strings.HasPrefix(a, "-") || a == "!" || a == "(" {
				break
			}
			paths = append(paths, args[i])
		}
		if len(paths) > 1 {
			return unknown
		}
		query := ""
		for ; i+1 < len(args); i++ {
			switch args[i] {
			case "-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename":
				if query == "" {
					query = args[i+1]
				}
			}
		}
		if query == "" {
			return list(first(paths))
		}
		return search(query, first(paths))
	case "git":
		if len(args) > 0 {
			switch args[0] {
			case "grep":
				return searchAction("git-grep", args[1:], search, unknown)
			case "ls-files":
				ops, _ := operands("git", args[1:])
				if len(ops) <= 1 {
					return list(first(ops))
				}
			}
		}
	}
	return unknown
}

// searchAction reads grep-like arguments: a pattern (from -e or the first
// operand) and at most one path.
func searchAction(prog string, args []string, search func(q, p string) []CommandAction, unknown []CommandAction) []CommandAction {
	ops, patterns := operands(prog, args, "-e", "--regexp")
	var query string
	switch {
	case len(patterns) > 1:
		return unknown
	case len(patterns) == 1:
		query = patterns[0]
	case len(ops) > 0:
		query, ops = ops[0], ops[1:]
	default:
		return unknown
	}
	if len(ops) > 1 {
		return unknown
	}
	return search(query, first(ops))
}

func first(s []string) string {
	if len(s) > 0 {
		return s[0]
	}
	return ""
}

func second(s []string) string {
	if len(s) > 1 {
		return s[1]
	}
	return ""
}

// joinDir resolves p against dir, the directory earlier cd commands moved
// to (empty when there were none). An empty p means dir itself.
func joinDir(dir, p string) string {
	if dir == "" || p == "" || path.IsAbs(p) || strings.HasPrefix(p, "~") {
		if p == "" {
			return dir
		}
		return p
	}
	return path.Join(dir, p)
}
