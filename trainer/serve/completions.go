package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/nextstate-rl/nextstate/trainer"
)

// promptIDs reads a completion prompt: a string, token ids, or a list of one
// of either.
func (s *Server) promptIDs(raw json.RawMessage) ([]int32, error) {
	raw = bytes.TrimSpace(raw)
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return s.Tokenizer.Encode(text), nil
	}
	var ids []int32
	if err := json.Unmarshal(raw, &ids); err == nil {
		return ids, nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil && len(texts) == 1 {
		return s.Tokenizer.Encode(texts[0]), nil
	}
	var idLists [][]int32
	if err := json.Unmarshal(raw, &idLists); err == nil && len(idLists) == 1 {
		return idLists[0], nil
	}
	return nil, errors.New("prompt must be a string, a list of token ids, or a list of one of either")
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var cr completionRequest
	if !s.decode(w, r, &cr) {
		return
	}
	if cr.Echo {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "echo is not supported")
		return
	}
	ids, err := s.promptIDs(cr.Prompt)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	maxTok := cr.MaxTokens
	if maxTok == nil {
		sixteen := 16 // OpenAI's default for completions
		maxTok = &sixteen
	}
	top := 0
	if cr.Logprobs != nil {
		top = *cr.Logprobs
	}
	req, err := s.request(params{model: cr.Model, temperature: cr.Temperature, topP: cr.TopP, topK: cr.TopK, maxTokens: maxTok, seed: cr.Seed, n: cr.N, stop: cr.Stop}, ids, top)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	g := &generation{s: s, stops: cr.Stop}
	if err := g.start(w, r, req); err != nil {
		s.engineError(w, err)
		return
	}
	defer g.cancel()
	id, created := newID("cmpl-"), time.Now().Unix()
	var promptIDs []int32
	if cr.ReturnTokenIDs {
		promptIDs = ids
	}
	resp := func(ch completionChoice, u *usage) completionResponse {
		return completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.ModelName, Choices: []completionChoice{ch}, Usage: u, PromptTokenIDs: promptIDs}
	}
	if !cr.Stream {
		g.consume(nil)
		finish := g.finish()
		ch := completionChoice{Text: g.text, FinishReason: &finish}
		if cr.Logprobs != nil {
			ch.Logprobs = s.completionLogprobs(g.tokens)
		}
		if cr.ReturnTokenIDs {
			ch.TokenIDs = g.ids()
		}
		u := g.usage()
		writeJSON(w, http.StatusOK, resp(ch, &u))
		return
	}
	out := startSSE(w)
	sent := 0
	err = g.consume(func(t trainer.Sampled) error {
		n := len(g.text) - heldBack(g.text, cr.Stop)
		if n < sent {
			n = sent
		}
		ch := completionChoice{Text: g.text[sent:n]}
		sent = n
		if cr.Logprobs != nil {
			ch.Logprobs = s.completionLogprobs([]trainer.Sampled{t})
		}
		if cr.ReturnTokenIDs {
			ch.TokenIDs = []int32{t.ID}
		}
		promptIDs = nil
		return out.send(resp(ch, nil))
	})
	if err == nil {
		finish := g.finish()
		out.send(resp(completionChoice{Text: g.text[min(sent, len(g.text)):], FinishReason: &finish}, nil))
		if cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage {
			u := g.usage()
			out.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.ModelName, Choices: []completionChoice{}, Usage: &u})
		}
	}
	out.done()
}

func (s *Server) completionLogprobs(toks []trainer.Sampled) *completionLogprobs {
	lp := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	off := 0
	for _, t := range toks {
		text, _ := s.tokenText(t.ID)
		lp.Tokens = append(lp.Tokens, text)
		lp.TokenLogprobs = append(lp.TokenLogprobs, t.Logprob)
		top := map[string]float32{}
		for _, a := range t.Top {
			at, _ := s.tokenText(a.ID)
			if _, dup := top[at]; !dup {
				top[at] = a.Logprob
			}
		}
		lp.TopLogprobs = append(lp.TopLogprobs, top)
		lp.TextOffset = append(lp.TextOffset, off)
		off += len(text)
	}
	return lp
}
