package multiturn

import (
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// messageAPI is BFCL's MessageAPI (message_api.py): a workspace's users
// (user_map, user name to user id), an inbox of one-entry
// {receiver id: message} dicts, the logged-in user, and message ids drawn
// from random.Random(random_seed) and kept in a set (generated_ids).
//
// Deviations from the Python, none of which BFCL's data reaches:
//   - A config whose user_map is not a dict, or whose inbox is not a list,
//     is refused by Load (Python would keep it and fail in the methods).
//   - generated_ids, a set in Python, is in State its ids sorted, a list
//     (two sets are == exactly when their sorted lists are); a config's
//     generated_ids (a list or another JSON value, never a set) is kept
//     as it is, and send_message then fails on it as Python does (a
//     list has no add).
//   - A dict key that is not a str (add_contact(user_name=5) makes one)
//     is written in State as a tagged string ("\x00int:5", "\x00None",
//     "\x00float:2.5"), so that the dicts are equal exactly when
//     Python's are; a str key starting with "\x00int:", "\x00float:" or
//     "\x00None" could be confused with one.
//   - A random_seed of None (or NaN) seeds Python's generator from the
//     OS; here too, so the ids are unpredictable as in Python, but not
//     Python's own.
//
// Load is _load_scenario with long_context=False (BFCL's base category);
// the long-context variant is left out, though MessageAPI's Python in
// fact ignores long_context and has no long-context data.
type messageAPI struct {
	rng       *Random
	generated any // msgIDs (Python's set), or the config's generated_ids
	userCount any // user_count as loaded (an int)
	users     *keyDict
	inbox     []any // of *keyDict, or whatever else a config put there
	msgCount  any   // message_count as loaded (an int)
	current   any   // current_user: a user id, or None
}

func init() { register("MessageAPI", func() Class { return &messageAPI{} }) }

// msgDefaultUsers and msgDefaultInbox are DEFAULT_STATE's user_map and
// inbox, used when the config leaves them out.
func msgDefaultUsers() *keyDict {
	d := &keyDict{}
	for _, kv := range [][2]string{{"Alice", "USR001"}, {"Bob", "USR002"}, {"Catherine", "USR003"}, {"Daniel", "USR004"}} {
		d.keys = append(d.keys, kv[0])
		d.vals = append(d.vals, kv[1])
	}
	return d
}

func msgDefaultInbox() []any {
	return []any{
		msgPair("USR002", "My name is Alice. I want to connect."),
		msgPair("USR003", "Could you upload the file?"),
		msgPair("USR004", "Could you upload the file?"),
	}
}

func (m *messageAPI) Load(cfg *pyval.Dict) error {
	seed, ok := cfg.Get("random_seed")
	if !ok {
		seed = int64(200191)
	}
	rng, err := seedRandom(seed)
	if err != nil {
		return err
	}
	m.rng = rng
	m.generated = msgIDs{}
	if v, ok := cfg.Get("generated_ids"); ok {
		m.generated = v
	}
	m.userCount = int64(4)
	if v, ok := cfg.Get("user_count"); ok {
		m.userCount = v
	}
	m.users = msgDefaultUsers()
	if v, ok := cfg.Get("user_map"); ok {
		d, ok := v.(*pyval.Dict)
		if !ok {
			return Raise("user_map is a %s, not a dict", TypeName(v))
		}
		m.users = keyDictOf(d)
	}
	m.inbox = msgDefaultInbox()
	if v, ok := cfg.Get("inbox"); ok {
		l, ok := v.([]any)
		if !ok {
			return Raise("inbox is a %s, not a list", TypeName(v))
		}
		m.inbox = make([]any, len(l))
		for i, e := range l {
			if d, ok := e.(*pyval.Dict); ok {
				m.inbox[i] = keyDictOf(d)
			} else {
				m.inbox[i] = e
			}
		}
	}
	m.msgCount = int64(3)
	if v, ok := cfg.Get("message_count"); ok {
		m.msgCount = v
	}
	m.current = nil
	if v, ok := cfg.Get("current_user"); ok {
		m.current = v
	}
	return nil
}

func (m *messageAPI) State() *pyval.Dict {
	gen := m.generated
	if ids, ok := gen.(msgIDs); ok {
		sorted := make([]int64, 0, len(ids))
		for id := range ids {
			sorted = append(sorted, id)
		}
		slices.Sort(sorted)
		l := make([]any, len(sorted))
		for i, id := range sorted {
			l[i] = id
		}
		gen = l
	}
	inbox := make([]any, len(m.inbox))
	for i, e := range m.inbox {
		if d, ok := e.(*keyDict); ok {
			inbox[i] = d.toDict(msgTag)
		} else {
			inbox[i] = e
		}
	}
	return dictOf(
		"generated_ids", gen,
		"user_count", m.userCount,
		"user_map", m.users.toDict(msgTag),
		"inbox", inbox,
		"message_count", m.msgCount,
		"current_user", m.current,
	)
}

func (m *messageAPI) Methods() []Method {
	return []Method{
		{Name: "list_users", Call: func([]any) (any, error) {
			return dictOf("user_list", m.users.keyList()), nil
		}},
		{Name: "get_user_id", Params: []Param{Req("user")}, Call: m.getUserID},
		{Name: "message_login", Params: []Param{Req("user_id")}, Call: m.login},
		{Name: "message_get_login_status", Call: func([]any) (any, error) {
			return dictOf("login_status", Truthy(m.current)), nil
		}},
		{Name: "send_message", Params: []Param{Req("receiver_id"), Req("message")}, Call: m.send},
		{Name: "delete_message", Params: []Param{Req("receiver_id")}, Call: m.delete},
		{Name: "view_messages_sent", Call: m.viewSent},
		{Name: "add_contact", Params: []Param{Req("user_name")}, Call: m.addContact},
		{Name: "search_messages", Params: []Param{Req("keyword")}, Call: m.search},
		{Name: "get_message_stats", Call: m.stats},
	}
}

// msgNoUser is the answer of the methods that need a logged-in user.
func msgNoUser() *pyval.Dict { return errDict("No user is currently logged in.") }

func (m *messageAPI) getUserID(a []any) (any, error) {
	i, err := m.users.index(a[0])
	if err != nil {
		return nil, err
	}
	if i < 0 {
		return errDict("User '" + Str(a[0]) + "' not found in the workspace."), nil
	}
	return dictOf("user_id", m.users.vals[i]), nil
}

func (m *messageAPI) login(a []any) (any, error) {
	id := a[0]
	if indexOf(m.users.vals, id) < 0 {
		return dictOf("login_status", false, "message", "User ID '"+Str(id)+"' not found."), nil
	}
	m.current = id
	return dictOf("login_status", true, "message", "User '"+Str(id)+"' logged in successfully."), nil
}

func (m *messageAPI) send(a []any) (any, error) {
	to, text := a[0], a[1]
	if !Truthy(m.current) {
		return msgNoUser(), nil
	}
	if indexOf(m.users.vals, to) < 0 {
		return errDict("Receiver ID '" + Str(to) + "' not found."), nil
	}
	id, err := m.newID()
	if err != nil {
		return nil, err
	}
	if err := hashable(to); err != nil {
		return nil, err
	}
	m.inbox = append(m.inbox, msgPair(to, text))
	count, err := arith("+=", m.msgCount, int64(1))
	if err != nil {
		return nil, err
	}
	m.msgCount = count
	return dictOf(
		"sent_status", true,
		"message_id", dictOf("new_id", id),
		"message", "Message sent to '"+Str(to)+"' successfully.",
	), nil
}

// newID is _generate_id: randint(10000, 99999) until the id is not in
// generated_ids, which it is then added to.
func (m *messageAPI) newID() (int64, error) {
	id := m.rng.Intn(10000, 99999)
	for {
		in, err := msgHasID(m.generated, id)
		if err != nil {
			return 0, err
		}
		if !in {
			break
		}
		id = m.rng.Intn(10000, 99999)
	}
	ids, ok := m.generated.(msgIDs)
	if !ok {
		return 0, noAttr(m.generated, "add")
	}
	ids[id] = struct{}{}
	return id, nil
}

func (m *messageAPI) delete(a []any) (any, error) {
	to := a[0]
	if !Truthy(m.current) {
		return msgNoUser(), nil
	}
	for i := len(m.inbox) - 1; i >= 0; i-- {
		receiver, _, err := msgFirst(m.inbox[i])
		if err != nil {
			return nil, err
		}
		if !pyval.Eq(receiver, to) {
			continue
		}
		// list.remove takes out the first message equal to this one,
		// which need not be this one.
		msg := m.inbox[i].(*keyDict)
		j := slices.IndexFunc(m.inbox, func(x any) bool {
			d, ok := x.(*keyDict)
			return ok && (d == msg || d.equal(msg))
		})
		m.inbox = slices.Delete(m.inbox, j, j+1)
		return dictOf(
			"deleted_status", true,
			"receiver_id", receiver,
			"message", "Receiver "+Str(to)+"'s latest message deleted successfully.",
		), nil
	}
	return errDict("Receiver ID " + Str(to) + " not found."), nil
}

// viewSent is view_messages_sent. Its answer is written here as
// json.dumps writes it, since a receiver need not be a str and a
// pyval.Dict's keys are.
func (m *messageAPI) viewSent([]any) (any, error) {
	if !Truthy(m.current) {
		return msgNoUser(), nil
	}
	sent := &keyDict{}
	for _, e := range m.inbox {
		receiver, text, err := msgFirst(e)
		if err != nil {
			return nil, err
		}
		i, _ := sent.index(receiver)
		if i < 0 {
			sent.keys = append(sent.keys, receiver)
			sent.vals = append(sent.vals, []any{text})
		} else {
			sent.vals[i] = append(sent.vals[i].([]any), text)
		}
	}
	b := append([]byte(nil), `{"messages": `...)
	b = sent.appendJSON(b)
	return string(append(b, '}')), nil
}

func (m *messageAPI) addContact(a []any) (any, error) {
	name := a[0]
	i, err := m.users.index(name)
	if err != nil {
		return nil, err
	}
	if i >= 0 {
		return errDict("User name '" + Str(name) + "' already exists."), nil
	}
	count, err := arith("+=", m.userCount, int64(1))
	if err != nil {
		return nil, err
	}
	m.userCount = count
	id := "USR" + msgZfill(Str(m.userCount), 3)
	if indexOf(m.users.vals, id) >= 0 {
		return errDict("User ID '" + id + "' already exists."), nil
	}
	m.users.keys = append(m.users.keys, name)
	m.users.vals = append(m.users.vals, id)
	return dictOf(
		"added_status", true,
		"user_id", id,
		"message", "Contact '"+Str(name)+"' added successfully.",
	), nil
}

func (m *messageAPI) search(a []any) (any, error) {
	if !Truthy(m.current) {
		return msgNoUser(), nil
	}
	keyword, err := lower(a[0])
	if err != nil {
		return nil, err
	}
	results := []any{}
	for _, e := range m.inbox {
		receiver, text, err := msgFirst(e)
		if err != nil {
			return nil, err
		}
		low, err := lower(text)
		if err != nil {
			return nil, err
		}
		if strings.Contains(low, keyword) {
			results = append(results, dictOf("receiver_id", receiver, "message", text))
		}
	}
	return dictOf("results", results), nil
}

func (m *messageAPI) stats([]any) (any, error) {
	if !Truthy(m.current) {
		return msgNoUser(), nil
	}
	contacts := &keyDict{}
	for _, e := range m.inbox {
		receiver, _, err := msgFirst(e)
		if err != nil {
			return nil, err
		}
		if i, _ := contacts.index(receiver); i < 0 {
			contacts.keys = append(contacts.keys, receiver)
			contacts.vals = append(contacts.vals, nil)
		}
	}
	return dictOf("stats", dictOf(
		"received_count", int64(len(m.inbox)),
		"total_contacts", int64(len(contacts.keys)),
	)), nil
}

// msgPair is the one-entry dict {k: v}.
func msgPair(k, v any) *keyDict { return &keyDict{keys: []any{k}, vals: []any{v}} }

// msgTag is a key as State writes it (so that two dicts are equal
// exactly when Python's are): a str as itself, None as "\x00None", a
// number as "\x00int:" or "\x00float:" and numKey.
func msgTag(k any) string {
	switch t := k.(type) {
	case string:
		return t
	case nil:
		return "\x00None"
	}
	text, integral := numKey(k)
	if integral {
		return "\x00int:" + text
	}
	return "\x00float:" + text
}

// msgFirst is list(message.items())[0]: an inbox message's receiver and
// text, or the error Python raises for what is no such message.
func msgFirst(e any) (receiver, text any, err error) {
	d, ok := e.(*keyDict)
	if !ok {
		return nil, nil, noAttr(e, "items")
	}
	if len(d.keys) == 0 {
		return nil, nil, Raise("list index out of range")
	}
	return d.keys[0], d.vals[0], nil
}

// msgIDs is generated_ids as Python's set of ints.
type msgIDs map[int64]struct{}

// msgHasID is id in generated_ids, for the set or whatever a config gave.
func msgHasID(ids any, id int64) (bool, error) {
	if t, ok := ids.(msgIDs); ok {
		_, in := t[id]
		return in, nil
	}
	return contains(ids, id)
}

// msgZfill is s.zfill(width): zeros after any sign up to width.
func msgZfill(s string, width int) string {
	n := len([]rune(s))
	if n >= width {
		return s
	}
	pad := strings.Repeat("0", width-n)
	if s != "" && (s[0] == '+' || s[0] == '-') {
		return s[:1] + pad + s[1:]
	}
	return pad + s
}
