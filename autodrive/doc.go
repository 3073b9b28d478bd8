// Package autodrive carries out full auto's effects for a thread: what
// the pure machine (package fullauto) decides, autodrive does — the
// summary of a finished turn the machine reads, the workspace fingerprint,
// the approval requests as the rules and the decision model read them.
//
// autodrive is a leaf (layer 4): it may import fullauto, controller,
// internal/drive, internal/clock, store, model, config, protocol and the
// tools, and must never import session, which uses it.
package autodrive
