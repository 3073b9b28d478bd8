package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoName(t *testing.T) {
	for _, c := range []struct {
		m    method
		want string
	}{
		{method{name: "thread/name/set", kind: clientRequest}, "MethodThreadNameSet"},
		{method{name: "initialized", kind: clientNotification}, "MethodInitialized"},
		{method{name: "thread/increment_elicitation", kind: clientRequest}, "MethodThreadIncrementElicitation"},
		{method{name: "run/clarification/requested", kind: serverNotification}, "NotifyRunClarificationRequested"},
		{method{name: "item/tool/call", kind: serverRequest}, "RequestItemToolCall"},
		// a name published before generation is kept
		{method{name: "item/agentMessage/delta", kind: serverNotification}, "NotifyAgentMessageDelta"},
	} {
		if got := goName(c.m); got != c.want {
			t.Errorf("goName(%q) = %q, want %q", c.m.name, got, c.want)
		}
	}
}

func TestTSType(t *testing.T) {
	for _, c := range []struct {
		schema string
		want   string
	}{
		{`{"type": "string"}`, "string"},
		{`{"type": ["integer", "null"]}`, "number | null"},
		{`{"enum": ["a", "b"], "type": "string"}`, `"a" | "b"`},
		{`{"$ref": "#/definitions/Run"}`, "Run"},
		{`{"anyOf": [{"$ref": "#/definitions/X"}, {"type": "null"}]}`, "X | null"},
		{`{"type": "array", "items": {"type": ["string", "null"]}}`, "(string | null)[]"},
		{`{"type": "object", "additionalProperties": {"type": "boolean"}}`, "{ [key: string]: boolean }"},
		{`{"type": "object", "additionalProperties": false}`, "{ [key: string]: never }"},
		{`{"type": "object"}`, "{ [key: string]: unknown }"},
		{`{}`, "unknown"},
		{`{"type": "object", "properties": {"a": {"type": "string"}, "b-c": {"type": "boolean"}}, "required": ["a"]}`,
			"{\n  a: string;\n  \"b-c\"?: boolean;\n}"},
		{`{"allOf": [{"$ref": "#/definitions/A"}, {"anyOf": [{"$ref": "#/definitions/B"}, {"$ref": "#/definitions/C"}]}]}`, "A & (B | C)"},
		{`{"type": "object", "properties": {"x": {"description": "says */ things", "type": "string"}}, "required": ["x"]}`,
			"{\n  /** says *\\/ things */\n  x: string;\n}"},
	} {
		var o object
		if err := json.Unmarshal([]byte(c.schema), &o); err != nil {
			t.Fatal(err)
		}
		if got := tsType(o, ""); got != c.want {
			t.Errorf("tsType(%s) = %q, want %q", c.schema, got, c.want)
		}
	}
}

// writeSchemas lays out a minimal pair of schema directories.
func writeSchemas(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func tagged(entries ...string) string {
	return `{"oneOf": [` + strings.Join(entries, ",") + `]}`
}

func entry(method, ref string) string {
	return `{"properties": {"method": {"enum": ["` + method + `"]}, "params": {"$ref": "` + ref + `"}}}`
}

func minimal() map[string]string {
	return map[string]string{
		codexDir + "/ClientRequest.json":      tagged(entry("thread/start", "#/definitions/ThreadStartParams")),
		codexDir + "/ClientNotification.json": `{"oneOf": [{"properties": {"method": {"enum": ["initialized"]}}}]}`,
		codexDir + "/ServerRequest.json":      tagged(),
		codexDir + "/ServerNotification.json": tagged(entry("turn/started", "#/definitions/TurnStartedNotification")),
		codexDir + "/codex_app_server_protocol.v2.schemas.json": `{"title": "Bundle", "definitions": {
			"ThreadStartParams": {"type": "object", "properties": {"cwd": {"type": ["string", "null"]}}},
			"ThreadStartResponse": {"type": "object", "properties": {"model": {"type": "string"}}, "required": ["model"]},
			"TurnStartedNotification": {"type": "object", "properties": {"threadId": {"type": "string"}}, "required": ["threadId"]}}}`,
		apserverDir + "/ClientRequest.json": tagged(entry("fullAuto/start", "apserver.schemas.json#/definitions/FullAutoStartParams")),
		apserverDir + "/apserver.schemas.json": `{"title": "apserver extensions", "definitions": {
			"FullAutoStartParams": {"type": "object", "properties": {"threadId": {"type": "string"}}, "required": ["threadId"]},
			"FullAutoStartResponse": {"type": "object"}}}`,
	}
}

// A method added to the extension schema comes out in all three files.
func TestGenerateFromMinimalSchemas(t *testing.T) {
	files, err := generate(writeSchemas(t, minimal()))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][]string{
		goFile: {`MethodThreadStart = "thread/start"`, `MethodFullAutoStart = "fullAuto/start"`, `NotifyTurnStarted = "turn/started"`,
			`MethodInitialized = "initialized"`, `{MethodFullAutoStart, KindClientRequest, "FullAutoStartParams", "FullAutoStartResponse", true}`},
		tsFile: {`"fullAuto/start": { params: FullAutoStartParams; result: FullAutoStartResponse };`,
			`"thread/start": { params: ThreadStartParams; result: ThreadStartResponse };`,
			`"turn/started": TurnStartedNotification;`, `"initialized": undefined;`,
			"export type ThreadStartParams = {\n  cwd?: string | null;\n};"},
		luaFile: {`M.MethodFullAutoStart = "fullAuto/start"`, `M.NotifyTurnStarted = "turn/started"`},
	} {
		for _, w := range want {
			if !strings.Contains(string(files[p]), w) {
				t.Errorf("%s lacks %q:\n%s", p, w, files[p])
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(map[string]string)
		want   string
	}{
		{"extension redefines a Codex method", func(f map[string]string) {
			f[apserverDir+"/ClientRequest.json"] = tagged(entry("thread/start", "apserver.schemas.json#/definitions/FullAutoStartParams"))
		}, `method "thread/start" is already declared`},
		{"extension redefines a Codex type", func(f map[string]string) {
			f[apserverDir+"/apserver.schemas.json"] = `{"definitions": {"ThreadStartParams": {"type": "object"}, "FullAutoStartParams": {"type": "object"}}}`
		}, "type ThreadStartParams is already defined"},
		{"params type missing", func(f map[string]string) {
			f[apserverDir+"/ClientRequest.json"] = tagged(entry("fullAuto/stop", "apserver.schemas.json#/definitions/FullAutoStopParams"))
		}, "params type FullAutoStopParams is not defined"},
		{"method without a name", func(f map[string]string) {
			f[apserverDir+"/ClientRequest.json"] = `{"oneOf": [{"properties": {"method": {"type": "string"}}}]}`
		}, "method is not an enum of one name"},
		{"two methods, one Go name", func(f map[string]string) {
			f[apserverDir+"/ClientRequest.json"] = tagged(entry("thread_start", "apserver.schemas.json#/definitions/FullAutoStartParams"))
		}, "would both be protocol.MethodThreadStart"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := minimal()
			c.change(f)
			_, err := generate(writeSchemas(t, f))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("generate = %v, want an error containing %q", err, c.want)
			}
		})
	}
}
