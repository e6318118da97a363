package telecom

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
)

// world is one episode's environment, tau2's TelecomEnvironment: the
// agent's database and the user's phone and surroundings, which sync keeps
// in step after every call, as tau2 does.
type world struct {
	db   *DB
	user *UserDB
	// vpn is the details connect_vpn gives a connection: one object, which
	// a connected phone shares and break_vpn changes (in tau2 a class
	// attribute, shared by every episode of a process; here each episode's
	// own).
	vpn *VPNDetails
	// drafts counts the draft bills the world made (tau2 names them with a
	// random uuid; here "B" and 8 hex digits of a hash of the count, the
	// same in an episode and its gold replay).
	drafts int
}

func newWorld(db *DB, user *UserDB) *world {
	w := &world{db: db.clone(), vpn: defaultVPN()}
	w.user = user.clone(nil, nil)
	return w
}

// clone copies the world: a replay from the same point.
func (w *world) clone() *world {
	c := &world{db: w.db.clone(), vpn: &VPNDetails{}, drafts: w.drafts}
	*c.vpn = *w.vpn
	c.user = w.user.clone(w.vpn, c.vpn)
	return c
}

// A function of one side's toolkit (tau2's TelecomTools or
// TelecomUserTools): a tool (offered to whoever plays that side), a helper
// that sets a task's state up, or an assertion (its result a bool).
type function struct {
	run  func(w *world, a *args) (any, error)
	tool bool
}

// Sides.
const (
	sideAgent = tau2.RequestorAssistant
	sideUser  = tau2.RequestorUser
)

// functions returns a side's toolkit.
func functions(side string) map[string]function {
	if side == sideUser {
		return userFuncs
	}
	return agentFuncs
}

// call runs a side's function, then syncs the world, as tau2's
// environment does after a call that returned (not after one that
// failed: a *toolcall.ToolError).
func (w *world) call(side, name string, raw json.RawMessage) (any, error) {
	f, ok := functions(side)[name]
	if !ok {
		return nil, fmt.Errorf("no function %q in the %s's toolkit", name, side)
	}
	a, err := bind(name, raw)
	if err != nil {
		return nil, err
	}
	out, err := f.run(w, a)
	if err != nil {
		return nil, err
	}
	if err := w.sync(); err != nil {
		return nil, err
	}
	return out, nil
}

// sync is TelecomEnvironment.sync_tools: the user's surroundings follow
// the line of the user's phone number (active, roaming allowed, data used
// up), a payment the user made marks its bill paid, and a bill awaiting
// payment becomes the user's payment request.
func (w *world) sync() error {
	s := &w.user.Surroundings
	if s.PhoneNumber == nil {
		return nil
	}
	line, err := w.lineByPhone(*s.PhoneNumber)
	if err != nil {
		return err
	}
	s.LineActive = line.Status == lineActive
	s.RoamingAllowed = line.RoamingEnabled
	plan, err := w.plan(line.PlanID)
	if err != nil {
		return err
	}
	s.MobileDataUsageExceeded = line.DataUsedGB.f >= plan.DataLimitGB+line.DataRefuelingGB
	if pr := s.PaymentRequest; pr != nil && pr.Paid {
		b, err := w.bill(pr.BillID)
		if err != nil {
			return err
		}
		b.Status = billPaid
		s.PaymentRequest = nil
	}
	if s.PaymentRequest == nil {
		c, err := w.customerByPhone(*s.PhoneNumber)
		if err != nil {
			return err
		}
		bills, err := w.awaitingPayment(c)
		if err != nil {
			return err
		}
		if len(bills) > 0 {
			s.PaymentRequest = &PaymentRequest{BillID: bills[0].BillID, AmountDue: bills[0].TotalDue}
		}
	}
	return nil
}

// newDraftID names a new draft bill.
func (w *world) newDraftID() string {
	w.drafts++
	h := sha256.Sum256([]byte(fmt.Sprintf("draft bill %d", w.drafts)))
	return "B" + hex.EncodeToString(h[:4])
}

// Hashes are tau2's get_db_hash and get_user_db_hash: the SHA-256 of
// json.dumps(model_dump(), sort_keys=True).
func (w *world) agentHash() string { return hashOf(w.db.py()) }
func (w *world) userHash() string  { return hashOf(w.user.py()) }

func hashOf(v any) string {
	h := sha256.Sum256(appendPy(nil, v, true))
	return hex.EncodeToString(h[:])
}

// args are a call's keyword arguments.
type args struct {
	fn   string
	m    map[string]json.RawMessage
	used map[string]bool
	errs []string
}

func bind(fn string, raw json.RawMessage) (*args, error) {
	a := &args{fn: fn, m: map[string]json.RawMessage{}, used: map[string]bool{}}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &a.m); err != nil || a.m == nil {
			return nil, fmt.Errorf("%s: the arguments must be a JSON object", fn)
		}
	}
	return a, nil
}

func (a *args) get(k string, required bool) (json.RawMessage, bool) {
	a.used[k] = true
	v, ok := a.m[k]
	if !ok && required {
		a.errs = append(a.errs, fmt.Sprintf("missing argument %q", k))
	}
	return v, ok
}

func (a *args) str(k string) string {
	var s string
	if v, ok := a.get(k, true); ok && json.Unmarshal(v, &s) != nil {
		a.errs = append(a.errs, fmt.Sprintf("%s: want a string, not %s", k, v))
	}
	return s
}

// optStr is an argument that may be absent or null (nil).
func (a *args) optStr(k string) *string {
	v, ok := a.get(k, false)
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		a.errs = append(a.errs, fmt.Sprintf("%s: want a string, not %s", k, v))
	}
	return &s
}

func (a *args) num(k string) pyNum {
	v, ok := a.get(k, true)
	if !ok {
		return pyNum{}
	}
	n, err := numOf(v)
	if err != nil {
		a.errs = append(a.errs, fmt.Sprintf("%s: %v", k, err))
	}
	return n
}

func (a *args) boolean(k string) bool {
	var b bool
	if v, ok := a.get(k, true); ok && json.Unmarshal(v, &b) != nil {
		a.errs = append(a.errs, fmt.Sprintf("%s: want true or false, not %s", k, v))
	}
	return b
}

// optBool is an argument that may be absent or null (nil).
func (a *args) optBool(k string) *bool {
	v, ok := a.get(k, false)
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		a.errs = append(a.errs, fmt.Sprintf("%s: want true or false, not %s", k, v))
	}
	return &b
}

// check reports arguments that are missing, of the wrong type or
// unknown. The tools' schemas keep an agent's calls from reaching a
// function with such arguments; a task's data that has them fails.
func (a *args) check() error {
	var unknown []string
	for k := range a.m {
		if !a.used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		a.errs = append(a.errs, fmt.Sprintf("unknown argument %q", k))
	}
	if len(a.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", a.fn, strings.Join(a.errs, "; "))
}

// fail is a tool's failure as tau2's environment reports it, "Error: "
// and the exception's message, which the agent reads as the call's result.
func fail(format string, args ...any) error {
	return toolcall.Errorf("Error: "+format, args...)
}
