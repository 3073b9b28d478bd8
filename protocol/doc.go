// Package protocol holds apserver's wire types: the Codex app-server v2
// requests, responses, notifications, server requests and ThreadItem
// variants that apserver speaks, plus method names and the error sentinels
// the server maps to JSON-RPC codes.
//
// Field names follow Codex's generated JSON Schemas (protocol/codex/schema),
// which are the authority; protocol/codex/CORE.md describes the behaviour
// around them. apserver's own methods have their schema in
// protocol/apserver/schema.
// The method name constants (methods_gen.go, and the table Methods) are
// generated from those two schemas by internal/protogen (`make generate`);
// the wire types here are written by hand and checked against the schemas
// on the wire by internal/wirecheck.
//
// Optional wire fields are pointers or omitempty; nullable-but-required
// fields are pointers without omitempty so they serialize as null.
//
// Long strings (largejson.go): MarshalLarge encodes a value keeping its
// strings of LargeMin bytes or more by reference, escaped only when the
// encoding is written; items' MarshalJSON and Marshal allocate their
// result once that way, after the heap gives its garbage back when the
// result is HugeEncoding or more. The output is encoding/json's, byte for
// byte.
//
// protocol imports only the standard library. Everything else may import it.
package protocol
