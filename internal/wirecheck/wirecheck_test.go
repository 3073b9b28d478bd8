package wirecheck

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/apserver/apserver/protocol/codex"
)

var (
	sharedOnce sync.Once
	sharedV    *Validator
	sharedErr  error
)

// validator returns one Validator shared by the tests, so each schema is
// compiled once per test binary.
func validator(t *testing.T) *Validator {
	t.Helper()
	sharedOnce.Do(func() { sharedV, sharedErr = Default() })
	if sharedErr != nil {
		t.Fatalf("loading the vendored schemas: %v", sharedErr)
	}
	return sharedV
}

// transcriptsDir holds real Codex 0.169.0 output recorded by peerbench.
const transcriptsDir = "testdata/codex-transcripts"

func TestCodexTranscriptsPass(t *testing.T) {
	v := validator(t)
	dir := transcriptsDir
	for _, name := range []string{"codex-tool.jsonl", "codex-approval.jsonl"} {
		t.Run(name, func(t *testing.T) {
			tr := v.NewTranscript()
			tr.RequireEmittedAtMs = true
			if err := tr.CheckFile(filepath.Join(dir, name)); err != nil {
				t.Fatalf("real Codex output fails:\n%v", err)
			}
			if u := tr.Unknown(); len(u) > 0 {
				t.Errorf("Unknown() = %v, want none for Codex output", u)
			}
			if p := tr.Unanswered(); len(p) > 0 {
				t.Errorf("Unanswered() = %v, want none", p)
			}
		})
	}
	// The other stored transcripts are real Codex output too.
	all, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range all {
		if err := v.CheckFile(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// primed returns a transcript that has seen a few client requests.
func primed(v *Validator) *Transcript {
	tr := v.NewTranscript()
	for _, l := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"t","version":"1"}}}`,
		`{"method":"initialized"}`,
		`{"id":2,"method":"thread/start","params":{}}`,
		`{"id":"3","method":"turn/start","params":{"threadId":"th","input":[]}}`,
		`{"id":4,"method":"policy/explain","params":{}}`,
		`{"id":5,"method":"thread/list","params":{}}`,
	} {
		tr.Client([]byte(l))
	}
	return tr
}

func TestServerLines(t *testing.T) {
	v := validator(t)
	cases := []struct {
		name string
		line string
		want []string // substrings of the error; nil means the line must pass
	}{
		{"notification ok", `{"method":"thread/status/changed","params":{"threadId":"th","status":{"type":"idle"}},"emittedAtMs":1}`, nil},
		{"unknown notification", `{"method":"fullAuto/status","params":{"x":1}}`,
			[]string{`notification "fullAuto/status"`, "neither Codex's schema"}},
		{"extension notification ok", `{"method":"attention","params":{"count":0,"oldestSinceMs":null,"items":[]},"emittedAtMs":1}`, nil},
		{"extension notification bad enum",
			`{"method":"fullAuto/statusChanged","params":{"threadId":"th","state":"sleeping","reason":null,"run":{}}}`,
			[]string{`"fullAuto/statusChanged"`, "/params/state", `got "sleeping"`}},
		{"extension notification undocumented field",
			`{"method":"attention","params":{"count":0,"oldestSinceMs":null,"items":[],"extra":1}}`,
			[]string{`"attention"`, "/params", "additional properties 'extra'"}},
		{"jsonrpc tolerated", `{"jsonrpc":"2.0","method":"warning","params":{"message":"m"}}`, nil},
		{"turn/started missing turn.id",
			`{"method":"turn/started","params":{"threadId":"th","turn":{"items":[],"status":"inProgress"}},"emittedAtMs":1}`,
			[]string{"line 7", `notification "turn/started"`, "/params/turn", "missing property 'id'"}},
		{"turn/completed wrong status enum",
			`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"t","items":[],"status":"done"}}}`,
			[]string{`"turn/completed"`, "/params/turn/status", "'completed'", `got "done"`}},
		{"thread status wrong discriminator",
			`{"method":"thread/status/changed","params":{"threadId":"th","status":{"type":"busy"}}}`,
			[]string{"/params/status/type", "'idle'", `got "busy"`}},
		{"item variant missing field",
			`{"method":"item/completed","params":{"threadId":"th","turnId":"t","completedAtMs":1,"item":{"type":"agentMessage","id":"i"}}}`,
			[]string{`"item/completed"`, "/params/item", "missing property 'text'"}},
		{"int32 overflow",
			`{"method":"item/completed","params":{"threadId":"th","turnId":"t","completedAtMs":1,"item":{"type":"commandExecution","id":"i","command":"ls","cwd":"/","status":"completed","commandActions":[],"exitCode":5000000000}}}`,
			[]string{"/params/item/exitCode", "int32"}},
		{"notification missing params",
			`{"method":"turn/started"}`,
			[]string{`"turn/started"`, "missing property 'params'"}},
		{"bad emittedAtMs", `{"method":"warning","params":{"message":"m"},"emittedAtMs":"now"}`,
			[]string{`"warning"`, "emittedAtMs"}},
		{"initialize response missing field",
			`{"id":1,"result":{"userAgent":"a","codexHome":"/h","platformFamily":"unix"}}`,
			[]string{`response to "initialize" (id 1)`, "InitializeResponse", "/result", "platformOs"}},
		{"thread/start response wrong shape",
			`{"id":2,"result":{"thread":"th-1"}}`,
			[]string{`response to "thread/start"`, "ThreadStartResponse", "/result/thread", "want object", "missing properties"}},
		{"turn/start response, string id",
			`{"id":"3","result":{"turn":{"id":"t","items":[],"status":"running"}}}`,
			[]string{`"turn/start" (id "3")`, "TurnStartResponse", "/result/turn/status"}},
		{"extension response ok", `{"id":4,"result":{"decision":"allow","rule":null,"source":"default","part":null,"reason":"r","effective":"run","sandbox":"workspace-write","approvalPolicy":"on-request"}}`, nil},
		{"extension response checked", `{"id":4,"result":{"whatever":true}}`,
			[]string{`response to "policy/explain" (id 4)`, "PolicyExplainResponse", "missing properties", "additional properties 'whatever'"}},
		{"error response ok", `{"id":5,"error":{"code":-32600,"message":"nope"}}`, nil},
		{"error response bad", `{"id":5,"error":{"code":"x"}}`,
			[]string{`error response to "thread/list"`, "/error", "message"}},
		{"id type not echoed", `{"id":"1","result":{}}`, []string{`(id "1")`, "no client request"}},
		{"response to unknown id", `{"id":42,"result":{}}`, []string{"id 42", "no client request"}},
		{"float id", `{"id":1.0,"result":{}}`, []string{"string or an int64"}},
		{"result and error", `{"id":1,"result":{},"error":{"code":1,"message":"m"}}`, []string{"both"}},
		{"neither", `{"foo":1}`, []string{"not a request, notification or response"}},
		{"array", `[{"method":"warning","params":{"message":"m"}}]`, []string{"not a single JSON object"}},
		{"two objects", `{"method":"warning","params":{"message":"m"}} {"a":1}`, []string{"trailing data"}},
		{"multi-line", "{\"method\":\"warning\",\n\"params\":{\"message\":\"m\"}}", []string{"several lines"}},
		{"not JSON", `hello`, []string{"not valid JSON"}},
		{"empty", ``, []string{"empty line"}},
		{"server request missing field",
			`{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"th","turnId":"t","itemId":"i"}}`,
			[]string{`request "item/commandExecution/requestApproval" (id 0)`, "/params", "startedAtMs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := primed(v)
			err := tr.Server([]byte(c.line))
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %s", c.line)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Errorf("error is %T, want *LineError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if n := strings.Count(err.Error(), "; "); n > 12 {
				t.Errorf("error too long (%d parts): %v", n, err)
			}
			t.Log(err)
		})
	}
}

func TestUnknownAndPending(t *testing.T) {
	v := validator(t)
	unknown := []string{
		`{"method":"fullAuto/whatever","params":{}}`,
		`{"id":7,"method":"apserver/ask","params":{}}`,
	}
	strict := primed(v)
	for _, l := range unknown {
		if err := strict.Server([]byte(l)); err == nil || !strings.Contains(err.Error(), "neither") {
			t.Errorf("Server(%s) = %v, want an unknown-method error", l, err)
		}
	}
	tr := primed(v)
	tr.AllowUnknown = true
	for _, l := range unknown {
		if err := tr.Server([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(tr.Unknown(), ","), "apserver/ask,fullAuto/whatever"; got != want {
		t.Errorf("Unknown() = %s, want %s", got, want)
	}
	got := tr.Unanswered()
	want := []string{`client "3" turn/start`, "client 1 initialize", "client 2 thread/start", "client 4 policy/explain", "client 5 thread/list", "server 7 apserver/ask"}
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Unanswered() = %q, want %q", got, want)
	}
	// An answer to an unknown server request is not checked.
	if err := tr.ClientAnswer([]byte(`{"id":7,"result":{"anything":1}}`)); err != nil {
		t.Errorf("answer to extension request: %v", err)
	}
	// The same id may be reused once answered.
	if err := tr.Server([]byte(`{"id":7,"method":"apserver/ask","params":{}}`)); err != nil {
		t.Errorf("reusing an answered id: %v", err)
	}
	if err := tr.Server([]byte(`{"id":7,"method":"apserver/ask","params":{}}`)); err == nil {
		t.Error("reusing a pending server request id was accepted")
	}
}

func TestClientAnswer(t *testing.T) {
	v := validator(t)
	req := `{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"th","turnId":"t","itemId":"i","startedAtMs":1,"command":"ls","cwd":"/"}}`
	cases := []struct {
		name, answer string
		want         []string
	}{
		{"accept", `{"id":0,"result":{"decision":"accept"}}`, nil},
		{"amendment", `{"id":0,"result":{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["ls"]}}}}`, nil},
		{"error answer", `{"id":0,"error":{"code":-32000,"message":"user went away"}}`, nil},
		{"bad decision", `{"id":0,"result":{"decision":"maybe"}}`,
			[]string{`client answer to "item/commandExecution/requestApproval" (id 0)`, "CommandExecutionRequestApprovalResponse", "/result/decision", "'accept'", `got "maybe"`}},
		{"missing decision", `{"id":0,"result":{}}`, []string{"missing property 'decision'"}},
		{"wrong id", `{"id":9,"result":{"decision":"accept"}}`, []string{"no server request"}},
		{"a request is not an answer", `{"id":0,"method":"x"}`, []string{`must not carry "method"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := v.NewTranscript()
			if err := tr.Server([]byte(req)); err != nil {
				t.Fatalf("request: %v", err)
			}
			err := tr.ClientAnswer([]byte(c.answer))
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %s", c.answer)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			t.Log(err)
		})
	}
}

func TestCheckFileBad(t *testing.T) {
	v := validator(t)
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	lines := []string{
		`{"t_ms":0.1,"dir":"send","msg":{"id":1,"method":"thread/start","params":{}}}`,
		`{"t_ms":0.2,"dir":"recv","msg":{"id":1,"result":{"thread":{"id":"th"}}}}`,
		`{"t_ms":0.3,"dir":"recv","msg":{"method":"turn/started","params":{"threadId":"th"},"emittedAtMs":5}}`,
		``,
		`{"t_ms":0.4,"dir":"recv","msg":{"method":"warning","params":{"message":"fine"},"emittedAtMs":6}}`,
		`{"t_ms":0.5,"dir":"recv","msg":{"id":0,"method":"item/fileChange/requestApproval","params":{"threadId":"th","turnId":"t","itemId":"i","startedAtMs":1}}}`,
		`{"t_ms":0.6,"dir":"send","msg":{"id":0,"result":{"decision":"sure"}}}`,
		`{"t_ms":0.7,"dir":"sideways","msg":{}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := v.CheckFile(path)
	if err == nil {
		t.Fatal("bad transcript accepted")
	}
	msg := err.Error()
	t.Log(msg)
	for _, w := range []string{
		"bad.jsonl: line 2: server response to \"thread/start\" (id 1): does not match ThreadStartResponse",
		"bad.jsonl: line 3: server notification \"turn/started\"",
		"missing property 'turn'",
		"bad.jsonl: line 7: client answer to \"item/fileChange/requestApproval\" (id 0)",
		"line 8: transcript record",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q", w)
		}
	}
	if strings.Contains(msg, "line 5:") || strings.Contains(msg, "line 6:") {
		t.Errorf("valid lines reported:\n%s", msg)
	}
}

// TestSchemaCoverage compiles the schema of every method Codex defines, so
// a schema layout change (or a result type we cannot name) shows up here.
func TestSchemaCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every schema")
	}
	v := validator(t)
	for m := range v.notif {
		ref, _ := v.notificationRef(m)
		if _, err := v.schema(ref); err != nil {
			t.Errorf("notification %s: %v", m, err)
		}
	}
	for m := range v.serverReq {
		ref, _ := v.serverRequestRef(m)
		if _, err := v.schema(ref); err != nil {
			t.Errorf("server request %s: %v", m, err)
		}
		if ref, ok := v.serverAnswerRef(m); ok {
			if _, err := v.schema(ref); err != nil {
				t.Errorf("answer to %s: %v", m, err)
			}
		}
	}
	var missing []string
	for m := range v.clientReq {
		ref, ok := v.clientResponseRef(m)
		if !ok {
			missing = append(missing, m)
			continue
		}
		if _, err := v.schema(ref); err != nil {
			t.Errorf("response to %s: %v", m, err)
		}
	}
	sort.Strings(missing)
	// Codex 0.171's experimental schema (as 0.169's) has no result type for the
	// fuzzyFileSearch session methods (their results are notifications).
	if strings.Join(missing, ",") != "fuzzyFileSearch/sessionStart,fuzzyFileSearch/sessionStop,fuzzyFileSearch/sessionUpdate" {
		t.Errorf("client methods without a result schema: %v", missing)
	}
	if got := v.ResponseType("thread/start"); got != "ThreadStartResponse" {
		t.Errorf("ResponseType(thread/start) = %q", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	v, err := Default() // fresh: schemas get compiled concurrently
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		for _, name := range []string{"codex-tool.jsonl", "codex-approval.jsonl"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := v.CheckFile(filepath.Join(transcriptsDir, name)); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
}

func TestSchemaDirEnv(t *testing.T) {
	t.Setenv(EnvSchemaDir, t.TempDir())
	if _, err := Default(); err == nil || !strings.Contains(err.Error(), EnvSchemaDir) {
		t.Errorf("Default() with an empty %s = %v, want an error naming it", EnvSchemaDir, err)
	}
	// A copy of Codex's schema elsewhere is used instead of the vendored one.
	t.Setenv(EnvSchemaDir, filepath.Join("..", "..", "protocol", "codex", "schema"))
	v, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !v.KnownClientRequest("thread/start") || !v.KnownClientRequest("fullAuto/start") {
		t.Error("a Validator from the env dir lacks thread/start or fullAuto/start")
	}
}

// An extension schema must not take over a Codex method.
func TestExtensionMustNotRedefineCodex(t *testing.T) {
	cx, err := fs.Sub(codex.Schema, "schema")
	if err != nil {
		t.Fatal(err)
	}
	ext := fstest.MapFS{fileClientRequest: {Data: []byte(`{"oneOf":[{"properties":{"method":{"enum":["thread/start"]},"params":{"$ref":"#/definitions/P"}}}]}`)}}
	if _, err := Load(cx, ext); err == nil || !strings.Contains(err.Error(), `redefines "thread/start"`) {
		t.Errorf("Load with an extension redefining thread/start = %v, want an error", err)
	}
}

// Every method and notification that package protocol names is in one of
// the two schemas, with a result type for each client request, so no
// message apserver sends goes unchecked.
func TestProtocolMethodsHaveSchemas(t *testing.T) {
	v := validator(t)
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, filepath.Join("..", "..", "protocol"), func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						method, _ := strconv.Unquote(lit.Value)
						var known bool
						switch id := name.Name; {
						case id == "MethodCancelRequest", id == "MethodInitialized":
							continue // JSON-RPC cancellation; a client notification
						case strings.HasPrefix(id, "Method"):
							known = v.KnownClientRequest(method) && v.ResponseType(method) != ""
						case strings.HasPrefix(id, "Notify"):
							known = v.KnownNotification(method)
						case strings.HasPrefix(id, "Request"):
							known = v.KnownServerRequest(method)
						default:
							continue
						}
						n++
						if !known {
							t.Errorf("protocol.%s = %q: no schema (or no result type) in protocol/codex or protocol/apserver", name.Name, method)
						}
					}
				}
			}
		}
	}
	if n < 40 {
		t.Errorf("found only %d method constants in package protocol; the parse is broken", n)
	}
}

// The vendored Codex files are what protocol/codex/SOURCE says: nobody
// edited them by hand (scripts/codex-schema.sh computes the same hash and
// also compares them with Codex's own output).
func TestVendoredCodexMatchesSource(t *testing.T) {
	dir := filepath.Join("..", "..", "protocol", "codex")
	src, err := os.ReadFile(filepath.Join(dir, "SOURCE"))
	if err != nil {
		t.Fatal(err)
	}
	_, want, ok := strings.Cut(string(src), "\nsha256: ")
	if !ok {
		t.Fatal("SOURCE has no sha256 line")
	}
	want = strings.TrimSpace(want)
	files := []string{"CORE.md"}
	err = filepath.WalkDir(filepath.Join(dir, "schema"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var lines strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&lines, "%x  %s\n", sha256.Sum256(data), f)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256([]byte(lines.String()))); got != want {
		t.Errorf("protocol/codex hashes to %s, SOURCE records %s: a vendored file changed; regenerate with scripts/codex-schema.sh update", got, want)
	}
}
