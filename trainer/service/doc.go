// Package service is the integrated trainer's API, in the shape of
// Thinking Machines' Tinker: forward_backward (a loss over a batch, its
// gradients accumulated), optim_step (one AdamW step),
// save_weights_for_sampler (an immutable, checksummed weight version),
// sample (generation on a version), save_state / load_state, in Go
// (Service) and over HTTP (Handler, Client; docs/training.md). The loop of
// `nextstate train`, tests and remote users all drive the trainer through
// it.
//
// # Data
//
// A Datum is one sequence: the prompt's ids then the response's, a loss
// mask over the response (tool output and observations 0), the response
// tokens' advantages, the behaviour log-probs the serving engine reported
// (rollout_log_probs), optionally the proximal policy's (old_log_probs,
// from Forward) and the teacher context for OPD (teacher_tokens: the
// hint-augmented prompt then the same response). forward_backward also
// takes the gym's samples as they are (slime's Sample: `nextstate export
// --format samples`, the samples stream, the proxy's samples): FromSamples
// uses their token ids when the turn carried them, else renders the
// prompt with the chat template and encodes the response closed by
// <|im_end|>, as the engine would have sampled it; the advantages come
// from rl's estimators over the call's samples (grpo by default: give
// whole groups); infrastructure failures (remove_sample, status aborted),
// groups with no RL advantage (dropped unless the loss learns from them
// otherwise: KL, entropy and SFT terms keep them all, OPD terms the hinted
// ones) and samples without a hint are counted in the result, never
// dropped silently.
//
// # Losses
//
// A LossConfig is named, weighted terms (trainer.Objective) over the
// trained response tokens, each with its aggregation (token_mean,
// seq_mean_token_mean, seq_sum): policy_gradient (PPO's clip 0.2 / 0.28,
// dual clip, TIS and ratio masks against the rollout log-probs; its
// advantage the data's, OPD's teacher − old, or both combined), kl to the
// frozen reference (k1, k2, k3), entropy, sft and opd_top_k (reverse KL to
// the teacher's top K with a rest bin). The passes a loss needs run before
// the policy's: the reference's (version 0, the weights the service
// started from) for kl, the teacher's (the reference, or the current
// policy with Options.Teacher "policy") on the teacher contexts. Every
// call reports each term's value, the entropy, the clip fraction, the
// ratio's mean and range, PPO's KL, the masked tokens and the
// train−rollout log-prob gap. On-policy (no old log-probs) the ratio is
// exactly 1 and PPO's KL exactly 0.
//
// # Versions
//
// New publishes version 0; each SaveWeightsForSampler snapshots the
// weights as the next version (for a LoRA run only the adapters are
// copied: the versions share the frozen base) with an Engine of its own,
// so sampling never waits for training and never sees half-updated
// weights. The newest Options.KeepVersions (2) stay served, and version 0
// (the frozen reference) always; an older one
// lives on while a Sample or a Lease (Acquire, for serving the OpenAI API)
// holds it, so a request in flight keeps the version it started with.
// A full-weight version is copied into the memory of a version that is
// gone (retired, unleased, its engine stopped; one such arena is kept as
// the spare), never into one still held: publishing does not pay for a
// fresh allocation, and no held version's weights ever change. Publishing
// retires the versions it will retire before it copies, never the newest.
//
// # Idempotency
//
// Over HTTP each call may carry an Idempotency-Key header: a repeat of a
// key (a retry after a lost answer) waits for the first call and gets its
// answer, so a retried forward_backward adds its gradients once; a keyed
// call runs to its end even if the client goes away. Client sends a fresh
// key with every call and retries transport failures with it.
package service
