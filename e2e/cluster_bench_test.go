package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/apserver/apserver/cluster"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestClusterBench (a measurement, not a test: it runs only with
// APSERVER_CLUSTER_BENCH=1; the e2e harness's helpers take a *testing.T):
// 60 tasks (20 runs of 3 tasks, each in a
// project of its own) with a model that takes CLUSTER_BENCH_TURN (1 s by
// default) before each answer, driven by 1 and by 3 workers
// (docs/benchmarks.md). It logs tasks per minute and the wall time.
//
//	APSERVER_CLUSTER_BENCH=1 go test ./e2e -run TestClusterBench -v -timeout 30m
func TestClusterBench(b *testing.T) {
	if os.Getenv("APSERVER_CLUSTER_BENCH") != "1" {
		b.Skip("a measurement: set APSERVER_CLUSTER_BENCH=1 to run it")
	}
	turn := time.Second
	if v := os.Getenv("CLUSTER_BENCH_TURN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		turn = d
	}
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.T) {
			benchCluster(b, workers, turn)
		})
	}
}

func benchCluster(b *testing.T, workers int, turn time.Duration) {
	const runs = 20
	pg := migratedPG(b)
	rules := shoutRules(b)
	for i := range rules {
		for j := range rules[i].Steps {
			rules[i].Steps[j].TTFT = turn
		}
	}
	srv, err := scripted.Start(scripted.Script{Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	repos := make([]string, runs)
	for i := range repos {
		repos[i], _ = clusterRemote(b)
	}
	cfg := "[cluster]\ndatabase_url = \"" + pg.URL + "\"\nexecute = \"workers\"\n"
	ed := newRunsClient(b, srv, faOptions{config: cfg})
	ed.wait = 30 * time.Minute
	for i := 0; i < workers; i++ {
		startWorker(b, srv, pg.URL, fmt.Sprintf("w%d", i+1), "")
	}
	start := time.Now()
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = ed.startRun(map[string]any{"cwd": repos[i], "request": fmt.Sprintf("add a shout option (%d)", i), "baseBranch": "main",
			"trust": map[string]any{"planning": "auto"}})
	}
	for _, id := range ids {
		if end := ed.runEnd(id); protocol.RunStatus(end.str("run.status")) != protocol.RunCompleted {
			b.Fatalf("run %s ended %s", id, end.Raw)
		}
	}
	wall := time.Since(start)
	b.Logf("%d workers, %v per model turn: %d tasks in %.1f s, %.1f tasks/min", workers, turn, 3*runs, wall.Seconds(), float64(3*runs)/wall.Minutes())
	// The queue's own part: from a job's insert to its claim by a worker.
	pool, err := cluster.Connect(context.Background(), pg.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var jobs int
	var minMs, claimMs, maxMs float64
	if err := pool.QueryRow(context.Background(), `SELECT COUNT(*), COALESCE(MIN(EXTRACT(EPOCH FROM attempted_at - created_at)) * 1000, 0),
		COALESCE(AVG(EXTRACT(EPOCH FROM attempted_at - created_at)) * 1000, 0),
		COALESCE(MAX(EXTRACT(EPOCH FROM attempted_at - created_at)) * 1000, 0) FROM river_job WHERE state = 'completed'`).Scan(&jobs, &minMs, &claimMs, &maxMs); err != nil {
		b.Fatal(err)
	}
	// The least is the queue's own latency; the rest is waiting for a
	// free worker.
	b.Logf("%d jobs; from insert to claim: %.0f ms at least, %.0f ms on average, %.0f ms at most", jobs, minMs, claimMs, maxMs)
}
