package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/agent"
	"github.com/nextstate-rl/nextstate/agent/report"
	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/serve"
	"github.com/nextstate-rl/nextstate/trainer/service"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

type sftFlags struct {
	demos, chats                []string
	model, init, tokenizer, out string
	steps, batch, maxDemos      int
	lr                          float64
	seed                        uint64
	pool                        bool
}

// initShapes are the model shapes `sft --init` makes from scratch: vocab
// is the pruned tokenizer's.
var initShapes = map[string]func(vocab int) trainer.Config{
	"tiny":  func(v int) trainer.Config { return qwen3Shape(v, 128, 384, 4, 4, 2, 32, true) },
	"small": func(v int) trainer.Config { return qwen3Shape(v, 256, 768, 6, 4, 2, 64, true) },
}

func newSFT() *cobra.Command {
	var f sftFlags
	c := &cobra.Command{
		Use:   "sft --demos RUN_DIR (--model DIR | --init tiny --tokenizer FILE) --out DIR",
		Short: "Supervised fine-tuning on demonstrations (the oracles' runs): a warm start for RL",
		Long: `Fine-tune a model on the passed trials of run directories (nextstate run --oracle
writes them): each turn becomes the prompt an agent would have sent (agent.Demonstration:
the same system prompt, history and tools as nextstate run and train) and the reply that
takes the recorded action, trained by cross-entropy on the reply. The result is a model
folder that serve-model and train load.

--init makes the model from scratch: the tokenizer (--tokenizer, a Hugging Face
tokenizer.json such as Qwen3's) pruned to the tokens the demonstrations use (ids
remapped; any other text still encodes, from bytes up), and a randomly initialised
Qwen3 of that vocabulary (tiny: 4 layers of 128; small: 6 of 256).`,
		Example: `  nextstate run --oracle --suite guess-v1 --split train -k 8 --out runs/demos
  nextstate sft --demos runs/demos --init tiny --tokenizer tokenizer.json --steps 200 --out models/warm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSFT(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.demos, "demos", nil, "a run directory of demonstrations (repeatable; each is an equal share of every batch, one given twice two shares); its passed trials are used")
	fl.StringArrayVar(&f.chats, "chats", nil, `a JSONL file of conversations, {"messages": [...], "reply": "..."} a line (nextstate users corpus writes one); repeatable, each an equal share of every batch as --demos are`)
	fl.StringVar(&f.model, "model", "", "the model folder to fine-tune")
	fl.StringVar(&f.init, "init", "", "make the model from scratch in this shape: tiny or small (with --tokenizer)")
	fl.StringVar(&f.tokenizer, "tokenizer", "", "with --init: the tokenizer.json to prune to the demonstrations' tokens")
	fl.StringVar(&f.out, "out", "", "the model folder to write")
	fl.IntVar(&f.steps, "steps", 100, "optimizer steps")
	fl.IntVar(&f.batch, "batch", 16, "turns per step, drawn at random")
	fl.IntVar(&f.maxDemos, "max-demos", 0, "use only the first this many demonstrations (0: all)")
	fl.BoolVar(&f.pool, "pool", false, "draw each batch's turns from all directories' turns together (default: each --demos directory an equal share, so a suite of long episodes does not crowd out the others)")
	fl.Float64Var(&f.lr, "lr", 1e-3, "AdamW's peak learning rate (warm-up over the first tenth of the steps, then cosine decay)")
	fl.Uint64Var(&f.seed, "seed", 1, "initialisation and sampling seed")
	return c
}

// demoTurn is one demonstration turn, rendered; dir indexes the --demos
// directory it came from.
type demoTurn struct {
	prompt, response string
	dir              int
}

// loadDemos reads the passed trials of the run directories as rendered
// prompts and replies.
func loadDemos(dirs []string, maxDemos int) ([]demoTurn, int, error) {
	var out []demoTurn
	n := 0
	for d, dir := range dirs {
		res, err := rundir.ReadResultsFile(filepath.Join(dir, rundir.ResultsFile))
		if err != nil {
			return nil, 0, fmt.Errorf("--demos %s: %w", dir, err)
		}
		// The file's order is the order the trials finished in, which
		// varies from run to run; the trials' ids do not, so the same
		// demonstrations and seed give the same batches.
		slices.SortFunc(res.Rows, func(a, b rundir.Result) int { return strings.Compare(a.TrialID, b.TrialID) })
		for i := range res.Rows {
			row := &res.Rows[i]
			if row.Status != rundir.StatusPassed {
				continue
			}
			if maxDemos > 0 && n >= maxDemos {
				return out, n, nil
			}
			tr, err := report.ReadTrajectory(dir, row)
			if err != nil {
				return nil, 0, fmt.Errorf("--demos %s: %w", dir, err)
			}
			reset := gym.ResetResult{Task: tr.Task, Instruction: tr.Instruction, Observation: tr.Reset.Observation, Info: tr.Reset.Info}
			turns, err := agent.Demonstration(agent.Config{}, reset, tr.Steps)
			if err != nil {
				return nil, 0, fmt.Errorf("--demos %s, trial %s: %w", dir, row.TrialID, err)
			}
			for _, t := range turns {
				p, err := serve.RenderChat(t.Messages, t.Tools)
				if err != nil {
					return nil, 0, fmt.Errorf("--demos %s, trial %s: %w", dir, row.TrialID, err)
				}
				out = append(out, demoTurn{prompt: p, response: t.Response, dir: d})
			}
			n++
		}
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("--demos %s: no passed trial to learn from", strings.Join(dirs, ", "))
	}
	return out, n, nil
}

// loadChats reads a JSONL file of conversations and their replies, each
// rendered with the chat template as the engine renders a request; src
// numbers its share of the batches.
func loadChats(path string, src int) ([]demoTurn, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--chats: %w", err)
	}
	defer fh.Close()
	var out []demoTurn
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var c struct {
			Messages json.RawMessage `json:"messages"`
			Reply    *string         `json:"reply"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("--chats %s:%d: %w", path, line, err)
		}
		if len(c.Messages) == 0 || c.Reply == nil {
			return nil, fmt.Errorf(`--chats %s:%d: want {"messages": [...], "reply": "..."}`, path, line)
		}
		p, err := serve.RenderChat(c.Messages, nil)
		if err != nil {
			return nil, fmt.Errorf("--chats %s:%d: %w", path, line, err)
		}
		out = append(out, demoTurn{prompt: p, response: *c.Reply, dir: src})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--chats %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--chats %s: no conversation", path)
	}
	return out, nil
}

func runSFT(ctx context.Context, stdout io.Writer, f sftFlags) error {
	switch {
	case len(f.demos) == 0 && len(f.chats) == 0:
		return errors.New("--demos or --chats is required: a run directory of demonstrations (nextstate run --oracle), or a JSONL file of conversations")
	case f.out == "":
		return errors.New("--out is required: the model folder to write")
	case (f.model == "") == (f.init == ""):
		return errors.New("give --model (a folder to fine-tune) or --init (a shape to make from scratch), one of them")
	case f.init != "" && f.tokenizer == "":
		return errors.New("--init needs --tokenizer, the tokenizer.json to prune")
	case f.steps < 1 || f.batch < 1:
		return errors.New("--steps and --batch must be at least 1")
	}
	var demos []demoTurn
	trials := 0
	if len(f.demos) > 0 {
		var err error
		if demos, trials, err = loadDemos(f.demos, f.maxDemos); err != nil {
			return err
		}
	}
	for i, path := range f.chats {
		turns, err := loadChats(path, len(f.demos)+i)
		if err != nil {
			return err
		}
		demos = append(demos, turns...)
		trials += len(turns)
	}
	sources := append(append([]string(nil), f.demos...), f.chats...)
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	be := cpu.New()
	var m *trainer.Model
	var tok *tokenizer.Tokenizer
	if f.init != "" {
		shape, ok := initShapes[f.init]
		if !ok {
			return fmt.Errorf("--init %q: want tiny or small", f.init)
		}
		b, err := os.ReadFile(f.tokenizer)
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		full, err := tokenizer.Parse(b)
		if err != nil {
			return fmt.Errorf("--tokenizer %s: %w", f.tokenizer, err)
		}
		corpus := make([]string, 0, 2*len(demos))
		for _, d := range demos {
			corpus = append(corpus, d.prompt, d.response)
		}
		pruned, err := full.Prune(corpus)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(f.out, "tokenizer.json"), pruned.JSON, 0o644); err != nil {
			return err
		}
		if tok, err = tokenizer.Parse(pruned.JSON); err != nil {
			return err
		}
		eos, ok := tok.TokenID("<|im_end|>")
		if !ok {
			return fmt.Errorf("--tokenizer %s has no <|im_end|> token: not a Qwen chat tokenizer", f.tokenizer)
		}
		cfg := shape(tok.VocabSize())
		cfg.EOSTokenID = float64(eos)
		if m, err = trainer.New(cfg, be); err != nil {
			return err
		}
		m.InitRandom(f.seed, 0.02)
		fmt.Fprintf(stdout, "nextstate sft: a %s Qwen3 from scratch (%d parameters), its tokenizer pruned from %d to %d tokens\n",
			f.init, cfg.NumParams(), full.VocabSize(), tok.VocabSize())
	} else {
		var err error
		if m, err = trainer.Load(f.model, be); err != nil {
			return err
		}
		if tok, err = tokenizer.Load(f.model); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(f.model, "tokenizer.json"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(f.out, "tokenizer.json"), b, 0o644); err != nil {
			return err
		}
	}
	defer m.Close()
	end, _ := tok.TokenID("<|im_end|>")
	// byDir holds each directory's data; with --pool, one bucket of all.
	byDir := make([][]service.Datum, len(sources))
	tokens, prompts := 0, 0
	for _, d := range demos {
		p := tok.Encode(d.prompt)
		r := append(tok.Encode(d.response), end)
		b := d.dir
		if f.pool {
			b = 0
		}
		byDir[b] = append(byDir[b], service.Datum{Tokens: append(p, r...), ResponseLength: len(r)})
		tokens += len(r)
		prompts += len(p)
	}
	var buckets [][]service.Datum
	for i, b := range byDir {
		if len(b) == 0 && !f.pool && f.maxDemos == 0 {
			return fmt.Errorf("%s: nothing to learn from", sources[i])
		}
		if len(b) > 0 {
			buckets = append(buckets, b)
		}
	}
	svc, err := service.New(m, service.Options{Training: trainer.TrainOptions{Seed: f.seed}, Tokenizer: tok})
	if err != nil {
		return err
	}
	defer svc.Close()
	fmt.Fprintf(stdout, "nextstate sft: %d turns of %d demonstrations and conversations (%d reply tokens, %d prompt tokens); %d steps of %d turns\n",
		len(demos), trials, tokens, prompts, f.steps, f.batch)
	rng := rand.New(rand.NewPCG(f.seed, 0x736674))
	loss := service.LossConfig{Terms: []service.TermConfig{{Kind: "sft", Weight: 1}}}
	begin := time.Now()
	var sum float64
	n := 0
	for step := 1; step <= f.steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := make([]service.Datum, f.batch)
		for i := range batch {
			b := buckets[rng.IntN(len(buckets))]
			batch[i] = b[rng.IntN(len(b))]
		}
		res, err := svc.ForwardBackward(ctx, service.ForwardBackwardRequest{Data: batch, Loss: loss})
		if err != nil {
			return err
		}
		// Warm-up over the first tenth, then cosine decay.
		lr := f.lr * 0.5 * (1 + math.Cos(math.Pi*float64(step-1)/float64(f.steps)))
		if warm := max(f.steps/10, 1); step <= warm {
			lr *= float64(step) / float64(warm)
		}
		if _, err := svc.OptimStep(ctx, service.AdamParams{LR: lr, MaxGradNorm: 1}); err != nil {
			return err
		}
		sum += res.Metrics["loss/sft"]
		n++
		if step%max(f.steps/10, 1) == 0 || step == f.steps {
			fmt.Fprintf(stdout, "step %d/%d  loss %.4f  %.1fs\n", step, f.steps, sum/float64(n), time.Since(begin).Seconds())
			sum, n = 0, 0
		}
	}
	if err := m.Save(f.out, safetensors.F32, 0); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "nextstate sft: wrote %s\n", f.out)
	return nil
}
