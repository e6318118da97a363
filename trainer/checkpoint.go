package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/trainer/backend"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
)

// The files of a training state (see SaveState).
const (
	StateFile     = "trainer_state.json"
	OptimizerFile = "optimizer.safetensors"
	LatestFile    = "latest"
)

// trainerState is trainer_state.json.
type trainerState struct {
	Version   int         `json:"version"`
	Step      int         `json:"step"`
	RNG       []byte      `json:"rng"` // the training's PCG, binary-marshalled
	Trainable []string    `json:"trainable"`
	Base      bool        `json:"base_weights"` // model.safetensors holds the base
	LoRA      *LoRAConfig `json:"lora,omitempty"`
}

// Rand is the training's random source (seeded by TrainOptions.Seed), for
// whatever the loop draws (data order, sampling); its state is part of the
// training state, so a resumed run draws what the straight run would have.
func (t *Training) Rand() *rand.Rand { return t.rand }

// trainableNames lists the trainable tensors of every group.
func (t *Training) trainableNames() []string {
	var out []string
	for _, g := range t.groups() {
		for i, tn := range g.lay.tensors {
			if g.trainable[i] {
				out = append(out, tn.name)
			}
		}
	}
	return out
}

// SaveState writes the training state as dir/step-NNNNNNNN (and points
// dir/latest at it), keeping the newest keep states (0: all). A state is
// written under a temporary name and renamed into place, and latest is
// replaced by a rename, so a crash leaves the previous state intact:
//
//	step-NNNNNNNN/config.json, model.safetensors   the whole model in the Hugging Face layout,
//	                                               when base parameters are trained (serve-model,
//	                                               transformers and vLLM load the folder)
//	step-NNNNNNNN/adapter_config.json,             the LoRA adapters in PEFT's layout, with them
//	              adapter_model.safetensors
//	step-NNNNNNNN/optimizer.safetensors            AdamW's exp_avg.NAME and exp_avg_sq.NAME of
//	                                               every trainable tensor (once a step has run)
//	step-NNNNNNNN/trainer_state.json               step, RNG state, the trainable tensors' names
//
// The schedule's position is the step. Gradients are not saved: call
// SaveState between steps (it fails while ForwardBackward's gradients wait
// for a Step).
func (t *Training) SaveState(dir string, keep int) (string, error) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.pending > 0 {
		return "", errors.New("trainer: SaveState with gradients waiting for a Step")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := fmt.Sprintf("step-%08d", t.step)
	final, tmp := filepath.Join(dir, name), filepath.Join(dir, name+".tmp")
	os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		return "", err
	}
	st := trainerState{Version: 1, Step: t.step, RNG: rng, Trainable: t.trainableNames(), Base: t.base.anyTrainable()}
	if st.Base {
		if err := t.m.saveLocked(tmp, safetensors.F32, 0); err != nil {
			return "", err
		}
	}
	if t.adapters != nil {
		c := t.m.lora.cfg
		st.LoRA = &c
		if err := t.m.saveAdapterLocked(tmp, ""); err != nil {
			return "", err
		}
	}
	var moments []safetensors.Tensor
	for _, g := range t.groups() {
		if g.mw == nil {
			continue
		}
		for i, tn := range g.lay.tensors {
			if g.trainable[i] {
				mv, vv := g.mw[i], g.vw[i]
				moments = append(moments,
					safetensors.Tensor{Name: "exp_avg." + tn.name, DType: safetensors.F32, Shape: tn.shape, Fill: func(d []float32) { t.be.Read(d, mv) }},
					safetensors.Tensor{Name: "exp_avg_sq." + tn.name, DType: safetensors.F32, Shape: tn.shape, Fill: func(d []float32) { t.be.Read(d, vv) }})
			}
		}
	}
	if moments != nil {
		if err := safetensors.Write(filepath.Join(tmp, OptimizerFile), moments, nil); err != nil {
			return "", err
		}
	}
	js, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, StateFile), append(js, '\n'), 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(final)
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	if err := writeFileAtomic(filepath.Join(dir, LatestFile), []byte(name+"\n")); err != nil {
		return "", err
	}
	if keep > 0 {
		pruneStates(dir, keep)
	}
	return final, nil
}

// pruneStates removes all but the newest keep step-* folders of dir.
func pruneStates(dir string, keep int) {
	ents, _ := os.ReadDir(dir)
	var steps []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") && !strings.HasSuffix(e.Name(), ".tmp") {
			steps = append(steps, e.Name())
		}
	}
	sort.Strings(steps)
	for _, s := range steps[:max(0, len(steps)-keep)] {
		os.RemoveAll(filepath.Join(dir, s))
	}
}

// stateDir resolves dir to a state folder: dir itself when it holds a
// trainer_state.json, else the one dir/latest names.
func stateDir(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err == nil {
		return dir, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, LatestFile))
	if err != nil {
		return "", fmt.Errorf("trainer: %s holds no training state (%s or %s): %w", dir, StateFile, LatestFile, err)
	}
	return filepath.Join(dir, strings.TrimSpace(string(b))), nil
}

// LoadState resumes from a state SaveState wrote (dir, or dir/latest's):
// the trained weights (the base's, the adapters'), the AdamW moments, the
// step and the RNG. The training must train the same tensors; for LoRA the
// model must already have adapters of the saved configuration (AddLoRA or
// LoadAdapter before NewTraining), on the base it was trained from.
func (t *Training) LoadState(dir string) error {
	sd, err := stateDir(dir)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(sd, StateFile))
	if err != nil {
		return err
	}
	var st trainerState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("trainer: %s: %w", filepath.Join(sd, StateFile), err)
	}
	if st.Version != 1 {
		return fmt.Errorf("trainer: %s: version %d is not supported (1)", sd, st.Version)
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.pending > 0 {
		return errors.New("trainer: LoadState with gradients waiting for a Step")
	}
	if names := t.trainableNames(); !slices.Equal(names, st.Trainable) {
		return fmt.Errorf("trainer: %s trained %d tensors, this training %d: they must be the same", sd, len(st.Trainable), len(names))
	}
	if (st.LoRA != nil) != (t.adapters != nil) {
		return fmt.Errorf("trainer: %s: LoRA in the state %v, in this training %v", sd, st.LoRA != nil, t.adapters != nil)
	}
	if st.Base {
		if err := t.m.loadTensors(sd, ""); err != nil {
			return err
		}
	}
	if t.adapters != nil {
		lo := t.m.lora
		if lo.cfg.Rank != st.LoRA.Rank || lo.cfg.Alpha != st.LoRA.Alpha || !sameSet(lo.cfg.Targets, st.LoRA.Targets) {
			return fmt.Errorf("trainer: %s: adapters r=%d alpha=%g %v, the model's r=%d alpha=%g %v", sd, st.LoRA.Rank, st.LoRA.Alpha, st.LoRA.Targets, lo.cfg.Rank, lo.cfg.Alpha, lo.cfg.Targets)
		}
		if err := t.m.readTensors(filepath.Join(sd, AdapterWeightsFile), &lo.lay, lo.arena, ""); err != nil {
			return err
		}
	}
	if err := t.loadMoments(sd, st.Step); err != nil {
		return err
	}
	if err := t.pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("trainer: %s: rng: %w", sd, err)
	}
	t.step = st.Step
	return nil
}

// loadMoments reads optimizer.safetensors (absent before the first step).
func (t *Training) loadMoments(sd string, step int) error {
	path := filepath.Join(sd, OptimizerFile)
	f, err := safetensors.Open(path)
	if errors.Is(err, os.ErrNotExist) && step == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for _, g := range t.groups() {
		if g.mw == nil {
			g.mom, g.mw = g.compact(t.be)
			g.vel, g.vw = g.compact(t.be)
		}
		for prefix, views := range map[string][]backend.Buf{"exp_avg.": g.mw, "exp_avg_sq.": g.vw} {
			if err := readInto(t.be, f, path, g.lay, prefix, func(i int) backend.Buf { return views[i] }); err != nil {
				return err
			}
		}
	}
	return nil
}
