package shell

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file turns a bash command string into the simple commands it may
// run, using mvdan.cc/sh's parser. It follows every way bash runs a
// command: lists, pipelines, subshells, groups, control flow, function
// bodies, command and process substitutions anywhere in a word, `bash -c`
// strings and here-documents fed to a shell, find -exec, and wrapper
// programs such as env, sudo, timeout and xargs. Whatever cannot be known
// without running the command (the value of a variable, the output of a
// substitution) is kept as a Dynamic word, which a reader must treat as
// "may be anything".

// ErrEmpty is returned by Parse for a script with no commands.
var ErrEmpty = errors.New("the command is empty")

// Options are what Parse needs to know of where a script runs.
type Options struct {
	// Home is the value of ~ and $HOME, or "" when unknown.
	Home string
	// Dir is the absolute directory the script starts in; anything else
	// means unknown.
	Dir string
}

// Parse reads script, a bash command string, and returns every simple
// command it may run, in the order they appear; a command run by another
// (a shell's -c script, find -exec, a wrapper's command) follows it. A
// script that does not parse is an error, one without statements
// ErrEmpty.
func Parse(script string, opts Options) ([]*Command, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	if len(f.Stmts) == 0 {
		return nil, ErrEmpty
	}
	start := Dirs{Unknown: true}
	if filepath.IsAbs(opts.Dir) {
		start = Dirs{Dirs: []string{filepath.Clean(opts.Dir)}}
	}
	w := walker{home: opts.Home, decides: true}
	w.file(f, script, start)
	return w.parts, nil
}

// ParseWord reads one word of a command line that src holds, with quotes
// removed and expansions marked, as Parse would.
func ParseWord(src string, word *syntax.Word) Word {
	sc := &script{src: src}
	return sc.word(word)
}

// maxDepth bounds nested `bash -c` strings.
const maxDepth = 8

// Kind says how much of a word is known without running the command.
type Kind uint8

const (
	// Literal: Text is exactly what the command sees.
	Literal Kind = iota
	// Glob: an unquoted *, ? or [ may expand to file names; Pat is the
	// pattern, in path.Match syntax.
	Glob
	// Dynamic: an expansion (parameter, substitution, arithmetic, brace,
	// ~user) makes the value unknown; Lead is the literal text before it.
	Dynamic
)

// Word is one word of a simple command, as far as it is known statically.
type Word struct {
	Text string // after quote removal; meaningful for literal and glob words
	Src  string // as written
	Pat  string // glob pattern, for glob words
	Lead string // literal text before the first expansion, for dynamic words
	Kind Kind
	// Split: an unquoted expansion or glob, which may become zero or
	// several words.
	Split bool
	// Home: the word is the home directory (~, $HOME, "${HOME}/").
	Home bool
	// Under, for find's {} in -exec, is the starting point the file is at
	// or under.
	Under string
}

// StartsWith reports whether w begins with prefix: sure when it certainly
// does, may when it may (a glob or an expansion whose known text agrees
// with prefix as far as both go).
func (w Word) StartsWith(prefix string) (sure, may bool) {
	switch w.Kind {
	case Literal:
		ok := strings.HasPrefix(w.Text, prefix)
		return ok, ok
	case Glob:
		return false, strings.HasPrefix(w.Text, prefix) || globMayStartWith(w.Pat, prefix)
	case Dynamic:
		return false, strings.HasPrefix(w.Lead, prefix) || strings.HasPrefix(prefix, w.Lead)
	}
	return false, false
}

// globMayStartWith reports whether a glob pattern may match a name beginning
// with prefix: true when the text before its first metacharacter and prefix
// agree as far as both go.
func globMayStartWith(pat, prefix string) bool {
	fixed := unescapePattern(pat[:firstMeta(pat)])
	return strings.HasPrefix(fixed, prefix) || strings.HasPrefix(prefix, fixed)
}

// GlobDir splits a glob pattern into the directory before its first
// metacharacter and the pattern after that directory.
func GlobDir(pat string) (dir, rest string) {
	fixed := pat[:firstMeta(pat)]
	i := strings.LastIndex(fixed, "/")
	switch {
	case i < 0:
		return ".", pat
	case i == 0:
		return "/", pat[1:]
	}
	return path.Clean(unescapePattern(fixed[:i])), pat[i+1:]
}

// firstMeta returns the index of the first unescaped *, ? or [ in pat, or
// len(pat).
func firstMeta(pat string) int {
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return i
		}
	}
	return len(pat)
}

func unescapePattern(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// wordBuilder accumulates a word part by part.
type wordBuilder struct {
	home  string // value of ~ and $HOME, or "" when unknown
	text  strings.Builder
	pat   strings.Builder
	shape []byte // unquoted bytes as themselves, others as 'x': for brace expansion
	lead  string
	// homeState: 0 nothing yet, 1 only the home directory and slashes so
	// far, 2 anything else.
	homeState   int
	dynamic     bool
	meta        bool // an unquoted *, ? or [
	split       bool
	prevBracket bool // the last byte was an unquoted [
}

func (b *wordBuilder) seen(s string) {
	if s == "" || b.homeState == 1 && strings.Trim(s, "/") == "" {
		return
	}
	b.homeState = 2
}

func (b *wordBuilder) quoted(s string) {
	b.seen(s)
	b.text.WriteString(s)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			b.pat.WriteByte('\\')
		}
		b.pat.WriteByte(s[i])
		b.shape = append(b.shape, 'x')
	}
	b.prevBracket = false
}

func (b *wordBuilder) unquoted(c byte) {
	b.seen(string(c))
	b.text.WriteByte(c)
	if c == '!' && b.prevBracket {
		b.pat.WriteByte('^') // bash's [!a] is path.Match's [^a]
	} else {
		b.pat.WriteByte(c)
	}
	b.shape = append(b.shape, c)
	b.meta = b.meta || c == '*' || c == '?' || c == '['
	b.prevBracket = c == '['
}

// lit adds an unquoted literal as written, removing backslash escapes.
func (b *wordBuilder) lit(v string) {
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] != '\\':
			b.unquoted(v[i])
		case i+1 == len(v):
			b.quoted(`\`)
		case v[i+1] == '\n': // line continuation
			i++
		default:
			b.quoted(v[i+1 : i+2])
			i++
		}
	}
}

func (b *wordBuilder) expansion(unquoted bool) {
	if !b.dynamic {
		b.lead = b.text.String()
		b.dynamic = true
	}
	b.homeState = 2
	b.shape = append(b.shape, 'x')
	b.split = b.split || unquoted
	b.prevBracket = false
}

// homeDir adds ~ or $HOME.
func (b *wordBuilder) homeDir(unquoted bool) {
	first := b.homeState == 0
	if b.home == "" {
		b.expansion(unquoted)
	} else {
		b.quoted(b.home)
	}
	if first {
		b.homeState = 1
	} else {
		b.homeState = 2
	}
}

func (b *wordBuilder) word(src string) Word {
	w := Word{Text: b.text.String(), Src: src, Home: b.homeState == 1}
	switch {
	case b.dynamic:
		w.Kind, w.Lead, w.Split = Dynamic, b.lead, b.split
	case hasBraceExpansion(b.shape):
		w.Kind, w.Split = Dynamic, true
	case b.meta && validPattern(b.pat.String()):
		w.Kind, w.Pat, w.Split = Glob, b.pat.String(), true
	}
	return w
}

func validPattern(pat string) bool {
	_, err := path.Match(pat, "")
	return err == nil
}

// hasBraceExpansion reports whether shape has an unquoted {...} holding an
// unquoted comma or "..", which bash expands into several words.
func hasBraceExpansion(shape []byte) bool {
	for i, c := range shape {
		if c != '{' {
			continue
		}
		depth := 0
		for j := i; j < len(shape); j++ {
			switch shape[j] {
			case '{':
				depth++
			case '}':
				depth--
			case ',':
				if depth > 0 {
					return true
				}
			case '.':
				if depth > 0 && j+1 < len(shape) && shape[j+1] == '.' {
					return true
				}
			}
			if depth == 0 {
				break
			}
		}
	}
	return false
}

// isHomeParam reports whether p is plain $HOME or ${HOME}.
func isHomeParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Param.Value == "HOME" && p.Flags == nil &&
		!p.Excl && !p.Length && !p.Width && !p.IsSet && p.NestedParam == nil &&
		p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// unescape removes the backslashes bash removes inside double quotes (or an
// unquoted here-document): those before one of specials, and
// backslash-newline pairs.
func unescape(v, specials string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			if v[i+1] == '\n' {
				i++
				continue
			}
			if strings.IndexByte(specials, v[i+1]) >= 0 {
				i++
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// script is one parsed command string: the top-level command or the string
// given to `bash -c`.
type script struct {
	src   string
	home  string
	bases Dirs
}

func (sc *script) slice(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(sc.src) || start > end {
		return ""
	}
	return sc.src[start:end]
}

func (sc *script) word(w *syntax.Word) Word {
	b := wordBuilder{home: sc.home}
	for i, wp := range w.Parts {
		switch p := wp.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				end := strings.IndexByte(v, '/')
				switch {
				case end < 0 && len(w.Parts) > 1:
					b.expansion(true) // the tilde prefix runs into quotes or an expansion
					end = len(v)
				case end < 0:
					end = len(v)
					fallthrough
				default:
					if v[:end] == "~" {
						b.homeDir(true)
					} else {
						b.expansion(true) // ~user, ~+, ~-
					}
				}
				v = v[end:]
			}
			b.lit(v)
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				b.expansion(false) // $'...' escapes are not decoded
			} else {
				b.quoted(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.quoted(unescape(q.Value, "$`\"\\"))
				case *syntax.ParamExp:
					if isHomeParam(q) {
						b.homeDir(false)
					} else {
						b.expansion(false)
					}
				default:
					b.expansion(false)
				}
			}
		case *syntax.ParamExp:
			if isHomeParam(p) {
				b.homeDir(true)
			} else {
				b.expansion(true)
			}
		default: // substitutions, arithmetic, extended globs
			b.expansion(true)
		}
	}
	return b.word(sc.slice(w))
}

func (sc *script) words(ws []*syntax.Word) []Word {
	out := make([]Word, len(ws))
	for i, w := range ws {
		out[i] = sc.word(w)
	}
	return out
}

// stdinScript returns the text of a here-document or here-string, and
// whether it is known without running anything.
func (sc *script) stdinScript(r *syntax.Redirect) (string, bool) {
	if r.Op == syntax.WordHdoc {
		w := sc.word(r.Word)
		return w.Text + "\n", w.Kind == Literal
	}
	if r.Hdoc == nil {
		return "", true
	}
	// A quoted delimiter keeps the body as written.
	quotedDelim := false
	for _, p := range r.Word.Parts {
		if lit, ok := p.(*syntax.Lit); !ok || strings.Contains(lit.Value, `\`) {
			quotedDelim = true
		}
	}
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		if quotedDelim {
			b.WriteString(lit.Value)
		} else {
			b.WriteString(unescape(lit.Value, "$`\\"))
		}
	}
	return b.String(), true
}

// Dirs is the directories a command may run in.
type Dirs struct {
	Dirs []string
	// Unknown: it may also run somewhere else.
	Unknown bool
}

// maxDirs bounds a Dirs; beyond it the directory is unknown.
const maxDirs = 16

func (c *Dirs) add(dir string) {
	if slices.Contains(c.Dirs, dir) {
		return
	}
	if len(c.Dirs) >= maxDirs {
		c.Unknown = true
		return
	}
	c.Dirs = append(c.Dirs, dir)
}

// Chdir returns where a command runs after changing to dir.
func (c Dirs) Chdir(dir *Word) Dirs {
	if dir == nil || dir.Kind != Literal {
		return Dirs{Unknown: true}
	}
	if filepath.IsAbs(dir.Text) {
		return Dirs{Dirs: []string{filepath.Clean(dir.Text)}}
	}
	out := Dirs{Unknown: c.Unknown}
	for _, d := range c.Dirs {
		out.add(filepath.Join(d, dir.Text))
	}
	return out
}

// withCds returns the directories the commands of f may run in, given that
// f starts in c. Any cd in f, wherever it is, adds its target: to an
// absolute directory or home it is followed; anything else makes the
// directory unknown.
func (sc *script) withCds(f *syntax.File) Dirs {
	out := Dirs{Dirs: slices.Clone(sc.bases.Dirs), Unknown: sc.bases.Unknown}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		ws := sc.words(call.Args)
		for len(ws) > 0 && ws[0].Kind == Literal && (ws[0].Text == "builtin" || ws[0].Text == "command") {
			ws = ws[1:]
		}
		if len(ws) == 0 || ws[0].Kind != Literal {
			return true
		}
		switch ws[0].Text {
		case "cd":
			args := ws[1:]
			for len(args) > 0 && args[0].Kind == Literal && len(args[0].Text) > 1 && args[0].Text[0] == '-' {
				done := args[0].Text == "--"
				args = args[1:]
				if done {
					break
				}
			}
			switch {
			case len(args) == 0 && sc.home != "":
				out.add(sc.home)
			case len(args) > 0 && args[0].Kind == Literal && filepath.IsAbs(args[0].Text):
				out.add(filepath.Clean(args[0].Text))
			default:
				out.Unknown = true
			}
		case "pushd", "popd":
			out.Unknown = true
		}
		return true
	})
	return out
}

// Redirect is an output redirection.
type Redirect struct {
	Target Word
	Text   string // as written
}

// Command is one simple command a script may run.
type Command struct {
	// Views are the command as written and after each wrapper (env, sudo,
	// ...) is removed; the last is the command that actually runs, with
	// git's global options removed. Empty for a bare redirection or
	// assignment.
	Views   [][]Word
	Redirs  []Redirect
	Assigns []string // variables set for the command that may change what runs
	// Bases are the directories the command may run in.
	Bases Dirs
	// Text is the command as written.
	Text string
	// Unknown, when set, says why the command cannot be read: its program
	// is an expansion, a shell's -c script is dynamic, a script does not
	// parse.
	Unknown string
	// Opaque, when set, says what code the command runs that a static
	// reading does not see: inline code, a script file, make's recipes, a
	// git alias.
	Opaque string
	// Neutral: the command runs no program of its own (a bare redirection,
	// a shell whose script's commands are listed too, eval of plain words).
	Neutral bool
	// Extra: more arguments, unknown, follow the last view (xargs).
	Extra bool
	// Piped: the command reads the output of an earlier pipeline stage.
	Piped bool
	// Decides: the script can exit 0 only if this command does, so its
	// failure is the script's failure. False for a command followed by
	// `;` (without set -e), on either side of ||, negated with !, run in
	// the background, in a condition, loop or substitution, or in a
	// pipeline stage before the last without set -o pipefail.
	Decides bool
	// FromDownload: the command reads the output of curl or wget through a
	// pipe.
	FromDownload bool
	// RunsDownload: an argument holds a substitution that runs curl or
	// wget.
	RunsDownload bool
	// GitConfig: git is given configuration (-c), which can make it run any
	// program.
	GitConfig bool
	// ForkBomb: a function that pipes or backgrounds calls to itself.
	ForkBomb bool
	// Privileged, when set, says why the command runs a command as another
	// user: one of its views is sudo, su, doas, pkexec, run0 or the like,
	// with or without a command of its own (sudo -s, su -).
	Privileged string
}

// Cmd returns the command that actually runs, or nil.
func (p *Command) Cmd() []Word {
	if len(p.Views) == 0 {
		return nil
	}
	return p.Views[len(p.Views)-1]
}

// SystemProgram reports whether w names a program by name alone or in a
// standard bin directory, so that it is what its name says.
func SystemProgram(w Word) bool {
	return w.Kind == Literal && (!strings.Contains(w.Text, "/") || slices.Contains(BinDirs, path.Dir(path.Clean(w.Text))))
}

// BinDirs are the standard directories of programs: a program given by a
// path in one of them is what its name says.
var BinDirs = []string{"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}

// Interpreter reports whether name runs code it is given.
func Interpreter(name string) bool {
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh",
		"perl", "ruby", "node", "nodejs", "php", "lua", "pwsh", "deno", "bun",
		"source", ".", "eval":
		return true
	}
	return strings.HasPrefix(name, "python")
}

// Program returns the base name of the program ws runs, or "" if unknown.
func Program(ws []Word) string {
	if len(ws) == 0 || ws[0].Kind != Literal {
		return ""
	}
	return path.Base(ws[0].Text)
}

func (p *Command) render() string {
	var q []string
	for _, w := range p.Cmd() {
		q = append(q, w.Src)
	}
	for _, r := range p.Redirs {
		q = append(q, r.Text)
	}
	return strings.Join(q, " ")
}

// walker collects the parts of a command.
type walker struct {
	home  string
	parts []*Command
	depth int
	// decides: the statement being walked decides the script's exit
	// status (see Command.Decides).
	decides bool
	// piped: the statement being walked reads from a pipe.
	piped bool
	// pipefail and errexit are the shell options set so far.
	pipefail, errexit bool
	// downstream counts the enclosing pipelines whose earlier stages
	// download.
	downstream int
}

func (w *walker) emit(p *Command) {
	p.markPrivilege()
	if p.Text == "" {
		p.Text = p.render()
	}
	w.parts = append(w.parts, p)
}

func (w *walker) file(f *syntax.File, src string, bases Dirs) {
	sc := &script{src: src, home: w.home, bases: bases}
	sc.bases = sc.withCds(f)
	w.list(sc, f.Stmts)
}

// list walks a list of statements, whose exit status is the last one's:
// an earlier one decides only under set -e.
func (w *walker) list(sc *script, stmts []*syntax.Stmt) {
	decides := w.decides
	for i, s := range stmts {
		w.decides = decides && (i == len(stmts)-1 || w.errexit)
		w.stmt(sc, s)
	}
	w.decides = decides
}

// nested walks a script run by a shell: a new shell whose options opts
// sets, or, when opts is nil, the same one (eval).
func (w *walker) nested(src string, bases Dirs, opts []Word) {
	if w.depth >= maxDepth {
		w.emit(&Command{Unknown: "shells are nested too deeply to follow", Text: src})
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		w.emit(&Command{Unknown: fmt.Sprintf("cannot parse %q: %v", src, err), Text: src})
		return
	}
	// Shell options hold in the shell that sets them.
	pipefail, errexit := w.pipefail, w.errexit
	if opts != nil {
		w.pipefail, w.errexit = false, false
		w.setOptions(opts)
	}
	w.depth++
	w.file(f, src, bases)
	w.depth--
	w.pipefail, w.errexit = pipefail, errexit
}

// stmts walks statements that do not decide the exit status, such as
// those of a substitution.
func (w *walker) stmts(sc *script, stmts []*syntax.Stmt) {
	decides, piped := w.decides, w.piped
	w.decides, w.piped = false, false
	for _, s := range stmts {
		w.stmt(sc, s)
	}
	w.decides, w.piped = decides, piped
}

// substs walks the commands substituted anywhere inside n and reports
// whether any of them downloads.
func (w *walker) substs(sc *script, n syntax.Node) bool {
	start := len(w.parts)
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			w.stmts(sc, n.Stmts)
			return false
		case *syntax.ProcSubst:
			w.stmts(sc, n.Stmts)
			return false
		}
		return true
	})
	return w.downloadsSince(start)
}

func (w *walker) downloadsSince(start int) bool {
	for _, p := range w.parts[start:] {
		if name := Program(p.Cmd()); name == "curl" || name == "wget" {
			return true
		}
	}
	return false
}

func isOutput(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.DplOut, syntax.RdrClob,
		syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		return true
	}
	return false
}

func (w *walker) stmt(sc *script, s *syntax.Stmt) {
	if s.Negated || s.Background || s.Coprocess {
		decides := w.decides
		w.decides = false
		defer func() { w.decides = decides }()
	}
	var redirs []Redirect
	var stdin *syntax.Redirect
	for _, r := range s.Redirs {
		w.substs(sc, r.Word)
		if r.Hdoc != nil {
			w.substs(sc, r.Hdoc)
		}
		switch {
		case isOutput(r.Op):
			t := sc.word(r.Word)
			if r.Op == syntax.DplOut && t.Kind == Literal && (t.Text == "-" || strings.Trim(t.Text, "0123456789") == "") {
				continue // >&2: duplicates a descriptor
			}
			redirs = append(redirs, Redirect{Target: t, Text: sc.slice(r)})
		case r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc:
			stdin = r
		}
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(sc, c, redirs, stdin)
		return
	case *syntax.BinaryCmd:
		decides, piped := w.decides, w.piped
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			// A pipeline exits with its last stage's status, unless
			// pipefail is set.
			start := len(w.parts)
			w.decides = decides && w.pipefail
			w.stmt(sc, c.X)
			fed := w.downloadsSince(start)
			if fed {
				w.downstream++
			}
			w.decides, w.piped = decides, true
			w.stmt(sc, c.Y)
			if fed {
				w.downstream--
			}
		case syntax.AndStmt:
			w.stmt(sc, c.X)
			w.piped = false
			w.stmt(sc, c.Y)
		default: // ||: either side may fail and the list succeed
			w.decides = false
			w.stmt(sc, c.X)
			w.piped = false
			w.stmt(sc, c.Y)
		}
		w.decides, w.piped = decides, piped
	case *syntax.FuncDecl:
		if c.Name != nil && forksItself(c.Name.Value, c.Body) {
			w.emit(&Command{Neutral: true, ForkBomb: true, Text: sc.slice(c), Bases: sc.bases})
		}
		w.stmts(sc, []*syntax.Stmt{c.Body})
	case *syntax.DeclClause:
		p := &Command{Neutral: true, Text: sc.slice(c), Bases: sc.bases}
		for _, a := range c.Args {
			w.substs(sc, a)
			w.assign(sc, p, a)
		}
		if len(p.Assigns) > 0 {
			w.emit(p)
		}
	case *syntax.TimeClause:
		if c.Stmt != nil {
			w.stmt(sc, c.Stmt)
		}
	case *syntax.CoprocClause:
		if c.Name != nil {
			w.substs(sc, c.Name)
		}
		w.stmt(sc, c.Stmt)
	case *syntax.Block:
		w.list(sc, c.Stmts)
	case *syntax.Subshell:
		pipefail, errexit := w.pipefail, w.errexit
		w.list(sc, c.Stmts)
		w.pipefail, w.errexit = pipefail, errexit
	case nil:
	default: // control flow, tests, arithmetic
		syntax.Walk(c, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Stmt:
				w.stmts(sc, []*syntax.Stmt{n})
				return false
			case *syntax.CmdSubst:
				w.stmts(sc, n.Stmts)
				return false
			case *syntax.ProcSubst:
				w.stmts(sc, n.Stmts)
				return false
			}
			return true
		})
	}
	if len(redirs) > 0 {
		w.emit(&Command{Neutral: true, Redirs: redirs, Bases: sc.bases, FromDownload: w.downstream > 0})
	}
}

// forksItself reports whether body pipes or backgrounds a call to the
// function name, as the fork bomb `:(){ :|:& };:` does.
func forksItself(name string, body *syntax.Stmt) bool {
	calls := func(s *syntax.Stmt) bool {
		c, ok := s.Cmd.(*syntax.CallExpr)
		return ok && len(c.Args) > 0 && c.Args[0].Lit() == name
	}
	found := false
	syntax.Walk(body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			found = found || n.Background && calls(n)
		case *syntax.BinaryCmd:
			found = found || (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && (calls(n.X) || calls(n.Y))
		}
		return !found
	})
	return found
}

func (w *walker) call(sc *script, c *syntax.CallExpr, redirs []Redirect, stdin *syntax.Redirect) {
	p := &Command{Redirs: redirs, Bases: sc.bases, FromDownload: w.downstream > 0, Piped: w.piped, Decides: w.decides}
	for _, a := range c.Assigns {
		w.substs(sc, a)
		w.assign(sc, p, a)
	}
	start := len(w.parts)
	for _, a := range c.Args {
		w.substs(sc, a)
	}
	p.RunsDownload = w.downloadsSince(start)
	if len(c.Args) == 0 {
		if len(redirs) > 0 || len(p.Assigns) > 0 {
			p.Neutral = true
			p.Text = sc.slice(c)
			for _, r := range redirs {
				p.Text = strings.TrimSpace(p.Text + " " + r.Text)
			}
			w.emit(p)
		}
		return
	}
	w.command(sc, sc.words(c.Args), p, stdin)
}

// assign records on p the variable a sets.
func (w *walker) assign(sc *script, p *Command, a *syntax.Assign) {
	if a.Name == nil || a.Naked {
		return
	}
	var value *Word
	switch {
	case a.Array != nil:
	case a.Value == nil:
		value = &Word{}
	default:
		v := sc.word(a.Value)
		value = &v
	}
	p.setVar(a.Name.Value, value)
}

// command emits the part running words, after removing wrappers, and the
// parts of any script or command it runs in turn.
func (w *walker) command(sc *script, words []Word, p *Command, stdin *syntax.Redirect) {
	p.Views = [][]Word{words}
	for {
		cur := p.Cmd()
		if cur[0].Kind != Literal {
			p.Unknown = fmt.Sprintf("cannot tell which program %s runs", cur[0].Src)
			w.emit(p)
			return
		}
		unwrap := wrappers[path.Base(cur[0].Text)]
		if unwrap == nil || !SystemProgram(cur[0]) {
			break
		}
		inner, unknown := unwrap(cur, p)
		if unknown != "" {
			p.Unknown = unknown
			w.emit(p)
			return
		}
		if len(inner) == 0 {
			break
		}
		p.Views = append(p.Views, inner)
	}
	cur := p.Cmd()
	name := Program(cur)
	if !SystemProgram(cur[0]) {
		name = "" // a script that only shares a name, such as ./env
		p.Opaque = fmt.Sprintf("runs the program file %s, which the rules do not read", cur[0].Src)
	}
	if shells[name] {
		if w.shell(sc, cur, p, stdin) {
			return
		}
		if p.Unknown == "" {
			p.Opaque = shellInput(cur)
		}
	}
	switch {
	case name == "exec":
		p.Neutral = true // exec with only redirections
	case name == "eval":
		if w.eval(sc, cur, p) {
			return
		}
	case name == "source" || name == ".":
		p.Opaque = fmt.Sprintf("%s runs a script file, which the rules do not read", cur[0].Src)
		if len(cur) > 1 {
			p.Opaque = fmt.Sprintf("%s runs the script file %s, which the rules do not read", cur[0].Src, cur[1].Src)
		}
	case name == "set":
		w.setOptions(cur[1:])
	case name == "alias":
		p.Opaque = "alias changes what later commands run"
	case name == "make" || name == "gmake" || name == "just":
		p.Opaque = fmt.Sprintf("%s runs recipes from a file in the workspace, which the rules do not read", name)
	case Interpreter(name) && !shells[name]:
		p.Opaque = interpreterInput(name, cur)
	}
	p.Text = p.render()
	if name == "git" {
		g := gitCommand(cur, p)
		if len(g) != len(cur) {
			p.Views = append(p.Views, g)
		}
		if p.Opaque == "" {
			p.Opaque = gitOpaque(g)
		}
	}
	w.emit(p)
	if name == "find" {
		for _, ex := range findExecs(cur) {
			np := &Command{Bases: p.Bases, FromDownload: p.FromDownload}
			if ex.dir {
				np.Bases = Dirs{Unknown: true} // -execdir runs in each file's directory
			}
			w.command(sc, ex.words, np, nil)
		}
	}
}

// eval runs its arguments, joined by spaces, as a script: when they are
// all known, eval emits itself as a neutral part and walks the script.
// Otherwise it marks p unknown and reports false.
func (w *walker) eval(sc *script, cmd []Word, p *Command) bool {
	src := make([]string, 0, len(cmd)-1)
	for _, a := range cmd[1:] {
		if a.Kind != Literal {
			p.Unknown = fmt.Sprintf("cannot tell what %s runs", cmd[0].Src)
			return false
		}
		src = append(src, a.Text)
	}
	p.Neutral = true
	p.Text = p.render()
	w.emit(p)
	w.nested(strings.Join(src, " "), p.Bases, nil)
	return true
}

// shellInput says what a shell that runs neither -c nor a here-document
// runs: a script file, or what it reads on standard input.
func shellInput(cmd []Word) string {
	for _, a := range cmd[1:] {
		if a.Kind != Literal {
			return fmt.Sprintf("cannot tell what %s runs", cmd[0].Src)
		}
		if !strings.HasPrefix(a.Text, "-") && !strings.HasPrefix(a.Text, "+") {
			return fmt.Sprintf("%s runs the script file %s, which the rules do not read", cmd[0].Src, a.Src)
		}
	}
	return fmt.Sprintf("%s runs commands from its standard input, which the rules do not read", cmd[0].Src)
}

// interpreterInput says what code an interpreter (python, node, perl, ...)
// runs that the rules do not read: inline code (-c, -e, --eval), a script
// file, or standard input. It returns "" when the interpreter only reports
// (--version, --help) or runs a module by name (python -m pytest), which
// other rules judge.
func interpreterInput(name string, cmd []Word) string {
	info := false
	for _, a := range cmd[1:] {
		if a.Kind != Literal {
			return fmt.Sprintf("cannot tell what code %s runs", cmd[0].Src)
		}
		t := a.Text
		switch {
		case t == "-m" && strings.HasPrefix(name, "python"):
			return ""
		case t == "--version" || t == "-V" || t == "--help" || t == "-h":
			info = true
		case strings.HasPrefix(t, "--"):
			if strings.HasPrefix(t, "--eval") || strings.HasPrefix(t, "--print") || strings.HasPrefix(t, "--command") || strings.HasPrefix(t, "--require") || strings.HasPrefix(t, "--import") {
				return fmt.Sprintf("%s runs inline code, which the rules do not read", cmd[0].Src)
			}
		case len(t) > 1 && t[0] == '-':
			if strings.ContainsAny(t[1:], "ceErpM") {
				return fmt.Sprintf("%s runs inline code, which the rules do not read", cmd[0].Src)
			}
		case t == "-":
			return fmt.Sprintf("%s runs code from its standard input, which the rules do not read", cmd[0].Src)
		default:
			return fmt.Sprintf("%s runs the script file %s, which the rules do not read", cmd[0].Src, a.Src)
		}
	}
	if info {
		return ""
	}
	return fmt.Sprintf("%s runs code from its standard input, which the rules do not read", cmd[0].Src)
}

// shells run a script given with -c or on standard input.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
}

// shell handles a shell running `-c SCRIPT` or a here-document: it emits the
// shell as a neutral part and walks the script. It reports false, having
// done nothing, when the shell runs a script file or an interactive session.
func (w *walker) shell(sc *script, cmd []Word, p *Command, stdin *syntax.Redirect) bool {
	sawC, i := false, 1
scan:
	for ; i < len(cmd); i++ {
		a := cmd[i]
		if a.Kind != Literal {
			break
		}
		t := a.Text
		switch {
		case t == "--" || t == "-":
			i++
			break scan
		case strings.HasPrefix(t, "--"):
			if t == "--rcfile" || t == "--init-file" {
				i++
			}
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			sawC = sawC || t[0] == '-' && strings.Contains(t[1:], "c")
			if strings.ContainsAny(t[1:], "oO") {
				i++ // -o option
			}
		default:
			break scan
		}
	}
	var src string
	switch {
	case sawC && i < len(cmd):
		if cmd[i].Kind != Literal {
			p.Unknown = fmt.Sprintf("cannot tell what script %s -c runs", cmd[0].Src)
			return false
		}
		src = cmd[i].Text
	case !sawC && i >= len(cmd) && stdin != nil:
		var ok bool
		src, ok = sc.stdinScript(stdin)
		if !ok {
			p.Unknown = fmt.Sprintf("cannot tell what script %s reads", cmd[0].Src)
			return false
		}
	default:
		return false
	}
	p.Neutral = true
	w.emit(p)
	w.nested(src, p.Bases, cmd[:min(i, len(cmd))])
	return true
}

// setOptions applies the errexit and pipefail options that set, or a
// shell's command line, gives in args: -e, -o errexit, -o pipefail, and
// their + forms, bundled or not (set -euo pipefail).
func (w *walker) setOptions(args []Word) {
	set := func(name string, on bool) {
		switch name {
		case "pipefail":
			w.pipefail = on
		case "errexit":
			w.errexit = on
		}
	}
	for i := 0; i < len(args); i++ {
		t := args[i].Text
		if args[i].Kind != Literal || len(t) < 2 || t[0] != '-' && t[0] != '+' || t == "--" {
			continue
		}
		on := t[0] == '-'
		for _, c := range t[1:] {
			switch c {
			case 'e':
				set("errexit", on)
			case 'o':
				if i+1 < len(args) && args[i+1].Kind == Literal {
					i++
					set(args[i].Text, on)
				}
			}
		}
	}
}
