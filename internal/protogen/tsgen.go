package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// genTS writes the VS Code extension's protocol.ts: a TypeScript type for
// every named schema type, and per direction an interface from method name
// to params (and result), so that tsc checks every call the extension
// makes and every message it handles against the schemas.
func genTS(s *schema, header string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n", header)
	b.WriteString(`//
// The wire types of the Codex app-server v2 protocol (protocol/codex/schema)
// and of apserver's extensions (protocol/apserver/schema), one TypeScript
// type per schema definition, and the method maps ClientRequests,
// ClientNotifications, ServerRequests and ServerNotifications. To change
// them, change the schema and run ` + "`make generate`" + `.

/* eslint-disable */
`)
	for _, name := range sortedKeys(s.types) {
		t := s.types[name]
		writeDoc(&b, "", t)
		fmt.Fprintf(&b, "export type %s = %s;\n", name, tsType(t, ""))
	}
	maps := []struct {
		kind   kind
		name   string
		doc    string
		result bool
	}{
		{clientRequest, "ClientRequests", "Client → server requests: method → params and result.", true},
		{clientNotification, "ClientNotifications", "Client → server notifications: method → params.", false},
		{serverRequest, "ServerRequests", "Server → client requests: method → params and result.", true},
		{serverNotification, "ServerNotifications", "Server → client notifications: method → params.", false},
	}
	for _, mp := range maps {
		fmt.Fprintf(&b, "\n/** %s */\nexport interface %s {\n", mp.doc, mp.name)
		for _, m := range s.methods {
			if m.kind != mp.kind {
				continue
			}
			params := "undefined"
			if m.params != "" {
				params = m.params
				if m.nullable {
					params += " | null | undefined"
				}
			}
			if m.extension {
				b.WriteString("  /** apserver extension. */\n")
			}
			if mp.result {
				result := "unknown"
				if m.result != "" {
					result = m.result
				}
				fmt.Fprintf(&b, "  %s: { params: %s; result: %s };\n", strconv.Quote(m.name), params, result)
			} else {
				fmt.Fprintf(&b, "  %s: %s;\n", strconv.Quote(m.name), params)
			}
		}
		b.WriteString("}\n")
	}
	b.WriteString(`
export type ClientMethod = keyof ClientRequests;
export type ClientNotificationMethod = keyof ClientNotifications;
export type ServerRequestMethod = keyof ServerRequests;
export type ServerNotificationMethod = keyof ServerNotifications;
`)
	return b.Bytes(), nil
}

// writeDoc writes a schema's description as a JSDoc comment.
func writeDoc(b *bytes.Buffer, indent string, t object) {
	d, _ := t["description"].(string)
	d = strings.TrimSpace(d)
	if d == "" {
		return
	}
	d = strings.ReplaceAll(d, "*/", "*\\/")
	lines := strings.Split(d, "\n")
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, lines[0])
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			fmt.Fprintf(b, "%s *\n", indent)
		} else {
			fmt.Fprintf(b, "%s * %s\n", indent, l)
		}
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

// tsType translates one schema node. indent is the indentation of the line
// the type starts on; object members go one level deeper.
func tsType(t object, indent string) string {
	if t == nil {
		return "unknown"
	}
	var parts []string // intersected
	if ref, ok := t["$ref"].(string); ok {
		parts = append(parts, refName(ref))
	}
	if c, ok := t["const"]; ok {
		parts = append(parts, literal(c))
	} else if enum, ok := t["enum"].([]any); ok {
		var lits []string
		for _, v := range enum {
			lits = append(lits, literal(v))
		}
		parts = append(parts, union(lits))
	} else if _, hasType := t["type"]; hasType {
		parts = append(parts, typed(t, indent))
	} else if t["properties"] != nil || t["additionalProperties"] != nil {
		parts = append(parts, objectType(t, indent))
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts, ok := t[key].([]any); ok {
			var ts []string
			for _, a := range alts {
				ao, _ := a.(object)
				ts = append(ts, tsType(ao, indent))
			}
			parts = append(parts, union(ts))
		}
	}
	if all, ok := t["allOf"].([]any); ok {
		for _, a := range all {
			ao, _ := a.(object)
			parts = append(parts, tsType(ao, indent))
		}
	}
	switch len(parts) {
	case 0:
		return "unknown"
	case 1:
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = paren(p)
	}
	return strings.Join(parts, " & ")
}

// typed translates a node with "type": one name or a list of them.
func typed(t object, indent string) string {
	var names []string
	switch v := t["type"].(type) {
	case string:
		names = []string{v}
	case []any:
		for _, n := range v {
			s, _ := n.(string)
			names = append(names, s)
		}
	}
	var ts []string
	for _, n := range names {
		switch n {
		case "string":
			ts = append(ts, "string")
		case "integer", "number":
			ts = append(ts, "number")
		case "boolean":
			ts = append(ts, "boolean")
		case "null":
			ts = append(ts, "null")
		case "array":
			items, _ := t["items"].(object)
			ts = append(ts, paren(tsType(items, indent))+"[]")
		case "object":
			ts = append(ts, objectType(t, indent))
		default:
			ts = append(ts, "unknown")
		}
	}
	return union(ts)
}

// objectType translates an object's properties (optional unless required)
// and additionalProperties (an index signature).
func objectType(t object, indent string) string {
	props, _ := t["properties"].(object)
	required := map[string]bool{}
	if req, ok := t["required"].([]any); ok {
		for _, r := range req {
			s, _ := r.(string)
			required[s] = true
		}
	}
	var extra string
	switch ap := t["additionalProperties"].(type) {
	case object:
		extra = tsType(ap, indent+"  ")
	case bool:
		if ap && len(props) == 0 {
			extra = "unknown"
		} else if !ap && len(props) == 0 {
			extra = "never" // an empty object
		}
	default:
		if len(props) == 0 {
			extra = "unknown"
		}
	}
	if len(props) == 0 {
		return "{ [key: string]: " + extra + " }"
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	inner := indent + "  "
	for _, name := range sortedKeys(props) {
		p, _ := props[name].(object)
		writeDoc(&b, inner, p)
		opt := "?"
		if required[name] {
			opt = ""
		}
		fmt.Fprintf(&b, "%s%s%s: %s;\n", inner, propName(name), opt, tsType(p, inner))
	}
	if extra != "" && extra != "never" {
		// An index signature must admit every property's type.
		fmt.Fprintf(&b, "%s[key: string]: unknown;\n", inner)
	}
	b.WriteString(indent + "}")
	return b.String()
}

func propName(n string) string {
	if isIdent(n) {
		return n
	}
	return strconv.Quote(n)
}

func literal(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "unknown"
	}
	return string(data)
}

// union joins alternatives, dropping repeats; unknown absorbs the rest.
func union(ts []string) string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if t == "unknown" {
			return "unknown"
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return "never"
	}
	// null last reads better: string | null.
	sort.SliceStable(out, func(i, j int) bool { return out[i] != "null" && out[j] == "null" })
	for i, t := range out {
		if len(out) > 1 {
			out[i] = parenIntersection(t)
		}
	}
	return strings.Join(out, " | ")
}

// paren wraps a type that has a top-level | or & so that it can be an
// array element or an intersection member.
func paren(t string) string {
	if topLevel(t, '|') || topLevel(t, '&') {
		return "(" + t + ")"
	}
	return t
}

func parenIntersection(t string) string {
	if topLevel(t, '&') {
		return "(" + t + ")"
	}
	return t
}

// topLevel reports whether op occurs in t outside brackets, strings and
// comments.
func topLevel(t string, op byte) bool {
	depth := 0
	inStr := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '/' && i+1 < len(t) && t[i+1] == '*':
			end := strings.Index(t[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 3 // skip a JSDoc comment
		case c == '"':
			inStr = true
		case c == '{' || c == '(' || c == '[' || c == '<':
			depth++
		case c == '}' || c == ')' || c == ']' || c == '>':
			depth--
		case c == op && depth == 0:
			return true
		}
	}
	return false
}
