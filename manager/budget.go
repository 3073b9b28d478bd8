package manager

import (
	"fmt"
	"slices"
)

// Price is a model's price in USD per million tokens (the configuration's
// [prices."MODEL"]).
type Price struct {
	InputPerMTok       float64 `json:"inputPerMTok"`
	CachedInputPerMTok float64 `json:"cachedInputPerMTok"`
	OutputPerMTok      float64 `json:"outputPerMTok"`
}

// Usage is the tokens one model used (input, of which Cached were cached,
// and output).
type Usage struct {
	Model  string
	Input  int64
	Cached int64
	Output int64
}

// SpendOf sums usages into a spend's tokens (input and output) and cost.
// A model without a price adds its tokens but no cost: it is listed in
// Unpriced, and the cost is then a lower bound (unknown, not 0).
func SpendOf(us []Usage, prices map[string]Price) Spend {
	var s Spend
	for _, u := range us {
		s.Tokens += u.Input + u.Output
		p, ok := prices[u.Model]
		if !ok {
			if u.Input+u.Output > 0 && !slices.Contains(s.Unpriced, u.Model) {
				s.Unpriced = append(s.Unpriced, u.Model)
			}
			continue
		}
		fresh := max(u.Input-u.Cached, 0)
		s.Cost += (float64(fresh)*p.InputPerMTok + float64(u.Cached)*p.CachedInputPerMTok + float64(u.Output)*p.OutputPerMTok) / 1e6
	}
	slices.Sort(s.Unpriced)
	return s
}

// Exhausted names the first daily budget that s has spent, with the
// figures ("tokens today: 1200 of 1000"), or "" when none is.
func Exhausted(b Budget, s Spend) string {
	switch {
	case b.RunsPerDay > 0 && s.Runs >= b.RunsPerDay:
		return fmt.Sprintf("runs today: %d of %d", s.Runs, b.RunsPerDay)
	case b.TokensPerDay > 0 && s.Tokens >= b.TokensPerDay:
		return fmt.Sprintf("tokens today: %d of %d", s.Tokens, b.TokensPerDay)
	case b.CostPerDay > 0 && s.Cost >= b.CostPerDay:
		r := fmt.Sprintf("cost today: %.4f of %.4f USD", s.Cost, b.CostPerDay)
		if len(s.Unpriced) > 0 {
			r += fmt.Sprintf(" (at least: no price for %v)", s.Unpriced)
		}
		return r
	}
	return ""
}
