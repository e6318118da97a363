package multiturn

import (
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// ticketAPI is BFCL's TicketAPI (ticket_api.py): a queue of support
// tickets and a logged-in user.
type ticketAPI struct {
	queue   []any // of *pyval.Dict tickets
	counter any   // the next ticket id (an int as loaded)
	user    any   // the logged-in user's name, or None
}

func init() { register("TicketAPI", func() Class { return &ticketAPI{} }) }

func (t *ticketAPI) Load(cfg *pyval.Dict) error {
	t.queue, t.counter, t.user = []any{}, int64(1), nil
	if v, ok := cfg.Get("ticket_queue"); ok {
		l, ok := v.([]any)
		if !ok {
			return Raise("ticket_queue is a %s, not a list", TypeName(v))
		}
		t.queue = l
	}
	if v, ok := cfg.Get("ticket_counter"); ok {
		t.counter = v
	}
	if v, ok := cfg.Get("current_user"); ok {
		t.user = v
	}
	return nil
}

func (t *ticketAPI) State() *pyval.Dict {
	return dictOf("ticket_queue", t.queue, "ticket_counter", t.counter, "current_user", t.user)
}

// find is _find_ticket: the first ticket whose "id" == id, or nil.
func (t *ticketAPI) find(id any) *pyval.Dict {
	for _, x := range t.queue {
		if d, ok := x.(*pyval.Dict); ok && pyval.Eq(d.Value("id"), id) {
			return d
		}
	}
	return nil
}

func (t *ticketAPI) Methods() []Method {
	return []Method{
		{Name: "create_ticket", Params: []Param{Req("title"), Opt("description", ""), Opt("priority", int64(1))}, Call: func(a []any) (any, error) {
			if !Truthy(t.user) {
				return errDict("User not authenticated. Please log in to create a ticket."), nil
			}
			low, err := Compare("<", a[2], int64(1))
			if err != nil {
				return nil, err
			}
			high := false
			if !low {
				if high, err = Compare(">", a[2], int64(5)); err != nil {
					return nil, err
				}
			}
			if low || high {
				return errDict("Invalid priority. Priority must be between 1 and 5."), nil
			}
			ticket := dictOf(
				"id", t.counter,
				"title", a[0],
				"description", a[1],
				"status", "Open",
				"priority", a[2],
				"created_by", t.user,
			)
			t.queue = append(t.queue, ticket)
			next, err := arith("+=", t.counter, int64(1))
			if err != nil {
				return nil, err
			}
			t.counter = next
			return ticket, nil
		}},
		{Name: "get_ticket", Params: []Param{Req("ticket_id")}, Call: func(a []any) (any, error) {
			if tk := t.find(a[0]); tk != nil {
				return tk, nil
			}
			return errDict("Ticket with ID " + Str(a[0]) + " not found."), nil
		}},
		{Name: "close_ticket", Params: []Param{Req("ticket_id")}, Call: func(a []any) (any, error) {
			return t.setStatus(a[0], "Closed", "closed", nil)
		}},
		{Name: "resolve_ticket", Params: []Param{Req("ticket_id"), Req("resolution")}, Call: func(a []any) (any, error) {
			return t.setStatus(a[0], "Resolved", "resolved", a[1:])
		}},
		{Name: "edit_ticket", Params: []Param{Req("ticket_id"), Req("updates")}, Call: func(a []any) (any, error) {
			tk := t.find(a[0])
			if tk == nil {
				return errDict("Ticket with ID " + Str(a[0]) + " not found."), nil
			}
			upd, ok := a[1].(*pyval.Dict)
			if !ok {
				return nil, noAttr(a[1], "keys")
			}
			// Python joins a set, whose order is the string hashes';
			// the keys' own order is used here.
			var invalid []string
			for _, k := range upd.Keys {
				switch k {
				case "title", "description", "status", "priority":
				default:
					invalid = append(invalid, k)
				}
			}
			if len(invalid) > 0 {
				return errDict("Invalid fields for update: " + strings.Join(invalid, ", ")), nil
			}
			for i, k := range upd.Keys {
				if upd.Vals[i] != nil {
					tk.Set(k, upd.Vals[i])
				}
			}
			return dictOf("status", "Ticket "+Str(a[0])+" has been updated successfully."), nil
		}},
		{Name: "ticket_login", Params: []Param{Req("username"), Req("password")}, Call: func(a []any) (any, error) {
			if Truthy(a[0]) && Truthy(a[1]) {
				t.user = a[0]
				return dictOf("success", true), nil
			}
			return dictOf("success", false), nil
		}},
		{Name: "ticket_get_login_status", Call: func([]any) (any, error) {
			return dictOf("login_status", Truthy(t.user)), nil
		}},
		{Name: "logout", Call: func([]any) (any, error) {
			if Truthy(t.user) {
				t.user = nil
				return dictOf("success", true), nil
			}
			return dictOf("success", false), nil
		}},
		{Name: "get_user_tickets", Params: []Param{Opt("status", nil)}, Call: func(a []any) (any, error) {
			if !Truthy(t.user) {
				return []any{errDict("User not authenticated. Please log in to view tickets.")}, nil
			}
			var mine []any
			for _, x := range t.queue {
				if d, ok := x.(*pyval.Dict); ok && pyval.Eq(d.Value("created_by"), t.user) {
					mine = append(mine, d)
				}
			}
			if Truthy(a[0]) {
				want, err := lower(a[0])
				if err != nil {
					return nil, err
				}
				var kept []any
				for _, x := range mine {
					s, _ := x.(*pyval.Dict).Value("status").(string)
					if pyval.Lower(s) == want {
						kept = append(kept, x)
					}
				}
				mine = kept
			}
			if mine == nil {
				mine = []any{}
			}
			return mine, nil
		}},
	}
}

// setStatus is close_ticket and resolve_ticket: resolution, when given,
// is recorded too.
func (t *ticketAPI) setStatus(id any, status, verb string, resolution []any) (any, error) {
	tk := t.find(id)
	if tk == nil {
		return errDict("Ticket with ID " + Str(id) + " not found."), nil
	}
	if pyval.Eq(tk.Value("status"), status) {
		return errDict("Ticket with ID " + Str(id) + " is already " + verb + "."), nil
	}
	tk.Set("status", status)
	if resolution != nil {
		tk.Set("resolution", resolution[0])
	}
	return dictOf("status", "Ticket "+Str(id)+" has been "+verb+" successfully."), nil
}
