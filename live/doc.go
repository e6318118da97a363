// Package live trains a personal agent while it is used: the proxy
// (package proxy) stands in front of the policy this process trains, its
// judged turns (a user's thanks +1, a correction −1 with the correction as
// the hint, a re-query −1) are stored as samples, and a Trainer takes an
// update on them as they come and publishes the new weights, which answer
// the next request. A conversation in flight is never interrupted: a
// request keeps the version it began with (trainer/service's leases), no
// request is refused while publishing.
//
//	nextstate train --proxy 127.0.0.1:8090 --model models/chat --out runs/me \
//	    --judge rule --loss combined --lr 1e-3 --proxy-batch 8
//
// # Updates
//
// A Trainer reads the samples of run "proxy" from the proxy's store as
// the store wakes it (store.SamplesChanged), and takes one update
// (forward_backward, optim_step, save_weights_for_sampler) whenever Batch
// are pending, or fewer once the oldest has waited FlushAfter. The loss is
// any trainer/service LossConfig: binary RL is policy_gradient on the "rl"
// advantage, with the "plain" estimator (A = the vote: a turn of a
// conversation has no group of alternatives to compare with); OPD is
// policy_gradient on the "opd" advantage (the teacher, the frozen initial
// weights, reads the hint after rl.HintHeader; OpenClaw-RL's on-policy
// distillation), and "combined" adds the two. A batch with nothing to
// learn from (every vote 0, no hint) takes no step and publishes nothing.
//
// # What it records
//
// UpdatesFile (updates.jsonl, ReadUpdates) holds an Update a line: the
// samples it trained on, each with its user, session, turn, vote, hint,
// the version that answered and its staleness, the counts of votes and
// hints, forward_backward's metrics, the gradient norm and the times.
// Every SaveEvery updates the training state is saved and StateFile
// (live.json) records the last sample offset it holds; a restart loads it,
// publishes it, and reads on from that offset, so no sample is trained on
// twice and none is lost (the proxy's store keeps them).
//
// # Status
//
// Trainer.Status says what was read, trained and published; Status.Idle
// is true once every stored sample has been trained on. `nextstate train
// --proxy` serves it, with the proxy's counters and the turns still being
// judged, at GET /v1/live; `nextstate users simulate --status` waits on it
// between rounds, so that runs compare at the same number of sessions.
//
// # One adapter per user
//
// Router serves each user's own policy: with --per-user-lora each allowed
// user has LoRA adapters of their own over one frozen base
// (trainer.Model.Snapshot sharing the base), a Trainer with Config.User
// set trains them on that user's samples alone, and everyone else is
// answered by the base. One user's feedback cannot reach another's
// answers.
package live
