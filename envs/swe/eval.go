package swe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Prediction is one model's patch for one instance, in SWE-bench's
// predictions format.
type Prediction struct {
	InstanceID      string `json:"instance_id"`
	ModelNameOrPath string `json:"model_name_or_path,omitempty"`
	ModelPatch      string `json:"model_patch"`
}

// LoadPredictions reads predictions from a JSON Lines file (one per line),
// a JSON list, or a JSON object keyed by instance id, as SWE-bench's
// harness accepts. An instance id given twice is an error.
func LoadPredictions(path string) ([]Prediction, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(b)
	var out []Prediction
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("%s: no predictions", path)
	case trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &out); err != nil {
			return nil, fmt.Errorf("%s: want a JSON list of {instance_id, model_name_or_path, model_patch}: %w", path, err)
		}
	case trimmed[0] == '{' && json.Valid(trimmed):
		var one Prediction
		if err := json.Unmarshal(trimmed, &one); err == nil && one.InstanceID != "" {
			out = []Prediction{one}
			break
		}
		var byID map[string]Prediction
		if err := json.Unmarshal(trimmed, &byID); err != nil {
			return nil, fmt.Errorf("%s: want predictions keyed by instance id: %w", path, err)
		}
		for id, p := range byID {
			if p.InstanceID == "" {
				p.InstanceID = id
			}
			out = append(out, p)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	default:
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var p Prediction
			if err := json.Unmarshal(line, &p); err != nil {
				return nil, fmt.Errorf("%s:%d: want {instance_id, model_name_or_path, model_patch}: %w", path, n, err)
			}
			out = append(out, p)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	seen := map[string]bool{}
	for i, p := range out {
		if p.InstanceID == "" {
			return nil, fmt.Errorf("%s: prediction %d has no instance_id", path, i+1)
		}
		if seen[p.InstanceID] {
			return nil, fmt.Errorf("%s: instance %s has two predictions", path, p.InstanceID)
		}
		seen[p.InstanceID] = true
	}
	return out, nil
}

// Reasons in Result.Error that EvaluateAll adds.
const (
	ErrorNoPrediction = "no_prediction" // the predictions name no patch for the instance
	ErrorInfra        = "infra_error"   // the evaluation failed (Message says why); not the model's fault
)

// Report is a bulk evaluation's outcome.
type Report struct {
	Model string `json:"model,omitempty"`
	// Instances counts the instances; Submitted those with a prediction;
	// Resolved those resolved; Empty those whose patch is empty;
	// Errors those whose evaluation failed (infrastructure).
	Instances int `json:"instances"`
	Submitted int `json:"submitted"`
	Resolved  int `json:"resolved"`
	Empty     int `json:"empty_patches"`
	Errors    int `json:"errors"`
	// Unknown lists predictions for instances the file does not hold.
	Unknown  []string `json:"unknown_predictions,omitempty"`
	Parallel int      `json:"parallel"`
	WallMs   int64    `json:"wall_ms"`
	// Results, one per instance, by instance id.
	Results []Result `json:"results"`
}

// EvaluateAll evaluates each instance's prediction, parallel at a time (at
// least 1), and reports them all: an instance without a prediction is
// unresolved (ErrorNoPrediction), one whose evaluation failed is
// unresolved with ErrorInfra. done, when not nil, is called with each
// result as it is ready (from the worker goroutines, one at a time).
func (h *Harness) EvaluateAll(ctx context.Context, ins []Instance, preds []Prediction, parallel int, done func(Result)) *Report {
	start := time.Now()
	parallel = max(parallel, 1)
	byID := map[string]Prediction{}
	for _, p := range preds {
		byID[p.InstanceID] = p
	}
	rep := &Report{Instances: len(ins), Parallel: parallel, Results: make([]Result, len(ins))}
	known := map[string]bool{}
	for _, in := range ins {
		known[in.InstanceID] = true
	}
	for _, p := range preds {
		if !known[p.InstanceID] {
			rep.Unknown = append(rep.Unknown, p.InstanceID)
		}
		if rep.Model == "" {
			rep.Model = p.ModelNameOrPath
		}
	}
	sort.Strings(rep.Unknown)
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, max(len(ins), 1)) {
		wg.Add(1)
		go func() { // owned by EvaluateAll: it waits for them
			defer wg.Done()
			for i := range jobs {
				in := &ins[i]
				p, ok := byID[in.InstanceID]
				var r Result
				if !ok {
					r = Result{InstanceID: in.InstanceID, Error: ErrorNoPrediction, Message: "no prediction for this instance",
						Tests: map[string]TestStatus{}}
					r.score(in)
					r.Error = ErrorNoPrediction
				} else {
					var err error
					r, err = h.Evaluate(ctx, in, p.ModelPatch)
					if err != nil {
						r.Error, r.Message, r.Resolved, r.Reward = ErrorInfra, err.Error(), false, 0
					}
				}
				mu.Lock()
				rep.Results[i] = r
				if done != nil {
					done(r)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range ins {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for i, r := range rep.Results {
		if r.InstanceID == "" { // not started: ctx ended
			rep.Results[i] = Result{InstanceID: ins[i].InstanceID, Error: ErrorInfra, Message: "not evaluated: " + context.Cause(ctx).Error()}
			r = rep.Results[i]
		}
		if _, ok := byID[r.InstanceID]; ok {
			rep.Submitted++
		}
		switch {
		case r.Resolved:
			rep.Resolved++
		case r.Error == ErrorInfra:
			rep.Errors++
		case r.Error == ErrorEmptyPatch:
			rep.Empty++
		}
	}
	sort.Slice(rep.Results, func(i, j int) bool { return rep.Results[i].InstanceID < rep.Results[j].InstanceID })
	rep.WallMs = time.Since(start).Milliseconds()
	return rep
}

// WriteTable prints the report: the counts, then one row per instance
// (resolved, FAIL_TO_PASS and PASS_TO_PASS passed of total, the reason it
// is not resolved, seconds).
func (rep *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tRESOLVED\tF2P\tP2P\tERROR\tSECONDS")
	for _, r := range rep.Results {
		res := "no"
		if r.Resolved {
			res = "yes"
		}
		why := r.Error
		if r.Error == ErrorInfra || r.Error == ErrorPatchNotApplied || r.Error == ErrorTestsDidNotStart {
			why += ": " + firstLine(r.Message, 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%s\t%.1f\n", r.InstanceID, res, r.FailToPass.Passed, r.FailToPass.Total,
			r.PassToPass.Passed, r.PassToPass.Total, why, float64(r.Timings.TotalMs)/1000)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pct := 0.0
	if rep.Instances > 0 {
		pct = 100 * float64(rep.Resolved) / float64(rep.Instances)
	}
	_, err := fmt.Fprintf(w, "\nresolved %d of %d instances (%.1f%%); %d submitted, %d empty patches, %d evaluation errors; %d in parallel, %.1f s\n",
		rep.Resolved, rep.Instances, pct, rep.Submitted, rep.Empty, rep.Errors, rep.Parallel, float64(rep.WallMs)/1000)
	if err == nil && len(rep.Unknown) > 0 {
		_, err = fmt.Fprintf(w, "predictions for unknown instances (ignored): %s\n", strings.Join(rep.Unknown, ", "))
	}
	return err
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
