package rules

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// env is a Context made ready for checking paths.
type env struct {
	home  string
	roots []string // absolute, clean
}

func newEnv(ctx Context) (*env, cwdSet) {
	e := &env{}
	if filepath.IsAbs(ctx.Home) {
		e.home = filepath.Clean(ctx.Home)
	}
	var start cwdSet
	cwd := ""
	if filepath.IsAbs(ctx.Cwd) {
		cwd = filepath.Clean(ctx.Cwd)
		start.dirs = []string{cwd}
	} else {
		start.unknown = true
	}
	for _, r := range ctx.WritableRoots {
		switch {
		case filepath.IsAbs(r):
			e.roots = append(e.roots, filepath.Clean(r))
		case cwd != "":
			e.roots = append(e.roots, filepath.Join(cwd, r))
		}
	}
	if len(e.roots) == 0 && cwd != "" {
		e.roots = []string{cwd}
	}
	return e, start
}

// Evaluate decides command, a bash command string, run in ctx. It splits
// the command into every simple command it may run and decides each by the
// strictest rule that matches it; a simple command no rule matches is
// prompted. The verdict is the strictest of these, the first one when
// several tie. A command that cannot be parsed is prompted.
func (s *Set) Evaluate(command string, ctx Context) Verdict {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		why := fmt.Sprintf("cannot parse the command (%v)", err)
		return Verdict{Decision: Prompt, Part: command, Reason: why + "; asking", Opaque: why}
	}
	if len(f.Stmts) == 0 {
		return Verdict{Decision: Prompt, Part: command, Reason: "the command is empty; asking"}
	}
	e, start := newEnv(ctx)
	w := walker{home: e.home}
	w.file(f, command, start)
	if len(w.parts) == 0 {
		return Verdict{Decision: Allow, Part: command, Reason: "runs no programs"}
	}
	var out Verdict
	opaque := ""
	for i, p := range w.parts {
		v := s.decide(p, e)
		if opaque == "" {
			opaque = v.Opaque
		}
		// An allowed command is explained by a rule that allows it rather
		// than by a part that runs nothing; a prompted one by an opaque
		// part, which says why it cannot be read.
		if i == 0 || v.Decision > out.Decision ||
			v.Decision == Allow && out.Decision == Allow && out.Rule == nil && v.Rule != nil ||
			v.Decision == Prompt && out.Decision == Prompt && out.Opaque == "" && v.Opaque != "" {
			out = v
		}
	}
	// A command with one part the rules cannot read is opaque as a whole,
	// whichever part decided.
	out.Opaque = opaque
	return out
}

// decide applies the strictest matching rule to one part.
func (s *Set) decide(p *part, e *env) Verdict {
	var (
		best     *Rule
		bestD    Decision
		bestM    match
		definite bool
		// maybeForbidden is a forbidden rule that may match.
		maybeForbidden *Rule
	)
	for i := range s.rules {
		r := &s.rules[i]
		m := r.match(p, e)
		if m == no {
			continue
		}
		d := r.Decision
		if m == maybe && d == Forbidden && maybeForbidden == nil {
			maybeForbidden = r
		}
		if m == maybe {
			if d == Allow {
				continue // an allow rule must match for certain
			}
			d = Prompt // a forbidden rule that may match asks
		}
		if best == nil || d > bestD || d == bestD && m == yes && !definite {
			best, bestD, bestM, definite = r, d, m, m == yes
		}
	}
	if p.unknown != "" && (best == nil || !definite || bestD == Allow) {
		return Verdict{Decision: Prompt, Part: p.text, Reason: p.unknown + "; asking", Opaque: p.unknown}
	}
	// A part that runs code the rules do not read (inline code, a script
	// file, make, a git alias) is opaque unless the user's own rules allow
	// it for certain: a builtin allow rule does not vouch for the file.
	if p.opaque != "" && bestD < Forbidden && !(bestD == Allow && definite && best.Source != builtinSource) {
		v := Verdict{Decision: Prompt, Part: p.text, Reason: p.opaque + "; asking", Opaque: p.opaque}
		if best != nil && bestD == Prompt {
			rule := *best
			v.Rule = &rule
		}
		return v
	}
	if best == nil {
		if p.neutral {
			return Verdict{Decision: Allow, Part: p.text, Reason: "runs no program of its own"}
		}
		return Verdict{Decision: Prompt, Part: p.text, Reason: fmt.Sprintf("no rule matches %q; asking", p.text)}
	}
	rule := *best
	v := Verdict{Decision: bestD, Rule: &rule, Part: p.text}
	switch {
	case bestM == maybe:
		v.Reason = fmt.Sprintf("cannot tell whether %q matches %s %s", p.text, best.Decision, best.origin())
		if best.Reason != "" {
			v.Reason += " (" + best.Reason + ")"
		}
		v.Reason += "; asking"
	case bestD == Allow:
		v.Reason = "allowed by " + best.origin()
	case bestD == Prompt:
		v.Reason = "asking because of " + best.origin()
	default:
		v.Reason = "forbidden by " + best.origin()
	}
	if bestM == yes && best.Reason != "" {
		v.Reason += ": " + best.Reason
	}
	if p.unknown != "" && bestD < Forbidden {
		v.Opaque = p.unknown
	} else if maybeForbidden != nil && bestD < Forbidden {
		// Whether a forbidden program runs depends on what is only known
		// when the command runs: the command is opaque.
		v.Opaque = fmt.Sprintf("cannot tell whether %q is %s", p.text, maybeForbidden.String())
	}
	return v
}

// match reports whether r matches p: its prefix matches one of p's views
// (for allow rules, the command that actually runs) and its condition holds.
func (r *Rule) match(p *part, e *env) match {
	if len(r.Prefix) == 0 && r.cond == nil || p.neutral && r.Decision == Allow {
		return no
	}
	m := yes
	if len(r.Prefix) > 0 {
		m = no
		for i, v := range p.views {
			last := i == len(p.views)-1
			if r.Decision == Allow && !last {
				continue
			}
			m = max(m, prefixMatch(r.Prefix, v, last && p.extra, r.Decision == Allow))
		}
		if m == no {
			return no
		}
	}
	if r.cond != nil {
		m = min(m, r.cond(p, e))
	}
	return m
}

// prefixMatch matches a rule's prefix against the words of a command. extra
// says unknown arguments follow ws. strict (for allow rules) requires a
// program given by path to be in a standard directory.
func prefixMatch(prefix []string, ws []word, extra, strict bool) match {
	m := yes
	for i, pw := range prefix {
		if i >= len(ws) {
			if extra || slices.ContainsFunc(ws, func(w word) bool { return w.split }) {
				return maybe
			}
			return no
		}
		var wm match
		switch {
		case pw == "*":
			wm = yes
			if ws[i].split && i < len(prefix)-1 {
				wm = maybe // may become no word, or several
			}
		case i == 0:
			wm = programMatch(pw, ws[0], strict)
		default:
			wm = wordMatch(pw, ws[i])
		}
		if wm == no {
			return no
		}
		m = min(m, wm)
	}
	return m
}

func wordMatch(pw string, w word) match {
	switch w.kind {
	case glob:
		if ok, _ := path.Match(w.pat, pw); ok || w.text == pw {
			return maybe
		}
		return no
	case dynamic:
		if strings.HasPrefix(pw, w.lead) {
			return maybe
		}
		return no
	}
	if w.text == pw {
		return yes
	}
	return no
}

// binDirs are where a program given by path may be and still match an
// allow rule naming it without a path.
var binDirs = []string{"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}

func programMatch(pw string, w word, strict bool) match {
	if w.kind != literal {
		return wordMatch(pw, w)
	}
	switch {
	case strings.Contains(pw, "/"):
		if path.Clean(w.text) == path.Clean(pw) {
			return yes
		}
	case w.text == pw:
		return yes
	case strings.Contains(w.text, "/") && path.Base(w.text) == pw:
		if !strict || slices.Contains(binDirs, path.Dir(path.Clean(w.text))) {
			return yes
		}
	}
	return no
}

// exampleMatch reports whether r matches one of the simple commands of
// example, for checking a rule's examples.
func (r *Rule) exampleMatch(example string) (match, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(example), "")
	if err != nil {
		return no, err
	}
	e, start := newEnv(Context{})
	w := walker{}
	w.file(f, example, start)
	m := no
	for _, p := range w.parts {
		m = max(m, r.match(p, e))
	}
	return m, nil
}
