package retail

import (
	"encoding/json"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
)

// The retail tools, as tau2's RetailTools has them: the same names,
// parameters, results (the changed record as JSON, or a plain string) and
// errors ("Error: Order not found"). Each runs on a state, so a replay of
// gold actions and an agent's episode run the same code.

// Tool names.
const (
	ToolCalculate         = "calculate"
	ToolCancel            = "cancel_pending_order"
	ToolExchange          = "exchange_delivered_order_items"
	ToolFindByNameZip     = "find_user_id_by_name_zip"
	ToolFindByEmail       = "find_user_id_by_email"
	ToolOrderDetails      = "get_order_details"
	ToolProductDetails    = "get_product_details"
	ToolItemDetails       = "get_item_details"
	ToolUserDetails       = "get_user_details"
	ToolListProducts      = "list_all_product_types"
	ToolModifyAddress     = "modify_pending_order_address"
	ToolModifyItems       = "modify_pending_order_items"
	ToolModifyPayment     = "modify_pending_order_payment"
	ToolModifyUserAddress = "modify_user_address"
	ToolReturn            = "return_delivered_order_items"
	ToolTransfer          = "transfer_to_human_agents"
	// ToolThink is offered only with the reset option "think": true; tau2
	// has the tool but leaves it out of the retail domain.
	ToolThink = "think"
)

// transferResult is what transfer_to_human_agents returns.
const transferResult = "Transfer successful"

// Cancellation reasons tau2 accepts.
const (
	reasonNotNeeded = "no longer needed"
	reasonMistake   = "ordered by mistake"
)

type toolFunc func(s *state, args json.RawMessage) (string, error)

type toolDef struct {
	tool toolcall.Tool
	run  toolFunc
}

// param is one parameter of a tool's schema.
type param struct{ name, typ, desc string }

// schema builds a strict parameters schema: every parameter required, no
// others allowed ("array" is an array of strings).
func schema(ps ...param) json.RawMessage {
	props := map[string]any{}
	req := []string{}
	for _, p := range ps {
		s := map[string]any{"type": p.typ, "description": p.desc}
		if p.typ == "array" {
			s["items"] = map[string]any{"type": "string"}
		}
		props[p.name] = s
		req = append(req, p.name)
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false})
	if err != nil {
		panic(err)
	}
	return b
}

const (
	descOrderID = "The order's id, which starts with '#', such as '#W0000000'."
	descPayment = "The payment method's id, such as 'gift_card_0000000' or 'credit_card_0000000', as the user's or the order's details list it."
	confirm     = " Before calling it, tell the user exactly what will change and get their explicit confirmation (yes)."
)

var (
	pOrder    = param{"order_id", "string", descOrderID}
	pUser     = param{"user_id", "string", "The user's id, such as 'sara_doe_496'."}
	pAddress1 = param{"address1", "string", "The first line of the address, such as '123 Main St'."}
	pAddress2 = param{"address2", "string", "The second line of the address, such as 'Apt 1', or an empty string."}
	pCity     = param{"city", "string", "The city, such as 'San Francisco'."}
	pState    = param{"state", "string", "The state, such as 'CA'."}
	pCountry  = param{"country", "string", "The country, such as 'USA'."}
	pZip      = param{"zip", "string", "The zip code, such as '12345'."}
)

// toolDefs are the retail tools in tau2's order.
var toolDefs = []toolDef{
	{toolcall.Tool{Name: ToolCalculate,
		Description: "Evaluate an arithmetic expression and return the result rounded to two decimals.",
		Parameters: schema(param{"expression", "string",
			"The expression, such as '2 + 2': numbers, the operators + - * /, parentheses and spaces."})}, calculate},
	{toolcall.Tool{Name: ToolCancel,
		Description: "Cancel an order whose status is 'pending'; one already processed or delivered cannot be cancelled." + confirm +
			" The order becomes 'cancelled' and its payments are refunded: at once to a gift card, within 5 to 7 business days to anything else. Returns the order after the cancellation.",
		Parameters: schema(pOrder, param{"reason", "string", "Why the order is cancelled: either 'no longer needed' or 'ordered by mistake'."})}, cancelPendingOrder},
	{toolcall.Tool{Name: ToolExchange,
		Description: "Exchange items of a delivered order for other items of the same products. A delivered order can be returned or exchanged only once, so gather every item first." + confirm +
			" Returns the order after the exchange is requested.",
		Parameters: schema(pOrder,
			param{"item_ids", "array", "The ids of the items to exchange, each such as '1008292230'. An id may appear more than once."},
			param{"new_item_ids", "array", "The ids of the items to exchange them for, one for each entry of item_ids at the same position and of the same product. An id may appear more than once."},
			param{"payment_method_id", "string", "The payment method that pays or receives the price difference. " + descPayment})}, exchangeDeliveredOrderItems},
	{toolcall.Tool{Name: ToolFindByNameZip,
		Description: "Find a user's id by first name, last name and zip code. Look users up by email first; use this when the user cannot remember their email or the email finds nobody. Returns the user id, or an error when there is no such user.",
		Parameters: schema(param{"first_name", "string", "The user's first name, such as 'John'."},
			param{"last_name", "string", "The user's last name, such as 'Doe'."}, pZip)}, findUserIDByNameZip},
	{toolcall.Tool{Name: ToolFindByEmail,
		Description: "Find a user's id by email address. Returns the user id, or an error when there is no such user.",
		Parameters:  schema(param{"email", "string", "The user's email address, such as 'something@example.com'."})}, findUserIDByEmail},
	{toolcall.Tool{Name: ToolOrderDetails,
		Description: "Get an order's status and details.",
		Parameters:  schema(pOrder)}, getOrderDetails},
	{toolcall.Tool{Name: ToolProductDetails,
		Description: "Get a product's inventory: its variant items with their options, availability and prices.",
		Parameters:  schema(param{"product_id", "string", "The product's id, such as '6086499569'. A product id is not an item id."})}, getProductDetails},
	{toolcall.Tool{Name: ToolItemDetails,
		Description: "Get one item's inventory details: its options, availability and price.",
		Parameters:  schema(param{"item_id", "string", "The item's id, such as '6086499569'. An item id is not a product id."})}, getItemDetails},
	{toolcall.Tool{Name: ToolUserDetails,
		Description: "Get a user's profile: name, default address, email, payment methods and the ids of their orders.",
		Parameters:  schema(pUser)}, getUserDetails},
	{toolcall.Tool{Name: ToolListProducts,
		Description: "List every product type of the store by name and product id. Each product type has items of different options, each with its own item id. Returns a JSON object from product names to product ids, sorted by name.",
		Parameters:  schema()}, listAllProductTypes},
	{toolcall.Tool{Name: ToolModifyAddress,
		Description: "Change the shipping address of a pending order." + confirm + " Returns the order after the change.",
		Parameters:  schema(pOrder, pAddress1, pAddress2, pCity, pState, pCountry, pZip)}, modifyPendingOrderAddress},
	{toolcall.Tool{Name: ToolModifyItems,
		Description: "Change items of a pending order to other items of the same products. An order's items can be changed only once, so gather every item first." + confirm +
			" Returns the order after the change.",
		Parameters: schema(pOrder,
			param{"item_ids", "array", "The ids of the items to change, each such as '1008292230'. An id may appear more than once."},
			param{"new_item_ids", "array", "The ids of the items to change them to, one for each entry of item_ids at the same position and of the same product. An id may appear more than once."},
			param{"payment_method_id", "string", "The payment method that pays or receives the price difference. " + descPayment})}, modifyPendingOrderItems},
	{toolcall.Tool{Name: ToolModifyPayment,
		Description: "Pay for a pending order with another payment method; the old one is refunded." + confirm + " Returns the order after the change.",
		Parameters:  schema(pOrder, param{"payment_method_id", "string", "The new payment method. " + descPayment})}, modifyPendingOrderPayment},
	{toolcall.Tool{Name: ToolModifyUserAddress,
		Description: "Change a user's default address." + confirm + " Returns the user after the change.",
		Parameters:  schema(pUser, pAddress1, pAddress2, pCity, pState, pCountry, pZip)}, modifyUserAddress},
	{toolcall.Tool{Name: ToolReturn,
		Description: "Request the return of items of a delivered order: its status becomes 'return requested' and the user is emailed how to send the items back." + confirm +
			" Returns the order after the request.",
		Parameters: schema(pOrder,
			param{"item_ids", "array", "The ids of the items to return, each such as '1008292230'. An id may appear more than once."},
			param{"payment_method_id", "string", "The payment method that receives the refund: the order's original one or a gift card of the user. " + descPayment})}, returnDeliveredOrderItems},
	{toolcall.Tool{Name: ToolTransfer,
		Description: "Transfer the user to a human agent, with a summary of their issue. Transfer only when the user asks for a human agent, or when the policy and your tools cannot solve the issue. It ends your conversation with the user.",
		Parameters:  schema(param{"summary", "string", "A summary of the user's issue."})}, transferToHumanAgents},
}

var thinkDef = toolDef{toolcall.Tool{Name: ToolThink,
	Description: "Think something through. Nothing is looked up or changed; the thought is only kept in the log. Use it for involved reasoning or as a notepad.",
	Parameters:  schema(param{"thought", "string", "The thought."})}, think}

// The tool lists and the tools by name, built before any init runs.
var (
	retailTools     = toolsOf(toolDefs)
	retailThinkTool = toolsOf(append(slices.Clone(toolDefs), thinkDef))
	toolRuns        = runsOf(append(slices.Clone(toolDefs), thinkDef))
)

func toolsOf(defs []toolDef) []toolcall.Tool {
	out := make([]toolcall.Tool, len(defs))
	for i, d := range defs {
		out[i] = d.tool
	}
	return out
}

func runsOf(defs []toolDef) map[string]toolFunc {
	out := map[string]toolFunc{}
	for _, d := range defs {
		out[d.tool.Name] = d.run
	}
	return out
}

// Tools returns the retail tools in the OpenAI function shape, as an
// episode offers them (without think).
func Tools() []toolcall.Tool { return append([]toolcall.Tool(nil), retailTools...) }

// fail is a tool's error as tau2 words it: "Error: " and the message.
func fail(format string, args ...any) error {
	return toolcall.Errorf("Error: "+format, args...)
}

// decode reads a call's arguments (already checked against the schema).
func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fail("%v", err)
	}
	return nil
}

// --- lookups, with tau2's errors ---

func (s *state) getOrder(id string) (*Order, error) {
	o, ok := s.order(id)
	if !ok {
		return nil, fail("Order not found")
	}
	return o, nil
}

func (s *state) getUser(id string) (*User, error) {
	u, ok := s.user(id)
	if !ok {
		return nil, fail("User not found")
	}
	return u, nil
}

func (s *state) getProduct(id string) (*Product, error) {
	p, ok := s.product(id)
	if !ok {
		return nil, fail("Product not found")
	}
	return p, nil
}

func (s *state) getVariant(productID, itemID string) (*Variant, error) {
	p, err := s.getProduct(productID)
	if err != nil {
		return nil, err
	}
	for i := range p.Variants {
		if p.Variants[i].ItemID == itemID {
			return &p.Variants[i], nil
		}
	}
	return nil, fail("Variant not found")
}

// getPaymentMethod returns the index of a user's payment method.
func (s *state) getPaymentMethod(userID, pmID string) (*User, int, error) {
	u, err := s.getUser(userID)
	if err != nil {
		return nil, 0, err
	}
	for i := range u.PaymentMethods {
		if u.PaymentMethods[i].ID == pmID {
			return u, i, nil
		}
	}
	return nil, 0, fail("Payment method not found")
}

// addToGiftCard adds amount to a gift card's balance, rounded to cents as
// tau2 does, on this state's copy of the user.
func (s *state) addToGiftCard(userID string, i int, amount float64) {
	u := s.userW(userID)
	b := pyval.Round2(*u.PaymentMethods[i].Balance + amount)
	u.PaymentMethods[i].Balance = &b
}

// --- read tools ---

func calculate(_ *state, args json.RawMessage) (string, error) {
	var a struct{ Expression string }
	if err := decode(args, &a); err != nil {
		return "", err
	}
	v, err := evalExpression(a.Expression)
	if err != nil {
		return "", fail("%s", err.Error())
	}
	return pyval.FloatRepr(pyval.Round2(v)), nil
}

func findUserIDByNameZip(s *state, args json.RawMessage) (string, error) {
	var a struct {
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Zip       string `json:"zip"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	found := ""
	s.eachUser(func(u *User) bool {
		if u.Address.Zip == a.Zip && lowerEqual(u.Name.FirstName, a.FirstName) && lowerEqual(u.Name.LastName, a.LastName) {
			found = u.UserID
			return false
		}
		return true
	})
	if found == "" {
		return "", fail("User not found")
	}
	return found, nil
}

func findUserIDByEmail(s *state, args json.RawMessage) (string, error) {
	var a struct{ Email string }
	if err := decode(args, &a); err != nil {
		return "", err
	}
	found := ""
	s.eachUser(func(u *User) bool {
		if lowerEqual(u.Email, a.Email) {
			found = u.UserID
			return false
		}
		return true
	})
	if found == "" {
		return "", fail("User not found")
	}
	return found, nil
}

// lowerEqual is Python's a.lower() == b.lower() (tau2.Lower), without
// allocating for ASCII strings.
func lowerEqual(a, b string) bool {
	if len(a) == len(b) {
		ascii := true
		for i := 0; i < len(a); i++ {
			x, y := a[i], b[i]
			if x >= utf8.RuneSelf || y >= utf8.RuneSelf {
				ascii = false
				break
			}
			if 'A' <= x && x <= 'Z' {
				x += 'a' - 'A'
			}
			if 'A' <= y && y <= 'Z' {
				y += 'a' - 'A'
			}
			if x != y {
				return false
			}
		}
		if ascii {
			return true
		}
	}
	return pyval.Lower(a) == pyval.Lower(b)
}

func getOrderDetails(s *state, args json.RawMessage) (string, error) {
	var a struct {
		OrderID string `json:"order_id"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	return orderJSON(o), nil
}

func getProductDetails(s *state, args json.RawMessage) (string, error) {
	var a struct {
		ProductID string `json:"product_id"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	p, err := s.getProduct(a.ProductID)
	if err != nil {
		return "", err
	}
	return productJSON(p), nil
}

func getItemDetails(s *state, args json.RawMessage) (string, error) {
	var a struct {
		ItemID string `json:"item_id"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	var found *Variant
	s.eachProduct(func(p *Product) bool {
		for i := range p.Variants {
			if p.Variants[i].ItemID == a.ItemID {
				found = &p.Variants[i]
				return false
			}
		}
		return true
	})
	if found == nil {
		return "", fail("Item not found")
	}
	return variantJSON(found), nil
}

func getUserDetails(s *state, args json.RawMessage) (string, error) {
	var a struct {
		UserID string `json:"user_id"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	u, err := s.getUser(a.UserID)
	if err != nil {
		return "", err
	}
	return userJSON(u), nil
}

// listAllProductTypes maps product names to ids (a later product with the
// same name wins, as in a Python dict), keys sorted.
func listAllProductTypes(s *state, _ json.RawMessage) (string, error) {
	byName := map[string]string{}
	s.eachProduct(func(p *Product) bool {
		byName[p.Name] = p.ProductID
		return true
	})
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	b := []byte{'{'}
	for i, n := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = pyval.AppendString(b, n)
		b = append(b, ": "...)
		b = pyval.AppendString(b, byName[n])
	}
	return string(append(b, '}')), nil
}

func transferToHumanAgents(_ *state, args json.RawMessage) (string, error) {
	var a struct{ Summary string }
	if err := decode(args, &a); err != nil {
		return "", err
	}
	return transferResult, nil
}

func think(_ *state, args json.RawMessage) (string, error) {
	var a struct{ Thought string }
	if err := decode(args, &a); err != nil {
		return "", err
	}
	return "", nil
}
