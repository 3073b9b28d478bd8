// Package uuid makes the ids of threads, turns and items: UUIDv7 strings,
// time-ordered so that ids sort by creation, across processes too, and
// strictly increasing within a process (RFC 9562's monotonic counter in
// rand_a), so that two ids of the same millisecond sort as they were made.
// Standard library and internal/clock only.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/apserver/apserver/internal/clock"
)

// last is the time and counter of the process's latest id.
var last struct {
	sync.Mutex
	ms  uint64
	seq uint16 // rand_a: 12 bits
}

// NewV7 returns a UUIDv7 string: time-ordered, so ids sort by creation.
// Within a process each id is greater than the one before: in the same
// millisecond (or when the wall clock steps back) the 12-bit counter in
// rand_a goes up, starting from a random value below 2048 each new
// millisecond; a counter that would overflow borrows the next millisecond.
func NewV7() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(clock.Real{}.Now().UnixMilli()) // wall time whatever clock drives the thread: ids sort across processes
	start := (uint16(b[6])<<8 | uint16(b[7])) & 0x7ff
	last.Lock()
	switch {
	case ms > last.ms:
		last.ms, last.seq = ms, start
	case last.seq < 0xfff:
		last.seq++
	default:
		last.ms++
		last.seq = start
	}
	ms, seq := last.ms, last.seq
	last.Unlock()
	b[7] = byte(seq)
	b[6] = byte(seq >> 8)
	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	b[6] = (b[6] & 0x0f) | 0x70
	b[8] = (b[8] & 0x3f) | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}
