package server

// The read side of the stream: lines in, messages out. Owned by the
// goroutine that calls ReadObject (jsonrpc2's read loop).

import (
	"bufio"
	"fmt"

	"github.com/apserver/apserver/protocol"
)

// next returns the next request or notification. Responses go to
// onResponse; bad lines are answered or logged here.
func (st *stream) next() (message, error) {
	for {
		select {
		case <-st.closing:
			return message{}, ErrClosed
		default:
		}
		line, tooLong, err := st.readLine()
		if err != nil {
			st.mu.Lock()
			if st.readErr == nil {
				st.readErr = err
				close(st.inputEnded)
			}
			st.mu.Unlock()
			return message{}, err
		}
		select {
		case <-st.closing: // closed while the read was blocked
			return message{}, ErrClosed
		default:
		}
		if tooLong {
			st.log.Warn("input line too long; discarded", "max", st.max)
			st.replyError(nil, protocol.CodeInvalidRequest, fmt.Sprintf("line exceeds %d bytes", st.max), nil)
			continue
		}
		line = trimSpace(line)
		if len(line) == 0 {
			continue
		}
		if st.trace {
			st.log.Debug("recv", "line", string(line))
		}
		m, bad := decodeLine(line)
		if cap(st.line) > keepReadCap {
			st.line = nil // a large buffer is not kept: m's values may keep it instead
		} else {
			m.detach() // st.line is read into again
		}
		if bad != nil {
			if bad.noReply {
				st.log.Warn("input dropped", "reason", bad.msg, "line", truncate(line))
			} else {
				st.log.Warn("bad input", "code", bad.code, "err", bad.msg, "line", truncate(line))
				st.replyError(bad.id, bad.code, bad.msg, nil)
			}
			continue
		}
		if m.kind == kindResponse {
			if st.onResponse != nil {
				st.onResponse(m)
			} else {
				st.log.Warn("response dropped: no handler", "id", idString(m.id))
			}
			continue
		}
		return m, nil
	}
}

// readLine returns the next line without its terminator ("\n" or "\r\n").
// A line longer than st.max is discarded as it is read and reported with
// tooLong. At the end of input a final unterminated line is returned first;
// then err is io.EOF (or the read error) on every call.
func (st *stream) readLine() (line []byte, tooLong bool, err error) {
	if st.stickyErr != nil {
		return nil, false, st.stickyErr
	}
	st.line = st.line[:0]
	seen := false
	for {
		frag, err := st.r.ReadSlice('\n')
		if len(frag) > 0 {
			seen = true
		}
		if !tooLong {
			// Keep room for the "\r\n" terminator beyond st.max.
			if len(st.line)+len(frag) > st.max+2 {
				tooLong = true
				st.line = st.line[:0]
			} else {
				if need := len(st.line) + len(frag); need > cap(st.line) {
					// Doubling: append grows a large slice by a quarter,
					// and the blocks a 10 MiB line leaves behind on the
					// way add up to several times its size.
					grown := make([]byte, len(st.line), max(2*cap(st.line), need, readBufSize))
					copy(grown, st.line)
					st.line = grown
				}
				st.line = append(st.line, frag...)
			}
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		st.stickyErr = err
		if !seen {
			return nil, false, err
		}
		break
	}
	line = st.line
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > st.max {
		tooLong = true
	}
	if tooLong {
		return nil, true, nil
	}
	return line, false, nil
}
