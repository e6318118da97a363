package rl

import (
	"encoding/json"
	"testing"
)

func TestFromChat(t *testing.T) {
	var in []ChatMessage
	if err := json.Unmarshal([]byte(`[
		{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"what is "},{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":" this?"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"look","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"a cat"},
		{"role":"user","content":{"odd":1}}]`), &in); err != nil {
		t.Fatal(err)
	}
	got := FromChat(in)
	want := []string{"be brief", "what is [image] this?", "", "a cat", `{"odd":1}`}
	for i, w := range want {
		if got[i].Content != w {
			t.Errorf("message %d content = %q, want %q", i, got[i].Content, w)
		}
	}
	if len(got[2].ToolCalls) != 1 || got[2].ToolCalls[0].Function.Name != "look" || got[3].ToolCallID != "c1" {
		t.Errorf("tool calls not kept: %+v", got)
	}
}
