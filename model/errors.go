package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ErrorKind classifies a failed Stream.
type ErrorKind int

const (
	ErrKindOther ErrorKind = iota
	// ErrKindContextWindow: the input does not fit the model's context.
	ErrKindContextWindow
	// ErrKindUnauthorized: HTTP 401 or 403.
	ErrKindUnauthorized
	// ErrKindBadRequest: any other 4xx except 429, or a request the client
	// refused to send.
	ErrKindBadRequest
	// ErrKindServer: HTTP 5xx, or a server_error reported inside the stream.
	ErrKindServer
	// ErrKindTooManyAttempts: every attempt failed with a retryable error.
	// HTTPStatus is the last attempt's status (0 if it had none).
	ErrKindTooManyAttempts
	// ErrKindConnection: the request could not be sent or no response
	// header arrived (DNS, refused, reset, TLS).
	ErrKindConnection
	// ErrKindDisconnected: the stream broke or ended before the response
	// was complete.
	ErrKindDisconnected
	// ErrKindIdleTimeout: no event for Provider.IdleTimeout.
	ErrKindIdleTimeout
	// ErrKindOutputLimit: the response streamed more than
	// Provider.MaxOutputBytes (or sent a line longer than the stream can
	// hold); apserver cut it.
	ErrKindOutputLimit
	// ErrKindResponseTimeout: the response took longer than
	// Provider.MaxResponseTime; apserver cut it.
	ErrKindResponseTimeout
	// ErrKindConfig: the provider's configuration cannot work (a base URL
	// that is not an http or https URL). Never retried.
	ErrKindConfig
)

func (k ErrorKind) String() string {
	switch k {
	case ErrKindOther:
		return "other"
	case ErrKindContextWindow:
		return "contextWindowExceeded"
	case ErrKindUnauthorized:
		return "unauthorized"
	case ErrKindBadRequest:
		return "badRequest"
	case ErrKindServer:
		return "serverError"
	case ErrKindTooManyAttempts:
		return "tooManyAttempts"
	case ErrKindConnection:
		return "connectionFailed"
	case ErrKindDisconnected:
		return "disconnected"
	case ErrKindIdleTimeout:
		return "idleTimeout"
	case ErrKindOutputLimit:
		return "outputLimit"
	case ErrKindResponseTimeout:
		return "responseTimeout"
	case ErrKindConfig:
		return "configuration"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error is the error type returned by Client.Stream (except for context
// cancellation, which returns ctx.Err()).
type Error struct {
	Kind       ErrorKind
	HTTPStatus int    // 0 when no HTTP error status was involved
	Message    string // human-readable; includes the server's message when there is one
	Retryable  bool

	last *Error // for ErrKindTooManyAttempts: the last attempt's error
}

func (e *Error) Error() string {
	if e.HTTPStatus != 0 && e.Kind != ErrKindTooManyAttempts {
		return fmt.Sprintf("model: %s (HTTP %d): %s", e.Kind, e.HTTPStatus, e.Message)
	}
	return fmt.Sprintf("model: %s: %s", e.Kind, e.Message)
}

// Unwrap returns the last attempt's error for ErrKindTooManyAttempts.
func (e *Error) Unwrap() error {
	if e.last == nil {
		return nil
	}
	return e.last
}

// httpError classifies a non-2xx HTTP response from its status and body.
func httpError(status int, body []byte) *Error {
	code, typ, msg := parseErrorBody(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &Error{HTTPStatus: status, Message: msg}
	switch {
	case isContextWindow(code, typ, msg):
		e.Kind = ErrKindContextWindow
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = ErrKindUnauthorized
	case status == http.StatusTooManyRequests:
		e.Kind = ErrKindOther
		// An exhausted quota does not come back by waiting.
		e.Retryable = code != "insufficient_quota"
	case status >= 500:
		e.Kind = ErrKindServer
		e.Retryable = true
	case status >= 400:
		e.Kind = ErrKindBadRequest
	default:
		e.Kind = ErrKindOther
	}
	return e
}

// streamError classifies an error the server reported inside the stream
// (Responses "error" / "response.failed", or a Chat chunk with "error").
func streamError(code, typ, msg string) *Error {
	if msg == "" {
		msg = "the model server reported an error"
	}
	if code != "" {
		msg = code + ": " + msg
	}
	e := &Error{Message: msg}
	switch {
	case isContextWindow(code, typ, msg):
		e.Kind = ErrKindContextWindow
	case code == "server_error" || typ == "server_error" || code == "internal_error":
		e.Kind = ErrKindServer
		e.Retryable = true
	case code == "rate_limit_exceeded" || code == "slow_down" || code == "server_is_overloaded":
		e.Kind = ErrKindOther
		e.Retryable = true
	case code == "invalid_prompt" || typ == "invalid_request_error":
		e.Kind = ErrKindBadRequest
	default:
		e.Kind = ErrKindOther
	}
	return e
}

func isContextWindow(code, typ, msg string) bool {
	if code == "context_length_exceeded" || typ == "exceed_context_size_error" || code == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "context length") || strings.Contains(m, "context window") ||
		strings.Contains(m, "context_length_exceeded") || strings.Contains(m, "exceeds the available context size") ||
		strings.Contains(m, "maximum context")
}

// parseErrorBody extracts (code, type, message) from the error bodies
// OpenAI-compatible servers send: {"error":{"message","type","code"}},
// {"error":"text"}, {"message":...} (vLLM), {"detail":...}; any other body is
// used as the message, trimmed and shortened.
func parseErrorBody(body []byte) (code, typ, msg string) {
	body = trimSpace(body)
	if len(body) == 0 {
		return "", "", ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", "", shorten(string(body))
	}
	if len(v.Error) > 0 && v.Error[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			return rawString(inner.Code), inner.Type, rawString(inner.Message)
		}
	}
	if s := rawString(v.Error); s != "" {
		return rawString(v.Code), v.Type, s
	}
	if v.Message != "" {
		return rawString(v.Code), v.Type, v.Message
	}
	if s := rawString(v.Detail); s != "" {
		return "", "", s
	}
	return "", "", shorten(string(body))
}

// rawString renders a JSON value as text: strings unquoted, arrays of
// strings joined, null as "", anything else verbatim.
func rawString(r json.RawMessage) string {
	r = trimSpace(r)
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(r, &ss) == nil {
		return strings.Join(ss, ", ")
	}
	return shorten(string(r))
}

func shorten(s string) string {
	const max = 1000
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
