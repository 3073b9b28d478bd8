package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// What one response may cost apserver, besides the idle timeout: the text
// it streams (Provider.MaxOutputBytes, counted by the emitter), its wall
// time (Provider.MaxResponseTime, a timer in Stream) and the memory of the
// stream reader (sseFilter below).

// errResponseTime is the cancellation cause of a Stream that ran past
// Provider.MaxResponseTime.
var errResponseTime = errors.New("response time limit")

// errLineTooLong is returned by sseFilter.Read for a line longer than its
// limit; go-openai hands it back from RecvRaw.
var errLineTooLong = errors.New("stream line too long")

// maxOtherBytes bounds the non-data lines (other than event:, id:, retry:
// and comments) passed on to go-openai, which keeps them all to parse as an
// error body should the stream end.
const maxOtherBytes = 64 << 10

// sseFilter sits between the HTTP body of a stream and go-openai's reader,
// which would otherwise keep every "event:" line of a Responses stream (it
// buffers all non-data lines in case they form an error body) and read a
// line of any length into memory. It drops event:, id:, retry: and comment
// lines, passes at most maxOtherBytes of other non-data lines, and fails a
// read once a line grows past maxLine. It passes bytes through without
// copying whole lines.
type sseFilter struct {
	r       *bufio.Reader
	body    io.Closer
	maxLine int

	pending []byte // passed bytes not yet returned
	inLine  bool   // inside a line whose fate is decided
	drop    bool   // ... and it is being dropped
	counted bool   // ... and it counts against maxOtherBytes
	lineLen int
	other   int
	err     error
}

func newSSEFilter(body io.ReadCloser, maxLine int) *sseFilter {
	return &sseFilter{r: bufio.NewReaderSize(body, 32<<10), body: body, maxLine: maxLine}
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		chunk, err := f.r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			f.err = err
		}
		if len(chunk) == 0 {
			continue
		}
		if !f.inLine {
			f.inLine, f.lineLen = true, 0
			f.drop, f.counted = f.classify(chunk)
		}
		f.lineLen += len(chunk)
		if f.lineLen > f.maxLine {
			f.err = errLineTooLong
			return 0, f.err
		}
		if f.counted {
			f.other += len(chunk)
			if f.other > maxOtherBytes {
				f.drop = true
			}
		}
		if chunk[len(chunk)-1] == '\n' {
			f.inLine = false
		}
		if !f.drop {
			f.pending = chunk
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// classify decides the fate of a line from its start: drop it, and count it
// against maxOtherBytes.
func (f *sseFilter) classify(start []byte) (drop, counted bool) {
	t := bytes.TrimLeft(start, " \t")
	switch {
	case bytes.HasPrefix(t, []byte("data:")):
		return false, false
	case len(bytes.TrimSpace(t)) == 0:
		return false, false // event separator; go-openai keeps nothing of it
	case t[0] == ':', bytes.HasPrefix(t, []byte("event:")), bytes.HasPrefix(t, []byte("id:")), bytes.HasPrefix(t, []byte("retry:")):
		return true, false
	}
	return false, true
}

func (f *sseFilter) Close() error { return f.body.Close() }

// maxLineFor is the longest stream line accepted with an output cap of
// maxOut bytes: a final event repeats the whole output, escaped.
func maxLineFor(maxOut int64) int {
	if maxOut <= 0 || maxOut > 64<<20 {
		return 256 << 20
	}
	return int(4*maxOut) + 1<<20
}

func (c *Client) outputLimitError() *Error {
	return &Error{Kind: ErrKindOutputLimit, Message: fmt.Sprintf("the response streamed more than %d bytes of output; apserver cut it", c.maxOut)}
}

func (c *Client) lineLimitError() *Error {
	return &Error{Kind: ErrKindOutputLimit, Message: fmt.Sprintf("the response sent a stream line longer than %d bytes; apserver cut it", c.maxLine)}
}

func (c *Client) responseTimeError() *Error {
	return &Error{Kind: ErrKindResponseTimeout, Message: fmt.Sprintf("the response took longer than %s; apserver cut it", c.maxTime)}
}
