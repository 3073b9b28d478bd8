// Package codex holds, as data, the reference for the Codex app-server
// protocol that apserver speaks: the JSON Schema that Codex 0.171.0
// generates for it (schema/, see SOURCE) and the distilled reference
// CORE.md. Nothing here is edited by hand; scripts/codex-schema.sh
// regenerates the schema and compares it with this copy.
//
// The package imports only embed: internal/wirecheck reads the schema
// through Schema.
package codex

import "embed"

// Schema is the schema directory, rooted so that "schema/ClientRequest.json"
// is a file in it.
//
//go:embed schema
var Schema embed.FS
