// Package wirecheck validates apserver's wire traffic against JSON Schemas:
// the one Codex generates for its app-server protocol (v2), vendored in
// protocol/codex/schema, and apserver's own for the methods Codex does not
// have (full auto, policy/explain), in protocol/apserver/schema.
//
// Both are embedded, so the checks run wherever the module builds. A
// Validator indexes the tagged unions of each (ServerNotification.json,
// ServerRequest.json, ClientRequest.json) once and compiles the schema for
// a given method lazily, the first time a message with that method is
// validated; compiled schemas are cached. The two must not share a method.
//
// A Transcript follows one conversation (client and server lines in order)
// so that responses can be checked against the result type of the request
// they answer.
//
// wirecheck is a test helper: only tests import it.
package wirecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/protocol/apserver"
	"github.com/apserver/apserver/protocol/codex"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// EnvSchemaDir names the environment variable that points Default at
// another copy of Codex's schema (a directory of generate-json-schema
// output) instead of the vendored one.
const EnvSchemaDir = "APSERVER_SCHEMA_DIR"

// Schema file names inside a schema directory.
const (
	fileServerNotification = "ServerNotification.json"
	fileServerRequest      = "ServerRequest.json"
	fileClientRequest      = "ClientRequest.json"
	fileJSONRPCMessage     = "JSONRPCMessage.json"
	fileBundle             = "codex_app_server_protocol.v2.schemas.json"
	fileInitializeResponse = "v1/InitializeResponse.json"
	fileExtBundle          = "apserver.schemas.json"
)

// resultTypes names the result type of each client request, as
// internal/protogen paired them when it generated protocol.Methods (it
// knows the methods whose result type does not mirror their params type).
var resultTypes = func() map[string]string {
	m := map[string]string{}
	for _, mi := range protocol.Methods {
		if mi.Kind == protocol.KindClientRequest && mi.Result != "" {
			m[mi.Method] = mi.Result
		}
	}
	return m
}()

// Validator holds the schema index and a cache of compiled schemas. It is
// safe for concurrent use.
type Validator struct {
	codex *source
	ext   *source // apserver's extensions

	notif     map[string]branch // notification method → branch
	serverReq map[string]branch // server request method → branch
	clientReq map[string]branch // client request method → branch

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	cache    map[string]*jsonschema.Schema // schema URL → compiled
}

// source is one schema tree. Its files have URLs file:///<name>/<path>.
type source struct {
	name   string // "codex" or "apserver"
	fsys   fs.FS
	bundle string // the file whose definitions hold every named type

	mu   sync.Mutex
	defs map[string]bool // definitions of bundle, read lazily
}

type branch struct {
	src    *source
	index  int    // index in the union's oneOf
	params string // params type name ("" when the method takes none)
}

// schemaRef says where a schema lives: a file of a source plus an optional
// JSON pointer fragment.
type schemaRef struct {
	src  *source
	file string
	ptr  string // "" or "/definitions/X", "/oneOf/3", ...
	name string // human name for messages
}

// Default loads the vendored schemas: Codex's (or the directory named by
// $APSERVER_SCHEMA_DIR) and apserver's.
func Default() (*Validator, error) {
	cx, err := fs.Sub(codex.Schema, "schema")
	if err != nil {
		return nil, fmt.Errorf("wirecheck: %w", err)
	}
	if d := os.Getenv(EnvSchemaDir); d != "" {
		cx = os.DirFS(d)
		if !isFile(cx, fileServerNotification) {
			return nil, fmt.Errorf("wirecheck: %s=%q has no %s", EnvSchemaDir, d, fileServerNotification)
		}
	}
	ext, err := fs.Sub(apserver.Schema, "schema")
	if err != nil {
		return nil, fmt.Errorf("wirecheck: %w", err)
	}
	return Load(cx, ext)
}

func isFile(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && st.Mode().IsRegular()
}

// Load indexes Codex's schema directory and apserver's extension schema
// (nil for none). Nothing is compiled yet. A method in both is an error:
// an extension must not redefine Codex's protocol.
func Load(codexFS, extFS fs.FS) (*Validator, error) {
	v := &Validator{
		codex:     &source{name: "codex", fsys: codexFS, bundle: fileBundle},
		notif:     map[string]branch{},
		serverReq: map[string]branch{},
		clientReq: map[string]branch{},
		cache:     map[string]*jsonschema.Schema{},
	}
	srcs := []*source{v.codex}
	if extFS != nil {
		v.ext = &source{name: "apserver", fsys: extFS, bundle: fileExtBundle}
		srcs = append(srcs, v.ext)
	}
	for _, src := range srcs {
		for _, u := range []struct {
			file string
			into map[string]branch
		}{
			{fileServerNotification, v.notif},
			{fileServerRequest, v.serverReq},
			{fileClientRequest, v.clientReq},
		} {
			bs, err := readUnion(src, u.file)
			if err != nil {
				return nil, err
			}
			for m, b := range bs {
				if prev, dup := u.into[m]; dup {
					return nil, fmt.Errorf("wirecheck: %s/%s redefines %q of %s", src.name, u.file, m, prev.src.name)
				}
				u.into[m] = b
			}
		}
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(jsonschema.SchemeURLLoader{"file": fsLoader(srcs)})
	for _, f := range intFormats {
		c.RegisterFormat(f)
	}
	v.compiler = c
	return v, nil
}

// fsLoader serves file:///<source>/<path> from the sources' file systems.
type fsLoader []*source

func (l fsLoader) Load(url string) (any, error) {
	rest, ok := strings.CutPrefix(url, "file:///")
	if !ok {
		return nil, fmt.Errorf("wirecheck: %s is outside the schemas", url)
	}
	name, file, _ := strings.Cut(rest, "/")
	for _, src := range l {
		if src.name == name {
			f, err := src.fsys.Open(path.Clean(file))
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return jsonschema.UnmarshalJSON(f)
		}
	}
	return nil, fmt.Errorf("wirecheck: %s: no schema source %q", url, name)
}

// readUnion reads a tagged union file (`oneOf` of {method: enum[1], params})
// and returns method → branch. An absent file is an empty union.
func readUnion(src *source, file string) (map[string]branch, error) {
	data, err := fs.ReadFile(src.fsys, file)
	if errors.Is(err, fs.ErrNotExist) && src.name != "codex" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("wirecheck: %s: %w", src.name, err)
	}
	var doc struct {
		OneOf []struct {
			Properties struct {
				Method struct {
					Enum []string `json:"enum"`
				} `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"properties"`
		} `json:"oneOf"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("wirecheck: %s/%s: %w", src.name, file, err)
	}
	if len(doc.OneOf) == 0 {
		return nil, fmt.Errorf("wirecheck: %s/%s: no oneOf branches", src.name, file)
	}
	out := make(map[string]branch, len(doc.OneOf))
	for i, b := range doc.OneOf {
		for _, m := range b.Properties.Method.Enum {
			out[m] = branch{src: src, index: i, params: paramsType(b.Properties.Params)}
		}
	}
	return out, nil
}

// paramsType extracts the definition name from a params schema:
// {"$ref":"#/definitions/X"} or {"anyOf":[{"$ref":…},{"type":"null"}]}.
func paramsType(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var p struct {
		Ref   string `json:"$ref"`
		AnyOf []struct {
			Ref string `json:"$ref"`
		} `json:"anyOf"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	ref := p.Ref
	for _, a := range p.AnyOf {
		if ref == "" {
			ref = a.Ref
		}
	}
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		return ref[i+1:]
	}
	return ""
}

// KnownNotification reports whether method is a server notification in
// Codex's schema or apserver's.
func (v *Validator) KnownNotification(method string) bool { _, ok := v.notif[method]; return ok }

// KnownServerRequest reports whether method is a server→client request in
// Codex's schema or apserver's.
func (v *Validator) KnownServerRequest(method string) bool {
	_, ok := v.serverReq[method]
	return ok
}

// KnownClientRequest reports whether method is a client→server request in
// Codex's schema or apserver's.
func (v *Validator) KnownClientRequest(method string) bool {
	_, ok := v.clientReq[method]
	return ok
}

// Extension reports whether method (of any kind) is defined by apserver's
// schema rather than Codex's.
func (v *Validator) Extension(method string) bool {
	for _, m := range []map[string]branch{v.notif, v.serverReq, v.clientReq} {
		if b, ok := m[method]; ok {
			return b.src == v.ext
		}
	}
	return false
}

// ResponseType returns the name of the result type of client request method
// ("" if the schema has no result type for it, or the method is unknown).
func (v *Validator) ResponseType(method string) string {
	if r, ok := v.clientResponseRef(method); ok {
		return r.name
	}
	return ""
}

func (v *Validator) notificationRef(method string) (schemaRef, bool) {
	b, ok := v.notif[method]
	if !ok {
		return schemaRef{}, false
	}
	return schemaRef{src: b.src, file: fileServerNotification, ptr: fmt.Sprintf("/oneOf/%d", b.index), name: method + " notification"}, true
}

func (v *Validator) serverRequestRef(method string) (schemaRef, bool) {
	b, ok := v.serverReq[method]
	if !ok {
		return schemaRef{}, false
	}
	return schemaRef{src: b.src, file: fileServerRequest, ptr: fmt.Sprintf("/oneOf/%d", b.index), name: method + " request"}, true
}

// clientResponseRef finds the result schema for a client request method:
// the type named like its params with Response for Params.
func (v *Validator) clientResponseRef(method string) (schemaRef, bool) {
	if method == "initialize" {
		return schemaRef{src: v.codex, file: fileInitializeResponse, name: "InitializeResponse"}, true
	}
	b, ok := v.clientReq[method]
	if !ok {
		return schemaRef{}, false
	}
	name := resultTypes[method]
	if name == "" {
		if !strings.HasSuffix(b.params, "Params") {
			return schemaRef{}, false
		}
		name = strings.TrimSuffix(b.params, "Params") + "Response"
	}
	return b.src.typeRef(name)
}

// serverAnswerRef finds the result schema of the client's answer to a
// server request.
func (v *Validator) serverAnswerRef(method string) (schemaRef, bool) {
	b, ok := v.serverReq[method]
	if !ok || !strings.HasSuffix(b.params, "Params") {
		return schemaRef{}, false
	}
	return b.src.typeRef(strings.TrimSuffix(b.params, "Params") + "Response")
}

// typeRef locates a named type: its own file in v2/ or at the top level,
// else a definition in the source's bundle.
func (s *source) typeRef(name string) (schemaRef, bool) {
	for _, f := range []string{"v2/" + name + ".json", name + ".json"} {
		if isFile(s.fsys, f) {
			return schemaRef{src: s, file: f, name: name}, true
		}
	}
	if s.bundleHas(name) {
		return schemaRef{src: s, file: s.bundle, ptr: "/definitions/" + name, name: name}, true
	}
	return schemaRef{}, false
}

func (s *source) bundleHas(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.defs == nil {
		s.defs = map[string]bool{}
		data, err := fs.ReadFile(s.fsys, s.bundle)
		if err == nil {
			var doc struct {
				Definitions map[string]json.RawMessage `json:"definitions"`
			}
			if json.Unmarshal(data, &doc) == nil {
				for k := range doc.Definitions {
					s.defs[k] = true
				}
			}
		}
	}
	return s.defs[name]
}

// schema compiles (once) and returns the schema at ref.
func (v *Validator) schema(ref schemaRef) (*jsonschema.Schema, error) {
	u := "file:///" + ref.src.name + "/" + ref.file
	if ref.ptr != "" {
		u += "#" + ref.ptr
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.cache[u]; ok {
		return s, nil
	}
	s, err := v.compiler.Compile(u)
	if err != nil {
		return nil, fmt.Errorf("wirecheck: compiling %s/%s#%s: %v", ref.src.name, ref.file, ref.ptr, err)
	}
	v.cache[u] = s
	return s, nil
}

// validate checks inst against ref; locations in messages get prefix.
func (v *Validator) validate(ref schemaRef, inst any, prefix []string) error {
	s, err := v.schema(ref)
	if err != nil {
		return err
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return &schemaError{schema: ref.name, lines: render(ve, prefix)}
	}
	return err
}

// schemaError is a validation failure, already rendered.
type schemaError struct {
	schema string
	lines  []string
}

func (e *schemaError) Error() string {
	return "does not match " + e.schema + ": " + strings.Join(e.lines, "; ")
}

// Codex's schemas use Rust integer widths as formats. Draft-07 asserts
// formats, so registering them turns e.g. a negative "uint32" into an error
// (unknown formats would be ignored).
var intFormats = func() []*jsonschema.Format {
	mk := func(name string, bits uint, signed bool) *jsonschema.Format {
		lo, hi := new(big.Int), new(big.Int).Lsh(big.NewInt(1), bits)
		if signed {
			hi.Rsh(hi, 1)
			lo.Neg(hi)
		}
		hi.Sub(hi, big.NewInt(1))
		return &jsonschema.Format{Name: name, Validate: func(x any) error {
			var f *big.Float
			switch n := x.(type) {
			case json.Number:
				var ok bool
				if f, ok = new(big.Float).SetPrec(200).SetString(string(n)); !ok {
					return nil
				}
			case float64:
				f = big.NewFloat(n)
			default:
				return nil // not a number: "type" reports it
			}
			i, acc := f.Int(nil)
			if acc != big.Exact {
				return nil // not an integer: "type" reports it
			}
			if i.Cmp(lo) < 0 || i.Cmp(hi) > 0 {
				return fmt.Errorf("out of range [%s, %s]", lo, hi)
			}
			return nil
		}}
	}
	return []*jsonschema.Format{
		mk("int32", 32, true), mk("int64", 64, true),
		mk("uint16", 16, false), mk("uint32", 32, false), mk("uint64", 64, false),
		mk("uint", 64, false),
	}
}()

// render flattens a validation error tree into short lines. A oneOf/anyOf
// (Codex's tagged unions and nullable fields) is reduced to the branches
// that fail for a deeper reason than their discriminator ("type",
// "method"…) or their basic JSON type, so a bad item reports the problem in
// its own variant rather than in every variant; when every branch fails
// shallowly, their expectations are merged into one line.
func render(ve *jsonschema.ValidationError, prefix []string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError, depth int)
	walk = func(e *jsonschema.ValidationError, depth int) {
		if depth > 64 {
			return
		}
		switch e.ErrorKind.(type) {
		case *kind.Schema, *kind.Reference, *kind.Group, *kind.AllOf:
			if len(e.Causes) > 0 {
				for _, c := range e.Causes {
					walk(c, depth+1)
				}
				return
			}
		case *kind.OneOf, *kind.AnyOf:
			if len(e.Causes) == 0 {
				break
			}
			var deep, loose, shallow []*jsonschema.ValidationError
			for _, c := range e.Causes {
				if l := shallowLeaf(c, e.InstanceLocation); l != nil {
					shallow = append(shallow, l)
				} else if failsDeeper(c, e.InstanceLocation) {
					deep = append(deep, c)
				} else {
					loose = append(loose, c)
				}
			}
			if len(deep) == 0 {
				deep = loose
			}
			switch {
			case len(deep) == 1:
				walk(deep[0], depth+1)
			case len(deep) > 1:
				out = appendLine(out, seen, leaf(e, prefix)+fmt.Sprintf(" (%d candidate variants)", len(deep)))
				for _, c := range deep {
					walk(c, depth+1)
				}
			default:
				for _, l := range mergeLeaves(shallow) {
					out = appendLine(out, seen, leaf(l, prefix))
				}
			}
			return
		}
		out = appendLine(out, seen, leaf(e, prefix))
	}
	walk(ve, 0)
	const max = 12
	if len(out) > max {
		n := len(out) - max
		out = append(out[:max:max], fmt.Sprintf("... and %d more", n))
	}
	return out
}

func appendLine(out []string, seen map[string]bool, s string) []string {
	if seen[s] {
		return out
	}
	seen[s] = true
	return append(out, s)
}

// leaf renders a single error node as "at '/loc': message".
func leaf(e *jsonschema.ValidationError, prefix []string) string {
	loc := append(append([]string{}, prefix...), e.InstanceLocation...)
	one := &jsonschema.ValidationError{SchemaURL: e.SchemaURL, InstanceLocation: loc, ErrorKind: e.ErrorKind}
	s := one.Error()
	if rest, ok := strings.CutPrefix(s, "at '': "); ok {
		s = "at top level: " + rest
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Enum:
		s += ", got " + show(k.Got)
	case *kind.Const:
		s += ", got " + show(k.Got)
	}
	return s
}

// mergeLeaves folds the shallow failures of all branches of a union: type
// mismatches at one location become one line, and so do enum/const
// mismatches at one location.
func mergeLeaves(ls []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	type group struct {
		first  *jsonschema.ValidationError
		types  []string
		enum   []any
		got    any
		isEnum bool
	}
	var order []string
	groups := map[string]*group{}
	var out []*jsonschema.ValidationError
	for _, l := range ls {
		var cls string
		switch l.ErrorKind.(type) {
		case *kind.Type:
			cls = "t"
		case *kind.Enum, *kind.Const:
			cls = "e"
		default:
			out = append(out, l)
			continue
		}
		key := cls + strings.Join(l.InstanceLocation, "\x00")
		g := groups[key]
		if g == nil {
			g = &group{first: l, isEnum: cls == "e"}
			groups[key] = g
			order = append(order, key)
		}
		switch k := l.ErrorKind.(type) {
		case *kind.Type:
			g.types = append(g.types, k.Want...)
		case *kind.Enum:
			g.enum, g.got = append(g.enum, k.Want...), k.Got
		case *kind.Const:
			g.enum, g.got = append(g.enum, k.Want), k.Got
		}
	}
	var merged []*jsonschema.ValidationError
	for _, key := range order {
		g := groups[key]
		var k jsonschema.ErrorKind
		if g.isEnum {
			k = &kind.Enum{Got: g.got, Want: g.enum}
		} else {
			k = &kind.Type{Got: g.first.ErrorKind.(*kind.Type).Got, Want: uniqueStrings(g.types)}
		}
		merged = append(merged, &jsonschema.ValidationError{SchemaURL: g.first.SchemaURL, InstanceLocation: g.first.InstanceLocation, ErrorKind: k})
	}
	return append(merged, out...)
}

func uniqueStrings(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// shallowLeaf returns the error that makes a failed union branch a shallow
// mismatch: a wrong JSON type or literal of the value at loc itself, or a
// wrong value of its discriminator field. It returns nil for deeper failures.
func shallowLeaf(c *jsonschema.ValidationError, loc []string) *jsonschema.ValidationError {
	var found *jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError, depth int)
	walk = func(e *jsonschema.ValidationError, depth int) {
		if found != nil || depth > 8 {
			return
		}
		switch e.ErrorKind.(type) {
		case *kind.Type:
			if sameLoc(e.InstanceLocation, loc) {
				found = e
			}
		case *kind.Enum, *kind.Const:
			il := e.InstanceLocation
			if sameLoc(il, loc) || len(il) == len(loc)+1 && sameLoc(il[:len(loc)], loc) && discriminators[il[len(loc)]] {
				found = e
			}
		case *kind.OneOf, *kind.AnyOf:
			return // a nested union is a deeper matter
		}
		for _, ch := range e.Causes {
			walk(ch, depth+1)
		}
	}
	walk(c, 0)
	return found
}

// failsDeeper reports whether a failed union branch has an error below loc
// (as opposed to only at loc: missing or unexpected properties, which is how
// the wrong variants of an externally tagged enum fail).
func failsDeeper(c *jsonschema.ValidationError, loc []string) bool {
	if len(c.InstanceLocation) > len(loc) {
		return true
	}
	for _, ch := range c.Causes {
		if failsDeeper(ch, loc) {
			return true
		}
	}
	return false
}

var discriminators = map[string]bool{"type": true, "method": true}

func sameLoc(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
