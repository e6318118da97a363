package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var cr chatRequest
	if !s.decode(w, r, &cr) {
		return
	}
	msgs := make([]tokenizer.Message, len(cr.Messages))
	for i, m := range cr.Messages {
		var err error
		if msgs[i], err = m.toTemplate(); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "messages["+itoa(i)+"]: "+err.Error())
			return
		}
	}
	tools := cr.Tools
	if string(cr.ToolChoice) == `"none"` {
		tools = nil
	}
	prompt, err := tokenizer.ApplyChatTemplate(msgs, tools, tokenizer.ChatOptions{AddGenerationPrompt: true, EnableThinking: cr.ChatTemplateKwargs.EnableThinking})
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	maxTok := cr.MaxTokens
	if cr.MaxCompletionTokens != nil {
		maxTok = cr.MaxCompletionTokens
	}
	top := 0
	if cr.Logprobs {
		top = cr.TopLogprobs
	}
	ids := s.Tokenizer.Encode(prompt)
	req, err := s.request(params{model: cr.Model, temperature: cr.Temperature, topP: cr.TopP, topK: cr.TopK, maxTokens: maxTok, seed: cr.Seed, n: cr.N, stop: cr.Stop}, ids, top)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	g := &generation{s: s, stops: cr.Stop}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	var promptIDs []int32
	if cr.ReturnTokenIDs {
		promptIDs = ids
	}
	if cr.Stream {
		s.chatStream(w, r, g, req, &cr, len(tools) > 0, id, created, promptIDs)
		return
	}
	if err := g.start(w, r, req); err != nil {
		s.engineError(w, err)
		return
	}
	defer g.cancel()
	g.consume(nil)
	ans := splitAnswer(g.text, len(tools) > 0)
	finish := g.finish()
	if len(ans.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	msg := responseMessage{Role: "assistant", ToolCalls: ans.ToolCalls}
	if ans.Content != "" || len(ans.ToolCalls) == 0 {
		msg.Content = &ans.Content
	}
	if ans.Reasoning != "" {
		msg.ReasoningContent = &ans.Reasoning
	}
	ch := chatChoice{Message: msg, FinishReason: finish}
	if cr.Logprobs {
		ch.Logprobs = &chatLogprobs{Content: []tokenLogprob{}}
		for _, t := range g.tokens {
			ch.Logprobs.Content = append(ch.Logprobs.Content, s.chatLogprob(t))
		}
	}
	if cr.ReturnTokenIDs {
		ch.TokenIDs = g.ids()
	}
	writeJSON(w, http.StatusOK, chatResponse{ID: id, Object: "chat.completion", Created: created, Model: s.ModelName,
		Choices: []chatChoice{ch}, Usage: g.usage(), PromptTokenIDs: promptIDs})
}

// splitAnswer separates reasoning, content and (with tools) tool calls.
func splitAnswer(text string, tools bool) tokenizer.Answer {
	if tools {
		return tokenizer.ParseAnswer(text)
	}
	// no tools: only the think block is split off
	a := tokenizer.ParseAnswer(strings.ReplaceAll(text, "<tool_call>", "\x00tool_call>"))
	a.Content = strings.ReplaceAll(a.Content, "\x00tool_call>", "<tool_call>")
	a.Reasoning = strings.ReplaceAll(a.Reasoning, "\x00tool_call>", "<tool_call>")
	return a
}

func (s *Server) chatStream(w http.ResponseWriter, r *http.Request, g *generation, req trainer.Request, cr *chatRequest, tools bool, id string, created int64, promptIDs []int32) {
	// Engine errors come before the first write, which commits a 200.
	if err := g.start(w, r, req); err != nil {
		s.engineError(w, err)
		return
	}
	defer g.cancel()
	out := startSSE(w)
	chunk := func(d chatDelta, lp *chatLogprobs, finish *string, tids []int32) chatChunk {
		return chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.ModelName,
			Choices: []chatChunkChoice{{Delta: d, Logprobs: lp, FinishReason: finish, TokenIDs: tids}}}
	}
	empty := ""
	out.send(chunk(chatDelta{Role: "assistant", Content: &empty}, nil, nil, nil))
	st := &streamer{tools: tools, stops: cr.Stop}
	err := g.consume(func(t trainer.Sampled) error {
		reasoning, content := st.step(g.text, false)
		var lp *chatLogprobs
		if cr.Logprobs {
			lp = &chatLogprobs{Content: []tokenLogprob{s.chatLogprob(t)}}
		}
		var tids []int32
		if cr.ReturnTokenIDs {
			tids = []int32{t.ID}
		}
		if reasoning == "" && content == "" && lp == nil && tids == nil {
			return nil
		}
		d := chatDelta{}
		if reasoning != "" {
			d.ReasoningContent = &reasoning
		}
		if content != "" {
			d.Content = &content
		}
		return out.send(chunk(d, lp, nil, tids))
	})
	if err != nil {
		out.send(map[string]any{"error": map[string]string{"message": err.Error(), "type": "server_error"}})
		out.done()
		return
	}
	reasoning, content := st.step(g.text, true)
	finish := g.finish()
	var calls []streamToolCall
	if st.phase == phaseTools {
		ans := tokenizer.ParseAnswer(g.text[st.pos:])
		if len(ans.ToolCalls) > 0 {
			for i, c := range ans.ToolCalls {
				calls = append(calls, streamToolCall{Index: i, ToolCall: c})
			}
			finish = "tool_calls"
			content += ans.Content
		} else {
			content += g.text[st.pos:]
		}
	}
	if reasoning != "" || content != "" || len(calls) > 0 {
		d := chatDelta{ToolCalls: calls}
		if reasoning != "" {
			d.ReasoningContent = &reasoning
		}
		if content != "" {
			d.Content = &content
		}
		out.send(chunk(d, nil, nil, nil))
	}
	out.send(chunk(chatDelta{}, nil, &finish, nil))
	if cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage {
		u := g.usage()
		out.send(chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.ModelName, Choices: []chatChunkChoice{}, Usage: &u})
	}
	out.done()
}

// The phases of a streamed answer.
const (
	phaseStart = iota
	phaseReasoning
	phaseContent
	phaseTools // from the first <tool_call>: held until the end
)

// streamer turns the growing text into reasoning and content deltas,
// holding back any tail that may be the start of a tag or stop string.
type streamer struct {
	tools      bool
	stops      []string
	phase      int
	pos        int  // bytes of text consumed
	contentOut bool // some content was sent (leading newlines are dropped before)
}

func (st *streamer) step(text string, final bool) (reasoning, content string) {
	for {
		rest := text[st.pos:]
		switch st.phase {
		case phaseStart:
			if !final && len(rest) < len("<think>") && strings.HasPrefix("<think>", rest) {
				return
			}
			if strings.HasPrefix(rest, "<think>") {
				st.pos += len("<think>")
				st.phase = phaseReasoning
			} else {
				st.phase = phaseContent
			}
		case phaseReasoning:
			if i := strings.Index(rest, "</think>"); i >= 0 {
				reasoning += rest[:i]
				st.pos += i + len("</think>")
				st.phase = phaseContent
				continue
			}
			n := len(rest)
			if !final {
				n -= heldBack(rest, append([]string{"</think>"}, st.stops...))
			}
			reasoning += rest[:n]
			st.pos += n
			return
		case phaseContent:
			if !st.contentOut {
				trimmed := strings.TrimLeft(rest, "\n")
				st.pos += len(rest) - len(trimmed)
				rest = trimmed
			}
			if st.tools {
				if i := strings.Index(rest, "<tool_call>"); i >= 0 {
					content += strings.TrimRight(rest[:i], "\n")
					st.pos += i
					st.phase = phaseTools
					st.contentOut = st.contentOut || i > 0
					return
				}
			}
			n := len(rest)
			if !final {
				marks := st.stops
				if st.tools {
					marks = append([]string{"<tool_call>"}, marks...)
				}
				n -= heldBack(rest, marks)
			}
			content += rest[:n]
			st.pos += n
			st.contentOut = st.contentOut || n > 0
			return
		default:
			return
		}
	}
}

// heldBack is the length of the longest tail of s that is a proper prefix
// of one of marks.
func heldBack(s string, marks []string) int {
	best := 0
	for _, m := range marks {
		for k := min(len(m)-1, len(s)); k > best; k-- {
			if strings.HasSuffix(s, m[:k]) {
				best = k
				break
			}
		}
	}
	return best
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// RenderChat renders a chat request's messages and tools (OpenAI's JSON
// shapes) to the prompt text the server would generate from, generation
// prompt included: what a model trained to answer such requests (by
// supervised fine-tuning on demonstrations) must see.
func RenderChat(messages, tools json.RawMessage) (string, error) {
	var ms []chatMessage
	if err := json.Unmarshal(messages, &ms); err != nil {
		return "", fmt.Errorf("messages: %w", err)
	}
	var ts []json.RawMessage
	if len(tools) > 0 && string(tools) != "null" {
		if err := json.Unmarshal(tools, &ts); err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
	}
	msgs := make([]tokenizer.Message, len(ms))
	for i, m := range ms {
		var err error
		if msgs[i], err = m.toTemplate(); err != nil {
			return "", fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	return tokenizer.ApplyChatTemplate(msgs, ts, tokenizer.ChatOptions{AddGenerationPrompt: true})
}
