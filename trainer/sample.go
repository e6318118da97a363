package trainer

import (
	"math"
	"math/rand/v2"
	"slices"
)

// SampleParams choose the next token from logits.
type SampleParams struct {
	// Temperature divides the logits; 0 is greedy (argmax, lowest id on ties).
	Temperature float64
	// TopK keeps the k likeliest tokens; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of likeliest tokens whose probability
	// reaches p (nucleus sampling); 0 or 1 keeps all.
	TopP float64
	// TopLogprobs is how many alternatives, with their log-probabilities, to
	// return per token (at most 20).
	TopLogprobs int
}

// TokenLogprob is a token id and its log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Sampled is one chosen token. Logprob and Top are log-probabilities under
// the model's own distribution (log-softmax of the raw logits, temperature
// 1, before top-k/top-p), as vLLM reports them by default, which is what a
// policy-gradient update needs.
type Sampled struct {
	ID      int32
	Logprob float32
	Top     []TokenLogprob
}

// Sample picks a token from logits [V] with rng (used only when Temperature > 0).
func Sample(logits []float32, p SampleParams, rng *rand.Rand) Sampled {
	mx := float32(math.Inf(-1))
	arg := 0
	for i, v := range logits {
		if v > mx {
			mx, arg = v, i
		}
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	lse := float64(mx) + math.Log(sum)
	logprob := func(i int) float32 { return float32(float64(logits[i]) - lse) }
	id := arg
	if p.Temperature > 0 {
		id = sampleIndex(logits, mx, p, rng)
	}
	s := Sampled{ID: int32(id), Logprob: logprob(id)}
	if n := min(p.TopLogprobs, 20, len(logits)); n > 0 {
		s.Top = make([]TokenLogprob, 0, n)
		for _, i := range topIndices(logits, n) {
			s.Top = append(s.Top, TokenLogprob{ID: int32(i), Logprob: logprob(i)})
		}
	}
	return s
}

// topIndices returns the n largest logits' indices, largest first (lowest id on ties).
func topIndices(logits []float32, n int) []int {
	top := make([]int, 0, n+1)
	for i, v := range logits {
		if len(top) == n && v <= logits[top[n-1]] {
			continue
		}
		at := len(top)
		for at > 0 && logits[top[at-1]] < v {
			at--
		}
		top = slices.Insert(top, at, i)
		if len(top) > n {
			top = top[:n]
		}
	}
	return top
}

type cand struct {
	id int
	p  float64
}

// sampleIndex draws from softmax(logits/T) restricted by top-k and top-p.
func sampleIndex(logits []float32, mx float32, p SampleParams, rng *rand.Rand) int {
	invT := 1 / p.Temperature
	V := len(logits)
	topP := p.TopP
	if topP <= 0 || topP >= 1 {
		topP = 1
	}
	k := p.TopK
	if k <= 0 || k > V {
		k = V
	}
	// Unnormalised weights; the candidates are the tokens that can matter.
	var total float64
	w := make([]float64, V)
	for i, v := range logits {
		w[i] = math.Exp(float64(v-mx) * invT)
		total += w[i]
	}
	if k == V && topP == 1 {
		return draw(w, total, rng)
	}
	// Tokens under eps·total together hold at most V·eps of the mass; with the
	// others sorted, the nucleus is exact whenever it closes before them.
	eps := total * 1e-4 / float64(V)
	var cs []cand
	for i, x := range w {
		if x >= eps {
			cs = append(cs, cand{i, x})
		}
	}
	order := func(a, b cand) int {
		if a.p != b.p {
			if a.p > b.p {
				return -1
			}
			return 1
		}
		return a.id - b.id
	}
	slices.SortFunc(cs, order)
	if len(cs) < k {
		var mass float64
		for _, c := range cs {
			mass += c.p
		}
		if mass < topP*total { // the nucleus reaches into the tail: sort everything
			cs = cs[:0]
			for i, x := range w {
				cs = append(cs, cand{i, x})
			}
			slices.SortFunc(cs, order)
		}
	}
	cs = cs[:min(k, len(cs))]
	var kept, kTotal float64
	for _, c := range cs {
		kTotal += c.p
	}
	n := 0
	for n < len(cs) {
		kept += cs[n].p
		n++
		if kept >= topP*kTotal {
			break
		}
	}
	cs = cs[:n]
	u := rng.Float64() * kept
	for _, c := range cs {
		u -= c.p
		if u < 0 {
			return c.id
		}
	}
	return cs[len(cs)-1].id
}

func draw(w []float64, total float64, rng *rand.Rand) int {
	u := rng.Float64() * total
	for i, x := range w {
		u -= x
		if u < 0 {
			return i
		}
	}
	for i := len(w) - 1; i >= 0; i-- {
		if w[i] > 0 {
			return i
		}
	}
	return 0
}
