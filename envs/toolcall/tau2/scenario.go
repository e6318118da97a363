package tau2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// UserScenario is tau2's user_scenario: who the simulated user is and what
// they want. Instructions are structured (Instructions) or a plain string
// (Text).
type UserScenario struct {
	Persona      *string       `json:"persona,omitempty"`
	Instructions *Instructions `json:"-"`
	Text         string        `json:"-"`
}

// Instructions are tau2's structured user instructions.
type Instructions struct {
	Domain           string  `json:"domain"`
	ReasonForCall    string  `json:"reason_for_call"`
	KnownInfo        *string `json:"known_info,omitempty"`
	UnknownInfo      *string `json:"unknown_info,omitempty"`
	TaskInstructions string  `json:"task_instructions"`
}

// UnmarshalJSON reads a user_scenario.
func (u *UserScenario) UnmarshalJSON(b []byte) error {
	var raw struct {
		Persona      *string         `json:"persona"`
		Instructions json.RawMessage `json:"instructions"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*u = UserScenario{Persona: raw.Persona}
	in := bytes.TrimSpace(raw.Instructions)
	switch {
	case len(in) == 0 || string(in) == "null":
		return errors.New("user_scenario has no instructions")
	case in[0] == '"':
		return json.Unmarshal(in, &u.Text)
	}
	u.Instructions = &Instructions{}
	if err := json.Unmarshal(in, u.Instructions); err != nil {
		return fmt.Errorf("user_scenario.instructions: %w", err)
	}
	return nil
}

// MarshalJSON writes the user_scenario as tau2 has it.
func (u UserScenario) MarshalJSON() ([]byte, error) {
	var in any = u.Text
	if u.Instructions != nil {
		in = u.Instructions
	}
	return json.Marshal(map[string]any{"persona": u.Persona, "instructions": in})
}

// String renders the scenario as tau2 shows it to its user simulator.
func (u UserScenario) String() string {
	var b strings.Builder
	if u.Persona != nil {
		b.WriteString("Persona:\n" + Indent(*u.Persona, "\t") + "\n")
	}
	text := u.Text
	if in := u.Instructions; in != nil {
		var lines []string
		lines = append(lines, "Domain: "+in.Domain, "Reason for call:\n"+Indent(in.ReasonForCall, "\t"))
		if in.KnownInfo != nil {
			lines = append(lines, "Known info:\n"+Indent(*in.KnownInfo, "\t"))
		}
		if in.UnknownInfo != nil {
			lines = append(lines, "Unknown info:\n"+Indent(*in.UnknownInfo, "\t"))
		}
		lines = append(lines, "Task instructions:\n"+Indent(in.TaskInstructions, "\t"))
		text = strings.Join(lines, "\n")
	}
	b.WriteString("Instructions:\n" + Indent(text, "\t"))
	return b.String()
}

// Indent prefixes every line that is not blank, as Python's textwrap.indent.
func Indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
