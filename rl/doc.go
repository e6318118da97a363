// Package rl turns next states into training signal: an LLM judge scores
// each step from its action and next state (the evaluative signal, a
// process reward) and may say how the action should have been different
// (the directive signal, a hint for on-policy distillation); outcome and
// process rewards are mixed into step rewards and advantages; and each
// trained turn becomes a training sample with slime's field names, so a
// slime or verl rollout function takes it as it is. The methods follow
// OpenClaw-RL (arXiv 2603.10165). A Follower does all of it off a stream
// of committed events, so judging never runs on the step path; the server
// wires one to its store, and the trainer of `nextstate train` can wire
// one in-process without a server. rl imports gym and nothing else of the
// project: what it needs of the trajectory store is the Store interface,
// which package store's *Store satisfies.
//
// # The follower
//
// A Follower (NewFollower with a FollowerConfig) follows each session's
// episodes in the committed events it is handed (Publish, from the store's
// commit hook, which never blocks; past FollowerConfig.Backlog, 65536
// events, it reads the rest back with Store.ScanAfter instead). An episode
// opens at its reset event, which carries the task's instruction and the
// first observation; each step event is submitted to the judge (a Judger
// over a Judge, or FollowerConfig.Scorer) with the prompt kind the env
// kind declares (gym.Spec.JudgePrompt; none: toolcall when the reset info
// lists "tools", else default), the instruction, the earlier turns and the
// screens before and after; the episode ends at its terminating or
// truncating step, at its session's close, at the next reset, or at Close.
// Until then the follower keeps its steps as their JSON, as the commit
// hook handed them (no pointers for the garbage collector to trace:
// 10,000 open episodes cost it nothing), and decodes them when the samples
// are built.
// The judges' results are appended to the Store as reward events, keyed by
// the step ids (Source judge:prm), in batches that share commits. Once an
// episode's outcome and all its judges are in (a Tracker), its samples are
// built (BuildSamples, with its suite's Mix or FollowerConfig.Mix) and
// stored together (Store.AppendSamples); readers of the store's samples
// (the server's samples stream, an in-process trainer) take them from
// there, by offset. Wired without a server:
//
//	var f *rl.Follower
//	st, err := store.Open(dir, store.Options{OnCommit: func(evs []*gym.Event, bodies []string) { f.Publish(evs, bodies) }})
//	f, err = rl.NewFollower(rl.FollowerConfig{Store: st,
//		Judge: rl.JudgeConfig{Endpoint: "http://localhost:8000/v1", Model: "Qwen/Qwen3-8B"}})
//	f.Start(st.LastSeq())                            // follow what is committed from now on
//	mgr := gym.NewManager(gym.Config{Recorder: st})  // sessions record into st, and so reach f
//	// ... episodes run; then their samples: changed := st.SamplesChanged(),
//	// st.Samples(ctx, store.SampleFilter{AfterOffset: n}), wait on changed ...
//	mgr.Shutdown(ctx) // the sessions' closes end their episodes
//	f.Close(ctx)      // the judges finish (within Drain), the last samples are stored
//	st.Close()
//
// (Example_follower runs it.) An episode longer than MaxEpisodeSteps
// (4096) is let go and gives no samples; OnJudged and OnTrajectory report
// each judge result and each complete trajectory, for metrics.
//
// An action the gym refused before the env saw it (a step.refused event:
// it did not match the kind's action schema) is a turn of its episode
// too: it is not judged, its process reward is RefusedProcess (−1, the
// gym's verdict), its next state the refusal (RefusalText), and it gives
// a sample (metadata.nextstate.refused) between the steps around it. A
// policy that writes malformed tool calls is thus told so on the turn
// that did, not only through the outcome.
//
// # The judge
//
// A Judge (NewJudge with a JudgeConfig) talks to any OpenAI-compatible
// chat endpoint: vLLM, SGLang, a hosted API, or nextstate's own model
// server. For each step it renders a prompt from a JudgeInput and samples
// m votes, m concurrent requests (or one request with n = m when
// SingleRequest is set). Each reply must end in \boxed{1}, \boxed{0} or
// \boxed{-1}, and may carry a hint between [HINT_START] and [HINT_END].
//
//	setting        default   meaning
//	votes          3         m, votes per step; votes_by_kind sets it per prompt kind
//	temperature    0.6       sampling temperature of the votes (0 for greedy)
//	max_tokens     4096      bound of each reply (sent as max_tokens)
//	timeout        2m        bound of each HTTP call
//	retries        2         more tries after a timeout, a connection error, 408, 409, 429 or 5xx (negative: none)
//	backoff        500ms     wait before the first retry, doubled each time up to 10s, plus up to 25% jitter
//	api_key        none      bearer token; OPENAI_API_KEY in the environment is never used
//	templates      built-in  a directory of replacement prompt templates
//	windows, limits          history window per kind; character caps of the prompt's texts
//
// ParseVote reads one reply: the last complete \boxed{...} counts; spaces,
// a leading "+" and decimal spellings ("1.0") are accepted; anything that
// is not exactly 1, 0 or -1 makes the vote invalid (ErrBadBox), as does no
// box at all (ErrNoBox). A call that runs past its timeout on every try is
// a timed-out vote (ErrJudgeTimeout); other failures are invalid votes.
// Aggregate computes the process reward r_t = the mean of the valid votes,
// 0 when none is valid, and counts the valid, invalid and timed-out votes;
// AggregateBy takes the rule: MeanVote (Aggregate's) or MajorityVote (the
// score most valid votes gave, a tie 0: the proxy's vote on a turn).
// SelectHint keeps the valid votes whose hint is longer than 10
// characters (runes) and picks the longest; on a tie, the earliest vote's.
// Judge.Score returns a Verdict: the votes, their Tally, the Hint, and
// TimedOut when no vote was valid and one timed out.
//
// # Prompts
//
// Templates are text/template files, one per prompt kind, embedded from
// rl/prompts: common.tmpl (the scoring rules and reply format, shared) and
// terminal.tmpl, gui.tmpl, swe.tmpl, toolcall.tmpl, chat.tmpl, default.tmpl. Each
// kind's file defines "system" (may render empty) and "user". A
// JudgeInput names its Kind; an empty or unknown kind uses default.
// LoadTemplates(dir) (JudgeConfig.Templates) replaces the files dir holds
// with the same names and adds kinds for new names; every template is run
// on a sample input when it loads. Templates execute on a PromptData; they
// place the screens with {{image "before"}} and {{image "after"}} (user
// template only), which become image_url parts with data URLs (inline
// bytes, or a blob reference read through JudgeConfig.BlobResolver).
//
// What each kind shows, after OpenClaw-RL (the Window picks the earlier
// turns: the first Head and the last Tail, Tail -1 meaning all):
//
//	terminal  instruction, first two and last two turns, the action and its tool results (exit code)   {2, 2}
//	gui       instruction, previous actions, the screen before and after the action                    {0, -1}
//	swe       the issue, the last eight steps with exit codes, the command and its output              {0, 8}
//	toolcall  the problem, the trajectory, the action, its result                                      {0, -1}
//	chat      a personal agent's conversation, its answer, the next message (user or tool), with its
//	          own scoring rules and a "[FLAG] reason" line for a next state that subverts the agent
//	          (the proxy's; its Conversation, not History)
//	default   task, first two and last two turns, action, next state (screens if given)                {2, 2}
//
// Texts are cut to TextLimits (characters; defaults: instruction 8000,
// action 4000, next state 4000, each earlier action or next state 1000,
// each message of a chat's conversation 2000, all earlier turns (or
// messages) together 32000, past which the oldest after the head (the
// leading system messages) are left out), keeping their beginning and end
// around a marker.
// ActionText, ObservationText, ObservationImage and ExitCode turn gym
// actions, observations and step info into a JudgeInput's fields;
// StepRefOf and OutcomeOf read a step event's reference and outcome; the
// outcome's reward is the last step's when the episode terminated and 0
// when it did not (truncated, or cut off by a failure).
//
// # Off the step path
//
// A Judger (NewJudger) owns a bounded queue (JudgerConfig.Queue, 256) and
// a fixed number of workers (Workers, 4) around any Scorer (a Judge). Submit never blocks: over the queue's
// length, the step's result is delivered at once with ReasonQueueFull.
// Every submitted step gets exactly one JudgeResult through the deliver
// function: judged (Reason "", at least one valid vote), or not, with
// ReasonTimeout, ReasonNoValidVote, ReasonBadInput, ReasonQueueFull,
// ReasonClosed or ReasonPanic. Close stops taking steps and drains the
// queue until its ctx ends, then cancels what is left (ReasonClosed).
// JudgeResult.Event is the reward event for the store (or
// gym.Manager.AddReward), keyed by the step's id, with Source "judge:prm";
// a step that was not judged gets an event too, reward 0 and info judged
// false with the reason. The Follower is built of a Judger and a Tracker;
// used alone, JudgerConfig.Tracker ties the two.
//
// A Tracker holds a trajectory until it is complete: its outcome is in and
// every judge submitted for it has answered (a timeout or a full queue
// counts, recorded as such). It then calls its onComplete once with the
// TrajectoryState (outcome, results by step) and forgets it; anything
// arriving later is counted by Late and ignored.
//
// # Rewards and advantages
//
// A Mix (per suite; DefaultMix, or JSON that starts from it: ParseMixJSON
// reads a suite's strictly, ParseMix the "c=1,gamma=0.9,outcome=2acc-1"
// form of serve's --mix) combines the
// outcome o (the verifier's reward through OutcomeMap: "identity", or
// "2acc-1" = 2·acc − 1 for a fraction of tests passed) with the process
// rewards r_t of the T steps (0 for a step not judged):
//
//	R_t      = o · γ^(T−1−t) + c · r_t      step reward, t = 0 … T−1   (c = 1, γ = 1)
//	sequence = o + c · mean_t(r_t)          the trajectory's score
//
// Advantages, with ε = 1e-6:
//
//	GRPO      A = (r − mean)/(std + ε) within the group of one task's trajectories, std the
//	          sample standard deviation (n − 1, as torch.std and slime); groups whose rewards
//	          are all equal (one-member groups too) are dropped
//	StepWise  the same within each (group, step index) bucket of R_t, std the population
//	          standard deviation (n, as OpenClaw-RL's slime); a one-step bucket keeps its raw
//	          reward, a bucket of equal rewards is dropped
//	Plain     A = r, for single samples
//
// Infrastructure failures say nothing about the agent (Trainable): they
// are masked, never scored as the agent's failure: masked Scores take no
// part in the statistics and get Keep false, and BuildSamples marks every
// sample of such a trajectory aborted, remove_sample, loss mask 0.
// SampleAdvantages runs an estimator over Samples.
//
// # Samples
//
// BuildSamples makes one Sample per trained turn from a Rollout (its
// PolicyTurns: context messages, prompt and response token ids and
// log-probs when the policy server gave them, the response text
// otherwise; ApplyJudgements fills in the judge's r_t and hints). The JSON
// field names are upstream slime's Sample's, except metadata's keys
// (metadata.step_wise is what OpenClaw-RL's fork of slime reads; opd and
// nextstate are ours); docs/formats.md says whose each field is:
//
//	field               type                 meaning
//	group_index         int                  the task's group, for GRPO
//	index               int                  the trajectory; shared by its samples (the fork's dynamic_history; slime's rollout_id)
//	prompt              [message]            the context the policy saw: {role, content, name?, tool_calls?, tool_call_id?}
//	response            string               the policy's reply
//	tokens              [int]                prompt ids then response ids; [] for a text-only turn
//	response_length     int                  response tokens at the end of tokens
//	loss_mask           [int]                per response token: 1 trained, 0 not
//	rollout_log_probs   [float] | null       per response token, the policy's log-prob when sampled
//	reward              float                the sequence score o + c·mean(r), written as a float (1.0)
//	status              string               completed (terminated), truncated (cut off, agent failure), aborted (infra)
//	remove_sample       bool                 masked: slime zeroes its loss mask
//	metadata.step_wise  object               step_scores [r_t], step_scores_with_outcome [R_t], step_indices [t],
//	                                         step_token_spans [[0, response_length]], outcome_reward o
//	metadata.opd        object, if a hint    hint, teacher_prompt: prompt with the hint appended to its last user turn
//	metadata.nextstate  object               session, episode, step, step_id, env, task, judged, refused
//
// TeacherMessages builds the teacher context: a copy of the messages with
// "\n\n[Hint from hindsight]\n<hint>" appended to the last user turn (a new
// user turn if there is none); a trainer scores the same response under it
// to get the teacher's log-probs for OPD.
//
// # Concurrency
//
// Judge, Templates, Judger, Tracker and Follower are safe for concurrent
// use (a Follower's Publish is called by one commit hook, in seq order).
// A Follower owns its goroutines (the worker that follows the events, the
// reward recorder, the Judger's workers) and Close waits for them. The
// Judger's deliver function is called from its workers, and from Submit
// itself for a full queue or a closed Judger; it must be quick and must
// not call back into the Judger. The Tracker calls onComplete outside its
// lock, on the goroutine whose result or outcome completed the trajectory.
package rl
