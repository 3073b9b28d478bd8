// Package controller owns the full-auto policy: after each turn of an
// autonomous run, Decide turns a finished turn (plus the run's history,
// budgets and configuration) into a Decision: continue, review, pause or
// stop, with the input of the next turn, a reason, a confidence, a stop
// condition and the id of the rule that fired.
//
// controller is pure: no goroutines, no I/O, no clock reads, no randomness;
// time arrives as inputs in milliseconds. The same Input always gives the
// same Decision, so every decision is stored as a Receipt and can be
// replayed (Replay) against the current policy (PolicyHash). It imports
// only the standard library and must not import any apserver package; the
// session calls it and performs whatever it decides, including asking the
// decision model (ModelInstructions, ModelSchema, ModelPrompt,
// ParseModelAnswer) and answering approvals (Approve).
//
// # Policy
//
// Rules are tried in this order; the first that fires decides. Steps 1 to
// 7 are hard rules: a decision model's answer never overrides them. Rule
// ids are stored in receipts; renaming one is a policy change.
//
//  1. userStop: the user stopped the drive → stop/userStop.
//  2. A failed turn. failed.unrecoverable: not recoverable, or no error
//     given → stop/failedUnrecoverable. retry: recoverable and Retries ≤
//     MaxRetries → continue with an empty NextInput, meaning "re-run the
//     same input". retry.exhausted: more failures in a row → pause with
//     retriesExhausted (the run is blocked; the reason names the error).
//  3. Budgets, spent ≥ budget, in this order: budget.tokens,
//     budget.turns, budget.time (Spent.TimeMs), budget.cost → stop with
//     budgetTokens, budgetTurns, budgetTime or budgetCost. Then
//     waiting.interrupted: the turn was interrupted without a user stop →
//     pause/waitingOnHuman; as in Codex, nothing (not even a wrap-up)
//     follows an interrupt automatically.
//  4. Soft landing, when Config.WrapUp is on and the forecast (the run's
//     mean spend per turn; one turn for the turn budget) says the next
//     turn would use up a budget. softLanding.wrapUp → continue with
//     WrapUp=true and a NextInput asking for a clean state (tests passing
//     or the change reverted, plan updated) and a handoff note.
//     softLanding.stop: the turn just finished was that wrap-up → stop
//     with the budget's condition. A completion the evidence confirms (the
//     agent's claim, or a review's approval) skips this step, so a
//     finished run ends as completed.
//  5. A human is needed. waiting.approvalTimeout: an approval went
//     unanswered past the session's deadline → stop/approvalTimeout.
//     waiting.approval, waiting.question: approvals or questions pending
//     → pause/waitingOnHuman.
//  6. Stuck patterns (below) → stop with stuckLoop, emptyReplies,
//     compactionThrash or repeatedError.
//  7. noProgress: the last NoProgressTurns turns each left the progress
//     fingerprint (workspace and diff fingerprints, plan, and the actions
//     and normalized results of the steps) of the turn before unchanged →
//     stop/noProgress. Turns that end WaitingOnProcess, and review turns,
//     neither count nor break the streak; when the current turn is one of
//     them the rule does not fire.
//  8. Completion. A claim of completion is not completion. review.approved:
//     a review turn accepted the work and the evidence agrees →
//     stop/completed. review.rejected: a review turn did not accept it, or
//     gave no verdict → continue with the reviewer's text. When the agent
//     says it is done (ClaimsDone; an empty reply never does):
//     done.disputed: the evidence disagrees (a plan step not completed, or
//     the latest check outcome of the run failed) → continue with a
//     NextInput naming the disagreement; done.unverified: nothing
//     contradicts the claim but no check confirms it where one was due — a
//     check the agent tried did not run (TurnSummary.ChecksNotRun:
//     declined, refused, unable to start) and no turn since ran passing
//     checks without such a miss, or the objective names checks
//     (NamedChecks: `make test` in backquotes, "make the tests pass") and
//     none ran in the kept turns → stop/waitingOnHuman (not completed: a
//     human reviews it), the reason naming the missing check (also after
//     an approving review); done.review:
//     ReviewOnDone and no review approved the current workspace state →
//     review, with review instructions as NextInput; done →
//     stop/completed.
//  9. continue: otherwise → continue with a NextInput built from the
//     objective, the unfinished plan steps, a failed check and the budget
//     left. The text is deterministic.
//  10. When Input.Model holds the decision model's answer it replaces the
//     decision of steps 8 and 9 (Source "model"). model.lowConfidence:
//     confidence below MinConfidence, or an unknown action → pause with
//     lowConfidence. model.stopDisputed: the model says stop while the
//     evidence disagrees → pause/waitingOnHuman. model.stopUnverified: the
//     model says stop where done.unverified would fire →
//     stop/waitingOnHuman. model: otherwise its
//     action and NextInput (an empty NextInput takes the policy's); stop
//     is stop/completed, pause is pause/waitingOnHuman.
//
// # Stuck patterns
//
// After OpenHands' stuck detector. Step patterns look at the steps of the
// kept turns flattened in order, and fire only if the current turn ran a
// step; two steps are equal when tool, action, result and error flag are.
//
//   - stuck.sameActionError: the last 3 steps are errors of the same
//     action → stuckLoop.
//   - stuck.sameActionResult: the last 4 steps are equal → stuckLoop.
//   - stuck.alternation: the last 6 steps are A-B-A-B-A-B → stuckLoop.
//   - A turn that ends WaitingOnProcess is polling a running process: it is
//     exempt from the two patterns above (budgets still bound it).
//   - stuck.sameMessage: the same agent message, ignoring case and spacing,
//     3 turns in a row → stuckLoop.
//   - stuck.emptyReplies: 3 empty replies in a row → emptyReplies.
//   - stuck.compactionStreak: ≥ 10 compactions over the trailing turns
//     that ran no step → compactionThrash.
//   - stuck.compactionNoProgress: ≥ CompactionTimes compactions over the
//     trailing turns without progress (as in step 7) → compactionThrash.
//   - stuck.repeatedError: the same error ended the last SameErrorTimes
//     turns → repeatedError. A turn's error is its own failure, or its last
//     failed step (action and result) unless the same action succeeded
//     later in the turn.
//
// # Confidence
//
// Policy decisions carry a fixed confidence: 1.0 for steps 1 to 5; 0.9
// for the stuck patterns and a rejected review; 0.8 for compaction thrash
// and no progress (fingerprints can miss real progress), a disputed
// completion, a review request and a completion no check confirmed; 0.95
// for a completion with passing checks or an approved review; 0.7 for a
// plain continue. Model decisions carry the model's confidence.
//
// # Approvals
//
// Approve answers approval requests under full auto, with these rule ids:
//
//   - ask: strategy "ask" forwards everything to a human.
//   - never, never.forbidden, never.privileged, never.escalated,
//     never.opaque: strategy "never" accepts everything but what the rules
//     forbid, what runs a command as another user (Privileged), what asks
//     to run outside the sandbox, and an opaque command outside the
//     sandbox, which it declines. Inside the sandbox an opaque command is
//     accepted like any other.
//   - policy.ruleAllow, policy.writableRoots, policy.sandboxed: strategy
//     "policy" accepts what the rules allow, file changes inside the
//     writable roots, and sandboxed commands the rules only prompt for
//     (opaque ones included).
//   - policy.forbidden, policy.privileged, policy.escalated, policy.opaque,
//     policy.forward: it forwards the rest, forbidden and privileged
//     commands included: only a human may run those.
//   - denials.prefixBlocked: under "never" and "policy", a command prefix
//     (first two words) a human declined 3 times is declined.
//   - never.question, policy.question: questions are forwarded; the
//     session asks the decision model.
//   - unknownStrategy: anything else forwards.
package controller
