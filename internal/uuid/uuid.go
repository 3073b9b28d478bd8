// Package uuid makes the ids of threads, turns and items: UUIDv7 strings,
// time-ordered so that ids sort by creation, across processes too.
// Standard library and internal/clock only.
package uuid

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/apserver/apserver/internal/clock"
)

// NewV7 returns a UUIDv7 string: time-ordered, so ids sort by creation.
func NewV7() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(clock.Real{}.Now().UnixMilli()) // wall time whatever clock drives the thread: ids sort across processes
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
