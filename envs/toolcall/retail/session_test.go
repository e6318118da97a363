package retail

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2/tau2test"
	"github.com/nextstate-rl/nextstate/gym"
)

// The tau2 folder loads as a suite: 114 tasks of tau2-retail-v1 with their
// splits, folder, data and verifier.
func TestLoadSuite(t *testing.T) {
	dir := dataDir(t)
	s, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != 114 {
		t.Fatalf("%d tasks, want 114", len(s.Tasks))
	}
	if n, m := len(s.Split("train")), len(s.Split("test")); n != 74 || m != 40 {
		t.Errorf("splits: %d train, %d test; want 74 and 40", n, m)
	}
	task, ok := s.Task("tau2-retail-0")
	if !ok {
		t.Fatal("no task tau2-retail-0")
	}
	if task.Env != KindName || task.Dir != dir || task.Split != "train" {
		t.Errorf("task 0: env %q dir %q split %q", task.Env, task.Dir, task.Split)
	}
	mustContain(t, task.Instruction, "acting for the user", "Reason for call:\n\t\tYou received your order #W2378156",
		"Known info:\n\t\tYou are Yusuf Rossi in zip code 19122.")
	c, err := CriteriaOf(task)
	if err != nil || len(c.Actions) != 5 || c.Actions[4].Name != ToolExchange {
		t.Errorf("task 0 criteria: %+v %v", c, err)
	}
	if IsRetailDir(t.TempDir()) {
		t.Error("an empty folder is detected as a tau2 retail folder")
	}
}

// A handful of real tasks played by their oracle through a gym.Manager
// session, as `nextstate serve --tasks` serves them, score 1.
func TestManagerSessions(t *testing.T) {
	s, err := gym.LoadSuite(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	tau2test.OracleSessions(t, s, "tau2-retail-0", "tau2-retail-5", "tau2-retail-10", "tau2-retail-24", "tau2-retail-50", "tau2-retail-113", "tau2-retail-smoke-3")
}

func userSettings(url string) gym.Settings {
	return gym.Settings{tau2.SettingUserBaseURL: url + "/v1", tau2.SettingUserModel: "sim-model",
		tau2.SettingUserAPIKeyEnv: "RETAIL_TEST_USER_KEY", tau2.SettingUserTemperature: "0.5", tau2.SettingUserTimeout: "10s"}
}

// A simulated user: its first message opens the episode, it answers the
// agent's messages, and its stop token ends the episode.
func TestSimulatedUser(t *testing.T) {
	t.Setenv("RETAIL_TEST_USER_KEY", "sk-test")
	f := &tau2test.FakeUser{Replies: []tau2test.Reply{
		tau2test.Say("Hi, I'd like to cancel my order #S1004."),
		tau2test.Say("Sure, it's tomas.reyes@example.net. Yes, cancel it please: I no longer need it."),
		tau2test.Say("Thanks, that's all. ###STOP###"),
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
	task := smokeTask(t, 1)
	obs, _, err := env.Reset(ctx, task, 42, nil) // simulated is the default once configured
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, obs.Text(), "Hi, I'd like to cancel my order #S1004.", tau2.FirstAgentMessage, "<policy>")
	if strings.Contains(obs.Text(), "tomas.reyes@example.net") {
		t.Error("the opening shows the agent the user's scenario")
	}
	tr, err := env.Step(ctx, gym.TextAction("Could you give me your email address?"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Terminated || !strings.HasPrefix(tr.Observation.Text(), "Sure, it's tomas.reyes@example.net.") {
		t.Fatalf("reply: %+v", tr)
	}
	actions := oracleActions(t, task)
	for _, a := range actions[:len(actions)-1] {
		if tr, err = env.Step(ctx, a); err != nil || tr.Terminated {
			t.Fatalf("step: %+v %v", tr, err)
		}
	}
	tr, err = env.Step(ctx, gym.TextAction("Your order #S1004 is cancelled; the refund is on your gift card."))
	if err != nil || !tr.Terminated || !strings.Contains(tr.Observation.Text(), tau2.StopToken) {
		t.Fatalf("last step: %+v %v", tr, err)
	}
	r, info, err := env.Verify(ctx)
	if err != nil || r != 1 || info["user"] != tau2.ModeSimulated || info["ended"] != "user "+tau2.StopToken {
		t.Fatalf("verify: %v %v %v", r, info, err)
	}

	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Requests) != 3 {
		t.Fatalf("%d requests, want 3", len(f.Requests))
	}
	req := f.Requests[2]
	if req.Model != "sim-model" || req.Temperature != 0.5 || req.Seed != 42 || f.Auth[0] != "Bearer sk-test" {
		t.Errorf("request: model %q temperature %v seed %d auth %q", req.Model, req.Temperature, req.Seed, f.Auth[0])
	}
	if got := req.Roles(); got != "system user assistant user assistant user" {
		t.Errorf("roles %q: the agent's messages go as user, the simulator's as assistant", got)
	}
	mustContain(t, req.Messages[0].Content, "<scenario>", "tomas.reyes@example.net", tau2.StopToken, tau2.TransferToken, tau2.OutOfScopeToken)
	if req.Messages[1].Content != tau2.FirstAgentMessage {
		t.Errorf("first message to the simulator %q", req.Messages[1].Content)
	}
}

// A failing user simulator is the infrastructure's fault.
func TestSimulatedUserFailure(t *testing.T) {
	t.Setenv("RETAIL_TEST_USER_KEY", "sk-test")
	f := &tau2test.FakeUser{Status: http.StatusBadRequest}
	srv := httptest.NewServer(f)
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
	// Solo needs no simulator.
	if _, _, err := env.Reset(context.Background(), smokeTask(t, 1), 1, gym.Options{"user": tau2.ModeSolo}); err != nil {
		t.Fatal(err)
	}
}

// Settings: bad values are refused; the registered kind is configured by a
// Manager's settings, and a simulated session runs through it.
func TestSettings(t *testing.T) {
	for _, s := range []gym.Settings{
		{tau2.SettingUserBaseURL: "http://x"}, // no model
		{tau2.SettingUserModel: "m", tau2.SettingUserBaseURL: "http://x", tau2.SettingUserTemperature: "hot"},
		{tau2.SettingUserModel: "m", tau2.SettingUserBaseURL: "http://x", tau2.SettingUserTimeout: "-1s"},
		{tau2.SettingUserModel: "m", tau2.SettingUserAPIKeyEnv: "RETAIL_TEST_NO_SUCH_KEY"}, // OpenAI's API without a key
	} {
		if _, err := NewDomain().Configure(context.Background(), s); err == nil {
			t.Errorf("settings %v accepted", s)
		}
	}

	t.Setenv("RETAIL_TEST_USER_KEY", "sk-test")
	f := &tau2test.FakeUser{Replies: []tau2test.Reply{tau2test.Say("Hello, I need help with #S1004."), tau2test.Say("Bye ###STOP###")}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m := gym.NewManager(gym.Config{Settings: userSettings(srv.URL)})
	ctx := context.Background()
	sess, res, err := m.Create(ctx, gym.CreateRequest{TaskID: "tau2-retail-smoke-1"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Observation.Text(), "Hello, I need help with #S1004.")
	st, err := sess.Step(ctx, "", gym.TextAction("I can't help, sorry."))
	if err != nil || !st.Terminated || st.Reward != 0 {
		t.Fatalf("step: %+v %v", st, err)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// After the Manager's shutdown the kind is unconfigured: solo again.
	m2 := gym.NewManager(gym.Config{})
	defer m2.Shutdown(ctx)
	_, res, err = m2.Create(ctx, gym.CreateRequest{TaskID: "tau2-retail-smoke-1"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Observation.Text(), "acting for the user")
}

// A folder of another tau2 domain (airline's has retail's files) fails to
// load with a message that names the domain and the supported ones, and so
// does a retail folder that lacks a file.
func TestOtherDomainFolders(t *testing.T) {
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	airline := t.TempDir()
	write(airline, FileTasks, `[{"id": "0", "user_scenario": {"instructions": {"domain": "airline", "reason_for_call": "x", "task_instructions": "y"}}}]`)
	write(airline, FileDB, `{"flights": {}, "users": {}, "reservations": {}}`)
	write(airline, FilePolicy, "# Airline policy")
	_, err := gym.LoadSuite(airline)
	if err == nil || !strings.Contains(err.Error(), `tau2 domain "airline" is not supported: the supported tau2 domains are `) ||
		!strings.Contains(err.Error(), "retail") {
		t.Errorf("airline folder: %v", err)
	}
	if IsRetailDir(airline) {
		t.Error("the airline folder is detected as a retail folder")
	}
	partial := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dataDir(t), FileTasks))
	if err != nil {
		t.Fatal(err)
	}
	write(partial, FileTasks, string(b))
	write(partial, FilePolicy, "# Policy")
	if _, err := gym.LoadSuite(partial); err == nil || !strings.Contains(err.Error(), "a tau2 retail folder holds db.json, tasks.json, policy.md; this one lacks db.json") {
		t.Errorf("retail folder without db.json: %v", err)
	}
}
