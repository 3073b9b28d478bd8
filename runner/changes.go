package runner

// SetOnChange sets a function called with a run's repository whenever a
// run's state changes (run/updated, run/completed): the manager's
// heartbeat ticks the project then instead of waiting for its interval
// (docs/manager.md#the-heartbeat). It must not block. Call it before runs
// start.
func (rn *Runner) SetOnChange(f func(cwd string)) {
	rn.mu.Lock()
	rn.onChange = f
	rn.mu.Unlock()
}

// changed tells the OnChange function of a change of run x, if method is
// one.
func (x *run) changed(method string) {
	if method != "run/updated" && method != "run/completed" {
		return
	}
	x.rn.mu.Lock()
	f := x.rn.onChange
	x.rn.mu.Unlock()
	if f != nil {
		f(x.m.Config().Cwd)
	}
}
