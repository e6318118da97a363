// Package backend is the contract between the trainer's Qwen3 model and the
// kernels that run it: buffers the backend owns, the few calls that cross to
// the host, and the operations of the forward pass (Backend) and of training
// (Trainer, an optional interface found by type assertion). The CPU backend
// (trainer/cpu) implements both; a CUDA backend holding device pointers
// implements the same methods.
//
// # Buffers
//
// Every number the model computes with lives in memory a backend allocated:
// parameters (one arena with a view per tensor, as llm.c's
// malloc_and_point_parameters), gradients and AdamW moments (arenas of the same
// layout, allocated at the first backward and the first step), activations
// and KV caches. A Buf is a view into such an allocation; a Mat a strided
// matrix view of one. Buffers are created only by Alloc and AllocIDs and
// released by Free; views are free to make and never own memory.
//
// # Host crossings
//
// Exactly these move data between the host and a backend: Write and WriteIDs
// (weights at load, token ids and row ids of each call, per-token loss
// weights), Read and ReadIDs (logits for sampling, log-probabilities,
// entropies, top-K ids, weights at save) and SumSquares (one scalar, the
// gradient norm). Everything else stays on the backend.
//
// # Ordering and concurrency
//
// Calls made in order by one goroutine take effect in that order; Read,
// ReadIDs and SumSquares return after every earlier call has finished (a GPU
// backend may queue the rest on a stream). The model serialises its calls; a
// backend need not be safe for concurrent calls that write the same buffer,
// and the CPU backend is safe for concurrent calls on disjoint buffers.
//
// # Shape legend
//
// Written once, for every operation here and in the model:
//
//	B   sequences in a batch (segments of an inference step)
//	T   tokens of one sequence; Start the position of its first one
//	N   rows of a packed batch: all sequences' tokens, one after another (N = ΣT)
//	C   hidden size
//	H   query heads, KV key/value heads (H a multiple of KV), D head size
//	F   MLP intermediate size
//	V   vocabulary size
//	K   ids gathered per row (1 for the next token; top-K for distillation)
//	P   positions covered by the rotary tables
//
// Matrices are row-major; weights are PyTorch's [out, in], so a linear layer
// is x·wᵀ, and a residual add is a Gemm with β = 1. Per layer the q, k, v projections are one [(H+2KV)·D, C] matrix
// and gate, up one [2F, C] matrix, so activations qkv are [N, (H+2KV)·D]
// (q columns, then k, then v) and gu [N, 2F] (gate, then up).
//
// # Forward and backward
//
// Each forward operation is declared next to its backward. Backward
// operations add into every gradient they are given (as llm.c's do), so that
// gradients accumulate over micro-batches and over the two uses of a tied
// embedding; the caller zeroes them. A gradient the caller does not want (a
// frozen weight) is passed as the zero Buf and skipped. Operations check
// their operands' sizes and panic on a mismatch: that is a bug in the
// caller, never a condition to handle.
package backend

// Heads is the attention's shape: H query heads and KV key/value heads of D.
type Heads struct{ H, KV, D int }

// Seg is one sequence of a packed batch: its T rows start at row Row of the
// batch's activations and sit at positions Start, ..., Start+T−1. K and V
// hold its keys and values, [at least Start+T, KV·D], position p at row p: a
// KV cache in inference (Start the cached length), a slice of the batch's own
// k and v activations in training (Start 0).
type Seg struct {
	Row, T, Start int
	K, V          Buf
}

// Rope holds the rotary tables Cos, Sin [P, D/2]: entry [p, i] is the cosine
// and sine of the angle p·θ^(−2i/D).
type Rope struct{ Cos, Sin Buf }

// AdamW is one step of decoupled-weight-decay Adam over a tensor, as
// torch.optim.AdamW takes it: with g the gradient times GradScale,
//
//	p ← p·(1 − LR·WeightDecay)
//	m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//	p ← p − LR/(1−β1^Step) · m / (√v/√(1−β2^Step) + Eps)
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay, GradScale float64
	Step                                          int // 1 at the first step
}

// Backend is what inference needs: memory, host crossings and the forward
// operations.
type Backend interface {
	// Name says which kernels run, for logs and benchmarks.
	Name() string

	// Alloc returns n zeroed float32; AllocIDs n zeroed int32.
	Alloc(n int) Buf
	AllocIDs(n int) Buf
	// Free releases the allocation b views (b must be what Alloc or
	// AllocIDs returned); using any view of it afterwards panics.
	Free(b Buf)

	// Write copies host values into dst (len(src) == dst.Len()).
	Write(dst Buf, src []float32)
	// WriteIDs copies host ids into the int32 buffer dst.
	WriteIDs(dst Buf, src []int32)
	// Read copies src to the host (len(dst) == src.Len()).
	Read(dst []float32, src Buf)
	// ReadIDs copies the int32 buffer src to the host.
	ReadIDs(dst []int32, src Buf)
	// Copy copies src into dst, two buffers of one length on this backend.
	Copy(dst, src Buf)
	// Zero sets b to zeros.
	Zero(b Buf)

	// Embed gathers rows: out[n,:] = table[ids[n],:] for out [n, C] and n
	// ids; every id must be a row of table. It also selects rows of an
	// activation (the scored rows, the last row of each segment).
	Embed(out, table, ids Buf, C int)

	// Gemm computes c = α·op(a)·op(b) + β·c, op(x) being x or xᵀ as ta, tb
	// say: c[M,N], op(a)[M,K], op(b)[K,N]. With β = 0, c is only written.
	Gemm(c, a Mat, ta bool, b Mat, tb bool, alpha, beta float32)

	// RMSNorm computes out[r,:] = x[r,:]·rstd[r]·w with
	// rstd[r] = 1/√(mean(x[r,:]²) + eps), for x, out [rows, dim], w [dim];
	// out may be x; rstd [rows] is kept for the backward when given.
	RMSNorm(out, rstd, x, w Buf, rows, dim int, eps float32)

	// QKNormRoPE prepares attention's inputs from the fused projection
	// qkv [N, (H+2KV)·D]: every head of q and k is RMS-normalised with qNorm,
	// kNorm [D] and rotated (rotate-half RoPE, HF's) to its position; q goes
	// to q [N, H·D], k and v to each segment's K and V at its positions
	// [Start, Start+T).
	QKNormRoPE(q Buf, segs []Seg, qkv, qNorm, kNorm Buf, rope Rope, h Heads, eps float32)

	// Attention is causal grouped-query attention: for each segment, query
	// row Row+t (position Start+t) attends to keys at positions 0..Start+t of
	// its K, V; query head i reads key/value head i/(H/KV). out [N, H·D];
	// lse [N, H], the log-sum-exp of each row's scaled scores, is kept for
	// the backward when given.
	Attention(out, lse, q Buf, segs []Seg, h Heads)

	// SwiGLU computes out[r,i] = silu(gu[r,i])·gu[r,F+i] for gu [rows, 2F].
	SwiGLU(out, gu Buf, rows, F int)
}

// Trainer is a Backend that can also train: the backward of each forward
// operation, the token log-probabilities over the vocabulary and their
// backward, and the optimizer. Find it by type assertion.
type Trainer interface {
	Backend

	// EmbedBackward scatter-adds: dTable[ids[n],:] += dOut[n,:].
	EmbedBackward(dTable, dOut, ids Buf, C int)

	// RMSNormBackward adds the gradients of RMSNorm(x, w) given dOut into
	// dx [rows, dim] and dw [dim] (either absent to skip), from the rstd the
	// forward kept.
	RMSNormBackward(dx, dw, dOut, x, w, rstd Buf, rows, dim int)

	// QKNormRoPEBackward adds into dqkv [N, (H+2KV)·D] and dqNorm, dkNorm
	// [D] (absent to skip) the gradients given dq [N, H·D] and dk, dv
	// [N, KV·D], whose row Row+t is segment position Start+t.
	QKNormRoPEBackward(dqkv, dqNorm, dkNorm, dq, dk, dv, qkv, qNorm, kNorm Buf, segs []Seg, rope Rope, h Heads, eps float32)

	// AttentionBackward adds into dq [N, H·D] and dk, dv [N, KV·D] the
	// gradients given dOut, from the forward's q, out and lse. Every segment
	// must start at position 0 with K, V [T, KV·D] (a training batch): key j
	// of a segment is row Row+j of dk and dv.
	AttentionBackward(dq, dk, dv, dOut, q, out, lse Buf, segs []Seg, h Heads)

	// SwiGLUBackward adds into dgu [rows, 2F] the gradient given dOut [rows, F].
	SwiGLUBackward(dgu, dOut, gu Buf, rows, F int)

	// LogSoftmax computes, per row of logits [rows, V]: lse[r] the
	// log-sum-exp, lp[r,k] = logits[r, ids[r,k]] − lse[r] for ids [rows, K],
	// and, when ent [rows] is given, the entropy −Σ p·log p.
	LogSoftmax(lp, ent, lse, logits, ids Buf, rows, V, K int)

	// LogSoftmaxBackward writes into dlogits [rows, V] (which may be logits
	// itself) the gradient of Σ dlp[r,k]·lp[r,k] + dent[r]·ent[r], from the
	// forward's lse and ent (dent and ent absent when the entropy carries no
	// weight). It starts the chain, so it writes rather than adds.
	LogSoftmaxBackward(dlogits, logits, lse, ent, ids, dlp, dent Buf, rows, V, K int)

	// TopK writes the K largest log-probabilities of each row, largest first
	// (lowest id on ties), into ids (int32) and lp [rows, K].
	TopK(ids, lp, logits, lse Buf, rows, V, K int)

	// SumSquares returns Σ x² in float64: the host crossing of the gradient norm.
	SumSquares(x Buf) float64

	// AdamW takes one step on parameters p with gradient g and moments m, v,
	// four buffers of one length.
	AdamW(p, g, m, v Buf, s AdamW)
}
