// Package trainer is nextstate's integrated trainer: a Qwen3 decoder in Go
// that loads and saves Hugging Face checkpoints, generates with a KV cache
// and continuous batching (Engine, served over an OpenAI-compatible API by
// trainer/serve: `nextstate serve-model --model DIR`), and trains: a backward
// pass for every operation, the token log-probabilities over the vocabulary
// in chunks, AdamW with clipping and schedules, gradient accumulation,
// frozen parameters, LoRA adapters, checkpoints that resume bit for bit
// (Training). Its kernels run behind trainer/backend: the CPU backend
// (trainer/cpu) today, a CUDA backend on the same contract later.
//
// # Model folder
//
// --model DIR is a Hugging Face model folder, as `huggingface-cli download
// Qwen/Qwen3-0.6B --local-dir DIR` or `save_pretrained` leaves it:
//
//	DIR/config.json                      model_type "qwen3" (Qwen3ForCausalLM): vocab_size,
//	                                     hidden_size, intermediate_size, num_hidden_layers,
//	                                     num_attention_heads, num_key_value_heads, head_dim,
//	                                     rms_norm_eps, rope_theta, tie_word_embeddings,
//	                                     max_position_embeddings, eos_token_id
//	DIR/model.safetensors                all weights in one file, or instead:
//	DIR/model.safetensors.index.json     {"weight_map": {tensor: shard file}} and
//	DIR/model-00001-of-0000N.safetensors the shards it names
//	DIR/tokenizer.json                   byte-level BPE (serve-model only)
//	DIR/tokenizer_config.json            optional; the Qwen3 chat template is built in
//	DIR/generation_config.json           optional, not read
//
// Weights may be F32, F16 or BF16 on disk (mixed is fine); compute is f32, so
// a model needs 4 bytes per parameter of memory (Qwen3-0.6B: 3 GB), and
// training 16 (parameters, gradients, two AdamW moments) plus activations.
// The tensors read are HF's names: model.embed_tokens.weight; per layer i
// model.layers.i.{input_layernorm, post_attention_layernorm}.weight,
// model.layers.i.self_attn.{q,k,v,o}_proj.weight,
// model.layers.i.self_attn.{q,k}_norm.weight,
// model.layers.i.mlp.{gate,up,down}_proj.weight; model.norm.weight; and
// lm_head.weight unless tie_word_embeddings. Not supported (refused with a
// message): attention_bias, rope_scaling, sliding windows, other model types.
// No weights are downloaded: tests and benchmarks write random folders with
// Model.Save, and users point --model at a checkpoint already on disk.
// Model.Save writes the same layout (so serve-model, transformers, vLLM and
// SGLang load what training produced).
//
// # Buffers and the backend contract
//
// trainer/backend is the contract; its package doc has the shape legend
// (B, T, N, C, H, KV, D, F, V, K) used everywhere here. Every buffer is the
// backend's: the parameters are one arena (Model.Params) with a view per
// tensor (Model.W), as in llm.c, q/k/v and gate/up adjacent per layer so
// that each group is one matrix product; a Training adds a gradient arena
// of the trainable tensors at its first backward and two AdamW moment
// arenas of the same layout at its first step; activations live in a
// workspace arena grown to the largest pass; each sequence's KV cache
// (Cache) holds a buffer per layer. The host sees them only through these
// crossings: token ids (and scored rows and targets) in; logits out of
// Forward, log-probabilities, entropies and top-K ids out of each chunk of
// the head; each chunk's loss gradient in; one scalar per tensor (its
// squared gradient norm) out of Step; tensors one at a time at Load, Save,
// ReadTensor and WriteTensor; the rotary tables when they grow.
//
// Backend (inference) and backend.Trainer (training, found by type
// assertion) list the operations, each forward next to its backward:
// Embed/EmbedBackward (gather, scatter-add), Gemm (every matrix product:
// forward x·wᵀ, dX = dY·w, dW += dYᵀ·x, the residual adds as β = 1),
// RMSNorm/RMSNormBackward, QKNormRoPE/QKNormRoPEBackward (the q/k split,
// their per-head RMSNorm and rotary embedding), Attention/AttentionBackward
// (causal grouped-query attention over packed sequences or KV caches),
// SwiGLU/SwiGLUBackward, LogSoftmax/LogSoftmaxBackward (log-probabilities
// of given ids and the entropy, from logits), TopK, SumSquares and AdamW.
//
// # Concurrency
//
// A Model serialises its methods (Forward, Save, ReadTensor, ...) and the
// methods of Trainings on it: an Engine serving the model waits while a
// training step runs, and never sees half-updated weights within a call. An
// Engine owns one goroutine that batches every running request into each
// Forward call; Engine.Stream and Engine.Generate may be called from any
// goroutine.
//
// # Training
//
// NewTraining(m, TrainOptions) makes a model trainable: all parameters by
// default, or those TrainOptions.Trainable names (the others frozen: no
// gradient, no optimizer state, no weight-gradient products). A Batch is
// sequences packed end to end with no padding, each its own causal
// attention span starting at position 0, and the scored rows (a loss mask:
// NextTokenBatch keeps the rows whose next token is masked in) with K
// target ids each (the next token by default).
//
// ForwardBackward(batch, loss) runs the forward (keeping each layer's
// activations, or with TrainOptions.Recompute only each layer's input,
// recomputing the layer in the backward), then the output head over the
// scored rows in chunks of TrainOptions.LogitsChunk rows: logits, their
// log-softmax, the Loss's gradient with respect to each row's target
// log-probabilities (and entropy), and the chunk's backward, so that no
// [N, V] logits tensor exists; then the backward through every layer down
// to the embeddings. Gradients add up over calls (accumulation over
// micro-batches: give the losses the step's total as their normaliser)
// until Step(AdamWOptions) takes one AdamW step (decoupled weight decay on
// matrices, bias correction, global gradient-norm clipping, a Schedule:
// Constant, Warmup, Linear, Cosine) and zeroes them. Score(batch, entropy,
// topK) runs the forward only: a frozen reference's or a teacher's
// log-probabilities, entropies and top-K. A Loss sees each chunk's rows
// (Chunk) and returns ∂L/∂log p per target and ∂L/∂entropy per row, so any
// objective that is a function of those (cross-entropy, policy gradients,
// KL estimators, distillation over top-K) needs no change here;
// CrossEntropy is the supervised one.
//
// The same seed, data and thread count give bit-identical weights: every
// kernel reduces in an order that depends only on the sizes and the
// backend's Workers.
//
// # RL objectives
//
// Objective is a Loss made of named, weighted Terms over the scored rows,
// each a TokenLoss with its own Aggregation (TokenMean, SeqMeanTokenMean,
// or Dr.GRPO's SeqSum over a constant); its Metrics hold each term's value.
// The terms: PolicyGradient (PPO's clipped surrogate, ε 0.2 / 0.28 by
// default, dual clip; off-policy correction against the rollout log-probs:
// truncated importance sampling and masks on extreme ratios, decoupled
// from the proximal Old log-probs; its Stats give the clip fraction, the
// ratio's range, PPO's KL and the train−rollout gap), KL to a reference
// (k1, k2, k3), EntropyBonus, SFT, and on-policy distillation: its token
// advantages (OPDAdvantages: teacher − old, mixed with the RL advantages,
// rows without a hint counted) and its top-K reverse KL with a rest bin
// (TopKReverseKL, the teacher's K ids as targets 1..K). On-policy (Old the
// trainer's own Score), the ratio is exactly 1 and the KL exactly 0 (a
// test); every term's value and gradient match a plain PyTorch version
// (trainer/torchref/objective.py). trainer/service builds these from a
// configuration and the gym's samples, behind the training API.
//
// # Snapshots
//
// Model.Snapshot copies the weights as they are (a frozen reference, a
// teacher, one published version for an Engine while training goes on);
// with shareBase, under LoRA, it copies only the adapters and reads the
// frozen base in place (writes to a shared base are refused:
// ErrSharedBase). SnapshotInto copies into the arena a closed snapshot
// gave back (Recycle) instead of allocating, and hashes as it copies: a
// trainer publishing versions reuses the memory of one it retired.
// Model.Checksum is a SHA-256 tree hash of the weights: the SHA-256 of the
// SHA-256s of every tensor's leaves of ChecksumLeaf values, hashed in
// parallel. NewScoring makes a Training that only scores.
//
// # LoRA
//
// Model.AddLoRA(LoRAConfig{Rank, Alpha, Targets}, seed) adds low-rank
// adapters to any of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
// down_proj (PEFT's initialisation: A Kaiming-uniform, B zero); every
// forward (Engine and Training alike) then computes x·Wᵀ + (Alpha/Rank)·
// (x·Aᵀ)·Bᵀ without forming the merged weight, the adapters of one input
// sharing one product. A Training of such a model trains the adapters and
// freezes the base (unless Trainable names base tensors too). SaveAdapter
// writes PEFT's layout, loadable by peft unchanged:
//
//	DIR/adapter_config.json          peft_type LORA, r, lora_alpha, target_modules, ...
//	DIR/adapter_model.safetensors    base_model.model.model.layers.i.self_attn.q_proj.lora_A.weight [r, in],
//	                                 ....lora_B.weight [out, r], and so on per target and layer
//
// LoadAdapter reads it back (into a model without adapters, or over
// adapters of the same configuration). MergeLoRA adds (Alpha/Rank)·B·A
// into each base weight and drops the adapters, for Save in the plain HF
// layout.
//
// # Checkpoints and resume
//
// Training.SaveState(dir, keep) writes dir/step-NNNNNNNN atomically (a
// temporary folder renamed into place, then dir/latest replaced by a
// rename) and keeps the newest keep states: the whole model in the HF
// layout when base parameters are trained (the folder is then a model
// folder for serve-model), the adapters in PEFT's layout under LoRA,
// optimizer.safetensors (exp_avg.NAME, exp_avg_sq.NAME) and
// trainer_state.json (the step, which is the schedule's position; the
// training RNG; the trained tensors' names). To resume, make the model as
// before (Load the base folder, AddLoRA for a LoRA run), NewTraining with the
// same options, then LoadState(dir): the next steps are bit for bit those
// of a run that never stopped (a test). Save between steps: gradients
// waiting for a Step are not part of the state.
//
// # Speed
//
// `nextstate bench train` measures training tokens/s (full and LoRA) beside
// PyTorch eager on the same configuration, weights, tokens and thread count,
// with peak memory per parameter and the fraction of the measured sgemm
// peak reached; `nextstate bench model` measures prefill and decode. What
// makes the CPU backend fast: every matrix product is one sgemm over a
// packed batch (q/k/v and gate/up fused, LoRA's adapters of one input in one
// product), no [N, V] logits tensor is formed, activations live in one
// workspace reused pass after pass, and the other kernels are fused loops
// over rows split across Workers goroutines.
//
// # Correctness
//
// Tests compare logits of random Qwen3 folders (f32, bf16, f16, sharded, tied
// and untied) with the plain-PyTorch forward in trainer/torchref within 1e-4,
// greedy generation with PyTorch's, the fast kernels with the naive ones,
// cached with uncached decoding, and batched with solo generation. Every
// naive backward is checked against finite differences of its forward in
// float64 and every fast backward against its naive twin (trainer/cpu); the
// whole model's loss and every parameter's gradient match PyTorch autograd
// (tied and untied heads, GQA, a loss mask over packed sequences) within
// 1e-4 relative, and the weights after three torch.optim.AdamW steps with
// decay, clipping and a changing learning rate agree with PyTorch's; the
// same for LoRA against a plain LoRA forward in torchref.
package trainer
