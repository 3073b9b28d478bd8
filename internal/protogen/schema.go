package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Schema directories, relative to the repository root.
const (
	codexDir    = "protocol/codex/schema"
	apserverDir = "protocol/apserver/schema"
)

// The tagged unions that list a schema's methods, one file each.
var unionFiles = []struct {
	file string
	kind kind
}{
	{"ClientRequest.json", clientRequest},
	{"ClientNotification.json", clientNotification},
	{"ServerRequest.json", serverRequest},
	{"ServerNotification.json", serverNotification},
}

// kind is which way a method goes and whether it is answered.
type kind int

const (
	clientRequest kind = iota
	clientNotification
	serverRequest
	serverNotification
)

// method is one method of the protocol, as a schema's tagged union
// declares it.
type method struct {
	name      string
	kind      kind
	params    string // schema type of params; "" when the method has none
	nullable  bool   // params may be null or absent
	result    string // schema type of the answer to a request; "" when none is known
	extension bool   // declared by protocol/apserver/schema, not Codex
}

// schema is what the generator reads: every method of both schemas and
// every named type they define.
type schema struct {
	methods []method          // sorted by kind, then name
	types   map[string]object // by definition name
}

// object is one JSON Schema node as decoded by encoding/json.
type object = map[string]any

// responseOverrides names the result type of the client requests whose
// result type is not their params type with Response for Params: methods
// without params and the few that Codex names otherwise.
var responseOverrides = map[string]string{
	"initialize":                               "InitializeResponse",
	"accountSession/list":                      "AccountSessionsResponse",
	"memory/reset":                             "MemoryResetResponse",
	"remoteControl/status/read":                "RemoteControlStatusReadResponse",
	"rollout/compress":                         "RolloutCompressResponse",
	"account/gatewayOAuth/cancel":              "GatewayOAuthCancelResponse",
	"account/logout":                           "LogoutAccountResponse",
	"account/securitySetup/read":               "GetAccountSecuritySetupResponse",
	"account/workspaceMessages/read":           "GetWorkspaceMessagesResponse",
	"config/batchWrite":                        "ConfigWriteResponse",
	"config/mcpServer/reload":                  "McpServerRefreshResponse",
	"config/value/write":                       "ConfigWriteResponse",
	"configRequirements/read":                  "ConfigRequirementsReadResponse",
	"externalAgentConfig/import/readHistories": "ExternalAgentConfigImportHistoriesReadResponse",
	"modelProvider/default/set":                "ConfigWriteResponse", // Codex 0.171 answers with a config write
	"windowsSandbox/readiness":                 "WindowsSandboxReadinessResponse",
}

// load reads both schema directories under root.
func load(root string) (*schema, error) {
	s := &schema{types: map[string]object{}}
	// Codex's full v2 bundle names nearly every type; the other files add
	// what it lacks (the v1 initialize types, the answers to server
	// requests, FuzzyFileSearchResponse). A name the bundle has wins.
	codexFiles, err := jsonFiles(filepath.Join(root, codexDir))
	if err != nil {
		return nil, err
	}
	bundle := "codex_app_server_protocol.v2.schemas.json"
	sort.SliceStable(codexFiles, func(i, j int) bool {
		return filepath.Base(codexFiles[i]) == bundle && filepath.Base(codexFiles[j]) != bundle
	})
	for _, f := range codexFiles {
		if err := s.addTypes(f, false); err != nil {
			return nil, err
		}
	}
	codexTypes := map[string]bool{}
	for name := range s.types {
		codexTypes[name] = true
	}
	extFiles, err := jsonFiles(filepath.Join(root, apserverDir))
	if err != nil {
		return nil, err
	}
	for _, f := range extFiles {
		if err := s.addTypes(f, true); err != nil {
			return nil, err
		}
	}
	seen := map[string]string{}
	for _, dir := range []struct {
		path      string
		extension bool
	}{{codexDir, false}, {apserverDir, true}} {
		for _, u := range unionFiles {
			file := filepath.Join(root, dir.path, u.file)
			ms, err := readUnion(file, u.kind, dir.extension)
			if os.IsNotExist(err) && dir.extension {
				continue // the extension has no method of this kind
			}
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				if prev, dup := seen[m.name]; dup {
					return nil, fmt.Errorf("%s: method %q is already declared in %s", file, m.name, prev)
				}
				seen[m.name] = file
				if m.params != "" && s.types[m.params] == nil {
					return nil, fmt.Errorf("%s: %q: params type %s is not defined", file, m.name, m.params)
				}
				m.result = s.resultType(m)
				s.methods = append(s.methods, m)
			}
		}
	}
	sort.SliceStable(s.methods, func(i, j int) bool {
		a, b := s.methods[i], s.methods[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.name < b.name
	})
	return s, nil
}

// jsonFiles lists the .json files under dir, sorted.
func jsonFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing schema files: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no schema files in %s", dir)
	}
	sort.Strings(files)
	return files, nil
}

func readJSON(file string) (object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return o, nil
}

// addTypes adds the definitions of file, and its root when the root is a
// named type rather than a tagged union of methods. An extension type must
// not take a name Codex uses.
func (s *schema) addTypes(file string, extension bool) error {
	o, err := readJSON(file)
	if err != nil {
		return err
	}
	defs, _ := o["definitions"].(object)
	add := func(name string, t object) error {
		if _, ok := s.types[name]; ok {
			if extension {
				return fmt.Errorf("%s: type %s is already defined (by Codex's schema or another extension file)", file, name)
			}
			return nil // the bundle's copy wins
		}
		s.types[name] = t
		return nil
	}
	for _, name := range sortedKeys(defs) {
		t, ok := defs[name].(object)
		if !ok {
			return fmt.Errorf("%s: definition %s is not an object", file, name)
		}
		if err := add(name, t); err != nil {
			return err
		}
	}
	title, _ := o["title"].(string)
	if !isIdent(title) || isUnionFile(file) || !isType(o) {
		return nil // a bundle of definitions, or a tagged union of methods
	}
	root := object{}
	for k, v := range o {
		if k != "definitions" && k != "$schema" && k != "title" {
			root[k] = v
		}
	}
	return add(title, root)
}

// isType reports whether a schema node says what its value is, rather
// than only holding definitions.
func isType(o object) bool {
	for _, k := range []string{"type", "properties", "$ref", "enum", "const", "oneOf", "anyOf", "allOf"} {
		if _, ok := o[k]; ok {
			return true
		}
	}
	return false
}

func isUnionFile(file string) bool {
	for _, u := range unionFiles {
		if filepath.Base(file) == u.file {
			return true
		}
	}
	return false
}

// readUnion reads the methods of a tagged union file: a oneOf whose
// entries each fix "method" to one name and point "params" at a type.
func readUnion(file string, k kind, extension bool) ([]method, error) {
	o, err := readJSON(file)
	if err != nil {
		return nil, err
	}
	entries, ok := o["oneOf"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: no oneOf list of methods", file)
	}
	var ms []method
	for i, e := range entries {
		entry, _ := e.(object)
		props, _ := entry["properties"].(object)
		m, _ := props["method"].(object)
		enum, _ := m["enum"].([]any)
		if len(enum) != 1 {
			return nil, fmt.Errorf("%s: oneOf[%d]: method is not an enum of one name", file, i)
		}
		name, _ := enum[0].(string)
		if name == "" {
			return nil, fmt.Errorf("%s: oneOf[%d]: empty method name", file, i)
		}
		params, nullable := "", false
		if p, ok := props["params"].(object); ok {
			ref, _ := p["$ref"].(string)
			if alts, ok := p["anyOf"].([]any); ok && len(alts) == 2 {
				// params: X or null
				a, _ := alts[0].(object)
				n, _ := alts[1].(object)
				if r, _ := a["$ref"].(string); r != "" && n["type"] == "null" {
					ref, nullable = r, true
				}
			}
			if ref == "" && p["type"] == "null" {
				// no params: Codex writes params: null
			} else if ref == "" {
				return nil, fmt.Errorf("%s: %q: params is not a $ref to a named type", file, name)
			}
			if ref != "" {
				params = refName(ref)
			}
		}
		ms = append(ms, method{name: name, kind: k, params: params, nullable: nullable, extension: extension})
	}
	return ms, nil
}

// refName is the type a $ref names: the last element of its pointer, such
// as ThreadStartParams in "#/definitions/ThreadStartParams" or in
// "apserver.schemas.json#/definitions/ThreadStartParams".
func refName(ref string) string {
	return ref[strings.LastIndex(ref, "/")+1:]
}

// resultType is the type of a request's answer, or "" when the schemas
// define none (Codex's fuzzyFileSearch session methods answer with
// notifications).
func (s *schema) resultType(m method) string {
	if m.kind != clientRequest && m.kind != serverRequest {
		return ""
	}
	name := responseOverrides[m.name]
	if name == "" && strings.HasSuffix(m.params, "Params") {
		name = strings.TrimSuffix(m.params, "Params") + "Response"
	}
	if s.types[name] == nil {
		return ""
	}
	return name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
