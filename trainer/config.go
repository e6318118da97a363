package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Config is the part of a Hugging Face config.json that a Qwen3 decoder
// needs. Unknown fields are kept in Extra and written back by Save.
type Config struct {
	Architectures         []string `json:"architectures,omitempty"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	RopeTheta             float64  `json:"rope_theta"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	HiddenAct             string   `json:"hidden_act"`
	AttentionBias         bool     `json:"attention_bias"`
	RopeScaling           any      `json:"rope_scaling"`
	TorchDType            string   `json:"torch_dtype,omitempty"`
	BOSTokenID            *int     `json:"bos_token_id,omitempty"`
	EOSTokenID            any      `json:"eos_token_id,omitempty"` // an id or a list of ids

	Extra map[string]json.RawMessage `json:"-"`
}

// known lists the JSON names of Config's typed fields.
var known = map[string]bool{}

func init() {
	var c Config
	b, _ := json.Marshal(c)
	var m map[string]any
	json.Unmarshal(b, &m)
	for k := range m {
		known[k] = true
	}
	for _, k := range []string{"architectures", "torch_dtype", "bos_token_id", "eos_token_id"} {
		known[k] = true
	}
}

// ReadConfig reads and checks dir/config.json, filling Qwen3's defaults for
// absent fields (head_dim = hidden/heads, rope_theta 1e6, eps 1e-6).
func ReadConfig(dir string) (Config, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(b)
}

// ParseConfig parses and checks a config.json.
func ParseConfig(b []byte) (Config, error) {
	c := Config{RopeTheta: 1e6, RMSNormEps: 1e-6, HiddenAct: "silu", MaxPositionEmbeddings: 40960}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("config.json: %w", err)
	}
	var all map[string]json.RawMessage
	json.Unmarshal(b, &all)
	for k, v := range all {
		if !known[k] {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	return c, c.Validate()
}

// Validate reports a configuration this package cannot run.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("config.json: "+f, a...) }
	switch {
	case c.ModelType != "qwen3":
		return bad("model_type %q is not supported (qwen3)", c.ModelType)
	case c.VocabSize <= 0 || c.HiddenSize <= 0 || c.IntermediateSize <= 0 || c.NumHiddenLayers <= 0:
		return bad("vocab_size, hidden_size, intermediate_size and num_hidden_layers must be positive")
	case c.NumAttentionHeads <= 0 || c.NumKeyValueHeads <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0:
		return bad("num_attention_heads %d must be a positive multiple of num_key_value_heads %d", c.NumAttentionHeads, c.NumKeyValueHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return bad("head_dim %d must be positive and even", c.HeadDim)
	case c.HiddenAct != "silu":
		return bad("hidden_act %q is not supported (silu)", c.HiddenAct)
	case c.AttentionBias:
		return bad("attention_bias is not supported")
	case c.RopeScaling != nil:
		return bad("rope_scaling is not supported")
	case c.RopeTheta <= 0 || c.RMSNormEps <= 0:
		return bad("rope_theta and rms_norm_eps must be positive")
	}
	return nil
}

// EOSTokenIDs lists eos_token_id, which may be one id or a list.
func (c Config) EOSTokenIDs() []int {
	switch v := c.EOSTokenID.(type) {
	case float64:
		return []int{int(v)}
	case []any:
		var ids []int
		for _, x := range v {
			if f, ok := x.(float64); ok {
				ids = append(ids, int(f))
			}
		}
		return ids
	}
	return nil
}

// MarshalJSON writes the typed fields and Extra.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	b, err := json.Marshal(plain(c))
	if err != nil || len(c.Extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	json.Unmarshal(b, &m)
	for k, v := range c.Extra {
		m[k] = v
	}
	return json.Marshal(m)
}

// WriteConfig writes dir/config.json.
func WriteConfig(dir string, c Config) error {
	if len(c.Architectures) == 0 {
		c.Architectures = []string{"Qwen3ForCausalLM"}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), append(b, '\n'), 0o644)
}

// NumParams is the number of parameters of the configuration.
func (c Config) NumParams() int {
	l := newLayout(c)
	return l.total
}
