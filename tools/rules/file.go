package rules

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/apserver/apserver/tools/shell"
)

// Load returns the builtin rules followed by the rules of each file in
// paths, in order. Files that do not exist are skipped; the first file that
// cannot be read or parsed fails the load, with a *LoadError for problems in
// its text.
func Load(paths ...string) (*Set, error) {
	s := Builtin()
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("loading rules: %w", err)
		}
		rules, err := Parse(p, src)
		if err != nil {
			return nil, err
		}
		s.rules = append(s.rules, rules...)
	}
	return s, nil
}

// Parse reads rules in the format described in the package documentation;
// name is used as their Source and in errors. It checks every rule's match
// and not-match examples. Errors are *LoadError.
func Parse(name string, src []byte) ([]Rule, error) {
	var rules []Rule
	fail := func(line int, format string, args ...any) ([]Rule, error) {
		return nil, &LoadError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		line = strings.TrimSuffix(line, "\r")
		text := strings.TrimSpace(line)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			r, err := parseRule(text)
			if err != nil {
				return fail(n, "%v", err)
			}
			r.Source, r.Line = name, n
			rules = append(rules, r)
			continue
		}
		if len(rules) == 0 {
			return fail(n, "indented line %q must follow a rule", text)
		}
		r := &rules[len(rules)-1]
		key, value, ok := strings.Cut(text, ":")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key != "match" && key != "not-match" && key != "reason" {
			return fail(n, "unknown directive %q (want match:, not-match: or reason:)", text)
		}
		if value == "" {
			return fail(n, "%s: needs a value", key)
		}
		if key == "reason" {
			if r.Reason != "" {
				return fail(n, "the rule has a reason already")
			}
			r.Reason = value
			continue
		}
		m, err := r.exampleMatch(value)
		switch {
		case err != nil:
			return fail(n, "cannot parse example %q: %v", value, err)
		case key == "match" && m == no:
			return fail(n, "example %q does not match rule %q", value, r.String())
		case key == "match" && m == maybe:
			return fail(n, "cannot tell whether example %q matches rule %q", value, r.String())
		case key == "not-match" && m != no:
			return fail(n, "not-match example %q matches rule %q", value, r.String())
		case key == "match":
			r.Match = append(r.Match, value)
		default:
			r.NotMatch = append(r.NotMatch, value)
		}
	}
	return rules, nil
}

// parseRule reads `<decision> <prefix words>`.
func parseRule(text string) (Rule, error) {
	keyword, rest := text, ""
	if i := strings.IndexAny(text, " \t"); i >= 0 {
		keyword, rest = text[:i], text[i+1:]
	}
	d, ok := decisionNames[keyword]
	switch {
	case ok:
	case keyword == "check":
	case keyword == "match:" || keyword == "not-match:" || keyword == "reason:":
		return Rule{}, fmt.Errorf("%s must be indented under a rule", keyword)
	default:
		return Rule{}, fmt.Errorf("unknown decision %q (want allow, prompt, forbidden or check)", keyword)
	}
	prefix, err := parsePrefix(rest)
	if err != nil {
		return Rule{}, err
	}
	return Rule{Decision: d, Prefix: prefix, Check: keyword == "check"}, nil
}

// parsePrefix reads a rule's words: shell words, quoted as needed, with no
// expansions.
func parsePrefix(text string) ([]string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		return nil, fmt.Errorf("cannot parse %q: %v", text, err)
	}
	if len(f.Stmts) == 0 {
		return nil, errors.New("the rule names no command")
	}
	s := f.Stmts[0]
	call, ok := s.Cmd.(*syntax.CallExpr)
	if len(f.Stmts) > 1 || !ok || len(call.Assigns) > 0 || len(s.Redirs) > 0 || s.Negated || s.Background || len(call.Args) == 0 {
		return nil, fmt.Errorf("%q is not a command prefix: write plain words, quoting any shell operators", text)
	}
	var out []string
	for _, a := range call.Args {
		w := shell.ParseWord(text, a)
		if w.Kind == shell.Dynamic {
			return nil, fmt.Errorf("%s is not a plain word: quote it", w.Src)
		}
		out = append(out, w.Text)
	}
	return out, nil
}
