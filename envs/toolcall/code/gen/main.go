// Command gen writes the code interpreter's task set: math problems with
// exact answers, in three categories (arithmetic, algebra, combinatorics),
// as gym.Task JSON lines for code-interpreter-v1. The output depends only
// on -n and -seed. The shipped file is made by
//
//	go run ./envs/toolcall/code/gen -n 240 -seed 1 -o envs/toolcall/code/tasks/math.jsonl
//
// and a test checks that it is current. Each task's id is
// "math-<category>-<nnn>", its labels "category" and "topic", its data
// {"problem": ...} (also its instruction), and its verifier {"answer":
// the exact answer computed in Go with math/big, "solution": a Python
// program, computed independently, that prints it}; every fifth task of a
// category is in the "test" split, the others in "train".
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nextstate-rl/nextstate/gym"
)

func main() {
	n := flag.Int("n", 240, "number of problems (at least 3; split evenly over the categories)")
	seed := flag.Uint64("seed", 1, "random seed: the same seed and -n give the same file")
	out := flag.String("o", "-", `output file ("-" is stdout)`)
	flag.Parse()
	if err := run(*n, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(n int, seed uint64, path string) error {
	tasks, err := Generate(n, seed)
	if err != nil {
		return err
	}
	var w io.Writer = os.Stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	if err := Write(bw, tasks); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if f, ok := w.(*os.File); ok && path != "-" {
		return f.Close()
	}
	return nil
}

// Write writes tasks as JSON lines.
func Write(w io.Writer, tasks []gym.Task) error {
	for _, t := range tasks {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// TaskData and VerifierData are code-interpreter-v1's (package code's
// types of the same names).
type TaskData struct {
	Problem string `json:"problem"`
}

type VerifierData struct {
	Answer   string `json:"answer"`
	Solution string `json:"solution"`
}

// Generate makes n problems from seed: n/3 per category (the first
// categories take the remainder), topics taken in turn within a category.
func Generate(n int, seed uint64) ([]gym.Task, error) {
	if n < len(categories) {
		return nil, fmt.Errorf("-n %d: want at least %d problems, one per category", n, len(categories))
	}
	r := newRNG(seed)
	var out []gym.Task
	seen := map[string]bool{}
	for ci, c := range categories {
		count := n / len(categories)
		if ci < n%len(categories) {
			count++
		}
		for i := 1; i <= count; i++ {
			topic := c.topics[(i-1)%len(c.topics)]
			var p problem
			for try := 0; ; try++ {
				if try == 100 {
					return nil, errors.New("gen: topic " + topic.name + " repeats itself: widen its parameters")
				}
				p = topic.make(r)
				if !seen[p.text] {
					break
				}
			}
			seen[p.text] = true
			split := "train"
			if i%5 == 0 {
				split = "test"
			}
			data, _ := json.Marshal(TaskData{Problem: p.text})
			verifier, _ := json.Marshal(VerifierData{Answer: p.answer, Solution: p.solution})
			out = append(out, gym.Task{
				ID:          fmt.Sprintf("math-%s-%03d", c.name, i),
				Env:         "code-interpreter-v1",
				Instruction: p.text,
				Split:       split,
				Data:        data,
				Verifier:    verifier,
				Labels:      map[string]string{"category": c.name, "topic": topic.name},
			})
		}
	}
	return out, nil
}

// rng is splitmix64: its output is fixed by its definition, so a seed
// gives the same problems with any Go version.
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng { return &rng{s: seed} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// between returns an integer in [lo, hi], uniformly (by rejection).
func (r *rng) between(lo, hi int) int {
	if hi < lo {
		panic("gen: empty range")
	}
	span := uint64(hi-lo) + 1
	limit := ^uint64(0) - (^uint64(0) % span)
	for {
		if v := r.next(); v < limit {
			return lo + int(v%span)
		}
	}
}

// nonzero returns an integer in [lo, hi] other than 0.
func (r *rng) nonzero(lo, hi int) int {
	for {
		if v := r.between(lo, hi); v != 0 {
			return v
		}
	}
}

func pick[T any](r *rng, xs []T) T { return xs[r.between(0, len(xs)-1)] }
