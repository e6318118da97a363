package multiturn

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// tradingBot is BFCL's TradingBot (trading_bot.py): a stock trading
// account with orders, a watchlist, stock quotes and a transaction
// history, behind a login.
//
// Only BFCL's base category is ported: the long-context data the Python
// adds to some results when loaded with long_context=True is left out,
// and long_context is always False.
//
// Deliberate deviations from the Python:
//   - Transaction timestamps are drawn as the Python draws them (a random
//     second of the day after 2024-09-01 10:30) but read and written in
//     UTC, where the Python uses the local timezone: BFCL's recordings
//     were made on a machine set to UTC.
//   - The orders dict is keyed by Python values (ints, and strings that
//     are not all digits); State writes it as a Dict keyed by each key's
//     repr, numbers by their integer value when whole (12345 and 12345.0
//     are one key, as in Python; the string "x" is "'x'").
//   - A config whose orders, account_info or stocks is not an object, or
//     whose watch_list or transaction_history is not a list, is refused
//     by Load; the Python accepts it and fails later, if at all.
type tradingBot struct {
	orders        keyDict
	accountInfo   *pyval.Dict
	authenticated any
	marketStatus  any
	orderCounter  any
	stocks        *pyval.Dict
	watchList     []any
	transactions  []any
	rng           *Random
}

func init() { register("TradingBot", func() Class { return &tradingBot{} }) }

// tbNow is the Python's CURRENT_TIME, 2024-09-01 10:30, read as UTC.
var tbNow = time.Date(2024, 9, 1, 10, 30, 0, 0, time.UTC)

// tbDefaultSeed is the scenario's random_seed when the config has none.
const tbDefaultSeed = 1053520

// tbDefaults is the Python's DEFAULT_STATE, less random_seed, as JSON.
const tbDefaults = `{
 "orders": {
  "12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"},
  "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}
 },
 "account_info": {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533},
 "authenticated": false,
 "market_status": "Closed",
 "order_counter": 12446,
 "stocks": {
  "AAPL": {"price": 227.16, "percent_change": 0.17, "volume": 2.552, "MA(5)": 227.11, "MA(20)": 227.09},
  "GOOG": {"price": 2840.34, "percent_change": 0.24, "volume": 1.123, "MA(5)": 2835.67, "MA(20)": 2842.15},
  "TSLA": {"price": 667.92, "percent_change": -0.12, "volume": 1.654, "MA(5)": 671.15, "MA(20)": 668.2},
  "MSFT": {"price": 310.23, "percent_change": 0.09, "volume": 3.234, "MA(5)": 309.88, "MA(20)": 310.11},
  "NVDA": {"price": 220.34, "percent_change": 0.34, "volume": 1.234, "MA(5)": 220.45, "MA(20)": 220.67},
  "ALPH": {"price": 1320.45, "percent_change": -0.08, "volume": 1.567, "MA(5)": 1321.12, "MA(20)": 1325.78},
  "OMEG": {"price": 457.23, "percent_change": 0.12, "volume": 2.345, "MA(5)": 456.78, "MA(20)": 458.12},
  "QUAS": {"price": 725.89, "percent_change": -0.03, "volume": 1.789, "MA(5)": 726.45, "MA(20)": 728.0},
  "NEPT": {"price": 88.34, "percent_change": 0.19, "volume": 0.654, "MA(5)": 88.21, "MA(20)": 88.67},
  "SYNX": {"price": 345.67, "percent_change": 0.11, "volume": 2.112, "MA(5)": 345.34, "MA(20)": 346.12},
  "ZETA": {"price": 22.09, "percent_change": -0.05, "volume": 0.789, "MA(5)": 22.12, "MA(20)": 22.34}
 },
 "watch_list": ["NVDA"],
 "transaction_history": []
}`

// tbSymbols is get_symbol_by_name's table.
var tbSymbols = map[string]string{
	"Apple": "AAPL", "Google": "GOOG", "Tesla": "TSLA", "Microsoft": "MSFT",
	"Nvidia": "NVDA", "Zeta Corp": "ZETA", "Alpha Tech": "ALPH",
	"Omega Industries": "OMEG", "Quasar Ltd.": "QUAS", "Neptune Systems": "NEPT",
	"Synex Solutions": "SYNX", "Amazon": "AMZN", "Gorilla": "GORI",
}

// tbSectors is get_available_stocks's table.
var tbSectors = map[string][]string{
	"Technology": {"AAPL", "GOOG", "MSFT", "NVDA"},
	"Automobile": {"TSLA", "F", "GM"},
}

func (b *tradingBot) Load(cfg *pyval.Dict) error {
	v, err := pyval.Decode([]byte(tbDefaults))
	if err != nil {
		return err
	}
	def := v.(*pyval.Dict)
	get := func(k string) any {
		if v, ok := cfg.Get(k); ok {
			return v
		}
		return def.Value(k)
	}
	orders, ok := get("orders").(*pyval.Dict)
	if !ok {
		return Raise("orders is a %s, not a dict", TypeName(get("orders")))
	}
	b.orders = keyDict{}
	for i, k := range orders.Keys {
		var key any = k
		if isDigits(k) { // int(k) if k.isdigit() else k
			n, err := parseInt(k)
			if err != nil {
				return err
			}
			key = intVal(n)
		}
		b.orders.set(key, orders.Vals[i])
	}
	if b.accountInfo, ok = get("account_info").(*pyval.Dict); !ok {
		return Raise("account_info is a %s, not a dict", TypeName(get("account_info")))
	}
	if b.stocks, ok = get("stocks").(*pyval.Dict); !ok {
		return Raise("stocks is a %s, not a dict", TypeName(get("stocks")))
	}
	if b.watchList, ok = get("watch_list").([]any); !ok {
		return Raise("watch_list is a %s, not a list", TypeName(get("watch_list")))
	}
	if b.transactions, ok = get("transaction_history").([]any); !ok {
		return Raise("transaction_history is a %s, not a list", TypeName(get("transaction_history")))
	}
	b.authenticated = get("authenticated")
	b.marketStatus = get("market_status")
	b.orderCounter = get("order_counter")
	seed := any(int64(tbDefaultSeed))
	if v, ok := cfg.Get("random_seed"); ok {
		seed = v
	}
	b.rng, err = seedRandom(seed)
	return err
}

func (b *tradingBot) State() *pyval.Dict {
	return dictOf(
		"orders", b.orders.toDict(tbKeyText),
		"account_info", b.accountInfo,
		"authenticated", b.authenticated,
		"market_status", b.marketStatus,
		"order_counter", b.orderCounter,
		"stocks", b.stocks,
		"watch_list", b.watchList,
		"transaction_history", b.transactions,
		"long_context", false,
	)
}

// timestamp is _generate_transaction_timestamp: a random second of the
// day from tbNow, as "YYYY-MM-DD HH:MM:SS".
func (b *tradingBot) timestamp() string {
	start := tbNow.Unix()
	ts := b.rng.Intn(start, start+86400)
	return time.Unix(ts, 0).UTC().Format(time.DateTime)
}

func (b *tradingBot) Methods() []Method {
	return []Method{
		{Name: "get_current_time", Call: func([]any) (any, error) {
			return dictOf("current_time", tbNow.Format("03:04 PM")), nil
		}},
		{Name: "get_symbol_by_name", Params: []Param{Req("name")}, Call: func(a []any) (any, error) {
			name, ok, err := strKey(a[0])
			if err != nil {
				return nil, err
			}
			sym := "Stock not found"
			if ok && tbSymbols[name] != "" {
				sym = tbSymbols[name]
			}
			return dictOf("symbol", sym), nil
		}},
		{Name: "get_stock_info", Params: []Param{Req("symbol")}, Call: func(a []any) (any, error) {
			ok, err := dictHas(b.stocks, a[0])
			if err != nil {
				return nil, err
			}
			if !ok {
				return errDict("Stock with symbol '" + Str(a[0]) + "' not found."), nil
			}
			return b.stocks.Value(a[0].(string)), nil
		}},
		{Name: "get_order_details", Params: []Param{Req("order_id")}, Call: func(a []any) (any, error) {
			i, err := b.orders.index(a[0])
			if err != nil {
				return nil, err
			}
			if i < 0 {
				return errDict("Order with ID " + Str(a[0]) + " not found." +
					"Here is the list of orders_id: " + pyval.Repr(b.orders.keyList())), nil
			}
			return b.orders.vals[i], nil
		}},
		{Name: "cancel_order", Params: []Param{Req("order_id")}, Call: b.cancelOrder},
		{Name: "place_order", Params: []Param{Req("order_type"), Req("symbol"), Req("price"), Req("amount")}, Call: b.placeOrder},
		{Name: "withdraw_funds", Params: []Param{Req("amount")}, Call: b.withdraw},
		{Name: "get_account_info", Call: func([]any) (any, error) {
			if !Truthy(b.authenticated) {
				return errDict("User not authenticated. Please log in to view account information."), nil
			}
			return b.accountInfo, nil
		}},
		{Name: "trading_login", Params: []Param{Req("username"), Req("password")}, Call: func([]any) (any, error) {
			if Truthy(b.authenticated) {
				return dictOf("status", "Already logged in"), nil
			}
			b.authenticated = true
			return dictOf("status", "Logged in successfully"), nil
		}},
		{Name: "trading_get_login_status", Call: func([]any) (any, error) {
			return dictOf("status", Truthy(b.authenticated)), nil
		}},
		{Name: "trading_logout", Call: func([]any) (any, error) {
			if !Truthy(b.authenticated) {
				return dictOf("status", "No user is currently logged in"), nil
			}
			b.authenticated = false
			return dictOf("status", "Logged out successfully"), nil
		}},
		{Name: "fund_account", Params: []Param{Req("amount")}, Call: b.fund},
		{Name: "remove_stock_from_watchlist", Params: []Param{Req("symbol")}, Call: func(a []any) (any, error) {
			if !Truthy(b.authenticated) {
				return errDict("User not authenticated. Please log in to modify the watchlist."), nil
			}
			i := indexOf(b.watchList, a[0])
			if i < 0 {
				return errDict("Stock " + Str(a[0]) + " not found in watchlist."), nil
			}
			b.watchList = append(b.watchList[:i:i], b.watchList[i+1:]...)
			return dictOf("status", "Stock "+Str(a[0])+" removed from watchlist successfully."), nil
		}},
		{Name: "get_watchlist", Call: func([]any) (any, error) {
			if !Truthy(b.authenticated) {
				return []any{"Error: User not authenticated. Please log in to view the watchlist."}, nil
			}
			return dictOf("watchlist", b.watchList), nil
		}},
		{Name: "get_order_history", Call: func([]any) (any, error) {
			if !Truthy(b.authenticated) {
				return []any{errDict("User not authenticated. Please log in to view order history.")}, nil
			}
			return dictOf("history", b.orders.keyList()), nil
		}},
		{Name: "get_transaction_history", Params: []Param{Opt("start_date", nil), Opt("end_date", nil)}, Call: b.transactionHistory},
		{Name: "get_available_stocks", Params: []Param{Req("sector")}, Call: func(a []any) (any, error) {
			s, ok, err := strKey(a[0])
			if err != nil {
				return nil, err
			}
			list := []any{}
			if ok {
				for _, sym := range tbSectors[s] {
					list = append(list, sym)
				}
			}
			return dictOf("stock_list", list), nil
		}},
		{Name: "filter_stocks_by_price", Params: []Param{Req("stocks"), Req("min_price"), Req("max_price")}, Call: b.filterByPrice},
		{Name: "add_to_watchlist", Params: []Param{Req("stock")}, Call: func(a []any) (any, error) {
			if indexOf(b.watchList, a[0]) < 0 {
				ok, err := dictHas(b.stocks, a[0])
				if err != nil {
					return nil, err
				}
				if ok {
					b.watchList = append(b.watchList, a[0])
				}
			}
			return dictOf("watchlist", b.watchList), nil
		}},
		{Name: "notify_price_change", Params: []Param{Req("stocks"), Req("threshold")}, Call: b.notifyPriceChange},
	}
}

func (b *tradingBot) cancelOrder(a []any) (any, error) {
	id := a[0]
	i, err := b.orders.index(id)
	if err != nil {
		return nil, err
	}
	if i < 0 {
		return errDict("Order with ID " + Str(id) + " not found."), nil
	}
	status, err := getItem(b.orders.vals[i], "status")
	if err != nil {
		return nil, err
	}
	if pyval.Eq(status, "Completed") {
		return errDict("Can't cancel order " + Str(id) + ". Order is already completed."), nil
	}
	b.orders.vals[i].(*pyval.Dict).Set("status", "Cancelled")
	return dictOf("order_id", id, "status", "Cancelled"), nil
}

func (b *tradingBot) placeOrder(a []any) (any, error) {
	orderType, symbol, price, amount := a[0], a[1], a[2], a[3]
	if !Truthy(b.authenticated) {
		return errDict("User not authenticated. Please log in to place an order."), nil
	}
	ok, err := dictHas(b.stocks, symbol)
	if err != nil {
		return nil, err
	}
	if !ok {
		return errDict("Invalid stock symbol: " + Str(symbol)), nil
	}
	bad, err := Compare("<=", price, int64(0))
	if err != nil {
		return nil, err
	}
	if !bad {
		if bad, err = Compare("<=", amount, int64(0)); err != nil {
			return nil, err
		}
	}
	if bad {
		return errDict("Price and amount must be positive values."), nil
	}
	ot, err := lower(orderType)
	if err != nil {
		return nil, err
	}
	if ot == "buy" {
		msg, err := b.checkFunds(price, amount)
		if err != nil {
			return nil, err
		}
		if msg != "" {
			return errDict(msg), nil
		}
	}
	fprice, err := toFloat(price)
	if err != nil {
		return nil, err
	}
	id := b.orderCounter
	order := dictOf(
		"id", id,
		"order_type", orderType,
		"symbol", symbol,
		"price", fprice,
		"amount", amount,
		"status", "Open",
	)
	if err := b.orders.set(id, order); err != nil {
		return nil, err
	}
	next, err := arith("+=", b.orderCounter, int64(1))
	if err != nil {
		return nil, err
	}
	b.orderCounter = next
	return dictOf(
		"order_id", id,
		"order_type", orderType,
		"status", "Pending",
		"price", fprice,
		"amount", amount,
	), nil
}

// checkFunds is place_order's check that a buy order is covered by the
// balance: the error message when it is not, "" when it is.
func (b *tradingBot) checkFunds(price, amount any) (string, error) {
	fprice, err := toFloat(price)
	if err != nil {
		return "", err
	}
	n, err := toInt(amount)
	if err != nil {
		return "", err
	}
	fn, err := toFloat(n)
	if err != nil {
		return "", err
	}
	cost := fprice * fn
	balance, ok := b.accountInfo.Get("balance")
	if !ok {
		balance = int64(0)
	}
	over, err := Compare(">", cost, balance)
	if err != nil || !over {
		return "", err
	}
	have, err := tbFixed2(balance)
	if err != nil {
		return "", err
	}
	need, _ := tbFixed2(cost)
	return "Insufficient funds: required $" + need + " but only $" + have + " available.", nil
}

func (b *tradingBot) withdraw(a []any) (any, error) {
	amount := a[0]
	if !Truthy(b.authenticated) {
		return errDict("User not authenticated. Please log in to make a transaction."), nil
	}
	if !pyval.Eq(b.marketStatus, "Open") {
		return errDict("Market is closed. Transactions are not allowed."), nil
	}
	bad, err := Compare("<=", amount, int64(0))
	if err != nil {
		return nil, err
	}
	if bad {
		return errDict("Transaction amount must be positive."), nil
	}
	balance, ok := b.accountInfo.Get("balance")
	if !ok {
		return nil, KeyError("balance")
	}
	over, err := Compare(">", amount, balance)
	if err != nil {
		return nil, err
	}
	if over {
		return errDict("Insufficient funds for withdrawal."), nil
	}
	return b.move(amount, "-=", "withdrawal", "Withdrawal successful")
}

func (b *tradingBot) fund(a []any) (any, error) {
	amount := a[0]
	if !Truthy(b.authenticated) {
		return errDict("User not authenticated. Please log in to fund the account."), nil
	}
	bad, err := Compare("<=", amount, int64(0))
	if err != nil {
		return nil, err
	}
	if bad {
		return errDict("Funding amount must be positive."), nil
	}
	return b.move(amount, "+=", "deposit", "Account funded successfully")
}

// move applies a withdrawal or deposit to the balance and records it.
func (b *tradingBot) move(amount any, op, kind, status string) (any, error) {
	balance, ok := b.accountInfo.Get("balance")
	if !ok {
		return nil, KeyError("balance")
	}
	nb, err := arith(op, balance, amount)
	if err != nil {
		return nil, err
	}
	b.accountInfo.Set("balance", nb)
	tx := dictOf("type", kind, "amount", amount, "timestamp", b.timestamp())
	b.transactions = append(b.transactions, tx)
	return dictOf("status", status, "new_balance", nb), nil
}

func (b *tradingBot) transactionHistory(a []any) (any, error) {
	if !Truthy(b.authenticated) {
		return []any{errDict("User not authenticated. Please log in to view transaction history.")}, nil
	}
	start, end := tbMinTime, tbMaxTime
	for i, t := range []*time.Time{&start, &end} {
		if !Truthy(a[i]) {
			continue
		}
		v, err := strptime(a[i], false)
		if err != nil {
			return nil, err
		}
		*t = v
	}
	kept := []any{}
	for _, tx := range b.transactions {
		ts, err := getItem(tx, "timestamp")
		if err != nil {
			return nil, err
		}
		when, err := strptime(ts, true)
		if err != nil {
			return nil, err
		}
		if !when.Before(start) && !when.After(end) {
			kept = append(kept, tx)
		}
	}
	return dictOf("transaction_history", kept), nil
}

// price is self.stocks.get(symbol, {}).get("price", 0).
func (b *tradingBot) price(symbol any) (any, error) {
	s, ok, err := strKey(symbol)
	if err != nil {
		return nil, err
	}
	if !ok || !b.stocks.Has(s) {
		return int64(0), nil
	}
	stock := b.stocks.Value(s)
	d, ok := stock.(*pyval.Dict)
	if !ok {
		return nil, noAttr(stock, "get")
	}
	if p, ok := d.Get("price"); ok {
		return p, nil
	}
	return int64(0), nil
}

func (b *tradingBot) filterByPrice(a []any) (any, error) {
	symbols, err := iterate(a[0])
	if err != nil {
		return nil, err
	}
	kept := []any{}
	for _, sym := range symbols {
		p, err := b.price(sym)
		if err != nil {
			return nil, err
		}
		in, err := Compare(">=", p, a[1])
		if err != nil {
			return nil, err
		}
		if !in {
			continue
		}
		if p, err = b.price(sym); err != nil {
			return nil, err
		}
		if in, err = Compare("<=", p, a[2]); err != nil {
			return nil, err
		}
		if in {
			kept = append(kept, sym)
		}
	}
	return dictOf("filtered_stocks", kept), nil
}

func (b *tradingBot) notifyPriceChange(a []any) (any, error) {
	symbols, err := iterate(a[0])
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, sym := range symbols {
		ok, err := dictHas(b.stocks, sym)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		pc, err := getItem(b.stocks.Value(sym.(string)), "percent_change")
		if err != nil {
			return nil, err
		}
		mag, err := absOf(pc)
		if err != nil {
			return nil, err
		}
		big, err := Compare(">=", mag, a[1])
		if err != nil {
			return nil, err
		}
		if big {
			changed = append(changed, sym.(string))
		}
	}
	if len(changed) > 0 {
		return dictOf("notification", "Stocks "+strings.Join(changed, ", ")+" have significant price changes."), nil
	}
	return dictOf("notification", "No significant price changes in the selected stocks."), nil
}

// tbKeyText writes an order key for State so that keys Python finds
// equal are written alike and others not: a number as numKey, anything
// else as its repr.
func tbKeyText(k any) string {
	if isNum(k) {
		text, _ := numKey(k)
		return text
	}
	return pyval.Repr(k)
}

// tbFixed2 is f"{v:.2f}" for a number.
func tbFixed2(v any) (string, error) {
	switch v.(type) {
	case string:
		return "", Raise("Unknown format code 'f' for object of type 'str'")
	case nil, []any, *pyval.Dict:
		return "", Raise("unsupported format string passed to %s.__format__", TypeName(v))
	}
	f, err := toFloat(v)
	if err != nil {
		return "", err
	}
	switch {
	case math.IsNaN(f):
		return "nan", nil
	case math.IsInf(f, 1):
		return "inf", nil
	case math.IsInf(f, -1):
		return "-inf", nil
	}
	return strconv.FormatFloat(f, 'f', 2, 64), nil
}

// datetime.min and datetime.max.
var (
	tbMinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	tbMaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)
