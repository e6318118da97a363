package retail

import "github.com/nextstate-rl/nextstate/envs/internal/pyval"

// The JSON tau2 returns for a record: rendered once for a loaded DB's
// records, on demand for records an episode changed or added.
func productJSON(p *Product) string {
	if p.rendered != "" {
		return p.rendered
	}
	return string(appendProduct(make([]byte, 0, 2048), p))
}

func variantJSON(v *Variant) string {
	if v.rendered != "" {
		return v.rendered
	}
	return string(appendVariant(nil, v))
}

func userJSON(u *User) string {
	if u.rendered != "" {
		return u.rendered
	}
	return string(appendUser(make([]byte, 0, 1024), u))
}

func orderJSON(o *Order) string {
	if o.rendered != "" {
		return o.rendered
	}
	return string(appendOrder(make([]byte, 0, 2048), o))
}

func appendOptions(b []byte, o Options) []byte {
	b = append(b, '{')
	for i, kv := range o {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = pyval.AppendString(b, kv.Name)
		b = append(b, ": "...)
		b = pyval.AppendString(b, kv.Value)
	}
	return append(b, '}')
}

func appendAddress(b []byte, a *Address) []byte {
	b = append(b, `{"address1": `...)
	b = pyval.AppendString(b, a.Address1)
	b = append(b, `, "address2": `...)
	b = pyval.AppendString(b, a.Address2)
	b = append(b, `, "city": `...)
	b = pyval.AppendString(b, a.City)
	b = append(b, `, "country": `...)
	b = pyval.AppendString(b, a.Country)
	b = append(b, `, "state": `...)
	b = pyval.AppendString(b, a.State)
	b = append(b, `, "zip": `...)
	b = pyval.AppendString(b, a.Zip)
	return append(b, '}')
}

func appendVariant(b []byte, v *Variant) []byte {
	b = append(b, `{"item_id": `...)
	b = pyval.AppendString(b, v.ItemID)
	b = append(b, `, "options": `...)
	b = appendOptions(b, v.Options)
	if v.Available {
		b = append(b, `, "available": true, "price": `...)
	} else {
		b = append(b, `, "available": false, "price": `...)
	}
	b = pyval.AppendFloat(b, v.Price)
	return append(b, '}')
}

func appendProduct(b []byte, p *Product) []byte {
	b = append(b, `{"name": `...)
	b = pyval.AppendString(b, p.Name)
	b = append(b, `, "product_id": `...)
	b = pyval.AppendString(b, p.ProductID)
	b = append(b, `, "variants": {`...)
	for i := range p.Variants {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = pyval.AppendString(b, p.Variants[i].ItemID)
		b = append(b, ": "...)
		b = appendVariant(b, &p.Variants[i])
	}
	return append(b, "}}"...)
}

// appendPaymentMethod writes a payment method with the fields of its
// pydantic model, in its order: source, id, then brand and last_four for a
// credit card or balance for a gift card.
func appendPaymentMethod(b []byte, pm *PaymentMethod) []byte {
	b = append(b, `{"source": `...)
	b = pyval.AppendString(b, pm.Source)
	b = append(b, `, "id": `...)
	b = pyval.AppendString(b, pm.ID)
	switch pm.Source {
	case sourceCreditCard:
		b = append(b, `, "brand": `...)
		b = pyval.AppendString(b, pm.Brand)
		b = append(b, `, "last_four": `...)
		b = pyval.AppendString(b, pm.LastFour)
	case sourceGiftCard:
		b = append(b, `, "balance": `...)
		b = pyval.AppendFloat(b, *pm.Balance)
	}
	return append(b, '}')
}

func appendUser(b []byte, u *User) []byte {
	b = append(b, `{"user_id": `...)
	b = pyval.AppendString(b, u.UserID)
	b = append(b, `, "name": {"first_name": `...)
	b = pyval.AppendString(b, u.Name.FirstName)
	b = append(b, `, "last_name": `...)
	b = pyval.AppendString(b, u.Name.LastName)
	b = append(b, `}, "address": `...)
	b = appendAddress(b, &u.Address)
	b = append(b, `, "email": `...)
	b = pyval.AppendString(b, u.Email)
	b = append(b, `, "payment_methods": {`...)
	for i := range u.PaymentMethods {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = pyval.AppendString(b, u.PaymentMethods[i].ID)
		b = append(b, ": "...)
		b = appendPaymentMethod(b, &u.PaymentMethods[i])
	}
	b = append(b, `}, "orders": `...)
	b = pyval.AppendStrings(b, u.Orders)
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return pyval.AppendString(b, *s)
}

func appendOrder(b []byte, o *Order) []byte {
	b = append(b, `{"order_id": `...)
	b = pyval.AppendString(b, o.OrderID)
	b = append(b, `, "user_id": `...)
	b = pyval.AppendString(b, o.UserID)
	b = append(b, `, "address": `...)
	b = appendAddress(b, &o.Address)
	b = append(b, `, "items": [`...)
	for i := range o.Items {
		it := &o.Items[i]
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"name": `...)
		b = pyval.AppendString(b, it.Name)
		b = append(b, `, "product_id": `...)
		b = pyval.AppendString(b, it.ProductID)
		b = append(b, `, "item_id": `...)
		b = pyval.AppendString(b, it.ItemID)
		b = append(b, `, "price": `...)
		b = pyval.AppendFloat(b, it.Price)
		b = append(b, `, "options": `...)
		b = appendOptions(b, it.Options)
		b = append(b, '}')
	}
	b = append(b, `], "status": `...)
	b = pyval.AppendString(b, o.Status)
	b = append(b, `, "fulfillments": [`...)
	for i, f := range o.Fulfillments {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"tracking_id": `...)
		b = pyval.AppendStrings(b, f.TrackingID)
		b = append(b, `, "item_ids": `...)
		b = pyval.AppendStrings(b, f.ItemIDs)
		b = append(b, '}')
	}
	b = append(b, `], "payment_history": [`...)
	for i, p := range o.PaymentHistory {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"transaction_type": `...)
		b = pyval.AppendString(b, p.TransactionType)
		b = append(b, `, "amount": `...)
		b = pyval.AppendFloat(b, p.Amount)
		b = append(b, `, "payment_method_id": `...)
		b = pyval.AppendString(b, p.PaymentMethodID)
		b = append(b, '}')
	}
	b = append(b, `], "cancel_reason": `...)
	b = appendOptString(b, o.CancelReason)
	b = append(b, `, "exchange_items": `...)
	b = pyval.AppendStrings(b, o.ExchangeItems)
	b = append(b, `, "exchange_new_items": `...)
	b = pyval.AppendStrings(b, o.ExchangeNewItems)
	b = append(b, `, "exchange_payment_method_id": `...)
	b = appendOptString(b, o.ExchangePaymentMethodID)
	b = append(b, `, "exchange_price_difference": `...)
	switch {
	case o.ExchangePriceDifference == nil:
		b = append(b, "null"...)
	case o.exchangeDiffInt:
		b = append(b, '0')
	default:
		b = pyval.AppendFloat(b, *o.ExchangePriceDifference)
	}
	b = append(b, `, "return_items": `...)
	b = pyval.AppendStrings(b, o.ReturnItems)
	b = append(b, `, "return_payment_method_id": `...)
	b = appendOptString(b, o.ReturnPaymentMethodID)
	return append(b, '}')
}
