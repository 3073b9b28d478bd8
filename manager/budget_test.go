package manager

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestSpendOf(t *testing.T) {
	prices := map[string]Price{"m1": {InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 10}}
	s := SpendOf([]Usage{
		{Model: "m1", Input: 1_000_000, Cached: 400_000, Output: 100_000},
		{Model: "m2", Input: 500, Output: 50},
		{Model: "m2", Input: 10},
		{Model: "m3"}, // no tokens: no unknown cost
	}, prices)
	// m1: 600k fresh × 2 + 400k cached × 0.5 + 100k out × 10 = 1.2 + 0.2 + 1.0.
	if s.Tokens != 1_100_000+550+10 || math.Abs(s.Cost-2.4) > 1e-9 || !reflect.DeepEqual(s.Unpriced, []string{"m2"}) {
		t.Errorf("SpendOf = %+v", s)
	}
}

func TestExhausted(t *testing.T) {
	tests := []struct {
		b    Budget
		s    Spend
		want string
	}{
		{Budget{}, Spend{Tokens: 1e9, Cost: 1e9, Runs: 1e6}, ""},
		{Budget{TokensPerDay: 1000}, Spend{Tokens: 999}, ""},
		{Budget{TokensPerDay: 1000}, Spend{Tokens: 1200}, "tokens today: 1200 of 1000"},
		{Budget{CostPerDay: 0.5}, Spend{Cost: 0.75}, "cost today: 0.7500 of 0.5000 USD"},
		{Budget{CostPerDay: 0.5}, Spend{Cost: 0.75, Unpriced: []string{"m2"}}, "no price for [m2]"},
		{Budget{CostPerDay: 0.5}, Spend{Cost: 0.25, Unpriced: []string{"m2"}}, ""},
		{Budget{RunsPerDay: 2, TokensPerDay: 10}, Spend{Runs: 2, Tokens: 20}, "runs today: 2 of 2"},
	}
	for _, tt := range tests {
		got := Exhausted(tt.b, tt.s)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("Exhausted(%+v, %+v) = %q, want %q", tt.b, tt.s, got, tt.want)
		}
	}
}
