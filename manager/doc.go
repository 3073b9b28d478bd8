// Package manager is the manager's decision core (docs/manager.md): given
// a project's settings, the ready tasks of its active phase (as
// blueprint.Next orders them), the runs it started and today's spend, Tick
// decides what the manager does now — nothing (idle, nothing to do, a
// budget exhausted, a human to wait for) or one effect (start a run for a
// task, approve a run's plan, mark the phase done). Intent from chat's
// pure part is here too (intent.go): the classifier's prompt and schema,
// the validation of its answer, the routing of a classification and the
// resolver of a START_BUILD's target against the blueprint tree.
//
// It is pure: no clock, I/O, goroutines or store; the driver (package
// projects) gathers the state, applies the effects and keeps every tick's
// input and decision as a receipt, so a tick replays to the same decision.
// It imports protocol and the standard library only.
package manager
