package server

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// blockedWriter never returns until released: a client that stopped
// reading.
type blockedWriter struct{ release chan struct{} }

func (w blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	return 0, errors.New("released")
}

// TestStallLimitDropsAStuckClient: behind a Hub, a client whose queue
// stays full for stallLimit is disconnected instead of holding up the
// session; without a limit (stdio) the writer waits.
func TestStallLimitDropsAStuckClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := blockedWriter{release: make(chan struct{})}
		pr, pw := io.Pipe()
		st := newStream(pr, w, 0, slog.New(slog.DiscardHandler), false)
		st.stallLimit = 10 * time.Second
		start := time.Now()
		var err error
		n := 0
		for ; n < queueLen+writeBufSize && err == nil; n++ {
			err = st.notify("x/y", map[string]int{"n": n})
		}
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("enqueue never failed: %v", err)
		}
		if waited := time.Since(start); waited != st.stallLimit {
			t.Errorf("failed after %v, want the stall limit %v", waited, st.stallLimit)
		}
		if st.writeError() == nil {
			t.Error("no write error recorded for the dropped client")
		}
		close(w.release)
		pw.Close()
		st.Close()
	})
}
