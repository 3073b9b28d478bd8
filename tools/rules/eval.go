package rules

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apserver/apserver/tools/shell"
)

// match is the answer to "does this rule match?", when the answer may be
// unknowable.
type match uint8

const (
	no match = iota
	maybe
	yes
)

// couldStartWith reports whether w may begin with prefix.
func couldStartWith(w shell.Word, prefix string) match {
	switch sure, may := w.StartsWith(prefix); {
	case sure:
		return yes
	case may:
		return maybe
	}
	return no
}

// env is a Context made ready for checking paths.
type env struct {
	home  string
	roots []string // absolute, clean
}

func newEnv(ctx Context) *env {
	e := &env{}
	if filepath.IsAbs(ctx.Home) {
		e.home = filepath.Clean(ctx.Home)
	}
	cwd := ""
	if filepath.IsAbs(ctx.Cwd) {
		cwd = filepath.Clean(ctx.Cwd)
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
	return e
}

// Evaluate decides command, a bash command string, run in ctx. It splits
// the command into every simple command it may run and decides each by the
// strictest rule that matches it; a simple command no rule matches is
// prompted. The verdict is the strictest of these, the first one when
// several tie. A command that cannot be parsed is prompted.
func (s *Set) Evaluate(command string, ctx Context) Verdict {
	e := newEnv(ctx)
	parts, err := shell.Parse(command, shell.Options{Home: e.home, Dir: ctx.Cwd})
	if errors.Is(err, shell.ErrEmpty) {
		return Verdict{Decision: Prompt, Part: command, Reason: "the command is empty; asking"}
	}
	if err != nil {
		why := fmt.Sprintf("cannot parse the command (%v)", err)
		return Verdict{Decision: Prompt, Part: command, Reason: why + "; asking", Opaque: why}
	}
	if len(parts) == 0 {
		return Verdict{Decision: Allow, Part: command, Reason: "runs no programs"}
	}
	var out Verdict
	opaque, privileged := "", ""
	for i, p := range parts {
		v := s.decide(p, e)
		if opaque == "" {
			opaque = v.Opaque
		}
		if privileged == "" {
			privileged = p.Privileged
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
	// So is one that runs a command as another user.
	out.Privileged = privileged
	return out
}

// decide applies the strictest matching rule to one part.
func (s *Set) decide(p *shell.Command, e *env) Verdict {
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
		if r.Check {
			continue // a check rule decides nothing
		}
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
	if p.Unknown != "" && (best == nil || !definite || bestD == Allow) {
		return Verdict{Decision: Prompt, Part: p.Text, Reason: p.Unknown + "; asking", Opaque: p.Unknown}
	}
	// A part that runs code the rules do not read (inline code, a script
	// file, make, a git alias) is opaque unless the user's own rules allow
	// it for certain: a builtin allow rule does not vouch for the file.
	if p.Opaque != "" && bestD < Forbidden && !(bestD == Allow && definite && best.Source != builtinSource) {
		v := Verdict{Decision: Prompt, Part: p.Text, Reason: p.Opaque + "; asking", Opaque: p.Opaque}
		if best != nil && bestD == Prompt {
			rule := *best
			v.Rule = &rule
		}
		return v
	}
	if best == nil {
		if p.Neutral {
			return Verdict{Decision: Allow, Part: p.Text, Reason: "runs no program of its own"}
		}
		return Verdict{Decision: Prompt, Part: p.Text, Reason: fmt.Sprintf("no rule matches %q; asking", p.Text)}
	}
	rule := *best
	v := Verdict{Decision: bestD, Rule: &rule, Part: p.Text}
	switch {
	case bestM == maybe:
		v.Reason = fmt.Sprintf("cannot tell whether %q matches %s %s", p.Text, best.Decision, best.origin())
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
	if p.Unknown != "" && bestD < Forbidden {
		v.Opaque = p.Unknown
	} else if maybeForbidden != nil && bestD < Forbidden {
		// Whether a forbidden program runs depends on what is only known
		// when the command runs: the command is opaque.
		v.Opaque = fmt.Sprintf("cannot tell whether %q is %s", p.Text, maybeForbidden.String())
	}
	return v
}

// match reports whether r matches p: its prefix matches one of p's views
// (for allow rules, the command that actually runs) and its condition holds.
func (r *Rule) match(p *shell.Command, e *env) match {
	if len(r.Prefix) == 0 && r.cond == nil || p.Neutral && r.Decision == Allow {
		return no
	}
	m := yes
	if len(r.Prefix) > 0 {
		m = no
		for i, v := range p.Views {
			last := i == len(p.Views)-1
			// Allow and check rules are about the command that finally
			// runs; a check may be a toolchain anywhere (/usr/local/go/bin/go).
			if r.Decision == Allow && !last {
				continue
			}
			m = max(m, prefixMatch(r.Prefix, v, last && p.Extra, r.Decision == Allow && !r.Check))
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
func prefixMatch(prefix []string, ws []shell.Word, extra, strict bool) match {
	m := yes
	for i, pw := range prefix {
		if i >= len(ws) {
			if extra || slices.ContainsFunc(ws, func(w shell.Word) bool { return w.Split }) {
				return maybe
			}
			return no
		}
		var wm match
		switch {
		case pw == "*":
			wm = yes
			if ws[i].Split && i < len(prefix)-1 {
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

func wordMatch(pw string, w shell.Word) match {
	switch w.Kind {
	case shell.Glob:
		if ok, _ := path.Match(w.Pat, pw); ok || w.Text == pw {
			return maybe
		}
		return no
	case shell.Dynamic:
		if strings.HasPrefix(pw, w.Lead) {
			return maybe
		}
		return no
	}
	if w.Text == pw {
		return yes
	}
	return no
}

func programMatch(pw string, w shell.Word, strict bool) match {
	if w.Kind != shell.Literal {
		return wordMatch(pw, w)
	}
	switch {
	case strings.Contains(pw, "/"):
		if path.Clean(w.Text) == path.Clean(pw) {
			return yes
		}
	case w.Text == pw:
		return yes
	case strings.Contains(w.Text, "/") && path.Base(w.Text) == pw:
		if !strict || slices.Contains(shell.BinDirs, path.Dir(path.Clean(w.Text))) {
			return yes
		}
	}
	return no
}

// exampleMatch reports whether r matches one of the simple commands of
// example, for checking a rule's examples.
func (r *Rule) exampleMatch(example string) (match, error) {
	parts, err := shell.Parse(example, shell.Options{})
	if err != nil && !errors.Is(err, shell.ErrEmpty) {
		return no, err
	}
	e := newEnv(Context{})
	m := no
	for _, p := range parts {
		m = max(m, r.match(p, e))
	}
	return m, nil
}
