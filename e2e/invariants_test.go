package e2e

import (
	"strings"
	"testing"
)

// checkItemsClosed checks, over a whole transcript, that every item a
// turn started got its item/completed before the turn's turn/completed,
// and that a completed agentMessage holds exactly the text of its deltas.
//
// Turns that ended "interrupted" are exempt: there Codex leaves the items
// in flight unfinished (CORE.md §6) and apserver does the same. So does a
// steer that preempts a stream, which this check does not know about: do
// not use it on such transcripts. A failed turn has no excuse: whatever it
// started, it completes, with what it had.
func checkItemsClosed(t *testing.T, msgs []*message) {
	t.Helper()
	type key struct{ turn, item string }
	started := map[key]*message{}
	var order []key
	completed := map[key]*message{}
	deltas := map[key]*strings.Builder{}
	turnDone := map[string]*message{}
	for _, m := range msgs {
		switch m.Method {
		case "item/started":
			k := key{m.str("turnId"), m.str("item.id")}
			started[k] = m
			order = append(order, k)
		case "item/completed":
			completed[key{m.str("turnId"), m.str("item.id")}] = m
		case "item/agentMessage/delta":
			k := key{m.str("turnId"), m.str("itemId")}
			if deltas[k] == nil {
				deltas[k] = &strings.Builder{}
			}
			deltas[k].WriteString(m.str("delta"))
		case "turn/completed":
			turnDone[m.str("turn.id")] = m
		}
	}
	for _, k := range order {
		s := started[k]
		done := turnDone[k.turn]
		if done == nil || done.str("turn.status") == "interrupted" {
			continue
		}
		c := completed[k]
		if c == nil {
			t.Errorf("item %s (%s, #%d) of turn %s (%s) never got item/completed", k.item, s.str("item.type"), s.Seq, k.turn, done.str("turn.status"))
			continue
		}
		if c.Seq > done.Seq {
			t.Errorf("item/completed #%d of item %s after its turn/completed #%d", c.Seq, k.item, done.Seq)
		}
		if d := deltas[k]; d != nil && c.str("item.type") == "agentMessage" && c.str("item.text") != d.String() {
			t.Errorf("completed agentMessage %s holds %d bytes of text; its deltas %d", k.item, len(c.str("item.text")), d.Len())
		}
	}
}
