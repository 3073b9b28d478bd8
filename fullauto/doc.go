// Package fullauto owns full auto as a pure state machine, after etcd
// raft's RawNode/Ready: a thread's Machine takes events — the run started,
// paused, resumed or stopped, a turn started, a model response's usage, a
// turn ended with its summary, the workspace fingerprint, the decision
// model's answer, an approval asked, forwarded or settled, a goal set or
// cleared, a restart — each with the time, and returns effects — notify,
// save or delete the run, store a receipt, start a turn with this input
// (after a delay), fingerprint the workspace, ask the decision model,
// change attention, drop or resend a pending request, interrupt the turn.
// The session applies them in order, after its reply, and feeds results
// back as events (ReceiptStored, Fingerprinted, ModelAnswered,
// TimerFired, ResentAnswered).
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
