package retail

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The tools that change the database. Each checks what tau2's checks, in
// the same order, so the same mistake gets the same error; where tau2
// changes records before it fails (a refund to a gift card before a
// missing payment method is found), so do these.

const (
	statusPending  = "pending"
	statusModified = "pending (item modified)"
	statusDeliverd = "delivered"
)

func countOf(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

func itemIDs(o *Order) []string {
	ids := make([]string, len(o.Items))
	for i := range o.Items {
		ids[i] = o.Items[i].ItemID
	}
	return ids
}

// firstItem is the index of the first item of o with id, or -1.
func firstItem(o *Order, id string) int {
	for i := range o.Items {
		if o.Items[i].ItemID == id {
			return i
		}
	}
	return -1
}

func sortedCopy(ss []string) []string {
	out := append([]string{}, ss...) // never nil: an empty list is [], not null
	slices.Sort(out)
	return out
}

func strPtr(s string) *string { return &s }

func isGiftCard(u *User, i int) bool { return u.PaymentMethods[i].Source == sourceGiftCard }

func cancelPendingOrder(s *state, args json.RawMessage) (string, error) {
	var a struct {
		OrderID string `json:"order_id"`
		Reason  string `json:"reason"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	if o.Status != statusPending {
		return "", fail("Non-pending order cannot be cancelled")
	}
	if a.Reason != reasonNotNeeded && a.Reason != reasonMistake {
		return "", fail("Invalid reason")
	}
	refunds := make([]Payment, 0, len(o.PaymentHistory))
	for _, p := range o.PaymentHistory {
		refunds = append(refunds, Payment{TransactionType: "refund", Amount: p.Amount, PaymentMethodID: p.PaymentMethodID})
		u, err := s.getUser(o.UserID)
		if err != nil {
			return "", err
		}
		_, i, err := s.getPaymentMethod(u.UserID, p.PaymentMethodID)
		if err != nil {
			return "", err
		}
		if isGiftCard(u, i) {
			s.addToGiftCard(u.UserID, i, p.Amount)
		}
	}
	w := s.orderW(a.OrderID)
	w.Status = "cancelled"
	w.CancelReason = strPtr(a.Reason)
	w.PaymentHistory = append(w.PaymentHistory, refunds...)
	return orderJSON(w), nil
}

// itemChange is the arguments of exchange and modify items.
type itemChange struct {
	OrderID         string   `json:"order_id"`
	ItemIDs         []string `json:"item_ids"`
	NewItemIDs      []string `json:"new_item_ids"`
	PaymentMethodID string   `json:"payment_method_id"`
}

func exchangeDeliveredOrderItems(s *state, args json.RawMessage) (string, error) {
	var a itemChange
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	if o.Status != statusDeliverd {
		return "", fail("Non-delivered order cannot be exchanged")
	}
	all := itemIDs(o)
	for _, id := range a.ItemIDs {
		if countOf(a.ItemIDs, id) > countOf(all, id) {
			return "", fail("Number of %s not found.", id)
		}
	}
	if len(a.ItemIDs) != len(a.NewItemIDs) {
		return "", fail("The number of items to be exchanged should match.")
	}
	diff := 0.0
	for k, id := range a.ItemIDs {
		i := firstItem(o, id)
		if i < 0 {
			return "", fail("Item %s not found", id)
		}
		v, err := s.getVariant(o.Items[i].ProductID, a.NewItemIDs[k])
		if err != nil {
			return "", err
		}
		if !v.Available {
			return "", fail("New item %s not found or available", a.NewItemIDs[k])
		}
		diff += v.Price - o.Items[i].Price
	}
	diff = pyval.Round2(diff)
	u, i, err := s.getPaymentMethod(o.UserID, a.PaymentMethodID)
	if err != nil {
		return "", err
	}
	if isGiftCard(u, i) && *u.PaymentMethods[i].Balance < diff {
		return "", fail("Insufficient gift card balance to pay for the price difference")
	}
	w := s.orderW(a.OrderID)
	w.Status = "exchange requested"
	w.ExchangeItems = sortedCopy(a.ItemIDs)
	w.ExchangeNewItems = sortedCopy(a.NewItemIDs)
	w.ExchangePaymentMethodID = strPtr(a.PaymentMethodID)
	w.ExchangePriceDifference = &diff
	w.exchangeDiffInt = len(a.ItemIDs) == 0
	return orderJSON(w), nil
}

// modifyPendingOrderItems keeps a quirk of tau2's: every changed item gets
// the price and options of the last new item in the list, not its own
// (the price difference charged is computed per item, correctly).
func modifyPendingOrderItems(s *state, args json.RawMessage) (string, error) {
	var a itemChange
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	if o.Status != statusPending {
		return "", fail("Non-pending order cannot be modified")
	}
	all := itemIDs(o)
	for _, id := range a.ItemIDs {
		if countOf(a.ItemIDs, id) > countOf(all, id) {
			return "", fail("%s not found", id)
		}
	}
	if len(a.ItemIDs) != len(a.NewItemIDs) {
		return "", fail("The number of items to be exchanged should match")
	}
	diff := 0.0
	var last *Variant
	for k, id := range a.ItemIDs {
		if id == a.NewItemIDs[k] {
			return "", fail("The new item id should be different from the old item id")
		}
		i := firstItem(o, id)
		if i < 0 {
			return "", fail("Item %s not found", id)
		}
		v, err := s.getVariant(o.Items[i].ProductID, a.NewItemIDs[k])
		if err != nil {
			return "", err
		}
		if !v.Available {
			return "", fail("New item %s not found or available", a.NewItemIDs[k])
		}
		diff += v.Price - o.Items[i].Price
		last = v
	}
	u, i, err := s.getPaymentMethod(o.UserID, a.PaymentMethodID)
	if err != nil {
		return "", err
	}
	gift := isGiftCard(u, i)
	if gift && *u.PaymentMethods[i].Balance < diff {
		return "", fail("Insufficient gift card balance to pay for the new item")
	}
	w := s.orderW(a.OrderID)
	kind := "refund"
	if diff > 0 {
		kind = "payment"
	}
	w.PaymentHistory = append(w.PaymentHistory, Payment{TransactionType: kind, Amount: math.Abs(diff), PaymentMethodID: a.PaymentMethodID})
	if gift {
		s.addToGiftCard(u.UserID, i, -diff)
	}
	for k, id := range a.ItemIDs {
		j := firstItem(w, id)
		if j < 0 {
			return "", fail("Item %s not found", id)
		}
		w.Items[j].ItemID = a.NewItemIDs[k]
		w.Items[j].Price = last.Price
		w.Items[j].Options = last.Options
	}
	w.Status = statusModified
	return orderJSON(w), nil
}

func modifyPendingOrderPayment(s *state, args json.RawMessage) (string, error) {
	var a struct {
		OrderID         string `json:"order_id"`
		PaymentMethodID string `json:"payment_method_id"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	if !strings.Contains(o.Status, statusPending) {
		return "", fail("Non-pending order cannot be modified")
	}
	u, i, err := s.getPaymentMethod(o.UserID, a.PaymentMethodID)
	if err != nil {
		return "", err
	}
	if len(o.PaymentHistory) != 1 || o.PaymentHistory[0].TransactionType != "payment" {
		return "", fail("There should be exactly one payment for a pending order")
	}
	old := o.PaymentHistory[0].PaymentMethodID
	if old == a.PaymentMethodID {
		return "", fail("The new payment method should be different from the current one")
	}
	amount := o.PaymentHistory[0].Amount
	gift := isGiftCard(u, i)
	if gift && *u.PaymentMethods[i].Balance < amount {
		return "", fail("Insufficient gift card balance to pay for the order")
	}
	w := s.orderW(a.OrderID)
	w.PaymentHistory = append(w.PaymentHistory,
		Payment{TransactionType: "payment", Amount: amount, PaymentMethodID: a.PaymentMethodID},
		Payment{TransactionType: "refund", Amount: amount, PaymentMethodID: old})
	if gift {
		s.addToGiftCard(u.UserID, i, -amount)
	}
	ou, j, err := s.getPaymentMethod(o.UserID, old)
	if err != nil {
		return "", err
	}
	if isGiftCard(ou, j) {
		s.addToGiftCard(ou.UserID, j, amount)
	}
	return orderJSON(w), nil
}

// addressArgs is the new address of modify_pending_order_address and
// modify_user_address.
type addressArgs struct {
	OrderID string `json:"order_id"`
	UserID  string `json:"user_id"`
	Address
}

func modifyPendingOrderAddress(s *state, args json.RawMessage) (string, error) {
	var a addressArgs
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	if !strings.Contains(o.Status, statusPending) {
		return "", fail("Non-pending order cannot be modified")
	}
	w := s.orderW(a.OrderID)
	w.Address = a.Address
	return orderJSON(w), nil
}

func modifyUserAddress(s *state, args json.RawMessage) (string, error) {
	var a addressArgs
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if _, err := s.getUser(a.UserID); err != nil {
		return "", err
	}
	w := s.userW(a.UserID)
	w.Address = a.Address
	return userJSON(w), nil
}

func returnDeliveredOrderItems(s *state, args json.RawMessage) (string, error) {
	var a struct {
		OrderID         string   `json:"order_id"`
		ItemIDs         []string `json:"item_ids"`
		PaymentMethodID string   `json:"payment_method_id"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	o, err := s.getOrder(a.OrderID)
	if err != nil {
		return "", err
	}
	if o.Status != statusDeliverd {
		return "", fail("Non-delivered order cannot be returned")
	}
	u, err := s.getUser(o.UserID)
	if err != nil {
		return "", err
	}
	_, i, err := s.getPaymentMethod(u.UserID, a.PaymentMethodID)
	if err != nil {
		return "", err
	}
	if !isGiftCard(u, i) {
		if len(o.PaymentHistory) == 0 {
			return "", fail("list index out of range") // as Python's IndexError reads
		}
		if a.PaymentMethodID != o.PaymentHistory[0].PaymentMethodID {
			return "", fail("Payment method should be the original payment method")
		}
	}
	all := itemIDs(o)
	for _, id := range a.ItemIDs {
		if countOf(a.ItemIDs, id) > countOf(all, id) {
			return "", fail("Some item not found")
		}
	}
	w := s.orderW(a.OrderID)
	w.Status = "return requested"
	w.ReturnItems = sortedCopy(a.ItemIDs)
	w.ReturnPaymentMethodID = strPtr(a.PaymentMethodID)
	return orderJSON(w), nil
}
