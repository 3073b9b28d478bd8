package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// The relay carries the server→client requests of a worker's threads (a
// command or file-change approval the run's autonomy leaves to a human, a
// requestUserInput, an MCP elicitation) to the editors, and their answer
// back. On the worker, RelayClient is the session's client: its Call
// stores the request in apserver_relay and waits for the answer. On the
// editor side, Relayed forwards each pending request to the editor's
// client as the same request (method and params unchanged) and puts it in
// the attention summary; the first answer from any editor is stored, once,
// and wakes the worker. Every change is announced on RelayChannel.

// RelayChannel is the channel on which relayed requests are announced
// (NOTIFY): when one is asked, answered or given up. The payload is the
// request's id.
const RelayChannel = "apserver_relay"

// RelayPollEvery is how often both ends look at the table besides
// listening: the fallback while notifications are lost.
const RelayPollEvery = time.Second

// relayWaker wakes the goroutines waiting on the relay's requests: one
// LISTEN connection per process, polling as its fallback.
type relayWaker struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	subs map[int]chan struct{}
	n    int
}

func newRelayWaker(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) *relayWaker {
	w := &relayWaker{pool: pool, log: log, subs: map[int]chan struct{}{}}
	go w.run(ctx)
	return w
}

// subscribe returns a channel that gets a value whenever something may
// have changed (a notice, a poll tick, a reconnection).
func (w *relayWaker) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.n++
	k := w.n
	w.subs[k] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, k)
		w.mu.Unlock()
	}
}

func (w *relayWaker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (w *relayWaker) run(ctx context.Context) {
	listenAndPoll(ctx, RelayPollEvery, w.wake, w.listen, w.log, "cluster: listening for relayed requests; reconnecting")
}

func (w *relayWaker) listen(ctx context.Context) error {
	conn, err := w.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+RelayChannel); err != nil {
		return err
	}
	w.wake() // what changed while no one listened
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			conn.Conn().Close(context.Background())
			return err
		}
		w.wake()
	}
}

// relayAnswer is what is stored as a request's answer: the client's
// result, or its JSON-RPC error.
type relayAnswer struct {
	Result json.RawMessage    `json:"result,omitempty"`
	Error  *protocol.RPCError `json:"error,omitempty"`
}

// RelayClient is the session client of a worker: notifications go to
// Next (the worker has no client of its own to show them to); requests
// are relayed to the editors.
type RelayClient struct {
	pool   *pgxpool.Pool
	worker string
	next   session.Client
	waker  *relayWaker
	log    *slog.Logger
}

var _ session.Client = (*RelayClient)(nil)

// NewRelayClient makes the client of worker's threads over a migrated
// database; it listens for answers until ctx ends. Notifications go to
// next.
func NewRelayClient(ctx context.Context, pool *pgxpool.Pool, worker string, next session.Client, log *slog.Logger) *RelayClient {
	if log == nil {
		log = slog.Default()
	}
	return &RelayClient{pool: pool, worker: worker, next: next, waker: newRelayWaker(ctx, pool, log), log: log}
}

// Notify implements session.Client.
func (c *RelayClient) Notify(method string, params any) { c.next.Notify(method, params) }

// Call implements session.Client: the request is stored (with the run of
// its thread) and announced; Wait waits for an editor's answer.
func (c *RelayClient) Call(method string, params any) session.ClientCall {
	call := &relayCall{c: c}
	raw, err := json.Marshal(params)
	if err != nil {
		call.err = fmt.Errorf("cluster: relaying %s: %w", method, err)
		return call
	}
	var ids struct {
		ThreadID string `json:"threadId"`
		ItemID   string `json:"itemId"`
	}
	_ = json.Unmarshal(raw, &ids)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// The run whose task thread asks: the taskStarted event naming it.
		var run string
		if ids.ThreadID != "" {
			err := tx.QueryRow(ctx, `SELECT run_id FROM apserver_run_events WHERE type = 'taskStarted' AND event->>'threadId' = $1 ORDER BY seq DESC LIMIT 1`, ids.ThreadID).Scan(&run)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `INSERT INTO apserver_relay (run_id, thread_id, item_id, method, params, worker, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
			run, ids.ThreadID, ids.ItemID, method, string(raw), c.worker, time.Now().UnixMilli()).Scan(&call.id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RelayChannel, strconv.FormatInt(call.id, 10))
		return err
	})
	if err != nil {
		call.err = fmt.Errorf("cluster: relaying %s to the editors: %w", method, err)
	}
	return call
}

type relayCall struct {
	c   *RelayClient
	id  int64
	err error
}

func (r *relayCall) ID() int64 { return r.id }

// Wait waits for the first answer stored, polling as a fallback. When ctx
// ends first the request is given up: it leaves the editors' attention.
func (r *relayCall) Wait(ctx context.Context) (json.RawMessage, error) {
	if r.err != nil {
		return nil, r.err
	}
	wake, stop := r.c.waker.subscribe()
	defer stop()
	for {
		var text *string
		var closed bool
		err := r.c.pool.QueryRow(ctx, `SELECT answer::text, closed FROM apserver_relay WHERE id = $1`, r.id).Scan(&text, &closed)
		if err == nil && text == nil && closed {
			// Given up elsewhere (its run ended, its worker was taken for
			// dead): no answer will come.
			return nil, fmt.Errorf("cluster: relayed request %d was withdrawn: its run ended", r.id)
		}
		if err == nil && text != nil {
			var a relayAnswer
			if err := json.Unmarshal([]byte(*text), &a); err != nil {
				return nil, fmt.Errorf("cluster: the answer to relayed request %d: %w", r.id, err)
			}
			if a.Error != nil {
				return nil, a.Error
			}
			return a.Result, nil
		}
		if err != nil && ctx.Err() == nil {
			r.c.log.Warn("cluster: reading a relayed request's answer", "id", r.id, "err", err)
		}
		select {
		case <-ctx.Done():
			r.giveUp()
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

// giveUp closes the request unless it was answered meanwhile.
func (r *relayCall) giveUp() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, r.c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE apserver_relay SET closed = true WHERE id = $1 AND answer IS NULL`, r.id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RelayChannel, strconv.FormatInt(r.id, 10))
		return err
	})
	if err != nil {
		r.c.log.Warn("cluster: giving up a relayed request", "id", r.id, "err", err)
	}
}

// Answer stores the answer to relayed request id unless it was answered
// or given up before: it reports whether this one was stored.
func Answer(ctx context.Context, pool *pgxpool.Pool, id int64, by string, result json.RawMessage, rpcErr *protocol.RPCError) (bool, error) {
	b, err := json.Marshal(relayAnswer{Result: result, Error: rpcErr})
	if err != nil {
		return false, err
	}
	var stored bool
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE apserver_relay SET answer = $2, answered_by = $3 WHERE id = $1 AND answer IS NULL AND NOT closed`, id, string(b), by)
		if err != nil {
			return err
		}
		stored = tag.RowsAffected() == 1
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, RelayChannel, strconv.FormatInt(id, 10))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("cluster: answering relayed request %d: %w", id, err)
	}
	return stored, nil
}

// GiveUpDead gives up the pending requests of workers whose last
// heartbeat is older than deadAfter, or that stopped (their row is gone): their threads died with them (the
// task starts again elsewhere, in a thread that asks again), so no answer
// could reach them; and those of runs that ended (a cancel that landed
// just as the request was relayed may not have interrupted the asking
// turn: its wait ends here). It returns how many it gave up.
func GiveUpDead(ctx context.Context, pool *pgxpool.Pool, deadAfter time.Duration) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE apserver_relay SET closed = true WHERE answer IS NULL AND NOT closed
			AND (worker IN (SELECT id FROM apserver_workers WHERE heartbeat_at < now() - make_interval(secs => $1))
				OR worker NOT IN (SELECT id FROM apserver_workers)
				OR run_id IN (SELECT id FROM apserver_runs WHERE status IN ('completed', 'failed', 'cancelled')))`, deadAfter.Seconds())
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if n > 0 {
			_, err = tx.Exec(ctx, `SELECT pg_notify($1, '')`, RelayChannel)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cluster: giving up the requests of dead workers: %w", err)
	}
	return n, nil
}

// RelayRequest is a relayed request waiting for its answer.
type RelayRequest struct {
	ID              int64
	RunID, ThreadID string
	ItemID, Method  string
	Worker          string // the worker whose thread asks
	Params          json.RawMessage
	CreatedAt       int64
}

// Pending is the relayed requests still waiting for an answer, oldest
// first.
func Pending(ctx context.Context, pool *pgxpool.Pool) ([]RelayRequest, error) {
	rows, err := pool.Query(ctx, `SELECT id, run_id, thread_id, item_id, method, worker, params::text, created_at FROM apserver_relay
		WHERE answer IS NULL AND NOT closed ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("cluster: relayed requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RelayRequest, error) {
		var x RelayRequest
		var text string
		err := r.Scan(&x.ID, &x.RunID, &x.ThreadID, &x.ItemID, &x.Method, &x.Worker, &text, &x.CreatedAt)
		x.Params = json.RawMessage(text)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: relayed requests: %w", err)
	}
	return out, nil
}

// RelayAttention is where the editor side shows a relayed request that
// waits (session.Manager's SetRelayAttention, ClearRelayAttention): as
// the item of the worker's thread, which stands for the run's own item
// (waiting on that thread) as on one machine.
type RelayAttention interface {
	SetRelayAttention(id int64, it protocol.AttentionItem)
	ClearRelayAttention(id int64, threadID string)
}

// Relayed forwards, until ctx ends, every pending relayed request to
// client as the same server→client request, shows it in attn, and stores
// the client's answer (the first of all editors wins); a request answered
// elsewhere or given up by its worker is withdrawn. by names this process
// in the stored answer. ready, if set, says whether the client may be
// sent requests (it has initialized); nothing is forwarded before.
func Relayed(ctx context.Context, pool *pgxpool.Pool, client session.Client, attn RelayAttention, by string, ready func() bool, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	waker := newRelayWaker(ctx, pool, log)
	wake, stop := waker.subscribe()
	defer stop()
	var mu sync.Mutex
	inflight := map[int64]context.CancelFunc{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		if ready != nil && !ready() {
			continue // looked at again on the next tick
		}
		reqs, err := Pending(ctx, pool)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("cluster: reading the relayed requests", "err", err)
			}
			continue
		}
		pending := map[int64]bool{}
		mu.Lock()
		for _, r := range reqs {
			pending[r.ID] = true
			if inflight[r.ID] != nil {
				continue
			}
			cctx, cancel := context.WithCancel(ctx)
			inflight[r.ID] = cancel
			attn.SetRelayAttention(r.ID, relayItem(r))
			go func(r RelayRequest) {
				defer func() {
					attn.ClearRelayAttention(r.ID, r.ThreadID)
					mu.Lock()
					if inflight[r.ID] != nil {
						delete(inflight, r.ID)
					}
					mu.Unlock()
					cancel()
				}()
				call := client.Call(r.Method, r.Params)
				raw, err := call.Wait(cctx)
				// The client is told the request is settled, as for a
				// request of a thread of its own: answered here or
				// elsewhere, or given up by the worker.
				resolved := func() {
					attn.ClearRelayAttention(r.ID, r.ThreadID)
					client.Notify(protocol.NotifyServerRequestResolved, protocol.ServerRequestResolvedNotification{ThreadID: r.ThreadID, RequestID: call.ID()})
				}
				if ctx.Err() != nil {
					return // shutting down
				}
				if cctx.Err() != nil {
					resolved() // answered elsewhere, or given up
					return
				}
				var rpcErr *protocol.RPCError
				if err != nil && !errors.As(err, &rpcErr) {
					// No client to answer (the connection closed): left
					// pending, forwarded again on a later look.
					log.Info("cluster: a relayed request got no answer here", "id", r.ID, "err", err)
					return
				}
				if _, err := Answer(ctx, pool, r.ID, by, raw, rpcErr); err != nil {
					log.Warn("cluster: storing a relayed request's answer", "id", r.ID, "err", err)
				}
				resolved()
			}(r)
		}
		for id, cancel := range inflight {
			if !pending[id] {
				cancel()
			}
		}
		mu.Unlock()
	}
}

// relayItem is the attention item of a relayed request.
func relayItem(r RelayRequest) protocol.AttentionItem {
	kind := protocol.AttentionApproval
	switch r.Method {
	case protocol.RequestUserInput, protocol.RequestMcpServerElicitation:
		kind = protocol.AttentionQuestion
	}
	return protocol.AttentionItem{ThreadID: r.ThreadID, RunID: r.RunID, Kind: kind,
		Reason: r.Method + " from worker " + r.Worker, SinceMs: r.CreatedAt}
}
