package rules

import (
	"testing"
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
		if w := s.Evaluate(cmd, testCtx); w.Decision != v.Decision || w.Reason != v.Reason {
			t.Fatalf("Evaluate(%q) is not deterministic: %v then %v", cmd, v, w)
		}
	})
}
