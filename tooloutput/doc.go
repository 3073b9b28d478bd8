// Package tooloutput budgets one tool output against the model's context
// window (docs/protocol.md, "Compaction"): the budget arithmetic, the cut
// to a head and a tail with a marker naming read_output, the id a cut
// output is saved under, and the pages read_output returns.
//
// It is pure: strings in, strings out. It reads no clock and touches no
// file; package tooloutput/saved saves and reads the whole outputs, and
// session (session/tooloutput.go) calls both with the turn's budget.
//
// tooloutput imports nothing of the module (internal/layers checks it).
package tooloutput
