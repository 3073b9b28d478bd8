package shell

import (
	"fmt"
	"strings"
)

// optSpec describes a program's options well enough to find where its
// operands begin.
type optSpec struct {
	// short options that take an argument, attached or as the next word.
	short string
	// shortOpt are short options whose argument, if any, is attached.
	shortOpt string
	// long options that take an argument as the next word unless given with
	// '='. An unambiguous abbreviation counts, as with getopt_long.
	long []string
}

// scan reads the options at the start of args, calling each for every
// option with its argument (nil if none), and returns the index of the first
// operand. Long options are reported by their full name when they are
// abbreviations of one in s.long. ok is false when a word that may be an
// option cannot be read (an expansion after a '-').
func (s optSpec) scan(args []Word, each func(opt string, arg *Word)) (first int, ok bool) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a.Kind == Dynamic {
			return i, !strings.HasPrefix(a.Lead, "-")
		}
		t := a.Text
		if t == "--" {
			return i + 1, true
		}
		if len(t) < 2 || t[0] != '-' {
			return i, true
		}
		if name, ok := strings.CutPrefix(t, "--"); ok {
			name, val, hasVal := strings.Cut(name, "=")
			full, takesArg := s.longName(name)
			switch {
			case hasVal:
				each(full, &Word{Text: val, Src: val})
			case takesArg && i+1 < len(args):
				i++
				each(full, &args[i])
			default:
				each(full, nil)
			}
			continue
		}
		for j := 1; j < len(t); j++ {
			c := t[j : j+1]
			if !strings.Contains(s.short, c) && !strings.Contains(s.shortOpt, c) {
				each("-"+c, nil)
				continue
			}
			switch {
			case j+1 < len(t):
				each("-"+c, &Word{Text: t[j+1:], Src: t[j+1:]})
			case strings.Contains(s.short, c) && i+1 < len(args):
				i++
				each("-"+c, &args[i])
			default:
				each("-"+c, nil)
			}
			break
		}
	}
	return i, true
}

// longName returns the full name of the long option name abbreviates, and
// whether it takes an argument.
func (s optSpec) longName(name string) (string, bool) {
	for _, l := range s.long {
		if name != "" && strings.HasPrefix(l, name) {
			return "--" + l, true
		}
	}
	return "--" + name, false
}

// unwrapFunc returns the command a wrapper runs (nil if it runs none), or
// why that cannot be told. It may record on p what the wrapper changes: the
// directory, the environment, extra arguments.
type unwrapFunc func(cmd []Word, p *Command) (inner []Word, unknown string)

// wrappers are programs that run another command given in their arguments.
var wrappers = map[string]unwrapFunc{
	"env":     unwrapEnv,
	"sudo":    unwrapSudo,
	"doas":    unwrapDoas,
	"xargs":   unwrapXargs,
	"command": unwrapCommand,
	"timeout": skipOptions(optSpec{short: "sk", long: []string{"signal", "kill-after"}}, 1),
	"nice":    skipOptions(optSpec{short: "n", long: []string{"adjustment"}}, 0),
	"nohup":   skipOptions(optSpec{}, 0),
	"builtin": skipOptions(optSpec{}, 0),
	"setsid":  skipOptions(optSpec{}, 0),
	"exec":    skipOptions(optSpec{short: "a"}, 0),
	"time":    skipOptions(optSpec{short: "fo", long: []string{"format", "output"}}, 0),
	"stdbuf":  skipOptions(optSpec{short: "ioe", long: []string{"input", "output", "error"}}, 0),
	"busybox": skipOptions(optSpec{}, 0),
	"ionice":  skipOptions(optSpec{short: "cnpPu", long: []string{"class", "classdata", "pid", "pgid", "uid"}}, 0),
}

func unknownOptions(cmd []Word) string {
	return fmt.Sprintf("cannot tell how %s reads its options", cmd[0].Src)
}

// skipOptions unwraps a program that takes options, then operands fixed
// arguments (timeout's duration), then the command.
func skipOptions(spec optSpec, operands int) unwrapFunc {
	return func(cmd []Word, _ *Command) ([]Word, string) {
		i, ok := spec.scan(cmd[1:], func(string, *Word) {})
		if !ok {
			return nil, unknownOptions(cmd)
		}
		if i += 1 + operands; i < len(cmd) {
			return cmd[i:], ""
		}
		return nil, ""
	}
}

// skipAssigns records and drops the NAME=value words at the start of ws.
func (p *Command) skipAssigns(ws []Word) []Word {
	for len(ws) > 0 {
		known := ws[0].Text
		if ws[0].Kind == Dynamic {
			known = ws[0].Lead
		}
		name, val, ok := strings.Cut(known, "=")
		if !ok || !validName(name) {
			break
		}
		var value *Word
		if ws[0].Kind != Dynamic {
			value = &Word{Text: val, Src: val}
		}
		p.setVar(name, value)
		ws = ws[1:]
	}
	return ws
}

// setVar records that the part sets name to value (nil when unknown) if
// that may change which program runs or what it does.
func (p *Command) setVar(name string, value *Word) {
	if changesWhatRuns(name, value) {
		p.Assigns = append(p.Assigns, name)
	}
	// GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_CONFIG_PARAMETERS and
	// GIT_CONFIG_GLOBAL give git configuration as git -c does: aliases,
	// programs to run.
	if strings.HasPrefix(name, "GIT_CONFIG") && p.Opaque == "" {
		p.Opaque = fmt.Sprintf("%s gives git configuration, which can define aliases and make git run other programs; the rules do not read it", name)
	}
}

func changesWhatRuns(name string, value *Word) bool {
	switch name {
	case "PAGER", "GIT_PAGER", "MANPAGER":
		return value == nil || value.Kind != Literal || value.Text != "cat" && value.Text != ""
	case "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
		"HOME", "XDG_CONFIG_HOME", "EDITOR", "VISUAL", "GOFLAGS", "CC", "CXX", "NODE_OPTIONS",
		"PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUSTC_WRAPPER", "MAKEFLAGS",
		"GIT_DIR", "GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EDITOR",
		"GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_PROXY_COMMAND",
		"GIT_TEMPLATE_DIR":
		return true
	}
	for _, prefix := range []string{"LD_", "DYLD_", "GIT_CONFIG", "BASH_FUNC_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func validName(s string) bool {
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

var envSpec = optSpec{short: "uCS", long: []string{"unset", "chdir", "split-string"}}

func unwrapEnv(cmd []Word, p *Command) ([]Word, string) {
	var split []*Word
	i, ok := envSpec.scan(cmd[1:], func(opt string, arg *Word) {
		switch opt {
		case "-C", "--chdir":
			p.Bases = p.Bases.Chdir(arg)
		case "-S", "--split-string":
			split = append(split, arg)
		}
	})
	if !ok {
		return nil, unknownOptions(cmd)
	}
	// env -S splits its argument into words: read plain words, and call
	// anything with quotes, escapes or expansions unknown.
	var words []Word
	for _, a := range split {
		if a == nil || a.Kind != Literal || strings.ContainsAny(a.Text, `"'\$`+"`") {
			return nil, "cannot tell what env -S runs"
		}
		for _, f := range strings.Fields(a.Text) {
			words = append(words, Word{Text: f, Src: f})
		}
	}
	return p.skipAssigns(append(words, cmd[1+i:]...)), ""
}

var sudoSpec = optSpec{short: "CDghpRrTtUu", long: []string{
	"user", "group", "host", "prompt", "chdir", "chroot", "role", "type",
	"command-timeout", "other-user", "close-from",
}}

func unwrapSudo(cmd []Word, p *Command) ([]Word, string) {
	runs := true
	i, ok := sudoSpec.scan(cmd[1:], func(opt string, arg *Word) {
		switch opt {
		case "-e", "-l", "-v", "-V", "-K", "--edit", "--list", "--validate", "--version", "--remove-timestamp":
			runs = false // edits files or only reports
		case "-D", "--chdir":
			p.Bases = p.Bases.Chdir(arg)
		}
	})
	if !ok {
		return nil, unknownOptions(cmd)
	}
	if !runs {
		return nil, ""
	}
	return p.skipAssigns(cmd[1+i:]), ""
}

func unwrapDoas(cmd []Word, _ *Command) ([]Word, string) {
	runs := true
	i, ok := optSpec{short: "uC"}.scan(cmd[1:], func(opt string, _ *Word) {
		runs = runs && opt != "-C"
	})
	if !ok {
		return nil, unknownOptions(cmd)
	}
	if !runs {
		return nil, ""
	}
	return cmd[1+i:], ""
}

func unwrapCommand(cmd []Word, _ *Command) ([]Word, string) {
	runs := true
	i, ok := optSpec{}.scan(cmd[1:], func(opt string, _ *Word) {
		runs = runs && opt != "-v" && opt != "-V" // only describe the command
	})
	if !ok {
		return nil, unknownOptions(cmd)
	}
	if !runs {
		return nil, ""
	}
	return cmd[1+i:], ""
}

var xargsSpec = optSpec{short: "adEILnPs", shortOpt: "eil", long: []string{
	"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var",
}}

// unwrapXargs returns xargs's command, marked as taking more arguments from
// standard input. Words holding the -I replacement string become unknown.
func unwrapXargs(cmd []Word, p *Command) ([]Word, string) {
	var replace []string
	i, ok := xargsSpec.scan(cmd[1:], func(opt string, arg *Word) {
		if opt == "-I" || opt == "-i" || opt == "--replace" {
			r := "{}"
			if arg != nil && arg.Text != "" {
				r = arg.Text
			}
			replace = append(replace, r)
		}
	})
	if !ok {
		return nil, unknownOptions(cmd)
	}
	p.Extra = true
	rest := cmd[1+i:]
	if len(rest) == 0 {
		return []Word{{Text: "echo", Src: "echo"}}, ""
	}
	out := make([]Word, len(rest))
	for j, w := range rest {
		out[j] = w
		for _, r := range replace {
			if k := strings.Index(w.Text, r); w.Kind != Dynamic && k >= 0 {
				out[j] = Word{Src: w.Src, Kind: Dynamic, Lead: w.Text[:k]}
			}
		}
	}
	return out, ""
}

// safeGitConfig are configuration keys `git -c` may set without making git
// run other programs.
func safeGitConfig(kv string) bool {
	key, _, _ := strings.Cut(strings.ToLower(kv), "=")
	return strings.HasPrefix(key, "color.") || key == "core.quotepath"
}

// gitCommand returns cmd without git's global options, so that `git -C dir
// push` reads as `git push`, and marks p when they set configuration.
func gitCommand(cmd []Word, p *Command) []Word {
	i := 1
	for ; i < len(cmd); i++ {
		a := cmd[i]
		if a.Kind != Literal || !strings.HasPrefix(a.Text, "-") {
			break
		}
		name, _, hasVal := strings.Cut(a.Text, "=")
		switch name {
		case "-c":
			if i+1 < len(cmd) && cmd[i+1].Kind == Literal && safeGitConfig(cmd[i+1].Text) {
				i++
				continue
			}
			p.GitConfig = true
			p.Opaque = "git -c can define aliases and make git run other programs (core.sshCommand, core.pager, ...), which the rules do not read"
			i++
		case "--config-env":
			p.GitConfig = true
			p.Opaque = "git --config-env can define aliases and make git run other programs, which the rules do not read"
			if !hasVal {
				i++
			}
		case "--exec-path":
			if hasVal {
				p.GitConfig = true
				p.Opaque = "git --exec-path makes git run its commands from another directory"
			}
		case "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source":
			if !hasVal {
				i++
			}
		}
	}
	if i == 1 {
		return cmd
	}
	return append([]Word{cmd[0]}, cmd[min(i, len(cmd)):]...)
}

// findExec is a command find runs for each file.
type findExec struct {
	words []Word
	dir   bool // -execdir, -okdir: runs in the file's directory
}

// findExecs returns the commands of find's -exec, -execdir, -ok and -okdir,
// with the {} file name as an unknown word.
//
// When find's starting points are all known, each command is returned once
// per starting point, with {} standing for a file at or under it, so that
// `find / -exec rm -rf {} +` reads as removing / and what is under it.
func findExecs(cmd []Word) []findExec {
	var out []findExec
	roots := findRoots(cmd)
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		if a.Kind != Literal || a.Text != "-exec" && a.Text != "-execdir" && a.Text != "-ok" && a.Text != "-okdir" {
			continue
		}
		ex := findExec{dir: strings.HasSuffix(a.Text, "dir")}
		for i++; i < len(cmd); i++ {
			w := cmd[i]
			if w.Kind == Literal && (w.Text == ";" || w.Text == "+") {
				break
			}
			ex.words = append(ex.words, w)
		}
		if len(ex.words) == 0 {
			continue
		}
		if len(roots) == 0 {
			out = append(out, ex.under(""))
		}
		for _, r := range roots {
			out = append(out, ex.under(r))
		}
	}
	return out
}

// under returns ex with each word holding {} made an unknown word; a {}
// word that is exactly {} records root as where its file lies.
func (ex findExec) under(root string) findExec {
	ws := make([]Word, len(ex.words))
	for j, w := range ex.words {
		if k := strings.Index(w.Text, "{}"); w.Kind != Dynamic && k >= 0 {
			nw := Word{Src: w.Src, Kind: Dynamic, Lead: w.Text[:k]}
			if w.Text == "{}" {
				nw.Under = root
			}
			w = nw
		}
		ws[j] = w
	}
	return findExec{words: ws, dir: ex.dir}
}

// findRoots returns find's starting points when all are plain words, or
// nil. Without any, find starts at ".".
func findRoots(cmd []Word) []string {
	i := 1
	for i < len(cmd) && cmd[i].Kind == Literal && (cmd[i].Text == "-H" || cmd[i].Text == "-L" || cmd[i].Text == "-P" || strings.HasPrefix(cmd[i].Text, "-O") || strings.HasPrefix(cmd[i].Text, "-D")) {
		if cmd[i].Text == "-D" {
			i++
		}
		i++
	}
	var roots []string
	for ; i < len(cmd); i++ {
		a := cmd[i]
		if a.Kind != Literal {
			return nil
		}
		if strings.HasPrefix(a.Text, "-") || a.Text == "(" || a.Text == "!" || a.Text == "," {
			break
		}
		roots = append(roots, a.Text)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	return roots
}
