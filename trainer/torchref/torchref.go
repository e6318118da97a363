// Package torchref runs the plain-PyTorch Qwen3 (qwen3.py: the forward,
// greedy generation; train.py: autograd, torch.optim.AdamW, a plain LoRA;
// objective.py: the RL objectives; all embedded) that the Go model and trainer are tested and benchmarked
// against. It needs Debian's python3-torch: Python says whether
// /usr/bin/python3 (or NEXTSTATE_TORCH_PYTHON) can import torch, and why not.
package torchref

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

//go:embed qwen3.py
var script []byte

//go:embed train.py
var trainScript []byte

//go:embed objective.py
var objectiveScript []byte

var (
	once      sync.Once
	python    string
	notReason error
)

// Python returns the interpreter to use, or an error that says why torch
// cannot be used (for a test's skip message).
func Python() (string, error) {
	once.Do(func() {
		python = os.Getenv("NEXTSTATE_TORCH_PYTHON")
		if python == "" {
			python = "/usr/bin/python3"
		}
		out, err := exec.Command(python, "-c", "import torch; print(torch.__version__)").CombinedOutput()
		if err != nil {
			notReason = fmt.Errorf("PyTorch reference unavailable: %s cannot import torch (apt-get install python3-torch): %v: %s", python, err, bytes.TrimSpace(out))
		}
	})
	return python, notReason
}

// Run runs `qwen3.py cmd dir in.json [extra...]` with req as in.json and
// returns its standard output.
func Run(ctx context.Context, cmd, dir string, req any, extra ...string) ([]byte, error) {
	py, err := Python()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "torchref")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	sp, in := filepath.Join(tmp, "qwen3.py"), filepath.Join(tmp, "in.json")
	js, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(sp, script, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "train.py"), trainScript, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "objective.py"), objectiveScript, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(in, js, 0o644); err != nil {
		return nil, err
	}
	c := exec.CommandContext(ctx, py, append([]string{sp, cmd, dir, in}, extra...)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("torchref %s: %w: %s", cmd, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
