package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestProgressBar: on a terminal the bar is redrawn in place and ends
// with a newline; elsewhere each change is a line, repeats dropped.
func TestProgressBar(t *testing.T) {
	prog := func(done, total, nodes int, st protocol.BlueprintJobStatus) protocol.BlueprintProgressNotification {
		return protocol.BlueprintProgressNotification{Status: st, ChunksDone: done, ChunksTotal: total, Nodes: nodes}
	}
	var tty bytes.Buffer
	b := &progressBar{w: &tty, tty: true}
	b.Notify(protocol.NotifyBlueprintProgress, prog(1, 3, 5, protocol.JobIngesting))
	b.Notify(protocol.NotifyBlueprintProgress, prog(3, 3, 9, protocol.JobReady))
	b.Notify("other/method", prog(0, 3, 0, protocol.JobIngesting))
	b.end()
	want := "\r[##########....................] ingesting: 1/3 chunks, 5 nodes\x1b[K" +
		"\r[##############################] ready: 3/3 chunks, 9 nodes\x1b[K\n"
	if tty.String() != want {
		t.Fatalf("terminal output %q, want %q", tty.String(), want)
	}
	var log bytes.Buffer
	b = &progressBar{w: &log}
	b.Notify(protocol.NotifyBlueprintProgress, prog(0, 2, 0, protocol.JobIngesting))
	b.Notify(protocol.NotifyBlueprintProgress, prog(0, 2, 0, protocol.JobIngesting))
	b.Notify(protocol.NotifyBlueprintProgress, protocol.BlueprintProgressNotification{Status: protocol.JobFailed, ChunksDone: 1, ChunksTotal: 2, Error: "chunk 2 (bytes 10-20): bad"})
	b.end()
	if got := strings.Split(strings.TrimSpace(log.String()), "\n"); len(got) != 2 || got[1] != "failed: 1/2 chunks, 0 nodes: chunk 2 (bytes 10-20): bad" {
		t.Fatalf("log output %q", log.String())
	}
}
