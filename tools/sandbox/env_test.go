package sandbox_test

import (
	"slices"
	"testing"

	"github.com/apserver/apserver/tools/sandbox"
)

// TestPassEnv: a variable named like a secret is scrubbed unless the user
// passes it on; one HideEnv names (a key of apserver's) is scrubbed even
// when passed, whichever was registered first. Names are the test's own:
// the registry is the process's.
func TestPassEnv(t *testing.T) {
	const (
		registry = "APSERVER_TEST_PASS_NPM_TOKEN"
		other    = "APSERVER_TEST_OTHER_TOKEN"
		before   = "APSERVER_TEST_HIDDEN_BEFORE_KEY"
		after    = "APSERVER_TEST_HIDDEN_AFTER"
		plain    = "APSERVER_TEST_PLAIN"
	)
	for _, n := range []string{registry, other, before} {
		if !sandbox.SecretEnv(n) {
			t.Errorf("%s is no secret before PassEnv", n)
		}
	}
	sandbox.HideEnv(before)
	sandbox.PassEnv(registry, before, after, "")
	sandbox.HideEnv(after)
	want := map[string]bool{registry: false, other: true, before: true, after: true, plain: false}
	for n, secret := range want {
		if got := sandbox.SecretEnv(n); got != secret {
			t.Errorf("SecretEnv(%s) = %v, want %v", n, got, secret)
		}
	}
	env := []string{registry + "=r", other + "=o", before + "=b", after + "=a", plain + "=p"}
	if got := sandbox.ScrubEnv(env); !slices.Equal(got, []string{registry + "=r", plain + "=p"}) {
		t.Errorf("ScrubEnv = %q", got)
	}
}
