package rules

import "testing"

func TestCheck(t *testing.T) {
	ctx := Context{Cwd: "/w", Home: "/home/u"}
	for _, tt := range []struct {
		cmd  string
		want CheckRun
	}{
		{"go test ./...", CheckConclusive},
		{"make test", CheckConclusive},
		{"make", CheckConclusive},
		{"make -j4", CheckConclusive},
		{"npm test", CheckConclusive},
		{"cargo clippy -- -D warnings", CheckConclusive},
		// apserver's own form, wrappers, lists and redirections.
		{`/bin/bash -c 'make test'`, CheckConclusive},
		{`/bin/bash -c 'cd x && go test ./...'`, CheckConclusive},
		{"cd x && go test ./...", CheckConclusive},
		{"timeout 60 pytest -q", CheckConclusive},
		{"env CGO_ENABLED=0 go vet ./...", CheckConclusive},
		{"make test 2>&1", CheckConclusive},
		{"go vet ./... && go test ./...", CheckConclusive},
		{"set -o pipefail; make test 2>&1 | tail -20", CheckConclusive},
		{"/usr/local/go/bin/go test ./...", CheckConclusive},
		// A check whose failure the exit status may hide.
		{"make test 2>&1 | tail", CheckInconclusive},
		{"go test ./... | grep FAIL", CheckInconclusive},
		{"go test ./...; echo done", CheckInconclusive},
		{"go test ./... || true", CheckInconclusive},
		{"go test ./... && go vet ./... | tee log", CheckInconclusive},
		{"! go test ./...", CheckInconclusive},
		{"if go test ./...; then echo ok; fi", CheckInconclusive},
		// Mentioning a check is not running one.
		{"echo go test", NoCheck},
		{"grep -r tox .", NoCheck},
		{"cat /usr/share/doc/make", NoCheck},
		{"git commit -m 'make test'", NoCheck},
		{"make install", NoCheck},
		{"go run ./cmd/x", NoCheck},
		{"$runner test", NoCheck},
		{"echo 'open", NoCheck},
		{"", NoCheck},
	} {
		if got := Builtin().Check(tt.cmd, ctx); got != tt.want {
			t.Errorf("Check(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
		if got, want := Builtin().IsCheck(tt.cmd, ctx), tt.want != NoCheck; got != want {
			t.Errorf("IsCheck(%q) = %t, want %t", tt.cmd, got, want)
		}
	}
}

// A rules file adds checks of its own with `check`; they decide nothing.
func TestCheckRulesFile(t *testing.T) {
	rs, err := Parse("rules", []byte(`check ./scripts/ci.sh
  reason: the project's whole check suite
  match: ./scripts/ci.sh --fast
  not-match: cat ./scripts/ci.sh
check just lint
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rs[0].String(); got != "check ./scripts/ci.sh" {
		t.Errorf("String() = %q, want %q", got, "check ./scripts/ci.sh")
	}
	s := Builtin().With(rs...)
	ctx := Context{Cwd: "/w"}
	for cmd, want := range map[string]CheckRun{
		"./scripts/ci.sh --fast":                 CheckConclusive,
		"/bin/bash -c 'just lint'":               CheckConclusive,
		"./scripts/ci.sh | tail":                 CheckInconclusive,
		"cat ./scripts/ci.sh":                    NoCheck,
		"scripts/other.sh":                       NoCheck,
		"/bin/bash -c 'echo ./scripts/ci.sh ok'": NoCheck,
	} {
		if got := s.Check(cmd, ctx); got != want {
			t.Errorf("Check(%q) = %v, want %v", cmd, got, want)
		}
	}
	// A check rule is not an allow rule: the script is still opaque.
	if v := s.Evaluate("./scripts/ci.sh", ctx); v.Decision != Prompt || v.Opaque == "" {
		t.Errorf("Evaluate(./scripts/ci.sh) = %v (opaque %q), want an opaque prompt", v.Decision, v.Opaque)
	}
	if _, err := Parse("f", []byte("check go test\n  match: go vet\n")); err == nil {
		t.Error(`Parse("check go test" with example "go vet") succeeded, want an error`)
	}
}

// BenchmarkCheck measures the check detection full auto runs on each
// command item of a turn.
func BenchmarkCheck(b *testing.B) {
	s := Builtin()
	ctx := Context{Cwd: "/w"}
	for _, cmd := range []string{
		`/bin/bash -c 'make test'`,
		`/bin/bash -c 'cd pkg && go test ./... 2>&1 | tail -50'`,
		`/bin/bash -c 'grep -rn "func main" --include=*.go . | head'`,
	} {
		b.Run(cmd, func(b *testing.B) {
			for b.Loop() {
				s.Check(cmd, ctx)
			}
		})
	}
}
