// Package rundir is the format of a run directory, what `nextstate run
// --out DIR` writes (package agent's Runner) and package agent/report
// reads: the one definition of its files, for both.
//
//	run.json                   the run's settings (RunInfo)
//	results.jsonl              one Result per line, one per finished trial (ReadResults)
//	trajectories/<t>.<k>.json  a Trajectory per trial (TrajectoryPath)
//	blobs/<sha256>.<ext>       images and binary files, by content (BlobPath)
//	report.md, report.html     written by package agent/report
//
// A Result is one trial: an episode of one task with one sample index,
// its id TrialID(task, sample). Its Status is passed (the reward reached
// the run's pass threshold), failed, agent_error (a failure that is the
// agent's fault) or infra_error (the infrastructure's: never scored, and
// run again by a rerun). A rerun appends rows for the trials it plays; the
// last row of a trial id wins.
//
// ReadResults is the one reader of results.jsonl. Blank lines are skipped.
// A last line cut short (it has no newline and is not JSON: a process was
// killed while writing it) is left out and said so (Results.Cut); any
// other line that is not a valid row (Result.Check: JSON of a Result, a
// trial_id and a task, a known status and fault, no negative count, a
// trajectory path inside the directory) is an error naming its line.
//
// Files are written whole (WriteFile: a temporary file renamed into
// place), each trajectory before the row that names it, so a directory
// left by a killed process is consistent. docs/formats.md ("Run
// directories") lists every field.
package rundir
