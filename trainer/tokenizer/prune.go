package tokenizer

import (
	"encoding/json"
	"slices"
	"sort"

	"golang.org/x/text/unicode/norm"
)

// Pruned is a tokenizer cut down to the tokens a corpus needs, for models
// trained from scratch on a narrow set of tasks: the same pre-tokenizer,
// byte-level alphabet, merges and added tokens, with fewer ids.
type Pruned struct {
	// JSON is the pruned tokenizer.json, loadable by Parse and by Hugging
	// Face's tokenizers.
	JSON []byte
	// NewID maps an id of the original tokenizer to the pruned one's
	// (absent: pruned away); OldID is its inverse, by new id.
	NewID map[int32]int32
	OldID []int32
}

// Prune keeps the 256 byte tokens, every token that encoding the corpus
// passes through (the final ids and each intermediate merge on the way to
// them), the merges among kept tokens in their original order, and every
// added token; ids are renumbered from 0 in the original order, the added
// tokens after the vocabulary. The pruned tokenizer encodes each text of
// the corpus to the same tokens (mapped by NewID) as the original, and any
// other text still to a sequence that decodes back to it (from bytes up,
// with the merges it kept).
func (t *Tokenizer) Prune(corpus []string) (*Pruned, error) {
	keep := map[int32]bool{}
	for b := range 256 {
		keep[t.vocab[string(byteToRune[b])]] = true
	}
	for _, text := range corpus {
		t.pieces(text, func(piece string) {
			for _, id := range t.merge(piece, func(id int32) { keep[id] = true }) {
				keep[id] = true
			}
		})
	}
	for _, a := range t.added {
		delete(keep, a.ID) // added tokens are renumbered after the vocabulary
	}
	old := make([]int32, 0, len(keep))
	for id := range keep {
		old = append(old, id)
	}
	slices.Sort(old)
	p := &Pruned{NewID: map[int32]int32{}}
	vocab := map[string]int32{}
	for _, id := range old {
		p.NewID[id] = int32(len(p.OldID))
		vocab[t.tokens[id]] = int32(len(p.OldID))
		p.OldID = append(p.OldID, id)
	}
	type rankedPair struct {
		rank int32
		a, b string
	}
	var merges []rankedPair
	for pair, m := range t.merges {
		if keep[pair[0]] && keep[pair[1]] && keep[m.id] {
			merges = append(merges, rankedPair{m.rank, t.tokens[pair[0]], t.tokens[pair[1]]})
		}
	}
	sort.Slice(merges, func(i, j int) bool { return merges[i].rank < merges[j].rank })
	pairs := make([][2]string, len(merges))
	for i, m := range merges {
		pairs[i] = [2]string{m.a, m.b}
	}
	added := slices.Clone(t.added)
	sort.Slice(added, func(i, j int) bool { return added[i].ID < added[j].ID })
	for i := range added {
		p.NewID[added[i].ID] = int32(len(p.OldID))
		p.OldID = append(p.OldID, added[i].ID)
		added[i].ID = p.NewID[added[i].ID]
	}
	f := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]string{"Regex": QwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"normalizer":     nil,
		"truncation":     nil,
		"padding":        nil,
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": pairs, "byte_fallback": false,
			"fuse_unk": false, "ignore_merges": false, "dropout": nil, "unk_token": nil,
			"continuing_subword_prefix": "", "end_of_word_suffix": ""},
	}
	if t.nfc {
		f["normalizer"] = map[string]string{"type": "NFC"}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	p.JSON = b
	return p, nil
}

// pieces calls f with every pre-tokenized piece of text's plain parts, as
// Encode cuts them (added tokens left out).
func (t *Tokenizer) pieces(text string, f func(piece string)) {
	for len(text) > 0 {
		at, tok := t.nextAdded(text)
		plain := text[:at]
		if t.nfc {
			plain = norm.NFC.String(plain)
		}
		splitQwen(plain, f)
		if tok == nil {
			return
		}
		text = text[at+len(tok.Content):]
	}
}
