// Package trainer is nextstate's integrated trainer, part 1: a Qwen3 decoder
// in Go that loads and saves Hugging Face checkpoints, runs on the CPU
// backend (trainer/cpu), and generates with a KV cache and continuous
// batching (Engine), served over an OpenAI-compatible API by trainer/serve
// (`nextstate serve-model --model DIR`). Training comes in part 2.
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
// a model needs 4 bytes per parameter of memory (Qwen3-0.6B: 3 GB). The
// tensors read are HF's names: model.embed_tokens.weight; per layer i
// model.layers.i.{input_layernorm, post_attention_layernorm}.weight,
// model.layers.i.self_attn.{q,k,v,o}_proj.weight,
// model.layers.i.self_attn.{q,k}_norm.weight,
// model.layers.i.mlp.{gate,up,down}_proj.weight; model.norm.weight; and
// lm_head.weight unless tie_word_embeddings. Not supported (refused with a
// message): attention_bias, rope_scaling, sliding windows, other model types.
// No weights are downloaded: tests and benchmarks write random folders with
// Model.Save, and users point --model at a checkpoint already on disk.
//
// # Layout and backends
//
// Parameters live in one flat []float32 (Model.Params) with named views
// (Model.W), as in llm.c; q/k/v and gate/up are adjacent per layer so each
// group is one matrix product. Kernels run behind Backend: trainer/cpu's
// goroutine-parallel kernels with OpenBLAS sgemm loaded at run time through
// purego (no cgo; CGO_ENABLED=0 builds), or pure Go without it; cpu.Naive
// runs the plain reference kernels. A CUDA backend will implement Backend.
//
// # Concurrency
//
// Model.Forward calls are serialised by the model. An Engine owns one
// goroutine that batches every running request into each Forward call;
// Engine.Stream and Engine.Generate may be called from any goroutine.
//
// # Correctness
//
// Tests compare logits of random Qwen3 folders (f32, bf16, f16, sharded, tied
// and untied) with the plain-PyTorch forward in trainer/torchref within 1e-4,
// greedy generation with PyTorch's, the fast kernels with the naive ones,
// cached with uncached decoding, and batched with solo generation.
package trainer
