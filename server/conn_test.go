package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

const testTimeout = 10 * time.Second

// testConn is a tiny editor: it writes lines to the server's input and
// reads the server's output lines.
type testConn struct {
	t     *testing.T
	s     *Server
	in    *io.PipeWriter
	lines chan string
	logs  *syncBuffer

	runOnce sync.Once
	runDone chan error
	runErr  error
}

// startServer starts a server with the test handlers registered; setup may
// register more.
func startServer(t *testing.T, opts Options, setup func(*Server)) *testConn {
	return startServerCtx(t, context.Background(), opts, setup)
}

func startServerCtx(t *testing.T, ctx context.Context, opts Options, setup func(*Server)) *testConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.ServerInfo == (ServerInfo{}) {
		opts.ServerInfo = ServerInfo{Name: "apserver", Version: "0.169.0", Home: "/home/u/.codex"}
	}
	s := New(inR, outW, opts)
	registerTestHandlers(s)
	if setup != nil {
		setup(s)
	}
	tc := &testConn{t: t, s: s, in: inW, lines: make(chan string, 1<<15), logs: logs, runDone: make(chan error, 1)}
	go func() { tc.runDone <- s.Run(ctx) }()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			tc.lines <- sc.Text()
		}
		close(tc.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		tc.wait()
		outW.Close()
		inR.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return tc
}

// wait returns Run's result.
func (c *testConn) wait() error {
	c.runOnce.Do(func() {
		select {
		case c.runErr = <-c.runDone:
		case <-time.After(testTimeout):
			c.runErr = errors.New("Run did not return")
		}
	})
	return c.runErr
}

func (c *testConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("send %s: %v", line, err)
	}
}

func (c *testConn) sendJSON(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(b))
}

// wireMsg is one output line.
type wireMsg struct {
	raw    string
	fields map[string]json.RawMessage

	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	EmittedAtMs *int64 `json:"emittedAtMs"`
}

func (c *testConn) recv() wireMsg {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("output closed")
		}
		m := wireMsg{raw: line}
		if err := json.Unmarshal([]byte(line), &m.fields); err != nil {
			c.t.Fatalf("output line %q: %v", line, err)
		}
		if _, ok := m.fields["jsonrpc"]; ok {
			c.t.Errorf("output line %s carries jsonrpc", line)
		}
		json.Unmarshal([]byte(line), &m)
		return m
	case <-time.After(testTimeout):
		c.t.Fatal("no output")
	}
	panic("unreachable")
}

// call sends a request and returns the next output line, which must answer it.
func (c *testConn) call(id any, method string, params any) wireMsg {
	c.t.Helper()
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	c.sendJSON(req)
	m := c.recv()
	wantID, _ := json.Marshal(id)
	if string(m.ID) != string(wantID) {
		c.t.Fatalf("after request %v: got %s, want the answer with id %s", req, m.raw, wantID)
	}
	return m
}

func (c *testConn) initialize(capabilities any) wireMsg {
	c.t.Helper()
	params := map[string]any{"clientInfo": map[string]any{"name": "vscode_test", "title": "VS Code", "version": "1.2.3"}}
	if capabilities != nil {
		params["capabilities"] = capabilities
	}
	m := c.call(0, "initialize", params)
	if m.Error != nil {
		c.t.Fatalf("initialize: %s", m.raw)
	}
	return m
}

// expectResult checks m is a success with the given result.
func expectResult(t *testing.T, m wireMsg, want string) {
	t.Helper()
	if m.Error != nil || string(m.Result) != want {
		t.Errorf("got %s, want result %s", m.raw, want)
	}
}

// expectError checks m is an error with the code and a message containing msg.
func expectError(t *testing.T, m wireMsg, code int64, msg string) {
	t.Helper()
	if m.Error == nil || m.Error.Code != code || !strings.Contains(m.Error.Message, msg) {
		t.Errorf("got %s, want error %d %q", m.raw, code, msg)
	}
}

// Test handlers.

type echoParams struct {
	Text  string `json:"text"`
	N     int    `json:"n"`
	Inner struct {
		Flag bool `json:"flag"`
	} `json:"inner"`
}

type nameParams struct {
	Name string `json:"name"`
}

func (p *nameParams) Validate() error {
	if p.Name == "" {
		return protocol.MissingField("name")
	}
	return nil
}

type plainValidate struct {
	X int `json:"x"`
}

func (p *plainValidate) Validate() error {
	if p.X < 0 {
		return errors.New("x must not be negative")
	}
	return nil
}

type failParams struct {
	Kind string `json:"kind"`
}

func registerTestHandlers(s *Server) {
	Handle(s, "test/echo", func(ctx context.Context, p echoParams, reply session.Reply) {
		reply(p, nil)
	})
	Handle(s, "test/name", func(ctx context.Context, p nameParams, reply session.Reply) {
		reply(p, nil)
	})
	Handle(s, "test/plain", func(ctx context.Context, p plainValidate, reply session.Reply) {
		reply(p, nil)
	})
	Handle(s, "test/fail", func(ctx context.Context, p failParams, reply session.Reply) {
		var err error
		switch p.Kind {
		case "params":
			err = fmt.Errorf("starting turn: %w", protocol.MissingField("input"))
		case "request":
			err = protocol.Errorf(protocol.ErrInvalidRequest, "thread not found: %s", "t1")
		case "wrapped":
			err = fmt.Errorf("no active turn to interrupt: %w", protocol.ErrInvalidRequest)
		case "notfound":
			err = protocol.Errorf(protocol.ErrMethodNotFound, "Method not found: x")
		case "overloaded":
			err = protocol.Errorf(protocol.ErrOverloaded, "Server overloaded; retry later.")
		case "badresult":
			reply(func() {}, nil)
			return
		case "panic":
			panic("boom")
		default:
			err = errors.New("disk on fire")
		}
		reply(nil, err)
	})
}

// Tests.

func TestBadInput(t *testing.T) {
	long := `{"id":1,"method":"test/echo","params":{"text":"` + strings.Repeat("x", 2000) + `"}}`
	tests := []struct {
		name string
		line string
		want string // the expected reply line; "" means no reply
	}{
		{"not json", `{"id":1,`, `{"id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}`},
		{"garbage", `Content-Length: 12`, `{"id":null,"error":{"code":-32700,"message":"Parse error: invalid character 'C' looking for beginning of value"}}`},
		{"array", `[1,2]`, `{"id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON object, got array"}}`},
		{"batch", `[{"id":1,"method":"test/echo"}]`, `{"id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON object, got array"}}`},
		{"number", `42`, `{"id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON object, got number"}}`},
		{"no method", `{"foo":1}`, `{"id":null,"error":{"code":-32600,"message":"Invalid request: expected a method, result or error"}}`},
		{"no method with id", `{"id":"k","foo":1}`, `{"id":"k","error":{"code":-32600,"message":"Invalid request: expected a method, result or error"}}`},
		{"method not a string", `{"id":4,"method":["a"]}`, `{"id":4,"error":{"code":-32600,"message":"Invalid request: method must be a string"}}`},
		{"bool id", `{"id":false,"method":"test/echo"}`, `{"id":null,"error":{"code":-32600,"message":"Invalid request: id must be a string or a 64-bit integer"}}`},
		{"id overflows int64", `{"id":18446744073709551615,"method":"test/echo"}`, `{"id":null,"error":{"code":-32600,"message":"Invalid request: id must be a string or a 64-bit integer"}}`},
		{"float id", `{"id":1.5,"method":"test/echo"}`, ""},
		{"null id", `{"id":null,"method":"test/echo"}`, ""},
		{"unknown response id", `{"id":77,"result":{}}`, ""},
		{"client error with null id", `{"id":null,"error":{"code":-32700,"message":"Parse error"}}`, ""},
		{"empty line", ``, ""},
		{"blank line", " \t \r", ""},
		{"over-long line", long, `{"id":null,"error":{"code":-32600,"message":"line exceeds 1024 bytes"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startServer(t, Options{MaxLineBytes: 1024}, nil)
			c.initialize(nil)
			c.send(tt.line)
			if tt.want != "" {
				if m := c.recv(); m.raw != tt.want {
					t.Errorf("after %.60s: got %s, want %s", tt.line, m.raw, tt.want)
				}
			}
			// The connection survives and serves the next request.
			expectResult(t, c.call(2, "test/echo", map[string]any{"text": "next"}), `{"text":"next","n":0,"inner":{"flag":false}}`)
		})
	}
}

func TestNotInitialized(t *testing.T) {
	called := make(chan string, 10)
	c := startServer(t, Options{}, func(s *Server) {
		HandleNotification(s, "test/note", func(json.RawMessage) { called <- "test/note" })
		HandleNotification(s, "initialized", func(json.RawMessage) { called <- "initialized" })
	})
	c.send(`{"method":"test/note"}`)
	c.send(`{"method":"initialized"}`)
	expectError(t, c.call(1, "test/echo", nil), -32600, "Not initialized")
	expectError(t, c.call(2, "no/such/method", nil), -32600, "Not initialized")
	select {
	case m := <-called:
		t.Errorf("notification %s handled before initialize", m)
	default:
	}
	c.initialize(nil)
	c.send(`{"method":"initialized"}`)
	c.send(`{"method":"test/note"}`)
	expectResult(t, c.call(3, "test/echo", nil), `{"text":"","n":0,"inner":{"flag":false}}`)
	for _, want := range []string{"initialized", "test/note"} {
		if got := <-called; got != want {
			t.Errorf("handled %s, want %s", got, want)
		}
	}
}

func TestInitialize(t *testing.T) {
	var got protocol.InitializeParams
	c := startServer(t, Options{}, func(s *Server) {
		s.OnInitialize(func(p protocol.InitializeParams) error {
			got = p
			return nil
		})
	})
	if name := c.s.ClientName(); name != "" {
		t.Errorf("ClientName before initialize = %q", name)
	}
	// Invalid initialize requests leave the connection uninitialized.
	bad := []struct {
		params any
		msg    string
		code   int64
	}{
		{map[string]any{}, "Invalid params: missing field `clientInfo`", -32602},
		{nil, "Invalid params: missing field `clientInfo`", -32602},
		{map[string]any{"clientInfo": map[string]any{"version": "1"}}, "Invalid params: missing field `clientInfo.name`", -32602},
		{map[string]any{"clientInfo": map[string]any{"name": "x"}}, "Invalid params: missing field `clientInfo.version`", -32602},
		{map[string]any{"clientInfo": map[string]any{"name": 5, "version": "1"}}, "Invalid params: invalid type for field `clientInfo.name`: expected string, got number", -32602},
		{"x", "Invalid params: expected an object, got string", -32602},
	}
	for i, b := range bad {
		m := c.call(100+i, "initialize", b.params)
		if m.Error == nil || m.Error.Code != b.code || m.Error.Message != b.msg {
			t.Errorf("initialize(%v) = %s, want %d %q", b.params, m.raw, b.code, b.msg)
		}
	}
	m := c.initialize(map[string]any{"experimentalApi": true, "optOutNotificationMethods": []string{"a/b"}})
	var res protocol.InitializeResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	wantUA := fmt.Sprintf("vscode_test/0.171.0 (%s; %s) apserver/0.169.0 (vscode_test; 1.2.3)", platformOS(), arch())
	if res.UserAgent != wantUA || res.CodexHome != "/home/u/.codex" || res.PlatformFamily != "unix" || res.PlatformOS != platformOS() {
		t.Errorf("initialize result = %s, want userAgent %q", m.Result, wantUA)
	}
	if runtime.GOOS == "linux" && res.PlatformOS != "linux" {
		t.Errorf("platformOs = %q", res.PlatformOS)
	}
	if got.ClientInfo == nil || got.ClientInfo.Name != "vscode_test" || got.Capabilities == nil || !got.Capabilities.ExperimentalAPI {
		t.Errorf("OnInitialize got %+v", got)
	}
	if name := c.s.ClientName(); name != "vscode_test" {
		t.Errorf("ClientName = %q, want vscode_test", name)
	}
	if p, ok := c.s.Initialized(); !ok || p.ClientInfo.Version != "1.2.3" {
		t.Errorf("Initialized() = %+v, %v", p, ok)
	}
	expectError(t, c.call(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "x", "version": "1"}}), -32600, "Already initialized")
}

func TestInitializeHookRejects(t *testing.T) {
	c := startServer(t, Options{}, func(s *Server) {
		s.OnInitialize(func(p protocol.InitializeParams) error {
			if p.ClientInfo.Name == "bad" {
				return protocol.Errorf(protocol.ErrInvalidRequest, "client %s not supported", p.ClientInfo.Name)
			}
			return nil
		})
	})
	expectError(t, c.call(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "bad", "version": "1"}}), -32600, "client bad not supported")
	expectError(t, c.call(2, "test/echo", nil), -32600, "Not initialized")
	c.initialize(nil)
}

func TestUnknownMethod(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	m := c.call(1, "thread/teleport", map[string]any{})
	if m.raw != `{"id":1,"error":{"code":-32601,"message":"Method not found: thread/teleport"}}` {
		t.Errorf("got %s", m.raw)
	}
}

func TestParams(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	tests := []struct {
		method string
		params string // raw; "-" means absent
		code   int64
		want   string // result, or error message
	}{
		{"test/echo", `{"text":"hi","n":3,"unknown":true}`, 0, `{"text":"hi","n":3,"inner":{"flag":false}}`},
		{"test/echo", `-`, 0, `{"text":"","n":0,"inner":{"flag":false}}`},
		{"test/echo", `null`, 0, `{"text":"","n":0,"inner":{"flag":false}}`},
		{"test/echo", `{"text":5}`, -32602, "Invalid params: invalid type for field `text`: expected string, got number"},
		{"test/echo", `{"n":"3"}`, -32602, "Invalid params: invalid type for field `n`: expected integer, got string"},
		{"test/echo", `{"n":1.5}`, -32602, "Invalid params: invalid type for field `n`: expected integer, got number 1.5"},
		{"test/echo", `{"inner":{"flag":"yes"}}`, -32602, "Invalid params: invalid type for field `inner.flag`: expected boolean, got string"},
		{"test/echo", `{"inner":[]}`, -32602, "Invalid params: invalid type for field `inner`: expected object, got array"},
		{"test/echo", `[1]`, -32602, "Invalid params: expected an object, got array"},
		{"test/echo", `"s"`, -32602, "Invalid params: expected an object, got string"},
		{"test/name", `{}`, -32602, "Invalid params: missing field `name`"},
		{"test/name", `{"name":"n"}`, 0, `{"name":"n"}`},
		{"test/plain", `{"x":-1}`, -32602, "Invalid params: x must not be negative"},
	}
	for i, tt := range tests {
		line := fmt.Sprintf(`{"id":%d,"method":%q,"params":%s}`, i, tt.method, tt.params)
		if tt.params == "-" {
			line = fmt.Sprintf(`{"id":%d,"method":%q}`, i, tt.method)
		}
		c.send(line)
		m := c.recv()
		if tt.code == 0 {
			if m.Error != nil || string(m.Result) != tt.want {
				t.Errorf("%s: got %s, want result %s", line, m.raw, tt.want)
			}
			continue
		}
		if m.Error == nil || m.Error.Code != tt.code || m.Error.Message != tt.want {
			t.Errorf("%s: got %s, want %d %q", line, m.raw, tt.code, tt.want)
		}
	}
}

func TestIDsEchoedWithType(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	for _, line := range []string{
		`{"id":"abc","method":"test/echo"}`,
		`{"id":"12","method":"test/echo"}`,
		`{"id":12,"method":"test/echo"}`,
		`{"id":-3,"method":"test/echo"}`,
		`{"id":9223372036854775807,"method":"test/echo"}`,
		`{"id":"","method":"test/echo"}`,
		`{"jsonrpc":"2.0","id":8,"method":"test/echo","trace":null,"whatever":{"a":1}}`,
	} {
		var req struct{ ID json.RawMessage }
		json.Unmarshal([]byte(line), &req)
		c.send(line)
		if m := c.recv(); string(m.ID) != string(req.ID) || m.Error != nil {
			t.Errorf("%s: got %s, want a result with id %s", line, m.raw, req.ID)
		}
	}
}

func TestDuplicateIDsBothAnswered(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	c.send(`{"id":5,"method":"test/echo","params":{"n":1}}`)
	c.send(`{"id":5,"method":"test/echo","params":{"n":2}}`)
	for _, n := range []string{`"n":1`, `"n":2`} {
		if m := c.recv(); string(m.ID) != "5" || !strings.Contains(string(m.Result), n) {
			t.Errorf("got %s, want id 5 with %s", m.raw, n)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	tests := []struct {
		kind string
		code int64
		msg  string
	}{
		{"params", -32602, "starting turn: Invalid params: missing field `input`"},
		{"request", -32600, "thread not found: t1"},
		{"wrapped", -32600, "no active turn to interrupt: invalid request"},
		{"notfound", -32601, "Method not found: x"},
		{"overloaded", -32001, "Server overloaded; retry later."},
		{"other", -32603, "disk on fire"},
		{"badresult", -32603, "internal error: encoding result: json: unsupported type: func()"},
		{"panic", -32603, "internal error handling test/fail"},
	}
	for i, tt := range tests {
		m := c.call(i, "test/fail", map[string]any{"kind": tt.kind})
		if m.Error == nil || m.Error.Code != tt.code || m.Error.Message != tt.msg {
			t.Errorf("reply(nil, %s error) = %s, want %d %q", tt.kind, m.raw, tt.code, tt.msg)
		}
	}
	if !strings.Contains(c.logs.String(), "bug: request handler panicked") {
		t.Errorf("handler panic not logged")
	}
}

func TestNotificationShape(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	before := time.Now().UnixMilli()
	c.s.Client().Notify("thread/started", map[string]any{"thread": map[string]string{"id": "t1"}})
	c.s.Client().Notify("thread/closed", nil)
	m := c.recv()
	if m.Method != "thread/started" || string(m.Params) != `{"thread":{"id":"t1"}}` || m.EmittedAtMs == nil || *m.EmittedAtMs < before {
		t.Errorf("notification = %s", m.raw)
	}
	if _, ok := m.fields["id"]; ok {
		t.Errorf("notification %s has an id", m.raw)
	}
	if m := c.recv(); !strings.HasPrefix(m.raw, `{"method":"thread/closed","emittedAtMs":`) {
		t.Errorf("notification without params = %s", m.raw)
	}
}

func TestOrderOfRepliesAndNotifications(t *testing.T) {
	const n = 10000
	c := startServer(t, Options{}, func(s *Server) {
		client := s.Client()
		Handle(s, "test/burst", func(ctx context.Context, p struct{}, reply session.Reply) {
			go func() {
				client.Notify("test/before", nil)
				reply(map[string]string{"status": "started"}, nil)
				for i := range n {
					client.Notify("test/seq", i)
				}
				client.Notify("test/after", nil)
			}()
		})
	})
	c.initialize(nil)
	c.send(`{"id":"b","method":"test/burst"}`)
	if m := c.recv(); m.Method != "test/before" {
		t.Fatalf("first = %s, want test/before", m.raw)
	}
	if m := c.recv(); string(m.ID) != `"b"` {
		t.Fatalf("second = %s, want the response", m.raw)
	}
	for i := range n {
		m := c.recv()
		if m.Method != "test/seq" || string(m.Params) != fmt.Sprint(i) {
			t.Fatalf("notification %d = %s", i, m.raw)
		}
	}
	if m := c.recv(); m.Method != "test/after" {
		t.Fatalf("last = %s, want test/after", m.raw)
	}
}

func TestOptOut(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(map[string]any{"optOutNotificationMethods": []string{"item/agentMessage/delta", "no/such"}})
	cl := c.s.Client()
	cl.Notify("item/agentMessage/delta", map[string]string{"delta": "x"})
	cl.Notify("item/agentMessage/delta/x", nil) // names match exactly
	cl.Notify("item/completed", nil)
	for _, want := range []string{"item/agentMessage/delta/x", "item/completed"} {
		if m := c.recv(); m.Method != want {
			t.Errorf("got %s, want %s", m.raw, want)
		}
	}
}

func TestCall(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	cl := c.s.Client()
	call0 := cl.Call("item/commandExecution/requestApproval", map[string]any{"itemId": "i1"})
	call1 := cl.Call("item/fileChange/requestApproval", nil)
	if call0.ID() != 0 || call1.ID() != 1 {
		t.Fatalf("ids = %d, %d; want 0, 1", call0.ID(), call1.ID())
	}
	m0, m1 := c.recv(), c.recv()
	if m0.raw != `{"id":0,"method":"item/commandExecution/requestApproval","params":{"itemId":"i1"}}` {
		t.Errorf("request 0 = %s", m0.raw)
	}
	if m1.raw != `{"id":1,"method":"item/fileChange/requestApproval"}` {
		t.Errorf("request 1 = %s", m1.raw)
	}

	// Answers may come in any order; a client id of the same value does
	// not collide with server ids.
	c.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"user closed the panel"}}`)
	c.send(`{"id":0,"result":{"decision":"accept"}}`)
	expectResult(t, c.call(0, "test/echo", nil), `{"text":"","n":0,"inner":{"flag":false}}`)

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := call0.Wait(ctx)
	if err != nil || string(res) != `{"decision":"accept"}` {
		t.Errorf("call0.Wait = %s, %v", res, err)
	}
	_, err = call1.Wait(ctx)
	var rpcErr *protocol.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32000 || rpcErr.Message != "user closed the panel" {
		t.Errorf("call1.Wait error = %v, want RPCError -32000", err)
	}

	// A second answer to id 0 is unknown by now: logged and dropped.
	c.send(`{"id":0,"result":{}}`)
	call2 := cl.Call("x", nil)
	if call2.ID() != 2 {
		t.Errorf("third call id = %d, want 2", call2.ID())
	}
	c.recv()
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if _, err := call2.Wait(short); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait(canceled ctx) = %v", err)
	}

	// The input ends with call2 unanswered: it fails, and later calls fail.
	c.in.Close()
	if err := c.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if _, err := call2.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("pending call after EOF: %v, want ErrClosed", err)
	}
	if _, err := cl.Call("y", nil).Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Run: %v, want ErrClosed", err)
	}
	if !strings.Contains(c.logs.String(), "response to unknown request dropped") {
		t.Errorf("unknown response not logged:\n%s", c.logs.String())
	}
}

func TestCancelRequest(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	c := startServer(t, Options{}, func(s *Server) {
		Handle(s, "test/block", func(ctx context.Context, p struct{}, reply session.Reply) {
			ctxs <- ctx
			go func() {
				<-ctx.Done()
				reply(nil, fmt.Errorf("blocked call: %w", ctx.Err()))
			}()
		})
	})
	c.initialize(nil)
	c.send(`{"id":"r1","method":"test/block"}`)
	hctx := <-ctxs
	if hctx.Err() != nil {
		t.Fatalf("handler ctx done before cancel: %v", hctx.Err())
	}
	c.send(`{"method":"$/cancelRequest","params":{"id":"other"}}`)
	c.send(`{"method":"$/cancelRequest","params":{"id":"r1"}}`)
	m := c.recv()
	expectError(t, m, -32603, "blocked call: context canceled")
	if string(m.ID) != `"r1"` {
		t.Errorf("reply id = %s", m.ID)
	}
	// Cancelling an answered request does nothing; the reply went out once.
	c.send(`{"method":"$/cancelRequest","params":{"id":"r1"}}`)
	expectResult(t, c.call(3, "test/echo", nil), `{"text":"","n":0,"inner":{"flag":false}}`)

	// The request form is accepted too.
	c.send(`{"id":9,"method":"test/block"}`)
	<-ctxs
	c.sendJSON(map[string]any{"id": 10, "method": "$/cancelRequest", "params": map[string]any{"id": 9}})
	// The canceled request's answer and the cancel's own may come in either order.
	for range 2 {
		switch m := c.recv(); string(m.ID) {
		case "10":
			expectResult(t, m, `{}`)
		case "9":
			expectError(t, m, -32603, "context canceled")
		default:
			t.Errorf("unexpected %s", m.raw)
		}
	}
}

func TestReplyTwiceIsABug(t *testing.T) {
	c := startServer(t, Options{}, func(s *Server) {
		Handle(s, "test/twice", func(ctx context.Context, p struct{}, reply session.Reply) {
			reply(1, nil)
			reply(2, nil)
		})
	})
	c.initialize(nil)
	expectResult(t, c.call(1, "test/twice", nil), `1`)
	expectResult(t, c.call(2, "test/echo", nil), `{"text":"","n":0,"inner":{"flag":false}}`)
	if !strings.Contains(c.logs.String(), "bug: request answered twice") {
		t.Errorf("second reply not reported")
	}
}

func TestEOFEndsRun(t *testing.T) {
	c := startServer(t, Options{}, nil)
	c.initialize(nil)
	// Output queued before the end of input is still written.
	c.send(`{"id":1,"method":"test/echo","params":{"text":"last"}}`)
	c.s.Client().Notify("test/bye", nil)
	c.in.Close()
	if err := c.wait(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	got := []string{}
	for range 2 {
		m := c.recv()
		got = append(got, m.Method+string(m.ID))
	}
	if strings.Join(got, ",") != "test/bye,1" && strings.Join(got, ",") != "1,test/bye" {
		t.Errorf("after EOF got %v", got)
	}
	c.s.Client().Notify("test/late", nil) // dropped, no panic
}

func TestContextEndsRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ctxs := make(chan context.Context, 1)
	c := startServerCtx(t, ctx, Options{}, func(s *Server) {
		Handle(s, "test/block", func(ctx context.Context, p struct{}, reply session.Reply) {
			ctxs <- ctx
		})
	})
	c.initialize(nil)
	c.send(`{"id":1,"method":"test/block"}`)
	hctx := <-ctxs
	cancel()
	if err := c.wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	select {
	case <-hctx.Done():
	case <-time.After(testTimeout):
		t.Errorf("handler ctx not canceled when Run returned")
	}
}

func TestWriteErrorEndsRun(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	boom := errors.New("broken pipe")
	s := New(inR, &countingWriter{err: boom}, Options{Logger: discardLogger()})
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	go io.WriteString(inW, `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}`+"\n")
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Errorf("Run = %v, want %v", err, boom)
		}
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after a write error")
	}
}

func TestTrace(t *testing.T) {
	c := startServer(t, Options{Trace: true}, nil)
	c.initialize(nil)
	c.in.Close()
	c.wait()
	logs := c.logs.String()
	for _, want := range []string{`msg=recv line="{\"id\":0,\"method\":\"initialize\"`, `msg=send line="{\"id\":0,\"result\":`} {
		if !strings.Contains(logs, want) {
			t.Errorf("trace log lacks %s:\n%s", want, logs)
		}
	}
}

func TestRegisterPanics(t *testing.T) {
	s := New(strings.NewReader(""), io.Discard, Options{Logger: discardLogger()})
	Handle(s, "a", func(context.Context, struct{}, session.Reply) {})
	for name, f := range map[string]func(){
		"duplicate":  func() { Handle(s, "a", func(context.Context, struct{}, session.Reply) {}) },
		"initialize": func() { Handle(s, "initialize", func(context.Context, struct{}, session.Reply) {}) },
		"cancel":     func() { HandleNotification(s, "$/cancelRequest", func(json.RawMessage) {}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	if err := s.Run(context.Background()); err != nil {
		t.Errorf("Run on empty input = %v", err)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Errorf("second Run: no error")
	}
}
