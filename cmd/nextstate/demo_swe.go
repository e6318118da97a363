package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/envs/swe/gobuild"
	"github.com/nextstate-rl/nextstate/gym"
)

// demoSWESpecs are the two Go instances of the shipped build list
// (envs/swe/gobuild/instances) that build quickest: the demo builds them
// from the modules' real releases through the Go module proxy (cached under
// ~/.cache/nextstate/swe after the first run) and plays them with their
// gold patches.
var demoSWESpecs = []gobuild.Spec{
	{Module: "github.com/Masterminds/semver/v3", Old: "v3.3.0", New: "v3.3.1"},
	{Module: "github.com/google/uuid", Old: "v1.5.0", New: "v1.6.0"},
}

// demoSWESuite builds the demo's SWE instances and returns them as a suite.
// Progress goes to log; an error (no module proxy, say) means the demo
// skips swe-v1 with the reason.
func demoSWESuite(ctx context.Context, log io.Writer) (*gym.Suite, error) {
	var ins []swe.Instance
	for _, spec := range demoSWESpecs {
		begin := time.Now()
		res, err := gobuild.Build(ctx, spec, gobuild.Options{
			Instances: "-", // keep them in the demo, not in the user's instances file
			Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			return nil, fmt.Errorf("building %s %s→%s: %w", spec.Module, spec.Old, spec.New, err)
		}
		fmt.Fprintf(log, "built SWE instance %s in %.1fs (%d FAIL_TO_PASS, %d PASS_TO_PASS tests)\n",
			res.Instance.InstanceID, time.Since(begin).Seconds(), len(res.Instance.FailToPass), len(res.Instance.PassToPass))
		ins = append(ins, res.Instance)
	}
	tasks, err := swe.TasksFromInstances(ins)
	if err != nil {
		return nil, err
	}
	return &gym.Suite{Name: "demo-swe", Tasks: tasks}, nil
}
