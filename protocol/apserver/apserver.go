// Package apserver holds, as data, the JSON Schema of apserver's own
// protocol extensions: the methods and notifications that Codex's
// app-server protocol (protocol/codex) does not have, such as fullAuto/*,
// attention and policy/explain. It is written by hand from docs/fullauto.md
// and docs/protocol.md, in the layout of Codex's schema (tagged unions in
// ClientRequest.json and ServerNotification.json, every type in
// apserver.schemas.json), and internal/wirecheck checks every message of
// the e2e tests against it. It is also the source that internal/protogen
// (`make generate`) generates the method constants, the VS Code
// extension's wire types and the Neovim plugin's method names from: to add
// a method, add it here and regenerate.
//
// The package imports only embed.
package apserver

import "embed"

// Schema is the schema directory, rooted so that
// "schema/ClientRequest.json" is a file in it.
//
//go:embed schema
var Schema embed.FS
