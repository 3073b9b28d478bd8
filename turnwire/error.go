package turnwire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// LimitError ends a turn that went past one of its caps; Key is the config
// key that sets the cap. Its TurnError has codexErrorInfo "other" (see
// docs/protocol.md: no Codex variant names a server-side cap, and the
// stream variants would make full auto retry a runaway) with the key in
// additionalDetails.
type LimitError struct {
	What, Key string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s; apserver stopped it (config: %s)", e.What, e.Key)
}

// ContextError ends a turn that compaction cannot help: its TurnError has
// codexErrorInfo "contextWindowExceeded".
type ContextError struct{ Msg string }

func (e *ContextError) Error() string { return e.Msg }

// ErrorFrom maps an error to a TurnError with Codex's error info; msg,
// when given, is the message instead of the error's.
func ErrorFrom(err error, msg string) protocol.TurnError {
	te := protocol.TurnError{CodexErrorInfo: protocol.ErrorInfo("other")}
	if msg != "" {
		te.Message = msg
	} else if err != nil {
		te.Message = err.Error()
	}
	var me *model.Error
	if errors.As(err, &me) {
		if msg == "" {
			te.Message = me.Message
		}
		switch me.Kind {
		case model.ErrKindContextWindow:
			te.CodexErrorInfo = protocol.ErrorInfo("contextWindowExceeded")
		case model.ErrKindUnauthorized:
			te.CodexErrorInfo = protocol.ErrorInfo("unauthorized")
		case model.ErrKindServer:
			te.CodexErrorInfo = protocol.ErrorInfo("internalServerError")
		case model.ErrKindTooManyAttempts:
			// Codex reports by the upstream status: a 5xx is a server
			// error however often it was retried; a 429 is "too many
			// failed attempts".
			if me.HTTPStatus >= 500 {
				te.CodexErrorInfo = protocol.ErrorInfo("internalServerError")
			} else {
				te.CodexErrorInfo = protocol.ErrorInfoHTTP("responseTooManyFailedAttempts", me.HTTPStatus)
			}
		case model.ErrKindConnection:
			te.CodexErrorInfo = protocol.ErrorInfoHTTP("httpConnectionFailed", me.HTTPStatus)
		case model.ErrKindDisconnected, model.ErrKindIdleTimeout:
			te.CodexErrorInfo = protocol.ErrorInfoHTTP("responseStreamDisconnected", me.HTTPStatus)
		case model.ErrKindOutputLimit:
			te.Message = me.Message + " (config: response_max_output_bytes)"
			te.AdditionalDetails = ptr("response_max_output_bytes")
		case model.ErrKindResponseTimeout:
			te.Message = me.Message + " (config: response_max_time_ms)"
			te.AdditionalDetails = ptr("response_max_time_ms")
		}
	}
	var ce *ContextError
	if errors.As(err, &ce) {
		te.Message = ce.Error()
		te.CodexErrorInfo = protocol.ErrorInfo("contextWindowExceeded")
	}
	var le *LimitError
	if errors.As(err, &le) {
		te.Message = le.Error()
		te.AdditionalDetails = ptr(le.Key)
	}
	if te.Message == "" {
		te.Message = "unknown error"
	}
	return te
}

func ptr[T any](v T) *T { return &v }

// RequestTier is the service_tier a thread's serviceTier asks the provider
// for. Codex's TUI sends "default" on every turn: that, "auto" and unset
// send none, so that providers with other tiers or none (Groq, vLLM) are
// not asked for one they refuse; Codex's "fast" is the API's "priority".
func RequestTier(tier string) string {
	switch tier {
	case "", "default", "auto":
		return ""
	case "fast":
		return "priority"
	}
	return tier
}

// NotSteerable is turn/start's and turn/steer's answer while a turn of
// kind (Codex's activeTurnNotSteerable: a compaction turn) runs.
func NotSteerable(kind string) error {
	msg := "cannot steer a " + kind + " turn"
	data, _ := json.Marshal(protocol.TurnError{Message: msg, CodexErrorInfo: protocol.ErrorInfoNotSteerable(kind)})
	return &protocol.Error{Kind: protocol.ErrInvalidRequest, Msg: msg, Data: data}
}

// Usage is a response's token usage as the wire reports it; a provider
// that gives no total gets input plus output.
func Usage(u model.Usage) protocol.TokenUsageBreakdown {
	last := protocol.TokenUsageBreakdown{
		TotalTokens: u.TotalTokens, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
		OutputTokens: u.OutputTokens, ReasoningOutputTokens: u.ReasoningOutputTokens,
	}
	if last.TotalTokens == 0 {
		last.TotalTokens = last.InputTokens + last.OutputTokens
	}
	return last
}
