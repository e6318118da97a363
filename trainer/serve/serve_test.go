package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

var addedTokens = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "</tool_response>"}

// scripted is a tiny world: a byte-level tokenizer with a few whole-phrase
// tokens, and a bigram model whose greedy successor of each token is given,
// so that greedy generation follows a script.
type scripted struct {
	tok   *tokenizer.Tokenizer
	model *trainer.Model
	ids   map[string]int32
}

func byteLevelString(s string) string {
	// GPT-2's alphabet, as the tokenizer package builds it
	var b strings.Builder
	for _, c := range []byte(s) {
		r := rune(c)
		if !(c >= '!' && c <= '~' || c >= 0xA1 && c <= 0xAC || c >= 0xAE) {
			n := 0
			for x := 0; x < int(c); x++ {
				xb := byte(x)
				if !(xb >= '!' && xb <= '~' || xb >= 0xA1 && xb <= 0xAC || xb >= 0xAE) {
					n++
				}
			}
			r = rune(256 + n)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func newScripted(t *testing.T, phrases []string, next map[string]string) *scripted {
	t.Helper()
	vocab := map[string]int32{}
	ids := map[string]int32{}
	for b := range 256 {
		vocab[byteLevelString(string([]byte{byte(b)}))] = int32(b)
		ids[string([]byte{byte(b)})] = int32(b)
	}
	id := int32(256)
	for _, p := range phrases {
		vocab[byteLevelString(p)] = id
		ids[p] = id
		id++
	}
	var added []map[string]any
	for _, a := range addedTokens {
		added = append(added, map[string]any{"id": id, "content": a, "special": strings.HasPrefix(a, "<|"), "normalized": false})
		ids[a] = id
		id++
	}
	js, _ := json.Marshal(map[string]any{"added_tokens": added, "normalizer": map[string]string{"type": "NFC"},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}}})
	tok, err := tokenizer.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	V := int(id)
	eos := any(float64(ids["<|im_end|>"]))
	c := trainer.Config{ModelType: "qwen3", VocabSize: V, HiddenSize: V, IntermediateSize: 8, NumHiddenLayers: 1,
		NumAttentionHeads: 1, NumKeyValueHeads: 1, HeadDim: 8, MaxPositionEmbeddings: 1024, RMSNormEps: 1e-6,
		RopeTheta: 1e6, HiddenAct: "silu", EOSTokenID: eos}
	m, err := trainer.New(c, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	ones := make([]float32, V)
	for i := range ones {
		ones[i] = 1
	}
	embed, head := make([]float32, V*V), make([]float32, V*V)
	for v := range V {
		embed[v*V+v] = 1 // one-hot embeddings; the layer adds nothing (zero weights)
	}
	for from, to := range next {
		f, ok1 := ids[from]
		g, ok2 := ids[to]
		if !ok1 || !ok2 {
			t.Fatalf("script: %q -> %q: unknown token", from, to)
		}
		head[int(g)*V+int(f)] = 1
	}
	for name, v := range map[string][]float32{"model.layers.0.input_layernorm.weight": ones, "model.layers.0.post_attention_layernorm.weight": ones,
		"model.norm.weight": ones, "model.embed_tokens.weight": embed, "lm_head.weight": head} {
		if err := m.WriteTensor(name, v); err != nil {
			t.Fatal(err)
		}
	}
	return &scripted{tok: tok, model: m, ids: ids}
}

const toolBody = "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"

func testServer(t *testing.T) (*httptest.Server, *scripted) {
	sc := newScripted(t, []string{toolBody, "Hello", " world", "\nplan\n", "\n\nDone."}, map[string]string{
		"\n": "<tool_call>", "<tool_call>": toolBody, toolBody: "</tool_call>", "</tool_call>": "<|im_end|>",
		"A": "Hello", "Hello": " world", " world": "<|endoftext|>",
		"B": "<think>", "<think>": "\nplan\n", "\nplan\n": "</think>", "</think>": "\n\nDone.", "\n\nDone.": "<|im_end|>",
	})
	e := trainer.NewEngine(sc.model, trainer.EngineOptions{})
	ts := httptest.NewServer(New(e, sc.tok, "tiny"))
	t.Cleanup(func() { ts.Close(); e.Close() })
	return ts, sc
}

func post(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	js, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// events reads an SSE body into its JSON payloads; the last must be [DONE].
func events(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		out = append(out, m)
	}
	if !done {
		t.Fatal("stream without [DONE]")
	}
	return out
}

var weather = json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`)

func TestModels(t *testing.T) {
	ts, _ := testServer(t)
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Data []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&m)
	if len(m.Data) != 1 || m.Data[0].ID != "tiny" {
		t.Fatalf("%+v", m)
	}
}

func TestChatToolCalls(t *testing.T) {
	ts, sc := testServer(t)
	code, b := post(t, ts.URL+"/v1/chat/completions", map[string]any{
		"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Weather in Paris?"}},
		"tools": []json.RawMessage{weather}, "temperature": 0, "logprobs": true, "top_logprobs": 2, "return_token_ids": true,
	})
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var r chatResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	ch := r.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != nil {
		t.Fatalf("%s", b)
	}
	call := ch.Message.ToolCalls[0]
	var args string
	json.Unmarshal(call.Function.Arguments, &args)
	if call.Function.Name != "get_weather" || args != `{"city":"Paris"}` || call.Type != "function" {
		t.Fatalf("call %+v (%s)", call, args)
	}
	if len(ch.Logprobs.Content) != 4 || len(ch.TokenIDs) != 4 || r.Usage.CompletionTokens != 4 {
		t.Fatalf("logprobs/token ids/usage: %s", b)
	}
	for i, lp := range ch.Logprobs.Content {
		if len(lp.TopLogprobs) != 2 || lp.TopLogprobs[0].Logprob != lp.Logprob || lp.Logprob > 0 || math.IsNaN(float64(lp.Logprob)) {
			t.Fatalf("logprob %d: %+v", i, lp)
		}
	}
	if prompt := sc.tok.Decode(r.PromptTokenIDs, false); !strings.Contains(prompt, "<tools>\n{\"type\": \"function\"") || !strings.HasSuffix(prompt, "<|im_start|>assistant\n") {
		t.Fatalf("prompt %q", prompt)
	}
}

func TestChatStreamToolCalls(t *testing.T) {
	ts, _ := testServer(t)
	code, b := post(t, ts.URL+"/v1/chat/completions", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "text", "text": "Weather?"}}}},
		"tools":    []json.RawMessage{weather}, "temperature": 0, "stream": true, "stream_options": map[string]bool{"include_usage": true},
	})
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	evs := events(t, b)
	var finish string
	var calls []any
	var usage map[string]any
	for _, e := range evs {
		if u, ok := e["usage"].(map[string]any); ok {
			usage = u
		}
		for _, c := range e["choices"].([]any) {
			c := c.(map[string]any)
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
			d := c["delta"].(map[string]any)
			if tc, ok := d["tool_calls"].([]any); ok {
				calls = append(calls, tc...)
			}
			if s, ok := d["content"].(string); ok && s != "" {
				t.Errorf("content streamed: %q", s)
			}
		}
	}
	if finish != "tool_calls" || len(calls) != 1 || usage["completion_tokens"].(float64) != 4 {
		t.Fatalf("finish %q calls %v usage %v", finish, calls, usage)
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "get_weather" || fn["arguments"] != `{"city":"Paris"}` {
		t.Fatalf("call %v", calls[0])
	}
}

func TestCompletions(t *testing.T) {
	ts, sc := testServer(t)
	code, b := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "A", "temperature": 0, "logprobs": 1, "max_tokens": 10})
	var r completionResponse
	json.Unmarshal(b, &r)
	if code != 200 || r.Choices[0].Text != "Hello world" || *r.Choices[0].FinishReason != "stop" || len(r.Choices[0].Logprobs.Tokens) != 3 {
		t.Fatalf("%d %s", code, b)
	}
	// token-id prompt and a stop string
	code, b = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": []int32{sc.ids["A"]}, "temperature": 0, "stop": " wor"})
	json.Unmarshal(b, &r)
	if code != 200 || r.Choices[0].Text != "Hello" || *r.Choices[0].FinishReason != "stop" {
		t.Fatalf("%d %s", code, b)
	}
	// max_tokens cuts
	code, b = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "A", "temperature": 0, "max_tokens": 1})
	json.Unmarshal(b, &r)
	if r.Choices[0].Text != "Hello" || *r.Choices[0].FinishReason != "length" {
		t.Fatalf("%s", b)
	}
	// streaming: the chunks add up to the text
	code, b = post(t, ts.URL+"/v1/completions", map[string]any{"prompt": "B", "temperature": 0, "stream": true})
	var text strings.Builder
	for _, e := range events(t, b) {
		text.WriteString(e["choices"].([]any)[0].(map[string]any)["text"].(string))
	}
	if text.String() != "<think>\nplan\n</think>\n\nDone." {
		t.Fatalf("streamed %q", text.String())
	}
}

func TestBadRequests(t *testing.T) {
	ts, _ := testServer(t)
	msgs := []map[string]any{{"role": "user", "content": "x"}}
	for name, body := range map[string]any{
		"other model":  map[string]any{"model": "gpt-4", "messages": msgs},
		"n=2":          map[string]any{"n": 2, "messages": msgs},
		"no messages":  map[string]any{"messages": []any{}},
		"bad role":     map[string]any{"messages": []map[string]any{{"role": "wizard", "content": "x"}}},
		"temperature":  map[string]any{"messages": msgs, "temperature": 3},
		"top_logprobs": map[string]any{"messages": msgs, "logprobs": true, "top_logprobs": 50},
		"image part":   map[string]any{"messages": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "image_url"}}}}},
	} {
		if code, b := post(t, ts.URL+"/v1/chat/completions", body); code != 400 || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %d %s", name, code, b)
		}
	}
	if code, _ := post(t, ts.URL+"/v1/chat/completions", "{"); code != 400 {
		t.Errorf("bad JSON: %d", code)
	}
	if code, b := post(t, ts.URL+"/v1/completions", map[string]any{"prompt": strings.Repeat("x", 1100)}); code != 400 {
		t.Errorf("prompt over the context: %d %s", code, b)
	}
	resp, _ := http.Get(ts.URL + "/v1/chat/completions")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET chat: %d", resp.StatusCode)
	}
}

func TestStreamer(t *testing.T) {
	text := "<think>\nplan\n</think>\n\nHello there <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"
	st := &streamer{tools: true, stops: []string{"STOP"}}
	var reasoning, content string
	for i := 1; i <= len(text); i++ {
		r, c := st.step(text[:i], false)
		reasoning += r
		content += c
	}
	r, c := st.step(text, true)
	reasoning, content = reasoning+r, content+c
	if reasoning != "\nplan\n" || content != "Hello there " || st.phase != phaseTools {
		t.Fatalf("reasoning %q content %q phase %d", reasoning, content, st.phase)
	}
	if a := tokenizer.ParseAnswer(text[st.pos:]); len(a.ToolCalls) != 1 {
		t.Fatalf("tail %q", text[st.pos:])
	}
	if n := heldBack("abc <tool", []string{"<tool_call>"}); n != 5 {
		t.Fatalf("heldBack = %d", n)
	}
	if a := splitAnswer("<think>x</think>ok <tool_call>", false); a.Content != "ok <tool_call>" || a.Reasoning != "x" {
		t.Fatalf("splitAnswer without tools: %+v", a)
	}
	_ = fmt.Sprint
}
