// Package projects drives the manager (docs/manager.md): it keeps each
// workspace's project settings, gathers the state a tick decides on (the
// active phase's ready tasks from the blueprints service, the runs of the
// blueprint from the runner, today's spend), asks the pure core (package
// manager) for a decision, applies its effect (start a run, approve a
// run's plan, mark the phase done) and stores the tick's input and
// decision as a receipt. One lock per workspace makes ticks idempotent:
// two ticks at once start one run. A heartbeat ticks each project whose
// mode is not off. Intent from chat (intent.go) routes the user messages
// of a project's threads: the classifier asked (retried once), the
// routing applied (set the phase and tick, resume, pause, re-ingest the
// blueprint once confirmed), each routing a receipt among the ticks. What
// of a project waits on a human goes to the attention summary
// (attention.go). It does not import session: the intent types are the
// thread port's (session/port), so Service is session's IntentRouter as it is.
//
// It sits beside runner and blueprints and imports neither: both are
// reached through the small interfaces Runs and Blueprints (wired in
// cmd/apserver and server).
package projects
