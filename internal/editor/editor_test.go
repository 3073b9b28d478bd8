package editor

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEditor: against a fake server over pipes, a request gets its
// response (not an earlier one with another id), server requests are
// answered, lines that are not JSON objects or carry "jsonrpc" are
// reported, and waiting ends with ErrClosed when the output ends.
func TestEditor(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var mu sync.Mutex
	var problems []string
	e := New(inW, outR, Options{Problem: func(err error) {
		mu.Lock()
		problems = append(problems, err.Error())
		mu.Unlock()
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(inR)
		sc.Scan() // the request, id 1
		got <- sc.Text()
		io.WriteString(outW, `{"id":7,"result":{"other":true}}`+"\n")
		io.WriteString(outW, "not json\n")
		io.WriteString(outW, `{"jsonrpc":"2.0","method":"note","params":{"n":1}}`+"\n")
		io.WriteString(outW, `{"id":0,"method":"ask","params":{"q":"why"}}`+"\n")
		io.WriteString(outW, `{"id":1,"result":{"turn":{"id":"t1","items":[{"text":"hi"}]}}}`+"\n")
		sc.Scan() // the answer to "ask"
		got <- sc.Text()
		outW.Close()
	}()

	r, err := e.Call(ctx, "turn/start", map[string]any{"threadId": "th"})
	if err != nil {
		t.Fatal(err)
	}
	if sent := <-got; sent != `{"id":1,"method":"turn/start","params":{"threadId":"th"}}` {
		t.Errorf("sent %s", sent)
	}
	if r.ReqMethod != "turn/start" || r.Str("turn.id") != "t1" || r.Get("turn.items.0.text") != "hi" || r.Get("turn.items.1") != nil {
		t.Errorf("response = %s (%q)", r, r.ReqMethod)
	}
	ask, err := e.WaitFor(ctx, nil, "ask", nil)
	if err != nil || !ask.IsRequest() || ask.Str("q") != "why" {
		t.Fatalf("server request = %v, %v", ask, err)
	}
	if err := e.Answer(ask, map[string]any{"because": 1}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a != `{"id":0,"result":{"because":1}}` {
		t.Errorf("answer sent %s", a)
	}
	if n := len(e.Find("note", nil)); n != 1 {
		t.Errorf("%d note notifications, want 1", n)
	}
	if _, err := e.WaitFor(ctx, nil, "never", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("waiting past the end = %v, want ErrClosed", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) != 2 || !strings.Contains(problems[0], "not a JSON object") || !strings.Contains(problems[1], "jsonrpc") {
		t.Errorf("problems = %q, want the non-JSON line and the jsonrpc field", problems)
	}
}
