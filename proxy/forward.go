package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
)

// Session keys a client may put in the body instead of headers; they are
// removed before the request goes upstream.
var bodyKeys = []string{"session_id", "turn_type", "session_done"}

// turnMeta is what a request says about its session.
type turnMeta struct {
	session string
	side    bool
	done    bool
	user    string
}

// chatRequest is the part of a chat request the proxy reads.
type chatRequest struct {
	Messages []rl.ChatMessage `json:"messages"`
	Stream   bool             `json:"stream"`
	User     string           `json:"user"`
}

// readMeta reads the session keys from the headers and the body. It
// returns the body to forward: the same bytes when the body holds no
// session key, else re-encoded without them.
func readMeta(h http.Header, body []byte) (turnMeta, []byte, error) {
	m := turnMeta{session: h.Get("X-Session-Id"), user: h.Get("X-User-Id")}
	tt := h.Get("X-Turn-Type")
	done := h.Get("X-Session-Done")
	has := false
	for _, k := range bodyKeys {
		if bytes.Contains(body, []byte(`"`+k+`"`)) {
			has = true
		}
	}
	if has {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return m, nil, errBadBody(err)
		}
		found := false
		for _, k := range bodyKeys {
			raw, ok := obj[k]
			if !ok {
				continue
			}
			found = true
			delete(obj, k)
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return m, nil, errBadBody(err)
			}
			s := strings.Trim(string(raw), `"`)
			switch k {
			case "session_id":
				if m.session == "" {
					m.session = s
				}
			case "turn_type":
				if tt == "" {
					tt = s
				}
			case "session_done":
				if done == "" {
					done = s
				}
			}
		}
		if found {
			var err error
			if body, err = json.Marshal(obj); err != nil {
				return m, nil, errBadBody(err)
			}
		}
	}
	switch strings.ToLower(tt) {
	case "", "main":
	case "side":
		m.side = true
	default:
		return m, nil, &clientError{"X-Turn-Type (turn_type) " + tt + ": want main or side"}
	}
	switch strings.ToLower(done) {
	case "", "0", "false":
	case "1", "true":
		m.done = true
	default:
		return m, nil, &clientError{"X-Session-Done (session_done) " + done + ": want true or false"}
	}
	return m, body, nil
}

type clientError struct{ msg string }

func (e *clientError) Error() string { return e.msg }

func errBadBody(err error) error {
	return &clientError{"request body: want a JSON object (an OpenAI chat request): " + err.Error()}
}

// answer is the policy's reply as assembled from the response.
type answer struct {
	content     strings.Builder
	toolCalls   []gym.ToolCall
	promptIDs   []int
	responseIDs []int
	logProbs    []float64
	version     *int // the upstream's X-Weight-Version (nextstate's trainer), when it said
	ok          bool // a choice was seen
}

// choice is one choice of a response or of a stream chunk (message for
// the former, delta for the latter). token_ids and prompt_token_ids are
// vLLM's (return_token_ids).
type choice struct {
	Index   int      `json:"index"`
	Message *delta   `json:"message"`
	Delta   *delta   `json:"delta"`
	IDs     []int    `json:"token_ids"`
	Logs    *logprob `json:"logprobs"`
}

type delta struct {
	Content   *string `json:"content"`
	ToolCalls []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type logprob struct {
	Content []struct {
		Logprob float64 `json:"logprob"`
	} `json:"content"`
}

type chunk struct {
	Choices   []choice `json:"choices"`
	PromptIDs []int    `json:"prompt_token_ids"`
}

// add takes one response object or stream chunk (choice 0 only).
func (a *answer) add(raw []byte) {
	var c chunk
	if json.Unmarshal(raw, &c) != nil {
		return
	}
	if len(c.PromptIDs) > 0 {
		a.promptIDs = c.PromptIDs
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		a.ok = true
		d := ch.Delta
		if d == nil {
			d = ch.Message
		}
		if d != nil {
			if d.Content != nil {
				a.content.WriteString(*d.Content)
			}
			for k, tc := range d.ToolCalls {
				i := tc.Index
				if ch.Message != nil {
					i = k
				}
				for len(a.toolCalls) <= i {
					a.toolCalls = append(a.toolCalls, gym.ToolCall{Type: "function"})
				}
				t := &a.toolCalls[i]
				if tc.ID != "" {
					t.ID = tc.ID
				}
				t.Function.Name += tc.Function.Name
				t.Function.Arguments += tc.Function.Arguments
			}
		}
		a.responseIDs = append(a.responseIDs, ch.IDs...)
		if ch.Logs != nil {
			for _, l := range ch.Logs.Content {
				a.logProbs = append(a.logProbs, l.Logprob)
			}
		}
	}
}

// text is the answer as one string: the content, then each tool call as
// <tool_call>{"name": ..., "arguments": ...}</tool_call> on its own line.
func (a *answer) text() string {
	s := a.content.String()
	for _, tc := range a.toolCalls {
		b, _ := json.Marshal(map[string]any{"name": tc.Function.Name, "arguments": json.RawMessage(argsJSON(tc.Function.Arguments))})
		if s != "" {
			s += "\n"
		}
		s += "<tool_call>" + string(b) + "</tool_call>"
	}
	return s
}

func argsJSON(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// sseParser splits a server-sent-event stream into its data payloads.
type sseParser struct {
	buf []byte
	ans *answer
}

func (p *sseParser) write(b []byte) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimRight(p.buf[:i], "\r")
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if len(data) > 0 && data[0] == '{' {
				p.ans.add(data)
			}
		}
		p.buf = p.buf[i+1:]
	}
}
