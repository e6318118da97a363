package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

// chatRequest is the part of OpenAI's chat completion request served here,
// with vLLM's extensions top_k, chat_template_kwargs and return_token_ids.
type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []chatMessage     `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	TopK                *int              `json:"top_k"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Seed                *int64            `json:"seed"`
	Stop                stopList          `json:"stop"`
	Stream              bool              `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs           bool `json:"logprobs"`
	TopLogprobs        int  `json:"top_logprobs"`
	N                  *int `json:"n"`
	ChatTemplateKwargs struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
	ReturnTokenIDs bool `json:"return_token_ids"`
}

// chatMessage accepts content as a string, null, or a list of text parts.
type chatMessage struct {
	Role             string               `json:"role"`
	Content          json.RawMessage      `json:"content"`
	ReasoningContent *string              `json:"reasoning_content"`
	ToolCalls        []tokenizer.ToolCall `json:"tool_calls"`
	ToolCallID       string               `json:"tool_call_id"`
	Name             string               `json:"name"`
}

func (m chatMessage) toTemplate() (tokenizer.Message, error) {
	out := tokenizer.Message{Role: m.Role, ReasoningContent: m.ReasoningContent, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name}
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		if err := json.Unmarshal(c, &out.Content); err != nil {
			return out, err
		}
	case c[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return out, err
		}
		for _, p := range parts {
			if p.Type != "text" {
				return out, fmt.Errorf("content part of type %q is not supported (text)", p.Type)
			}
			out.Content += p.Text
		}
	default:
		return out, errors.New("content must be a string, null or a list of text parts")
	}
	switch m.Role {
	case "system", "user", "assistant", "tool":
	default:
		return out, fmt.Errorf("role %q is not supported (system, user, assistant, tool)", m.Role)
	}
	return out, nil
}

// stopList is OpenAI's stop: a string or a list of strings.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("stop must be a string or a list of strings")
	}
	*s = many
	return nil
}

// completionRequest is OpenAI's legacy completion request.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	MaxTokens     *int            `json:"max_tokens"`
	Seed          *int64          `json:"seed"`
	Stop          stopList        `json:"stop"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Logprobs       *int `json:"logprobs"`
	Echo           bool `json:"echo"`
	N              *int `json:"n"`
	ReturnTokenIDs bool `json:"return_token_ids"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Chat logprobs, OpenAI's shape.
type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type responseMessage struct {
	Role             string               `json:"role"`
	Content          *string              `json:"content"`
	ReasoningContent *string              `json:"reasoning_content,omitempty"`
	ToolCalls        []tokenizer.ToolCall `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Logprobs     *chatLogprobs   `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	TokenIDs     []int32         `json:"token_ids,omitempty"`
}

type chatResponse struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	Created        int64        `json:"created"`
	Model          string       `json:"model"`
	Choices        []chatChoice `json:"choices"`
	Usage          usage        `json:"usage"`
	PromptTokenIDs []int32      `json:"prompt_token_ids,omitempty"`
}

// streamToolCall is a tool call in a stream delta, with its index.
type streamToolCall struct {
	Index int `json:"index"`
	tokenizer.ToolCall
}

type chatDelta struct {
	Role             string           `json:"role,omitempty"`
	Content          *string          `json:"content,omitempty"`
	ReasoningContent *string          `json:"reasoning_content,omitempty"`
	ToolCalls        []streamToolCall `json:"tool_calls,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	TokenIDs     []int32       `json:"token_ids,omitempty"`
}

type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

// Legacy completion logprobs.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
	TokenIDs     []int32             `json:"token_ids,omitempty"`
}

type completionResponse struct {
	ID             string             `json:"id"`
	Object         string             `json:"object"`
	Created        int64              `json:"created"`
	Model          string             `json:"model"`
	Choices        []completionChoice `json:"choices"`
	Usage          *usage             `json:"usage,omitempty"`
	PromptTokenIDs []int32            `json:"prompt_token_ids,omitempty"`
}

type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}
