package multiturn

import (
	"math"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// tbCase is a run of TradingBot calls beyond what the recorded fixture
// covers (wrong types, odd order keys, big numbers, strptime's errors),
// with the results and final state BFCL's Python gave (Python 3.11,
// TZ=UTC). The state leaves out stocks, which no call changes; its orders
// are keyed as State writes them.
type tbCase struct {
	name   string
	config string
	calls  [][2]string // the call, written in Python, and its result
	state  string
}

func TestTradingBotProbes(t *testing.T) {
	for _, c := range tbCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := pyval.NewDict()
			cfg.Set("TradingBot", tbMustDecode(t, c.config))
			in, err := NewInstances([]string{"TradingBot"}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range c.calls {
				if got := in.Run(tbParse(t, call[0])); got != call[1] {
					t.Errorf("%s:\n  got  %s\n  want %s", call[0], got, call[1])
				}
			}
			want := tbMustDecode(t, c.state).(*pyval.Dict)
			got := in.Class("TradingBot").State()
			for i, k := range want.Keys {
				if !pyval.Eq(got.Value(k), want.Vals[i]) {
					t.Errorf("state %s: got %s, want %s", k, pyval.Repr(got.Value(k)), pyval.Repr(want.Vals[i]))
				}
			}
		})
	}
}

func tbMustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := pyval.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tbParse is ParseCall, with float('inf'), float('-inf') and float('nan')
// read as those floats.
func tbParse(t *testing.T, src string) Call {
	t.Helper()
	marks := map[string]float64{"\x00inf": math.Inf(1), "\x00-inf": math.Inf(-1), "\x00nan": math.NaN()}
	for mark := range marks {
		src = strings.ReplaceAll(src, "float('"+mark[1:]+"')", "'\\x00"+mark[1:]+"'")
	}
	c, err := ParseCall(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range c.Args {
		if s, ok := a.(string); ok {
			if f, ok := marks[s]; ok {
				c.Args[i] = f
			}
		}
	}
	for i, a := range c.Kwargs.Vals {
		if s, ok := a.(string); ok {
			if f, ok := marks[s]; ok {
				c.Kwargs.Vals[i] = f
			}
		}
	}
	return c
}

// TestTradingBotTimestamps checks the transaction timestamps drawn from
// the default seed against Python's (datetime.fromtimestamp in UTC).
func TestTradingBotTimestamps(t *testing.T) {
	b := &tradingBot{}
	if err := b.Load(pyval.NewDict()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2024-09-02 05:40:15", "2024-09-01 12:26:34", "2024-09-02 04:29:48"} {
		if got := b.timestamp(); got != want {
			t.Errorf("timestamp %s, want %s", got, want)
		}
	}
}

var tbCases = []tbCase{
	{
		name:   "mixed order keys",
		config: `{"orders": {"12345": {"symbol": "AAPL", "price": 210.65, "num_shares": 10, "status": "Completed"}, "order_type": "Buy", "12446": {"status": "Pending"}, "7": 5, "8": [1], "9": null, "10": {}}, "authenticated": true, "market_status": "Open"}`,
		calls: [][2]string{
			{`cancel_order('order_type')`, `Error during execution: string indices must be integers, not 'str'`},
			{`cancel_order(7)`, `Error during execution: 'int' object is not subscriptable`},
			{`cancel_order(8)`, `Error during execution: list indices must be integers or slices, not str`},
			{`cancel_order(9)`, `Error during execution: 'NoneType' object is not subscriptable`},
			{`cancel_order(10)`, `Error during execution: 'status'`},
			{`cancel_order([1])`, `Error during execution: unhashable type: 'list'`},
			{`cancel_order({})`, `Error during execution: unhashable type: 'dict'`},
			{`cancel_order(12446.0)`, `{"order_id": 12446.0, "status": "Cancelled"}`},
			{`cancel_order(12345)`, `{"error": "Can't cancel order 12345. Order is already completed."}`},
			{`cancel_order('12345')`, `{"error": "Order with ID 12345 not found."}`},
			{`get_order_details('order_type')`, `Buy`},
			{`get_order_details(True)`, `{"error": "Order with ID True not found.Here is the list of orders_id: [12345, 'order_type', 12446, 7, 8, 9, 10]"}`},
			{`get_order_details(None)`, `{"error": "Order with ID None not found.Here is the list of orders_id: [12345, 'order_type', 12446, 7, 8, 9, 10]"}`},
			{`get_order_details(12345.5)`, `{"error": "Order with ID 12345.5 not found.Here is the list of orders_id: [12345, 'order_type', 12446, 7, 8, 9, 10]"}`},
			{`get_order_details(8)`, `[1]`},
			{`get_order_details(7)`, `5`},
			{`get_order_history()`, `{"history": [12345, "order_type", 12446, 7, 8, 9, 10]}`},
			{`place_order(5, 'AAPL', 1, 1)`, `Error during execution: 'int' object has no attribute 'lower'`},
			{`place_order(None, 'AAPL', 1, 1)`, `Error during execution: 'NoneType' object has no attribute 'lower'`},
			{`place_order('Buy', ['AAPL'], 1, 1)`, `Error during execution: unhashable type: 'list'`},
			{`place_order('Buy', 'AAPL', None, 1)`, `Error during execution: '<=' not supported between instances of 'NoneType' and 'int'`},
			{`place_order('Buy', 'AAPL', 1, None)`, `Error during execution: '<=' not supported between instances of 'NoneType' and 'int'`},
			{`place_order('Buy', 'AAPL', '1', 1)`, `Error during execution: '<=' not supported between instances of 'str' and 'int'`},
			{`place_order('Buy', 'AAPL', 0, '1')`, `{"error": "Price and amount must be positive values."}`},
			{`place_order('Buy', 'AAPL', 1.5, 2.7)`, `{"order_id": 12446, "order_type": "Buy", "status": "Pending", "price": 1.5, "amount": 2.7}`},
			{`place_order('Buy', 'AAPL', True, True)`, `{"order_id": 12447, "order_type": "Buy", "status": "Pending", "price": 1.0, "amount": true}`},
			{`place_order('Buy', 'AAPL', 1e+300, 1000000000000000000000000000000)`, `{"error": "Insufficient funds: required $inf but only $10000.00 available."}`},
			{`place_order('Buy', 'AAPL', float('inf'), 1)`, `{"error": "Insufficient funds: required $inf but only $10000.00 available."}`},
			{`place_order('Buy', 'AAPL', 1, float('inf'))`, `Error during execution: cannot convert float infinity to integer`},
			{`place_order('Buy', 'AAPL', 1, float('nan'))`, `Error during execution: cannot convert float NaN to integer`},
			{`place_order('Buy', 'AAPL', 1, 10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000)`, `Error during execution: int too large to convert to float`},
			{`place_order('Buy', 'AAPL', 10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000, 1)`, `Error during execution: int too large to convert to float`},
			{`place_order('sell', 'AAPL', 10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000, 1)`, `Error during execution: int too large to convert to float`},
			{`place_order('BUY', 'TSLA', 2000.5, 5)`, `{"error": "Insufficient funds: required $10002.50 but only $10000.00 available."}`},
			{`place_order('Sell', 'TSLA', 2000.5, 5)`, `{"order_id": 12448, "order_type": "Sell", "status": "Pending", "price": 2000.5, "amount": 5}`},
			{`place_order('Buy', 'NVDA', 220, 45)`, `{"order_id": 12449, "order_type": "Buy", "status": "Pending", "price": 220.0, "amount": 45}`},
			{`place_order('Buy', 'NVDA', 3, 3333)`, `{"order_id": 12450, "order_type": "Buy", "status": "Pending", "price": 3.0, "amount": 3333}`},
			{`get_transaction_history('2024-9-1', '2024-09-02')`, `{"transaction_history": []}`},
			{`get_transaction_history('2024/09/01')`, `Error during execution: time data '2024/09/01' does not match format '%Y-%m-%d'`},
			{`get_transaction_history('2024-09-011')`, `Error during execution: unconverted data remains: 1`},
			{`get_transaction_history('2024-02-30')`, `Error during execution: day is out of range for month`},
			{`get_transaction_history('2023-02-29')`, `Error during execution: day is out of range for month`},
			{`get_transaction_history('2024-02-29')`, `{"transaction_history": []}`},
			{`get_transaction_history('0000-02-03')`, `Error during execution: year 0 is out of range`},
			{`get_transaction_history(5)`, `Error during execution: strptime() argument 1 must be str, not int`},
			{`get_transaction_history(None, 5)`, `Error during execution: strptime() argument 1 must be str, not int`},
			{`get_transaction_history('2024-09- 1x')`, `Error during execution: unconverted data remains: x`},
			{`get_transaction_history('', 0)`, `{"transaction_history": []}`},
			{`get_transaction_history('2024-13-01')`, `Error during execution: time data '2024-13-01' does not match format '%Y-%m-%d'`},
			{`get_transaction_history(True)`, `Error during execution: strptime() argument 1 must be str, not bool`},
			{`get_transaction_history('２０２４-09-01')`, `{"transaction_history": []}`},
			{`fund_account(True)`, `{"status": "Account funded successfully", "new_balance": 10001.0}`},
			{`fund_account('5')`, `Error during execution: '<=' not supported between instances of 'str' and 'int'`},
			{`fund_account(0)`, `{"error": "Funding amount must be positive."}`},
			{`fund_account(12.345)`, `{"status": "Account funded successfully", "new_balance": 10013.345}`},
			{`fund_account(100000000000000000000)`, `{"status": "Account funded successfully", "new_balance": 1.0000000000000002e+20}`},
			{`withdraw_funds(None)`, `Error during execution: '<=' not supported between instances of 'NoneType' and 'int'`},
			{`withdraw_funds(1)`, `{"status": "Withdrawal successful", "new_balance": 1.0000000000000002e+20}`},
			{`withdraw_funds(1000000000000000000000000000000)`, `{"error": "Insufficient funds for withdrawal."}`},
			{`withdraw_funds(0.1)`, `{"status": "Withdrawal successful", "new_balance": 1.0000000000000002e+20}`},
			{`withdraw_funds(-1)`, `{"error": "Transaction amount must be positive."}`},
			{`get_transaction_history('2024-09-01')`, `{"transaction_history": [{"type": "deposit", "amount": true, "timestamp": "2024-09-02 05:40:15"}, {"type": "deposit", "amount": 12.345, "timestamp": "2024-09-01 12:26:34"}, {"type": "deposit", "amount": 100000000000000000000, "timestamp": "2024-09-02 04:29:48"}, {"type": "withdrawal", "amount": 1, "timestamp": "2024-09-02 09:45:15"}, {"type": "withdrawal", "amount": 0.1, "timestamp": "2024-09-01 17:54:53"}]}`},
			{`get_transaction_history('2024-09-01', '2024-09-01')`, `{"transaction_history": []}`},
			{`get_transaction_history('2024-09-02')`, `{"transaction_history": [{"type": "deposit", "amount": true, "timestamp": "2024-09-02 05:40:15"}, {"type": "deposit", "amount": 100000000000000000000, "timestamp": "2024-09-02 04:29:48"}, {"type": "withdrawal", "amount": 1, "timestamp": "2024-09-02 09:45:15"}]}`},
			{`get_transaction_history(end_date='2024-09-02')`, `{"transaction_history": [{"type": "deposit", "amount": 12.345, "timestamp": "2024-09-01 12:26:34"}, {"type": "withdrawal", "amount": 0.1, "timestamp": "2024-09-01 17:54:53"}]}`},
			{`get_account_info()`, `{"account_id": 12345, "balance": 1.0000000000000002e+20, "binding_card": 1974202140965533}`},
			{`filter_stocks_by_price('AAPL', 0, 1000)`, `{"filtered_stocks": ["A", "A", "P", "L"]}`},
			{`filter_stocks_by_price(5, 0, 1000)`, `Error during execution: 'int' object is not iterable`},
			{`filter_stocks_by_price(None, 0, 1000)`, `Error during execution: 'NoneType' object is not iterable`},
			{`filter_stocks_by_price(['AAPL', ['x']], 0, 1000)`, `Error during execution: unhashable type: 'list'`},
			{`filter_stocks_by_price(['AAPL'], '0', 1000)`, `Error during execution: '>=' not supported between instances of 'float' and 'str'`},
			{`filter_stocks_by_price(['XX'], '0', 1000)`, `Error during execution: '>=' not supported between instances of 'int' and 'str'`},
			{`filter_stocks_by_price({'AAPL': 1, 'GOOG': 2}, 0, None)`, `Error during execution: '<=' not supported between instances of 'float' and 'NoneType'`},
			{`filter_stocks_by_price(['AAPL', 'GOOG', 'NEPT', 'XX', 3], 0, 500)`, `{"filtered_stocks": ["AAPL", "NEPT", "XX", 3]}`},
			{`filter_stocks_by_price([], 0, 500)`, `{"filtered_stocks": []}`},
			{`notify_price_change(['AAPL', 'TSLA'], 0.1)`, `{"notification": "Stocks AAPL, TSLA have significant price changes."}`},
			{`notify_price_change(['AAPL', 'TSLA'], '0.1')`, `Error during execution: '>=' not supported between instances of 'float' and 'str'`},
			{`notify_price_change(None, 1)`, `Error during execution: 'NoneType' object is not iterable`},
			{`notify_price_change(['AAPL', 'XX', 4], 1)`, `{"notification": "No significant price changes in the selected stocks."}`},
			{`notify_price_change([['x']], 1)`, `Error during execution: unhashable type: 'list'`},
			{`notify_price_change('AAPL', 1)`, `{"notification": "No significant price changes in the selected stocks."}`},
			{`notify_price_change(['TSLA', 'ZETA', 'GOOG'], 0.12)`, `{"notification": "Stocks TSLA, GOOG have significant price changes."}`},
			{`get_symbol_by_name(['x'])`, `Error during execution: unhashable type: 'list'`},
			{`get_symbol_by_name('Gorilla')`, `{"symbol": "GORI"}`},
			{`get_symbol_by_name('apple')`, `{"symbol": "Stock not found"}`},
			{`get_symbol_by_name(3)`, `{"symbol": "Stock not found"}`},
			{`get_available_stocks({})`, `Error during execution: unhashable type: 'dict'`},
			{`get_available_stocks('Automobile')`, `{"stock_list": ["TSLA", "F", "GM"]}`},
			{`get_available_stocks('X')`, `{"stock_list": []}`},
			{`get_available_stocks(None)`, `{"stock_list": []}`},
			{`add_to_watchlist(['x'])`, `Error during execution: unhashable type: 'list'`},
			{`add_to_watchlist('NVDA')`, `{"watchlist": ["NVDA"]}`},
			{`add_to_watchlist('XX')`, `{"watchlist": ["NVDA"]}`},
			{`add_to_watchlist('TSLA')`, `{"watchlist": ["NVDA", "TSLA"]}`},
			{`add_to_watchlist(5)`, `{"watchlist": ["NVDA", "TSLA"]}`},
			{`remove_stock_from_watchlist(['x'])`, `{"error": "Stock ['x'] not found in watchlist."}`},
			{`remove_stock_from_watchlist('NVDA')`, `{"status": "Stock NVDA removed from watchlist successfully."}`},
			{`remove_stock_from_watchlist('NVDA')`, `{"error": "Stock NVDA not found in watchlist."}`},
			{`get_watchlist()`, `{"watchlist": ["TSLA"]}`},
			{`get_stock_info(['AAPL'])`, `Error during execution: unhashable type: 'list'`},
			{`get_stock_info(None)`, `{"error": "Stock with symbol 'None' not found."}`},
			{`get_stock_info(1.5)`, `{"error": "Stock with symbol '1.5' not found."}`},
			{`get_stock_info('GOOG')`, `{"price": 2840.34, "percent_change": 0.24, "volume": 1.123, "MA(5)": 2835.67, "MA(20)": 2842.15}`},
			{`get_current_time()`, `{"current_time": "10:30 AM"}`},
			{`trading_get_login_status()`, `{"status": true}`},
			{`trading_login('a', 'b')`, `{"status": "Already logged in"}`},
			{`trading_logout()`, `{"status": "Logged out successfully"}`},
			{`trading_logout()`, `{"status": "No user is currently logged in"}`},
			{`trading_get_login_status()`, `{"status": false}`},
			{`get_watchlist()`, `['Error: User not authenticated. Please log in to view the watchlist.']`},
			{`get_order_history()`, `[{'error': 'User not authenticated. Please log in to view order history.'}]`},
			{`get_transaction_history()`, `[{'error': 'User not authenticated. Please log in to view transaction history.'}]`},
			{`get_account_info()`, `{"error": "User not authenticated. Please log in to view account information."}`},
			{`place_order('Buy', 'AAPL', 1, 1)`, `{"error": "User not authenticated. Please log in to place an order."}`},
			{`fund_account(5)`, `{"error": "User not authenticated. Please log in to fund the account."}`},
			{`withdraw_funds(5)`, `{"error": "User not authenticated. Please log in to make a transaction."}`},
			{`remove_stock_from_watchlist('TSLA')`, `{"error": "User not authenticated. Please log in to modify the watchlist."}`},
			{`trading_login(None, None)`, `{"status": "Logged in successfully"}`},
			{`trading_login(1, 2)`, `{"status": "Already logged in"}`},
		},
		state: `{"orders": {"12345": {"symbol": "AAPL", "price": 210.65, "num_shares": 10, "status": "Completed"}, "'order_type'": "Buy", "12446": {"id": 12446, "order_type": "Buy", "symbol": "AAPL", "price": 1.5, "amount": 2.7, "status": "Open"}, "7": 5, "8": [1], "9": null, "10": {}, "12447": {"id": 12447, "order_type": "Buy", "symbol": "AAPL", "price": 1.0, "amount": true, "status": "Open"}, "12448": {"id": 12448, "order_type": "Sell", "symbol": "TSLA", "price": 2000.5, "amount": 5, "status": "Open"}, "12449": {"id": 12449, "order_type": "Buy", "symbol": "NVDA", "price": 220.0, "amount": 45, "status": "Open"}, "12450": {"id": 12450, "order_type": "Buy", "symbol": "NVDA", "price": 3.0, "amount": 3333, "status": "Open"}}, "account_info": {"account_id": 12345, "balance": 1.0000000000000002e+20, "binding_card": 1974202140965533}, "authenticated": true, "market_status": "Open", "order_counter": 12451, "watch_list": ["TSLA"], "transaction_history": [{"type": "deposit", "amount": true, "timestamp": "2024-09-02 05:40:15"}, {"type": "deposit", "amount": 12.345, "timestamp": "2024-09-01 12:26:34"}, {"type": "deposit", "amount": 100000000000000000000, "timestamp": "2024-09-02 04:29:48"}, {"type": "withdrawal", "amount": 1, "timestamp": "2024-09-02 09:45:15"}, {"type": "withdrawal", "amount": 0.1, "timestamp": "2024-09-01 17:54:53"}], "long_context": false}`,
	},
	{
		name:   "defaults",
		config: `{}`,
		calls: [][2]string{
			{`get_watchlist()`, `['Error: User not authenticated. Please log in to view the watchlist.']`},
			{`get_order_history()`, `[{'error': 'User not authenticated. Please log in to view order history.'}]`},
			{`get_transaction_history()`, `[{'error': 'User not authenticated. Please log in to view transaction history.'}]`},
			{`get_account_info()`, `{"error": "User not authenticated. Please log in to view account information."}`},
			{`place_order('Buy', 'AAPL', 1, 1)`, `{"error": "User not authenticated. Please log in to place an order."}`},
			{`trading_login('u', 'p')`, `{"status": "Logged in successfully"}`},
			{`withdraw_funds(10)`, `{"error": "Market is closed. Transactions are not allowed."}`},
			{`fund_account(2203.4)`, `{"status": "Account funded successfully", "new_balance": 12203.4}`},
			{`fund_account(1)`, `{"status": "Account funded successfully", "new_balance": 12204.4}`},
			{`fund_account(7)`, `{"status": "Account funded successfully", "new_balance": 12211.4}`},
			{`get_transaction_history()`, `{"transaction_history": [{"type": "deposit", "amount": 2203.4, "timestamp": "2024-09-02 05:40:15"}, {"type": "deposit", "amount": 1, "timestamp": "2024-09-01 12:26:34"}, {"type": "deposit", "amount": 7, "timestamp": "2024-09-02 04:29:48"}]}`},
			{`get_order_history()`, `{"history": [12345, 12446]}`},
			{`get_order_details(12446)`, `{"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}`},
			{`cancel_order(12446)`, `{"order_id": 12446, "status": "Cancelled"}`},
			{`cancel_order(12446)`, `{"order_id": 12446, "status": "Cancelled"}`},
			{`place_order('Buy', 'GOOG', 2840.34, 4)`, `{"order_id": 12446, "order_type": "Buy", "status": "Pending", "price": 2840.34, "amount": 4}`},
			{`place_order('Buy', 'GOOG', 2840.34, 3)`, `{"order_id": 12447, "order_type": "Buy", "status": "Pending", "price": 2840.34, "amount": 3}`},
			{`get_order_history()`, `{"history": [12345, 12446, 12447]}`},
			{`get_account_info()`, `{"account_id": 12345, "balance": 12211.4, "binding_card": 1974202140965533}`},
			{`get_order_details(12447)`, `{"id": 12447, "order_type": "Buy", "symbol": "GOOG", "price": 2840.34, "amount": 3, "status": "Open"}`},
		},
		state: `{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Buy", "symbol": "GOOG", "price": 2840.34, "amount": 4, "status": "Open"}, "12447": {"id": 12447, "order_type": "Buy", "symbol": "GOOG", "price": 2840.34, "amount": 3, "status": "Open"}}, "account_info": {"account_id": 12345, "balance": 12211.4, "binding_card": 1974202140965533}, "authenticated": true, "market_status": "Closed", "order_counter": 12448, "watch_list": ["NVDA"], "transaction_history": [{"type": "deposit", "amount": 2203.4, "timestamp": "2024-09-02 05:40:15"}, {"type": "deposit", "amount": 1, "timestamp": "2024-09-01 12:26:34"}, {"type": "deposit", "amount": 7, "timestamp": "2024-09-02 04:29:48"}], "long_context": false}`,
	},
	{
		name:   "history",
		config: `{"authenticated": true, "market_status": "Open", "order_counter": 5, "random_seed": 42, "orders": {"012": {"status": "Open"}, "12": {"status": "Pending"}, "5": {"status": "Open"}, "": 1, "-3": 2, "\u0661\u0662": 3}, "account_info": {"balance": 100}, "transaction_history": [{"type": "deposit", "amount": 1, "timestamp": "2024-08-31 23:59:59"}, {"type": "deposit", "amount": 2, "timestamp": "2024-09-01 00:00:00"}, {"type": "deposit", "amount": 3, "timestamp": "2024-9-3  1:2:3"}]}`,
		calls: [][2]string{
			{`get_order_history()`, `{"history": [12, 5, "", "-3"]}`},
			{`get_order_details(12)`, `3`},
			{`place_order('Sell', 'AAPL', 3, 4)`, `{"order_id": 5, "order_type": "Sell", "status": "Pending", "price": 3.0, "amount": 4}`},
			{`place_order('Buy', 'AAPL', 3, 4)`, `{"order_id": 6, "order_type": "Buy", "status": "Pending", "price": 3.0, "amount": 4}`},
			{`get_order_history()`, `{"history": [12, 5, "", "-3", 6]}`},
			{`get_transaction_history('2024-09-01')`, `{"transaction_history": [{"type": "deposit", "amount": 2, "timestamp": "2024-09-01 00:00:00"}, {"type": "deposit", "amount": 3, "timestamp": "2024-9-3  1:2:3"}]}`},
			{`get_transaction_history('2024-08-31', '2024-09-01')`, `{"transaction_history": [{"type": "deposit", "amount": 1, "timestamp": "2024-08-31 23:59:59"}, {"type": "deposit", "amount": 2, "timestamp": "2024-09-01 00:00:00"}]}`},
			{`get_transaction_history(None, '2024-09-03')`, `{"transaction_history": [{"type": "deposit", "amount": 1, "timestamp": "2024-08-31 23:59:59"}, {"type": "deposit", "amount": 2, "timestamp": "2024-09-01 00:00:00"}]}`},
			{`get_transaction_history('2024-09-03')`, `{"transaction_history": [{"type": "deposit", "amount": 3, "timestamp": "2024-9-3  1:2:3"}]}`},
			{`fund_account(5)`, `{"status": "Account funded successfully", "new_balance": 105}`},
			{`withdraw_funds(100)`, `{"status": "Withdrawal successful", "new_balance": 5}`},
			{`withdraw_funds(10)`, `{"error": "Insufficient funds for withdrawal."}`},
			{`withdraw_funds(5.5)`, `{"error": "Insufficient funds for withdrawal."}`},
			{`get_account_info()`, `{"balance": 5}`},
			{`place_order('Buy', 'AAPL', 100, 1)`, `{"error": "Insufficient funds: required $100.00 but only $5.00 available."}`},
		},
		state: `{"orders": {"12": 3, "5": {"id": 5, "order_type": "Sell", "symbol": "AAPL", "price": 3.0, "amount": 4, "status": "Open"}, "''": 1, "'-3'": 2, "6": {"id": 6, "order_type": "Buy", "symbol": "AAPL", "price": 3.0, "amount": 4, "status": "Open"}}, "account_info": {"balance": 5}, "authenticated": true, "market_status": "Open", "order_counter": 7, "watch_list": ["NVDA"], "transaction_history": [{"type": "deposit", "amount": 1, "timestamp": "2024-08-31 23:59:59"}, {"type": "deposit", "amount": 2, "timestamp": "2024-09-01 00:00:00"}, {"type": "deposit", "amount": 3, "timestamp": "2024-9-3  1:2:3"}, {"type": "deposit", "amount": 5, "timestamp": "2024-09-02 09:46:50"}, {"type": "withdrawal", "amount": 100, "timestamp": "2024-09-01 14:33:12"}], "long_context": false}`,
	},
	{
		name:   "bad timestamp",
		config: `{"authenticated": true, "transaction_history": [{"timestamp": "2024-09-01 10:00:60"}]}`,
		calls: [][2]string{
			{`get_transaction_history()`, `Error during execution: second must be in 0..59`},
		},
		state: `{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}}, "account_info": {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533}, "authenticated": true, "market_status": "Closed", "order_counter": 12446, "watch_list": ["NVDA"], "transaction_history": [{"timestamp": "2024-09-01 10:00:60"}], "long_context": false}`,
	},
	{
		name:   "bad timestamp type",
		config: `{"authenticated": true, "transaction_history": [{"timestamp": 5}]}`,
		calls: [][2]string{
			{`get_transaction_history()`, `Error during execution: strptime() argument 1 must be str, not int`},
		},
		state: `{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}}, "account_info": {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533}, "authenticated": true, "market_status": "Closed", "order_counter": 12446, "watch_list": ["NVDA"], "transaction_history": [{"timestamp": 5}], "long_context": false}`,
	},
	{
		name:   "no timestamp",
		config: `{"authenticated": true, "transaction_history": [{}]}`,
		calls: [][2]string{
			{`get_transaction_history()`, `Error during execution: 'timestamp'`},
		},
		state: `{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}}, "account_info": {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533}, "authenticated": true, "market_status": "Closed", "order_counter": 12446, "watch_list": ["NVDA"], "transaction_history": [{}], "long_context": false}`,
	},
	{
		name:   "no balance",
		config: `{"authenticated": true, "market_status": "Open", "account_info": {}}`,
		calls: [][2]string{
			{`place_order('Buy', 'AAPL', 1, 1)`, `{"error": "Insufficient funds: required $1.00 but only $0.00 available."}`},
			{`withdraw_funds(1)`, `Error during execution: 'balance'`},
			{`fund_account(1)`, `Error during execution: 'balance'`},
			{`get_account_info()`, `{}`},
		},
		state: `{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}}, "account_info": {}, "authenticated": true, "market_status": "Open", "order_counter": 12446, "watch_list": ["NVDA"], "transaction_history": [], "long_context": false}`,
	},
	{
		name:   "str balance",
		config: `{"authenticated": true, "market_status": "Open", "account_info": {"balance": "x"}}`,
		calls: [][2]string{
			{`place_order('Buy', 'AAPL', 1, 1)`, `Error during execution: '>' not supported between instances of 'float' and 'str'`},
			{`withdraw_funds(1)`, `Error during execution: '>' not supported between instances of 'int' and 'str'`},
		},
		state: `{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}}, "account_info": {"balance": "x"}, "authenticated": true, "market_status": "Open", "order_counter": 12446, "watch_list": ["NVDA"], "transaction_history": [], "long_context": false}`,
	},
}
