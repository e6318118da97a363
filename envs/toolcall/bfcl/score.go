package bfcl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl/multiturn"
)

// ModelAnswer is one line of an answers file: a case id and its answer.
type ModelAnswer struct {
	ID     string
	Line   int
	Answer Answer
}

// ReadAnswers reads a JSON Lines file of model outputs, one
// {"id": ..., "result": ...} per line, where result is:
//
//   - BFCL's result shape, a list of {"function name": arguments}, the
//     arguments an object or a JSON string of one;
//   - OpenAI tool calls, a list of {"function": {"name", "arguments"}} (or
//     of {"name", "arguments"}), or a message {"tool_calls": [...]}
//     ({"content": ...} alone is a message, no calls);
//   - a JSON string holding either of those;
//   - any other string: a message, no calls.
//
// A line that is not JSON, lacks an id or a result, repeats an id, or has
// a result of another shape is an error naming the line.
func ReadAnswers(r io.Reader) ([]ModelAnswer, error) {
	var out []ModelAnswer
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		v, err := pyval.Decode(line)
		if err != nil {
			return nil, fmt.Errorf("answers line %d: not JSON: %w", n, err)
		}
		d, ok := v.(*Dict)
		if !ok {
			return nil, fmt.Errorf("answers line %d: want an object {\"id\": ..., \"result\": ...}", n)
		}
		id, _ := d.Value("id").(string)
		if id == "" {
			return nil, fmt.Errorf("answers line %d: no \"id\" string", n)
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("answers line %d: id %q was already answered on line %d", n, id, prev)
		}
		seen[id] = n
		res, ok := d.Get("result")
		if !ok {
			return nil, fmt.Errorf("answers line %d (%s): no \"result\"", n, id)
		}
		a, err := answerOf(res, true)
		if err != nil {
			return nil, fmt.Errorf("answers line %d (%s): %w", n, id, err)
		}
		out = append(out, ModelAnswer{ID: id, Line: n, Answer: a})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	return out, nil
}

var errShape = errors.New(`"result" must be a list of {"function name": arguments}, a list of OpenAI tool calls {"function": {"name", "arguments"}}, a message {"tool_calls": [...]}, or a string`)

// answerOf reads a result; a string is tried once as JSON of a result.
func answerOf(v any, unwrap bool) (Answer, error) {
	switch t := v.(type) {
	case string:
		if unwrap {
			if inner, err := pyval.Decode([]byte(t)); err == nil {
				switch inner.(type) {
				case []any, *Dict:
					return answerOf(inner, false)
				}
			}
		}
		return Answer{Text: true}, nil
	case []any:
		a := Answer{Calls: make([]Call, 0, len(t))}
		for _, e := range t {
			a.Calls = append(a.Calls, callOf(e))
		}
		return a, nil
	case *Dict:
		if tc, ok := t.Get("tool_calls"); ok {
			if tc == nil {
				return Answer{Text: true}, nil
			}
			if l, ok := tc.([]any); ok {
				return answerOf(l, false)
			}
		} else if _, ok := t.Get("content"); ok {
			return Answer{Text: true}, nil
		}
	}
	return Answer{}, errShape
}

// callOf reads one entry of a result list; an entry of no known shape is
// a malformed call.
func callOf(e any) Call {
	d, ok := e.(*Dict)
	if !ok {
		return Call{Malformed: "a " + kindOf(e).String() + ", not a function call"}
	}
	if fn, ok := d.Value("function").(*Dict); ok {
		d = fn
	}
	if name, ok := d.Value("name").(string); ok {
		if args, has := d.Get("arguments"); has {
			return Call{Name: name, Arguments: argsText(args)}
		}
	}
	if d.Len() != 1 {
		return Call{Malformed: fmt.Sprintf("an object with %d keys, not {\"function name\": arguments}", d.Len())}
	}
	name := d.Keys[0]
	return Call{Name: name, Arguments: argsText(d.Value(name))}
}

func argsText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyval.Dumps(v)
}

// Report is the outcome of scoring a dataset.
type Report struct {
	Data       string          `json:"data,omitempty"` // the data folder, where the caller sets it
	Source     string          `json:"source"`         // "ground truth" or the answers file
	Categories []CategoryScore `json:"categories"`
	// Overall sums the scored categories; the cases of categories not
	// scored (CategoryScore.NotScored) are left out.
	Overall CategoryScore `json:"overall"`
	// CategoryMean is the unweighted mean of the scored categories'
	// accuracies (0 when none is scored).
	CategoryMean float64 `json:"category_mean"`
	// ScoredCategories counts the categories in CategoryMean.
	ScoredCategories int `json:"scored_categories"`
	// NotScoredCases counts the cases of the categories not scored.
	NotScoredCases int `json:"not_scored_cases,omitempty"`
	// UnknownIDs are answers for ids the data does not have (not scored).
	UnknownIDs []string `json:"unknown_ids,omitempty"`
	// Skipped lists the data's categories that were not loaded.
	Skipped        []string `json:"skipped,omitempty"`
	Seconds        float64  `json:"seconds"`
	CasesPerSecond float64  `json:"cases_per_second"`
}

// CategoryScore is one category's score. Accuracy is Correct/Cases: a
// case without an answer counts as wrong (reason "no_answer"), provided
// the category has an answer for at least one case. A category with no
// answer at all is not scored, as BFCL leaves out the categories a model
// has no results for: NotScored says why, Accuracy is 0 and means
// nothing, no case is listed as failed, and Report leaves the category
// out of Overall and CategoryMean.
type CategoryScore struct {
	Category   string         `json:"category"`
	Cases      int            `json:"cases"`
	Answered   int            `json:"answered"`
	Unanswered int            `json:"unanswered"`
	Correct    int            `json:"correct"`
	Accuracy   float64        `json:"accuracy"`
	Reasons    map[string]int `json:"reasons,omitempty"`
	// NotScored, when set, says why the category is not scored.
	NotScored string `json:"not_scored,omitempty"`
	// Failures are the failed ids with their reasons, for --verbose use.
	Failures []Failure `json:"failures,omitempty"`
}

// Failure is one failed case.
type Failure struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Score checks answers against the dataset's cases. A category none of
// whose cases is answered is not scored (CategoryScore.NotScored).
// Multi-turn cases are not read from answers: their categories are not
// scored (play them with nextstate run, kind bfcl-multiturn-v1).
func Score(ds *Dataset, answers []ModelAnswer, source string) *Report {
	return score(ds, answers, nil, source, func(category string) string {
		if multiSupported[category] {
			return "answers of multi-turn cases are not read here: play them with nextstate run (" + MultiKindName + ")"
		}
		return "no answer for any of its cases"
	})
}

// score is Score with unanswered categories' reason given by whyNone;
// multi, when not nil, gives a multi-turn case's answer (each turn's
// calls).
func score(ds *Dataset, answers []ModelAnswer, multi func(*MultiCase) ([][]multiturn.Call, error), source string, whyNone func(category string) string) *Report {
	byID := make(map[string]*Answer, len(answers))
	for i := range answers {
		byID[answers[i].ID] = &answers[i].Answer
	}
	known := make(map[string]bool, len(ds.Cases))
	for _, c := range ds.Cases {
		known[c.ID] = true
	}
	rep := &Report{Source: source, Skipped: ds.Skipped}
	for _, a := range answers {
		if !known[a.ID] {
			rep.UnknownIDs = append(rep.UnknownIDs, a.ID)
		}
	}
	start := time.Now()
	cats := map[string]*CategoryScore{}
	rep.Overall = CategoryScore{Category: "overall", Reasons: map[string]int{}}
	for _, c := range ds.Cases {
		cs := cats[c.Category]
		if cs == nil {
			cs = &CategoryScore{Category: c.Category, Reasons: map[string]int{}}
			cats[c.Category] = cs
		}
		cs.Cases++
		a := byID[c.ID]
		var r Result
		if a == nil {
			cs.Unanswered++
			r = Result{Reason: ReasonNoAnswer, Detail: "no answer for this id"}
		} else {
			cs.Answered++
			r = c.Check(*a)
		}
		if r.Valid {
			cs.Correct++
			continue
		}
		cs.Reasons[r.Reason]++
		cs.Failures = append(cs.Failures, Failure{ID: c.ID, Reason: r.Reason, Detail: r.Detail})
	}
	for _, c := range ds.Multi {
		cs := cats[c.Category]
		if cs == nil {
			cs = &CategoryScore{Category: c.Category, Reasons: map[string]int{}}
			cats[c.Category] = cs
		}
		cs.Cases++
		if multi == nil {
			cs.Unanswered++
			continue
		}
		cs.Answered++
		turns, err := multi(c)
		var f *multiturn.Failure
		if err == nil {
			var valid bool
			if valid, f, err = c.Check(turns); valid {
				cs.Correct++
				continue
			}
		}
		r := Failure{ID: c.ID, Reason: "checker_exception"}
		if err != nil {
			r.Detail = err.Error()
		} else {
			r.Reason, r.Detail = f.ErrorType, fmt.Sprintf("turn %d: %s", f.Turn, f.Message)
		}
		cs.Reasons[r.Reason]++
		cs.Failures = append(cs.Failures, r)
	}
	rep.Seconds = time.Since(start).Seconds()
	names := make([]string, 0, len(cats))
	for n := range cats {
		names = append(names, n)
	}
	sort.Strings(names)
	var sum float64
	for _, n := range names {
		cs := cats[n]
		if cs.Answered == 0 {
			cs.NotScored = whyNone(n)
			cs.Reasons, cs.Failures = map[string]int{}, nil
			rep.NotScoredCases += cs.Cases
			rep.Categories = append(rep.Categories, *cs)
			continue
		}
		cs.Accuracy = float64(cs.Correct) / float64(cs.Cases)
		sum += cs.Accuracy
		rep.ScoredCategories++
		rep.Categories = append(rep.Categories, *cs)
		o := &rep.Overall
		o.Cases += cs.Cases
		o.Answered += cs.Answered
		o.Unanswered += cs.Unanswered
		o.Correct += cs.Correct
		for r, k := range cs.Reasons {
			o.Reasons[r] += k
		}
	}
	if rep.Overall.Cases > 0 {
		rep.Overall.Accuracy = float64(rep.Overall.Correct) / float64(rep.Overall.Cases)
		rep.CategoryMean = sum / float64(rep.ScoredCategories)
	}
	if rep.Seconds > 0 {
		rep.CasesPerSecond = float64(rep.Overall.Answered) / rep.Seconds
	}
	return rep
}

// References returns every case's reference answer (Case.Reference); a
// case that has none (relevance) is left out.
func (d *Dataset) References() []ModelAnswer {
	out := make([]ModelAnswer, 0, len(d.Cases))
	for _, c := range d.Cases {
		a, err := c.Reference()
		if err != nil {
			continue
		}
		out = append(out, ModelAnswer{ID: c.ID, Answer: a})
	}
	return out
}

// SelfCheck scores the ground truth's own reference answers: every case
// should pass, except where BFCL's checker cannot accept any answer. A
// category BFCL publishes no ground truth for (live_relevance: any call
// passes) has no reference answers and is not scored.
func SelfCheck(ds *Dataset) *Report {
	gt := func(c *MultiCase) ([][]multiturn.Call, error) { return c.groundTruthCalls() }
	return score(ds, ds.References(), gt, "ground truth", func(category string) string {
		if !HasGroundTruth(category) {
			return "BFCL publishes no ground truth for it, so there is no reference answer to score"
		}
		return "no reference answer for any of its cases"
	})
}

// ReasonSummary renders reason counts as "3 × value_error_string, ...",
// most frequent first.
func ReasonSummary(reasons map[string]int) string {
	type rc struct {
		r string
		n int
	}
	var l []rc
	for r, n := range reasons {
		l = append(l, rc{r, n})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].n != l[j].n {
			return l[i].n > l[j].n
		}
		return l[i].r < l[j].r
	})
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%d × %s", x.n, x.r)
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the report as a table: each category's cases, answers,
// correct answers, accuracy and failure reasons ("not scored" and why for
// a category without answers), then the totals over the scored
// categories, the category mean, the answers for unknown ids, and the
// scoring speed. With failures, every failed case follows, with its reason
// and detail.
func (r *Report) WriteText(w io.Writer, failures bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var notScored []string
	for _, cs := range r.Categories {
		if cs.NotScored != "" {
			notScored = append(notScored, cs.Category)
		}
	}
	if r.Data != "" {
		fmt.Fprintf(tw, "data\t%s (%d cases)\n", r.Data, r.Overall.Cases+r.NotScoredCases)
	}
	fmt.Fprintf(tw, "answers\t%s\n", r.Source)
	for _, s := range r.Skipped {
		fmt.Fprintf(tw, "skipped\t%s\n", s)
	}
	fmt.Fprintln(tw, "category\tcases\tanswered\tcorrect\taccuracy\tfailures")
	row := func(cs CategoryScore) {
		if cs.NotScored != "" {
			fmt.Fprintf(tw, "%s\t%d\t%d\t-\tnot scored\t%s\n", cs.Category, cs.Cases, cs.Answered, cs.NotScored)
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f%%\t%s\n", cs.Category, cs.Cases, cs.Answered, cs.Correct, 100*cs.Accuracy, ReasonSummary(cs.Reasons))
	}
	for _, cs := range r.Categories {
		row(cs)
	}
	if len(notScored) > 0 {
		o := r.Overall
		o.Category = "overall (scored)"
		row(o)
		cases := "cases"
		if r.NotScoredCases == 1 {
			cases = "case"
		}
		fmt.Fprintf(tw, "category mean\t%.2f%% over %d scored categories; not scored, left out of both: %s (%d %s)\n",
			100*r.CategoryMean, r.ScoredCategories, strings.Join(notScored, ", "), r.NotScoredCases, cases)
	} else {
		row(r.Overall)
		fmt.Fprintf(tw, "category mean\t%.2f%%\n", 100*r.CategoryMean)
	}
	if len(r.UnknownIDs) > 0 {
		shown := r.UnknownIDs
		if len(shown) > 10 {
			shown = shown[:10]
		}
		fmt.Fprintf(tw, "unknown ids\t%d answers for ids the data lacks (not scored): %s\n", len(r.UnknownIDs), strings.Join(shown, ", "))
	} else {
		fmt.Fprintf(tw, "unknown ids\t0\n")
	}
	fmt.Fprintf(tw, "unanswered\t%d cases of scored categories (scored as wrong)\n", r.Overall.Unanswered)
	fmt.Fprintf(tw, "speed\t%d answers checked in %.3fs = %.0f cases/s\n", r.Overall.Answered, r.Seconds, r.CasesPerSecond)
	if err := tw.Flush(); err != nil {
		return err
	}
	if !failures {
		return nil
	}
	fmt.Fprintln(w, "\nfailures")
	for _, cs := range r.Categories {
		for _, f := range cs.Failures {
			if _, err := fmt.Fprintf(w, "  %s (%s): %s: %s\n", f.ID, cs.Category, f.Reason, f.Detail); err != nil {
				return err
			}
		}
	}
	return nil
}
