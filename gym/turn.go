package gym

import "encoding/json"

// Turn is the policy's side of a step, as the agent that chose the action
// saw it: the chat messages it was prompted with and its response, and,
// where the model server returned them, the token ids and log-probs of the
// prompt and the response. The env never sees it; it is recorded with the
// step (Event.Turn) so that training samples can be built from the
// trajectory (package rl). An agent that sends none still gets its steps
// judged and rewarded; its samples then carry text only.
type Turn struct {
	// Messages is the prompt: OpenAI chat messages, as sent to the model.
	Messages json.RawMessage `json:"messages,omitempty"`
	// Tools are the tools offered with the prompt, in the OpenAI shape.
	Tools json.RawMessage `json:"tools,omitempty"`
	// Response is the model's response text (tool calls included as the
	// model wrote them).
	Response string `json:"response,omitempty"`
	// PromptIDs and ResponseIDs are token ids; LogProbs has one entry per
	// response token.
	PromptIDs   []int     `json:"prompt_ids,omitempty"`
	ResponseIDs []int     `json:"response_ids,omitempty"`
	LogProbs    []float64 `json:"logprobs,omitempty"`
	Model       string    `json:"model,omitempty"`
	// Truncated is set when the prompt was cut to fit the context budget.
	Truncated bool `json:"truncated,omitempty"`
	// WeightVersion is the version of the policy's weights that produced
	// the response, when the model server said (its X-Weight-Version
	// header: nextstate's trainer servers); nil when unknown.
	WeightVersion *int `json:"weight_version,omitempty"`
}
