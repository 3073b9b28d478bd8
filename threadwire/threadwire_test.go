package threadwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestStreamedTurnsEncodeAsBefore stores a thread with every item type,
// turns of every status (one without items, one failed with an error) and
// stored items that encoding/json has to compact, then checks that the
// streamed answer of thread/read and thread/resume is byte for byte the
// encoding of the same result built in memory (LoadTurns, as before), with
// the turns in memory and spilled to a file.
func TestStreamedTurnsEncodeAsBefore(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const id = "thread-1"
	if err := db.CreateThread(ctx, store.Thread{ID: id, Cwd: "/w", Model: "m", Preview: `a "turns":[] <preview>`, CreatedAt: 1000, UpdatedAt: 2000}); err != nil {
		t.Fatal(err)
	}
	ok, exit, dur := true, 0, int64(5)
	out := "out\u2028put <&>"
	items := []protocol.ThreadItem{
		protocol.UserMessageItem{ID: "u1", Content: []protocol.UserInput{protocol.TextInput("hi <b> & \"q\"")}},
		protocol.AgentMessageItem{ID: "a1", Text: "line\nline \\ \u2029"},
		protocol.ReasoningItem{ID: "r1", Summary: []string{"s"}, Content: []string{}},
		protocol.PlanItem{ID: "p1", Text: "plan"},
		protocol.CommandExecutionItem{ID: "c1", Command: "ls", Cwd: "/w", Status: protocol.ItemCompleted, CommandActions: []protocol.CommandAction{{Type: "listFiles", Command: "ls"}}, AggregatedOutput: &out, ExitCode: &exit, DurationMs: &dur},
		protocol.FileChangeItem{ID: "f1", Changes: []protocol.FileUpdateChange{{Path: "a.go", Kind: protocol.PatchChangeKind{Type: "update"}, Diff: "@@ -1 +1 @@\n-a\n+b\n"}}, Status: protocol.ItemCompleted},
		protocol.DynamicToolCallItem{ID: "d1", Tool: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`), Status: protocol.ItemCompleted, Success: &ok, ContentItems: []protocol.DynamicToolCallContent{{Type: "inputText", Text: "x"}}},
		protocol.ContextCompactionItem{ID: "k1"},
	}
	add := func(turn, itemID, typ string, raw []byte) {
		t.Helper()
		if _, err := db.AppendItem(ctx, store.Item{ThreadID: id, TurnID: turn, ID: itemID, Type: typ, Item: raw, CompletedAt: 3000}); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(turnID, status string, terr json.RawMessage) {
		t.Helper()
		if _, err := db.StartTurn(ctx, store.Turn{ThreadID: id, ID: turnID, StartedAt: 2500}); err != nil {
			t.Fatal(err)
		}
		if status != store.StatusInProgress {
			if err := db.FinishTurn(ctx, store.Turn{ThreadID: id, ID: turnID, Status: status, Error: terr, CompletedAt: 4500, DurationMs: 2000}); err != nil {
				t.Fatal(err)
			}
		}
	}
	turn("t1", store.StatusCompleted, nil)
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		add("t1", it.ItemID(), it.ItemType(), b)
	}
	turn("t2", store.StatusInterrupted, nil) // no items
	turn("t3", store.StatusFailed, json.RawMessage(`{"message":"boom <x>","codexErrorInfo":null}`))
	// Stored as a client might never send it: whitespace to compact, an
	// unknown type, HTML characters and escapes left as they are.
	add("t3", "x1", "futureItem", []byte("{ \"type\" : \"futureItem\",\n\t\"id\":\"x1\", \"v\": [1, 2, {\"s\":\"a \\\" } b\"}] }"))
	add("t3", "x2", "agentMessage", []byte(`{"type":"agentMessage","id":"x2","text":"\u003c&\\n","phase":null}`))
	turn("t4", store.StatusInProgress, nil)
	add("t4", "x3", "agentMessage", []byte(`{"type":"agentMessage","id":"x3","text":"partial","phase":null}`))

	meta, err := db.GetThread(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	th := Thread(meta, protocol.ThreadStatus{Type: protocol.StatusIdle}, "")
	model := "m"
	results := map[string]any{
		"thread/read":   protocol.ThreadResult{Thread: th},
		"thread/resume": protocol.ThreadResumeResult{ThreadSessionResult: protocol.ThreadSessionResult{Thread: th, Model: model, Cwd: "/w", InstructionSources: []string{}}},
		"thread/fork":   protocol.ThreadSessionResult{Thread: th, Model: model, Cwd: "/w <&>"},
	}
	turns, err := LoadTurns(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, spill := range []int{1 << 20, 64} {
		spillInMemory = spill
		for name, res := range results {
			want := encodeCompact(t, withThread(res, func() protocol.Thread { x := th; x.Turns = turns; return x }()))
			got, err := Stream(ctx, db, t.TempDir(), res)
			if err != nil {
				t.Fatalf("%s: Stream: %v", name, err)
			}
			sr, ok := got.(*StreamedResult)
			if !ok {
				t.Fatalf("%s: Stream = %T, want *StreamedResult", name, got)
			}
			if (sr.file != nil) != (spill == 64) {
				t.Errorf("%s: spill %d bytes: in a file = %v", name, spill, sr.file != nil)
			}
			var b bytes.Buffer
			b.Write(sr.Head())
			if err := sr.WriteBody(&b); err != nil {
				t.Fatal(err)
			}
			b.Write(sr.Tail())
			sr.Release()
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s (spill at %d): streamed\n%s\nwant (in memory)\n%s", name, spill, b.Bytes(), want)
			}
			if int64(b.Len()) != sr.Len() {
				t.Errorf("%s: Len() = %d, wrote %d", name, sr.Len(), b.Len())
			}
		}
	}
	spillInMemory = 1 << 20

	// An item appended to an earlier turn after a later one's (not written
	// by apserver): the answer is built in memory, the same as before.
	add("t1", "late", "agentMessage", []byte(`{"type":"agentMessage","id":"late","text":"late","phase":null}`))
	turns, err = LoadTurns(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	res := protocol.ThreadResult{Thread: th}
	got, err := Stream(ctx, db, t.TempDir(), res)
	if err != nil {
		t.Fatal(err)
	}
	res.Thread.Turns = turns
	if g, w := encodeCompact(t, got), encodeCompact(t, res); !bytes.Equal(g, w) {
		t.Errorf("items out of order: got\n%s\nwant\n%s", g, w)
	}

	if _, err := Stream(ctx, db, t.TempDir(), protocol.ThreadResult{Thread: protocol.Thread{ID: "nope"}}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stream of a missing thread: err = %v, want ErrNotFound", err)
	}
}

// encodeCompact encodes v as the server does (encoding/json, HTML
// characters not escaped).
func encodeCompact(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// TestCompactJSONAgreesWithCompact: the quick scan says "as is" exactly
// when json.Compact would leave the bytes unchanged, on values whose
// strings hold escaped quotes, backslashes before quotes, brackets and
// whitespace, compact and indented.
func TestCompactJSONAgreesWithCompact(t *testing.T) {
	strs := []string{"", `a"b`, `a\`, `\"`, `\\"`, "x y", "{[", "]}", "tab\there", "line\nnext", `"{ }"`, "é ü \u2028"}
	var vals []any
	for i, s := range strs {
		vals = append(vals, map[string]any{"type": "commandExecution", "output": s, "n": i, "list": []any{s, map[string]any{"k": s}}})
	}
	for _, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", " "); err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{b, ind.Bytes(), append(append([]byte{}, b...), ' '), append([]byte(" "), b...)} {
			var c bytes.Buffer
			if err := json.Compact(&c, in); err != nil {
				t.Fatal(err)
			}
			if want := bytes.Equal(c.Bytes(), in); compactJSON(in) != want {
				t.Errorf("compactJSON(%s) = %v, want %v", in, !want, want)
			}
		}
	}
}

// TestCompactJSONManyEscapes: a stored item whose long string is mostly
// escapes (a 4 MiB answer of '<', each stored as \u003c) is scanned once:
// searching to the string's closing quote again at every escape made
// thread/read of such an item spin for hours (without the fix this test
// does not finish).
func TestCompactJSONManyEscapes(t *testing.T) {
	b, err := json.Marshal(map[string]string{"type": "agentMessage", "text": strings.Repeat("<", 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	if !compactJSON(b) {
		t.Errorf("compactJSON of a compact item of escapes = false")
	}
	if compactJSON(append(b[:len(b)-1:len(b)-1], ' ', '}')) {
		t.Errorf("compactJSON with a space after the long string = true")
	}
}
