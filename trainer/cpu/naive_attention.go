package cpu

import (
	"math"
	"sort"
)

// segN is backend.Seg over slices: T rows from Row at positions Start..,
// keys and values K, V [positions, KV·D].
type segN[F float] struct {
	Row, T, Start int
	K, V          []F
}

// ropeNaive rotates x [D] rotate-half style (HF's rotate_half: pairs i and
// i+D/2) by the angles whose cosines and sines are cos, sin [D/2].
func ropeNaive[F float](x, cos, sin []F) {
	half := len(cos)
	for i := range half {
		c, s := float64(cos[i]), float64(sin[i])
		a, b := float64(x[i]), float64(x[i+half])
		x[i], x[i+half] = F(a*c-b*s), F(b*c+a*s)
	}
}

// ropeBackwardNaive maps a gradient through ropeNaive: the transposed
// rotation, the angle negated.
func ropeBackwardNaive[F float](g, cos, sin []F) {
	half := len(cos)
	for i := range half {
		c, s := float64(cos[i]), float64(sin[i])
		a, b := float64(g[i]), float64(g[i+half])
		g[i], g[i+half] = F(a*c+b*s), F(b*c-a*s)
	}
}

// qkNormRopeNaive splits qkv [N, (H+2KV)·D] into q [N, H·D] and each
// segment's K, V at its positions, q and k heads RMS-normalised (qn, kn)
// and rotated by the tables cos, sin [P, D/2].
func qkNormRopeNaive[F float](q []F, segs []segN[F], qkv, qn, kn, cos, sin []F, H, KV, D int, eps float64) {
	W, half, kvd := (H+2*KV)*D, D/2, KV*D
	for _, sg := range segs {
		for t := range sg.T {
			r, p := sg.Row+t, sg.Start+t
			cs, sn := cos[p*half:(p+1)*half], sin[p*half:(p+1)*half]
			for h := range H + KV {
				var dst, w []F
				if h < H {
					dst, w = q[(r*H+h)*D:][:D], qn
				} else {
					dst, w = sg.K[p*kvd+(h-H)*D:][:D], kn
				}
				rmsNormNaive(dst, nil, qkv[r*W+h*D:][:D], w, 1, D, eps)
				ropeNaive(dst, cs, sn)
			}
			copy(sg.V[p*kvd:(p+1)*kvd], qkv[r*W+(H+KV)*D:(r+1)*W])
		}
	}
}

// qkNormRopeBackwardNaive adds into dqkv, dqn, dkn the gradients given dq
// and dk, dv [N, KV·D] (row Row+t is segment position Start+t).
func qkNormRopeBackwardNaive[F float](dqkv, dqn, dkn, dq, dk, dv []F, segs []segN[F], qkv, qn, kn, cos, sin []F, H, KV, D int, eps float64) {
	W, half, kvd := (H+2*KV)*D, D/2, KV*D
	g, y, rstd := make([]F, D), make([]F, D), make([]F, 1)
	for _, sg := range segs {
		for t := range sg.T {
			r, p := sg.Row+t, sg.Start+t
			cs, sn := cos[p*half:(p+1)*half], sin[p*half:(p+1)*half]
			for h := range H + KV {
				var src, w, dw []F
				if h < H {
					src, w, dw = dq[(r*H+h)*D:][:D], qn, dqn
				} else {
					src, w, dw = dk[r*kvd+(h-H)*D:][:D], kn, dkn
				}
				copy(g, src)
				ropeBackwardNaive(g, cs, sn)
				x := qkv[r*W+h*D:][:D]
				rmsNormNaive(y, rstd, x, w, 1, D, eps)
				rmsNormBackwardNaive(dqkv[r*W+h*D:][:D], dw, g, x, w, rstd, 1, D)
			}
			for i := range kvd {
				dqkv[r*W+(H+KV)*D+i] += dv[r*kvd+i]
			}
		}
	}
}

// attentionProbs returns the softmax of the scaled scores of query row r,
// head h of segment sg, over its visible keys, and their log-sum-exp.
func attentionProbs[F float](q []F, sg segN[F], t, h, H, KV, D int) ([]float64, float64) {
	r, kh, n := sg.Row+t, h/(H/KV), sg.Start+t+1
	scale := 1 / math.Sqrt(float64(D))
	sc := make([]float64, n)
	mx := math.Inf(-1)
	for j := range n {
		var s float64
		for i := range D {
			s += float64(q[(r*H+h)*D+i]) * float64(sg.K[(j*KV+kh)*D+i])
		}
		sc[j] = s * scale
		mx = max(mx, sc[j])
	}
	var sum float64
	for j := range sc {
		sc[j] = math.Exp(sc[j] - mx)
		sum += sc[j]
	}
	for j := range sc {
		sc[j] /= sum
	}
	return sc, mx + math.Log(sum)
}

// attentionNaive is causal grouped-query attention: query row Row+t of a
// segment (position Start+t) attends to its keys 0..Start+t; query head h
// reads key/value head h/(H/KV); out [N, H·D], lse [N, H] when not nil.
func attentionNaive[F float](out, lse, q []F, segs []segN[F], H, KV, D int) {
	for _, sg := range segs {
		for t := range sg.T {
			r := sg.Row + t
			for h := range H {
				p, l := attentionProbs(q, sg, t, h, H, KV, D)
				if lse != nil {
					lse[r*H+h] = F(l)
				}
				kh := h / (H / KV)
				for i := range D {
					var a float64
					for j, pj := range p {
						a += pj * float64(sg.V[(j*KV+kh)*D+i])
					}
					out[(r*H+h)*D+i] = F(a)
				}
			}
		}
	}
}

// attentionBackwardNaive adds dq, and dk, dv [N, KV·D] for segments that
// start at position 0: with P the probabilities, dV += Pᵀ·dO, dP = dO·Vᵀ,
// dS = P ⊙ (dP − rowsum(P ⊙ dP)), dQ += dS·K/√D, dK += dSᵀ·Q/√D.
func attentionBackwardNaive[F float](dq, dk, dv, dout, q []F, segs []segN[F], H, KV, D int) {
	kvd, scale := KV*D, 1/math.Sqrt(float64(D))
	for _, sg := range segs {
		for t := range sg.T {
			r := sg.Row + t
			for h := range H {
				kh := h / (H / KV)
				p, _ := attentionProbs(q, sg, t, h, H, KV, D)
				dp := make([]float64, len(p))
				var rs float64
				for j := range p {
					for i := range D {
						dp[j] += float64(dout[(r*H+h)*D+i]) * float64(sg.V[(j*KV+kh)*D+i])
					}
					rs += p[j] * dp[j]
				}
				for j := range p {
					ds := p[j] * (dp[j] - rs) * scale
					kr := (sg.Row+j)*kvd + kh*D
					for i := range D {
						dv[kr+i] += F(p[j] * float64(dout[(r*H+h)*D+i]))
						dq[(r*H+h)*D+i] += F(ds * float64(sg.K[(j*KV+kh)*D+i]))
						dk[kr+i] += F(ds * float64(q[(r*H+h)*D+i]))
					}
				}
			}
		}
	}
}

// logSoftmaxNaive computes per row of logits [rows, V] the log-sum-exp,
// lp[r,k] = logits[r, ids[r,k]] − lse[r], and the entropy when ent is not nil.
func logSoftmaxNaive[F float](lp, ent, lse, logits []F, ids []int32, rows, V, K int) {
	for r := range rows {
		row := logits[r*V:][:V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = max(mx, float64(v))
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		l := mx + math.Log(sum)
		lse[r] = F(l)
		for k := range K {
			lp[r*K+k] = F(float64(row[ids[r*K+k]]) - l)
		}
		if ent != nil {
			var h float64
			for _, v := range row {
				lpj := float64(v) - l
				h -= math.Exp(lpj) * lpj
			}
			ent[r] = F(h)
		}
	}
}

// logSoftmaxBackwardNaive writes dlogits = ∂/∂logits of Σ dlp·lp + Σ dent·ent:
// ∂lp_k/∂l_j = 1[j = id_k] − p_j and ∂ent/∂l_j = −p_j·(log p_j + ent).
func logSoftmaxBackwardNaive[F float](dlogits, logits []F, ids []int32, dlp, dent []F, rows, V, K int) {
	lse, ent := make([]F, rows), make([]F, rows)
	lp := make([]F, rows*K)
	logSoftmaxNaive(lp, ent, lse, logits, ids, rows, V, K)
	for r := range rows {
		l, h := float64(lse[r]), float64(ent[r])
		for j := range V {
			lpj := float64(logits[r*V+j]) - l
			p := math.Exp(lpj)
			var g float64
			for k := range K {
				if int(ids[r*K+k]) == j {
					g += float64(dlp[r*K+k])
				}
				g -= float64(dlp[r*K+k]) * p
			}
			if dent != nil {
				g -= float64(dent[r]) * p * (lpj + h)
			}
			dlogits[r*V+j] = F(g)
		}
	}
}

// topKNaive writes each row's K likeliest ids (ties: lowest id) and their
// log-probabilities.
func topKNaive[F float](ids []int32, lp, logits []F, rows, V, K int) {
	lse, tmp := make([]F, rows), make([]F, rows)
	logSoftmaxNaive(tmp, nil, lse, logits, make([]int32, rows), rows, V, 1)
	for r := range rows {
		row := logits[r*V:][:V]
		idx := make([]int, V)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
		for k := range K {
			ids[r*K+k] = int32(idx[k])
			lp[r*K+k] = F(float64(row[idx[k]]) - float64(lse[r]))
		}
	}
}
