package cpu

import (
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

func checkIDs(id []int32, V int, what string) {
	for _, t := range id {
		if t < 0 || int(t) >= V {
			panic(fmt.Sprintf("cpu: %s: id %d outside the vocabulary [0, %d)", what, t, V))
		}
	}
}

// LogSoftmax computes each row's log-sum-exp, the log-probabilities of
// its ids and its entropy; see backend.Trainer.
func (c *CPU) LogSoftmax(lp, ent, lse, logits, ids backend.Buf, rows, V, K int) {
	backend.Need(logits, rows*V, "logsoftmax logits")
	backend.Need(lse, rows, "logsoftmax lse")
	backend.Need(lp, rows*K, "logsoftmax lp")
	backend.NeedIDs(ids, rows*K, "logsoftmax ids")
	backend.Optional(ent, rows, "logsoftmax ent")
	lg, ls, lps, es, id := f32(logits), f32(lse), f32(lp), opt(ent), i32(ids)
	checkIDs(id, V, "logsoftmax")
	c.parallel(rows, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := lg[r*V:][:V]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			var sum, sx float64
			for _, v := range row {
				d := v - mx
				e := expf(d)
				sum += float64(e)
				sx += float64(e) * float64(d)
			}
			l := float64(mx) + math.Log(sum)
			ls[r] = float32(l)
			for k := range K {
				lps[r*K+k] = float32(float64(row[id[r*K+k]]) - l)
			}
			if es != nil {
				es[r] = float32(math.Log(sum) - sx/sum)
			}
		}
	})
}

// LogSoftmaxBackward writes dlogits[r,j] = Σ_k dlp[r,k]·(1[j = ids[r,k]] − p_j)
// − dent[r]·p_j·(log p_j + ent[r]); see backend.Trainer.
func (c *CPU) LogSoftmaxBackward(dlogits, logits, lse, ent, ids, dlp, dent backend.Buf, rows, V, K int) {
	backend.Need(logits, rows*V, "logsoftmax backward logits")
	backend.Need(dlogits, rows*V, "logsoftmax backward dlogits")
	backend.Need(lse, rows, "logsoftmax backward lse")
	backend.Need(dlp, rows*K, "logsoftmax backward dlp")
	backend.NeedIDs(ids, rows*K, "logsoftmax backward ids")
	backend.Optional(dent, rows, "logsoftmax backward dent")
	if !dent.Nil() {
		backend.Need(ent, rows, "logsoftmax backward ent")
	}
	lg, dl, ls, dls, id := f32(logits), f32(dlogits), f32(lse), f32(dlp), i32(ids)
	des, es := opt(dent), opt(ent)
	checkIDs(id, V, "logsoftmax backward")
	c.parallel(rows, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, drow := lg[r*V:][:V], dl[r*V:][:V]
			l := ls[r]
			var s float32
			for _, g := range dls[r*K : (r+1)*K] {
				s += g
			}
			if des == nil || des[r] == 0 {
				for j, v := range row {
					drow[j] = -s * expf(v-l)
				}
			} else {
				de, h := des[r], es[r]
				for j, v := range row {
					lpj := v - l
					p := expf(lpj)
					drow[j] = -s*p - de*p*(lpj+h)
				}
			}
			for k := range K {
				drow[id[r*K+k]] += dls[r*K+k]
			}
		}
	})
}

// TopK writes each row's K likeliest ids and their log-probabilities.
func (c *CPU) TopK(ids, lp, logits, lse backend.Buf, rows, V, K int) {
	backend.Need(logits, rows*V, "topk logits")
	backend.Need(lse, rows, "topk lse")
	backend.Need(lp, rows*K, "topk lp")
	backend.NeedIDs(ids, rows*K, "topk ids")
	if K > V {
		panic(fmt.Sprintf("cpu: topk: K %d > V %d", K, V))
	}
	lg, ls, lps, id := f32(logits), f32(lse), f32(lp), i32(ids)
	c.parallel(rows, 1, func(lo, hi int) {
		top := make([]int32, 0, K+1)
		for r := lo; r < hi; r++ {
			row := lg[r*V:][:V]
			top = topRow(top[:0], row, K)
			for k, t := range top {
				id[r*K+k] = t
				lps[r*K+k] = row[t] - ls[r]
			}
		}
	})
}

// topRow appends to top the indices of the k largest values of row,
// largest first, lowest index on ties.
func topRow(top []int32, row []float32, k int) []int32 {
	for i, v := range row {
		n := len(top)
		if n == k && v <= row[top[n-1]] {
			continue
		}
		at := n
		for at > 0 && row[top[at-1]] < v {
			at--
		}
		if n < k {
			top = append(top, 0)
		} else {
			n--
		}
		copy(top[at+1:n+1], top[at:n])
		top[at] = int32(i)
	}
	return top
}
