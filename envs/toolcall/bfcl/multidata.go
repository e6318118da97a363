package bfcl

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl/multiturn"
	"github.com/nextstate-rl/nextstate/gym"
)

// funcDocFiles are the function-doc files of the multi-turn classes, in
// multi_turn_func_doc/ of a BFCL data folder.
var funcDocFiles = map[string]string{
	"GorillaFileSystem": "gorilla_file_system.json",
	"MathAPI":           "math_api.json",
	"MessageAPI":        "message_api.json",
	"TwitterAPI":        "posting_api.json",
	"TicketAPI":         "ticket_api.json",
	"TradingBot":        "trading_bot.json",
	"TravelAPI":         "travel_booking.json",
	"VehicleControlAPI": "vehicle_control.json",
}

// multiSupported are the multi-turn categories this package plays: the
// base category. long_context needs the classes' long-context scenarios,
// miss_func and miss_param functions held out and added mid-case; they
// are not ported.
var multiSupported = map[string]bool{"multi_turn_base": true}

// loadMultiCategory reads a multi-turn category: its cases, their ground
// truth in possible_answer/, and the function docs of their classes in
// multi_turn_func_doc/ (each class's docs, less the case's
// excluded_function).
func loadMultiCategory(fsys fs.FS, name, cat string) ([]*MultiCase, error) {
	rows, err := readLines(fsys, name)
	if err != nil {
		return nil, err
	}
	gtName := path.Join("possible_answer", name)
	gts, err := readLines(fsys, gtName)
	if err != nil {
		return nil, fmt.Errorf("the ground truth of %s: %w", cat, err)
	}
	answers := map[string]any{}
	for _, g := range gts {
		if id, ok := g.v.(*Dict).Value("id").(string); ok {
			answers[id] = g.v.(*Dict).Value("ground_truth")
		}
	}
	docs := map[string][]*Dict{}
	var cases []*MultiCase
	for _, r := range rows {
		d := r.v.(*Dict)
		id, _ := d.Value("id").(string)
		if id == "" {
			return nil, fmt.Errorf("%s:%d: the case has no \"id\" string", name, r.line)
		}
		c := &MultiCase{ID: id, Category: cat}
		excluded := map[string]bool{}
		if ex, ok := d.Value("excluded_function").([]any); ok {
			for _, f := range ex {
				if s, ok := f.(string); ok {
					excluded[s] = true
				}
			}
		}
		var fns []any
		inv, _ := d.Value("involved_classes").([]any)
		for _, v := range inv {
			class, _ := v.(string)
			file, ok := funcDocFiles[class]
			if !ok {
				return nil, fmt.Errorf("%s:%d: case %s involves %s, which is not one of %v", name, r.line, id, pyval.Repr(v), multiturn.ClassNames())
			}
			if docs[class] == nil {
				if docs[class], err = readFuncDocs(fsys, file); err != nil {
					return nil, err
				}
			}
			for _, f := range docs[class] {
				if n, _ := f.Value("name").(string); !excluded[n] {
					fns = append(fns, f)
				}
			}
		}
		full := dictOf("question", d.Value("question"), "involved_classes", d.Value("involved_classes"),
			"initial_config", d.Value("initial_config"), "function", fns)
		if err := c.set(full); err != nil {
			return nil, fmt.Errorf("%s:%d: case %s: %w", name, r.line, id, err)
		}
		gt, ok := answers[id]
		if !ok {
			return nil, fmt.Errorf("%s has no answer for %q", gtName, id)
		}
		if err := c.setGroundTruth(gt); err != nil {
			return nil, fmt.Errorf("%s: case %s: %w", gtName, id, err)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// readFuncDocs reads a class's function docs (JSON Lines).
func readFuncDocs(fsys fs.FS, file string) ([]*Dict, error) {
	rows, err := readLines(fsys, path.Join("multi_turn_func_doc", file))
	if err != nil {
		return nil, fmt.Errorf("the function docs of the multi-turn classes: %w", err)
	}
	out := make([]*Dict, len(rows))
	for i, r := range rows {
		out[i] = r.v.(*Dict)
	}
	return out, nil
}

// smokeMultiFS is the multi-turn smoke suite: a BFCL data folder of cases
// written for nextstate.
//
//go:embed smoke_multi
var smokeMultiFS embed.FS

// MultiSmokeTasks returns the built-in multi-turn smoke tasks.
func MultiSmokeTasks() []gym.Task {
	sub, err := fs.Sub(smokeMultiFS, "smoke_multi")
	if err != nil {
		panic("bfcl: embedded multi-turn smoke suite: " + err.Error())
	}
	ds, err := LoadFS(sub)
	if err != nil {
		panic("bfcl: embedded multi-turn smoke suite: " + err.Error())
	}
	var tasks []gym.Task
	for _, c := range ds.Multi {
		t := c.Task()
		t.Labels["suite"] = "bfcl-multiturn-smoke"
		tasks = append(tasks, t)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	return tasks
}
