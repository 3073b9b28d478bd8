package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Follower is told of appends to the shared log (runner.Runner).
type Follower interface {
	// Announce: run id's log has grown to seq.
	Announce(id string, seq int64)
	// Poll: catch up with every log (notifications may have been lost).
	Poll()
}

// PollEvery is how often Follow polls besides listening: the fallback
// while the connection is down or notifications are lost.
const PollEvery = 2 * time.Second

// Follow tells f of every append (LISTEN on Channel) until ctx ends,
// reconnecting when the connection drops, and polls every PollEvery.
func Follow(ctx context.Context, pool *pgxpool.Pool, f Follower, log *slog.Logger) {
	listenAndPoll(ctx, PollEvery, f.Poll, func(ctx context.Context) error { return listen(ctx, pool, f) },
		log, "cluster: listening for run events; reconnecting")
}

// listenAndPoll calls poll every `every` and listen until ctx ends,
// listening again a second after each failure (the connection dropped,
// the database restarted), with a warning.
func listenAndPoll(ctx context.Context, every time.Duration, poll func(), listen func(context.Context) error, log *slog.Logger, warning string) {
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				poll()
			}
		}
	}()
	for ctx.Err() == nil {
		err := listen(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Warn(warning, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func listen(ctx context.Context, pool *pgxpool.Pool, f Follower) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	// What was appended while no one listened.
	f.Poll()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection may be broken: drop it from the pool.
			conn.Conn().Close(context.Background())
			return err
		}
		if id, seq, ok := ParseNotice(n.Payload); ok {
			f.Announce(id, seq)
		}
	}
}
