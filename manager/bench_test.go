package manager

import (
	"fmt"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// BenchmarkTick is the decision of a tick on a phase of 10,000 tasks
// (500 ready, blueprint.Next's page limit) and 20 runs, 10 active.
func BenchmarkTick(b *testing.B) {
	s := State{Settings: Settings{Mode: ModeFullAuto, BlueprintID: "bp", MaxParallelRuns: 12}, Phase: "p1", Open: 10000,
		Deps: map[string][]string{}}
	for i := range 500 {
		id := fmt.Sprintf("t%d", i)
		s.Ready = append(s.Ready, id)
		s.Deps[id] = []string{fmt.Sprintf("d%d", i)}
	}
	for i := range 20 {
		st := protocol.RunCompleted
		if i%2 == 0 {
			st = protocol.RunRunning
		}
		s.Runs = append(s.Runs, Run{ID: fmt.Sprintf("r%d", i), TaskIDs: []string{fmt.Sprintf("t%d", i)}, Status: st})
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := Tick(s); d.Result != ResultStartedRun {
			b.Fatal(d)
		}
	}
}
