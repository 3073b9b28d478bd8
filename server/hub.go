package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// Hub is the session.Client of a server that takes several connections
// (ws:// and unix:// listeners). It routes what the session sends:
//
//   - a notification whose params carry a top-level "threadId" goes to the
//     connections subscribed to that thread; any other notification
//     (thread/started among them) goes to every initialized connection;
//   - a server→client request (an approval, a question) goes to every
//     connection subscribed to its thread; the first answer wins and the
//     copies still out are dropped. A request that no connection can answer
//     waits: it is sent again, with the same id, to the next connection that
//     subscribes to its thread (a client that reconnects and resumes).
//
// A connection subscribes to a thread by starting, resuming or forking it,
// and unsubscribes with thread/unsubscribe or by closing. Threads, turns
// and full-auto runs belong to the session, not to a connection: they go on
// when the connection that started them closes.
type Hub struct {
	log    *slog.Logger
	nextID atomic.Int64

	// OnAbandoned, when set, runs (on a goroutine of its own) for a thread
	// whose last subscriber unsubscribed or disconnected.
	OnAbandoned func(threadID string)
	// OnWatchGone, when set, runs (on a goroutine of its own) for each
	// fs/watch of a connection that closed, with the session's watch id.
	OnWatchGone func(watchID string)
	// OnProcessGone, when set, runs (on a goroutine of its own) for each
	// command/exec process still running when its connection closed, with
	// the session's process id.
	OnProcessGone func(processID string)

	nextTag atomic.Int64

	mu      sync.Mutex
	conns   map[*Server]map[string]bool // connection → subscribed thread ids
	pending map[int64]*hubCall
	// fs/watch ids are the client's, so two clients may pick the same one:
	// the session sees them prefixed with the connection's tag.
	tags    map[*Server]string
	byTag   map[string]*Server
	watches map[*Server]map[string]bool // connection → session watch ids
	procs   map[*Server]map[string]int  // connection → running command/exec process ids (requests in flight)
}

// NewHub returns an empty hub.
func NewHub(log *slog.Logger) *Hub {
	if log == nil {
		log = slog.Default()
	}
	return &Hub{log: log, conns: map[*Server]map[string]bool{}, pending: map[int64]*hubCall{},
		tags: map[*Server]string{}, byTag: map[string]*Server{}, watches: map[*Server]map[string]bool{},
		procs: map[*Server]map[string]int{}}
}

// Client returns the hub as the session sees it.
func (h *Hub) Client() session.Client { return hubClient{h} }

// Broadcast is a client whose requests and notifications go to every
// initialized connection, whatever thread they name: for the requests of
// threads that no connection here can follow (a cluster worker's threads,
// relayed through the database). A connection that initializes while such
// a request waits gets it too; the first answer settles it for all.
func (h *Hub) Broadcast() session.Client { return broadcastClient{hubClient{h}} }

type broadcastClient struct{ hubClient }

func (c broadcastClient) Notify(method string, params any) { c.NotifyThread("", method, params) }

func (c broadcastClient) Call(method string, params any) session.ClientCall {
	h := c.h
	call, ok := h.newCall(h.nextID.Add(1)-1, method, params, true)
	if !ok {
		return call
	}
	for _, s := range h.targets("") {
		if s.state.Load() != nil {
			call.sendTo(s)
		}
	}
	return call
}

// initialized sends a connection that has just initialized the requests
// for everyone still waiting for an answer.
func (h *Hub) initialized(s *Server) {
	h.mu.Lock()
	var resend []*hubCall
	for _, c := range h.pending {
		if c.everyone {
			resend = append(resend, c)
		}
	}
	h.mu.Unlock()
	for _, c := range resend {
		c.sendTo(s)
	}
}

// Subscribed reports whether s receives threadID's notifications.
func (h *Hub) Subscribed(s *Server, threadID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[s][threadID]
}

func (h *Hub) attach(s *Server) {
	tag := fmt.Sprintf("c%d:", h.nextTag.Add(1))
	h.mu.Lock()
	h.conns[s] = map[string]bool{}
	h.tags[s], h.byTag[tag] = tag, s
	h.watches[s] = map[string]bool{}
	h.procs[s] = map[string]int{}
	h.mu.Unlock()
}

func (h *Hub) detach(s *Server) {
	h.mu.Lock()
	subs := h.conns[s]
	delete(h.conns, s)
	delete(h.byTag, h.tags[s])
	delete(h.tags, s)
	watches := h.watches[s]
	delete(h.watches, s)
	procs := h.procs[s]
	delete(h.procs, s)
	var gone []string
	for tid := range subs {
		if !h.followedLocked(tid) {
			gone = append(gone, tid)
		}
	}
	h.mu.Unlock()
	h.abandoned(gone...)
	if h.OnWatchGone != nil {
		for id := range watches {
			go h.OnWatchGone(id)
		}
	}
	if h.OnProcessGone != nil {
		for id := range procs {
			go h.OnProcessGone(id)
		}
	}
}

// endProcesses ends s's command/exec processes (OnProcessGone).
func (h *Hub) endProcesses(s *Server) {
	h.mu.Lock()
	ids := make([]string, 0, len(h.procs[s]))
	for id := range h.procs[s] {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if h.OnProcessGone != nil {
		for _, id := range ids {
			go h.OnProcessGone(id)
		}
	}
}

// processStarted and processEnded track a connection's command/exec
// processes, so that they end with it.
func (h *Hub) processStarted(s *Server, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.procs[s]; p != nil {
		p[id]++
	}
}

func (h *Hub) processEnded(s *Server, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.procs[s]; p != nil {
		if p[id]--; p[id] <= 0 {
			delete(p, id)
		}
	}
}

// scopeWatch prefixes the watchId of fs/watch and fs/unwatch params with
// the connection's tag; it returns the params and the scoped id ("" when
// there is none to scope: the session then refuses the params itself).
func (h *Hub) scopeWatch(s *Server, params json.RawMessage) (json.RawMessage, string) {
	return h.scopeID(s, params, "watchId")
}

// scopeID prefixes the id under key of params with the connection's tag:
// ids that clients choose (fs/watch's watchId, command/exec's processId)
// are the connection's, so two clients may pick the same one.
func (h *Hub) scopeID(s *Server, params json.RawMessage, key string) (json.RawMessage, string) {
	var p map[string]any
	if len(params) == 0 || params[0] != '{' || json.Unmarshal(params, &p) != nil {
		return params, ""
	}
	id, ok := p[key].(string)
	if !ok || id == "" {
		return params, ""
	}
	h.mu.Lock()
	tag := h.tags[s]
	h.mu.Unlock()
	p[key] = tag + id
	b, err := json.Marshal(p)
	if err != nil {
		return params, ""
	}
	return b, tag + id
}

// watchTarget routes an fs/changed notification: the connection that
// made the watch, and the params with the client's own watch id.
func (h *Hub) watchTarget(raw json.RawMessage) (*Server, json.RawMessage) {
	return h.scopedTarget(raw, "watchId")
}

// scopedTarget routes a notification about a connection's own id (see
// scopeID): the connection, and the params with the client's own id.
func (h *Hub) scopedTarget(raw json.RawMessage, key string) (*Server, json.RawMessage) {
	var p map[string]any
	if json.Unmarshal(raw, &p) != nil {
		return nil, nil
	}
	id, _ := p[key].(string)
	tag, rest, ok := strings.Cut(id, ":")
	if !ok {
		return nil, nil
	}
	h.mu.Lock()
	s := h.byTag[tag+":"]
	h.mu.Unlock()
	if s == nil {
		return nil, nil
	}
	p[key] = rest
	b, err := json.Marshal(p)
	if err != nil {
		return nil, nil
	}
	return s, b
}

// followedLocked reports whether any connection is subscribed to threadID.
func (h *Hub) followedLocked(threadID string) bool {
	for _, subs := range h.conns {
		if subs[threadID] {
			return true
		}
	}
	return false
}

func (h *Hub) abandoned(ids ...string) {
	if h.OnAbandoned == nil {
		return
	}
	for _, id := range ids {
		go h.OnAbandoned(id)
	}
}

// mark adds threadID to s's subscriptions.
func (h *Hub) mark(s *Server, threadID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if subs, ok := h.conns[s]; ok && threadID != "" {
		subs[threadID] = true
	}
}

// subscribe adds threadID to s's subscriptions and sends s the requests
// of that thread still waiting for an answer.
func (h *Hub) subscribe(s *Server, threadID string) {
	if threadID == "" {
		return
	}
	h.mark(s, threadID)
	h.mu.Lock()
	var resend []*hubCall
	for _, c := range h.pending {
		if c.threadID == threadID {
			resend = append(resend, c)
		}
	}
	h.mu.Unlock()
	for _, c := range resend {
		c.sendTo(s)
	}
}

// replied runs after a request's answer is queued: a thread started,
// resumed or forked subscribes the connection (after the answer, so that
// requests re-sent to it come after the answer too).
func (h *Hub) replied(rs *requestState, result any, err error) {
	if rs.method == protocol.MethodCommandExec {
		if rs.processID != "" {
			h.processEnded(rs.s, rs.processID)
		}
		return
	}
	if rs.watchID != "" && err == nil {
		h.mu.Lock()
		if w := h.watches[rs.s]; w != nil {
			if rs.method == protocol.MethodFsWatch {
				w[rs.watchID] = true
			} else {
				delete(w, rs.watchID)
			}
		}
		h.mu.Unlock()
		return
	}
	switch rs.method {
	case protocol.MethodThreadStart, protocol.MethodThreadResume, protocol.MethodThreadFork:
	default:
		return
	}
	if err != nil {
		if rs.unmarkOnError {
			h.unsubscribe(rs.s, rs.lane)
		}
		return
	}
	h.subscribe(rs.s, startedThread(result))
}

// unsubscribe removes threadID from s's subscriptions; it reports whether
// s was subscribed.
func (h *Hub) unsubscribe(s *Server, threadID string) bool {
	h.mu.Lock()
	subs := h.conns[s]
	if !subs[threadID] {
		h.mu.Unlock()
		return false
	}
	delete(subs, threadID)
	gone := !h.followedLocked(threadID)
	h.mu.Unlock()
	if gone {
		h.abandoned(threadID)
	}
	return true
}

// targets returns the connections that get a message about threadID ("":
// every connection).
func (h *Hub) targets(threadID string) []*Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Server, 0, len(h.conns))
	for s, subs := range h.conns {
		if threadID == "" || subs[threadID] {
			out = append(out, s)
		}
	}
	return out
}

// threadOf returns the top-level "threadId" of encoded params.
func threadOf(raw json.RawMessage) string {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if len(raw) > 0 && raw[0] == '{' {
		_ = json.Unmarshal(raw, &p)
	}
	return p.ThreadID
}

// startedThread returns the thread id of a thread/start, thread/resume or
// thread/fork result.
func startedThread(result any) string {
	if r, ok := result.(interface{ ThreadID() string }); ok {
		return r.ThreadID() // a streamed result: not encoded again
	}
	b, err := json.Marshal(result)
	if err != nil {
		return ""
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	_ = json.Unmarshal(b, &r)
	return r.Thread.ID
}

type hubClient struct{ h *Hub }

// Notify routes a notification the session sent without naming its
// thread: by its connection-scoped id (fs/changed, command/exec output),
// else by the "threadId" in its params.
func (c hubClient) Notify(method string, params any) {
	switch method {
	case protocol.NotifyFsChanged, protocol.NotifyCommandExecOutputDelta:
		raw, err := json.Marshal(params)
		if err != nil {
			c.h.log.Error("bug: notification does not encode", "method", method, "err", err)
			return
		}
		key := "watchId"
		if method == protocol.NotifyCommandExecOutputDelta {
			key = "processId"
		}
		if s, params := c.h.scopedTarget(raw, key); s != nil && s.state.Load() != nil {
			client{s}.Notify(method, json.RawMessage(params))
		}
		return
	}
	raw, err := json.Marshal(params)
	if err != nil {
		c.h.log.Error("bug: notification does not encode", "method", method, "err", err)
		return
	}
	c.NotifyThread(threadOf(raw), method, json.RawMessage(raw))
}

// NotifyThread sends a notification about threadID ("": none) to the
// connections that follow it, or to all for one about no thread. The line
// is encoded once and copied to each connection (the socket hot path).
func (c hubClient) NotifyThread(threadID, method string, params any) {
	if method == protocol.NotifyThreadStarted || method == protocol.NotifyThreadDeleted {
		threadID = "" // every client learns about new and deleted threads
	}
	targets := c.h.targets(threadID)
	if len(targets) == 0 {
		return
	}
	if it, ok := largeNotification(method, params); ok {
		// Encoded once; each connection gets its own head and shares
		// the long strings and the tail.
		defer putLine(it.lb)
		for _, s := range targets {
			if s.state.Load() == nil {
				continue
			}
			s.notifyLarge(method, it)
		}
		return
	}
	lb := getLine()
	defer putLine(lb)
	if err := lb.appendNotification(method, params); err != nil {
		c.h.log.Error("bug: notification does not encode", "method", method, "err", err)
		return
	}
	for _, s := range targets {
		if s.state.Load() == nil {
			continue // not initialized yet
		}
		s.notifyLine(method, lb.b)
	}
}

func (c hubClient) Call(method string, params any) session.ClientCall {
	return c.CallWithID(c.h.nextID.Add(1)-1, method, params)
}

// CallWithID re-sends a request under the id it had before a restart.
func (c hubClient) CallWithID(id int64, method string, params any) session.ClientCall {
	h := c.h
	for {
		next := h.nextID.Load()
		if next > id || h.nextID.CompareAndSwap(next, id+1) {
			break
		}
	}
	call, ok := h.newCall(id, method, params, false)
	if !ok {
		return call
	}
	for _, s := range h.targets(call.threadID) {
		call.sendTo(s)
	}
	return call
}

// newCall makes request id, registered as waiting for its answer; ok is
// false (the call already finished with the error) when params do not
// encode. everyone: it goes to every initialized connection, not only
// those following its thread.
func (h *Hub) newCall(id int64, method string, params any, everyone bool) (*hubCall, bool) {
	call := &hubCall{h: h, id: id, method: method, everyone: everyone, done: make(chan struct{}), sent: map[*Server]bool{}}
	raw, err := json.Marshal(params)
	if err != nil {
		call.finish(nil, err)
		return call, false
	}
	call.params = raw
	call.threadID = threadOf(raw)
	h.mu.Lock()
	h.pending[id] = call
	h.mu.Unlock()
	return call, true
}

// hubCall is one server→client request, possibly sent to several
// connections.
type hubCall struct {
	h        *Hub
	id       int64
	method   string
	params   json.RawMessage
	threadID string
	// everyone: sent to every initialized connection (Broadcast), not
	// only to those following threadID.
	everyone bool
	done     chan struct{}
	result   json.RawMessage
	err      error
	once     sync.Once

	mu   sync.Mutex
	sent map[*Server]bool
}

func (c *hubCall) ID() int64 { return c.id }

// Wait returns the first answer from any connection, or ctx.Err(). A
// connection that closes does not end it: another may answer.
func (c *hubCall) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-c.done:
		return c.result, c.err
	case <-ctx.Done():
		c.finish(nil, ctx.Err())
		return nil, ctx.Err()
	}
}

func (c *hubCall) sendTo(s *Server) {
	c.mu.Lock()
	if c.sent[s] {
		c.mu.Unlock()
		return
	}
	c.sent[s] = true
	c.mu.Unlock()
	select {
	case <-c.done:
		return
	default:
	}
	cc := s.call(c.id, c.method, c.params)
	go func() {
		raw, err := cc.Wait(context.Background())
		if errors.Is(err, ErrClosed) {
			c.mu.Lock()
			delete(c.sent, s)
			c.mu.Unlock()
			return // that connection is gone; another may answer
		}
		c.finish(raw, err)
	}()
}

// finish settles the call once and withdraws the copies still out.
func (c *hubCall) finish(result json.RawMessage, err error) {
	c.once.Do(func() {
		c.result, c.err = result, err
		close(c.done)
		c.h.mu.Lock()
		delete(c.h.pending, c.id)
		c.h.mu.Unlock()
		c.mu.Lock()
		conns := make([]*Server, 0, len(c.sent))
		for s := range c.sent {
			conns = append(conns, s)
		}
		c.mu.Unlock()
		for _, s := range conns {
			s.forget(c.id)
		}
	})
}
