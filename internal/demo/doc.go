// Package demo is `apserver demo`: an offline tour of apserver as an editor
// sees it.
//
// Run starts the scripted model (model/scripted) on 127.0.0.1, lays out a
// tiny project in a temp directory, spawns the apserver binary itself as an
// app-server child (`apserver serve` over stdin/stdout pipes) and drives three
// turns through the protocol: a greeting that streams reasoning and an
// answer; "run the tests", where the model calls exec_command, the server
// asks item/commandExecution/requestApproval and the demo approves; and an
// edit, where the model updates its plan, sends an apply_patch that arrives
// as a fileChange item with diffs and an item/fileChange/requestApproval,
// and re-runs the tests. Then thread/revert undoes that last turn from its
// checkpoint. Everything the server sends is rendered as a live view; --json
// adds the raw protocol lines.
//
// This package owns the demo's script, its workspace, its small JSON-RPC line
// client and the live view. It speaks only the wire protocol, like any
// editor: it must not import server, session or store (nor protocol, so that
// it reads the wire the way a third-party client would).
package demo
