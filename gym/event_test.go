package gym_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// TestEventPublic checks the one filter between the record and agents: the
// verifier's details go, everything else stays, and the event it was given
// is not changed.
func TestEventPublic(t *testing.T) {
	const secret = "EXPECTED-ANSWER-7f3a"
	one := 1.0
	for _, c := range []struct {
		name string
		ev   gym.Event
		want gym.Info // the public info
	}{
		{"verified step", gym.Event{Type: gym.EventStep, Reward: &one, Terminated: true,
			Info: gym.Info{"reward_source": "verifier", "verifier": gym.Info{"expected": secret, "tests": []string{"test_hidden_" + secret}}, "exit_code": 0}},
			gym.Info{"reward_source": "verifier", "exit_code": 0}},
		{"verifier info alone", gym.Event{Type: gym.EventStep, Info: gym.Info{"verifier": secret}}, nil},
		{"verifier reward event", gym.Event{Type: gym.EventReward, Reward: &one, Source: "verifier", Info: gym.Info{"expected": secret}}, nil},
		{"named verifier reward event", gym.Event{Type: gym.EventReward, Reward: &one, Source: "verifier:pytest", Info: gym.Info{"failed": secret}}, nil},
		{"judge reward with a verifier key", gym.Event{Type: gym.EventReward, Reward: &one, Source: "judge:prm",
			Info: gym.Info{"hint": "be brief", "verifier": secret}}, gym.Info{"hint": "be brief"}},
		{"judge reward", gym.Event{Type: gym.EventReward, Reward: &one, Source: "judge:prm", Info: gym.Info{"hint": "be brief"}},
			gym.Info{"hint": "be brief"}},
		{"a source that only starts like the verifier's", gym.Event{Type: gym.EventReward, Source: "verifiers-fan", Info: gym.Info{"k": "v"}},
			gym.Info{"k": "v"}},
		{"reset", gym.Event{Type: gym.EventReset, Instruction: "Win the game.", Info: gym.Info{"tools": "x"}}, gym.Info{"tools": "x"}},
		{"verifier reward without details", gym.Event{Type: gym.EventReward, Reward: &one, Source: "verifier"}, nil},
		{"a plain step", gym.Event{Type: gym.EventStep, Reward: &one}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := json.Marshal(c.ev)
			pub := c.ev.Public()
			after, _ := json.Marshal(c.ev)
			if string(before) != string(after) {
				t.Errorf("Public changed the event it was given:\n%s\n%s", before, after)
			}
			got, _ := json.Marshal(pub.Info)
			want, _ := json.Marshal(c.want)
			if string(got) != string(want) {
				t.Errorf("public info %s, want %s", got, want)
			}
			b, _ := json.Marshal(pub)
			if strings.Contains(string(b), secret) {
				t.Errorf("the public event still holds the secret: %s", b)
			}
			// IsPublic says when an event may be sent as it is.
			if same := string(b) == string(before); c.ev.IsPublic() != same {
				t.Errorf("IsPublic %v, but the public form is %s and the event %s", c.ev.IsPublic(), b, before)
			}
			if (pub.Reward == nil) != (c.ev.Reward == nil) || pub.Type != c.ev.Type || pub.Source != c.ev.Source ||
				pub.Instruction != c.ev.Instruction {
				t.Errorf("public event %s lost more than the verifier's details", b)
			}
		})
	}
}

// TestResetEventCarriesInstruction: a reset event records the task's
// instruction, as the reset's answer gives it, for a task of the catalog
// and for one given inline, at create and at a later reset.
func TestResetEventCarriesInstruction(t *testing.T) {
	m, mem := newManager(t, gym.Config{})
	s := create(t, m, gym.CreateRequest{TaskID: "echo-smoke"})
	inline := &gym.Task{ID: "say-hi", Env: "echo-v1", Instruction: "Say hi."}
	res, err := s.Reset(t.Context(), inline, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var resets []gym.Event
	for _, ev := range mem.Session(s.ID) {
		if ev.Type == gym.EventReset {
			resets = append(resets, ev)
		}
	}
	if len(resets) != 2 || resets[0].Instruction != "Say anything; say /done to finish." || resets[1].Instruction != "Say hi." || res.Instruction != "Say hi." {
		t.Fatalf("reset events %+v (answer %q), want each with its task's instruction", resets, res.Instruction)
	}
}
