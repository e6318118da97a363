package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestCheckCoercesAndNulls(t *testing.T) {
	set, err := NewToolset([]Tool{
		{Name: "wait", Parameters: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number"},` +
			`"keys":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}`),
			Coerce: Coerces(Seconds("seconds"), OneOrMany("keys"))},
		{Name: "none", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, args, want string }{
		{"wait", `{"seconds":"90s"}`, `{"seconds":90}`},
		{"wait", `{"seconds":" 2.5 "}`, `{"seconds":2.5}`},
		{"wait", `{"seconds":1.5,"keys":"q"}`, `{"keys":["q"],"seconds":1.5}`},
		{"wait", `{"keys":["a","b"]}`, `{"keys":["a","b"]}`},
		{"none", ``, `{}`},
		{"none", `null`, `{}`},
		{"none", ` {} `, `{}`},
	} {
		got, cerr := set.Check(gym.FunctionCall{Name: c.name, Arguments: c.args})
		if cerr != nil || string(got) != c.want {
			t.Errorf("%s %s: %s %v, want %s", c.name, c.args, got, cerr, c.want)
		}
	}
	// What the coerce cannot make right, the schema rejects.
	_, cerr := set.Check(gym.FunctionCall{Name: "wait", Arguments: `{"seconds":"soon"}`})
	if cerr == nil || cerr.Reason != ReasonBadArguments || !strings.Contains(cerr.Message, "at /seconds: got string, want number") {
		t.Errorf("soon: %+v", cerr)
	}
}

func TestBadArgumentsSaysWhatCheckSays(t *testing.T) {
	set, err := NewToolset([]Tool{{Name: "run", Parameters: json.RawMessage(
		`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	_, cerr := set.Check(gym.FunctionCall{Name: "run", Arguments: `{}`})
	bad := set.BadArguments("run", `"command" is empty`)
	if cerr == nil || bad.Reason != cerr.Reason ||
		bad.Message != `Error: bad arguments for run: "command" is empty. Expected: run {"command": string}.` ||
		cerr.Message != `Error: bad arguments for run: at /: missing property 'command'. Expected: run {"command": string}.` {
		t.Errorf("check %+v, bad %+v", cerr, bad)
	}
}
