package rules

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file turns a bash command string into the simple commands ("parts")
// it may run, using mvdan.cc/sh's parser. It follows every way bash runs a
// command: lists, pipelines, subshells, groups, control flow, function
// bodies, command and process substitutions anywhere in a word, `bash -c`
// strings and here-documents fed to a shell, find -exec, and wrapper
// programs such as env, sudo, timeout and xargs. Whatever cannot be known
// without running the command (the value of a variable, the output of a
// substitution) is kept as an unknown word, and matching treats it as "may
// be anything".

// maxDepth bounds nested `bash -c` strings.
const maxDepth = 8

// match is the answer to "does this rule match?", when the answer may be
// unknowable.
type match uint8

const (
	no match = iota
	maybe
	yes
)

type wordKind uint8

const (
	// literal: text is exactly what the command sees.
	literal wordKind = iota
	// glob: an unquoted *, ? or [ may expand to file names; pat is the
	// pattern, in path.Match syntax.
	glob
	// dynamic: an expansion (parameter, substitution, arithmetic, brace,
	// ~user) makes the value unknown; lead is the literal text before it.
	dynamic
)

// word is one word of a simple command, as far as it is known statically.
type word struct {
	text string // after quote removal; meaningful for literal and glob words
	src  string // as written
	pat  string // glob pattern, for glob words
	lead string // literal text before the first expansion, for dynamic words
	kind wordKind
	// split: unquoted expansion or glob, which may become zero or several
	// words.
	split bool
	// home: the word is the home directory (~, $HOME, "${HOME}/").
	home bool
	// under, for find's {} in -exec, is the starting point the file is at
	// or under.
	under string
}

// couldStartWith reports whether w may begin with prefix.
func (w word) couldStartWith(prefix string) match {
	switch w.kind {
	case literal:
		if strings.HasPrefix(w.text, prefix) {
			return yes
		}
	case glob:
		if strings.HasPrefix(w.text, prefix) || globMayStartWith(w.pat, prefix) {
			return maybe
		}
	case dynamic:
		if strings.HasPrefix(w.lead, prefix) || strings.HasPrefix(prefix, w.lead) {
			return maybe
		}
	}
	return no
}

// globMayStartWith reports whether a glob pattern may match a name beginning
// with prefix: true when the text before its first metacharacter and prefix
// agree as far as both go.
func globMayStartWith(pat, prefix string) bool {
	fixed := unescapePattern(pat[:firstMeta(pat)])
	return strings.HasPrefix(fixed, prefix) || strings.HasPrefix(prefix, fixed)
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

func (b *wordBuilder) word(src string) word {
	w := word{text: b.text.String(), src: src, home: b.homeState == 1}
	switch {
	case b.dynamic:
		w.kind, w.lead, w.split = dynamic, b.lead, b.split
	case hasBraceExpansion(b.shape):
		w.kind, w.split = dynamic, true
	case b.meta && validPattern(b.pat.String()):
		w.kind, w.pat, w.split = glob, b.pat.String(), true
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
	bases cwdSet
}

func (sc *script) slice(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(sc.src) || start > end {
		return ""
	}
	return sc.src[start:end]
}

func (sc *script) word(w *syntax.Word) word {
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

func (sc *script) words(ws []*syntax.Word) []word {
	out := make([]word, len(ws))
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
		return w.text + "\n", w.kind == literal
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

// cwdSet is the directories a command may run in.
type cwdSet struct {
	dirs []string
	// unknown: it may also run somewhere else.
	unknown bool
}

// maxDirs bounds a cwdSet; beyond it the directory is unknown.
const maxDirs = 16

func (c *cwdSet) add(dir string) {
	if slices.Contains(c.dirs, dir) {
		return
	}
	if len(c.dirs) >= maxDirs {
		c.unknown = true
		return
	}
	c.dirs = append(c.dirs, dir)
}

// chdir returns where a command runs after changing to dir.
func (c cwdSet) chdir(dir *word) cwdSet {
	if dir == nil || dir.kind != literal {
		return cwdSet{unknown: true}
	}
	if filepath.IsAbs(dir.text) {
		return cwdSet{dirs: []string{filepath.Clean(dir.text)}}
	}
	out := cwdSet{unknown: c.unknown}
	for _, d := range c.dirs {
		out.add(filepath.Join(d, dir.text))
	}
	return out
}

// withCds returns the directories the commands of f may run in, given that
// f starts in c. Any cd in f, wherever it is, adds its target: to an
// absolute directory or home it is followed; anything else makes the
// directory unknown.
func (sc *script) withCds(f *syntax.File) cwdSet {
	out := cwdSet{dirs: slices.Clone(sc.bases.dirs), unknown: sc.bases.unknown}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		ws := sc.words(call.Args)
		for len(ws) > 0 && ws[0].kind == literal && (ws[0].text == "builtin" || ws[0].text == "command") {
			ws = ws[1:]
		}
		if len(ws) == 0 || ws[0].kind != literal {
			return true
		}
		switch ws[0].text {
		case "cd":
			args := ws[1:]
			for len(args) > 0 && args[0].kind == literal && len(args[0].text) > 1 && args[0].text[0] == '-' {
				done := args[0].text == "--"
				args = args[1:]
				if done {
					break
				}
			}
			switch {
			case len(args) == 0 && sc.home != "":
				out.add(sc.home)
			case len(args) > 0 && args[0].kind == literal && filepath.IsAbs(args[0].text):
				out.add(filepath.Clean(args[0].text))
			default:
				out.unknown = true
			}
		case "pushd", "popd":
			out.unknown = true
		}
		return true
	})
	return out
}

// redirect is an output redirection.
type redirect struct {
	target word
	text   string
}

// part is one simple command the evaluated command may run.
type part struct {
	// views are the command as written and after each wrapper (env, sudo,
	// ...) is removed; the last is the command that actually runs, with git's
	// global options removed. Empty for a bare redirection or assignment.
	views   [][]word
	redirs  []redirect
	assigns []string // variables set for the command that may change what runs
	bases   cwdSet
	text    string
	// unknown, when set, says why the part cannot be judged; it is at least
	// prompted, and opaque.
	unknown string
	// opaque, when set, says what code the part runs that the rules do not
	// read (inline code, a script file, make's recipes, a git alias); it is
	// opaque unless a rule of the user's allows it for certain.
	opaque string
	// neutral: the part runs no program of its own (a bare redirection, a
	// shell running a script whose commands are parts too); only forbidden
	// and prompt rules apply, and if none matches it is allowed.
	neutral bool
	// extra: more arguments, unknown, follow the last view (xargs).
	extra bool
	// fromDownload: the part reads the output of curl or wget through a pipe.
	fromDownload bool
	// runsDownload: an argument holds a substitution that runs curl or wget.
	runsDownload bool
	// gitConfig: git is given configuration (-c), which can make it run any
	// program.
	gitConfig bool
	// forkBomb: a function that pipes or backgrounds calls to itself.
	forkBomb bool
}

// cmd returns the command that actually runs, or nil.
func (p *part) cmd() []word {
	if len(p.views) == 0 {
		return nil
	}
	return p.views[len(p.views)-1]
}

// systemProgram reports whether w names a program by name alone or in a
// standard bin directory, so that it is what its name says.
func systemProgram(w word) bool {
	return w.kind == literal && (!strings.Contains(w.text, "/") || slices.Contains(binDirs, path.Dir(path.Clean(w.text))))
}

// program returns the base name of the program ws runs, or "" if unknown.
func program(ws []word) string {
	if len(ws) == 0 || ws[0].kind != literal {
		return ""
	}
	return path.Base(ws[0].text)
}

func (p *part) render() string {
	var q []string
	for _, w := range p.cmd() {
		q = append(q, w.src)
	}
	for _, r := range p.redirs {
		q = append(q, r.text)
	}
	return strings.Join(q, " ")
}

// walker collects the parts of a command.
type walker struct {
	home  string
	parts []*part
	depth int
	// downstream counts the enclosing pipelines whose earlier stages
	// download.
	downstream int
}

func (w *walker) emit(p *part) {
	if p.text == "" {
		p.text = p.render()
	}
	w.parts = append(w.parts, p)
}

func (w *walker) file(f *syntax.File, src string, bases cwdSet) {
	sc := &script{src: src, home: w.home, bases: bases}
	sc.bases = sc.withCds(f)
	for _, s := range f.Stmts {
		w.stmt(sc, s)
	}
}

// nested walks a script run by a shell.
func (w *walker) nested(src string, bases cwdSet) {
	if w.depth >= maxDepth {
		w.emit(&part{unknown: "shells are nested too deeply to follow", text: src})
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		w.emit(&part{unknown: fmt.Sprintf("cannot parse %q: %v", src, err), text: src})
		return
	}
	w.depth++
	w.file(f, src, bases)
	w.depth--
}

func (w *walker) stmts(sc *script, stmts []*syntax.Stmt) {
	for _, s := range stmts {
		w.stmt(sc, s)
	}
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
		if name := program(p.cmd()); name == "curl" || name == "wget" {
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
	var redirs []redirect
	var stdin *syntax.Redirect
	for _, r := range s.Redirs {
		w.substs(sc, r.Word)
		if r.Hdoc != nil {
			w.substs(sc, r.Hdoc)
		}
		switch {
		case isOutput(r.Op):
			t := sc.word(r.Word)
			if r.Op == syntax.DplOut && t.kind == literal && (t.text == "-" || strings.Trim(t.text, "0123456789") == "") {
				continue // >&2: duplicates a descriptor
			}
			redirs = append(redirs, redirect{target: t, text: sc.slice(r)})
		case r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc:
			stdin = r
		}
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(sc, c, redirs, stdin)
		return
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			start := len(w.parts)
			w.stmt(sc, c.X)
			fed := w.downloadsSince(start)
			if fed {
				w.downstream++
			}
			w.stmt(sc, c.Y)
			if fed {
				w.downstream--
			}
		} else {
			w.stmt(sc, c.X)
			w.stmt(sc, c.Y)
		}
	case *syntax.FuncDecl:
		if c.Name != nil && forksItself(c.Name.Value, c.Body) {
			w.emit(&part{neutral: true, forkBomb: true, text: sc.slice(c), bases: sc.bases})
		}
		w.stmt(sc, c.Body)
	case *syntax.DeclClause:
		p := &part{neutral: true, text: sc.slice(c), bases: sc.bases}
		for _, a := range c.Args {
			w.substs(sc, a)
			w.assign(sc, p, a)
		}
		if len(p.assigns) > 0 {
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
	case nil:
	default: // control flow, subshells, groups, tests, arithmetic
		syntax.Walk(c, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Stmt:
				w.stmt(sc, n)
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
		w.emit(&part{neutral: true, redirs: redirs, bases: sc.bases, fromDownload: w.downstream > 0})
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

func (w *walker) call(sc *script, c *syntax.CallExpr, redirs []redirect, stdin *syntax.Redirect) {
	p := &part{redirs: redirs, bases: sc.bases, fromDownload: w.downstream > 0}
	for _, a := range c.Assigns {
		w.substs(sc, a)
		w.assign(sc, p, a)
	}
	start := len(w.parts)
	for _, a := range c.Args {
		w.substs(sc, a)
	}
	p.runsDownload = w.downloadsSince(start)
	if len(c.Args) == 0 {
		if len(redirs) > 0 || len(p.assigns) > 0 {
			p.neutral = true
			p.text = sc.slice(c)
			for _, r := range redirs {
				p.text = strings.TrimSpace(p.text + " " + r.text)
			}
			w.emit(p)
		}
		return
	}
	w.command(sc, sc.words(c.Args), p, stdin)
}

// assign records on p the variable a sets.
func (w *walker) assign(sc *script, p *part, a *syntax.Assign) {
	if a.Name == nil || a.Naked {
		return
	}
	var value *word
	switch {
	case a.Array != nil:
	case a.Value == nil:
		value = &word{}
	default:
		v := sc.word(a.Value)
		value = &v
	}
	p.setVar(a.Name.Value, value)
}

// command emits the part running words, after removing wrappers, and the
// parts of any script or command it runs in turn.
func (w *walker) command(sc *script, words []word, p *part, stdin *syntax.Redirect) {
	p.views = [][]word{words}
	for {
		cur := p.cmd()
		if cur[0].kind != literal {
			p.unknown = fmt.Sprintf("cannot tell which program %s runs", cur[0].src)
			w.emit(p)
			return
		}
		unwrap := wrappers[path.Base(cur[0].text)]
		if unwrap == nil || !systemProgram(cur[0]) {
			break
		}
		inner, unknown := unwrap(cur, p)
		if unknown != "" {
			p.unknown = unknown
			w.emit(p)
			return
		}
		if len(inner) == 0 {
			break
		}
		p.views = append(p.views, inner)
	}
	cur := p.cmd()
	name := program(cur)
	if !systemProgram(cur[0]) {
		name = "" // a script that only shares a name, such as ./env
		p.opaque = fmt.Sprintf("runs the program file %s, which the rules do not read", cur[0].src)
	}
	if shells[name] {
		if w.shell(sc, cur, p, stdin) {
			return
		}
		if p.unknown == "" {
			p.opaque = shellInput(cur)
		}
	}
	switch {
	case name == "exec":
		p.neutral = true // exec with only redirections
	case name == "eval":
		if w.eval(sc, cur, p) {
			return
		}
	case name == "source" || name == ".":
		p.opaque = fmt.Sprintf("%s runs a script file, which the rules do not read", cur[0].src)
		if len(cur) > 1 {
			p.opaque = fmt.Sprintf("%s runs the script file %s, which the rules do not read", cur[0].src, cur[1].src)
		}
	case name == "alias":
		p.opaque = "alias changes what later commands run"
	case name == "make" || name == "gmake" || name == "just":
		p.opaque = fmt.Sprintf("%s runs recipes from a file in the workspace, which the rules do not read", name)
	case interpreter(name) && !shells[name]:
		p.opaque = interpreterInput(name, cur)
	}
	p.text = p.render()
	if name == "git" {
		if g := gitCommand(cur, p); len(g) != len(cur) {
			p.views = append(p.views, g)
		}
	}
	w.emit(p)
	if name == "find" {
		for _, ex := range findExecs(cur) {
			np := &part{bases: p.bases, fromDownload: p.fromDownload}
			if ex.dir {
				np.bases = cwdSet{unknown: true} // -execdir runs in each file's directory
			}
			w.command(sc, ex.words, np, nil)
		}
	}
}

// eval runs its arguments, joined by spaces, as a script: when they are
// all known, eval emits itself as a neutral part and walks the script.
// Otherwise it marks p unknown and reports false.
func (w *walker) eval(sc *script, cmd []word, p *part) bool {
	src := make([]string, 0, len(cmd)-1)
	for _, a := range cmd[1:] {
		if a.kind != literal {
			p.unknown = fmt.Sprintf("cannot tell what %s runs", cmd[0].src)
			return false
		}
		src = append(src, a.text)
	}
	p.neutral = true
	p.text = p.render()
	w.emit(p)
	w.nested(strings.Join(src, " "), p.bases)
	return true
}

// shellInput says what a shell that runs neither -c nor a here-document
// runs: a script file, or what it reads on standard input.
func shellInput(cmd []word) string {
	for _, a := range cmd[1:] {
		if a.kind != literal {
			return fmt.Sprintf("cannot tell what %s runs", cmd[0].src)
		}
		if !strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "+") {
			return fmt.Sprintf("%s runs the script file %s, which the rules do not read", cmd[0].src, a.src)
		}
	}
	return fmt.Sprintf("%s runs commands from its standard input, which the rules do not read", cmd[0].src)
}

// interpreterInput says what code an interpreter (python, node, perl, ...)
// runs that the rules do not read: inline code (-c, -e, --eval), a script
// file, or standard input. It returns "" when the interpreter only reports
// (--version, --help) or runs a module by name (python -m pytest), which
// other rules judge.
func interpreterInput(name string, cmd []word) string {
	info := false
	for _, a := range cmd[1:] {
		if a.kind != literal {
			return fmt.Sprintf("cannot tell what code %s runs", cmd[0].src)
		}
		t := a.text
		switch {
		case t == "-m" && strings.HasPrefix(name, "python"):
			return ""
		case t == "--version" || t == "-V" || t == "--help" || t == "-h":
			info = true
		case strings.HasPrefix(t, "--"):
			if strings.HasPrefix(t, "--eval") || strings.HasPrefix(t, "--print") || strings.HasPrefix(t, "--command") || strings.HasPrefix(t, "--require") || strings.HasPrefix(t, "--import") {
				return fmt.Sprintf("%s runs inline code, which the rules do not read", cmd[0].src)
			}
		case len(t) > 1 && t[0] == '-':
			if strings.ContainsAny(t[1:], "ceErpM") {
				return fmt.Sprintf("%s runs inline code, which the rules do not read", cmd[0].src)
			}
		case t == "-":
			return fmt.Sprintf("%s runs code from its standard input, which the rules do not read", cmd[0].src)
		default:
			return fmt.Sprintf("%s runs the script file %s, which the rules do not read", cmd[0].src, a.src)
		}
	}
	if info {
		return ""
	}
	return fmt.Sprintf("%s runs code from its standard input, which the rules do not read", cmd[0].src)
}

// shells run a script given with -c or on standard input.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
}

// shell handles a shell running `-c SCRIPT` or a here-document: it emits the
// shell as a neutral part and walks the script. It reports false, having
// done nothing, when the shell runs a script file or an interactive session.
func (w *walker) shell(sc *script, cmd []word, p *part, stdin *syntax.Redirect) bool {
	sawC, i := false, 1
scan:
	for ; i < len(cmd); i++ {
		a := cmd[i]
		if a.kind != literal {
			break
		}
		t := a.text
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
		if cmd[i].kind != literal {
			p.unknown = fmt.Sprintf("cannot tell what script %s -c runs", cmd[0].src)
			return false
		}
		src = cmd[i].text
	case !sawC && i >= len(cmd) && stdin != nil:
		var ok bool
		src, ok = sc.stdinScript(stdin)
		if !ok {
			p.unknown = fmt.Sprintf("cannot tell what script %s reads", cmd[0].src)
			return false
		}
	default:
		return false
	}
	p.neutral = true
	w.emit(p)
	w.nested(src, p.bases)
	return true
}
