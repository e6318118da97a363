package retail

import (
	"encoding/json"
	"strings"
	"testing"
)

func smokeState(t testing.TB) *state {
	t.Helper()
	src, err := NewDomain().source("", BuiltinSmoke)
	if err != nil {
		t.Fatal(err)
	}
	return newState(src.db)
}

func run(t testing.TB, s *state, name, args string) (string, error) {
	t.Helper()
	return toolRuns[name](s, json.RawMessage(args))
}

// Results are byte for byte what tau2's tools return (these were produced
// by tau2's RetailTools on the smoke store), including json.dumps' spacing,
// the models' field order, Python's float repr, and tau2's quirks: a
// modify of items gives every changed item the last new item's price and
// options, and an exchange of no items leaves the price difference an
// integer 0.
func TestToolResultsAsTau2(t *testing.T) {
	s := smokeState(t)
	steps := []struct{ name, args, want string }{
		{ToolUserDetails, `{"user_id":"tomas_reyes_1002"}`,
			`{"user_id": "tomas_reyes_1002", "name": {"first_name": "Tomas", "last_name": "Reyes"}, "address": {"address1": "9 Harbor Road", "address2": "", "city": "Portland", "country": "USA", "state": "ME", "zip": "04101"}, "email": "tomas.reyes@example.net", "payment_methods": {"paypal_1002": {"source": "paypal", "id": "paypal_1002"}, "gift_card_1002": {"source": "gift_card", "id": "gift_card_1002", "balance": 15.5}}, "orders": ["#S1003", "#S1004"]}`},
		{ToolItemDetails, `{"item_id":"2000000013"}`,
			`{"item_id": "2000000013", "options": {"capacity": "16oz", "color": "green"}, "available": false, "price": 21.0}`},
		{ToolListProducts, `{}`,
			`{"Desk Lamp": "1000000002", "Notebook": "1000000004", "Rain Jacket": "1000000003", "Travel Mug": "1000000001"}`},
		{ToolModifyItems, `{"order_id":"#S1001","item_ids":["2000000011","2000000041"],"new_item_ids":["2000000012","2000000042"],"payment_method_id":"gift_card_1001"}`,
			`{"order_id": "#S1001", "user_id": "mira_holt_1001", "address": {"address1": "14 Orchard Lane", "address2": "Apt 3", "city": "Brookfield", "country": "USA", "state": "WI", "zip": "53005"}, "items": [{"name": "Travel Mug", "product_id": "1000000001", "item_id": "2000000012", "price": 9.75, "options": {"pages": "200", "ruling": "dotted"}}, {"name": "Notebook", "product_id": "1000000004", "item_id": "2000000042", "price": 9.75, "options": {"pages": "200", "ruling": "dotted"}}], "status": "pending (item modified)", "fulfillments": [], "payment_history": [{"transaction_type": "payment", "amount": 24.75, "payment_method_id": "credit_card_1001"}, {"transaction_type": "payment", "amount": 6.0, "payment_method_id": "gift_card_1001"}], "cancel_reason": null, "exchange_items": null, "exchange_new_items": null, "exchange_payment_method_id": null, "exchange_price_difference": null, "return_items": null, "return_payment_method_id": null}`},
		{ToolModifyPayment, `{"order_id":"#S1004","payment_method_id":"paypal_1002"}`,
			`{"order_id": "#S1004", "user_id": "tomas_reyes_1002", "address": {"address1": "9 Harbor Road", "address2": "", "city": "Portland", "country": "USA", "state": "ME", "zip": "04101"}, "items": [{"name": "Travel Mug", "product_id": "1000000001", "item_id": "2000000012", "price": 21.0, "options": {"capacity": "16oz", "color": "red"}}], "status": "pending", "fulfillments": [], "payment_history": [{"transaction_type": "payment", "amount": 21.0, "payment_method_id": "gift_card_1002"}, {"transaction_type": "payment", "amount": 21.0, "payment_method_id": "paypal_1002"}, {"transaction_type": "refund", "amount": 21.0, "payment_method_id": "gift_card_1002"}], "cancel_reason": null, "exchange_items": null, "exchange_new_items": null, "exchange_payment_method_id": null, "exchange_price_difference": null, "return_items": null, "return_payment_method_id": null}`},
		{ToolExchange, `{"order_id":"#S1006","item_ids":[],"new_item_ids":[],"payment_method_id":"credit_card_1004"}`,
			`{"order_id": "#S1006", "user_id": "lena_park_1004", "address": {"address1": "77 Canal Street", "address2": "", "city": "Columbus", "country": "USA", "state": "OH", "zip": "43004"}, "items": [{"name": "Desk Lamp", "product_id": "1000000002", "item_id": "2000000022", "price": 52.75, "options": {"color": "white", "brightness": "high"}}], "status": "exchange requested", "fulfillments": [{"tracking_id": ["900000000006"], "item_ids": ["2000000022"]}], "payment_history": [{"transaction_type": "payment", "amount": 52.75, "payment_method_id": "credit_card_1004"}], "cancel_reason": null, "exchange_items": [], "exchange_new_items": [], "exchange_payment_method_id": "credit_card_1004", "exchange_price_difference": 0, "return_items": null, "return_payment_method_id": null}`},
		{ToolUserDetails, `{"user_id":"mira_holt_1001"}`,
			`{"user_id": "mira_holt_1001", "name": {"first_name": "Mira", "last_name": "Holt"}, "address": {"address1": "14 Orchard Lane", "address2": "Apt 3", "city": "Brookfield", "country": "USA", "state": "WI", "zip": "53005"}, "email": "mira.holt@example.net", "payment_methods": {"credit_card_1001": {"source": "credit_card", "id": "credit_card_1001", "brand": "visa", "last_four": "4242"}, "gift_card_1001": {"source": "gift_card", "id": "gift_card_1001", "balance": 54.0}}, "orders": ["#S1001", "#S1002"]}`},
		{ToolUserDetails, `{"user_id":"tomas_reyes_1002"}`,
			`{"user_id": "tomas_reyes_1002", "name": {"first_name": "Tomas", "last_name": "Reyes"}, "address": {"address1": "9 Harbor Road", "address2": "", "city": "Portland", "country": "USA", "state": "ME", "zip": "04101"}, "email": "tomas.reyes@example.net", "payment_methods": {"paypal_1002": {"source": "paypal", "id": "paypal_1002"}, "gift_card_1002": {"source": "gift_card", "id": "gift_card_1002", "balance": 36.5}}, "orders": ["#S1003", "#S1004"]}`},
		{ToolFindByNameZip, `{"first_name":"MIRA","last_name":"holt","zip":"53005"}`, `mira_holt_1001`},
		{ToolFindByEmail, `{"email":"Lena.Park@Example.net"}`, `lena_park_1004`},
		{ToolCalculate, `{"expression":"52.75 - 45.25"}`, `7.5`},
		{ToolTransfer, `{"summary":"x"}`, `Transfer successful`},
	}
	for i, st := range steps {
		got, err := run(t, s, st.name, st.args)
		if err != nil || got != st.want {
			t.Errorf("step %d %s(%s):\n got  %s (%v)\n want %s", i, st.name, st.args, got, err, st.want)
		}
	}
	// The shared base is untouched: a new state sees the original records.
	if got, _ := run(t, smokeState(t), ToolUserDetails, `{"user_id":"mira_holt_1001"}`); !strings.Contains(got, `"balance": 60.0`) {
		t.Errorf("a change leaked into the shared database: %s", got)
	}
}

// The policy as the tools enforce it, with tau2's messages.
func TestToolPolicyErrors(t *testing.T) {
	cases := []struct{ name, args, want string }{
		{ToolCancel, `{"order_id":"#S1003","reason":"no longer needed"}`, "Error: Non-pending order cannot be cancelled"},
		{ToolCancel, `{"order_id":"#S1001","reason":"changed my mind"}`, "Error: Invalid reason"},
		{ToolCancel, `{"order_id":"#X","reason":"no longer needed"}`, "Error: Order not found"},
		{ToolModifyAddress, `{"order_id":"#S1002","address1":"a","address2":"","city":"c","state":"s","country":"US","zip":"1"}`, "Error: Non-pending order cannot be modified"},
		{ToolModifyItems, `{"order_id":"#S1002","item_ids":[],"new_item_ids":[],"payment_method_id":"credit_card_1001"}`, "Error: Non-pending order cannot be modified"},
		{ToolModifyItems, `{"order_id":"#S1001","item_ids":["2000000011"],"new_item_ids":["2000000011"],"payment_method_id":"credit_card_1001"}`, "Error: The new item id should be different from the old item id"},
		{ToolModifyItems, `{"order_id":"#S1001","item_ids":["2000000011"],"new_item_ids":["2000000013"],"payment_method_id":"credit_card_1001"}`, "Error: New item 2000000013 not found or available"},
		{ToolModifyItems, `{"order_id":"#S1001","item_ids":["2000000011"],"new_item_ids":["2000000022"],"payment_method_id":"credit_card_1001"}`, "Error: Variant not found"},
		{ToolModifyItems, `{"order_id":"#S1001","item_ids":["2000000011","2000000011"],"new_item_ids":["2000000012","2000000012"],"payment_method_id":"credit_card_1001"}`, "Error: 2000000011 not found"},
		{ToolModifyItems, `{"order_id":"#S1001","item_ids":["2000000011"],"new_item_ids":[],"payment_method_id":"credit_card_1001"}`, "Error: The number of items to be exchanged should match"},
		{ToolModifyPayment, `{"order_id":"#S1001","payment_method_id":"credit_card_1001"}`, "Error: The new payment method should be different from the current one"},
		{ToolModifyPayment, `{"order_id":"#S1001","payment_method_id":"paypal_1002"}`, "Error: Payment method not found"},
		{ToolModifyPayment, `{"order_id":"#S1005","payment_method_id":"credit_card_1003"}`, "Error: Non-pending order cannot be modified"},
		{ToolReturn, `{"order_id":"#S1001","item_ids":["2000000011"],"payment_method_id":"credit_card_1001"}`, "Error: Non-delivered order cannot be returned"},
		{ToolReturn, `{"order_id":"#S1006","item_ids":["2000000022"],"payment_method_id":"paypal_1004"}`, "Error: Payment method should be the original payment method"},
		{ToolReturn, `{"order_id":"#S1006","item_ids":["2000000021"],"payment_method_id":"credit_card_1004"}`, "Error: Some item not found"},
		{ToolExchange, `{"order_id":"#S1001","item_ids":[],"new_item_ids":[],"payment_method_id":"credit_card_1001"}`, "Error: Non-delivered order cannot be exchanged"},
		{ToolExchange, `{"order_id":"#S1003","item_ids":["2000000021","2000000021"],"new_item_ids":["2000000022","2000000022"],"payment_method_id":"paypal_1002"}`, "Error: Number of 2000000021 not found."},
		{ToolExchange, `{"order_id":"#S1003","item_ids":["2000000021"],"new_item_ids":["2000000022","2000000022"],"payment_method_id":"paypal_1002"}`, "Error: The number of items to be exchanged should match."},
		{ToolExchange, `{"order_id":"#S1002","item_ids":["2000000031"],"new_item_ids":["2000000033"],"payment_method_id":"gift_card_1001"}`, ""}, // 4.51 from a 60.0 gift card: fine
		{ToolExchange, `{"order_id":"#S1003","item_ids":["2000000021"],"new_item_ids":["2000000022"],"payment_method_id":"gift_card_1002"}`, ""},
		{ToolExchange, `{"order_id":"#S1003","item_ids":["2000000021"],"new_item_ids":["2000000022"],"payment_method_id":"paypal_1002"}`, "Error: Non-delivered order cannot be exchanged"}, // only once
		{ToolUserDetails, `{"user_id":"nobody"}`, "Error: User not found"},
		{ToolFindByNameZip, `{"first_name":"Mira","last_name":"Holt","zip":"53006"}`, "Error: User not found"},
		{ToolProductDetails, `{"product_id":"2000000011"}`, "Error: Product not found"},
		{ToolItemDetails, `{"item_id":"1000000001"}`, "Error: Item not found"},
		{ToolCalculate, `{"expression":"2 + x"}`, "Error: Invalid characters in expression"},
		{ToolCalculate, `{"expression":"1/0"}`, "Error: division by zero"},
	}
	s := smokeState(t)
	for _, c := range cases {
		_, err := run(t, s, c.name, c.args)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s(%s): got %q, want %q", c.name, c.args, got, c.want)
		}
	}
	// A gift card must cover what it pays.
	s = smokeState(t)
	if _, err := run(t, s, ToolModifyItems, `{"order_id":"#S1004","item_ids":["2000000012"],"new_item_ids":["2000000011"],"payment_method_id":"gift_card_1002"}`); err != nil {
		t.Fatal(err) // a refund of 2.5 to the card
	}
	if _, err := run(t, s, ToolCancel, `{"order_id":"#S1004","reason":"ordered by mistake"}`); err == nil || err.Error() != "Error: Non-pending order cannot be cancelled" {
		t.Errorf("cancel after a modify of items: %v", err)
	}
	if _, err := run(t, s, ToolModifyPayment, `{"order_id":"#S1001","payment_method_id":"gift_card_1001"}`); err != nil {
		t.Fatalf("24.75 from a 60.0 gift card: %v", err)
	}
	if _, err := run(t, s, ToolExchange, `{"order_id":"#S1002","item_ids":["2000000031"],"new_item_ids":["2000000033"],"payment_method_id":"gift_card_1002"}`); err == nil {
		t.Error("an exchange charged a gift card of another user")
	}
}

// The initial state of a task: data merged into records, then actions.
func TestInitialState(t *testing.T) {
	is, err := parseInitialState([]byte(`{
		"initialization_data": {"agent_data": {
			"orders": {"#S1005": {"status": "pending"}},
			"users": {"ada_nwosu_1003": {"payment_methods": {"gift_card_9": {"source": "gift_card", "id": "gift_card_9", "balance": 5}}}}
		}},
		"initialization_actions": [{"env_type": "assistant", "func_name": "cancel_pending_order",
			"arguments": {"order_id": "#S1005", "reason": "ordered by mistake"}}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	s := smokeState(t)
	if err := is.apply(s); err != nil {
		t.Fatal(err)
	}
	o, _ := s.order("#S1005")
	u, _ := s.user("ada_nwosu_1003")
	if o.Status != "cancelled" || len(u.PaymentMethods) != 2 || u.PaymentMethods[0].ID != "credit_card_1003" || *u.PaymentMethods[1].Balance != 5 {
		t.Fatalf("order %+v, user %+v", o, u)
	}
	for _, bad := range []string{
		`{"message_history": [{"role": "user", "content": "hi"}]}`,
		`{"initialization_actions": [{"env_type": "user", "func_name": "x", "arguments": {}}]}`,
		`{"initialization_actions": [{"env_type": "assistant", "func_name": "drop_tables", "arguments": {}}]}`,
	} {
		if _, err := parseInitialState([]byte(bad)); err == nil {
			t.Errorf("initial state %s accepted", bad)
		}
	}
}

func TestParseDBErrors(t *testing.T) {
	for _, bad := range []string{
		`{"products": {}, "users": {}}`,
		`{"products": {}, "users": {}, "orders": {}, "reviews": {}}`,
		`{"products": {"1": {"name": "x", "product_id": "2", "variants": {}}}, "users": {}, "orders": {}}`,
		`{"products": {}, "users": {"u": {"user_id": "u", "payment_methods": {"p": {"source": "cash", "id": "p"}}}}, "orders": {}}`,
		`{"products": {}, "users": {}, "orders": {"#1": {"order_id": "#1", "status": "lost"}}}`,
	} {
		if _, err := ParseDB([]byte(bad)); err == nil {
			t.Errorf("db %s accepted", bad)
		}
	}
}

// calculate is Python's eval of the expression, float() and round(, 2):
// the expected answers are what tau2's tool returns.
func TestCalculate(t *testing.T) {
	for expr, want := range map[string]string{
		"2**10": "1024.0", "(1+2)*3.5": "10.5", "7//2": "3.0", "-0.001": "-0.0", "0.1+0.2": "0.3", "10/4": "2.5",
		"2 ** -1": "0.5", "100": "100.0", "0.005+0": "0.01", "1.005*1": "1.0", "2.675": "2.67", ".5+.5": "1.0",
		"1.": "1.0", "00": "0.0", "1/3": "0.33", "123456789*987654321": "1.2193263111263526e+17", "10**20": "1e+20",
		"2--2": "4.0", "+-+3": "-3.0", "7//-2": "-4.0", "-7.5//2": "-4.0", "3*-0.0": "-0.0", "2**3**2": "512.0",
		"-2**2": "-4.0", "2**0.5": "1.41", "-8**0.5": "-2.83", "0/-3": "-0.0", "2**1100/2**1000": "1.2676506002282294e+30",
		"999999999999999999999999999999/7": "1.4285714285714285e+29", "2**-1074": "0.0", "3131.1 + 4777.75 + 367.38": "8276.23",
		"1/0":         "Error: division by zero",
		"1//0":        "Error: integer division or modulo by zero",
		"1.0/0":       "Error: float division by zero",
		"4.0//0":      "Error: float floor division by zero",
		"0**-1":       "Error: 0.0 cannot be raised to a negative power",
		"10**400":     "Error: int too large to convert to float",
		"10.0**400":   "Error: (34, 'Numerical result out of range')",
		"(-8)**(1/3)": "Error: float() argument must be a string or a real number, not 'complex'",
		"abc":         "Error: Invalid characters in expression",
		"1e5":         "Error: Invalid characters in expression",
		"":            "Error: invalid syntax (<string>, line 0)",
		"3 +":         "Error: invalid syntax (<string>, line 1)",
		"((2)":        "Error: '(' was never closed (<string>, line 1)",
		"2)":          "Error: unmatched ')' (<string>, line 1)",
		"007":         "Error: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)",
		"(1 2)":       "Error: invalid syntax. Perhaps you forgot a comma? (<string>, line 1)",
		"(1)(2)":      "Error: 'int' object is not callable",
		"()":          "Error: float() argument must be a string or a real number, not 'tuple'",
		"()+1":        `Error: can only concatenate tuple (not "int") to tuple`,
		"-()":         "Error: bad operand type for unary -: 'tuple'",
		"(*2)":        "Error: cannot use starred expression here (<string>, line 1)",
	} {
		got, err := run(t, nil, ToolCalculate, `{"expression":`+quote(expr)+`}`)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("calculate(%q) = %q, want %q", expr, got, want)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The parameter schemas are strict: every parameter required, nothing
// else allowed, arrays of strings.
func TestToolSchemas(t *testing.T) {
	for _, tool := range retailThinkTool {
		var sch struct {
			Type                 string         `json:"type"`
			Properties           map[string]any `json:"properties"`
			Required             []string       `json:"required"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.Parameters, &sch); err != nil {
			t.Fatal(err)
		}
		if sch.Type != "object" || len(sch.Required) != len(sch.Properties) || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
			t.Errorf("%s: schema %s", tool.Name, tool.Parameters)
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	if len(Tools()) != 16 {
		t.Errorf("%d tools, want tau2's 16", len(Tools()))
	}
}
