// Package explain implements policy/explain: it reports, in the wire's
// terms, what session decides for a command or a file path (the very plan
// a thread's command or file change would get, port.PolicyJudgment) and
// which rule says so. The decision is session's, on the thread's
// goroutine when a threadId is given; this package owns the answer's
// shape. It must not import session.
package explain
