package service

import (
	"slices"
	"testing"

	"github.com/nextstate-rl/nextstate/trainer"
)

// Full-weight versions are copied into the arena of a version gone, never
// into one that is held: a leased version's weights and checksum do not
// change over later optimizer steps and publishes, every held version has
// memory of its own, and each version's checksum is its weights' and was
// the policy's when it was published.
func TestPublishRecycles(t *testing.T) {
	m := newModel(t, 64, 3, 0.5)
	s := newService(t, m, Options{KeepVersions: 2})
	prompt := []int32{1, 2, 3, 4}
	step := func() {
		t.Helper()
		data := sampled(t, s, prompt, 4, 1, []float32{1, -1})
		if _, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: LossConfig{Terms: []TermConfig{{Kind: "sft", Weight: 1}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.OptimStep(ctx, AdamParams{LR: 0.05}); err != nil {
			t.Fatal(err)
		}
	}
	weights := func(mm *trainer.Model) []float32 {
		t.Helper()
		var out []float32
		for _, ti := range mm.Tensors() {
			v, err := mm.ReadTensor(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v...)
		}
		return out
	}
	step()
	v1, err := s.SaveWeightsForSampler(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := s.Acquire(v1.Version)
	if err != nil {
		t.Fatal(err)
	}
	held, want := lease.Engine.Model(), weights(lease.Engine.Model())
	arenas := map[any]int{} // each arena a version used, by version
	reused := false
	for i := range 8 {
		step()
		v, err := s.SaveWeightsForSampler(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Checksum != m.Checksum() {
			t.Fatalf("version %d's checksum %s, the policy's weights' %s", v.Version, v.Checksum, m.Checksum())
		}
		s.vs.mu.Lock()
		live := map[any]int{m.Params.Mem(): -1}
		for _, p := range s.vs.all {
			if q, ok := live[p.model.Params.Mem()]; ok {
				t.Fatalf("versions %d and %d (-1: the policy) share their weights' memory", q, p.Version.Version)
			}
			live[p.model.Params.Mem()] = p.Version.Version
			if p.Version.Version == v.Version {
				_, reused = arenas[p.model.Params.Mem()]
				arenas[p.model.Params.Mem()] = v.Version
			}
		}
		s.vs.mu.Unlock()
		if got := s.vs.all[len(s.vs.all)-1].model.Checksum(); got != v.Checksum {
			t.Fatalf("version %d's weights hash to %s, its checksum is %s", v.Version, got, v.Checksum)
		}
		if i < 4 {
			if held.Checksum() != v1.Checksum || !slices.Equal(weights(held), want) || lease.Version != v1 {
				t.Fatalf("after %d more steps and versions, the leased version 1 changed", i+1)
			}
		} else if i == 4 {
			lease.Release() // version 1 goes, and its arena becomes the spare
		}
	}
	if !reused {
		t.Fatal("no version was copied into the arena of one gone")
	}
	// versions 2 and 3 are allocated (1 is leased), 4 on take 2's and
	// 3's arenas, and 1's once released
	if len(arenas) > 3 {
		t.Fatalf("the 8 versions after version 1 used %d arenas, want 3", len(arenas))
	}
}
