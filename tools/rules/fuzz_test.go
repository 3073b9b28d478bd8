package rules

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/shell"
)

func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		"go test ./... && git push",
		"ls | grep x",
		"echo $(rm -rf /)",
		`bash -c "git push"`,
		"env FOO=1 sudo git push",
		"rm -rf ../other",
		"curl x | sh",
		`echo "git push"`,
		":(){ :|:& };:",
		"bash <<'EOF'\ngit push\nEOF",
		"cat <<EOF\n$(git push)\nEOF",
		`find . -exec sh -c 'rm -rf "$1"' _ {} \;`,
		"xargs -I{} rm -rf {}",
		"for f in *.go; do gofmt -l $f; done",
		"git -C .. -c x=y push",
		"rm -rf ~user/../*",
		"echo ${x:-$(git push)} >> /dev/sda",
		"coproc git push",
		"a=(1 $(ls)) && declare -x PATH=$x",
		"sed -n '/a\\/b/,+3p' f",
		"bash -c \"bash -c 'bash -c \\\"git push\\\"'\"",
		"((x = $(id -u))) && [[ -f $(pwd) ]]",
		"time -p nice -n5 timeout -s KILL 5 nohup stdbuf -oL env -u X command -p git push",
		"echo 'unterminated",
		`eval "git push"`,
		`git -c alias.p=push p`,
		`$(echo git) push`,
		`python3 -c 'import os; os.system("git push")'`,
		`find / -maxdepth 0 -exec rm -rf {} +`,
		"make test",
		"sh x.sh",
		`busybox sh -c 'git push'`,
		`env -S 'git push'`,
		"cat <<EOF",
		"# comment",
		"echo \\",
	} {
		f.Add(seed)
	}
	s := Builtin()
	f.Fuzz(func(t *testing.T, cmd string) {
		v := s.Evaluate(cmd, testCtx)
		if v.Decision < Allow || v.Decision > Forbidden {
			t.Fatalf("Evaluate(%q).Decision = %d", cmd, v.Decision)
		}
		if v.Reason == "" {
			t.Fatalf("Evaluate(%q).Reason is empty", cmd)
		}
		if v.Rule != nil && v.Rule.Decision < v.Decision {
			t.Fatalf("Evaluate(%q) = %v by a rule that says %v", cmd, v.Decision, v.Rule.Decision)
		}
		if w := s.Evaluate(cmd, testCtx); w.Decision != v.Decision || w.Reason != v.Reason || w.Opaque != v.Opaque {
			t.Fatalf("Evaluate(%q) is not deterministic: %v then %v", cmd, v, w)
		}
		if v.Decision == Allow && v.Opaque != "" {
			t.Fatalf("Evaluate(%q) allows an opaque command: %s", cmd, v.Opaque)
		}
		if v.Decision == Forbidden && (v.Rule == nil || v.Rule.Decision != Forbidden) {
			t.Fatalf("Evaluate(%q) is forbidden without a forbidden rule: %+v", cmd, v)
		}
		// A compound whose first part is forbidden, or opaque, stays so
		// whatever follows: what follows cannot undo a command that runs
		// first, only make the whole unreadable (a parse error, opaque).
		// The session plans from this verdict alone (policy/explain
		// reports the same plan), so a forbidden part is never let through
		// as allow or as a plain prompt.
		for _, c := range []struct {
			head   string
			forbid bool
		}{
			{"git push; ", true},
			{"rm -rf /\n", true},
			{"$(echo git) push; ", false},
			{"python3 -c 'x'\n", false},
			{"go test ./... && ", false},
		} {
			w := s.Evaluate(c.head+cmd, testCtx)
			switch {
			case c.forbid && w.Decision != Forbidden && w.Opaque == "":
				t.Fatalf("Evaluate(%q) = %v, not opaque; want forbidden", c.head+cmd, w.Decision)
			case !c.forbid && c.head != "go test ./... && " && w.Decision != Forbidden && w.Opaque == "":
				t.Fatalf("Evaluate(%q) = %v; want opaque or forbidden", c.head+cmd, w.Decision)
			case w.Decision < v.Decision && c.head == "go test ./... && ":
				t.Fatalf("Evaluate(%q) = %v, laxer than %v for %q alone", c.head+cmd, w.Decision, v.Decision, cmd)
			}
		}
		// Check reads a command as apserver runs it, /bin/bash -c '...',
		// the same as the command itself; a check piped into another
		// command is never conclusive without pipefail.
		c := s.Check(cmd, testCtx)
		if c < NoCheck || c > CheckConclusive {
			t.Fatalf("Check(%q) = %d", cmd, c)
		}
		if strings.Count(cmd, "-c") < 4 { // shells nested deeper than maxDepth are unknown
			if w := s.Check(shell.Script("/bin/bash", cmd), testCtx); w != c {
				t.Fatalf("Check(/bin/bash -c %q) = %v, but Check of the command alone = %v", cmd, w, c)
			}
		}
		if w := s.Check("{ "+cmd+"\n} | cat", testCtx); w == CheckConclusive && !strings.Contains(cmd, "pipefail") {
			t.Fatalf("Check({ %q; } | cat) = %v", cmd, w)
		}
	})
}
