package runner

import "context"

// Call is one request to the runner, typed by its answer: a run, the
// stored runs, a revert. The methods of Runner that implement run/*
// (Start, Read, PlanApprove, Resume, ...) return one; the caller picks how
// to wait for the answer:
//
//   - Do waits for it: the headless commands (apserver run, apserver runs),
//     the manager and a cluster worker call the runner as a Go API.
//   - Then hands it to a function, exactly once. Where the request changes
//     a run, the function is called on the run's goroutine after the change
//     is stored and before the run applies its effects, so that whatever it
//     sends (the server's JSON-RPC response) goes out before the run's
//     notifications about the change (run/updated after run/cancel).
//
// A Call may be made more than once; each makes the request anew.
type Call[R any] func(ctx context.Context, then func(R, error))

// Do makes the request and waits for its answer. The runner answers every
// request; ctx is the request's (a canceled ctx ends the work it waits
// on, which then answers with an error).
func (c Call[R]) Do(ctx context.Context) (R, error) {
	type answer struct {
		v   R
		err error
	}
	ch := make(chan answer, 1)
	c(ctx, func(v R, err error) { ch <- answer{v, err} })
	a := <-ch
	return a.v, a.err
}

// Then makes the request and hands its answer to then, exactly once.
func (c Call[R]) Then(ctx context.Context, then func(R, error)) { c(ctx, then) }
