// Package tokenizer is the Hugging Face byte-level BPE tokenizer of Qwen
// models, read from tokenizer.json: NFC normalisation, Qwen's pre-tokenizer
// split pattern (QwenPattern), GPT-2's byte-level alphabet, BPE merges by
// rank, and the added tokens (<|im_start|>, <tool_call>, ...) matched in the
// raw text before anything else. It also renders Qwen3's chat template,
// with tools, and parses the <tool_call> blocks of a model's answer (chat.go).
// Prune cuts a tokenizer down to the tokens a corpus needs (for models
// trained from scratch on a few tasks), as a valid tokenizer.json that
// encodes the corpus as the original does, ids remapped.
//
// A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// AddedToken is one entry of tokenizer.json's added_tokens.
type AddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
}

// Tokenizer encodes text to token ids and back.
type Tokenizer struct {
	vocab  map[string]int32
	tokens []string // by id; added tokens included
	merges map[[2]int32]merge
	added  []AddedToken // longest first
	byID   map[int32]AddedToken
	nfc    bool

	mu    sync.Mutex
	cache map[string][]int32
}

type merge struct{ rank, id int32 }

type fileJSON struct {
	AddedTokens []AddedToken `json:"added_tokens"`
	Normalizer  *struct {
		Type string `json:"type"`
	} `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type         string           `json:"type"`
		Vocab        map[string]int32 `json:"vocab"`
		Merges       json.RawMessage  `json:"merges"`
		ByteFallback bool             `json:"byte_fallback"`
	} `json:"model"`
}

// Load reads dir/tokenizer.json.
func Load(dir string) (*Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse reads a tokenizer.json. It accepts byte-level BPE with Qwen's split
// pattern (or none) and an NFC normaliser (or none), and says what else it
// met.
func Parse(b []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q is not supported (BPE)", f.Model.Type)
	}
	if f.Model.ByteFallback {
		return nil, fmt.Errorf("tokenizer.json: byte_fallback BPE is not supported")
	}
	t := &Tokenizer{vocab: f.Model.Vocab, merges: map[[2]int32]merge{}, byID: map[int32]AddedToken{}, cache: map[string][]int32{}}
	if f.Normalizer != nil {
		if f.Normalizer.Type != "NFC" {
			return nil, fmt.Errorf("tokenizer.json: normalizer %q is not supported (NFC)", f.Normalizer.Type)
		}
		t.nfc = true
	}
	if len(f.PreTokenizer) > 0 && !strings.Contains(string(f.PreTokenizer), `\\s+(?!\\S)`) {
		return nil, fmt.Errorf("tokenizer.json: pre_tokenizer is not Qwen's split pattern")
	}
	// merges: ["a b", ...] (older files) or [["a", "b"], ...]
	var pairs [][2]string
	var flat []string
	if err := json.Unmarshal(f.Model.Merges, &flat); err == nil {
		for _, m := range flat {
			a, b, ok := strings.Cut(m, " ")
			if !ok {
				return nil, fmt.Errorf("tokenizer.json: merge %q", m)
			}
			pairs = append(pairs, [2]string{a, b})
		}
	} else if err := json.Unmarshal(f.Model.Merges, &pairs); err != nil {
		return nil, fmt.Errorf("tokenizer.json: merges: %w", err)
	}
	for rank, p := range pairs {
		a, okA := t.vocab[p[0]]
		b, okB := t.vocab[p[1]]
		id, okM := t.vocab[p[0]+p[1]]
		if !okA || !okB || !okM {
			return nil, fmt.Errorf("tokenizer.json: merge %d (%q %q) names a token outside the vocabulary", rank, p[0], p[1])
		}
		if _, dup := t.merges[[2]int32{a, b}]; !dup {
			t.merges[[2]int32{a, b}] = merge{int32(rank), id}
		}
	}
	n := 0
	for _, id := range t.vocab {
		n = max(n, int(id)+1)
	}
	for _, a := range f.AddedTokens {
		n = max(n, int(a.ID)+1)
	}
	t.tokens = make([]string, n)
	for s, id := range t.vocab {
		t.tokens[id] = s
	}
	for _, a := range f.AddedTokens {
		if a.LStrip || a.RStrip || a.SingleWord {
			return nil, fmt.Errorf("tokenizer.json: added token %q: lstrip, rstrip and single_word are not supported", a.Content)
		}
		t.byID[a.ID] = a
		t.added = append(t.added, a)
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].Content) > len(t.added[j].Content) })
	for b := range 256 {
		if _, ok := t.vocab[string(byteToRune[b])]; !ok {
			return nil, fmt.Errorf("tokenizer.json: byte %#02x has no token", b)
		}
	}
	return t, nil
}

// VocabSize is one more than the largest id, added tokens included.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token, added or not, by its content.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	for _, a := range t.added {
		if a.Content == s {
			return a.ID, true
		}
	}
	id, ok := t.vocab[s]
	return id, ok
}

// IsSpecial says whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int32) bool { return t.byID[id].Special }

// Encode tokenizes text, matching added tokens (special or not) in it.
func (t *Tokenizer) Encode(text string) []int32 {
	var ids []int32
	for len(text) > 0 {
		at, tok := t.nextAdded(text)
		ids = t.encodeOrdinary(ids, text[:at])
		if tok == nil {
			break
		}
		ids = append(ids, tok.ID)
		text = text[at+len(tok.Content):]
	}
	return ids
}

// EncodeOrdinary tokenizes text as plain text: added tokens in it are not
// recognised.
func (t *Tokenizer) EncodeOrdinary(text string) []int32 { return t.encodeOrdinary(nil, text) }

// nextAdded finds the leftmost added token in s (the longest at that place).
func (t *Tokenizer) nextAdded(s string) (int, *AddedToken) {
	for i := 0; i < len(s); i++ {
		if s[i] != '<' && s[i] != '[' { // every added token of Qwen starts so; fall back below otherwise
			continue
		}
		for k := range t.added {
			if strings.HasPrefix(s[i:], t.added[k].Content) {
				return i, &t.added[k]
			}
		}
	}
	// tokens with other first bytes
	best, bi := -1, -1
	for k, a := range t.added {
		if a.Content == "" || a.Content[0] == '<' || a.Content[0] == '[' {
			continue
		}
		if i := strings.Index(s, a.Content); i >= 0 && (bi < 0 || i < bi) {
			best, bi = k, i
		}
	}
	if best < 0 {
		return len(s), nil
	}
	return bi, &t.added[best]
}

func (t *Tokenizer) encodeOrdinary(ids []int32, text string) []int32 {
	if text == "" {
		return ids
	}
	if t.nfc {
		text = norm.NFC.String(text)
	}
	splitQwen(text, func(piece string) {
		ids = append(ids, t.bpe(piece)...)
	})
	return ids
}

// bpe encodes one pre-tokenized piece, through a bounded cache.
func (t *Tokenizer) bpe(piece string) []int32 {
	t.mu.Lock()
	ids, ok := t.cache[piece]
	t.mu.Unlock()
	if ok {
		return ids
	}
	sym := t.merge(piece, nil)
	if len(piece) < 256 {
		t.mu.Lock()
		if len(t.cache) > 1<<16 {
			clear(t.cache)
		}
		t.cache[piece] = sym
		t.mu.Unlock()
	}
	return sym
}

// merge runs BPE's merges on one piece, calling seen (when not nil) with
// each merge's result.
func (t *Tokenizer) merge(piece string, seen func(id int32)) []int32 {
	rs := byteLevel(piece)
	sym := make([]int32, len(rs))
	for i, r := range rs {
		sym[i] = t.vocab[string(r)]
	}
	for len(sym) > 1 {
		best, at := merge{rank: -1}, -1
		for i := 0; i+1 < len(sym); i++ {
			if m, ok := t.merges[[2]int32{sym[i], sym[i+1]}]; ok && (at < 0 || m.rank < best.rank) {
				best, at = m, i
			}
		}
		if at < 0 {
			break
		}
		if seen != nil {
			seen(best.id)
		}
		// merge every non-overlapping occurrence of this pair, left to right
		out := sym[:0]
		a, b := sym[at], sym[at+1]
		for i := 0; i < len(sym); i++ {
			if i >= at && i+1 < len(sym) && sym[i] == a && sym[i+1] == b {
				out = append(out, best.id)
				i++
				continue
			}
			out = append(out, sym[i])
		}
		sym = out
	}
	return sym
}

// DecodeBytes turns ids back into bytes; special added tokens are left out
// when skipSpecial is set. Ids outside the vocabulary are skipped.
func (t *Tokenizer) DecodeBytes(ids []int32, skipSpecial bool) []byte {
	var out []byte
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) {
			continue
		}
		if a, ok := t.byID[id]; ok {
			if !(skipSpecial && a.Special) {
				out = append(out, a.Content...)
			}
			continue
		}
		out = unByteLevel(out, t.tokens[id])
	}
	return out
}

// Decode turns ids into text, invalid UTF-8 replaced by U+FFFD.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	return strings.ToValidUTF8(string(t.DecodeBytes(ids, skipSpecial)), "\uFFFD")
}

// CompleteUTF8 returns the length of b's longest prefix that does not end
// inside a multi-byte character, for streaming text as it is decoded.
func CompleteUTF8(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return len(b)
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-k:]) {
				return len(b) - k
			}
			return len(b)
		}
	}
	return len(b)
}
