package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// PolicyHash identifies the policy a decision was made under: the sha256
// hex of PolicyVersion, a newline and the JSON of c.WithDefaults(). The
// JSON of a struct is canonical (fixed field order, shortest float form).
func PolicyHash(c Config) string {
	c = c.WithDefaults()
	b, err := json.Marshal(c)
	if err != nil { // only a NaN or infinite float gets here
		b = fmt.Appendf(nil, "%#v", c)
	}
	sum := sha256.Sum256(append([]byte(PolicyVersion+"\n"), b...))
	return hex.EncodeToString(sum[:])
}

// Replay re-runs Decide on r.Input. same reports whether today's policy
// agrees with the receipt on Action, StopCondition, Rule and NextInput; it
// is false, with the hashes in got.Reason, when the receipt was made under
// another policy (another PolicyVersion or Config).
func Replay(r Receipt) (got Decision, same bool) {
	got = Decide(r.Input)
	if h := PolicyHash(r.Input.Config); h != r.PolicyHash {
		got.Reason = fmt.Sprintf("policy changed: receipt made under %s, now %s (policy version %s); %s",
			r.PolicyHash, h, PolicyVersion, got.Reason)
		return got, false
	}
	want := r.Output
	same = got.Action == want.Action && got.StopCondition == want.StopCondition &&
		got.Rule == want.Rule && got.NextInput == want.NextInput
	return got, same
}
