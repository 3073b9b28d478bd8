package store

import (
	"reflect"
	"testing"
)

func TestRunsUsage(t *testing.T) {
	s := openTest(t, "")
	for _, u := range []RunUsage{
		{RunID: "r1", Stage: "planning", Model: "m", Input: 100, Output: 10, At: 1000},
		{RunID: "r1", Stage: "task", TaskID: "t1", Model: "m", Input: 200, Cached: 50, Output: 20, At: 2000},
		{RunID: "r1", Stage: "task", TaskID: "t1", Model: "m", Input: 300, Output: 30, At: 3000},
		{RunID: "r2", Stage: "task", TaskID: "t2", Model: "m", Input: 7, Output: 7, At: 3000},  // another run
		{RunID: "r1", Stage: "review", TaskID: "t1", Model: "m", Input: 9, Output: 9, At: 500}, // yesterday
	} {
		if err := s.AddRunUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RunsUsage(ctx, []string{"r1", "r3"}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []RunUsage{{Stage: "planning", Model: "m", Input: 100, Output: 10}, {Stage: "task", Model: "m", Input: 500, Cached: 50, Output: 50}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RunsUsage = %+v, want %+v", got, want)
	}
	if got, err := s.RunsUsage(ctx, nil, 0); err != nil || got != nil {
		t.Errorf("RunsUsage(no runs) = %v, %v", got, err)
	}
}
