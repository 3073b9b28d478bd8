package projects

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/apserver/apserver/manager"
)

// Heartbeat defaults.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultHeartbeatMax = 5 * time.Minute
)

// Heartbeat ticks every project whose mode is not off and that is not
// paused, until ctx ends: every interval while a tick starts or advances
// a run, twice as long after each round where none did (backing off while
// idle), up to max; with no such project it only looks again after max.
// Wake (a run changed) makes it tick at once.
// Its timers are the time package's (tests run it under testing/synctest).
func (s *Service) Heartbeat(ctx context.Context, every, max time.Duration) {
	if every <= 0 {
		every = DefaultHeartbeat
	}
	if max < every {
		max = every
	}
	wait := every
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
			// A run changed: tick now, not at the interval.
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		moved, any := s.beat(ctx)
		switch {
		case moved:
			wait = every
		case !any:
			wait = max
		default:
			wait = min(2*wait, max)
		}
		t.Reset(wait)
	}
}

// beat ticks each active project once: moved, some tick started or
// advanced a run; any, some project is active.
func (s *Service) beat(ctx context.Context) (moved, any bool) {
	db, err := s.opts.Store()
	if err != nil {
		s.opts.Log.Warn("heartbeat: the store", "err", err)
		return false, false
	}
	all, err := db.AllProjectSettings(ctx)
	if err != nil {
		s.opts.Log.Warn("heartbeat: reading projects", "err", err)
		return false, false
	}
	cwds := make([]string, 0, len(all))
	for cwd := range all {
		cwds = append(cwds, cwd)
	}
	sort.Strings(cwds)
	for _, cwd := range cwds {
		var st manager.Settings
		if json.Unmarshal(all[cwd], &st) != nil || st.Mode == manager.ModeOff || st.Mode == "" {
			continue
		}
		if st.Paused {
			s.attend(cwd, st, nil, s.opts.Clock.Now()) // a pause waits on a human (after a restart too)
			continue
		}
		any = true
		d, err := s.Tick(ctx, cwd)
		if err != nil {
			s.opts.Log.Warn("heartbeat: a tick failed", "cwd", cwd, "err", err)
			continue
		}
		moved = moved || d.Result == manager.ResultStartedRun || d.Result == manager.ResultAdvancedRun
	}
	return moved, any
}

// Wake makes the heartbeat tick now rather than at its next interval: a
// run of cwd changed (the runner's OnChange). It never blocks; wakes while
// a round is due coalesce. (A settings update does not wake it: a project
// set to full_auto starts at the next interval, or when asked: a tick, a
// message in chat.)
func (s *Service) Wake(cwd string) {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
