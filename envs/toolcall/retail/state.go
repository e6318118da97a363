package retail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
)

// state is one episode's database: the shared, read-only base DB and the
// records this episode changed or added. A tool that changes a user or an
// order first copies it here (copy on write), so starting an episode costs
// nothing however large the base is, and two states are compared by the
// records either of them changed. To the tools it is a deep copy of the
// base.
type state struct {
	base     *DB
	users    map[string]*User
	orders   map[string]*Order
	products map[string]*Product // only from a task's initialization data
	// ids of records not in the base, in the order they were added
	newUsers, newOrders, newProducts []string
}

func newState(base *DB) *state {
	return &state{base: base, users: map[string]*User{}, orders: map[string]*Order{}}
}

func (s *state) user(id string) (*User, bool) {
	if u, ok := s.users[id]; ok {
		return u, true
	}
	u, ok := s.base.Users[id]
	return u, ok
}

func (s *state) order(id string) (*Order, bool) {
	if o, ok := s.orders[id]; ok {
		return o, true
	}
	o, ok := s.base.Orders[id]
	return o, ok
}

func (s *state) product(id string) (*Product, bool) {
	if p, ok := s.products[id]; ok {
		return p, true
	}
	p, ok := s.base.Products[id]
	return p, ok
}

// userW returns the user to change: this state's own copy.
func (s *state) userW(id string) *User {
	if u, ok := s.users[id]; ok {
		return u
	}
	u := s.base.Users[id].clone()
	s.users[id] = u
	return u
}

// orderW returns the order to change: this state's own copy.
func (s *state) orderW(id string) *Order {
	if o, ok := s.orders[id]; ok {
		return o
	}
	o := s.base.Orders[id].clone()
	s.orders[id] = o
	return o
}

// eachUser calls fn with every user in tau2's iteration order (the base's
// file order, then users added by the task) until fn returns false.
func (s *state) eachUser(fn func(*User) bool) {
	if len(s.users) == 0 { // nothing changed: the base's users in order
		for _, u := range s.base.userList {
			if !fn(u) {
				return
			}
		}
		return
	}
	for _, ids := range [][]string{s.base.UserIDs, s.newUsers} {
		for _, id := range ids {
			u, _ := s.user(id)
			if !fn(u) {
				return
			}
		}
	}
}

// eachProduct calls fn with every product in order until fn returns false.
func (s *state) eachProduct(fn func(*Product) bool) {
	for _, ids := range [][]string{s.base.ProductIDs, s.newProducts} {
		for _, id := range ids {
			p, _ := s.product(id)
			if !fn(p) {
				return
			}
		}
	}
}

// dbDiff is where two states differ: "orders/#W0000001: status, items",
// sorted, at most limit entries (and the count of all).
func dbDiff(a, b *state, limit int) (diffs []string, total int) {
	add := func(table, id string, fields []string) {
		total++
		if len(diffs) < limit {
			s := table + "/" + id
			if len(fields) > 0 {
				s += ": "
				for i, f := range fields {
					if i > 0 {
						s += ", "
					}
					s += f
				}
			}
			diffs = append(diffs, s)
		}
	}
	for _, id := range touched(a.users, b.users) {
		x, okx := a.user(id)
		y, oky := b.user(id)
		switch {
		case okx != oky:
			add("users", id, []string{"only in one"})
		case okx:
			if d := diffUser(x, y); d != nil {
				add("users", id, d)
			}
		}
	}
	for _, id := range touched(a.orders, b.orders) {
		x, okx := a.order(id)
		y, oky := b.order(id)
		switch {
		case okx != oky:
			add("orders", id, []string{"only in one"})
		case okx:
			if d := diffOrder(x, y); d != nil {
				add("orders", id, d)
			}
		}
	}
	for _, id := range touched(a.products, b.products) {
		x, okx := a.product(id)
		y, oky := b.product(id)
		if okx != oky || okx && !sameProduct(x, y) {
			add("products", id, nil)
		}
	}
	// A record added to both at different positions changes tau2's
	// iteration order but not its hash: ids alone are compared.
	return diffs, total
}

// touched lists the ids either overlay holds, sorted.
func touched[V any](a, b map[string]V) []string {
	ids := make([]string, 0, len(a)+len(b))
	for id := range a {
		ids = append(ids, id)
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func sameProduct(a, b *Product) bool {
	if a == b {
		return true
	}
	if a.Name != b.Name || a.ProductID != b.ProductID || len(a.Variants) != len(b.Variants) {
		return false
	}
	for i := range a.Variants {
		x, y := &a.Variants[i], &b.Variants[i]
		if x.ItemID != y.ItemID || !x.Options.equal(y.Options) || x.Available != y.Available || !pyval.SameFloat(x.Price, y.Price) {
			return false
		}
	}
	return true
}

// applyData merges a task's initialization_data.agent_data into the state,
// as tau2 updates its database with it: {"orders": {"#W1": {"status":
// "pending"}}} changes that one field; objects merge key by key, any other
// value replaces; a record id that does not exist adds the record. Order
// is kept: merged keys stay where they were, new ones follow.
func (s *state) applyData(agentData json.RawMessage) error {
	return tau2.EachMember(agentData, func(table string, raw json.RawMessage) error {
		return tau2.EachMember(raw, func(id string, patch json.RawMessage) error {
			if err := s.mergeRecord(table, id, patch); err != nil {
				return fmt.Errorf("agent_data.%s.%s: %w", table, id, err)
			}
			return nil
		})
	})
}

func (s *state) mergeRecord(table, id string, patch json.RawMessage) error {
	var cur []byte
	switch table {
	case "users":
		if u, ok := s.user(id); ok {
			cur = appendUser(nil, u)
		}
	case "orders":
		if o, ok := s.order(id); ok {
			cur = appendOrder(nil, o)
		}
	case "products":
		if p, ok := s.product(id); ok {
			cur = appendProduct(nil, p)
		}
	default:
		return fmt.Errorf("unknown table %q: want products, users or orders", table)
	}
	merged := []byte(patch)
	if cur != nil {
		var err error
		if merged, err = mergeJSON(cur, patch); err != nil {
			return err
		}
	}
	switch table {
	case "users":
		u, err := parseUser(id, merged)
		if err != nil {
			return err
		}
		if _, ok := s.user(id); !ok {
			s.newUsers = append(s.newUsers, id)
		}
		s.users[id] = u
	case "orders":
		o, err := parseOrder(id, merged)
		if err != nil {
			return err
		}
		if _, ok := s.order(id); !ok {
			s.newOrders = append(s.newOrders, id)
		}
		s.orders[id] = o
	case "products":
		p, err := parseProduct(id, merged)
		if err != nil {
			return err
		}
		if _, ok := s.product(id); !ok {
			s.newProducts = append(s.newProducts, id)
		}
		if s.products == nil {
			s.products = map[string]*Product{}
		}
		s.products[id] = p
	}
	return nil
}

// mergeJSON merges patch into base: two objects key by key (base's keys in
// their order, then patch's new ones), anything else replaced by patch.
func mergeJSON(base, patch []byte) ([]byte, error) {
	isObj := func(b []byte) bool {
		b = bytes.TrimSpace(b)
		return len(b) > 0 && b[0] == '{'
	}
	if !isObj(base) || !isObj(patch) {
		return patch, nil
	}
	var pkeys []string
	pvals := map[string]json.RawMessage{}
	if err := tau2.EachMember(patch, func(k string, v json.RawMessage) error {
		if _, dup := pvals[k]; !dup {
			pkeys = append(pkeys, k)
		}
		pvals[k] = v
		return nil
	}); err != nil {
		return nil, err
	}
	out := []byte{'{'}
	seen := map[string]bool{}
	add := func(k string, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(k)
		out = append(append(append(out, kb...), ':'), v...)
	}
	err := tau2.EachMember(base, func(k string, v json.RawMessage) error {
		seen[k] = true
		if p, ok := pvals[k]; ok {
			m, err := mergeJSON(v, p)
			if err != nil {
				return err
			}
			add(k, m)
			return nil
		}
		add(k, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range pkeys {
		if !seen[k] {
			add(k, pvals[k])
		}
	}
	return append(out, '}'), nil
}
