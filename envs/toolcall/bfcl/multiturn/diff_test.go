package multiturn

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// recorded is testdata/bfcl_runs.json.gz, written by testdata/record.py
// from BFCL's own classes: every case's ground truth and mutations of it,
// each call's class and result, and after each turn whether each class's
// state equals the ground truth's.
type recorded struct {
	Cases []recordedCase `json:"cases"`
}

type recordedCase struct {
	ID            string          `json:"id"`
	Involved      []string        `json:"involved_classes"`
	InitialConfig json.RawMessage `json:"initial_config"`
	Runs          []recordedRun   `json:"runs"`
}

type recordedRun struct {
	Mutation string `json:"mutation"`
	Turns    []struct {
		Calls []struct {
			Call   string  `json:"call"`
			Class  *string `json:"class"`
			Result string  `json:"result"`
		} `json:"calls"`
		SameState map[string]bool `json:"same_state"`
	} `json:"turns"`
}

func loadRecorded(t *testing.T) *recorded {
	t.Helper()
	f, err := os.Open("testdata/bfcl_runs.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestDifferential replays BFCL's recorded runs on the Go classes: every
// call's result text and every turn's state verdict must be BFCL's. One
// subtest per class (`-run TestDifferential/TravelAPI`) checks the calls
// that class answers and its state; "executor" checks the calls no class
// answers (unknown names) on cases whose classes are all there.
func TestDifferential(t *testing.T) {
	rec := loadRecorded(t)
	for _, class := range ClassNames() {
		t.Run(class, func(t *testing.T) {
			var fails []string
			calls, turns := 0, 0
			for _, c := range rec.Cases {
				if !slices.Contains(c.Involved, class) {
					continue
				}
				cfg := classConfig(t, c, class)
				for _, run := range c.Runs {
					gtRun := c.Runs[0]
					model, err := New(class, cfg)
					if err != nil {
						t.Fatalf("%s: %v", c.ID, err)
					}
					gt, _ := New(class, cfg)
					for ti, turn := range run.Turns {
						for _, call := range turn.Calls {
							if call.Class == nil || *call.Class != class {
								continue
							}
							calls++
							if got := runOn(t, class, model, call.Call); got != call.Result {
								fails = append(fails, fmt.Sprintf("%s [%s] turn %d: %s\n  got  %s\n  want %s", c.ID, run.Mutation, ti, call.Call, got, call.Result))
							}
						}
						for _, call := range gtRun.Turns[ti].Calls {
							if call.Class != nil && *call.Class == class {
								runOn(t, class, gt, call.Call)
							}
						}
						turns++
						same := pyval.Eq(model.State(), gt.State())
						if want := turn.SameState[class]; same != want {
							fails = append(fails, fmt.Sprintf("%s [%s] turn %d: state equal to the ground truth's: %v, want %v\n  model %s\n  gt    %s",
								c.ID, run.Mutation, ti, same, want, pyval.Repr(model.State()), pyval.Repr(gt.State())))
						}
					}
				}
			}
			t.Logf("%s: %d calls and %d turn states compared, %d differ", class, calls, turns, len(fails))
			for i, f := range fails {
				if i == 20 {
					t.Errorf("... and %d more", len(fails)-20)
					break
				}
				t.Error(f)
			}
		})
	}
	t.Run("executor", func(t *testing.T) {
		for _, c := range rec.Cases {
			if !allThere(c.Involved) {
				continue
			}
			in, err := NewInstances(c.Involved, mustDict(t, c.InitialConfig))
			if err != nil {
				t.Fatal(err)
			}
			for _, turn := range c.Runs[0].Turns {
				for _, call := range turn.Calls {
					cl, err := ParseCall(call.Call)
					if err != nil {
						t.Fatal(err)
					}
					if got := in.Run(cl); got != call.Result {
						t.Errorf("%s: %s: got %s, want %s", c.ID, call.Call, got, call.Result)
					}
				}
			}
			for _, run := range c.Runs[1:] {
				for _, turn := range run.Turns {
					for _, call := range turn.Calls {
						if call.Class != nil {
							continue
						}
						cl, err := ParseCall(call.Call)
						if err != nil {
							t.Fatal(err)
						}
						if got := in.Run(cl); got != call.Result {
							t.Errorf("%s: %s: got %s, want %s", c.ID, call.Call, got, call.Result)
						}
					}
				}
			}
		}
	})
}

func allThere(names []string) bool {
	for _, n := range names {
		if _, ok := classes[n]; !ok {
			return false
		}
	}
	return true
}

func mustDict(t *testing.T, raw json.RawMessage) *pyval.Dict {
	t.Helper()
	v, err := pyval.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := v.(*pyval.Dict)
	if !ok {
		t.Fatalf("%s is not an object", raw)
	}
	return d
}

// classConfig is a class's entry of a case's initial_config (nil for
// MathAPI, which BFCL does not load).
func classConfig(t *testing.T, c recordedCase, class string) *pyval.Dict {
	if class == "MathAPI" {
		return nil
	}
	if v, ok := mustDict(t, c.InitialConfig).Get(class); ok {
		return v.(*pyval.Dict)
	}
	return nil
}

// runOn runs a call on one instance, as the executor would on its class.
func runOn(t *testing.T, class string, c Class, src string) string {
	t.Helper()
	call, err := ParseCall(src)
	if err != nil {
		t.Fatal(err)
	}
	in := &Instances{names: []string{class}, byName: map[string]Class{class: c}, methods: map[string]owned{}}
	for _, m := range c.Methods() {
		in.methods[m.Name] = owned{class: class, method: m}
	}
	return in.Run(call)
}

// TestParseCall reads the ground truth's Python calls.
func TestParseCall(t *testing.T) {
	for src, want := range map[string]string{
		"cd(folder='document')":                          "cd(folder='document')",
		"sort('final_report.pdf')":                       "sort('final_report.pdf')",
		`echo(content="it's", file_name='a.txt')`:        `echo(content="it's", file_name='a.txt')`,
		"f(a=[1, 2.5, -3], b={'k': True, 'n': None})":    "f(a=[1, 2.5, -3], b={'k': True, 'n': None})",
		"f(x=(1, 2), y=1e3,z='a\\nb')":                   "f(x=[1, 2], y=1000.0, z='a\\nb')",
		"  get_stock_info ( symbol = 'AAPL' )  ":         "get_stock_info(symbol='AAPL')",
		"mean(numbers=[1.5,2.5])":                        "mean(numbers=[1.5, 2.5])",
		"f(12345678901234567890123)":                     "f(12345678901234567890123)",
		"send_message(receiver_id='USR002', message='')": "send_message(receiver_id='USR002', message='')",
	} {
		c, err := ParseCall(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := c.String(); got != want {
			t.Errorf("%s: read as %s, want %s", src, got, want)
		}
	}
	for _, bad := range []string{"", "f", "f(", "f(a=1, 2)", "f(a=g(1))", "f(a=1) x", "f('abc)"} {
		if _, err := ParseCall(bad); err == nil || !strings.Contains(err.Error(), "python call") {
			t.Errorf("%q: got %v, want an error", bad, err)
		}
	}
}
