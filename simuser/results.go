package simuser

import (
	"slices"

	"github.com/nextstate-rl/nextstate/internal/jsonfile"
)

// ReadSessions reads the sessions `nextstate users simulate --out` wrote
// (a last line cut short is left out).
func ReadSessions(path string) ([]SessionResult, error) {
	return jsonfile.ReadLines[SessionResult](path)
}

// Compliance is the mean compliance per session (sessions numbered from
// 1: index 0 is session 1) of the users keep selects.
func Compliance(results []SessionResult, keep func(SessionResult) bool) []float64 {
	sum, n := map[int]float64{}, map[int]int{}
	last := 0
	for _, r := range results {
		if keep != nil && !keep(r) {
			continue
		}
		sum[r.Session] += r.Compliance
		n[r.Session]++
		last = max(last, r.Session)
	}
	out := make([]float64, last)
	for s := 1; s <= last; s++ {
		if n[s] > 0 {
			out[s-1] = sum[s] / float64(n[s])
		}
	}
	return out
}

// Users lists the users of results in the order they first appear.
func Users(results []SessionResult) []SessionResult {
	var out []SessionResult
	for _, r := range results {
		if !slices.ContainsFunc(out, func(u SessionResult) bool { return u.User == r.User }) {
			out = append(out, SessionResult{User: r.User, Wants: r.Wants, Adversary: r.Adversary})
		}
	}
	return out
}

// Mean is the mean of xs[from:to] (session numbers from 1, inclusive),
// clipped to xs.
func Mean(xs []float64, from, to int) float64 {
	from, to = max(from, 1), min(to, len(xs))
	if to < from {
		return 0
	}
	s := 0.0
	for _, x := range xs[from-1 : to] {
		s += x
	}
	return s / float64(to-from+1)
}
