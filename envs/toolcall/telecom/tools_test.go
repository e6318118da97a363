package telecom

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
)

// The built-in smoke tasks, as tau2's Python runs them on the smoke data:
// the hashes at the initial state, the gold actions' results, the hashes
// after them.
func TestSmokeAsTau2(t *testing.T) {
	want := []struct {
		id    string
		init  [2]string
		gold  []string
		final [2]string
	}{
		{"1", [2]string{"cc0b845e12a0e47bfb350978c736244369a7d343d0c37008ceb3bb072cdd6bcd", "eed49a4b5f2d2d27153ae2b5425debaa13d2c3fd8d900436baa91c7687316372"}, []string{"Airplane Mode is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 64%"}, [2]string{"cc0b845e12a0e47bfb350978c736244369a7d343d0c37008ceb3bb072cdd6bcd", "151aabf36d45761de03723044adf48b1a40a1243408f3c1d7220e592265a72f7"}},
		{"2", [2]string{"cc0b845e12a0e47bfb350978c736244369a7d343d0c37008ceb3bb072cdd6bcd", "3af696e811c946195966242c1d678163f8440c650295117245cba40bb4d6c3e9"}, []string{"Roaming enabled successfully", "Data Roaming is now ON.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 📡 Connected to HomeNet | 🔋 64%"}, [2]string{"6a1011723977f89cb1efe2934f0f97c0c9247ad5cf2be8894ff56e4a9ce02054", "89225f44de0dd2d6c62721d252717e649a10b114518e2d58e1296670a4d3c088"}},
		{"3", [2]string{"e17892651165c304777a1ee672fa3ae1ae35ada6114042cbf8104b6adab436d5", "f9b300e1a8fb9a64ce7614d2e664553bc5f15114137faf256d1ecd60d2803586"}, []string{"{\"message\": \"Successfully added 1.0 GB of data for line L2003 for $4.00\", \"new_data_refueling_gb\": \"1.0\", \"charge\": \"4.0\"}"}, [2]string{"89ca0463d83c941a7a87b3ef92250e234921c8bd385b758568cbc295f1c58957", "3fd41a0885e38ef3f6b5f2beba1c688c18bbb1670dab57999785f3e4bb701cdf"}},
		{"4", [2]string{"0eb8ada45c46d105e98ed3ed10c44b8f30725973eebaeb9dcd2506706586058f", "8a0167465cadf0eb328d8dfe58df2e5275df909084d93adf191ae17ce23d50f6"}, []string{"Payment request sent to the customer for bill B2900", "Payment of 55.0 USD has been made for bill B2900.", "{\"message\": \"Line resumed successfully\", \"line\": {\"line_id\": \"L2001\", \"phone_number\": \"555-200-0001\", \"status\": \"Active\", \"plan_id\": \"P2002\", \"device_id\": \"D2001\", \"data_used_gb\": 4.25, \"data_refueling_gb\": 0.0, \"roaming_enabled\": false, \"contract_end_date\": \"2026-10-31\", \"last_plan_change_date\": \"2024-11-02\", \"last_sim_replacement_date\": null, \"suspension_start_date\": null}}", "Restarting network services...\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 📡 Connected to HomeNet | 🔋 64%"}, [2]string{"7a053a1870dcd906d76672b24bae6ec53b723bdb29e824cff2ca05aa40cdcb8b", "4cacfd37170f1d7890013874db6d988e521e0fb67fd9e05ab0eb5d94fc756164"}},
		{"5", [2]string{"cc0b845e12a0e47bfb350978c736244369a7d343d0c37008ceb3bb072cdd6bcd", "ef275ef5d0e601e135c781887e61fa879a23f548b69739a72f0e51799fe5a9db"}, []string{"Success. Permission 'storage' granted to app 'messaging'.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 📡 Connected to HomeNet | 🔋 64%"}, [2]string{"cc0b845e12a0e47bfb350978c736244369a7d343d0c37008ceb3bb072cdd6bcd", "84d617a0bddd2df6bf8ca8d29f6a8d18cce1d4e16058baf96f36c213ede7ed85"}},
	}
	d := NewDomain()
	for _, w := range want {
		task := smokeTask(t, int(w.id[0]-'0'))
		wd := startWorld(t, d, task)
		if got := [2]string{wd.agentHash(), wd.userHash()}; got != w.init {
			t.Errorf("smoke %s: initial hashes\n got %v\nwant %v", w.id, got, w.init)
		}
		c, _ := CriteriaOf(task)
		for j, a := range c.Actions {
			if got := content(t, wd, a.Requestor, a.Name, string(a.Arguments)); got != w.gold[j] {
				t.Errorf("smoke %s: gold action %d %s:\n got %q\nwant %q", w.id, j, a.Name, got, w.gold[j])
			}
		}
		if got := [2]string{wd.agentHash(), wd.userHash()}; got != w.final {
			t.Errorf("smoke %s: final hashes\n got %v\nwant %v", w.id, got, w.final)
		}
	}
}

// A refuel for a customer without a draft bill makes one for next month
// (tau2 names it with a random uuid; here the same name in an episode and
// in its gold replay, so their hashes can agree). The results and the
// hash are tau2's with its uuid replaced by this name.
func TestDraftBill(t *testing.T) {
	tasks := realTasks(t)
	w := startWorld(t, NewDomain(), &tasks[0])
	for _, c := range []struct{ name, args, want string }{
		{ToolRefuelData, `{"customer_id":"C1002","line_id":"L1004","gb_amount":1.5}`,
			`{"message": "Successfully added 1.5 GB of data for line L1004 for $0.15", "new_data_refueling_gb": "1.5", "charge": "0.15000000000000002"}`},
		{ToolBills, `{"customer_id":"C1002","limit":1}`,
			`[{"bill_id": "B41489a8c", "customer_id": "C1002", "period_start": "2025-03-01", "period_end": "2025-03-31", "issue_date": "2025-03-01", "total_due": 0.15000000000000002, "due_date": "2025-03-15", "line_items": [{"description": "Data refueling: 1.5 GB at $0.1/GB", "amount": 0.15000000000000002, "date": "2025-02-25", "item_type": "Charge"}], "status": "Draft"}]`},
	} {
		if got := content(t, w, sideAgent, c.name, c.args); got != c.want {
			t.Errorf("%s(%s):\n got %s\nwant %s", c.name, c.args, got, c.want)
		}
	}
	if got := w.agentHash(); got != "c5e041fc73a6e196b164c05b6b1f425a5a231f9c1ab6677d4542384ed94995f8" {
		t.Errorf("hash %s", got)
	}
}

// connect_vpn gives the phone tau2's default VPN details themselves, which
// break_vpn then makes poor: a later connection is poor too (in tau2 the
// default is shared by a whole process; here by an episode).
func TestVPNDefaultShared(t *testing.T) {
	w := startWorld(t, NewDomain(), smokeTask(t, 1))
	w2 := startWorld(t, NewDomain(), smokeTask(t, 1))
	if _, err := w.call(sideUser, "break_vpn", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ToolDisconnectVPN, ToolConnectVPN} {
		content(t, w, sideUser, name, "{}")
	}
	poor := "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', 'server_performance': <PerformanceLevel.POOR: 'poor'>}"
	if got := content(t, w, sideUser, ToolVPNStatus, "{}"); got != poor {
		t.Errorf("after break_vpn, disconnect, connect: %q", got)
	}
	// A copy (a gold replay) keeps the sharing; another episode has its own.
	c := w.clone()
	content(t, c, sideUser, ToolDisconnectVPN, "{}")
	content(t, c, sideUser, ToolConnectVPN, "{}")
	if got := content(t, c, sideUser, ToolVPNStatus, "{}"); got != poor {
		t.Errorf("in a copy: %q", got)
	}
	content(t, w2, sideUser, ToolConnectVPN, "{}")
	if got := content(t, w2, sideUser, ToolVPNStatus, "{}"); !strings.Contains(got, "EXCELLENT") {
		t.Errorf("another episode: %q", got)
	}
}

// TOML as Python's toml package reads it, in order.
func TestTOML(t *testing.T) {
	for src, want := range map[string]string{
		"a = 1\nb = \"x\" # c\n[t]\nc = [1, 2.5, -3e2]\n":                                                                `{"a":1,"b":"x","t":{"c":[1,2.5,-3e2]}}`,
		"[[a]]\nx = 1\n[[a.b]]\ny = true\n[a.c]\nz = 'lit\\n'\n[[a]]\nx = 2\n":                                           `{"a":[{"x":1,"b":[{"y":true}],"c":{"z":"lit\\n"}},{"x":2}]}`,
		"s = \"\\u00e9\\t\\\"\"\nd = 2025-01-20T14:30:00\ne = [\n  \"a\",\n  \"b\", # x\n]\nf = {g = 1_000, h = 0x1f}\n": `{"s":"é\t\"","d":"2025-01-20T14:30:00","e":["a","b"],"f":{"g":1000,"h":31}}`,
		"m = \"\"\"\nline1\nline2\"\"\"\nx.y = +5\n":                                                                     `{"m":"line1\nline2","x":{"y":5}}`,
	} {
		got, err := tomlToJSON([]byte(src))
		if err != nil || string(got) != want {
			t.Errorf("%q:\n got %s (%v)\nwant %s", src, got, err, want)
		}
	}
	for _, bad := range []string{"a = 1\na = 2\n", "[t]\n[t]\n", "a = \"x\n", "a = inf\n", "a = 01\n", "[a\n", "a 1\n", "a = 1 b = 2\n"} {
		if _, err := tomlToJSON([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Numbers as Python's json reads them: ints stay ints (written without a
// fraction), floats are written as repr writes them, and an int too
// large for a float fails where tau2 makes it one.
func TestNumbers(t *testing.T) {
	for raw, want := range map[string]string{"2": "2", "2.0": "2.0", "-0": "0", "1e2": "100.0", "0.1": "0.1",
		"1000000000000000000000000000000": "1000000000000000000000000000000", "1e400": "inf"} {
		n, err := numOf(json.RawMessage(raw))
		if err != nil || n.String() != want {
			t.Errorf("%s: %v %v, want %s", raw, n, err, want)
		}
	}
	n, _ := numOf(json.RawMessage("1" + strings.Repeat("0", 400)))
	if _, err := n.toFloat(); err == nil || err.Error() != "Error: int too large to convert to float" {
		t.Errorf("a 401-digit int as a float: %v", err)
	}
	if n.sign() != 1 || !math.IsInf(n.f, 1) {
		t.Errorf("sign %d f %v", n.sign(), n.f)
	}
	for _, f := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0.125, 2.675} {
		want := map[float64]string{0.125: "0.12", 2.675: "2.67"}[f]
		if math.IsInf(f, 1) {
			want = "inf"
		} else if math.IsInf(f, -1) {
			want = "-inf"
		} else if math.IsNaN(f) {
			want = "nan"
		}
		if got := fixed2(f); got != want {
			t.Errorf("format(%v, '.2f') = %q, want %q", f, got, want)
		}
	}
}

// The databases are read as tau2's models read them: bad records fail
// with what is wrong.
func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		"[[plans]]\nplan_id = \"P1\"\n",
		"[[lines]]\nline_id = \"L1\"\nphone_number = \"1\"\nplan_id = \"P1\"\nstatus = \"Gone\"\n",
		"[[bills]]\nbill_id = \"B1\"\ncustomer_id = \"C1\"\nperiod_start = \"2025-02-30\"\nperiod_end = \"2025-03-01\"\nissue_date = \"2025-03-01\"\ntotal_due = 1.0\ndue_date = \"2025-03-01\"\n",
		"[[devices]]\ndevice_id = \"D1\"\ndevice_type = \"phone\"\nmodel = \"x\"\nis_esim_capable = true\ncolour = \"red\"\n",
		"flights = []\n",
	} {
		if _, err := ParseDB([]byte(bad)); err == nil {
			t.Errorf("db %q accepted", bad)
		}
	}
	for _, bad := range []string{"[device]\nbattery_level = 1.5\n", "[device]\nsim_card_status = \"lost\"\n", "[surroundings]\nsignal_strength = {\"6G\" = \"good\"}\n"} {
		if _, err := ParseUserDB([]byte(bad)); err == nil {
			t.Errorf("user db %q accepted", bad)
		}
	}
	if _, err := parseInitialState([]byte(`{"initialization_data": {"agent_data": {"lines": []}}}`)); err == nil {
		t.Error("initialization_data accepted")
	}
	if _, err := parseInitialState([]byte(`{"initialization_actions": [{"env_type": "user", "func_name": "enable_roaming", "arguments": {}}]}`)); err == nil {
		t.Error("an agent function run on the user's side accepted")
	}
	if _, err := ParseCriteria([]byte(`{"actions": [{"action_id": "a", "requestor": "user", "name": "refuel_data", "arguments": {}}], "reward_basis": ["ENV_ASSERTION"]}`)); err == nil {
		t.Error("a gold action of the agent's tool by the user accepted")
	}
}

// The tools: tau2's names, a description each, strict schemas, and the
// functions they run.
func TestToolSchemas(t *testing.T) {
	if len(agentTools) != 13 || len(userTools) != 30 || len(soloTools) != 44 {
		t.Errorf("%d agent tools, %d user tools, %d solo; want tau2's 13 and 30, and done", len(agentTools), len(userTools), len(soloTools))
	}
	if _, err := toolcall.NewToolset(soloTools); err != nil {
		t.Fatal(err) // the names do not overlap, as tau2's solo mode checks
	}
	for side, ts := range map[string][]toolcall.Tool{sideAgent: agentTools, sideUser: userTools} {
		n := 0
		for name, f := range functions(side) {
			if f.tool {
				n++
				found := false
				for _, tl := range ts {
					found = found || tl.Name == name
				}
				if !found {
					t.Errorf("%s tool %s is not offered", side, name)
				}
			}
		}
		if n != len(ts) {
			t.Errorf("%s: %d tool functions, %d tools", side, n, len(ts))
		}
		for _, tl := range ts {
			var sch struct {
				AdditionalProperties *bool `json:"additionalProperties"`
			}
			if err := json.Unmarshal(tl.Parameters, &sch); err != nil || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
				t.Errorf("%s: schema %s", tl.Name, tl.Parameters)
			}
			if tl.Description == "" {
				t.Errorf("%s has no description", tl.Name)
			}
		}
	}
}
