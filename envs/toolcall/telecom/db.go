package telecom

import "slices"

// DB is tau2's TelecomDB, the agent's side: plans, customers, lines, bills
// and devices, each a list in file order (tau2 searches them in order). A
// loaded DB is shared by the episodes of its folder and never changed; an
// episode works on its own copy (clone), a few kilobytes.
type DB struct {
	Plans     []Plan
	Customers []*Customer
	Lines     []*Line
	Bills     []*Bill
	Devices   []Device
}

// Plan is a service plan.
type Plan struct {
	PlanID                  string
	Name                    string
	DataLimitGB             float64
	PricePerMonth           float64
	DataRefuelingPricePerGB float64
}

// Device is a customer's device.
type Device struct {
	DeviceID             string
	DeviceType           string // phone, router, tablet, watch, other
	Model                string
	IMEI                 *string
	IsEsimCapable        bool
	Activated            bool
	ActivationDate       *pyTime
	LastEsimTransferDate *pyTime
}

// Line is a phone or data line. DataUsedGB is a pyNum: the set_data_usage
// helper stores its argument as it is, an int or a float.
type Line struct {
	LineID                 string
	PhoneNumber            string
	Status                 string // Active, Suspended, Pending Activation, Closed
	PlanID                 string
	DeviceID               *string
	DataUsedGB             pyNum
	DataRefuelingGB        float64
	RoamingEnabled         bool
	ContractEndDate        *pyTime
	LastPlanChangeDate     *pyTime
	LastSimReplacementDate *pyTime
	SuspensionStartDate    *pyTime
}

// LineItem is a charge, credit or payment on a bill.
type LineItem struct {
	Description string
	Amount      float64
	Date        pyTime
	ItemType    string
}

// Bill is a customer's bill.
type Bill struct {
	BillID      string
	CustomerID  string
	PeriodStart pyTime
	PeriodEnd   pyTime
	IssueDate   pyTime
	TotalDue    float64
	DueDate     pyTime
	LineItems   []LineItem
	Status      string // Draft, Issued, Awaiting Payment, Paid, Overdue, Disputed
}

// Customer is an account holder.
type Customer struct {
	CustomerID                 string
	FullName                   string
	DateOfBirth                string
	Email                      string
	PhoneNumber                string
	Address                    Address
	AccountStatus              string // Active, Suspended, Pending Verification, Closed
	PaymentMethods             []PaymentMethod
	LineIDs                    []string
	BillIDs                    []string
	CreatedAt                  pyTime
	LastExtensionDate          *pyTime
	GoodwillCreditUsedThisYear float64
}

// Address is a customer's billing address.
type Address struct{ Street, City, State, ZipCode string }

// PaymentMethod is a stored card or account.
type PaymentMethod struct{ MethodType, AccountNumberLast4, ExpirationDate string }

// The enums of tau2's telecom data model.
var (
	deviceTypes     = []string{"phone", "router", "tablet", "watch", "other"}
	lineStatuses    = []string{lineActive, lineSuspended, linePending, "Closed"}
	billStatuses    = []string{billDraft, "Issued", billAwaiting, billPaid, billOverdue, "Disputed"}
	accountStatuses = []string{"Active", "Suspended", "Pending Verification", "Closed"}
	paymentTypes    = []string{"Credit Card", "Debit Card", "PayPal"}
)

const (
	lineActive    = "Active"
	lineSuspended = "Suspended"
	linePending   = "Pending Activation"
	billDraft     = "Draft"
	billAwaiting  = "Awaiting Payment"
	billPaid      = "Paid"
	billOverdue   = "Overdue"
)

// ParseDB reads a db.toml, as TelecomDB's pydantic model reads it: every
// field of its type (a whole number is a float where the model wants one),
// defaults for what is left out, enums and dates checked, nothing else
// allowed.
func ParseDB(toml []byte) (*DB, error) {
	j, err := tomlToJSON(toml)
	if err != nil {
		return nil, err
	}
	return parseDBJSON(j)
}

func parseDBJSON(j []byte) (*DB, error) {
	db := &DB{}
	r := newReader("TelecomDB", j)
	r.list("plans", false, func(r *reader) {
		var p Plan
		r.str("plan_id", &p.PlanID)
		r.str("name", &p.Name)
		r.float("data_limit_gb", &p.DataLimitGB)
		r.float("price_per_month", &p.PricePerMonth)
		r.float("data_refueling_price_per_gb", &p.DataRefuelingPricePerGB)
		db.Plans = append(db.Plans, p)
	})
	r.list("customers", false, func(r *reader) { db.Customers = append(db.Customers, readCustomer(r)) })
	r.list("lines", false, func(r *reader) { db.Lines = append(db.Lines, readLine(r)) })
	r.list("bills", false, func(r *reader) { db.Bills = append(db.Bills, readBill(r)) })
	r.list("devices", false, func(r *reader) {
		d := Device{}
		r.str("device_id", &d.DeviceID)
		r.enum("device_type", &d.DeviceType, deviceTypes, "")
		r.str("model", &d.Model)
		r.optStr("imei", &d.IMEI)
		r.boolean("is_esim_capable", &d.IsEsimCapable, nil)
		f := false
		r.boolean("activated", &d.Activated, &f)
		r.optTime("activation_date", &d.ActivationDate, true)
		r.optTime("last_esim_transfer_date", &d.LastEsimTransferDate, true)
		db.Devices = append(db.Devices, d)
	})
	if err := r.done(); err != nil {
		return nil, err
	}
	return db, nil
}

func readCustomer(r *reader) *Customer {
	c := &Customer{}
	r.str("customer_id", &c.CustomerID)
	r.str("full_name", &c.FullName)
	r.str("date_of_birth", &c.DateOfBirth)
	r.str("email", &c.Email)
	r.str("phone_number", &c.PhoneNumber)
	r.object("address", func(r *reader) {
		r.str("street", &c.Address.Street)
		r.str("city", &c.Address.City)
		r.str("state", &c.Address.State)
		r.str("zip_code", &c.Address.ZipCode)
	})
	r.enum("account_status", &c.AccountStatus, accountStatuses, "Pending Verification")
	r.list("payment_methods", false, func(r *reader) {
		var p PaymentMethod
		r.enum("method_type", &p.MethodType, paymentTypes, "")
		r.str("account_number_last_4", &p.AccountNumberLast4)
		r.str("expiration_date", &p.ExpirationDate)
		c.PaymentMethods = append(c.PaymentMethods, p)
	})
	c.LineIDs = r.strs("line_ids")
	c.BillIDs = r.strs("bill_ids")
	// The model's default, a date where it wants a datetime (pydantic does
	// not check defaults): str() writes it without a time.
	c.CreatedAt = pyTime{s: "2025-01-01", date: true}
	if r.has("created_at") {
		r.time("created_at", &c.CreatedAt, true)
	}
	r.optTime("last_extension_date", &c.LastExtensionDate, false)
	r.floatOr("goodwill_credit_used_this_year", &c.GoodwillCreditUsedThisYear, 0)
	return c
}

func readLine(r *reader) *Line {
	l := &Line{}
	r.str("line_id", &l.LineID)
	r.str("phone_number", &l.PhoneNumber)
	r.enum("status", &l.Status, lineStatuses, linePending)
	r.str("plan_id", &l.PlanID)
	r.optStr("device_id", &l.DeviceID)
	var used float64
	r.floatOr("data_used_gb", &used, 0)
	l.DataUsedGB = floatNum(used)
	r.floatOr("data_refueling_gb", &l.DataRefuelingGB, 0)
	f := false
	r.boolean("roaming_enabled", &l.RoamingEnabled, &f)
	r.optTime("contract_end_date", &l.ContractEndDate, false)
	r.optTime("last_plan_change_date", &l.LastPlanChangeDate, false)
	r.optTime("last_sim_replacement_date", &l.LastSimReplacementDate, false)
	r.optTime("suspension_start_date", &l.SuspensionStartDate, false)
	return l
}

func readBill(r *reader) *Bill {
	b := &Bill{}
	r.str("bill_id", &b.BillID)
	r.str("customer_id", &b.CustomerID)
	r.time("period_start", &b.PeriodStart, false)
	r.time("period_end", &b.PeriodEnd, false)
	r.time("issue_date", &b.IssueDate, false)
	r.float("total_due", &b.TotalDue)
	r.time("due_date", &b.DueDate, false)
	r.list("line_items", false, func(r *reader) {
		var it LineItem
		r.str("description", &it.Description)
		r.float("amount", &it.Amount)
		r.time("date", &it.Date, false)
		r.str("item_type", &it.ItemType)
		b.LineItems = append(b.LineItems, it)
	})
	r.enum("status", &b.Status, billStatuses, billDraft)
	return b
}

// clone is a deep copy: an episode's own database.
func (db *DB) clone() *DB {
	c := &DB{Plans: db.Plans, Devices: db.Devices} // never changed: shared
	c.Customers = make([]*Customer, len(db.Customers))
	for i, x := range db.Customers {
		y := *x
		y.PaymentMethods = slices.Clone(x.PaymentMethods)
		y.LineIDs = slices.Clone(x.LineIDs)
		y.BillIDs = slices.Clone(x.BillIDs)
		c.Customers[i] = &y
	}
	c.Lines = make([]*Line, len(db.Lines))
	for i, x := range db.Lines {
		y := *x
		c.Lines[i] = &y
	}
	c.Bills = make([]*Bill, len(db.Bills))
	for i, x := range db.Bills {
		y := *x
		y.LineItems = slices.Clone(x.LineItems)
		c.Bills[i] = &y
	}
	return c
}

// --- the records as model_dump writes them ---

func optStr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func optTime(t *pyTime) any {
	if t == nil {
		return nil
	}
	return t.s
}

func strList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (p *Plan) py() *obj {
	return dict("plan_id", p.PlanID, "name", p.Name, "data_limit_gb", p.DataLimitGB,
		"price_per_month", p.PricePerMonth, "data_refueling_price_per_gb", p.DataRefuelingPricePerGB)
}

func (d *Device) py() *obj {
	return dict("device_id", d.DeviceID, "device_type", d.DeviceType, "model", d.Model, "imei", optStr(d.IMEI),
		"is_esim_capable", d.IsEsimCapable, "activated", d.Activated, "activation_date", optTime(d.ActivationDate),
		"last_esim_transfer_date", optTime(d.LastEsimTransferDate))
}

func (l *Line) py() *obj {
	return dict("line_id", l.LineID, "phone_number", l.PhoneNumber, "status", l.Status, "plan_id", l.PlanID,
		"device_id", optStr(l.DeviceID), "data_used_gb", l.DataUsedGB, "data_refueling_gb", l.DataRefuelingGB,
		"roaming_enabled", l.RoamingEnabled, "contract_end_date", optTime(l.ContractEndDate),
		"last_plan_change_date", optTime(l.LastPlanChangeDate), "last_sim_replacement_date", optTime(l.LastSimReplacementDate),
		"suspension_start_date", optTime(l.SuspensionStartDate))
}

func (b *Bill) py() *obj {
	items := make([]any, len(b.LineItems))
	for i, it := range b.LineItems {
		items[i] = dict("description", it.Description, "amount", it.Amount, "date", it.Date.s, "item_type", it.ItemType)
	}
	return dict("bill_id", b.BillID, "customer_id", b.CustomerID, "period_start", b.PeriodStart.s,
		"period_end", b.PeriodEnd.s, "issue_date", b.IssueDate.s, "total_due", b.TotalDue, "due_date", b.DueDate.s,
		"line_items", items, "status", b.Status)
}

func (c *Customer) py() *obj {
	pms := make([]any, len(c.PaymentMethods))
	for i, p := range c.PaymentMethods {
		pms[i] = dict("method_type", p.MethodType, "account_number_last_4", p.AccountNumberLast4, "expiration_date", p.ExpirationDate)
	}
	return dict("customer_id", c.CustomerID, "full_name", c.FullName, "date_of_birth", c.DateOfBirth, "email", c.Email,
		"phone_number", c.PhoneNumber, "address", dict("street", c.Address.Street, "city", c.Address.City,
			"state", c.Address.State, "zip_code", c.Address.ZipCode),
		"account_status", c.AccountStatus, "payment_methods", pms, "line_ids", strList(c.LineIDs),
		"bill_ids", strList(c.BillIDs), "created_at", c.CreatedAt.s, "last_extension_date", optTime(c.LastExtensionDate),
		"goodwill_credit_used_this_year", c.GoodwillCreditUsedThisYear)
}

func (db *DB) py() *obj {
	plans := make([]any, len(db.Plans))
	for i := range db.Plans {
		plans[i] = db.Plans[i].py()
	}
	customers := make([]any, len(db.Customers))
	for i, c := range db.Customers {
		customers[i] = c.py()
	}
	lines := make([]any, len(db.Lines))
	for i, l := range db.Lines {
		lines[i] = l.py()
	}
	bills := make([]any, len(db.Bills))
	for i, b := range db.Bills {
		bills[i] = b.py()
	}
	devices := make([]any, len(db.Devices))
	for i := range db.Devices {
		devices[i] = db.Devices[i].py()
	}
	return dict("plans", plans, "customers", customers, "lines", lines, "bills", bills, "devices", devices)
}
