// Package report turns the output directory of a benchmark run (`nextstate
// run --out DIR`) into its reports: DIR/report.md for reading in a terminal
// or a repository, and DIR/report.html, one self-contained page (inline CSS,
// JS and SVG; nothing fetched from the network) with charts and a viewer of
// every step of every trial.
//
// # Use
//
//	err := report.Write(dir) // load DIR, write DIR/report.md and DIR/report.html
//
// or, to print the headline numbers as well:
//
//	r, err := report.Load(dir)
//	...
//	err = r.Write()
//	fmt.Print(r.Summary)
//
// Load reads the results; Report.Markdown and Report.HTML render to any
// io.Writer; Report.Write writes both files atomically (a temporary file
// renamed into place). Report.Limits bounds the size of the HTML page.
//
// # Input
//
// The directory is a run directory, in the format package agent/rundir
// defines (and docs/formats.md, "Run directories", lists): results.jsonl,
// one JSON row per trial (rundir.Result),
//
//	{"trial_id": "hello#0", "task": "hello", "env": "terminal-v1", "sample": 0, "seed": 0,
//	 "status": "passed", "reward": 1, "process_reward": 0.5, "terminated": true,
//	 "truncated": false, "steps": 3, "failure": null, "session": "s_...",
//	 "duration_ms": 5123, "prompt_tokens": 900, "completion_tokens": 120,
//	 "model": "...", "trajectory": "trajectories/hello.0.json",
//	 "finished_at": "2026-01-02T03:04:05Z"}
//
// read by rundir.ReadResults: status is one of passed (the reward reached
// the pass threshold), failed, agent_error and infra_error; failure, when
// set, is {"fault": "agent" | "infra", "reason": "...", "message": "..."};
// "split" names the task's split (none counts as "train"). Unknown fields
// are ignored. A rerun appends rows for retried trials: the last row of a
// trial id wins. A last line cut short (a run killed while writing it) is
// left out; any other line that is not a valid row (not JSON, no trial_id
// or task, an unknown status or fault, a negative count, a trajectory path
// outside the directory) is an error naming the line. run.json, the run's
// configuration (suite, model, k, ...), is optional and shown as it is,
// key by key, whoever wrote it.
//
// Each trial's trajectory file (rundir.Trajectory) holds the instruction
// and the steps: the model's response, the action (gym.Action), the next
// state (gym.Observation, whose images carry a "ref" to
// DIR/blobs/<sha256>.<ext>, or the store's "sha256:<hex>"), the reward,
// terminated and truncated, info, a labelled failure, and the judge's
// verdict {"reward", "votes": [{"score", "hint", "valid"}], "hint"} when
// there is one. They are read when the HTML is rendered; a missing or
// malformed file is shown as an error in its trial's place.
//
// # Metrics
//
// Infrastructure failures are never scored as the agent's: a trial whose
// status is infra_error, or that did not pass and whose failure has the
// infra fault, is left out of every rate and mean and is counted apart.
// The other trials are scored. For a task with n scored trials of which c
// passed:
//
//   - pass rate = c/n; pass@1 is the mean of the pass rates over the tasks
//     with at least one scored trial (each task weighs the same, however
//     many samples it has).
//   - pass@k is the unbiased estimator of Chen et al. (2021), the chance
//     that at least one of k samples drawn without replacement passes:
//     1 − C(n−c, k)/C(n, k), computed as 1 − ∏_{i=n−c+1..n} (1 − k/i)
//     (PassAtK), and 1 when n−c < k; the report's pass@k is its mean over
//     the scored tasks, for k = 1, 2, 4, 8, ... up to the fewest scored
//     trials of a task, and that number itself (KValues).
//   - mean reward is the mean over scored tasks of each task's mean
//     outcome reward over its scored trials.
//   - the 95% intervals of pass@1 and of the mean reward are percentile
//     bootstraps that resample tasks (the independent unit: a task's
//     samples are correlated): 2000 resamples of the per-task values with
//     replacement, each resample's mean, the 2.5% and 97.5% quantiles of
//     those means. The generator is seeded with a constant, so the same
//     results give the same report (Bootstrap).
//   - mean process reward is the mean of the judge's process_reward over
//     the scored trials that have one.
//
// The breakdowns by env kind and by split apply the same definitions to
// their tasks. The per-task table gives trials, infrastructure failures,
// n, c, the pass rate, the mean reward, the mean steps (over scored
// trials) and the failure classes.
//
// # Failure taxonomy
//
// Every trial that did not pass is counted under a fault (agent or infra)
// and a reason: its labelled failure's, else "unlabelled" for an
// agent_error or infra_error without one, "truncated" for an episode cut
// off, and "not_solved" for one that ended below the pass threshold
// (rundir.Result.FailureClass). Each class lists a few trial ids as examples and
// the first one's message.
//
// # The HTML page
//
// Summary and tables as in report.md (click a column head of a table to
// sort it), charts (pass@k against k, a histogram of the outcome rewards,
// the pass rate of each task, the failure classes) and the trajectory
// viewer: pick a trial in the list or the trials table to see its steps,
// each with the response, the action (tool calls with their arguments
// indented), the next state (text, tool results, screenshots inline),
// the reward, the judge's votes and its hint. Everything from models and
// envs is escaped (html/template). Limits bound the page: screenshots are
// embedded as data URLs up to Limits.ImageBytes in all and linked past
// it; each text is cut at Limits.TextBytes with a visible marker; trials
// past Limits.ViewerBytes of text are linked rather than embedded.
package report
