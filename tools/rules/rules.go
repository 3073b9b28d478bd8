package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apserver/apserver/tools/shell"
)

// Decision is what may happen to a command. Values are ordered by
// strictness, so the larger of two decisions is the stricter one.
type Decision int

const (
	// Allow runs the command without asking.
	Allow Decision = iota
	// Prompt asks the user first.
	Prompt
	// Forbidden refuses the command; no approval can run it.
	Forbidden
)

var decisionNames = map[string]Decision{
	"allow":     Allow,
	"prompt":    Prompt,
	"forbidden": Forbidden,
}

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Prompt:
		return "prompt"
	case Forbidden:
		return "forbidden"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}

// MarshalText renders d as "allow", "prompt" or "forbidden".
func (d Decision) MarshalText() ([]byte, error) {
	if d < Allow || d > Forbidden {
		return nil, fmt.Errorf("rules: invalid decision %d", int(d))
	}
	return []byte(d.String()), nil
}

// builtinSource is the Source of the rules Builtin returns.
const builtinSource = "builtin"

// Rule decides the simple commands that begin with Prefix.
//
// Prefix holds words after quote removal. A word "*" matches any one word;
// every other word matches itself only. A first word without a slash also
// matches a program named by a path, such as /usr/bin/git for "git" (for
// allow rules only when the directory is a standard bin directory). A Rule
// with an empty Prefix matches nothing.
type Rule struct {
	Decision Decision
	Prefix   []string
	// Reason is shown to the user and the model when the rule decides.
	Reason string
	// Source is the file the rule came from, or "builtin".
	Source string
	// Line is the rule's line in Source; 0 for builtin rules.
	Line int
	// Check marks a check rule, written `check <words>`: it decides
	// nothing, and names a command whose exit status tells whether the
	// work is sound (a test, build or linter); see Set.Check. A check rule
	// has Decision Allow, so that where allow rules are not trusted (a
	// workspace rules file the user has not trusted) neither are checks.
	Check bool
	// Match and NotMatch are example commands the rule must and must not
	// match; Parse checks them.
	Match, NotMatch []string

	// desc, for builtin rules that test more than a prefix, says what they
	// match in place of Prefix.
	desc string
	// cond, when set, must also hold for the rule to match.
	cond func(*shell.Command, *env) match
}

// String renders the rule as it would be written in a rules file, for
// builtin rules that check more than a prefix, with a description in place of
// the words: `forbidden git push`, `allow find (without -exec, -delete, ...)`.
func (r Rule) String() string {
	if r.Check {
		return "check " + r.pattern()
	}
	return r.Decision.String() + " " + r.pattern()
}

// pattern is what the rule matches, for messages.
func (r Rule) pattern() string {
	if r.desc != "" {
		return r.desc
	}
	q := make([]string, len(r.Prefix))
	for i, w := range r.Prefix {
		if w == "*" { // the wildcard word, shown as written
			q[i] = w
		} else {
			q[i] = shell.Quote(w)
		}
	}
	return strings.Join(q, " ")
}

// origin says where the rule comes from, for messages: `builtin rule "git
// push"` or `rule "go test" (path:3)`.
func (r *Rule) origin() string {
	if r.Source == builtinSource {
		return fmt.Sprintf("builtin rule %q", r.pattern())
	}
	return fmt.Sprintf("rule %q (%s:%d)", r.pattern(), r.Source, r.Line)
}

// Set is an ordered collection of rules. A Set is never modified after it is
// built, so it may be shared between goroutines.
type Set struct {
	rules []Rule
}

// Builtin returns the default rules, with Source "builtin". See the package
// documentation for what they allow and forbid.
func Builtin() *Set {
	return &Set{rules: slices.Clone(builtinRules)}
}

// With returns a copy of s with rules added after its own. Since the
// strictest matching rule decides, added rules can make decisions stricter
// but cannot relax a forbidden or prompt rule already in s.
func (s *Set) With(rules ...Rule) *Set {
	return &Set{rules: append(slices.Clone(s.rules), rules...)}
}

// Rules returns the rules of s in order: builtin rules first, then each file's.
func (s *Set) Rules() []Rule {
	return slices.Clone(s.rules)
}

// Context is what a command's targets are judged against.
type Context struct {
	// Cwd is the directory the command runs in; relative paths are resolved
	// against it.
	Cwd string
	// WritableRoots are the directories the command may change. When empty,
	// Cwd is the only one.
	WritableRoots []string
	// Home is the user's home directory, the value of ~ and $HOME.
	Home string
}

// Verdict is the outcome of evaluating one command.
type Verdict struct {
	Decision Decision
	// Rule is the rule that decided, or nil when no rule matched the part
	// that decided. It may be a forbidden rule with a Prompt verdict, when
	// the command may or may not match it (for example `git $subcommand`).
	Rule *Rule
	// Part is the simple command that decided, as text.
	Part string
	// Reason is a sentence for the user and the model.
	Reason string
	// Opaque, when not empty, says why the rules cannot read the command
	// fully: what it runs depends on something they do not see (a
	// variable, inline code, a script file, a git alias). An opaque command
	// is at least prompted, and the session never runs one without a human
	// or the sandbox; see the package documentation.
	Opaque string
	// Privileged, when not empty, says why the command runs a command as
	// another user (sudo, su, doas, pkexec, run0, ...), whatever rule
	// decided it: only a human may approve it, each time.
	Privileged string
}

// LoadError is a problem in a rules file.
type LoadError struct {
	File string
	Line int
	Msg  string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}
