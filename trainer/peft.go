package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/nextstate-rl/nextstate/trainer/backend"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
)

// The files of a PEFT adapter folder, as peft's save_pretrained writes them
// and PeftModel.from_pretrained reads them.
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
)

// adapterConfig is PEFT's adapter_config.json for a LoRA adapter.
type adapterConfig struct {
	PeftType          string         `json:"peft_type"`
	TaskType          string         `json:"task_type"`
	R                 int            `json:"r"`
	LoraAlpha         float64        `json:"lora_alpha"`
	LoraDropout       float64        `json:"lora_dropout"`
	TargetModules     any            `json:"target_modules"` // a list of names, or "all-linear"
	Bias              string         `json:"bias"`
	FanInFanOut       bool           `json:"fan_in_fan_out"`
	InferenceMode     bool           `json:"inference_mode"`
	InitLoraWeights   any            `json:"init_lora_weights"`
	UseRSLoRA         bool           `json:"use_rslora"`
	UseDoRA           bool           `json:"use_dora"`
	BaseModel         string         `json:"base_model_name_or_path"`
	ModulesToSave     any            `json:"modules_to_save"`
	LayersToTransform any            `json:"layers_to_transform"`
	LayersPattern     any            `json:"layers_pattern"`
	RankPattern       map[string]any `json:"rank_pattern"`
	AlphaPattern      map[string]any `json:"alpha_pattern"`
	Revision          any            `json:"revision"`
}

// parseAdapterConfig reads a LoRA adapter_config.json into a LoRAConfig,
// refusing what the adapters here cannot express.
func parseAdapterConfig(b []byte) (LoRAConfig, error) {
	var ac adapterConfig
	if err := json.Unmarshal(b, &ac); err != nil {
		return LoRAConfig{}, fmt.Errorf("%s: %w", AdapterConfigFile, err)
	}
	bad := func(f string, a ...any) (LoRAConfig, error) {
		return LoRAConfig{}, fmt.Errorf("%s: "+f, append([]any{AdapterConfigFile}, a...)...)
	}
	switch {
	case ac.PeftType != "LORA":
		return bad("peft_type %q is not supported (LORA)", ac.PeftType)
	case ac.UseRSLoRA || ac.UseDoRA:
		return bad("use_rslora and use_dora are not supported")
	case ac.Bias != "" && ac.Bias != "none":
		return bad("bias %q is not supported (none)", ac.Bias)
	case ac.FanInFanOut:
		return bad("fan_in_fan_out is not supported")
	case len(ac.RankPattern) > 0 || len(ac.AlphaPattern) > 0:
		return bad("rank_pattern and alpha_pattern are not supported")
	case ac.LayersToTransform != nil || ac.ModulesToSave != nil:
		return bad("layers_to_transform and modules_to_save are not supported")
	}
	c := LoRAConfig{Rank: ac.R, Alpha: ac.LoraAlpha}
	switch v := ac.TargetModules.(type) {
	case string:
		if v != "all-linear" {
			return bad("target_modules %q: give a list of projection names or \"all-linear\"", v)
		}
		c.Targets = slices.Clone(LoRATargets)
	case []any:
		for _, x := range v {
			s, _ := x.(string)
			c.Targets = append(c.Targets, s)
		}
	default:
		return bad("target_modules missing")
	}
	return c.check()
}

// SaveAdapter writes the model's LoRA adapters into dir (created if
// needed) in PEFT's layout: adapter_config.json and
// adapter_model.safetensors with PEFT's tensor names
// (base_model.model.model.layers.i.self_attn.q_proj.lora_A.weight, ...),
// which peft's PeftModel.from_pretrained loads unchanged. baseModel is
// written as base_model_name_or_path.
func (m *Model) SaveAdapter(dir, baseModel string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return m.saveAdapterLocked(dir, baseModel)
}

// saveAdapterLocked is SaveAdapter's work, m.mu held.
func (m *Model) saveAdapterLocked(dir, baseModel string) error {
	lo := m.lora
	if lo == nil {
		return fmt.Errorf("trainer: no LoRA adapters to save")
	}
	ac := adapterConfig{PeftType: "LORA", TaskType: "CAUSAL_LM", R: lo.cfg.Rank, LoraAlpha: lo.cfg.Alpha,
		TargetModules: lo.cfg.Targets, Bias: "none", InferenceMode: true, InitLoraWeights: true, BaseModel: baseModel,
		RankPattern: map[string]any{}, AlphaPattern: map[string]any{}}
	js, err := json.MarshalIndent(ac, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, AdapterConfigFile), append(js, '\n')); err != nil {
		return err
	}
	return safetensors.Write(filepath.Join(dir, AdapterWeightsFile), m.loraTensors(lo, ""), map[string]string{"format": "pt"})
}

// loraTensors describes the adapters for the safetensors writer.
func (m *Model) loraTensors(lo *lora, prefix string) []safetensors.Tensor {
	ts := make([]safetensors.Tensor, len(lo.lay.tensors))
	for i, t := range lo.lay.tensors {
		v := lo.view(i)
		ts[i] = safetensors.Tensor{Name: prefix + t.name, DType: safetensors.F32, Shape: t.shape, Fill: func(dst []float32) { m.Backend.Read(dst, v) }}
	}
	return ts
}

// LoadAdapter reads a PEFT LoRA folder (adapter_config.json,
// adapter_model.safetensors) into the model: the adapters it has, which
// must have the same configuration, or new ones.
func (m *Model) LoadAdapter(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err != nil {
		return err
	}
	cfg, err := parseAdapterConfig(b)
	if err != nil {
		return fmt.Errorf("trainer: %s: %w", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lo := m.lora
	if lo != nil && (lo.cfg.Rank != cfg.Rank || lo.cfg.Alpha != cfg.Alpha || !sameSet(lo.cfg.Targets, cfg.Targets)) {
		return fmt.Errorf("trainer: %s: adapter r=%d alpha=%g targets %v, the model's are r=%d alpha=%g targets %v", dir, cfg.Rank, cfg.Alpha, cfg.Targets, lo.cfg.Rank, lo.cfg.Alpha, lo.cfg.Targets)
	}
	fresh := lo == nil
	if fresh {
		if lo, err = m.newLoRA(cfg); err != nil {
			return err
		}
	}
	if err := m.readTensors(filepath.Join(dir, AdapterWeightsFile), &lo.lay, lo.arena, ""); err != nil {
		if fresh {
			m.Backend.Free(lo.arena)
		}
		return err
	}
	m.lora = lo
	return nil
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}

// readTensors reads every tensor of lay (looked up under prefix+name) from
// the safetensors file at path into arena, one at a time through the host.
func (m *Model) readTensors(path string, lay *layout, arena backend.Buf, prefix string) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readInto(m.Backend, f, path, lay, prefix, arenaViews(lay, arena))
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
