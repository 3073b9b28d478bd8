// Package agenttools is the catalogue of the agent's own tools: their
// names (and exec_command's aliases), descriptions and parameter schemas,
// apply_patch's free-form grammar, the list a model request offers
// (Build), exec_command's arguments, the tool switches of a thread/start
// config override (Disabled, Off, Without), and the undoing of doubly
// encoded arguments.
//
// It runs no tool: session dispatches the calls (session/tools.go) to the
// packages that carry them out.
package agenttools
