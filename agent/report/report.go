package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nextstate-rl/nextstate/agent/rundir"
)

// Report is a run directory's results with their statistics, ready to be
// written as Markdown or HTML. Load makes one; its fields may be read
// freely and Limits set before HTML is called.
type Report struct {
	// Dir is the run directory; trajectories and blobs are read from it.
	Dir string
	// Run is run.json, or nil when the directory has none.
	Run *RunInfo
	// Trials are the last rows of each trial id, sorted by task, env,
	// sample and trial id.
	Trials []rundir.Result

	Summary  Summary
	Tasks    []TaskStats    // one per (env, task), sorted like Trials
	ByEnv    []GroupStats   // one per env kind
	BySplit  []GroupStats   // one per split ("train" for tasks without one)
	Failures []FailureClass // infrastructure first, then by count

	// Limits bound what the HTML viewer embeds; zero fields mean the
	// defaults.
	Limits Limits
}

// Limits bound the size of report.html.
type Limits struct {
	// ImageBytes is the most screenshot bytes embedded as data URLs in
	// all (default 8 MiB); screenshots past it are linked (blobs/...).
	ImageBytes int64
	// TextBytes is the most bytes shown of one text (a response, an
	// observation, a tool's arguments); longer ones are cut with a
	// visible marker (default 32 KiB).
	TextBytes int
	// ViewerBytes is the most text the trajectory viewer embeds in all
	// (default 48 MiB); trials past it are listed with a link to their
	// trajectory file instead.
	ViewerBytes int64
	// ChartTasks is the most tasks drawn in the per-task chart (default 200).
	ChartTasks int
}

// Default limits.
const (
	DefaultImageBytes  = 8 << 20
	DefaultTextBytes   = 32 << 10
	DefaultViewerBytes = 48 << 20
	DefaultChartTasks  = 200
)

func (l Limits) withDefaults() Limits {
	if l.ImageBytes <= 0 {
		l.ImageBytes = DefaultImageBytes
	}
	if l.TextBytes <= 0 {
		l.TextBytes = DefaultTextBytes
	}
	if l.ViewerBytes <= 0 {
		l.ViewerBytes = DefaultViewerBytes
	}
	if l.ChartTasks <= 0 {
		l.ChartTasks = DefaultChartTasks
	}
	return l
}

// Load reads a run directory: results.jsonl (required; the last row of each
// trial id wins, and a malformed line is an error naming it) and run.json
// (optional), and computes the statistics. Trajectory files are read when
// the HTML viewer is rendered, or by Trajectory.
func Load(dir string) (*Report, error) {
	f, err := os.Open(filepath.Join(dir, rundir.ResultsFile))
	if err != nil {
		return nil, fmt.Errorf("report: reading the run directory %s: %w", dir, err)
	}
	defer f.Close()
	trials, superseded, err := ReadResults(f)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", dir, err)
	}
	run, err := readRunInfo(filepath.Join(dir, rundir.RunFile))
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", dir, err)
	}
	r := &Report{Dir: dir, Run: run, Trials: trials}
	r.Summary.Superseded = superseded
	r.compute()
	return r, nil
}

// Trajectory reads a trial's trajectory file.
func (r *Report) Trajectory(t *rundir.Result) (*rundir.Trajectory, error) {
	return ReadTrajectory(r.Dir, t)
}

// Write loads the run directory dir and writes report.md and report.html
// into it (see Report.Write). A caller that also wants the numbers calls
// Load, then Report.Write, and prints Report.Summary.
func Write(dir string) error {
	r, err := Load(dir)
	if err != nil {
		return err
	}
	return r.Write()
}

// Write renders report.md and report.html into the report's directory,
// each atomically: a temporary file renamed into place, so a reader never
// sees a half-written report.
func (r *Report) Write() error {
	var md, page bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		return err
	}
	if err := r.HTML(&page); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(r.Dir, MarkdownFile), md.Bytes()); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(r.Dir, HTMLFile), page.Bytes())
}

// writeAtomic writes data whole over path (rundir.WriteFile).
func writeAtomic(path string, data []byte) error {
	if err := rundir.WriteFile(path, data); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}
