package telecom

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The agent's side: tau2's TelecomTools, its tools, the helpers tasks set
// their state up with, and its assertions, with tau2's results (a model or
// a dict as json.dumps writes it, or a string) and its errors ("Error:
// Line L9 not found for customer C1001"), checked in tau2's order.

// today is tau2's get_today(): the domain's fixed date.
var today = time.Date(2025, 2, 25, 0, 0, 0, 0, time.UTC)

func dateStr(t time.Time) pyTime { return pyTime{s: t.Format("2006-01-02"), date: true} }

func todayPtr() *pyTime { t := dateStr(today); return &t }

// --- lookups, with tau2's errors ---

func (w *world) customerByID(id string) (*Customer, error) {
	for _, c := range w.db.Customers {
		if c.CustomerID == id {
			return c, nil
		}
	}
	return nil, fail("Customer with ID %s not found", id)
}

func (w *world) customerByPhone(phone string) (*Customer, error) {
	for _, c := range w.db.Customers {
		if c.PhoneNumber == phone {
			return c, nil
		}
		for _, id := range c.LineIDs {
			l, err := w.lineByID(id)
			if err != nil {
				return nil, err
			}
			if l.PhoneNumber == phone {
				return c, nil
			}
		}
	}
	return nil, fail("Customer with phone number %s not found", phone)
}

func (w *world) lineByPhone(phone string) (*Line, error) {
	for _, l := range w.db.Lines {
		if l.PhoneNumber == phone {
			return l, nil
		}
	}
	return nil, fail("Line with phone number %s not found", phone)
}

func (w *world) lineByID(id string) (*Line, error) {
	for _, l := range w.db.Lines {
		if l.LineID == id {
			return l, nil
		}
	}
	return nil, fail("Line with ID %s not found", id)
}

func (w *world) plan(id string) (*Plan, error) {
	for i := range w.db.Plans {
		if w.db.Plans[i].PlanID == id {
			return &w.db.Plans[i], nil
		}
	}
	return nil, fail("Plan with ID %s not found", id)
}

func (w *world) device(id string) (*Device, error) {
	for i := range w.db.Devices {
		if w.db.Devices[i].DeviceID == id {
			return &w.db.Devices[i], nil
		}
	}
	return nil, fail("Device with ID %s not found", id)
}

func (w *world) bill(id string) (*Bill, error) {
	for _, b := range w.db.Bills {
		if b.BillID == id {
			return b, nil
		}
	}
	return nil, fail("Bill with ID %s not found", id)
}

// targetLine is a customer's line: the customer must hold it.
func (w *world) targetLine(customerID, lineID string) (*Line, error) {
	c, err := w.customerByID(customerID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(c.LineIDs, lineID) {
		return nil, fail("Line %s not found for customer %s", lineID, customerID)
	}
	return w.lineByID(lineID)
}

// lineArg reads a call's customer_id and line_id, checks the arguments
// (the caller reads any others first), and returns the customer's line.
func (w *world) lineArg(a *args) (*Line, string, error) {
	cid, lid := a.str("customer_id"), a.str("line_id")
	if err := a.check(); err != nil {
		return nil, "", err
	}
	l, err := w.targetLine(cid, lid)
	return l, lid, err
}

func (w *world) awaitingPayment(c *Customer) ([]*Bill, error) {
	var out []*Bill
	for _, id := range c.BillIDs {
		b, err := w.bill(id)
		if err != nil {
			return nil, err
		}
		if b.Status == billAwaiting {
			out = append(out, b)
		}
	}
	return out, nil
}

// Agent tool names.
const (
	ToolCustomerByPhone = "get_customer_by_phone"
	ToolCustomerByID    = "get_customer_by_id"
	ToolCustomerByName  = "get_customer_by_name"
	ToolDetailsByID     = "get_details_by_id"
	ToolSuspendLine     = "suspend_line"
	ToolResumeLine      = "resume_line"
	ToolBills           = "get_bills_for_customer"
	ToolPaymentRequest  = "send_payment_request"
	ToolDataUsage       = "get_data_usage"
	ToolEnableRoaming   = "enable_roaming"
	ToolDisableRoaming  = "disable_roaming"
	ToolTransfer        = "transfer_to_human_agents"
	ToolRefuelData      = "refuel_data"
)

const transferResult = "Transfer successful"

var agentFuncs = map[string]function{
	ToolCustomerByPhone: {tool: true, run: func(w *world, a *args) (any, error) {
		phone := a.str("phone_number")
		if err := a.check(); err != nil {
			return nil, err
		}
		c, err := w.customerByPhone(phone)
		if err != nil {
			return nil, err
		}
		return dumps(c.py()), nil
	}},
	ToolCustomerByID: {tool: true, run: func(w *world, a *args) (any, error) {
		id := a.str("customer_id")
		if err := a.check(); err != nil {
			return nil, err
		}
		c, err := w.customerByID(id)
		if err != nil {
			return nil, err
		}
		return dumps(c.py()), nil
	}},
	ToolCustomerByName: {tool: true, run: func(w *world, a *args) (any, error) {
		name, dob := a.str("full_name"), a.str("dob")
		if err := a.check(); err != nil {
			return nil, err
		}
		out := []any{}
		want := pyval.Lower(name)
		for _, c := range w.db.Customers {
			if pyval.Lower(c.FullName) == want && c.DateOfBirth == dob {
				out = append(out, c.py())
			}
		}
		return dumps(out), nil
	}},
	ToolDetailsByID: {tool: true, run: func(w *world, a *args) (any, error) {
		id := a.str("id")
		if err := a.check(); err != nil {
			return nil, err
		}
		var rec interface{ py() *obj }
		var err error
		switch {
		case len(id) > 0 && id[0] == 'L':
			rec, err = w.lineByID(id)
		case len(id) > 0 && id[0] == 'D':
			rec, err = w.device(id)
		case len(id) > 0 && id[0] == 'B':
			rec, err = w.bill(id)
		case len(id) > 0 && id[0] == 'C':
			rec, err = w.customerByID(id)
		case len(id) > 0 && id[0] == 'P':
			rec, err = w.plan(id)
		default:
			return nil, fail("Unknown ID format or type: %s", id)
		}
		if err != nil {
			return nil, err
		}
		return dumps(rec.py()), nil
	}},
	ToolSuspendLine: {tool: true, run: func(w *world, a *args) (any, error) {
		a.str("reason") // tau2 logs it
		l, _, err := w.lineArg(a)
		if err != nil {
			return nil, err
		}
		if l.Status != lineActive {
			return nil, fail("Line must be active to suspend")
		}
		l.Status, l.SuspensionStartDate = lineSuspended, todayPtr()
		return dumps(dict("message", "Line suspended successfully. $5/month holding fee will apply.", "line", l.py())), nil
	}},
	ToolResumeLine: {tool: true, run: func(w *world, a *args) (any, error) {
		l, _, err := w.lineArg(a)
		if err != nil {
			return nil, err
		}
		if l.Status != lineSuspended && l.Status != linePending {
			return nil, fail("Line must be suspended to resume")
		}
		l.Status, l.SuspensionStartDate = lineActive, nil
		return dumps(dict("message", "Line resumed successfully", "line", l.py())), nil
	}},
	ToolBills: {tool: true, run: getBillsForCustomer},
	ToolPaymentRequest: {tool: true, run: func(w *world, a *args) (any, error) {
		cid, bid := a.str("customer_id"), a.str("bill_id")
		if err := a.check(); err != nil {
			return nil, err
		}
		c, err := w.customerByID(cid)
		if err != nil {
			return nil, err
		}
		awaiting, err := w.awaitingPayment(c)
		if err != nil {
			return nil, err
		}
		if len(awaiting) > 0 {
			return nil, fail("A bill is already awaiting payment for this customer")
		}
		if !slices.Contains(c.BillIDs, bid) {
			return nil, fail("Bill %s not found for customer %s", bid, cid)
		}
		b, err := w.bill(bid)
		if err != nil {
			return nil, err
		}
		b.Status = billAwaiting
		return "Payment request sent to the customer for bill " + b.BillID, nil
	}},
	ToolDataUsage: {tool: true, run: func(w *world, a *args) (any, error) {
		l, lid, err := w.lineArg(a)
		if err != nil {
			return nil, err
		}
		p, err := w.plan(l.PlanID)
		if err != nil {
			return nil, err
		}
		// The first of next month (of January when today is in December,
		// in the same year, as tau2 computes it), less a day.
		month := today.Month() + 1
		if today.Month() == 12 {
			month = 1
		}
		end := time.Date(today.Year(), month, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
		return dumps(dict("line_id", lid, "data_used_gb", pyStr(l.DataUsedGB), "data_limit_gb", pyStr(p.DataLimitGB),
			"data_refueling_gb", pyStr(l.DataRefuelingGB), "cycle_end_date", dateStr(end).s)), nil
	}},
	ToolEnableRoaming: {tool: true, run: func(w *world, a *args) (any, error) {
		return setRoaming(w, a, true)
	}},
	ToolDisableRoaming: {tool: true, run: func(w *world, a *args) (any, error) {
		return setRoaming(w, a, false)
	}},
	ToolTransfer: {tool: true, run: func(w *world, a *args) (any, error) {
		a.str("summary")
		if err := a.check(); err != nil {
			return nil, err
		}
		return transferResult, nil
	}},
	ToolRefuelData: {tool: true, run: refuelData},

	// Helpers of tasks' initial states.
	"get_available_plan_ids": {run: func(w *world, a *args) (any, error) {
		if err := a.check(); err != nil {
			return nil, err
		}
		var ids []any
		for _, p := range w.db.Plans {
			ids = append(ids, p.PlanID)
		}
		return ids, nil
	}},
	"set_data_usage": {run: func(w *world, a *args) (any, error) {
		used := a.num("data_used_gb")
		l, lid, err := w.lineArg(a)
		if err != nil {
			return nil, err
		}
		l.DataUsedGB = used
		return fmt.Sprintf("Data usage set to %s GB for line %s", used, lid), nil
	}},
	"suspend_line_for_overdue_bill": {run: suspendLineForOverdueBill},

	// Assertions.
	"assert_data_refueling_amount": {run: func(w *world, a *args) (any, error) {
		want := a.num("expected_amount")
		l, _, err := w.lineArg(a)
		if err != nil {
			return nil, err
		}
		return math.Abs(l.DataRefuelingGB-want.f) < 1e-6, nil
	}},
	"assert_line_status": {run: func(w *world, a *args) (any, error) {
		want := a.str("expected_status")
		l, _, err := w.lineArg(a)
		if err != nil {
			return nil, err
		}
		return l.Status == want, nil
	}},
	"assert_overdue_bill_exists": {run: func(w *world, a *args) (any, error) {
		cid, bid := a.str("customer_id"), a.str("overdue_bill_id")
		if err := a.check(); err != nil {
			return nil, err
		}
		c, err := w.customerByID(cid)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(c.BillIDs, bid) {
			return nil, fail("Overdue bill %s not found", bid)
		}
		b, err := w.bill(bid)
		if err != nil {
			return nil, err
		}
		if b.Status != billOverdue {
			return nil, fail("Overdue bill %s is not overdue", bid)
		}
		return true, nil
	}},
	"assert_no_overdue_bill": {run: func(w *world, a *args) (any, error) {
		bid := a.str("overdue_bill_id")
		if err := a.check(); err != nil {
			return nil, err
		}
		b, err := w.bill(bid)
		return err != nil || b.Status == billPaid, nil
	}},
}

func setRoaming(w *world, a *args, on bool) (any, error) {
	l, _, err := w.lineArg(a)
	if err != nil {
		return nil, err
	}
	switch {
	case on && l.RoamingEnabled:
		return "Roaming was already enabled", nil
	case !on && !l.RoamingEnabled:
		return "Roaming was already disabled", nil
	}
	l.RoamingEnabled = on
	if on {
		return "Roaming enabled successfully", nil
	}
	return "Roaming disabled successfully", nil
}

// getBillsForCustomer lists a customer's bills, newest issue date first
// (a stable sort, as Python's), at most limit of them as Python slices a
// list ([:limit]: a negative limit leaves that many out).
func getBillsForCustomer(w *world, a *args) (any, error) {
	cid := a.str("customer_id")
	limit := pyNum{isInt: true, lit: "12", f: 12}
	if v, ok := a.get("limit", false); ok {
		if n, err := numOf(v); err == nil {
			limit = n
		} else {
			a.errs = append(a.errs, "limit: "+err.Error())
		}
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	c, err := w.customerByID(cid)
	if err != nil {
		return nil, err
	}
	bills := make([]*Bill, 0, len(c.BillIDs))
	for _, id := range c.BillIDs {
		b, err := w.bill(id)
		if err != nil {
			return nil, err
		}
		bills = append(bills, b)
	}
	sort.SliceStable(bills, func(i, j int) bool { return bills[i].IssueDate.s > bills[j].IssueDate.s })
	if !limit.isInt {
		return nil, fail("slice indices must be integers or None or have an __index__ method")
	}
	n := len(bills)
	if k, err := strconv.Atoi(limit.lit); err == nil {
		if k < 0 {
			k += len(bills)
		}
		n = max(0, min(k, len(bills)))
	} else if limit.sign() < 0 {
		n = 0 // a negative int beyond any length
	}
	out := make([]any, n)
	for i := range out {
		out[i] = bills[i].py()
	}
	return dumps(out), nil
}

func refuelData(w *world, a *args) (any, error) {
	gb, cid := a.num("gb_amount"), a.str("customer_id")
	l, lid, err := w.lineArg(a)
	if err != nil {
		return nil, err
	}
	if gb.sign() <= 0 {
		return nil, fail("Refuel amount must be positive")
	}
	p, err := w.plan(l.PlanID)
	if err != nil {
		return nil, err
	}
	gbf, err := gb.toFloat()
	if err != nil {
		return nil, err
	}
	charge := gbf * p.DataRefuelingPricePerGB
	l.DataRefuelingGB += gbf
	if err := w.applyOneTimeCharge(cid, charge, fmt.Sprintf("Data refueling: %s GB at $%s/GB", gb, pyval.FloatRepr(p.DataRefuelingPricePerGB))); err != nil {
		return nil, err
	}
	return dumps(dict("message", fmt.Sprintf("Successfully added %s GB of data for line %s for $%s", gb, lid, fixed2(charge)),
		"new_data_refueling_gb", pyStr(l.DataRefuelingGB), "charge", pyStr(charge))), nil
}

// fixed2 is Python's format(f, ".2f").
func fixed2(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// applyOneTimeCharge adds a charge (or a credit) to the customer's draft
// bill, making one for next month when there is none.
func (w *world) applyOneTimeCharge(customerID string, amount float64, description string) error {
	c, err := w.customerByID(customerID)
	if err != nil {
		return err
	}
	var draft *Bill
	for _, id := range c.BillIDs {
		b, err := w.bill(id)
		if err != nil {
			return err
		}
		if b.Status == billDraft {
			draft = b
			break
		}
	}
	if draft == nil {
		next := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 32)
		next = time.Date(next.Year(), next.Month(), 1, 0, 0, 0, 0, time.UTC)
		draft = &Bill{BillID: w.newDraftID(), CustomerID: customerID, PeriodStart: dateStr(next),
			PeriodEnd: dateStr(next.AddDate(0, 1, -1)), IssueDate: dateStr(next), DueDate: dateStr(next.AddDate(0, 0, 14)),
			Status: billDraft}
		w.db.Bills = append(w.db.Bills, draft)
		c.BillIDs = append(c.BillIDs, draft.BillID)
	}
	kind := "Charge"
	if amount < 0 {
		kind = "Credit"
	}
	draft.LineItems = append(draft.LineItems, LineItem{Description: description, Amount: amount, Date: dateStr(today), ItemType: kind})
	draft.TotalDue += amount
	return nil
}

// suspendLineForOverdueBill is the helper with which tasks break a line:
// a new overdue bill of last month for the plan's price, the line
// suspended (and its contract ended last month, if asked).
func suspendLineForOverdueBill(w *world, a *args) (any, error) {
	cid, lid, bid, ended := a.str("customer_id"), a.str("line_id"), a.str("new_bill_id"), a.boolean("contract_ended")
	if err := a.check(); err != nil {
		return nil, err
	}
	l, err := w.lineByID(lid)
	if err != nil {
		return nil, err
	}
	if l.Status != lineActive {
		return nil, fail("Line must be active to suspend for unpaid bill")
	}
	p, err := w.plan(l.PlanID)
	if err != nil {
		return nil, err
	}
	amount := p.PricePerMonth
	if amount <= 0 {
		return nil, fail("Amount must be positive for overdue bill")
	}
	c, err := w.customerByID(cid)
	if err != nil {
		return nil, err
	}
	for _, id := range c.BillIDs {
		b, err := w.bill(id)
		if err != nil {
			return nil, err
		}
		if b.Status == billOverdue {
			return nil, fail("Customer already has an overdue bill")
		}
	}
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	lastDay := first.AddDate(0, 0, -1)
	firstDay := time.Date(lastDay.Year(), lastDay.Month(), 1, 0, 0, 0, 0, time.UTC)
	b := &Bill{BillID: bid, CustomerID: cid, PeriodStart: dateStr(firstDay), PeriodEnd: dateStr(lastDay),
		IssueDate: dateStr(firstDay), DueDate: dateStr(firstDay.AddDate(0, 0, 14)), Status: billOverdue,
		LineItems: []LineItem{{Description: "Charge for line " + l.LineID, Amount: amount, Date: dateStr(today), ItemType: "Charge"}},
		TotalDue:  amount}
	w.db.Bills = append(w.db.Bills, b)
	c.BillIDs = append(c.BillIDs, bid)
	l.Status, l.SuspensionStartDate = lineSuspended, todayPtr()
	if ended {
		t := dateStr(lastDay)
		l.ContractEndDate = &t
	}
	return fmt.Sprintf("Line %s suspended for unpaid bill %s. Contract ended: %s", lid, bid, pyStr(ended)), nil
}
