// Package cmdexec implements command/exec and its write, resize and
// terminate: a standalone process for the client (an editor's terminal),
// outside any thread, judged by the rules and sandbox a thread's commands
// get (which session decides: Service.Plan), with its output streamed as
// command/exec/outputDelta or collected into the answer. It owns the
// table of running processes. It must not import session.
package cmdexec
