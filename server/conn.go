package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// stallLimit is how long a connection behind a Hub may leave its output
// queue full before it is closed: the session waits for no single client.
const stallLimit = 10 * time.Second

// closeTimeout bounds how long Run waits for queued output to be written
// when it returns (a client that stops reading must not hang the process).
const closeTimeout = 5 * time.Second

// ErrClosed is returned (wrapped or not) for output queued, and calls
// waited on, after the connection has closed.
var ErrClosed = errors.New("connection closed")

// errNoClient fails server→client calls once the input has ended: the
// client can no longer answer them. It wraps ErrClosed and
// session.ErrNoClient.
var errNoClient = fmt.Errorf("%w: %w", ErrClosed, session.ErrNoClient)

// Options configure a Server.
type Options struct {
	// MaxLineBytes caps one incoming line; 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// Logger receives diagnostics (never stdout). nil means slog.Default().
	Logger *slog.Logger
	// Trace logs every wire message, both ways, at debug level to Logger.
	Trace bool
	// ServerInfo fills the initialize result.
	ServerInfo ServerInfo
	// OnInputEnd runs when the input ends (stdin EOF), after every request
	// already read has been answered; the output stays open until it
	// returns, so it can finish the work in flight (session.Manager.Drain).
	// Its error is Run's. nil: Run returns as soon as the requests read are
	// answered.
	OnInputEnd func(ctx context.Context) error
	// OnInputClosed, when set, runs as soon as the input ends, before Run
	// waits for the requests already read to be answered: what must stop
	// at once rather than be waited for (--on-eof interrupt ends the
	// command/exec processes, whose answers come when they exit).
	OnInputClosed func()
	// Hub, when set, is the session's client shared by several
	// connections (hub.go): Run attaches the connection to it, and a
	// thread/start, thread/resume or thread/fork subscribes it to the
	// thread. nil: the connection is the session's only client.
	Hub *Hub
}

// ServerInfo describes this server in the initialize result.
type ServerInfo struct {
	Name    string // for logs
	Version string // in userAgent, after the client's name
	Home    string // codexHome
}

// Server is one editor connection.
type Server struct {
	st         *stream
	log        *slog.Logger
	info       ServerInfo
	onInputEnd func(ctx context.Context) error
	// onInputClosed is Options.OnInputClosed.
	onInputClosed func()
	hub           *Hub

	// reqCtx is the parent of every handler's ctx: set by Run before the
	// read loop starts, canceled when Run is done draining.
	reqCtx context.Context

	started atomic.Bool

	// Set before Run, read-only afterwards (read by the read loop).
	handlers      map[string]requestHandler
	notifHandlers map[string]func(json.RawMessage)
	onInit        func(protocol.InitializeParams) error

	// state is set once, by the read loop, when initialize succeeds; any
	// goroutine may read it.
	state atomic.Pointer[connState]

	nextCallID atomic.Int64

	// mu guards the fields below.
	mu          sync.Mutex
	closed      bool                            // Run has returned
	inputClosed bool                            // the input ended: calls fail with errNoClient
	inflight    map[jsonrpc2.ID][]*requestState // unanswered client requests
	answered    chan struct{}                   // closed when inflight empties (nil: nobody waits)
	lanes       map[string][]func()             // busy lanes: the requests waiting in each (see laneOf)
	pending     map[int64]*clientCall           // unanswered server→client requests
}

// connState is what initialize fixed for the connection.
type connState struct {
	params protocol.InitializeParams
	optOut map[string]bool
}

// requestHandler is a registered method; params is nil when absent.
type requestHandler func(ctx context.Context, params json.RawMessage, reply session.Reply)

// New returns a server reading requests from r and writing to w. It does not
// take ownership of r or w: Run never closes them.
func New(r io.Reader, w io.Writer, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		log:           log,
		info:          opts.ServerInfo,
		onInputEnd:    opts.OnInputEnd,
		onInputClosed: opts.OnInputClosed,
		hub:           opts.Hub,
		handlers:      map[string]requestHandler{},
		notifHandlers: map[string]func(json.RawMessage){},
		inflight:      map[jsonrpc2.ID][]*requestState{},
		lanes:         map[string][]func(){},
		pending:       map[int64]*clientCall{},
	}
	s.st = newStream(r, w, opts.MaxLineBytes, log, opts.Trace)
	if opts.Hub != nil {
		s.st.stallLimit = stallLimit
	}
	s.st.onResponse = s.deliver
	return s
}

// Handle registers the handler for a client request method. Call it before
// Run.
//
// P is the params type. Missing or null params decode as {}; params that are
// not an object, or have a field of the wrong type, get -32602 naming the
// field. If *P has a Validate() error method it runs next; its error is sent
// as is when it wraps a protocol sentinel, else as -32602.
//
// fn must return quickly and call reply exactly once, now or later from
// another goroutine. Requests of one lane (laneOf: the same thread, or none)
// are handled one at a time in the order they were read: fn runs on the
// read loop when its lane is free, else on a goroutine of its own once the
// request before it has been answered. ctx is canceled when the client
// sends $/cancelRequest for this request, when the request is answered, or
// when the connection ends; work that outlives the reply must not use it. A
// canceled request is still answered exactly once, with whatever fn's reply
// says (after a cancel, typically an error wrapping ctx.Err()).
func Handle[P any](s *Server, method string, fn func(ctx context.Context, p P, reply session.Reply)) {
	s.register(method, func(ctx context.Context, raw json.RawMessage, reply session.Reply) {
		var p P
		if err := decodeParams(raw, &p); err != nil {
			reply(nil, err)
			return
		}
		fn(ctx, p, reply)
	})
}

func (s *Server) register(method string, h requestHandler) {
	s.mustBeSetup(method)
	if method == protocol.MethodInitialize || method == protocol.MethodCancelRequest {
		panic("server: " + method + " is built in")
	}
	if _, dup := s.handlers[method]; dup {
		panic("server: duplicate handler for " + method)
	}
	s.handlers[method] = h
}

// HandleNotification registers the handler for a client notification, e.g.
// "initialized". Call it before Run. fn runs on the read loop and must
// return quickly. Notifications before initialize are ignored.
func HandleNotification(s *Server, method string, fn func(params json.RawMessage)) {
	s.mustBeSetup(method)
	if method == protocol.MethodCancelRequest {
		panic("server: " + method + " is built in")
	}
	if _, dup := s.notifHandlers[method]; dup {
		panic("server: duplicate notification handler for " + method)
	}
	s.notifHandlers[method] = fn
}

// OnInitialize sets a hook called on the read loop with the params of a
// valid initialize request, before it is answered. A non-nil error is sent
// as the answer (code chosen from the protocol sentinels it wraps) and the
// connection stays uninitialized. Call it before Run.
func (s *Server) OnInitialize(fn func(protocol.InitializeParams) error) {
	s.mustBeSetup(protocol.MethodInitialize)
	s.onInit = fn
}

func (s *Server) mustBeSetup(method string) {
	if s.started.Load() {
		panic("server: registering " + method + " after Run")
	}
}

// ClientName returns clientInfo.name from initialize, or "" before it.
func (s *Server) ClientName() string {
	if st := s.state.Load(); st != nil {
		return st.params.ClientInfo.Name // Validate guarantees ClientInfo
	}
	return ""
}

// Initialized returns the initialize params once initialize has succeeded.
func (s *Server) Initialized() (protocol.InitializeParams, bool) {
	if st := s.state.Load(); st != nil {
		return st.params, true
	}
	return protocol.InitializeParams{}, false
}

// Client returns the session.Client view of this connection.
func (s *Server) Client() session.Client { return client{s} }

// Run serves until the input ends or ctx is done.
//
// At the end of the input it drains: server→client calls still waiting, and
// any made later, fail with an error wrapping session.ErrNoClient (nobody
// is left to answer them); every request already read is answered; then
// OnInputEnd runs. Output keeps flowing meanwhile. Run returns OnInputEnd's
// error (nil when it has none), ctx.Err() when ctx ends first, or the read
// or write error that stopped it.
//
// On return every server→client call still waiting fails with ErrClosed,
// every handler's ctx is canceled, and queued output is flushed (for at
// most a few seconds). A reader blocked in Read may stay blocked until its
// input ends; Run does not wait for it. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	if s.started.Swap(true) {
		return errors.New("server: Run called twice")
	}
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.reqCtx = connCtx
	if s.hub != nil {
		s.hub.attach(s)
		defer s.hub.detach(s)
	}
	// jsonrpc2 closes its stream and cancels its context as soon as reading
	// stops; the output and the handlers' ctx must outlive that while Run
	// drains, so it gets a stream whose Close does nothing.
	conn := jsonrpc2.NewConn(connCtx, readStream{s.st}, handler{s}, jsonrpc2.SetLogger(printfLogger{s.log}))
	s.log.Info("serving", "server", s.info.Name, "version", s.info.Version)

	select {
	case <-s.st.inputEnded:
	case <-s.st.closing:
	case <-ctx.Done():
	}
	var drainErr error
	if s.st.readError() == io.EOF && ctx.Err() == nil && s.st.writeError() == nil {
		drainErr = s.drain(ctx)
	}
	cancel()
	s.shutdown()
	conn.Close()

	closed := make(chan struct{})
	go func() {
		s.st.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(closeTimeout):
		s.log.Warn("output not drained; giving up", "after", closeTimeout)
	}

	readErr := s.st.readError()
	switch {
	case readErr != nil && readErr != io.EOF && !errors.Is(readErr, ErrClosed):
		return fmt.Errorf("reading input: %w", readErr)
	case s.st.writeError() != nil:
		return s.st.writeError()
	case readErr == io.EOF && ctx.Err() == nil:
		s.log.Info("input closed")
		return drainErr
	}
	return ctx.Err()
}

// readStream is the stream as jsonrpc2 sees it: jsonrpc2 only reads; Run
// closes the stream itself, once it has drained.
type readStream struct{ *stream }

func (readStream) Close() error { return nil }

// drain runs on Run's goroutine once the input has ended (see Run). A
// write error ends it: nothing more can reach the client.
func (s *Server) drain(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-s.st.closing:
			stop()
		case <-ctx.Done():
		}
	}()
	s.mu.Lock()
	s.inputClosed = true
	pending := s.pending
	s.pending = map[int64]*clientCall{}
	s.mu.Unlock()
	for _, c := range pending {
		c.finish(nil, errNoClient)
	}
	if n := len(pending); n > 0 {
		s.log.Info("input closed; server requests left unanswered fail", "requests", n)
	}
	if s.hub != nil {
		// A socket client that went away can no longer feed or stop its
		// command/exec processes: they end, and their answers drain.
		s.hub.endProcesses(s)
	}
	if s.onInputClosed != nil {
		s.onInputClosed()
	}
	if err := s.waitAnswered(ctx); err != nil {
		return err
	}
	if s.onInputEnd == nil {
		return nil
	}
	return s.onInputEnd(ctx)
}

// waitAnswered waits until no client request is left unanswered.
func (s *Server) waitAnswered(ctx context.Context) error {
	s.mu.Lock()
	if len(s.inflight) == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.answered == nil {
		s.answered = make(chan struct{})
	}
	done := s.answered
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown fails waiting server→client calls; Run cancels the handlers' ctx.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.closed = true
	pending := s.pending
	s.pending = map[int64]*clientCall{}
	s.mu.Unlock()
	for _, c := range pending {
		c.finish(nil, ErrClosed)
	}
}

// handler is the jsonrpc2.Handler; it runs on jsonrpc2's read loop.
type handler struct{ s *Server }

// Handle ignores jsonrpc2's ctx, which ends with the input: a request read
// just before the end is still answered (Run drains), on Run's context.
func (h handler) Handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) {
	params := h.s.st.takeParams(req)
	if req.Notif {
		h.s.handleNotification(req.Method, params)
		return
	}
	h.s.handleRequest(h.s.reqCtx, req.ID, req.Method, params)
}

func (s *Server) handleNotification(method string, params json.RawMessage) {
	if s.state.Load() == nil {
		s.log.Debug("notification before initialize ignored", "method", method)
		return
	}
	if method == protocol.MethodCancelRequest {
		s.cancelRequest(params)
		return
	}
	fn := s.notifHandlers[method]
	if fn == nil {
		if method != protocol.MethodInitialized {
			s.log.Debug("unknown notification ignored", "method", method)
		}
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("bug: notification handler panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	fn(params)
}

func (s *Server) handleRequest(ctx context.Context, id jsonrpc2.ID, method string, params json.RawMessage) {
	if method == protocol.MethodInitialize {
		s.initialize(id, params)
		return
	}
	if s.state.Load() == nil {
		s.sendReply(id, nil, protocol.Errorf(protocol.ErrInvalidRequest, "Not initialized"))
		return
	}
	if method == protocol.MethodCancelRequest {
		s.cancelRequest(params)
		s.sendReply(id, struct{}{}, nil)
		return
	}
	h := s.handlers[method]
	if h == nil {
		s.sendReply(id, nil, protocol.Errorf(protocol.ErrMethodNotFound, "Method not found: %s", method))
		return
	}

	rctx, cancel := context.WithCancel(ctx)
	rs := &requestState{s: s, id: id, method: method, cancel: cancel, lane: laneOf(params)}
	if method == protocol.MethodCommandExec {
		// Answered only when its process exits: in a lane of its own, so
		// that its write, resize and terminate (and every other request)
		// do not wait behind it.
		rs.lane = "\x00command/exec " + idString(id)
	}
	if lane, ok := blueprintLane(method, id); ok {
		rs.lane = lane
	}
	if lane, ok := searchLane(method, id); ok { // codex171.go
		rs.lane = lane
		rctx = context.WithValue(rctx, requestIDKey{}, id)
	}
	if lane, ok := managerLane(method); ok {
		rs.lane = lane
	}
	if s.hub != nil {
		switch method {
		case protocol.MethodFsWatch, protocol.MethodFsUnwatch:
			params, rs.watchID = s.hub.scopeWatch(s, params)
		case protocol.MethodCommandExec:
			if params, rs.processID = s.hub.scopeID(s, params, "processId"); rs.processID != "" {
				s.hub.processStarted(s, rs.processID)
			}
		case protocol.MethodCommandExecWrite, protocol.MethodCommandExecResize, protocol.MethodCommandExecTerminate:
			params, _ = s.hub.scopeID(s, params, "processId")
		}
	}
	if s.hub != nil && method == protocol.MethodThreadResume && rs.lane != "" && !s.hub.Subscribed(s, rs.lane) {
		// Subscribed before the answer, so that the status sent while
		// resuming reaches this client; undone if the resume fails.
		s.hub.mark(s, rs.lane)
		rs.unmarkOnError = true
	}
	run := func() {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("bug: request handler panicked", "method", method, "id", idString(id), "panic", r, "stack", string(debug.Stack()))
				if !rs.replied.Load() {
					rs.reply(nil, fmt.Errorf("internal error handling %s", method))
				}
			}
		}()
		h(rctx, params, rs.reply)
	}
	s.mu.Lock()
	s.inflight[id] = append(s.inflight[id], rs)
	waiting, busy := s.lanes[rs.lane]
	if busy {
		s.lanes[rs.lane] = append(waiting, run)
	} else {
		s.lanes[rs.lane] = nil
	}
	s.mu.Unlock()
	if !busy {
		run()
	}
}

// laneOf is the lane of a request: its params' threadId, or "" for a
// request about no thread. Answers within a lane come in the order the
// requests were read, so a script that pipes thread/start many times and
// then thread/list gets every answer in order, the list last and complete.
// Lanes do not wait for each other: a request on one thread is not held up
// by work on another.
func laneOf(params json.RawMessage) string {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if len(params) > 0 && params[0] == '{' {
		_ = json.Unmarshal(params, &p)
	}
	return p.ThreadID
}

// nextInLane starts the request waiting behind an answered one, if any.
func (s *Server) nextInLane(lane string) {
	s.mu.Lock()
	waiting := s.lanes[lane]
	if len(waiting) == 0 {
		delete(s.lanes, lane)
		s.mu.Unlock()
		return
	}
	next := waiting[0]
	s.lanes[lane] = waiting[1:]
	s.mu.Unlock()
	go next()
}

// requestState is one unanswered client request.
type requestState struct {
	s       *Server
	id      jsonrpc2.ID
	method  string
	lane    string
	cancel  context.CancelFunc
	replied atomic.Bool

	unmarkOnError bool   // a failed thread/resume undoes its early subscription
	watchID       string // fs/watch, fs/unwatch behind a Hub: the session's watch id
	processID     string // command/exec behind a Hub: the session's process id
}

// reply is the request's session.Reply. It sends the answer regardless of
// the request's ctx, then releases the ctx.
func (rs *requestState) reply(result any, err error) {
	if rs.replied.Swap(true) {
		rs.s.log.Error("bug: request answered twice", "method", rs.method, "id", idString(rs.id), "err", err)
		return
	}
	rs.s.sendReply(rs.id, result, err)
	if h := rs.s.hub; h != nil {
		h.replied(rs, result, err)
	}
	rs.s.mu.Lock()
	list := rs.s.inflight[rs.id]
	for i, x := range list {
		if x == rs {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(rs.s.inflight, rs.id)
	} else {
		rs.s.inflight[rs.id] = list
	}
	if len(rs.s.inflight) == 0 && rs.s.answered != nil {
		close(rs.s.answered)
		rs.s.answered = nil
	}
	rs.s.mu.Unlock()
	rs.cancel()
	rs.s.nextInLane(rs.lane)
}

// cancelRequest handles $/cancelRequest {id}: it cancels the ctx of every
// unanswered request with that id. Their answers still go out.
func (s *Server) cancelRequest(params json.RawMessage) {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(params, &p) != nil {
		s.log.Warn("malformed $/cancelRequest ignored", "params", string(params))
		return
	}
	id, kind := parseID(p.ID)
	if kind != idValid {
		s.log.Warn("$/cancelRequest without a usable id ignored", "params", string(params))
		return
	}
	s.mu.Lock()
	list := s.inflight[id]
	for _, rs := range list {
		rs.cancel()
	}
	s.mu.Unlock()
	s.log.Debug("cancel request", "id", idString(id), "found", len(list) > 0)
}

// sendReply queues the answer to a client request.
func (s *Server) sendReply(id jsonrpc2.ID, result any, err error) {
	lb := getLine()
	if sr, ok := result.(*session.StreamedResult); ok && err == nil {
		// Written by the writer piece by piece (outItem), never whole.
		lb.b = append(lb.b, `{"id":`...)
		lb.b = appendID(lb.b, id)
		lb.b = append(lb.b, `,"result":`...)
		lb.b = append(lb.b, sr.Head()...)
		tail := append(append(make([]byte, 0, len(sr.Tail())+2), sr.Tail()...), '}', '\n')
		if qErr := s.st.enqueueItem(outItem{lb: lb, body: sr, tail: tail}); qErr != nil {
			s.log.Debug("reply not sent", "id", idString(id), "err", qErr)
		}
		return
	}
	if err == nil {
		if encErr := lb.appendResult(id, result); encErr != nil {
			s.log.Error("bug: result does not encode", "id", idString(id), "err", encErr)
			lb.b = lb.b[:0]
			err = fmt.Errorf("internal error: encoding result: %w", encErr)
		}
	}
	if err != nil {
		we := wireError(err)
		var data json.RawMessage
		if we.Data != nil {
			data = *we.Data
		}
		lb.appendError(&id, we.Code, we.Message, data)
	}
	if qErr := s.st.enqueue(lb); qErr != nil {
		s.log.Debug("reply not sent", "id", idString(id), "err", qErr)
	}
}

// wireError picks the JSON-RPC code for err: the one place that does.
func wireError(err error) *jsonrpc2.Error {
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	code := int64(protocol.CodeInternalError)
	switch {
	case errors.Is(err, protocol.ErrInvalidParams):
		code = protocol.CodeInvalidParams
	case errors.Is(err, protocol.ErrMethodNotFound):
		code = protocol.CodeMethodNotFound
	case errors.Is(err, protocol.ErrOverloaded):
		code = protocol.CodeOverloaded
	case errors.Is(err, protocol.ErrInvalidRequest):
		code = protocol.CodeInvalidRequest
	}
	we := &jsonrpc2.Error{Code: code, Message: err.Error()}
	var pe *protocol.Error
	if errors.As(err, &pe) && len(pe.Data) > 0 {
		d := pe.Data
		we.Data = &d
	}
	return we
}

func wrapsSentinel(err error) bool {
	return errors.Is(err, protocol.ErrInvalidParams) || errors.Is(err, protocol.ErrInvalidRequest) ||
		errors.Is(err, protocol.ErrMethodNotFound) || errors.Is(err, protocol.ErrOverloaded)
}

// decodeParams decodes request params into p (a pointer) and validates them.
func decodeParams(raw json.RawMessage, p any) error {
	raw = trimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	} else if raw[0] != '{' {
		return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: expected an object, got %s", jsonKind(raw))
	}
	if err := json.Unmarshal(raw, p); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			field := typeErr.Field
			if field == "" {
				field = "params"
			}
			return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: invalid type for field `%s`: expected %s, got %s",
				field, typeName(typeErr.Type), typeErr.Value)
		case wrapsSentinel(err):
			return err
		}
		return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: %v", err)
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			if wrapsSentinel(err) {
				return err
			}
			return &protocol.Error{Kind: protocol.ErrInvalidParams, Msg: "Invalid params: " + err.Error()}
		}
	}
	return nil
}

// typeName names the JSON type a Go type decodes from.
func typeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string"
		}
		return "array"
	case reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return t.String()
}

// initialize answers the handshake. It runs on the read loop.
func (s *Server) initialize(id jsonrpc2.ID, raw json.RawMessage) {
	if s.state.Load() != nil {
		s.sendReply(id, nil, protocol.Errorf(protocol.ErrInvalidRequest, "Already initialized"))
		return
	}
	var p protocol.InitializeParams
	if err := decodeParams(raw, &p); err != nil {
		s.sendReply(id, nil, err)
		return
	}
	if s.onInit != nil {
		if err := s.onInit(p); err != nil {
			s.sendReply(id, nil, err)
			return
		}
	}
	st := &connState{params: p}
	var experimental bool
	if c := p.Capabilities; c != nil {
		experimental = c.ExperimentalAPI
		if len(c.OptOutNotificationMethods) > 0 {
			st.optOut = map[string]bool{}
			for _, m := range c.OptOutNotificationMethods {
				st.optOut[m] = true
			}
		}
	}
	s.state.Store(st)
	info := p.ClientInfo
	s.log.Info("initialized", "client", info.Name, "clientVersion", info.Version, "experimentalApi", experimental)
	s.sendReply(id, protocol.InitializeResult{
		UserAgent:      userAgent(info.Name, info.Version, s.info.Version),
		CodexHome:      s.info.Home,
		PlatformFamily: "unix",
		PlatformOS:     platformOS(),
	}, nil)
	if s.hub != nil {
		s.hub.initialized(s) // after the answer: requests come after it
	}
}

// userAgent is the initialize result's userAgent in Codex's format,
// "<client>/<codex version> (<os>; <arch>) <terminal> (<client>; <client
// version>)". The version is the Codex release whose protocol apserver
// speaks (protocol.CodexVersion): Codex clients compare it with their own
// and warn about an older server. apserver's own version takes the
// terminal's place.
func userAgent(client, clientVersion, version string) string {
	return fmt.Sprintf("%s/%s (%s; %s) apserver/%s (%s; %s)", client, protocol.CodexVersion, platformOS(), arch(),
		version, client, clientVersion)
}

// platformOS is runtime.GOOS as Codex spells it ("macos" for darwin).
func platformOS() string {
	if runtime.GOOS == "darwin" {
		return "macos"
	}
	return runtime.GOOS
}

// arch is the machine name as uname -m spells it.
func arch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "386":
		return "x86"
	case "arm64":
		if runtime.GOOS == "linux" {
			return "aarch64"
		}
	}
	return runtime.GOARCH
}

// client is the session.Client view of a Server.
type client struct{ s *Server }

// Notify queues a notification unless the client opted out of its method.
func (c client) Notify(method string, params any) {
	if st := c.s.state.Load(); st != nil && st.optOut[method] {
		return
	}
	if err := c.s.st.notify(method, params); err != nil && !errors.Is(err, ErrClosed) {
		c.s.log.Error("bug: notification not sent", "method", method, "err", err)
	}
}

// notifyLine queues an encoded notification line (a copy of line), unless
// the client opted out of method.
func (s *Server) notifyLine(method string, line []byte) {
	if st := s.state.Load(); st != nil && st.optOut[method] {
		return
	}
	lb := getLine()
	lb.b = append(lb.b, line...)
	if err := s.st.enqueue(lb); err != nil && !errors.Is(err, ErrClosed) {
		s.log.Error("bug: notification not sent", "method", method, "err", err)
	}
}

// notifyLarge queues a large notification (largeNotification) encoded
// for several connections: a copy of its head, its params and tail shared.
func (s *Server) notifyLarge(method string, it outItem) {
	if st := s.state.Load(); st != nil && st.optOut[method] {
		return
	}
	lb := getLine()
	lb.b = append(lb.b, it.lb.b...)
	if err := s.st.enqueueItem(outItem{lb: lb, large: it.large, tail: it.tail}); err != nil && !errors.Is(err, ErrClosed) {
		s.log.Error("bug: notification not sent", "method", method, "err", err)
	}
}

// Call sends a server→client request with the next integer id.
func (c client) Call(method string, params any) session.ClientCall {
	return c.s.call(c.s.nextCallID.Add(1)-1, method, params)
}

// CallWithID sends a server→client request under a given id: a request
// that was pending when apserver last stopped, re-sent after the restart
// with its old id. Ids from Call continue above it, so none is reused while
// the re-sent request waits.
func (c client) CallWithID(id int64, method string, params any) session.ClientCall {
	for {
		next := c.s.nextCallID.Load()
		if next > id || c.s.nextCallID.CompareAndSwap(next, id+1) {
			break
		}
	}
	return c.s.call(id, method, params)
}

func (s *Server) call(id int64, method string, params any) session.ClientCall {
	call := &clientCall{id: id, done: make(chan struct{})}
	lb := getLine()
	if err := lb.appendCall(jsonrpc2.ID{Num: uint64(call.id)}, method, params); err != nil {
		putLine(lb)
		call.finish(nil, err)
		return call
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		putLine(lb)
		call.finish(nil, ErrClosed)
		return call
	}
	if s.inputClosed {
		// Written all the same, so that the transcript shows what was
		// asked; nobody can answer it.
		s.mu.Unlock()
		_ = s.st.enqueue(lb)
		call.finish(nil, errNoClient)
		return call
	}
	s.pending[call.id] = call
	s.mu.Unlock()
	if err := s.st.enqueue(lb); err != nil {
		s.mu.Lock()
		delete(s.pending, call.id)
		s.mu.Unlock()
		call.finish(nil, err)
	}
	return call
}

// forget drops a server→client request still waiting for this
// connection's answer: another connection answered it (hub.go).
func (s *Server) forget(id int64) {
	s.mu.Lock()
	call := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if call != nil {
		call.finish(nil, ErrClosed)
	}
}

// deliver hands a client response to its waiting call. It runs on the read
// loop.
func (s *Server) deliver(m message) {
	var call *clientCall
	if !m.id.IsString {
		s.mu.Lock()
		call = s.pending[int64(m.id.Num)]
		delete(s.pending, int64(m.id.Num))
		s.mu.Unlock()
	}
	if call == nil {
		s.log.Warn("response to unknown request dropped", "id", idString(m.id))
		return
	}
	if m.errObj != nil {
		call.finish(nil, decodeRPCError(m.errObj))
		return
	}
	call.finish(m.result, nil)
}

func decodeRPCError(raw json.RawMessage) *protocol.RPCError {
	var e protocol.RPCError
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil {
		return &protocol.RPCError{Code: protocol.CodeInternalError, Message: "malformed error: " + string(raw)}
	}
	return &e
}

// clientCall is one server→client request.
type clientCall struct {
	id     int64
	done   chan struct{}
	result json.RawMessage // set before done is closed
	err    error           // set before done is closed
	once   sync.Once
}

func (c *clientCall) ID() int64 { return c.id }

// Wait returns the client's result, a *protocol.RPCError, ctx.Err(), or
// ErrClosed (wrapped with session.ErrNoClient once the input has ended).
func (c *clientCall) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-c.done:
		return c.result, c.err
	default:
	}
	select {
	case <-c.done:
		return c.result, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *clientCall) finish(result json.RawMessage, err error) {
	c.once.Do(func() {
		c.result, c.err = result, err
		close(c.done)
	})
}

// printfLogger routes jsonrpc2's log lines to slog.
type printfLogger struct{ log *slog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Warn(strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "jsonrpc2")
}
