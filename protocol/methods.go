package protocol

//go:generate go run ../internal/protogen -root ..

// The method names of the protocol are constants in methods_gen.go,
// generated from the schemas (protocol/codex/schema and
// protocol/apserver/schema) by internal/protogen: MethodTurnStart,
// NotifyTurnCompleted, RequestCommandApproval and the rest. To add a
// method, add it to the schema and run `make generate`.

// MethodCancelRequest is JSON-RPC's cancellation notification, below the
// schemas (LSP's "$/cancelRequest", which Codex clients send as well).
const MethodCancelRequest = "$/cancelRequest"
