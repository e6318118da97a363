package gym_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// specKind is a Kind with a given Spec, for registry tests.
type specKind struct{ spec gym.Spec }

func (k specKind) Spec() gym.Spec                       { return k.spec }
func (k specKind) New(context.Context) (gym.Env, error) { return nil, errors.New("not for running") }

var kindSeq atomic.Int64

// uniqueName returns a fresh versioned kind name, so tests can register
// under -count=N.
func uniqueName() string { return fmt.Sprintf("gymtest-reg%d-v1", kindSeq.Add(1)) }

func validSpec(name string) gym.Spec {
	return gym.Spec{Name: name, ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(1, 1, gym.PartText)}
}

func mustPanic(t *testing.T, says string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		p := recover()
		if p == nil {
			t.Errorf("did not panic; want a panic saying %q", says)
		} else if !strings.Contains(fmt.Sprint(p), says) {
			t.Errorf("panic %q does not say %q", p, says)
		}
	}()
	f()
}

func TestRegister(t *testing.T) {
	mustPanic(t, "nil", func() { gym.Register(nil) })
	mustPanic(t, `kind name "gymtest-noversion" has no version`, func() {
		gym.Register(specKind{validSpec("gymtest-noversion")})
	})
	mustPanic(t, "bad version", func() { gym.Register(specKind{validSpec("gymtest-v1x")}) })
	mustPanic(t, "action schema", func() {
		s := validSpec(uniqueName())
		s.ActionSchema = json.RawMessage(`{"type":7}`)
		gym.Register(specKind{s})
	})
	mustPanic(t, "observation schema", func() {
		s := validSpec(uniqueName())
		s.ObservationSchema = json.RawMessage(`{`)
		gym.Register(specKind{s})
	})

	name := uniqueName()
	gym.Register(specKind{validSpec(name)})
	mustPanic(t, "twice", func() { gym.Register(specKind{validSpec(name)}) })
	if !slices.Contains(gym.Kinds(), name) || !slices.IsSorted(gym.Kinds()) {
		t.Errorf("Kinds() = %v, want it sorted and holding %s", gym.Kinds(), name)
	}
	if spec, err := gym.Lookup(name); err != nil || spec.Name != name {
		t.Errorf("Lookup(%s) = %v, %v", name, spec.Name, err)
	}
	// A failing New is the infrastructure's fault and leaves no session.
	m, _ := newManager(t, gym.Config{})
	if _, _, err := m.Create(t.Context(), gym.CreateRequest{Env: name}); err == nil || m.Len() != 0 {
		t.Errorf("create with a failing New: %v, %d sessions", err, m.Len())
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := gym.Lookup("nope-v1")
	if !errors.Is(err, gym.ErrUnknownKind) {
		t.Fatalf("got %v", err)
	}
	for _, k := range []string{`"nope-v1"`, "echo-v1", "guess-v1"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("%q does not mention %s", err, k)
		}
	}
}

func TestParseKindName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		base    string
		version int
	}{
		{"guess-v1", "guess", 1},
		{"echo-v0", "echo", 0},
		{"swe-bench-lite-v12", "swe-bench-lite", 12},
		{"a-v1-v2", "a-v1", 2},
	} {
		base, v, err := gym.ParseKindName(tc.name)
		if err != nil || base != tc.base || v != tc.version {
			t.Errorf("ParseKindName(%q) = %q, %d, %v; want %q, %d", tc.name, base, v, err, tc.base, tc.version)
		}
	}
	for _, name := range []string{"", "guess", "guess-v", "guess-vx", "-v1", "guess-v-1", "guess-v+1", "guess-v 1", "guess-v1.0", "guessv1"} {
		if _, _, err := gym.ParseKindName(name); err == nil {
			t.Errorf("ParseKindName(%q) accepted it", name)
		} else if !strings.Contains(err.Error(), "name-vN") {
			t.Errorf("ParseKindName(%q): %q does not show the form", name, err)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{`"30s"`, 30 * time.Second},
		{`"1m30s"`, 90 * time.Second},
		{`"250ms"`, 250 * time.Millisecond},
		{`90`, 90 * time.Second},
		{`1.5`, 1500 * time.Millisecond},
		{`0`, 0},
	} {
		var d gym.Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || time.Duration(d) != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.in, time.Duration(d), err, tc.want)
		}
	}
	for _, in := range []string{`"30"`, `"soon"`, `true`, `{}`, `[1]`} {
		var d gym.Duration
		err := json.Unmarshal([]byte(in), &d)
		if err == nil || !strings.Contains(err.Error(), "30s") {
			t.Errorf("%s: got %v, want an error showing the form", in, err)
		}
	}
	b, err := json.Marshal(gym.Limits{MaxSteps: 5, StepTimeout: gym.Duration(90 * time.Second)})
	if err != nil || string(b) != `{"max_steps":5,"step_timeout":"1m30s"}` {
		t.Errorf("Limits JSON: %s, %v", b, err)
	}
	var l gym.Limits
	if err := json.Unmarshal(b, &l); err != nil || l.StepTimeout != gym.Duration(90*time.Second) {
		t.Errorf("round trip: %+v, %v", l, err)
	}
}

func TestLimitsOr(t *testing.T) {
	d := gym.Limits{MaxSteps: 10, StepTimeout: 1, EpisodeTimeout: 2}
	if got := (gym.Limits{MaxSteps: 3}).Or(d); got != (gym.Limits{MaxSteps: 3, StepTimeout: 1, EpisodeTimeout: 2}) {
		t.Errorf("got %+v", got)
	}
}

func TestPartJSON(t *testing.T) {
	for _, tc := range []struct {
		part gym.Part
		want string
	}{
		{gym.TextPart("ls -la"), `{"type":"text","text":"ls -la"}`},
		{gym.TextPart(""), `{"type":"text"}`}, // an absent text is the empty text
		{gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "call_1", Type: "function",
			Function: gym.FunctionCall{Name: "get_order", Arguments: `{"id":"W1"}`}}},
			`{"type":"tool_call","tool_call":{"id":"call_1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"W1\"}"}}}`},
		{gym.Part{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: []byte{1, 2}}},
			`{"type":"image","image":{"mime":"image/png","data":"AQI="}}`},
		{gym.Part{Type: gym.PartFile, File: &gym.File{Path: "a", Blob: gym.Blob{MIME: "text/plain"}}},
			`{"type":"file","file":{"path":"a","mime":"text/plain"}}`},
	} {
		b, err := json.Marshal(tc.part)
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s, %v; want %s", b, err, tc.want)
		}
		var back gym.Part
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if b2, _ := json.Marshal(back); string(b2) != tc.want {
			t.Errorf("round trip: %s", b2)
		}
	}
	a := gym.Action{Parts: []gym.Part{gym.TextPart("a"), {Type: gym.PartImage, Image: &gym.Blob{}}, gym.TextPart("b")}}
	if a.Text() != "a\nb" || gym.TextAction("x").Text() != "x" || (gym.Action{}).Text() != "" {
		t.Errorf("Text: %q", a.Text())
	}
}

func TestFailureOf(t *testing.T) {
	if gym.FailureOf(nil) != nil {
		t.Error("FailureOf(nil) != nil")
	}
	err := fmt.Errorf("step: %w", gym.AgentFault("timeout", errors.New("slow")))
	if f := gym.FailureOf(err); f.Fault != gym.FaultAgent || f.Reason != "timeout" || !strings.Contains(f.Message, "slow") {
		t.Errorf("%+v", f)
	}
	if f := gym.FailureOf(errors.New("boom")); f.Fault != gym.FaultInfra || f.Reason != "error" {
		t.Errorf("unlabelled: %+v", f)
	}
	inner := errors.New("gone")
	if !errors.Is(gym.InfraFault("sandbox_died", inner), inner) {
		t.Error("FaultError does not unwrap")
	}
}
