package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

type benchModelFlags struct {
	model                            string
	prefill, prompt, decode, repeat  int
	batches                          string
	torch, asJSON                    bool
	torchThreads                     int
	hidden, layers, inter, vocab, hd int
}

// BenchModelReport is what `bench model` measures; --json prints it.
type BenchModelReport struct {
	Params       int                `json:"params"`
	Config       string             `json:"config"`
	Backend      string             `json:"backend"`
	Threads      int                `json:"threads"`
	Prefill      int                `json:"prefill_tokens"`
	PrefillTPS   float64            `json:"prefill_tokens_per_s"`
	DecodeTPS    map[string]float64 `json:"decode_tokens_per_s"` // by batch size
	Torch        *torchBench        `json:"torch,omitempty"`
	TorchSkipped string             `json:"torch_skipped,omitempty"`
}

type torchBench struct {
	Version    string             `json:"torch"`
	Threads    int                `json:"threads"`
	PrefillTPS float64            `json:"prefill_tokens_per_s"`
	DecodeTPS  map[string]float64 `json:"decode"`
}

func newBenchModel() *cobra.Command {
	var f benchModelFlags
	c := &cobra.Command{
		Use:   "model",
		Short: "Measure the CPU trainer's prefill and decode speed, side by side with PyTorch",
		Long: `Measure prefill tokens/s (one sequence of --prefill tokens) and decode tokens/s
(greedy, --decode steps after a --prompt-token prompt, per batch size in --batches)
of a Qwen3 model on the CPU backend, then the same on the same weights with the plain
PyTorch reference (Debian's python3-torch) in the same run, and print the ratios.
Without --model, a random ~48M-parameter configuration is written to a temporary
folder (hidden 512, 10 layers, 8 query and 4 key/value heads of 64, MLP 1536,
vocabulary 32000, tied embeddings). Each number is the best of --repeat runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchModel(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.model, "model", "", "model folder (default: a random configuration)")
	fl.IntVar(&f.prefill, "prefill", 256, "prefill length")
	fl.IntVar(&f.prompt, "prompt", 32, "prompt length before decoding")
	fl.IntVar(&f.decode, "decode", 64, "decode steps")
	fl.StringVar(&f.batches, "batches", "1,8", "decode batch sizes")
	fl.IntVar(&f.repeat, "repeat", 3, "runs per measurement (the best counts)")
	fl.BoolVar(&f.torch, "torch", true, "also run the PyTorch reference when python3-torch is installed")
	fl.IntVar(&f.torchThreads, "torch-threads", 0, "PyTorch threads (0: as many as GOMAXPROCS)")
	fl.IntVar(&f.hidden, "hidden", 512, "random configuration: hidden size")
	fl.IntVar(&f.layers, "layers", 10, "random configuration: layers")
	fl.IntVar(&f.inter, "intermediate", 1536, "random configuration: MLP size")
	fl.IntVar(&f.vocab, "vocab", 32000, "random configuration: vocabulary")
	fl.IntVar(&f.hd, "head-dim", 64, "random configuration: head size (hidden/head-dim query heads, half as many key/value heads)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runBenchModel(ctx context.Context, out io.Writer, f benchModelFlags) error {
	batches, err := parseInts(f.batches)
	if err != nil || f.prefill <= 0 || f.prompt <= 0 || f.decode <= 0 || f.repeat <= 0 {
		return fmt.Errorf("--prefill, --prompt, --decode, --repeat must be positive and --batches a list of positive sizes")
	}
	be := cpu.New()
	dir := f.model
	var m *trainer.Model
	if dir == "" {
		heads := f.hidden / f.hd
		c := qwen3Shape(f.vocab, f.hidden, f.inter, f.layers, heads, max(1, heads/2), f.hd, true)
		if m, err = trainer.New(c, be); err != nil {
			return err
		}
		m.InitRandom(1, 0.02)
		if dir, err = os.MkdirTemp("", "nextstate-bench-model"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := m.Save(dir, safetensors.F32, 0); err != nil {
			return err
		}
	} else if m, err = trainer.Load(dir, be); err != nil {
		return err
	}
	c := m.Config
	rep := BenchModelReport{Params: c.NumParams(), Backend: be.Name(), Threads: runtime.GOMAXPROCS(0), Prefill: f.prefill, DecodeTPS: map[string]float64{},
		Config: describeConfig(c)}
	r := rand.New(rand.NewPCG(0, 0))
	randToks := func(n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(r.IntN(c.VocabSize))
		}
		return s
	}
	best := func(fn func() (time.Duration, error)) (time.Duration, error) {
		b := time.Duration(math.MaxInt64)
		for range f.repeat {
			d, err := fn()
			if err != nil {
				return 0, err
			}
			b = min(b, d)
		}
		return b, nil
	}
	if _, err := m.Forward([]trainer.Segment{{Tokens: randToks(8), Cache: m.NewCache()}}, false); err != nil { // warm up
		return err
	}
	toks := randToks(f.prefill)
	d, err := best(func() (time.Duration, error) {
		t0 := time.Now()
		_, err := m.Forward([]trainer.Segment{{Tokens: toks, Cache: m.NewCache()}}, false)
		return time.Since(t0), err
	})
	if err != nil {
		return err
	}
	rep.PrefillTPS = float64(f.prefill) / d.Seconds()
	for _, B := range batches {
		d, err := best(func() (time.Duration, error) {
			segs := make([]trainer.Segment, B)
			for i := range segs {
				segs[i] = trainer.Segment{Tokens: randToks(f.prompt), Cache: m.NewCache()}
			}
			logits, err := m.Forward(segs, false)
			if err != nil {
				return 0, err
			}
			t0 := time.Now()
			for range f.decode {
				for i := range segs {
					segs[i].Tokens = []int32{trainer.Sample(logits[i*c.VocabSize:(i+1)*c.VocabSize], trainer.SampleParams{}, nil).ID}
				}
				if logits, err = m.Forward(segs, false); err != nil {
					return 0, err
				}
			}
			return time.Since(t0), nil
		})
		if err != nil {
			return err
		}
		rep.DecodeTPS[strconv.Itoa(B)] = float64(B*f.decode) / d.Seconds()
	}
	if f.torch {
		threads := f.torchThreads
		if threads <= 0 {
			threads = runtime.GOMAXPROCS(0)
		}
		js, err := torchref.Run(ctx, "bench", dir, map[string]any{"prefill": f.prefill, "batches": batches, "decode": f.decode,
			"prompt": f.prompt, "threads": threads, "repeat": f.repeat})
		if err != nil {
			rep.TorchSkipped = err.Error()
		} else {
			rep.Torch = &torchBench{}
			if err := json.Unmarshal(js, rep.Torch); err != nil {
				return fmt.Errorf("torch bench output: %w: %s", err, js)
			}
		}
	}
	if f.asJSON {
		return printJSON(out, rep)
	}
	fmt.Fprintf(out, "model: %.1fM params (%s), f32; backend %s, %d threads\n", float64(rep.Params)/1e6, rep.Config, rep.Backend, rep.Threads)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	if rep.Torch != nil {
		fmt.Fprintf(tw, "\tnextstate\tPyTorch %s (%d threads)\tratio\t\n", rep.Torch.Version, rep.Torch.Threads)
	} else {
		fmt.Fprintf(tw, "\tnextstate\t\n")
	}
	row := func(name string, goV, ptV float64) {
		if rep.Torch != nil {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2fx\t\n", name, goV, ptV, goV/ptV)
		} else {
			fmt.Fprintf(tw, "%s\t%.1f\t\n", name, goV)
		}
	}
	var pt float64
	if rep.Torch != nil {
		pt = rep.Torch.PrefillTPS
	}
	row(fmt.Sprintf("prefill %d tokens/s", f.prefill), rep.PrefillTPS, pt)
	for _, B := range batches {
		k := strconv.Itoa(B)
		if rep.Torch != nil {
			pt = rep.Torch.DecodeTPS[k]
		}
		row(fmt.Sprintf("decode batch %d tokens/s", B), rep.DecodeTPS[k], pt)
	}
	tw.Flush()
	if rep.TorchSkipped != "" {
		fmt.Fprintf(out, "PyTorch reference skipped: %s\n", rep.TorchSkipped)
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", p)
		}
		out = append(out, n)
	}
	return out, nil
}
