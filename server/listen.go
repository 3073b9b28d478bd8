package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// Endpoint is a parsed --listen value other than stdio://.
type Endpoint struct {
	Network string // "tcp" or "unix"
	Address string // IP:PORT, or the socket's path
}

// ParseListen parses a --listen value: stdio:// (returns nil), ws://IP:PORT
// or unix://PATH. An empty unix path means defaultSocket.
func ParseListen(v, defaultSocket string) (*Endpoint, error) {
	switch {
	case v == "" || v == "stdio://" || v == "stdio":
		return nil, nil
	case strings.HasPrefix(v, "unix://"):
		p := strings.TrimPrefix(v, "unix://")
		if p == "" {
			p = defaultSocket
		}
		if !filepath.IsAbs(p) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			p = abs
		}
		return &Endpoint{Network: "unix", Address: p}, nil
	case strings.HasPrefix(v, "ws://"):
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("--listen %q: want ws://IP:PORT", v)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || port == "" {
			return nil, fmt.Errorf("--listen %q: want ws://IP:PORT", v)
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		if net.ParseIP(host) == nil {
			return nil, fmt.Errorf("--listen %q: the host must be an IP address", v)
		}
		return &Endpoint{Network: "tcp", Address: net.JoinHostPort(host, port)}, nil
	}
	return nil, fmt.Errorf("--listen %q: want stdio://, ws://IP:PORT or unix://PATH", v)
}

// Loopback reports whether only this machine can reach the endpoint: a
// unix socket, or a TCP address on a loopback IP.
func (e *Endpoint) Loopback() bool {
	if e.Network == "unix" {
		return true
	}
	host, _, _ := net.SplitHostPort(e.Address)
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen binds the endpoint. A unix socket is created with mode 0600 (the
// umask is tightened while it is bound: call Listen before other goroutines
// create files); a stale socket file left by a dead server is replaced, a
// live one is an error.
func (e *Endpoint) Listen() (net.Listener, error) {
	if e.Network != "unix" {
		return net.Listen("tcp", e.Address)
	}
	if err := os.MkdirAll(filepath.Dir(e.Address), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(e.Address); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", e.Address)
		}
		if c, err := net.DialTimeout("unix", e.Address, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another server is listening there", e.Address)
		}
		if err := os.Remove(e.Address); err != nil {
			return nil, err
		}
	}
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", e.Address)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(e.Address, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// URL is how a client names the endpoint (the actual port once bound).
func URL(l net.Listener) string {
	if l.Addr().Network() == "unix" {
		return "unix://" + l.Addr().String()
	}
	return "ws://" + l.Addr().String()
}

// ListenOptions configure Serve.
type ListenOptions struct {
	// TokenSHA256 is the SHA-256 of the capability token a client must
	// send as "Authorization: Bearer <token>"; nil lets any client that
	// can reach the endpoint connect.
	TokenSHA256 []byte
	// AllowOrigins lists the browser Origin values allowed to connect
	// ("*": any). A WebSocket upgrade carrying any other Origin header is
	// refused with 403: a web page must not drive a local agent.
	AllowOrigins []string
	// Server is the template of every connection's options (Hub should be
	// set).
	Server Options
	// Setup registers the methods on each new connection.
	Setup func(*Server)
}

// TokenHash reads a capability token file (surrounding whitespace ignored)
// or decodes a hex SHA-256; it returns the hash Serve checks against.
func TokenHash(file, hexHash string) ([]byte, error) {
	switch {
	case file != "" && hexHash != "":
		return nil, errors.New("give --ws-token-file or --ws-token-sha256, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the token file: %w", err)
		}
		tok := bytes.TrimSpace(b)
		if len(tok) == 0 {
			return nil, fmt.Errorf("token file %s is empty", file)
		}
		sum := sha256.Sum256(tok)
		return sum[:], nil
	case hexHash != "":
		h, err := hex.DecodeString(strings.TrimSpace(hexHash))
		if err != nil || len(h) != sha256.Size {
			return nil, errors.New("--ws-token-sha256 must be 64 hex digits")
		}
		return h, nil
	}
	return nil, errors.New("capability-token auth needs --ws-token-file or --ws-token-sha256")
}

// Serve accepts WebSocket connections on l until ctx ends, each its own
// Server sharing opts.Server.Hub. The WebSocket is served at "/" and at
// "/rpc" (the path Codex's clients use over a unix socket); "/readyz" and
// "/healthz" answer 200 "ok". On return every connection is closed; the
// work they started goes on in the session.
func Serve(ctx context.Context, l net.Listener, opts ListenOptions) error {
	log := opts.Server.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var conns atomic.Int64
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	}
	mux.HandleFunc("/readyz", ok)
	mux.HandleFunc("/healthz", ok)
	rpc := func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r, opts.TokenSHA256) {
			log.Warn("connection refused: missing or wrong capability token", "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, opts.AllowOrigins) {
			log.Warn("connection refused: browser origin", "origin", origin, "remote", r.RemoteAddr)
			http.Error(w, "forbidden origin", http.StatusForbidden)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // Origin checked above
		if err != nil {
			log.Warn("websocket upgrade failed", "err", err)
			return
		}
		max := opts.Server.MaxLineBytes
		if max <= 0 {
			max = DefaultMaxLineBytes
		}
		c.SetReadLimit(int64(max) + 1)
		wg.Add(1)
		defer wg.Done()
		serveConn(ctx, c, opts, log.With("conn", conns.Add(1)))
	}
	mux.HandleFunc("/{$}", rpc)
	mux.HandleFunc("/rpc", rpc)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	log.Info("listening", "url", URL(l))
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), closeTimeout)
	defer scancel()
	_ = hs.Shutdown(sctx)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func authorized(r *http.Request, want []byte) bool {
	if want == nil {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], want) == 1
}

func originAllowed(origin string, allowed []string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimRight(a, "/"), strings.TrimRight(origin, "/")) {
			return true
		}
	}
	return false
}

// serveConn runs one connection's Server over the WebSocket until either
// side closes it.
func serveConn(ctx context.Context, c *websocket.Conn, opts ListenOptions, log *slog.Logger) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &wsReader{ctx: cctx, c: c}
	w := &wsWriter{ctx: cctx, c: c}
	so := opts.Server
	so.Logger = log // names the connection in every line (--trace included)
	srv := New(r, w, so)
	if opts.Setup != nil {
		opts.Setup(srv)
	}
	go func() {
		// Once the output closes (the end, or a client too slow to keep
		// up), a write blocked on the socket is abandoned.
		select {
		case <-srv.st.closing:
			cancel()
		case <-cctx.Done():
		}
	}()
	err := srv.Run(cctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Debug("connection ended", "err", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// wsReader turns WebSocket messages into the JSONL the stream reads: one
// message, one line. Line breaks inside a message (whitespace between JSON
// tokens; JSON strings cannot hold raw ones) become spaces.
type wsReader struct {
	ctx context.Context
	c   *websocket.Conn
	buf []byte
}

func (r *wsReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		typ, msg, err := r.c.Read(r.ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) || errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, err
		}
		if typ != websocket.MessageText {
			continue
		}
		for i, b := range msg {
			if b == '\n' || b == '\r' {
				msg[i] = ' '
			}
		}
		r.buf = append(msg, '\n')
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// wsWriter sends each line the stream writes as one text message.
type wsWriter struct {
	ctx     context.Context
	c       *websocket.Conn
	partial []byte
}

func (w *wsWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			break
		}
		msg := p[:i]
		if len(w.partial) > 0 {
			msg = append(w.partial, msg...)
		}
		if err := w.c.Write(w.ctx, websocket.MessageText, msg); err != nil {
			return 0, err
		}
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}
