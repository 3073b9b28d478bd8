package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is one configured MCP server, ready to start: either Command (stdio)
// or URL (streamable HTTP) is set.
type Server struct {
	Name string
	// stdio
	Command string
	Args    []string
	Env     []string // the whole environment of the process, "KEY=value"
	Cwd     string
	// streamable HTTP
	URL     string
	Headers map[string]string // sent with every request (Authorization included)
	// StartupTimeout bounds connecting and the first listing of tools.
	StartupTimeout time.Duration
}

// Stdio reports whether the server is a child process.
func (s Server) Stdio() bool { return s.Command != "" }

// State is where a server's connection stands.
type State int

// States of a connection.
const (
	NotStarted State = iota
	Starting
	Connected
	Failed
)

func (s State) String() string {
	switch s {
	case NotStarted:
		return "notStarted"
	case Starting:
		return "starting"
	case Connected:
		return "connected"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Tool is one tool a server offers.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage // nil when the server gave none
	Annotations  *Annotations    // nil when the server gave none
	// Raw is the tool as the server described it (MCP's Tool shape).
	Raw json.RawMessage
}

// Annotations are a tool's hints (MCP ToolAnnotations); a nil pointer is a
// hint the server did not give.
type Annotations struct {
	ReadOnly    bool
	Destructive *bool
	OpenWorld   *bool
}

// Result is a tool's answer.
type Result struct {
	Content    []json.RawMessage // MCP content blocks
	Structured json.RawMessage   // structuredContent, nil if none
	IsError    bool
	Meta       json.RawMessage // _meta, nil if none
}

// Status is a snapshot of one server.
type Status struct {
	Name      string
	State     State
	Err       string // why it failed, when State is Failed
	Tools     []Tool
	Resources []json.RawMessage // MCP Resource objects
	Templates []json.RawMessage // MCP ResourceTemplate objects
	Info      json.RawMessage   // serverInfo (MCP Implementation), nil before a connection
}

// ElicitRequest is what a server asks the user (MCP elicitation/create).
type ElicitRequest struct {
	Mode            string // "form" or "url"
	Message         string
	RequestedSchema json.RawMessage // form mode
	URL             string          // url mode
	ElicitationID   string          // url mode
	Meta            json.RawMessage
}

// ElicitResult is the user's answer.
type ElicitResult struct {
	Action  string // "accept" | "decline" | "cancel"
	Content map[string]any
	Meta    map[string]any
}

// Options configure a Pool.
type Options struct {
	Log *slog.Logger
	// Elicit answers a server's elicitation; nil declines every one.
	Elicit func(ctx context.Context, server string, req ElicitRequest) (ElicitResult, error)
	// OnState is told each change of a server's state (on the goroutine
	// that changed it, without the pool's lock held).
	OnState func(server string, state State, err error)
	// Now reads the clock for the restart backoff; nil is time.Now.
	Now func() time.Time
	// TerminateGrace is how long a stdio server has to exit after its
	// stdin is closed, before SIGTERM and then SIGKILL; 0 is 2 s.
	TerminateGrace time.Duration
}

// Backoff bounds between attempts to start a server that failed to start.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// ErrUnknownServer is returned for a server the pool does not have.
var ErrUnknownServer = errors.New("unknown MCP server")

// Pool holds one connection per configured server. It is safe for
// concurrent use.
type Pool struct {
	opts    Options
	log     *slog.Logger
	tokens  atomic.Int64
	closing atomic.Bool

	mu       sync.Mutex
	conns    map[string]*conn
	progress map[string]func(string) // progress token → callback
}

// conn is one server's connection; its fields are guarded by Pool.mu.
type conn struct {
	srv      Server
	state    State
	err      error
	session  *sdk.ClientSession
	pgid     int           // process group of a stdio server, 0 if none
	ready    chan struct{} // closed when the start in progress ends
	failures int           // failed starts in a row
	retryAt  time.Time     // no new start before this after failures
	stale    bool          // the server said its tools changed
	status   Status
	stderr   sync.WaitGroup
}

// NewPool returns a pool for servers; nothing is started yet.
func NewPool(servers []Server, opts Options) *Pool {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TerminateGrace <= 0 {
		opts.TerminateGrace = 2 * time.Second
	}
	p := &Pool{opts: opts, log: opts.Log, conns: map[string]*conn{}, progress: map[string]func(string){}}
	for _, s := range servers {
		p.conns[s.Name] = &conn{srv: s, status: Status{Name: s.Name}}
	}
	return p
}

// Names lists the configured servers, sorted.
func (p *Pool) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.conns))
	for n := range p.conns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Server returns a server's configuration.
func (p *Pool) Server(name string) (Server, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[name]
	if !ok {
		return Server{}, false
	}
	return c.srv, true
}

// Status returns a snapshot of a server without starting it.
func (p *Pool) Status(name string) (Status, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[name]
	if !ok {
		return Status{}, false
	}
	st := c.status
	st.State = c.state
	if c.err != nil {
		st.Err = c.err.Error()
	}
	return st, true
}

// Tools connects to the server if needed and returns its tools.
func (p *Pool) Tools(ctx context.Context, name string) ([]Tool, error) {
	c, err := p.ensure(ctx, name)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	stale, cs := c.stale, c.session
	p.mu.Unlock()
	if stale && cs != nil {
		if tools, err := listTools(ctx, cs); err == nil {
			p.mu.Lock()
			if c.session == cs {
				c.status.Tools, c.stale = tools, false
			}
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.status.Tools, nil
}

// Call calls a tool. progress, if not nil, is told each progress message
// the server sends about the call. A tool that reports an error is a
// Result with IsError; an error means the call did not complete (the
// server failed, the context ended).
func (p *Pool) Call(ctx context.Context, server, tool string, args json.RawMessage, progress func(string)) (Result, error) {
	c, err := p.ensure(ctx, server)
	if err != nil {
		return Result{}, err
	}
	p.mu.Lock()
	cs := c.session
	p.mu.Unlock()
	if cs == nil {
		return Result{}, fmt.Errorf("MCP server %s is not connected", server)
	}
	params := &sdk.CallToolParams{Name: tool}
	if len(args) > 0 && string(args) != "null" {
		params.Arguments = args
	} else {
		params.Arguments = map[string]any{}
	}
	if progress != nil {
		tok := fmt.Sprintf("apserver-%d", p.tokens.Add(1))
		params.SetProgressToken(tok)
		p.mu.Lock()
		p.progress[tok] = progress
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.progress, tok)
			p.mu.Unlock()
		}()
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, fmt.Errorf("calling %s on MCP server %s: %w", tool, server, err)
	}
	out := Result{IsError: res.IsError, Content: make([]json.RawMessage, 0, len(res.Content))}
	for _, ct := range res.Content {
		b, err := json.Marshal(ct)
		if err != nil {
			continue
		}
		out.Content = append(out.Content, b)
	}
	if res.StructuredContent != nil {
		out.Structured, _ = json.Marshal(res.StructuredContent)
	}
	if len(res.Meta) > 0 {
		out.Meta, _ = json.Marshal(res.Meta)
	}
	return out, nil
}

// ReadResource reads a resource; the result is MCP's contents array.
func (p *Pool) ReadResource(ctx context.Context, server, uri string) ([]json.RawMessage, error) {
	c, err := p.ensure(ctx, server)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	cs := c.session
	p.mu.Unlock()
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("reading %s from MCP server %s: %w", uri, server, err)
	}
	out := make([]json.RawMessage, 0, len(res.Contents))
	for _, rc := range res.Contents {
		b, err := json.Marshal(rc)
		if err == nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// Reload replaces the configured servers: a server whose configuration
// changed, or that is gone, is stopped; new ones start on first use.
func (p *Pool) Reload(servers []Server) {
	next := map[string]Server{}
	for _, s := range servers {
		next[s.Name] = s
	}
	var stop []*conn
	p.mu.Lock()
	for name, c := range p.conns {
		if s, ok := next[name]; !ok || !reflect.DeepEqual(s, c.srv) {
			stop = append(stop, c)
			delete(p.conns, name)
		}
	}
	for name, s := range next {
		if _, ok := p.conns[name]; !ok {
			p.conns[name] = &conn{srv: s, status: Status{Name: name}}
		}
	}
	p.mu.Unlock()
	for _, c := range stop {
		p.stop(c)
	}
}

// Close stops every server. The pool must not be used afterwards.
func (p *Pool) Close() {
	p.closing.Store(true)
	p.mu.Lock()
	conns := make([]*conn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { p.stop(c) })
	}
	wg.Wait()
}

// stop closes a connection and, for a stdio server, kills what is left of
// its process group.
func (p *Pool) stop(c *conn) {
	p.mu.Lock()
	ready := c.ready
	p.mu.Unlock()
	if ready != nil {
		<-ready // a start in progress finishes (or times out) first
	}
	p.mu.Lock()
	cs, pgid := c.session, c.pgid
	c.session, c.pgid = nil, 0
	if c.state == Connected || c.state == Starting {
		c.state = NotStarted
	}
	p.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	c.stderr.Wait()
}

// ensure returns a connected server, starting it if needed.
func (p *Pool) ensure(ctx context.Context, name string) (*conn, error) {
	for {
		p.mu.Lock()
		c, ok := p.conns[name]
		if !ok {
			p.mu.Unlock()
			return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
		}
		if p.closing.Load() {
			p.mu.Unlock()
			return nil, fmt.Errorf("MCP server %s: apserver is shutting down", name)
		}
		switch c.state {
		case Connected:
			p.mu.Unlock()
			return c, nil
		case Starting:
			ready := c.ready
			p.mu.Unlock()
			select {
			case <-ready:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case Failed:
			if p.opts.Now().Before(c.retryAt) {
				err := c.err
				p.mu.Unlock()
				return nil, fmt.Errorf("MCP server %s failed (next start after %s): %w", name, c.retryAt.Format(time.TimeOnly), err)
			}
		}
		c.state, c.err, c.ready = Starting, nil, make(chan struct{})
		srv := c.srv
		p.mu.Unlock()
		p.notify(name, Starting, nil)

		err := p.start(ctx, c, srv)
		p.mu.Lock()
		if err != nil {
			c.state, c.err = Failed, err
			c.failures++
			c.retryAt = p.opts.Now().Add(min(minBackoff<<(c.failures-1), maxBackoff))
		} else {
			c.state, c.failures = Connected, 0
		}
		close(c.ready)
		c.ready = nil
		p.mu.Unlock()
		if err != nil {
			p.log.Warn("MCP server failed to start", "server", name, "err", err)
			p.notify(name, Failed, err)
			return nil, fmt.Errorf("MCP server %s: %w", name, err)
		}
		p.notify(name, Connected, nil)
		return c, nil
	}
}

func (p *Pool) notify(name string, st State, err error) {
	if p.opts.OnState != nil {
		p.opts.OnState(name, st, err)
	}
}

// start connects to the server and lists what it offers, within its
// startup timeout.
func (p *Pool) start(ctx context.Context, c *conn, srv Server) error {
	timeout := srv.StartupTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()

	client := sdk.NewClient(&sdk.Implementation{Name: "apserver", Version: "1"}, &sdk.ClientOptions{
		Logger:             p.log.With("mcpServer", srv.Name),
		ElicitationHandler: p.elicitHandler(srv.Name),
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			p.mu.Lock()
			c.stale = true
			p.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			tok, _ := req.Params.ProgressToken.(string)
			p.mu.Lock()
			f := p.progress[tok]
			p.mu.Unlock()
			if f != nil {
				msg := req.Params.Message
				if msg == "" {
					msg = fmt.Sprintf("progress %g", req.Params.Progress)
					if req.Params.Total > 0 {
						msg += fmt.Sprintf("/%g", req.Params.Total)
					}
				}
				f(msg)
			}
		},
	})

	var (
		transport sdk.Transport
		pgid      int
	)
	if srv.Stdio() {
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Env = srv.Env
		cmd.Dir = srv.Cwd
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		c.stderr.Go(func() { p.logStderr(srv.Name, stderr) })
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: p.opts.TerminateGrace}
		cs, err := client.Connect(sctx, transport, nil)
		if cmd.Process != nil {
			pgid = cmd.Process.Pid
		}
		if err != nil {
			if pgid > 0 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			if cmd.Process == nil {
				// Never started: nothing writes the stderr pipe.
				_ = stderr.Close()
			}
			return fmt.Errorf("starting %s: %w", srv.Command, err)
		}
		return p.connected(sctx, c, cs, pgid)
	}
	hc := &http.Client{Transport: headerTransport{headers: srv.Headers}}
	transport = &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: 1}
	cs, err := client.Connect(sctx, transport, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", srv.URL, err)
	}
	return p.connected(sctx, c, cs, 0)
}

// connected lists the server's tools and resources and records the
// session; a session that ends on its own (the process exited, the
// connection broke) marks the server failed.
func (p *Pool) connected(ctx context.Context, c *conn, cs *sdk.ClientSession, pgid int) error {
	st := Status{Name: c.srv.Name}
	if ir := cs.InitializeResult(); ir != nil {
		if ir.ServerInfo != nil {
			st.Info, _ = json.Marshal(ir.ServerInfo)
		}
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		_ = cs.Close()
		if pgid > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		return fmt.Errorf("listing tools: %w", err)
	}
	st.Tools = tools
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				break
			}
			if b, err := json.Marshal(r); err == nil {
				st.Resources = append(st.Resources, b)
			}
		}
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				break
			}
			if b, err := json.Marshal(r); err == nil {
				st.Templates = append(st.Templates, b)
			}
		}
	}
	p.mu.Lock()
	c.session, c.pgid, c.status, c.stale = cs, pgid, st, false
	p.mu.Unlock()
	go func() {
		err := cs.Wait()
		p.mu.Lock()
		if c.session != cs { // stopped on purpose
			p.mu.Unlock()
			return
		}
		c.session = nil
		if pgid > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			c.pgid = 0
		}
		if err == nil {
			err = errors.New("the server closed the connection")
		}
		err = fmt.Errorf("server exited: %w", err)
		c.state, c.err = Failed, err
		// A server that was running is started again on its next use.
		c.retryAt = time.Time{}
		p.mu.Unlock()
		p.log.Warn("MCP server stopped", "server", c.srv.Name, "err", err)
		p.notify(c.srv.Name, Failed, err)
	}()
	return nil
}

func listTools(ctx context.Context, cs *sdk.ClientSession) ([]Tool, error) {
	var out []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, toolOf(t))
	}
	return out, nil
}

func toolOf(t *sdk.Tool) Tool {
	out := Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	out.Raw, _ = json.Marshal(t)
	if t.InputSchema != nil {
		out.InputSchema, _ = json.Marshal(t.InputSchema)
	}
	if t.OutputSchema != nil {
		out.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	if a := t.Annotations; a != nil {
		out.Annotations = &Annotations{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
		if out.Title == "" {
			out.Title = a.Title
		}
	}
	return out
}

// maxStderrLine caps one logged stderr line of a server.
const maxStderrLine = 4 << 10

// logStderr logs a stdio server's stderr, line by line.
func (p *Pool) logStderr(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > maxStderrLine {
			line = line[:maxStderrLine] + "…"
		}
		p.log.Info("MCP server stderr", "server", name, "line", line)
	}
	_, _ = io.Copy(io.Discard, r) // a line past the scanner's limit
}

func (p *Pool) elicitHandler(server string) func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	return func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		if p.opts.Elicit == nil {
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		in := ElicitRequest{Mode: req.Params.Mode, Message: req.Params.Message, URL: req.Params.URL, ElicitationID: req.Params.ElicitationID}
		if in.Mode == "" {
			in.Mode = "form"
			if in.URL != "" {
				in.Mode = "url"
			}
		}
		if req.Params.RequestedSchema != nil {
			in.RequestedSchema, _ = json.Marshal(req.Params.RequestedSchema)
		}
		if len(req.Params.Meta) > 0 {
			in.Meta, _ = json.Marshal(req.Params.Meta)
		}
		res, err := p.opts.Elicit(ctx, server, in)
		if err != nil {
			return nil, err
		}
		out := &sdk.ElicitResult{Action: res.Action, Content: res.Content}
		if len(res.Meta) > 0 {
			out.Meta = res.Meta
		}
		return out, nil
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Start starts a server that has not been started yet (or was stopped by
// Reload), and, with retryFailed, one that failed and whose backoff is
// over; it waits for a start in progress. A connected server is left as it
// is. It returns the server's error, if any.
func (p *Pool) Start(ctx context.Context, name string, retryFailed bool) error {
	p.mu.Lock()
	c, ok := p.conns[name]
	if !ok {
		p.mu.Unlock()
		return fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	st, due := c.state, !p.opts.Now().Before(c.retryAt)
	p.mu.Unlock()
	if st == NotStarted || st == Starting || (st == Failed && retryFailed && due) {
		_, err := p.ensure(ctx, name)
		return err
	}
	return nil
}
