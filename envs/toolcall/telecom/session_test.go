package telecom

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2/tau2test"
	"github.com/nextstate-rl/nextstate/gym"
)

// The tau2 folder loads as a suite: its 20 tasks of tau2-telecom-v1, in
// the split that lists them ("small").
func TestLoadSuite(t *testing.T) {
	dir := dataDir(t)
	s, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != 20 || len(s.Split("small")) != 20 {
		t.Fatalf("%d tasks, %d in split small; want 20", len(s.Tasks), len(s.Split("small")))
	}
	id := "tau2-telecom-[service_issue]airplane_mode_on[PERSONA:None]"
	task, ok := s.Task(id)
	if !ok {
		t.Fatalf("no task %s", id)
	}
	if task.Env != KindName || task.Dir != dir || task.Labels["tau2_id"] != "[service_issue]airplane_mode_on[PERSONA:None]" {
		t.Errorf("task: env %q dir %q labels %v", task.Env, task.Dir, task.Labels)
	}
	mustContain(t, task.Instruction, "<ticket>", "555-123-2002")
	c, err := CriteriaOf(task)
	if err != nil || len(c.Actions) != 1 || !c.Actions[0].ByUser() || len(c.EnvAssertions) != 2 {
		t.Errorf("criteria: %+v %v", c, err)
	}
	if IsTelecomDir(t.TempDir()) {
		t.Error("an empty folder is detected as a tau2 telecom folder")
	}
}

// Real tasks played by their oracle through a gym.Manager session, as
// `nextstate serve --tasks` serves them, score 1.
func TestManagerSessions(t *testing.T) {
	s, err := gym.LoadSuite(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	tau2test.OracleSessions(t, s, s.Tasks[0].ID, s.Tasks[7].ID, s.Tasks[12].ID, s.Tasks[13].ID, "tau2-telecom-smoke-4")
}

func userSettings(url string) gym.Settings {
	return gym.Settings{tau2.SettingUserBaseURL: url + "/v1", tau2.SettingUserModel: "sim-model",
		tau2.SettingUserAPIKeyEnv: "TELECOM_TEST_USER_KEY", tau2.SettingUserTimeout: "10s"}
}

// A simulated user with a phone: it checks and changes the phone with its
// tools when the agent asks, and tells the agent what it sees; its tool
// calls stay out of the agent's view and count in the verdict.
func TestSimulatedUserWithPhone(t *testing.T) {
	t.Setenv("TELECOM_TEST_USER_KEY", "sk-test")
	f := &tau2test.FakeUser{Replies: []tau2test.Reply{
		tau2test.Say("Hi, my phone has had no signal since this morning."),
		tau2test.ToolCall("look_at_phone", `{}`), // not a tool: the user reads the error
		tau2test.ToolCall(ToolStatusBar, `{}`),
		tau2test.Say("It shows an airplane."),
		tau2test.ToolCall(ToolAirplane, `{}`),
		tau2test.Say("Done, I have signal again. Thanks! ###STOP###"),
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()
	d, err := NewDomain().Configure(ctx, userSettings(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(ctx)
	env := newEnv(t, d)
	obs, info, err := env.Reset(ctx, smokeTask(t, 1), 7, nil) // simulated is the default once configured
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, obs.Text(), "no signal since this morning", tau2.FirstAgentMessage, "<main_policy>", "Smoke Carrier: agent policy\n")
	if n := len(info["tools"].([]map[string]any)); n != len(agentTools) {
		t.Errorf("%d tools, want the agent's %d", n, len(agentTools))
	}
	tr, err := env.Step(ctx, gym.TextAction("What does the status bar of your phone show?"))
	if err != nil || tr.Terminated || tr.Observation.Text() != "It shows an airplane." {
		t.Fatalf("reply: %+v %v", tr, err)
	}
	tr, err = env.Step(ctx, gym.TextAction("Please turn airplane mode off."))
	if err != nil || !tr.Terminated {
		t.Fatalf("last reply: %+v %v", tr, err)
	}
	r, vinfo, err := env.Verify(ctx)
	if err != nil || r != 1 || vinfo["user_calls"] != 2 || vinfo["ended"] != "user "+tau2.StopToken {
		t.Fatalf("verify: %v %v %v", r, vinfo, err)
	}
	log := vinfo["user_tool_calls"].([]gym.Info)
	if len(log) != 3 || !strings.Contains(log[0]["error"].(string), `unknown tool "look_at_phone"`) ||
		log[1]["result"] != "Status Bar: ✈️ Airplane Mode | 🔋 64%" || !strings.HasPrefix(log[2]["result"].(string), "Airplane Mode is now OFF.") {
		t.Fatalf("user tool calls %v", log)
	}

	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Requests) != 6 || len(f.Requests[0].Tools) != len(userTools) {
		t.Fatalf("%d requests, %d tools", len(f.Requests), len(f.Requests[0].Tools))
	}
	req := f.Requests[3]
	if got := req.Roles(); got != "system user assistant user assistant tool assistant tool" {
		t.Errorf("roles %q", got)
	}
	if m := req.Messages[7]; m.Role != "tool" || m.Content != "Status Bar: ✈️ Airplane Mode | 🔋 64%" || m.ToolCallID != "call_3" {
		t.Errorf("tool message %+v", m)
	}
	mustContain(t, req.Messages[0].Content, "<scenario>", "Ana Pereira", "## Your tools", tau2.StopToken)
}

// A failing user simulator is the infrastructure's fault; solo needs none.
func TestSimulatedUserFailure(t *testing.T) {
	t.Setenv("TELECOM_TEST_USER_KEY", "sk-test")
	srv := httptest.NewServer(&tau2test.FakeUser{Status: http.StatusBadRequest})
	defer srv.Close()
	d, err := NewDomain().Configure(context.Background(), userSettings(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, d)
	_, _, err = env.Reset(context.Background(), smokeTask(t, 1), 1, gym.Options{"user": tau2.ModeSimulated})
	var fe *gym.FaultError
	if !errors.As(err, &fe) || fe.Fault != gym.FaultInfra || fe.Reason != "user_simulator" {
		t.Fatalf("got %v, want an infrastructure fault", err)
	}
	if _, _, err := env.Reset(context.Background(), smokeTask(t, 1), 1, gym.Options{"user": tau2.ModeSolo}); err != nil {
		t.Fatal(err)
	}
}

// The registered kind is configured by a Manager's settings; after the
// Manager's shutdown it is unconfigured: solo again.
func TestSettings(t *testing.T) {
	t.Setenv("TELECOM_TEST_USER_KEY", "sk-test")
	srv := httptest.NewServer(&tau2test.FakeUser{Replies: []tau2test.Reply{tau2test.Say("No signal here."), tau2test.Say("Bye ###STOP###")}})
	defer srv.Close()
	ctx := context.Background()
	m := gym.NewManager(gym.Config{Settings: userSettings(srv.URL)})
	sess, res, err := m.Create(ctx, gym.CreateRequest{TaskID: "tau2-telecom-smoke-1"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Observation.Text(), "No signal here.")
	st, err := sess.Step(ctx, "", gym.TextAction("I can't help, sorry."))
	if err != nil || !st.Terminated || st.Reward != 0 {
		t.Fatalf("step: %+v %v", st, err)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := gym.NewManager(gym.Config{})
	defer m2.Shutdown(ctx)
	_, res, err = m2.Create(ctx, gym.CreateRequest{TaskID: "tau2-telecom-smoke-1"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Observation.Text(), "<ticket>", "working a ticket alone")
}
