// Package train is `nextstate train`'s loop: the policy plays episodes in
// the gym, the judges score each next state, the trainer updates the
// policy from the samples, and the new weights serve the next episodes,
// all at once (OpenClaw-RL's decoupled loops), in one process.
//
// A Loop (New with a Config) drives three things it is given: a gym
// server (Config.Gym, a client of the server started in-process or of a
// remote one), the training API (Config.Trainer, package
// trainer/service's Service or Client), and the OpenAI API serving the
// trainer's newest weight version (Config.Policy.BaseURL), which names the
// version of each answer (X-Weight-Version). The command wires them up;
// tests wire small ones.
//
// # One step
//
// A step is one batch: Groups tasks drawn from the suites by Config.Mix
// (by the run's seed and the step, so a rerun draws the same), each
// played GroupSize times (a GRPO group) by package agent's Runner, with
// token ids, log-probs and the weight version on every turn, into
// rollouts/bNNNNNN (a run directory as `nextstate run` writes). The gym's
// follower judges the steps and builds the samples (package rl); the loop
// reads the batch's from the gym's samples stream (events.subscribe
// {"stream": "samples", "run": ...}, the stream slime reads), waits until
// every trajectory's are in (one per step the row counts), and takes one
// forward_backward over the whole batch (its groups whole, for the
// advantage estimator; with Config.TrajectoryMean each trajectory weighs
// the same however many turns it took, with Config.CapNegative no group's
// negative weight exceeds its positive) and one optim_step, then publishes
// the weights as the next version: requests in flight keep the version
// they began with, nothing is refused while publishing. A trajectory whose
// samples do not come within SampleTimeout is played again (twice at most,
// then the step goes on without it, counted in missing_trajectories).
//
// # Staleness
//
// Batches are played one after another while the trainer trains: batch b
// begins once b−1−MaxStaleness steps are done (default 1: the next batch
// is played while the step before it trains; 0: strictly on-policy).
// Generation is paced, never discarded. Each sample's staleness is the
// version it was trained at less the version that produced it; the step
// reports their mean, maximum and histogram. The off-policy correction
// (TIS, decoupled PPO) is the loss's (trainer/service's policy_gradient
// term).
//
// # Resuming
//
// After each SaveEvery steps (and the last) the training state is saved
// (save_state) and state.json records the steps it holds; only then are
// the batch's samples acknowledged on the stream. A rerun of the same
// command, after a crash or kill -9 at any point, loads the newest saved
// state, publishes it, and goes on from the next step: the batches it
// already played (their run directories) are resumed where they were,
// their samples read again from the stream by their run label, the
// trajectories whose samples were lost in the crash played again; no
// sample is trained on twice. With MaxStaleness 0, one episode in flight
// and seeded sampling, the weights equal an uninterrupted run's.
//
// # What it records
//
// metrics.jsonl (ReadMetrics) holds a record per step (Metrics: rewards
// outcome / process / mixed, staleness, every forward_backward metric —
// loss per term, entropy, clip fraction, ratio, KL, the train−rollout
// log-prob gap — the gradient norm, rollout, wait, train and publish
// times, the trainer's busy share, episodes/s and generated tokens/s) and
// per evaluation (EvalMetrics: held-out pass@1 with 95% bootstrap
// intervals over tasks, overall and per suite, played at temperature 0
// into eval/step-NNNNNN before the first step, every EvalEvery steps and
// after the last, EvalK episodes per task). audit.jsonl (ReadAudit) keeps a
// few trained turns of each step with the chain that gave them their
// update: the weight version that produced the reply, the judge's score
// and hint, the outcome, the advantage, the trajectory file whose next
// state followed. report.html (WriteReport) draws the curves and shows the
// audit, rewritten after every step; Summarize, WriteComparison and
// ComparisonChart compare runs (`nextstate train-report`).
//
// # Serving the policy
//
// Handler is a trainer's HTTP face, the same in `nextstate train`'s
// loopback server (ServePolicy) and `serve-trainer`: the OpenAI API on the
// newest version (X-Weight-Version: the version's publish counter), the
// frozen reference at /reference/v1 (a judge of the policy's own family,
// `--judge self`), and the training API. The loop maps each version it
// published to its optimizer steps and names every turn's version by
// those in its records, so a remote trainer restarted mid-run (whose
// counter begins anew) leaves staleness exact.
package train
