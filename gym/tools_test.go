package gym_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// TestInfoTools: Info.Tools reads the tools a kind wrote (Go values) and
// the same info read back from the wire (JSON values) alike, says when
// there are none, and says what is wrong with a list that is not one.
func TestInfoTools(t *testing.T) {
	written := gym.Info{gym.InfoTools: []map[string]any{{"type": "function", "function": map[string]any{
		"name": "shell_exec", "description": "run", "parameters": map[string]any{"type": "object"}}}}}
	b, _ := json.Marshal(written)
	var read gym.Info
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	for _, info := range []gym.Info{written, read} {
		tools, listed, err := info.Tools()
		if err != nil || !listed || len(tools) != 1 || tools[0].Type != "function" || tools[0].Function.Name != "shell_exec" ||
			tools[0].Function.Description != "run" || string(tools[0].Function.Parameters) != `{"type":"object"}` {
			t.Errorf("%v: tools %+v listed %v err %v", info, tools, listed, err)
		}
	}
	for _, info := range []gym.Info{nil, {}, {gym.InfoTools: nil}} {
		if tools, listed, err := info.Tools(); tools != nil || listed || err != nil {
			t.Errorf("%v: tools %+v listed %v err %v, want none", info, tools, listed, err)
		}
	}
	if tools, listed, err := (gym.Info{gym.InfoTools: []any{}}).Tools(); len(tools) != 0 || !listed || err != nil {
		t.Errorf("an empty list: tools %+v listed %v err %v, want listed and empty", tools, listed, err)
	}
	for bad, want := range map[string]string{
		`"shell_exec"`: "is not a list",
		`[{"type":"function","function":{"description":"no name"}}]`: "[0] has no function name",
	} {
		_, listed, err := (gym.Info{gym.InfoTools: json.RawMessage(bad)}).Tools()
		if !listed || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: listed %v err %v, want an error saying %q", bad, listed, err, want)
		}
	}
}
