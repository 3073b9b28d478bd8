// Package fullauto owns full auto as a pure state machine, after etcd
// raft's RawNode/Ready, with the contract every pure core here keeps
// (runs.Machine too): Apply(now, Event) []Effect. A thread's Machine takes
// events — the drive started, paused, resumed or stopped, a turn started, a
// model response's usage, a turn ended with its summary, the workspace
// fingerprint, the decision model's answer, an approval asked, forwarded
// or settled, a goal set or cleared, a restart (event.go) — each with the
// time, and returns effects — notify, save or delete the drive, store a
// receipt, start a turn with this input (after a delay), fingerprint the
// workspace, ask the decision model, change attention, drop or resend a
// pending request, interrupt the turn (effects.go). What an event asks is
// answered among its effects (Refused, GoalAnswer, GoalCleared, Verdict,
// AskAboutRequest, Tracked, CarryOn). The session applies them in order,
// after its reply, and feeds results back as events (ReceiptStored,
// Fingerprinted, ModelAnswered, TimerFired, ResentAnswered).
//
// While a thread has a drive, every event it applies goes into the drive's
// log (LogEvent, the first effect, stored before the others are carried
// out). Replay rebuilds the machine from the log (a restart), and
// ReplayLog makes the drive's decisions again from it (apserver replay). A
// drive stored before drives had a log comes back from its snapshot (Loaded),
// which starts its log.
//
// Every rule that changes a decision lives here or in controller: the
// controller's Decide and Approve, the overrides of Resolve, whether the
// decision model has a say (ModelHasSay), the accounting of tokens, cost
// and time, the retry cooldown (Backoff), the approval ladder. So a
// receipt replays completely (ReplayDecision, ReplayApproval).
//
// fullauto has no goroutines, no I/O and no clock reads. It imports only
// controller, protocol and the standard library.
package fullauto
