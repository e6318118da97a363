package telecom

import (
	"context"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2/tau2test"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkReplay replays the gold actions of every tau2 telecom task
// through the Env (solo: the user's actions on the phone are the agent's
// calls): reset, one tool call per step, the closing message, and the
// verifier (its gold replay, hashes and assertions). It reports tool-call
// steps per second (the steps alone) and episodes per second (reset,
// steps and verify together).
//
//	go test -run '^$' -bench Replay ./envs/toolcall/telecom/
func BenchmarkReplay(b *testing.B) {
	tasks := realTasks(b)
	scripts := make([][]gym.Action, len(tasks))
	for i := range tasks {
		scripts[i] = oracleActions(b, &tasks[i])
	}
	tau2test.BenchReplay(b, newEnv(b, nil), tasks, scripts)
}

// BenchmarkStep runs one tool call per step on an episode (no reset
// between steps): the cost of a step of each side, schema check included.
func BenchmarkStep(b *testing.B) {
	tasks := realTasks(b)
	env := newEnv(b, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		action gym.Action
	}{
		{ToolCustomerByPhone, call(ToolCustomerByPhone, map[string]string{"phone_number": "555-123-2002"})},
		{ToolBills, call(ToolBills, map[string]any{"customer_id": "C1001", "limit": 3})},
		{ToolDataUsage, call(ToolDataUsage, map[string]string{"customer_id": "C1001", "line_id": "L1002"})},
		{ToolEnableRoaming, call(ToolEnableRoaming, map[string]string{"customer_id": "C1001", "line_id": "L1002"})},
		{ToolStatusBar, call(ToolStatusBar, map[string]any{})},
		{ToolSpeedTest, call(ToolSpeedTest, map[string]any{})},
		{ToolToggleData, call(ToolToggleData, map[string]any{})},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, _, err := env.Reset(ctx, &tasks[0], 1, gym.Options{"user": tau2.ModeSolo}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tr, err := env.Step(ctx, c.action)
				if err != nil || tr.Truncated || tr.Terminated {
					b.Fatalf("%+v %v", tr, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
