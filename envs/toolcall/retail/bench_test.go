package retail

import (
	"context"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2/tau2test"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// BenchmarkReplay replays the gold actions of every tau2 retail task
// through the Env (solo): reset, one tool call per step, the closing
// message, and the verifier. It reports tool-call steps per second (the
// steps alone, as an agent's calls against the mock database cost) and
// episodes per second (reset, steps and verify together).
//
//	go test -run '^$' -bench Replay ./envs/toolcall/retail/
func BenchmarkReplay(b *testing.B) {
	tasks := realTasks(b)
	scripts := make([][]gym.Action, len(tasks))
	for i := range tasks {
		scripts[i] = oracleActions(b, &tasks[i])
	}
	tau2test.BenchReplay(b, newEnv(b, nil), tasks, scripts)
}

// BenchmarkStep runs one tool call per step on an episode of the real
// database (no reset between steps): the cost of a step that touches only
// the mock database, schema check included.
func BenchmarkStep(b *testing.B) {
	tasks := realTasks(b)
	env := newEnv(b, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		action gym.Action
	}{
		{"get_order_details", call(ToolOrderDetails, map[string]string{"order_id": "#W2378156"})},
		{"get_user_details", call(ToolUserDetails, map[string]string{"user_id": "yusuf_rossi_9620"})},
		{"get_product_details", call(ToolProductDetails, map[string]string{"product_id": "1656367028"})},
		{"find_user_id_by_name_zip", call(ToolFindByNameZip, map[string]string{"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"})},
		{"find_user_id_by_email", call(ToolFindByEmail, map[string]string{"email": "yusuf.rossi7301@example.com"})},
		{"modify_pending_order_address", call(ToolModifyAddress, map[string]string{"order_id": "#W6247578",
			"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"})},
		{"calculate", call(ToolCalculate, map[string]string{"expression": "155.33 - 147.05 + 268.77 - 235.13"})},
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
