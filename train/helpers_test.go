package train

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/internal/testmodel"
	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/service"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

// first-v1 is a trivially learnable kind for the loop's tests: one step,
// reward 1 when the reply's first byte is ASCII (about half of a random
// byte-level model's first tokens), else 0.
func init() { gym.Register(firstKind{}) }

type firstKind struct{}

func (firstKind) Spec() gym.Spec {
	var tasks []gym.Task
	for i := range 6 {
		split := "train"
		if i >= 4 {
			split = "test"
		}
		tasks = append(tasks, gym.Task{ID: fmt.Sprintf("first-%d", i), Env: "first-v1", Split: split,
			Instruction: fmt.Sprintf("Say something plain (%d).", i)})
	}
	return gym.Spec{Name: "first-v1", Description: "Reward 1 when the reply starts with an ASCII byte.",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(1, 1, gym.PartText),
		Limits: gym.Limits{MaxSteps: 1, StepTimeout: gym.Duration(10 * time.Second)}, Tasks: tasks}
}

func (firstKind) New(context.Context) (gym.Env, error) { return &first{}, nil }

type first struct{}

func (*first) Reset(_ context.Context, t *gym.Task, _ int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation(t.Instruction), nil, nil
}

func (*first) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	text := a.Text()
	reward := 0.0
	if text != "" && text[0] < 0x80 {
		reward = 1
	}
	return gym.Transition{Observation: gym.TextObservation("ok"), Reward: reward, Terminated: true}, nil
}

func (*first) Close(context.Context) error { return nil }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tinyModel writes a byte-level tokenizer and a random one-layer Qwen3 to
// a folder.
func tinyModel(t testing.TB) string { return testmodel.Write(t, 0.1, safetensors.F32) }

// rig is what a loop runs on in the tests: a gym server and a trainer
// with its policy server, all in process.
type rig struct {
	gym    *client.Client
	srv    *server.Server
	svc    *service.Service
	policy *PolicyServer
}

func newRig(t testing.TB, modelDir, dataDir, stateDir string) *rig {
	t.Helper()
	r := &rig{}
	srv, err := server.New(server.Config{DataDir: dataDir, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.gym, err = client.Dial(ctx, "ws://"+ln.Addr().String(), client.WithLogger(quietLog())); err != nil {
		t.Fatal(err)
	}
	m, err := trainer.Load(modelDir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	if r.svc, err = service.New(m, service.Options{Training: trainer.TrainOptions{Seed: 1}, Tokenizer: tok, StateDir: stateDir}); err != nil {
		t.Fatal(err)
	}
	if r.policy, err = ServePolicy(r.svc, tok, "tiny", quietLog()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.gym.Close()
		r.policy.Close(sctx)
		srv.Shutdown(sctx)
		<-served
		r.svc.Close()
		m.Close()
	})
	return r
}

func (r *rig) tasks(t testing.TB, split string) []Task {
	t.Helper()
	var out []Task
	for _, task := range (firstKind{}).Spec().Tasks {
		if task.Split == split {
			out = append(out, Task{Task: task, Suite: "first-v1"})
		}
	}
	return out
}
