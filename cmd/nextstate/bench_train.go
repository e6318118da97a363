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
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/backend"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/torchref"
)

// trainConfigs are the random Qwen3 shapes `bench train` knows by name.
var trainConfigs = map[string]trainer.Config{
	// ~22M parameters.
	"20m": qwen3Shape(32000, 384, 1024, 6, 6, 3, 64, true),
	// ~100M parameters.
	"100m": qwen3Shape(32000, 768, 2048, 12, 12, 4, 64, true),
	// Qwen3-0.6B's shape (596M parameters), random weights.
	"0.6b": qwen3Shape(151936, 1024, 3072, 28, 16, 8, 128, true),
	// A toy for tests.
	"tiny": qwen3Shape(256, 32, 64, 2, 4, 2, 8, false),
}

// describeConfig is a configuration's shape in one line.
func describeConfig(c trainer.Config) string {
	return fmt.Sprintf("hidden %d, %d layers, %d/%d heads × %d, MLP %d, vocab %d", c.HiddenSize, c.NumHiddenLayers,
		c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.IntermediateSize, c.VocabSize)
}

// qwen3Shape is a random-weights Qwen3 configuration of the given shape.
func qwen3Shape(vocab, hidden, inter, layers, heads, kv, hd int, tied bool) trainer.Config {
	return trainer.Config{ModelType: "qwen3", VocabSize: vocab, HiddenSize: hidden, IntermediateSize: inter,
		NumHiddenLayers: layers, NumAttentionHeads: heads, NumKeyValueHeads: kv, HeadDim: hd,
		MaxPositionEmbeddings: 4096, RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: tied, HiddenAct: "silu"}
}

type benchTrainFlags struct {
	runs          string
	batch, seq    int
	steps         int
	rank          int
	alpha         float64
	targets       string
	torch, asJSON bool
	torchThreads  int
	recompute     bool
}

// BenchTrainReport is what `bench train` measures; --json prints it.
type BenchTrainReport struct {
	Backend string `json:"backend"`
	Threads int    `json:"threads"`
	// SgemmGFLOPS is the machine's measured single-precision matrix-product
	// peak: the best of this backend's and PyTorch's on 1024³.
	SgemmGFLOPS      float64         `json:"sgemm_gflops"`
	GoSgemmGFLOPS    float64         `json:"go_sgemm_gflops"`
	TorchSgemmGFLOPS float64         `json:"torch_sgemm_gflops,omitempty"`
	Torch            string          `json:"torch,omitempty"`
	TorchSkipped     string          `json:"torch_skipped,omitempty"`
	Runs             []BenchTrainRun `json:"runs"`
}

// BenchTrainRun is one configuration trained one way, on both sides.
type BenchTrainRun struct {
	Name      string `json:"name"` // config:mode
	Config    string `json:"config"`
	Params    int    `json:"params"`
	Trainable int    `json:"trainable_params"`
	Tokens    int    `json:"tokens_per_step"`
	// FLOPsPerStep is the model's arithmetic per step (matrix products and
	// attention; forward, and the backward's dX, plus dW of what is trained).
	FLOPsPerStep float64         `json:"flops_per_step"`
	Go           benchTrainSide  `json:"nextstate"`
	Torch        *benchTrainSide `json:"torch,omitempty"`
}

type benchTrainSide struct {
	TokensPerS float64 `json:"tokens_per_s"`
	StepS      float64 `json:"step_s"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	// BytesPerParam is the peak resident memory over the parameter count.
	BytesPerParam float64 `json:"bytes_per_param"`
	// PeakFraction is the model FLOP/s reached over the machine's sgemm peak.
	PeakFraction float64 `json:"sgemm_peak_fraction"`
}

func newBenchTrain() *cobra.Command {
	var f benchTrainFlags
	c := &cobra.Command{
		Use:   "train",
		Short: "Measure training tokens/s (forward, backward, AdamW; full and LoRA), side by side with PyTorch",
		Long: `Measure the CPU trainer's training speed: one step is the forward of --batch random
sequences of --seq tokens, the mean next-token cross-entropy, the backward and one AdamW
step; tokens/s is the best of --steps steps after a warm-up one. The same configuration,
the same weights, the same tokens and the same thread count then go through PyTorch eager
(autograd and torch.optim.AdamW, Debian's python3-torch) in the same run.

--runs lists CONFIG:MODE pairs. Configurations (random Qwen3 weights, tied embeddings,
vocabulary 32000 unless said): 20m (hidden 384, 6 layers, 6/3 heads of 64, MLP 1024; 22M
parameters), 100m (hidden 768, 12 layers, 12/4 heads of 64, MLP 2048; 101M), 0.6b
(Qwen3-0.6B's shape: hidden 1024, 28 layers, 16/8 heads of 128, MLP 3072, vocabulary
151936; 596M), tiny (a toy). Modes: full (every parameter), lora (--rank, --alpha on
--targets; the base frozen).

Also printed: peak resident memory per parameter of each side (each run starts from a
reset high-water mark), the machine's measured sgemm peak (the better of this backend's
and PyTorch's 1024³ products) and the fraction of it each side reaches in model FLOP/s.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchTrain(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.runs, "runs", "20m:full,20m:lora,100m:full,100m:lora,0.6b:lora", "CONFIG:MODE pairs (configs 20m, 100m, 0.6b, tiny; modes full, lora)")
	fl.IntVar(&f.batch, "batch", 4, "sequences per step")
	fl.IntVar(&f.seq, "seq", 256, "tokens per sequence")
	fl.IntVar(&f.steps, "steps", 3, "timed steps per run (the best counts), after one warm-up step")
	fl.IntVar(&f.rank, "rank", 16, "LoRA rank")
	fl.Float64Var(&f.alpha, "alpha", 32, "LoRA alpha")
	fl.StringVar(&f.targets, "targets", strings.Join(trainer.LoRATargets, ","), "LoRA target projections")
	fl.BoolVar(&f.recompute, "recompute", false, "recompute each layer's activations in the backward (less memory)")
	fl.BoolVar(&f.torch, "torch", true, "also run PyTorch when python3-torch is installed")
	fl.IntVar(&f.torchThreads, "torch-threads", 0, "PyTorch threads (0: as many as GOMAXPROCS)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

type trainRunSpec struct {
	name string
	cfg  trainer.Config
	lora bool
	rl   bool // the RL step (rl-full, rl-lora) instead of cross-entropy
}

// trainModes are --runs' modes.
var trainModes = []string{"full", "lora", "rl-full", "rl-lora"}

func parseTrainRuns(s string) ([]trainRunSpec, error) {
	var out []trainRunSpec
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		cfgName, mode, ok := strings.Cut(p, ":")
		c, known := trainConfigs[cfgName]
		if !ok || !known || !slices.Contains(trainModes, mode) {
			names := slices.Sorted(func(yield func(string) bool) {
				for k := range trainConfigs {
					if !yield(k) {
						return
					}
				}
			})
			return nil, fmt.Errorf("--runs: %q is not CONFIG:MODE (configs: %s; modes: %s)", p, strings.Join(names, ", "), strings.Join(trainModes, ", "))
		}
		out = append(out, trainRunSpec{name: p, cfg: c, lora: strings.HasSuffix(mode, "lora"), rl: strings.HasPrefix(mode, "rl-")})
	}
	return out, nil
}

func runBenchTrain(ctx context.Context, out io.Writer, f benchTrainFlags) error {
	runs, err := parseTrainRuns(f.runs)
	if err != nil {
		return err
	}
	if f.batch <= 0 || f.seq < 2 || f.steps <= 0 || f.rank <= 0 {
		return fmt.Errorf("--batch, --steps and --rank must be positive and --seq at least 2")
	}
	targets := strings.Split(f.targets, ",")
	be := cpu.New()
	threads := f.torchThreads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	rep := BenchTrainReport{Backend: be.Name(), Threads: runtime.GOMAXPROCS(0), GoSgemmGFLOPS: sgemmPeak(be)}
	torchOK := f.torch
	if torchOK {
		if _, err := torchref.Python(); err != nil {
			rep.TorchSkipped, torchOK = err.Error(), false
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	for _, spec := range runs {
		run, dir, err := benchTrainGo(spec, be, f, targets, r)
		if err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("%s: %w", spec.name, err)
		}
		if torchOK {
			req := map[string]any{"batch": f.batch, "seq": f.seq, "steps": f.steps, "threads": threads, "data": run.data, "rl": run.rl}
			if spec.lora {
				req["lora"] = map[string]any{"r": f.rank, "alpha": f.alpha, "targets": targets}
			}
			js, err := torchref.Run(ctx, "bench-train", dir, req)
			if err != nil {
				os.RemoveAll(dir)
				return fmt.Errorf("%s: PyTorch: %w", spec.name, err)
			}
			var tr struct {
				TokensPerS float64 `json:"tokens_per_s"`
				StepS      float64 `json:"step_s"`
				Torch      string  `json:"torch"`
				PeakRSS    int64   `json:"peak_rss_bytes"`
				Sgemm      float64 `json:"sgemm_gflops"`
			}
			if err := json.Unmarshal(js, &tr); err != nil {
				os.RemoveAll(dir)
				return fmt.Errorf("%s: PyTorch output: %w: %s", spec.name, err, js)
			}
			rep.Torch = tr.Torch
			rep.TorchSgemmGFLOPS = max(rep.TorchSgemmGFLOPS, tr.Sgemm)
			run.Torch = &benchTrainSide{TokensPerS: tr.TokensPerS, StepS: tr.StepS, PeakRSS: tr.PeakRSS,
				BytesPerParam: float64(tr.PeakRSS) / float64(run.Params)}
		}
		os.RemoveAll(dir)
		rep.Runs = append(rep.Runs, run.BenchTrainRun)
	}
	rep.SgemmGFLOPS = max(rep.GoSgemmGFLOPS, rep.TorchSgemmGFLOPS)
	for i := range rep.Runs {
		r := &rep.Runs[i]
		r.Go.PeakFraction = r.FLOPsPerStep / r.Go.StepS / (rep.SgemmGFLOPS * 1e9)
		if r.Torch != nil {
			r.Torch.PeakFraction = r.FLOPsPerStep / r.Torch.StepS / (rep.SgemmGFLOPS * 1e9)
		}
	}
	if f.asJSON {
		return printJSON(out, rep)
	}
	printBenchTrain(out, rep, f)
	return nil
}

// goTrainRun is one run's Go side and the tokens PyTorch gets too.
type goTrainRun struct {
	BenchTrainRun
	data [][]int32
	rl   *rlBenchInput // the RL step's inputs (rl modes)
}

// benchTrainGo makes spec's random model, saves it for PyTorch, and times
// its training steps; it returns the folder it wrote.
func benchTrainGo(spec trainRunSpec, be *cpu.CPU, f benchTrainFlags, targets []string, r *rand.Rand) (goTrainRun, string, error) {
	c := spec.cfg
	freeMemory()
	resetPeakRSS()
	m, err := trainer.New(c, be)
	if err != nil {
		return goTrainRun{}, "", err
	}
	m.InitRandom(1, 0.02)
	dir, err := os.MkdirTemp("", "nextstate-bench-train")
	if err != nil {
		return goTrainRun{}, "", err
	}
	// Half precision on disk halves the folder of the large shapes; both
	// sides read the same rounded weights.
	if err := m.Save(dir, safetensors.BF16, 0); err != nil {
		return goTrainRun{}, dir, err
	}
	if spec.lora {
		if err := m.AddLoRA(trainer.LoRAConfig{Rank: f.rank, Alpha: f.alpha, Targets: targets}, 1); err != nil {
			return goTrainRun{}, dir, err
		}
	}
	data := make([][]int32, f.batch)
	for i := range data {
		data[i] = make([]int32, f.seq)
		for j := range data[i] {
			data[i][j] = int32(r.IntN(c.VocabSize))
		}
	}
	opt := trainer.TrainOptions{Recompute: f.recompute, Seed: 1}
	var step func() error
	var numTrainable int
	var rl *rlBenchInput
	if spec.rl {
		svc, in, err := newRLBench(m, opt, data, r)
		if err != nil {
			return goTrainRun{}, dir, err
		}
		defer svc.Close()
		step, rl, numTrainable = in.step(svc), in, svc.Training().NumTrainable()
	} else {
		tr, err := trainer.NewTraining(m, opt)
		if err != nil {
			return goTrainRun{}, dir, err
		}
		defer tr.Close()
		batch := trainer.NextTokenBatch(data, nil)
		step = func() error {
			if _, err := tr.ForwardBackward(batch, trainer.CrossEntropy{}); err != nil {
				return err
			}
			_, err := tr.Step(trainer.AdamWOptions{LR: 1e-5})
			return err
		}
		numTrainable = tr.NumTrainable()
	}
	if err := step(); err != nil { // warm-up: the workspace, gradients, moments
		return goTrainRun{}, dir, err
	}
	best := time.Duration(math.MaxInt64)
	for range f.steps {
		t0 := time.Now()
		if err := step(); err != nil {
			return goTrainRun{}, dir, err
		}
		best = min(best, time.Since(t0))
	}
	peak := peakRSS()
	trainable := numTrainable
	tokens := f.batch * f.seq
	flops := trainFLOPs(c, f.batch, f.seq, spec.lora, f.rank, len(targets))
	if spec.rl { // the reference's and the teacher's forwards
		flops += forwardFLOPs(c, f.batch, f.seq) + forwardFLOPs(c, f.batch, f.seq+rlHintTokens)
	}
	run := goTrainRun{data: data, rl: rl, BenchTrainRun: BenchTrainRun{
		Name: spec.name, Params: c.NumParams(), Trainable: trainable, Tokens: tokens,
		Config:       describeConfig(c),
		FLOPsPerStep: flops,
		Go: benchTrainSide{TokensPerS: float64(tokens) / best.Seconds(), StepS: best.Seconds(), PeakRSS: peak,
			BytesPerParam: float64(peak) / float64(c.NumParams())},
	}}
	return run, dir, nil
}

// trainFLOPs counts one step's arithmetic: 2 FLOPs per multiply-add of
// every matrix product and of attention's two products (causal: each
// token sees (T+1)/2 keys on average), forward; the backward computes dX of
// each (as much again) and dW of the trained matrices (again as much for
// full training; LoRA's adapters are counted as their own products).
func trainFLOPs(c trainer.Config, B, T int, lora bool, rank, targets int) float64 {
	fwd := forwardFLOPs(c, B, T)
	tokens := float64(B * T)
	L := float64(c.NumHiddenLayers)
	if !lora {
		return 3 * fwd
	}
	// dX through everything, no dW of the base; each adapter is two thin
	// products forward, four backward.
	adapter := tokens * L * float64(targets) * 2 * adapterMACs(c, float64(rank))
	return 2*fwd + 3*adapter
}

// forwardFLOPs is one forward's arithmetic over B sequences of T tokens,
// the head over every token.
func forwardFLOPs(c trainer.Config, B, T int) float64 {
	C, D, H, KV, F := float64(c.HiddenSize), float64(c.HeadDim), float64(c.NumAttentionHeads), float64(c.NumKeyValueHeads), float64(c.IntermediateSize)
	layerMM := C*(H+2*KV)*D + H*D*C + 3*C*F
	headMM := C * float64(c.VocabSize)
	attn := 2 * 2 * H * D * float64(T+1) / 2 // QKᵀ and AV per token per layer
	L := float64(c.NumHiddenLayers)
	return float64(B*T) * (2*L*layerMM + 2*headMM + L*attn)
}

// adapterMACs is the average multiply-adds per token of one adapter (x·Aᵀ
// then ·Bᵀ): rank·(in + out), averaged over the seven projections.
func adapterMACs(c trainer.Config, r float64) float64 {
	C, D, H, KV, F := float64(c.HiddenSize), float64(c.HeadDim), float64(c.NumAttentionHeads), float64(c.NumKeyValueHeads), float64(c.IntermediateSize)
	sum := (C + H*D) + (C + KV*D) + (C + KV*D) + (H*D + C) + (C + F) + (C + F) + (F + C)
	return r * sum / 7
}

// sgemmPeak is the backend's best GFLOP/s on a 1024³ product.
func sgemmPeak(be backend.Backend) float64 {
	const n = 1024
	a, b, c := be.Alloc(n*n), be.Alloc(n*n), be.Alloc(n*n)
	defer be.Free(a)
	defer be.Free(b)
	defer be.Free(c)
	host := make([]float32, n*n)
	r := rand.New(rand.NewPCG(3, 3))
	for i := range host {
		host[i] = float32(r.NormFloat64())
	}
	be.Write(a, host)
	be.Write(b, host)
	best := time.Duration(math.MaxInt64)
	for range 5 {
		t0 := time.Now()
		be.Gemm(c.Mat(n, n), a.Mat(n, n), false, b.Mat(n, n), true, 1, 0)
		be.Read(host[:1], c.Slice(0, 1)) // waits for the product on an asynchronous backend
		best = min(best, time.Since(t0))
	}
	return 2 * n * n * n / best.Seconds() / 1e9
}

// freeMemory returns what the previous run left to the OS, so that the
// next run's high-water mark starts from this process's floor.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// resetPeakRSS resets the kernel's resident high-water mark of this
// process (/proc/self/clear_refs, Linux); a no-op elsewhere.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the resident high-water mark (VmHWM) in bytes, 0 when unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

func printBenchTrain(out io.Writer, rep BenchTrainReport, f benchTrainFlags) {
	fmt.Fprintf(out, "training: %d×%d tokens per step, AdamW; backend %s, %d threads; sgemm peak %.1f GFLOP/s (nextstate %.1f",
		f.batch, f.seq, rep.Backend, rep.Threads, rep.SgemmGFLOPS, rep.GoSgemmGFLOPS)
	if rep.TorchSgemmGFLOPS > 0 {
		fmt.Fprintf(out, ", PyTorch %.1f", rep.TorchSgemmGFLOPS)
	}
	fmt.Fprintln(out, ")")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	if rep.Torch != "" {
		fmt.Fprintf(tw, "run\tparams\ttrained\tnextstate tok/s\tB/param\tpeak\tPyTorch %s tok/s\tB/param\tpeak\tratio\t\n", rep.Torch)
	} else {
		fmt.Fprintf(tw, "run\tparams\ttrained\tnextstate tok/s\tB/param\tpeak\t\n")
	}
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "%s\t%.1fM\t%.2fM\t%.1f\t%.1f\t%.0f%%\t", r.Name, float64(r.Params)/1e6, float64(r.Trainable)/1e6,
			r.Go.TokensPerS, r.Go.BytesPerParam, 100*r.Go.PeakFraction)
		if r.Torch != nil {
			fmt.Fprintf(tw, "%.1f\t%.1f\t%.0f%%\t%.2fx\t", r.Torch.TokensPerS, r.Torch.BytesPerParam, 100*r.Torch.PeakFraction,
				r.Go.TokensPerS/r.Torch.TokensPerS)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if rep.TorchSkipped != "" {
		fmt.Fprintf(out, "PyTorch reference skipped: %s\n", rep.TorchSkipped)
	}
}
