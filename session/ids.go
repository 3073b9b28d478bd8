package session

import "github.com/apserver/apserver/internal/uuid"

// newID returns a UUIDv7 string: time-ordered, so ids sort by creation.
func newID() string { return uuid.NewV7() }
