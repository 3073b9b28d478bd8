package e2e

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// agentText is the text of the only agentMessage among a thread's turns
// (a thread/read or thread/resume result), or "" when there is none.
func agentText(t *testing.T, m *message) string {
	t.Helper()
	turns, _ := m.get("thread.turns").([]any)
	var texts []string
	for _, tu := range turns {
		items, _ := jget(tu, "items").([]any)
		for _, it := range items {
			if jget(it, "type") == "agentMessage" {
				s, _ := jget(it, "text").(string)
				texts = append(texts, s)
			}
		}
	}
	if len(texts) != 1 {
		t.Fatalf("%d agentMessages in %d turns, want 1", len(texts), len(turns))
	}
	return texts[0]
}

// TestHugeAnswerSideFile: an answer cut at a 5 MiB cap is stored in a side
// file beside the database (items/<hex thread id>/), and the real binary
// gives it back whole through thread/read, thread/fork, and after a
// kill -9, thread/resume; thread/delete removes a thread's side files and
// leaves its fork's.
func TestHugeAnswerSideFile(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Steps: []scripted.Step{{Endless: true, DeltaText: strings.Repeat("é<x>", 256)}}})
	dataDir := t.TempDir()
	args := capConfig(t, "response_max_output_bytes = 5242880", "turn_max_output_bytes = 0")
	c := newClient(t, model, options{dataDir: dataDir, args: args})
	c.wait = 2 * time.Minute
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "talk forever")
	c.turnDone(turnID)
	done := c.find("item/completed", itemOfType(turnID, "agentMessage"))
	if len(done) != 1 {
		t.Fatalf("%d completed agentMessages, want 1", len(done))
	}
	want := done[0].str("item.text")
	if len(want) < 5<<20 {
		t.Fatalf("answer of %d bytes, want the 5 MiB cap", len(want))
	}
	sideDir := func(id string) string { return filepath.Join(dataDir, "items", hex.EncodeToString([]byte(id))) }
	files, err := os.ReadDir(sideDir(threadID))
	if err != nil || len(files) != 1 || !strings.HasSuffix(files[0].Name(), ".item") {
		t.Fatalf("side files of the thread: %v, %v; want one item", files, err)
	}
	check := func(what string, got string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: text of %d bytes, want the %d streamed", what, len(got), len(want))
		}
	}
	check("thread/read", agentText(t, c.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})))
	fork := c.call("thread/fork", map[string]any{"threadId": threadID}).str("thread.id")
	check("thread/read of the fork", agentText(t, c.call("thread/read", map[string]any{"threadId": fork, "includeTurns": true})))
	c.kill()

	c2 := newClient(t, model, options{dataDir: dataDir, args: args})
	c2.wait = 2 * time.Minute
	check("thread/resume after kill -9", agentText(t, c2.call("thread/resume", map[string]any{"threadId": threadID})))
	c2.call("thread/delete", map[string]any{"threadId": threadID})
	if _, err := os.Stat(sideDir(threadID)); !os.IsNotExist(err) {
		t.Errorf("the deleted thread's side files remain: %v", err)
	}
	check("thread/read of the fork after its source's deletion",
		agentText(t, c2.call("thread/read", map[string]any{"threadId": fork, "includeTurns": true})))
	c2.call("thread/delete", map[string]any{"threadId": fork})
	if _, err := os.Stat(sideDir(fork)); !os.IsNotExist(err) {
		t.Errorf("the deleted fork's side files remain: %v", err)
	}
}
