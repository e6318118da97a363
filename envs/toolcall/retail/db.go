package retail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
)

// DB is a tau2 retail database: products, users and orders, each keyed by
// id in the order db.json lists them (tau2 iterates them in that order:
// the first user whose email matches is the one found). A loaded DB is
// shared by every episode of its data folder and never changed; episodes
// write to copies of the records they change (see state).
type DB struct {
	Products   map[string]*Product
	Users      map[string]*User
	Orders     map[string]*Order
	ProductIDs []string // file order
	UserIDs    []string
	OrderIDs   []string
	userList   []*User // Users in UserIDs' order
}

// Product is a type of product and its variant items.
type Product struct {
	Name      string    `json:"name"`
	ProductID string    `json:"product_id"`
	Variants  []Variant `json:"-"` // in file order
	rendered  string    // the JSON tau2 returns, for a record of a loaded DB
}

// Variant is one item of a product: its options, availability and price.
type Variant struct {
	ItemID    string  `json:"item_id"`
	Options   Options `json:"options"`
	Available bool    `json:"available"`
	Price     float64 `json:"price"`
	rendered  string
}

// Options are an item's option names and values, in their order.
type Options []Option

// Option is one option of an item ("color": "blue").
type Option struct{ Name, Value string }

// User is a customer: profile, payment methods and order ids.
type User struct {
	UserID         string          `json:"user_id"`
	Name           Name            `json:"name"`
	Address        Address         `json:"address"`
	Email          string          `json:"email"`
	PaymentMethods []PaymentMethod `json:"-"` // in file order
	Orders         []string        `json:"orders"`
	rendered       string
}

// Name is a user's name.
type Name struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

// Address is a postal address (a user's default or an order's shipping).
type Address struct {
	Address1 string `json:"address1"`
	Address2 string `json:"address2"`
	City     string `json:"city"`
	Country  string `json:"country"`
	State    string `json:"state"`
	Zip      string `json:"zip"`
}

// PaymentMethod is a credit card (Brand, LastFour), a gift card (Balance)
// or a paypal account, by Source.
type PaymentMethod struct {
	Source   string   `json:"source"`
	ID       string   `json:"id"`
	Brand    string   `json:"brand,omitempty"`
	LastFour string   `json:"last_four,omitempty"`
	Balance  *float64 `json:"balance,omitempty"`
}

// Payment sources.
const (
	sourceCreditCard = "credit_card"
	sourceGiftCard   = "gift_card"
	sourcePaypal     = "paypal"
)

// Order is an order: its items, status, fulfilments and payments, and
// what the agent's actions recorded on it (nil: not set, null in JSON).
type Order struct {
	OrderID                 string        `json:"order_id"`
	UserID                  string        `json:"user_id"`
	Address                 Address       `json:"address"`
	Items                   []OrderItem   `json:"items"`
	Status                  string        `json:"status"`
	Fulfillments            []Fulfillment `json:"fulfillments"`
	PaymentHistory          []Payment     `json:"payment_history"`
	CancelReason            *string       `json:"cancel_reason"`
	ExchangeItems           []string      `json:"exchange_items"`
	ExchangeNewItems        []string      `json:"exchange_new_items"`
	ExchangePaymentMethodID *string       `json:"exchange_payment_method_id"`
	ExchangePriceDifference *float64      `json:"exchange_price_difference"`
	ReturnItems             []string      `json:"return_items"`
	ReturnPaymentMethodID   *string       `json:"return_payment_method_id"`
	// exchangeDiffInt: ExchangePriceDifference is Python's int 0, written
	// "0", as tau2 leaves it after an exchange of no items (its models do
	// not convert assigned values); a loaded value is always a float.
	exchangeDiffInt bool
	rendered        string
}

// OrderItem is one item of an order, at the price it was bought for.
type OrderItem struct {
	Name      string  `json:"name"`
	ProductID string  `json:"product_id"`
	ItemID    string  `json:"item_id"`
	Price     float64 `json:"price"`
	Options   Options `json:"options"`
}

// Fulfillment is a shipment: tracking ids and the items in it.
type Fulfillment struct {
	TrackingID []string `json:"tracking_id"`
	ItemIDs    []string `json:"item_ids"`
}

// Payment is a payment or refund of an order.
type Payment struct {
	TransactionType string  `json:"transaction_type"`
	Amount          float64 `json:"amount"`
	PaymentMethodID string  `json:"payment_method_id"`
}

// orderStatuses are the statuses tau2's Order model accepts.
var orderStatuses = []string{"processed", "pending", "pending (item modified)", "delivered", "cancelled",
	"exchange requested", "return requested"}

// ParseDB reads a db.json: {"products": {...}, "users": {...}, "orders":
// {...}}, each an object of records keyed by id. It checks what tau2's
// models require: keys match the records' ids, payment sources are
// credit_card, gift_card (with a balance) or paypal, and order statuses
// and transaction types are tau2's.
func ParseDB(data []byte) (*DB, error) {
	db := &DB{Products: map[string]*Product{}, Users: map[string]*User{}, Orders: map[string]*Order{}}
	seen := map[string]bool{}
	err := tau2.EachMember(data, func(table string, raw json.RawMessage) error {
		seen[table] = true
		switch table {
		case "products":
			return tau2.EachMember(raw, func(id string, raw json.RawMessage) error {
				p, err := parseProduct(id, raw)
				if err != nil {
					return err
				}
				if _, dup := db.Products[id]; !dup {
					db.ProductIDs = append(db.ProductIDs, id)
				}
				db.Products[id] = p
				return nil
			})
		case "users":
			return tau2.EachMember(raw, func(id string, raw json.RawMessage) error {
				u, err := parseUser(id, raw)
				if err != nil {
					return err
				}
				if _, dup := db.Users[id]; !dup {
					db.UserIDs = append(db.UserIDs, id)
				}
				db.Users[id] = u
				return nil
			})
		case "orders":
			return tau2.EachMember(raw, func(id string, raw json.RawMessage) error {
				o, err := parseOrder(id, raw)
				if err != nil {
					return err
				}
				if _, dup := db.Orders[id]; !dup {
					db.OrderIDs = append(db.OrderIDs, id)
				}
				db.Orders[id] = o
				return nil
			})
		}
		return fmt.Errorf("unknown table %q: a retail db has products, users and orders", table)
	})
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"products", "users", "orders"} {
		if !seen[t] {
			return nil, fmt.Errorf("no %q table: a retail db has products, users and orders", t)
		}
	}
	// A loaded DB never changes: render its records once, so reading one
	// costs a lookup. Copies made to change a record drop the rendering.
	for _, p := range db.Products {
		p.rendered = string(appendProduct(nil, p))
		for i := range p.Variants {
			p.Variants[i].rendered = string(appendVariant(nil, &p.Variants[i]))
		}
	}
	for _, id := range db.UserIDs {
		u := db.Users[id]
		u.rendered = string(appendUser(nil, u))
		db.userList = append(db.userList, u)
	}
	for _, o := range db.Orders {
		o.rendered = string(appendOrder(nil, o))
	}
	return db, nil
}

func parseProduct(id string, raw json.RawMessage) (*Product, error) {
	var p Product
	var aux struct {
		Variants json.RawMessage `json:"variants"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("product %s: %w", id, err)
	}
	if err := json.Unmarshal(raw, &aux); err != nil {
		return nil, fmt.Errorf("product %s: %w", id, err)
	}
	if p.ProductID != id {
		return nil, fmt.Errorf("product %s: product_id is %q", id, p.ProductID)
	}
	err := tau2.EachMember(aux.Variants, func(vid string, raw json.RawMessage) error {
		var v Variant
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("variant %s: %w", vid, err)
		}
		if v.ItemID != vid {
			return fmt.Errorf("variant %s: item_id is %q", vid, v.ItemID)
		}
		p.Variants = append(p.Variants, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("product %s: %w", id, err)
	}
	return &p, nil
}

func parseUser(id string, raw json.RawMessage) (*User, error) {
	var u User
	var aux struct {
		PaymentMethods json.RawMessage `json:"payment_methods"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("user %s: %w", id, err)
	}
	if err := json.Unmarshal(raw, &aux); err != nil {
		return nil, fmt.Errorf("user %s: %w", id, err)
	}
	if u.UserID != id {
		return nil, fmt.Errorf("user %s: user_id is %q", id, u.UserID)
	}
	if u.Orders == nil {
		u.Orders = []string{}
	}
	err := tau2.EachMember(aux.PaymentMethods, func(pid string, raw json.RawMessage) error {
		var pm PaymentMethod
		if err := json.Unmarshal(raw, &pm); err != nil {
			return fmt.Errorf("payment method %s: %w", pid, err)
		}
		switch {
		case pm.ID != pid:
			return fmt.Errorf("payment method %s: id is %q", pid, pm.ID)
		case pm.Source == sourceGiftCard && pm.Balance == nil:
			return fmt.Errorf("payment method %s: a gift card needs a balance", pid)
		case pm.Source != sourceGiftCard && pm.Balance != nil:
			return fmt.Errorf("payment method %s: only a gift card has a balance", pid)
		case pm.Source != sourceCreditCard && pm.Source != sourceGiftCard && pm.Source != sourcePaypal:
			return fmt.Errorf("payment method %s: source %q; want credit_card, gift_card or paypal", pid, pm.Source)
		}
		u.PaymentMethods = append(u.PaymentMethods, pm)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", id, err)
	}
	return &u, nil
}

func parseOrder(id string, raw json.RawMessage) (*Order, error) {
	var o Order
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("order %s: %w", id, err)
	}
	if o.OrderID != id {
		return nil, fmt.Errorf("order %s: order_id is %q", id, o.OrderID)
	}
	if !slices.Contains(orderStatuses, o.Status) {
		return nil, fmt.Errorf("order %s: status %q; want one of %q", id, o.Status, orderStatuses)
	}
	for _, p := range o.PaymentHistory {
		if p.TransactionType != "payment" && p.TransactionType != "refund" {
			return nil, fmt.Errorf("order %s: transaction_type %q; want payment or refund", id, p.TransactionType)
		}
	}
	if o.CancelReason != nil && *o.CancelReason != reasonNotNeeded && *o.CancelReason != reasonMistake {
		return nil, fmt.Errorf("order %s: cancel_reason %q; want %q or %q", id, *o.CancelReason, reasonNotNeeded, reasonMistake)
	}
	if o.Items == nil {
		o.Items = []OrderItem{}
	}
	if o.Fulfillments == nil {
		o.Fulfillments = []Fulfillment{}
	}
	if o.PaymentHistory == nil {
		o.PaymentHistory = []Payment{}
	}
	return &o, nil
}

// UnmarshalJSON reads an object of option names to string values, in order.
func (o *Options) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*o = nil
		return nil
	}
	out := Options{}
	err := tau2.EachMember(b, func(k string, raw json.RawMessage) error {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("option %q: %w", k, err)
		}
		out = append(out, Option{k, v})
		return nil
	})
	*o = out
	return err
}

// MarshalJSON writes the options as an object, in order.
func (o Options) MarshalJSON() ([]byte, error) { return appendOptions(nil, o), nil }

func (o Options) equal(p Options) bool {
	return slices.Equal(o, p)
}

// --- copies and comparison ---

func (u *User) clone() *User {
	c := *u
	c.rendered = ""
	c.PaymentMethods = slices.Clone(u.PaymentMethods)
	for i := range c.PaymentMethods {
		if b := c.PaymentMethods[i].Balance; b != nil {
			v := *b
			c.PaymentMethods[i].Balance = &v
		}
	}
	c.Orders = slices.Clone(u.Orders)
	return &c
}

func (o *Order) clone() *Order {
	c := *o
	c.rendered = ""
	c.Items = slices.Clone(o.Items) // Options are never changed in place: shared
	c.Fulfillments = slices.Clone(o.Fulfillments)
	c.PaymentHistory = slices.Clone(o.PaymentHistory)
	c.ExchangeItems = slices.Clone(o.ExchangeItems)
	c.ExchangeNewItems = slices.Clone(o.ExchangeNewItems)
	c.ReturnItems = slices.Clone(o.ReturnItems)
	if o.ExchangePriceDifference != nil {
		v := *o.ExchangePriceDifference
		c.ExchangePriceDifference = &v
	}
	return &c
}

// diffUser names the fields in which two users differ (nil: equal), as
// tau2's database hash tells them apart.
func diffUser(a, b *User) []string {
	var d []string
	if a.UserID != b.UserID {
		d = append(d, "user_id")
	}
	if a.Name != b.Name {
		d = append(d, "name")
	}
	if a.Address != b.Address {
		d = append(d, "address")
	}
	if a.Email != b.Email {
		d = append(d, "email")
	}
	if !slices.EqualFunc(a.PaymentMethods, b.PaymentMethods, func(x, y PaymentMethod) bool {
		return x.Source == y.Source && x.ID == y.ID && x.Brand == y.Brand && x.LastFour == y.LastFour &&
			(x.Balance == nil) == (y.Balance == nil) && (x.Balance == nil || pyval.SameFloat(*x.Balance, *y.Balance))
	}) {
		d = append(d, "payment_methods")
	}
	if !slices.Equal(a.Orders, b.Orders) || (a.Orders == nil) != (b.Orders == nil) {
		d = append(d, "orders")
	}
	return d
}

// diffOrder names the fields in which two orders differ (nil: equal).
func diffOrder(a, b *Order) []string {
	var d []string
	add := func(differ bool, field string) {
		if differ {
			d = append(d, field)
		}
	}
	optStr := func(x, y *string) bool { return (x == nil) != (y == nil) || x != nil && *x != *y }
	strs := func(x, y []string) bool { return (x == nil) != (y == nil) || !slices.Equal(x, y) }
	add(a.OrderID != b.OrderID, "order_id")
	add(a.UserID != b.UserID, "user_id")
	add(a.Address != b.Address, "address")
	add(!slices.EqualFunc(a.Items, b.Items, func(x, y OrderItem) bool {
		return x.Name == y.Name && x.ProductID == y.ProductID && x.ItemID == y.ItemID &&
			pyval.SameFloat(x.Price, y.Price) && x.Options.equal(y.Options)
	}), "items")
	add(a.Status != b.Status, "status")
	add(!slices.EqualFunc(a.Fulfillments, b.Fulfillments, func(x, y Fulfillment) bool {
		return !strs(x.TrackingID, y.TrackingID) && !strs(x.ItemIDs, y.ItemIDs)
	}), "fulfillments")
	add(!slices.EqualFunc(a.PaymentHistory, b.PaymentHistory, func(x, y Payment) bool {
		return x.TransactionType == y.TransactionType && pyval.SameFloat(x.Amount, y.Amount) && x.PaymentMethodID == y.PaymentMethodID
	}), "payment_history")
	add(optStr(a.CancelReason, b.CancelReason), "cancel_reason")
	add(strs(a.ExchangeItems, b.ExchangeItems), "exchange_items")
	add(strs(a.ExchangeNewItems, b.ExchangeNewItems), "exchange_new_items")
	add(optStr(a.ExchangePaymentMethodID, b.ExchangePaymentMethodID), "exchange_payment_method_id")
	x, y := a.ExchangePriceDifference, b.ExchangePriceDifference
	add((x == nil) != (y == nil) || x != nil && (!pyval.SameFloat(*x, *y) || a.exchangeDiffInt != b.exchangeDiffInt), "exchange_price_difference")
	add(strs(a.ReturnItems, b.ReturnItems), "return_items")
	add(optStr(a.ReturnPaymentMethodID, b.ReturnPaymentMethodID), "return_payment_method_id")
	return d
}
