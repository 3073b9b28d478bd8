package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Client streams model responses from one Provider. It is safe for
// concurrent use; each Stream call is independent.
type Client struct {
	p           Provider
	oa          *openai.Client
	maxRetries  int
	backoffBase time.Duration
	idle        time.Duration
	maxOut      int64         // output bytes per response; <= 0: none
	maxTime     time.Duration // wall time per response; <= 0: none
	maxLine     int           // longest stream line

	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// now is used to interpret HTTP-date Retry-After values.
	now func() time.Time
}

// NewClient returns a client for p. A nil httpClient means a default client
// without an overall timeout (streams are long; the idle timeout guards them).
func NewClient(p Provider, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	if p.Wire == "" {
		p.Wire = WireResponses
	}
	cfg := openai.DefaultConfig(p.APIKey)
	if p.BaseURL != "" {
		cfg.BaseURL = strings.TrimRight(p.BaseURL, "/")
	}
	maxOut := p.MaxOutputBytes
	if maxOut == 0 {
		maxOut = DefaultMaxOutputBytes
	}
	maxTime := p.MaxResponseTime
	if maxTime == 0 {
		maxTime = DefaultMaxResponseTime
	}
	maxLine := maxLineFor(maxOut)
	cfg.HTTPClient = &doer{hc: httpClient, headers: p.Headers, maxLine: maxLine}
	// go-openai counts non-"data:" lines (event:, comments, keep-alives)
	// between two data lines and gives up past this limit; the idle timeout
	// is our guard, so make the limit irrelevant.
	cfg.EmptyMessagesLimit = 1 << 30

	c := &Client{
		p:           p,
		oa:          openai.NewClientWithConfig(cfg),
		maxRetries:  p.MaxRetries,
		backoffBase: p.BackoffBase,
		idle:        p.IdleTimeout,
		maxOut:      maxOut,
		maxTime:     maxTime,
		maxLine:     maxLine,
		sleep:       sleepCtx,
		now:         time.Now,
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.backoffBase <= 0 {
		c.backoffBase = DefaultBackoffBase
	}
	if c.idle <= 0 {
		c.idle = DefaultIdleTimeout
	}
	return c
}

// CheckBaseURL reports why u cannot be a provider's base URL: it must be an
// absolute http or https URL with a host, such as https://api.openai.com/v1.
func CheckBaseURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("base URL %q: %w", u, err)
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return fmt.Errorf("base URL %q is not an http:// or https:// URL", u)
	}
	if p.Host == "" {
		return fmt.Errorf("base URL %q has no host", u)
	}
	return nil
}

// Provider returns the provider the client was built for, with defaults applied
// to Wire.
func (c *Client) Provider() Provider { return c.p }

// errIdle is the cancellation cause of an attempt that saw no event for
// the idle timeout.
var errIdle = errors.New("idle timeout")

// attemptInfo carries what the HTTP layer saw of a failed response back to
// Stream (go-openai keeps neither the headers nor, for odd bodies, the text).
type attemptInfo struct {
	status     int
	body       []byte
	method     string // the request, for a 404's hint
	url        string
	retryAfter time.Duration // < 0: no Retry-After header
}

type attemptInfoKey struct{}

// doer is the go-openai HTTPDoer: it adds the provider's headers and, for an
// error status, buffers the body and records Retry-After.
type doer struct {
	hc      *http.Client
	headers map[string]string
	maxLine int
}

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	for k, v := range d.headers {
		req.Header.Set(k, v)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode < 400 {
		resp.Body = newSSEFilter(resp.Body, d.maxLine)
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if info, ok := req.Context().Value(attemptInfoKey{}).(*attemptInfo); ok {
		info.status = resp.StatusCode
		info.body = body
		info.method, info.url = req.Method, redactURL(req.URL)
		info.retryAfter = parseRetryAfter(resp.Header, time.Now())
	}
	return resp, nil
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date). It returns -1 when neither is usable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return 0
	}
	return -1
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff returns the delay before retry number retry+1: the server's
// Retry-After when given, else BackoffBase·2^retry with ±25% jitter, capped
// at MaxBackoff.
func (c *Client) backoff(retry int, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, MaxRetryAfter)
	}
	d := c.backoffBase
	for i := 0; i < retry && d < MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	jitter := 0.75 + rand.Float64()*0.5
	return min(time.Duration(float64(d)*jitter), MaxBackoff)
}

// emitter forwards events to the caller and remembers whether anything
// (other than EvRetry) went out, which forbids further retries.
type emitter struct {
	fn      func(Event)
	emitted bool
	// out counts the output bytes of the response (text, reasoning and
	// tool-call input deltas); over is set once it passes max (> 0).
	out, max int64
	over     bool
}

// count adds n bytes of streamed output.
func (e *emitter) count(n int) {
	e.out += int64(n)
	if e.max > 0 && e.out > e.max {
		e.over = true
	}
}

func (e *emitter) send(ev Event) {
	e.emitted = true
	e.fn(ev)
}

// rawStream is what both go-openai stream types offer.
type rawStream interface {
	RecvRaw() ([]byte, error)
	Close() error
}

// parser consumes the data lines of one attempt.
type parser interface {
	// line handles one SSE data payload; done reports the end of the response.
	line(b []byte) (done bool, err *Error)
	// eof is called when the stream ends without line reporting done; it
	// either completes the response or returns the error to report.
	eof() *Error
	// complete reports whether everything but the end marker has arrived.
	complete() bool
	// output is the emitter, which counts the response's output.
	output() *emitter
}

// Stream runs one model request to completion. It blocks, calling emit (from
// the calling goroutine, in stream order) for each event, and returns nil
// after EvCompleted, ctx.Err() if ctx ends, or an *Error.
//
// Attempts failing with a retryable error (HTTP 429 and 5xx, connection
// errors, broken streams, idle timeouts) are retried, announced by EvRetry,
// but only while nothing has been emitted for this request.
func (c *Client) Stream(ctx context.Context, req Request, emit func(Event)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckBaseURL(c.p.BaseURL); err != nil && c.p.BaseURL != "" {
		// Retrying cannot help: the request would fail the same way.
		return &Error{Kind: ErrKindConfig, Message: err.Error()}
	}
	em := &emitter{fn: emit, max: c.maxOut}
	info := &attemptInfo{}
	if c.maxTime > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		timer := time.AfterFunc(c.maxTime, func() { cancel(errResponseTime) })
		defer timer.Stop()
	}
	ctx = context.WithValue(ctx, attemptInfoKey{}, info)

	var (
		rsReq   openai.CreateResponseRequest
		chatReq openai.ChatCompletionRequest
	)
	if c.p.Wire == WireChat {
		chatReq = buildChatRequest(req)
	} else {
		rsReq = buildResponsesRequest(req)
	}

	for attempt := 0; ; attempt++ {
		*info = attemptInfo{retryAfter: -1}
		var e *Error
		if c.p.Wire == WireChat {
			e = c.attempt(ctx, info, func(actx context.Context) (rawStream, error) {
				s, err := c.oa.CreateChatCompletionStream(actx, chatReq)
				if err != nil {
					return nil, err
				}
				return s, nil
			}, newChatParserFor(req, em))
		} else {
			e = c.attempt(ctx, info, func(actx context.Context) (rawStream, error) {
				s, err := c.oa.CreateResponseStream(actx, rsReq)
				if err != nil {
					return nil, err
				}
				return s, nil
			}, newResponsesParser(em))
		}
		if e == nil {
			return nil
		}
		if err := c.ctxErr(ctx); err != nil {
			return err
		}
		if !e.Retryable || em.emitted {
			return e
		}
		if attempt >= c.maxRetries {
			return &Error{
				Kind:       ErrKindTooManyAttempts,
				HTTPStatus: e.HTTPStatus,
				Message:    fmt.Sprintf("gave up after %d attempts; last error: %s", attempt+1, e.Error()),
				last:       e,
			}
		}
		delay := c.backoff(attempt, info.retryAfter)
		emit(Event{Kind: EvRetry, Attempt: attempt + 1, Delay: delay, Err: e})
		if err := c.sleep(ctx, delay); err != nil {
			return c.ctxErr(ctx)
		}
	}
}

// ctxErr is ctx's error, or the *Error of the response time limit when
// that is why ctx ended.
func (c *Client) ctxErr(ctx context.Context) error {
	if context.Cause(ctx) == errResponseTime {
		return c.responseTimeError()
	}
	return ctx.Err()
}

// attempt runs one HTTP request and feeds its events to p.
func (c *Client) attempt(ctx context.Context, info *attemptInfo, open func(context.Context) (rawStream, error), p parser) *Error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(c.idle, func() { cancel(errIdle) })
	defer idle.Stop()

	stream, err := open(actx)
	if err != nil {
		return c.openError(actx, info, err)
	}
	defer stream.Close()
	for {
		idle.Reset(c.idle)
		b, err := stream.RecvRaw()
		// The idle timer measures the server's silence, not the time the
		// caller takes to accept our events (it may be slowed by its client).
		idle.Stop()
		if errors.Is(err, errLineTooLong) {
			return c.lineLimitError()
		}
		if err != nil {
			if err == io.EOF && context.Cause(actx) == nil {
				return p.eof()
			}
			if ctx.Err() != nil {
				return c.readError(actx, err)
			}
			// A Chat server that stalls or drops the connection after
			// finish_reason has still delivered the whole answer.
			if p.complete() {
				return p.eof()
			}
			if err == io.EOF {
				return c.idleError()
			}
			return c.readError(actx, err)
		}
		if b == nil {
			// go-openai swallowed an unparseable "data: {"error":..." line.
			return &Error{Kind: ErrKindOther, Message: "malformed error event in stream"}
		}
		done, e := p.line(b)
		if p.output().over {
			return c.outputLimitError()
		}
		if e != nil {
			return e
		}
		if done {
			return nil
		}
	}
}

func (c *Client) idleError() *Error {
	return &Error{
		Kind:      ErrKindIdleTimeout,
		Message:   fmt.Sprintf("no event from the model server for %s", c.idle),
		Retryable: true,
	}
}

// openError classifies a failure to start the stream.
func (c *Client) openError(actx context.Context, info *attemptInfo, err error) *Error {
	if context.Cause(actx) == errIdle {
		return c.idleError()
	}
	if info.status != 0 {
		return c.withHint(httpError(info.status, info.body), info)
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return httpError(apiErr.HTTPStatusCode, nil)
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		return httpError(reqErr.HTTPStatusCode, reqErr.Body)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return &Error{Kind: ErrKindConnection, Message: err.Error(), Retryable: true}
	}
	// go-openai refused the request before sending it (validation) or could
	// not encode it.
	return &Error{Kind: ErrKindBadRequest, Message: err.Error()}
}

// withHint adds to an HTTP error what a person can do about it: the
// variable a missing or refused key comes from, the URL a 404 came from.
// Providers answer these in their own words ("You didn't provide an API
// key", "404 page not found"), which name neither.
func (c *Client) withHint(e *Error, info *attemptInfo) *Error {
	env := c.p.APIKeyEnv
	switch {
	case e.Kind == ErrKindUnauthorized && c.p.APIKey == "" && env != "":
		e.Message += fmt.Sprintf(" — no API key was sent: set %s (provider %q reads its key from it)", env, c.p.Name)
	case e.Kind == ErrKindUnauthorized && c.p.APIKey == "":
		e.Message += fmt.Sprintf(" — no API key was sent: give provider %q an api_key_env (docs/configuration.md)", c.p.Name)
	case e.Kind == ErrKindUnauthorized && env != "":
		e.Message += fmt.Sprintf(" — the key in %s was refused", env)
	case e.HTTPStatus == http.StatusNotFound && info.url != "":
		base := strings.TrimRight(c.p.BaseURL, "/")
		e.Message += fmt.Sprintf(" — %s %s: is provider %q's base URL (%s) right?", info.method, info.url, c.p.Name, base)
		if !strings.HasSuffix(base, "/v1") {
			e.Message += fmt.Sprintf(" OpenAI-compatible servers usually serve under /v1 (%s/v1)", base)
		}
	}
	return e
}

// redactURL is u without user info or query, which may carry credentials.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	r.User, r.RawQuery, r.ForceQuery = nil, "", false
	return r.String()
}

// readError classifies a failure while reading the stream.
func (c *Client) readError(actx context.Context, err error) *Error {
	if context.Cause(actx) == errIdle {
		return c.idleError()
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return streamError(rawCode(apiErr.Code), apiErr.Type, apiErr.Message)
	}
	return &Error{Kind: ErrKindDisconnected, Message: "stream broke: " + err.Error(), Retryable: true}
}

func rawCode(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}
