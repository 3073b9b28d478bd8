package uuid

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

var v7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewV7(t *testing.T) {
	before := time.Now().UnixMilli()
	id := NewV7()
	after := time.Now().UnixMilli()
	if !v7.MatchString(id) {
		t.Fatalf("NewV7() = %q, not a UUIDv7", id)
	}
	ms, err := strconv.ParseInt(id[0:8]+id[9:13], 16, 64)
	if err != nil || ms < before || ms > after {
		t.Errorf("NewV7() = %q carries %d ms, want between %d and %d", id, ms, before, after)
	}
	seen := map[string]bool{id: true}
	prev := id
	for range 1000 {
		id := NewV7()
		if seen[id] {
			t.Fatalf("NewV7() repeated %q", id)
		}
		seen[id] = true
		if id[:13] < prev[:13] {
			t.Fatalf("NewV7() = %q after %q: the time part went back", id, prev)
		}
		prev = id
	}
}

// TestNewV7Increases: ids made one after the other in a process increase
// strictly as strings, even many in the same millisecond, so that a list
// ordered by creation time and then by id keeps the order they were made.
func TestNewV7Increases(t *testing.T) {
	prev := NewV7()
	sameMs := 0
	for range 20000 {
		id := NewV7()
		if id <= prev {
			t.Fatalf("NewV7() = %q after %q: not greater", id, prev)
		}
		if id[:13] == prev[:13] {
			sameMs++
		}
		prev = id
	}
	if sameMs == 0 {
		t.Skip("no two ids in the same millisecond: the counter was not exercised")
	}
}
