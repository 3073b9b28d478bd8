package main

import (
	"bytes"
	"fmt"
	"go/format"
	"strconv"
	"strings"
	"unicode"
)

// goNames keeps the names that package protocol published before its
// method constants were generated, where they differ from the rule in
// goName; callers all over the module use them.
var goNames = map[string]string{
	"thread/backgroundTerminals/list":           "MethodBackgroundTerminalList",
	"account/bedrock/checkGovCloudRequirements": "MethodBedrockGovCloud",
	"thread/tokenUsage/updated":                 "NotifyThreadTokenUsage",
	"item/agentMessage/delta":                   "NotifyAgentMessageDelta",
	"item/reasoning/summaryTextDelta":           "NotifyReasoningSummaryDelta",
	"item/reasoning/summaryPartAdded":           "NotifyReasoningSummaryPart",
	"item/reasoning/textDelta":                  "NotifyReasoningTextDelta",
	"item/commandExecution/outputDelta":         "NotifyCommandOutputDelta",
	"item/commandExecution/requestApproval":     "RequestCommandApproval",
	"item/fileChange/requestApproval":           "RequestFileChangeApproval",
	"item/tool/requestUserInput":                "RequestUserInput",
	// Chosen by the MCP work (protocol/mcp.go) while this generator was
	// written.
	"mcpServer/resource/read":         "MethodMcpResourceRead",
	"config/mcpServer/reload":         "MethodMcpServerReload",
	"mcpServer/startupStatus/updated": "NotifyMcpServerStartupStatus",
	"item/mcpToolCall/progress":       "NotifyMcpToolCallProgress",
	"mcpServer/elicitation/request":   "RequestMcpServerElicitation",
}

var kindPrefix = [...]string{
	clientRequest:      "Method",
	clientNotification: "Method",
	serverRequest:      "Request",
	serverNotification: "Notify",
}

var kindDoc = [...]string{
	clientRequest:      "Client → server requests.",
	clientNotification: "Client → server notifications.",
	serverRequest:      "Server → client requests.",
	serverNotification: "Server → client notifications.",
}

var kindGo = [...]string{
	clientRequest:      "KindClientRequest",
	clientNotification: "KindClientNotification",
	serverRequest:      "KindServerRequest",
	serverNotification: "KindServerNotification",
}

// goName is the Go constant for a method: Method (client requests and
// notifications), Request (server requests) or Notify (server
// notifications) and then each "/" or "_" separated word of the name with
// its first letter upper-cased: thread/name/set is MethodThreadNameSet.
func goName(m method) string {
	if n, ok := goNames[m.name]; ok {
		return n
	}
	var b strings.Builder
	b.WriteString(kindPrefix[m.kind])
	for _, w := range strings.FieldsFunc(m.name, func(r rune) bool { return r == '/' || r == '_' || r == '$' || r == '-' || r == '.' }) {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// names gives each method its Go constant name and fails when two methods
// would share one.
func names(s *schema) (map[string]string, error) {
	byName := map[string]string{}
	out := map[string]string{}
	for _, m := range s.methods {
		if !named(m) {
			continue
		}
		n := goName(m)
		if !isIdent(n) {
			return nil, fmt.Errorf("method %q: %q is not a Go identifier", m.name, n)
		}
		if prev, ok := byName[n]; ok {
			return nil, fmt.Errorf("methods %q and %q would both be protocol.%s: add one to goNames", prev, m.name, n)
		}
		byName[n] = m.name
		out[m.name] = n
	}
	return out, nil
}

// named reports whether a method gets a constant: all do but the client
// requests whose answer the schema does not define (Codex's
// fuzzyFileSearch session methods), which apserver could not answer in a
// way the schema checks. protocol.Methods still lists them.
func named(m method) bool {
	return m.kind != clientRequest || m.result != ""
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(unicode.IsLetter(r) || r == '_' || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != ""
}

// genGo writes protocol/methods_gen.go: a constant per method and the
// table of every method with its params and result types.
func genGo(s *schema, header string) ([]byte, error) {
	ids, err := names(s)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n\npackage protocol\n", header)
	for k := clientRequest; k <= serverNotification; k++ {
		for _, ext := range []bool{false, true} {
			var lines []string
			for _, m := range s.methods {
				if m.kind == k && m.extension == ext && named(m) {
					lines = append(lines, fmt.Sprintf("\t%s = %s\n", ids[m.name], strconv.Quote(m.name)))
				}
			}
			if len(lines) == 0 {
				continue
			}
			origin := "Codex (protocol/codex/schema)"
			if ext {
				origin = "apserver's extensions (protocol/apserver/schema)"
			}
			fmt.Fprintf(&b, "\n// %s: %s.\nconst (\n%s)\n", strings.TrimSuffix(kindDoc[k], "."), origin, strings.Join(lines, ""))
		}
	}
	b.WriteString(`
// MethodKind is which way a method goes and whether it is answered.
type MethodKind uint8

const (
	KindClientRequest MethodKind = iota + 1
	KindClientNotification
	KindServerRequest
	KindServerNotification
)

// MethodInfo describes one method as the schemas declare it.
type MethodInfo struct {
	Method string
	Kind   MethodKind
	// Params and Result name the schema types of the params and of the
	// answer to a request; "" when there are none (or, for a few Codex
	// methods, when the schema names no result type).
	Params, Result string
	// Extension is true for apserver's own methods (protocol/apserver),
	// false for Codex's (protocol/codex).
	Extension bool
}

// Methods lists every method of both schemas by kind, then name.
var Methods = []MethodInfo{
`)
	for _, m := range s.methods {
		id := ids[m.name]
		if id == "" {
			id = strconv.Quote(m.name)
		}
		fmt.Fprintf(&b, "\t{%s, %s, %q, %q, %t},\n", id, kindGo[m.kind], m.params, m.result, m.extension)
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the Go method table: %w", err)
	}
	return out, nil
}

// genLua writes the Neovim plugin's method module: the same names as the
// Go constants, in a table that raises an error on a name it lacks.
func genLua(s *schema, header string) ([]byte, error) {
	ids, err := names(s)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "-- %s\n", header)
	b.WriteString(`--
-- The method names of the protocol, under the names of package protocol's
-- Go constants: require("apserver.methods").MethodTurnStart is
-- "turn/start". Reading a name that is not here is an error, so a typo
-- fails loudly instead of comparing with nil.

local M = {}
`)
	for k := clientRequest; k <= serverNotification; k++ {
		fmt.Fprintf(&b, "\n-- %s\n", kindDoc[k])
		for _, m := range s.methods {
			if m.kind == k && named(m) {
				fmt.Fprintf(&b, "M.%s = %s\n", ids[m.name], luaQuote(m.name))
			}
		}
	}
	b.WriteString(`
return setmetatable(M, {
  __index = function(_, name)
    error("apserver.methods: no method named " .. tostring(name), 2)
  end,
  __newindex = function(_, name)
    error("apserver.methods: read-only (tried to set " .. tostring(name) .. ")", 2)
  end,
})
`)
	return b.Bytes(), nil
}

func luaQuote(s string) string {
	return strconv.Quote(s) // method names are plain ASCII: Go and Lua quote them alike
}
