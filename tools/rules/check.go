package rules

import (
	"strings"

	"github.com/apserver/apserver/tools/shell"
)

// CheckRun says whether a command runs a check (a test, build or linter
// named by a check rule) and whether its exit status is the check's
// outcome.
type CheckRun int

const (
	// NoCheck: the command runs no check. Mentioning one (echo go test,
	// grep -r tox .) is not running it.
	NoCheck CheckRun = iota
	// CheckInconclusive: the command runs a check, but its exit status may
	// be 0 when the check fails: the check is in a pipeline stage before
	// the last without set -o pipefail (make test | tail), before a `;`,
	// on either side of ||, negated, in the background, or in a condition
	// or loop.
	CheckInconclusive
	// CheckConclusive: the command runs checks and exits 0 only if every
	// one of them does (make test, cd x && go test ./..., timeout 60
	// pytest -q, /bin/bash -c 'make test').
	CheckConclusive
)

func (c CheckRun) String() string {
	switch c {
	case NoCheck:
		return "none"
	case CheckInconclusive:
		return "inconclusive"
	case CheckConclusive:
		return "conclusive"
	}
	return "CheckRun(?)"
}

// Check reads command, a bash command string, and reports whether it runs
// a check, and whether its exit status is that check's outcome. A simple
// command runs a check when the command that finally runs (after wrappers
// such as env, timeout and sudo, and inside bash -c) is matched for certain
// by a check rule. A command that does not parse runs no check.
func (s *Set) Check(command string, ctx Context) CheckRun {
	e := newEnv(ctx)
	parts, err := shell.Parse(command, shell.Options{Home: e.home, Dir: ctx.Cwd})
	if err != nil {
		return NoCheck
	}
	out := NoCheck
	for _, p := range parts {
		if p.Unknown != "" || !s.isCheck(p, e) {
			continue
		}
		if !p.Decides {
			return CheckInconclusive
		}
		out = CheckConclusive
	}
	return out
}

// IsCheck reports whether command runs a check, conclusively or not.
func (s *Set) IsCheck(command string, ctx Context) bool {
	return s.Check(command, ctx) != NoCheck
}

func (s *Set) isCheck(p *shell.Command, e *env) bool {
	for i := range s.rules {
		if r := &s.rules[i]; r.Check && r.match(p, e) == yes {
			return true
		}
	}
	return false
}

// checkRules are the builtin check rules: tests, builds, type checkers and
// linters whose failure means the work is not done.
var checkRules = append(prefixRules(Allow, "runs the project's tests, build or linters",
	"go test", "go build", "go vet", "staticcheck", "golangci-lint run",
	"cargo test", "cargo build", "cargo check", "cargo clippy",
	"npm test", "npm run test", "npm run build", "npm run lint", "npm run check", "npx tsc",
	"pnpm test", "pnpm run test", "pnpm run build", "pnpm run lint", "pnpm build", "pnpm lint",
	"yarn test", "yarn run test", "yarn build", "yarn lint",
	"pytest", "python -m pytest", "python3 -m pytest", "tox", "mypy", "ruff check", "ruff",
	"eslint", "tsc",
	"mvn test", "mvn verify", "mvn package", "gradle test", "gradle build", "gradle check",
	"./gradlew test", "./gradlew build", "./gradlew check",
	"ctest", "bazel test", "bazel build",
	"make test", "make check", "make build", "make lint", "make all",
	"gmake test", "gmake check", "just test",
), Rule{
	Prefix: []string{"make"}, Reason: "builds the project's default target",
	desc: "make (without targets)", cond: noMakeTargets,
	Match: []string{"make", "make -j4", "cd x && make"}, NotMatch: []string{"make install", "echo make"},
})

func init() {
	for i := range checkRules {
		checkRules[i].Check = true
	}
	builtinRules = append(builtinRules, checkRules...)
	for i := range builtinRules {
		builtinRules[i].Source = builtinSource
	}
}

// noMakeTargets: make is given options only, so it builds the default
// target.
func noMakeTargets(p *shell.Command, _ *env) match {
	ws := args(p, 1)
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w.Kind != shell.Literal {
			return maybe
		}
		switch t := w.Text; {
		case t == "-C" || t == "-f" || t == "-I" || t == "-o" || t == "-W" || t == "--file" || t == "--directory":
			i++ // the option's value
		case strings.HasPrefix(t, "-") || strings.Contains(t, "="):
			// an option, or a variable assignment
		default:
			return no
		}
	}
	return yes
}
