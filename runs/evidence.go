package runs

import "fmt"

// CheckAttempt is one run of a check (a test, build or linter, as the
// command rules tell them) in a task's thread: what the implementer did to
// show that its work is done.
type CheckAttempt struct {
	// Command is the command item's command line.
	Command string
	// Declined: the command was not run (a rule, full auto or a human
	// declined it).
	Declined bool
	// ExitCode is nil when the command never ran to an exit (it could not
	// start, or was cut off).
	ExitCode *int
}

// MissingEvidence is the run's rule that a claim of completion is not
// completion. A check the task's thread attempted whose last attempt was
// declined, failed or never finished leaves the task unproven, unless the
// validator runs that very check itself (one of the task's acceptance
// checks, given as command lines in covered): each such check is one line,
// naming it, and the task is not validated. Attempts are in the order they
// were made; only the last of each command counts, so a check that failed
// and then passed is evidence.
func MissingEvidence(attempts []CheckAttempt, covered []string) []string {
	cover := map[string]bool{}
	for _, c := range covered {
		cover[c] = true
	}
	last := map[string]CheckAttempt{}
	var order []string
	for _, a := range attempts {
		if _, seen := last[a.Command]; !seen {
			order = append(order, a.Command)
		}
		last[a.Command] = a
	}
	var out []string
	for _, cmd := range order {
		a := last[cmd]
		if cover[cmd] {
			continue
		}
		switch {
		case a.Declined:
			out = append(out, fmt.Sprintf("check `%s` in the task's thread was declined: no check confirms the task", cmd))
		case a.ExitCode == nil:
			out = append(out, fmt.Sprintf("check `%s` in the task's thread never finished: no check confirms the task", cmd))
		case *a.ExitCode != 0:
			out = append(out, fmt.Sprintf("check `%s` in the task's thread failed (exit %d)", cmd, *a.ExitCode))
		}
	}
	return out
}
