package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ModelID is the model GET …/models lists. Requests may name any model; the
// answer echoes the requested name.
const ModelID = "scripted"

// maxBody bounds a request body.
const maxBody = 64 << 20

// Wire names in Request.Wire.
const (
	WireResponses = "responses"
	WireChat      = "chat"
	WireModels    = "models"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	// Wire is WireResponses, WireChat, WireModels, or "" for an unknown
	// route (answered 404).
	Wire   string
	Header http.Header
	// Model is the request's "model".
	Model string
	// Stream is the request's "stream".
	Stream bool
	// Body is the request body as received.
	Body json.RawMessage
	// Partial says the body could not be read whole: the client went
	// away while sending it (killed mid-request). Body holds what came.
	Partial bool
	// LastUserText is the text of the last user message ("" if none).
	LastUserText string
	// ToolOutputs counts the tool outputs after the last user message.
	ToolOutputs int
	// Tools lists the names of the tools the request advertised, in order
	// (a tool without a name is listed by its type).
	Tools []string
	// Rule is the index of the rule that answered, or -1 for
	// Script.Default.
	Rule int
	// Step is the index of the step that answered: the number of
	// tool-output rounds after the last user message. It may be past the
	// end of the steps (then the answer is "done.").
	Step int
}

// Server is a running scripted model. Its methods are safe for concurrent
// use.
type Server struct {
	ln   net.Listener
	http *http.Server
	url  string

	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	script   Script
	fails    map[string]int // FailTimes counters by step key
	served   map[int]int    // requests answered by each Sequential rule
	requests []Request
	closed   bool
	active   sync.WaitGroup // handlers in flight
	inflight atomic.Int64   // the same, readable (tests)

	ids   atomic.Int64 // response and item ids
	calls atomic.Int64 // generated call ids
}

// Start starts a server for s on 127.0.0.1, on a port the system picks.
// The server keeps s: do not modify it (or its slices) afterwards.
func Start(s Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scripted: listen: %w", err)
	}
	srv := &Server{
		ln:     ln,
		url:    "http://" + ln.Addr().String() + "/v1",
		done:   make(chan struct{}),
		script: s,
		fails:  map[string]int{},
		served: map[int]int{},
	}
	srv.http = &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.http.Serve(ln) }()
	return srv, nil
}

// URL is the base URL clients use, "http://127.0.0.1:PORT/v1". Routes match
// on the path suffix, so other prefixes work too.
func (s *Server) URL() string { return s.url }

// Close stops the server: it closes the listener and every connection,
// releases stalled and hanging answers, and waits for the handlers to
// return. It may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		_ = s.http.Close()
		s.active.Wait()
	})
}

// Requests returns every request received so far, in arrival order. A
// request is logged before it is answered.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SetScript replaces the script for the requests that arrive from now on
// and resets the FailTimes counters. As with Start, sc must not be modified
// afterwards.
func (s *Server) SetScript(sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = sc
	s.fails = map[string]int{}
	s.served = map[int]int{}
}

// ServeHTTP routes a request by its path suffix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "scripted model server is closed")
		return
	}
	s.active.Add(1)
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.active.Done()
	defer s.inflight.Add(-1)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()

	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/responses"):
		s.serveModel(ctx, w, r, WireResponses)
	case strings.HasSuffix(path, "/chat/completions"):
		s.serveModel(ctx, w, r, WireChat)
	case strings.HasSuffix(path, "/models") && r.Method == http.MethodGet:
		s.log(Request{Method: r.Method, Path: r.URL.Path, Wire: WireModels, Header: r.Header.Clone(), Rule: -1})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"object": "list",
			"data": []any{map[string]any{
				"id": ModelID, "object": "model", "created": 0, "owned_by": "apserver",
			}},
		})
	default:
		s.log(Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Rule: -1})
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) log(req Request) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

// serveModel answers POST …/responses and POST …/chat/completions.
func (s *Server) serveModel(ctx context.Context, w http.ResponseWriter, r *http.Request, wire string) {
	req := Request{Method: r.Method, Path: r.URL.Path, Wire: wire, Header: r.Header.Clone(), Rule: -1}
	if r.Method != http.MethodPost {
		s.log(req)
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	req.Body = body
	if err != nil || len(body) > maxBody {
		// A body cut short (the client died while sending it) is logged
		// as Partial: it was never a request the model could answer.
		req.Partial = err != nil
		s.log(req)
		writeError(w, http.StatusBadRequest, "cannot read the request body")
		return
	}
	var in requestBody
	if err := json.Unmarshal(body, &in); err != nil {
		s.log(req)
		writeError(w, http.StatusBadRequest, "the request body is not valid JSON: "+err.Error())
		return
	}
	conv := in.conversation(wire)
	req.Model, req.Stream = in.Model, in.Stream
	req.LastUserText, req.ToolOutputs, req.Step = conv.userText, conv.outputs, conv.rounds
	req.Tools = in.toolNames()

	st, rule, fail := s.pick(conv.userText, conv.rounds)
	req.Rule = rule
	s.log(req)

	if !sleep(ctx, st.TTFT) {
		return
	}
	if fail {
		msg := st.ErrorMessage
		if msg == "" {
			msg = fmt.Sprintf("scripted error (HTTP %d)", st.HTTPError)
		}
		writeError(w, st.HTTPError, msg)
		return
	}
	p := s.plan(&st, &in, wire, len(body))
	model := in.Model
	if model == "" {
		model = ModelID
	}
	switch {
	case wire == WireResponses && in.Stream:
		s.streamResponses(ctx, w, p, model)
	case wire == WireResponses:
		s.oneResponse(ctx, w, p, model)
	case in.Stream:
		s.streamChat(ctx, w, p, model, in.StreamOptions != nil && in.StreamOptions.IncludeUsage)
	default:
		s.oneChat(ctx, w, p, model)
	}
}

// pick finds the step for a request and decides whether it fails with the
// step's HTTPError.
func (s *Server) pick(userText string, rounds int) (st Step, rule int, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	steps, rule := s.script.Default, -1
	if len(steps) == 0 {
		steps = []Step{doneStep}
	}
	lower := strings.ToLower(userText)
	for i, r := range s.script.Rules {
		if strings.Contains(lower, strings.ToLower(r.Match)) {
			steps, rule = r.Steps, i
			if r.Sequential {
				rounds = s.served[i]
				s.served[i]++
			}
			break
		}
	}
	if rounds >= len(steps) {
		return doneStep, rule, false
	}
	st = steps[rounds]
	if st.HTTPError == 0 {
		return st, rule, false
	}
	if st.FailTimes <= 0 {
		return st, rule, true
	}
	key := strconv.Itoa(rule) + "/" + strconv.Itoa(rounds)
	s.fails[key]++
	return st, rule, s.fails[key] <= st.FailTimes
}

// sleep waits d, or until ctx ends (then it returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeError answers with an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	typ, code := errorKind(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
}

// errorKind gives the error type and code a real endpoint uses for status.
func errorKind(status int) (typ string, code any) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", nil
	case status == http.StatusNotFound:
		return "invalid_request_error", "not_found"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", "server_error"
	case status >= 400:
		return "invalid_request_error", nil
	}
	return "error", nil
}
