package multiturn

import (
	"slices"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// TravelAPI's tables and the Python operations its methods apply to the
// model's arguments, with the exceptions Python raises for wrong types.

// trAirports is list_all_airports's answer, in its order.
var trAirports = []string{
	"RMS", "SBK", "MPC", "SVP", "SHD", "CDG", "LHR", "SSV", "OKD", "WLB", "PEK", "HND",
	"HKG", "CIA", "CRH", "ATV", "PHV", "GFD", "SFO", "LAX", "JFK", "ORD", "BOS",
}

// trCityAirports is get_nearest_airport_by_city's map.
var trCityAirports = map[string]string{
	"Rivermist": "RMS", "Stonebrook": "SBK", "Maplecrest": "MPC", "Silverpine": "SVP",
	"Shadowridge": "SHD", "London": "LHR", "Paris": "CDG", "Sunset Valley": "SSV",
	"Oakendale": "OKD", "Willowbend": "WLB", "Crescent Hollow": "CRH", "Autumnville": "ATV",
	"Pinehaven": "PHV", "Greenfield": "GFD", "San Francisco": "SFO", "Los Angeles": "LAX",
	"New York": "JFK", "Chicago": "ORD", "Boston": "BOS", "Beijing": "PEK",
	"Hong Kong": "HKG", "Rome": "CIA", "Tokyo": "HND",
}

// trRoutes are get_flight_cost's base costs in USD, by (from, to).
var trRoutes = map[[2]string]int64{
	{"SFO", "LAX"}: 200, {"SFO", "JFK"}: 500, {"SFO", "ORD"}: 400, {"SFO", "BOS"}: 450,
	{"SFO", "RMS"}: 300, {"SFO", "SBK"}: 350, {"SFO", "MPC"}: 370, {"SFO", "SVP"}: 320,
	{"SFO", "SHD"}: 330, {"SFO", "SSV"}: 340, {"SFO", "OKD"}: 360, {"SFO", "WLB"}: 310,
	{"SFO", "CRH"}: 380, {"SFO", "ATV"}: 390, {"SFO", "PHV"}: 420, {"SFO", "GFD"}: 430,
	{"SFO", "CIA"}: 700, {"LAX", "SFO"}: 100, {"LAX", "JFK"}: 600, {"LAX", "ORD"}: 500,
	{"LAX", "BOS"}: 550, {"LAX", "RMS"}: 310, {"LAX", "SBK"}: 320, {"LAX", "MPC"}: 330,
	{"LAX", "SVP"}: 340, {"LAX", "SHD"}: 350, {"LAX", "SSV"}: 360, {"LAX", "OKD"}: 370,
	{"LAX", "WLB"}: 380, {"LAX", "CRH"}: 390, {"LAX", "ATV"}: 400, {"LAX", "PHV"}: 410,
	{"LAX", "GFD"}: 420, {"LAX", "HND"}: 430, {"JFK", "ORD"}: 300, {"JFK", "BOS"}: 250,
	{"JFK", "RMS"}: 450, {"JFK", "SBK"}: 460, {"JFK", "MPC"}: 470, {"JFK", "SVP"}: 480,
	{"JFK", "SHD"}: 490, {"JFK", "SSV"}: 500, {"JFK", "OKD"}: 510, {"JFK", "WLB"}: 520,
	{"JFK", "CRH"}: 530, {"JFK", "ATV"}: 540, {"JFK", "PHV"}: 550, {"JFK", "GFD"}: 560,
	{"JFK", "LAX"}: 570, {"JFK", "HND"}: 800, {"JFK", "PVG"}: 950, {"JFK", "PEK"}: 1000,
	{"ORD", "LAX"}: 180, {"ORD", "BOS"}: 200, {"ORD", "RMS"}: 350, {"ORD", "SBK"}: 360,
	{"ORD", "MPC"}: 370, {"ORD", "SVP"}: 380, {"ORD", "SHD"}: 390, {"ORD", "SSV"}: 400,
	{"ORD", "OKD"}: 410, {"ORD", "WLB"}: 420, {"ORD", "CRH"}: 430, {"ORD", "ATV"}: 440,
	{"ORD", "PHV"}: 450, {"ORD", "GFD"}: 460, {"BOS", "RMS"}: 400, {"BOS", "SBK"}: 410,
	{"BOS", "MPC"}: 420, {"BOS", "SVP"}: 430, {"BOS", "SHD"}: 440, {"BOS", "SSV"}: 450,
	{"BOS", "OKD"}: 460, {"BOS", "WLB"}: 470, {"BOS", "CRH"}: 480, {"BOS", "ATV"}: 490,
	{"BOS", "PHV"}: 500, {"BOS", "GFD"}: 510, {"RMS", "BOS"}: 200, {"RMS", "JFK"}: 210,
	{"RMS", "SBK"}: 220, {"RMS", "MPC"}: 230, {"RMS", "SVP"}: 240, {"RMS", "SHD"}: 250,
	{"RMS", "SSV"}: 260, {"RMS", "OKD"}: 270, {"RMS", "WLB"}: 280, {"RMS", "CRH"}: 290,
	{"RMS", "ATV"}: 300, {"RMS", "PHV"}: 310, {"RMS", "GFD"}: 320, {"RMS", "LAX"}: 330,
	{"SBK", "MPC"}: 200, {"SBK", "SVP"}: 210, {"SBK", "SHD"}: 220, {"SBK", "SSV"}: 230,
	{"SBK", "OKD"}: 240, {"SBK", "WLB"}: 250, {"SBK", "CRH"}: 260, {"SBK", "ATV"}: 270,
	{"SBK", "PHV"}: 280, {"SBK", "GFD"}: 290, {"MPC", "SVP"}: 210, {"MPC", "SHD"}: 220,
	{"MPC", "SSV"}: 230, {"MPC", "OKD"}: 240, {"MPC", "WLB"}: 250, {"MPC", "CRH"}: 260,
	{"MPC", "ATV"}: 270, {"MPC", "PHV"}: 280, {"MPC", "GFD"}: 290, {"SVP", "SHD"}: 230,
	{"SVP", "SSV"}: 240, {"SVP", "OKD"}: 250, {"SVP", "WLB"}: 260, {"SVP", "CRH"}: 270,
	{"SVP", "ATV"}: 280, {"SVP", "PHV"}: 290, {"SVP", "GFD"}: 300, {"SHD", "SSV"}: 220,
	{"SHD", "OKD"}: 230, {"SHD", "WLB"}: 240, {"SHD", "CRH"}: 250, {"SHD", "ATV"}: 260,
	{"SHD", "PHV"}: 270, {"SHD", "GFD"}: 280, {"SSV", "OKD"}: 240, {"SSV", "WLB"}: 250,
	{"SSV", "CRH"}: 260, {"SSV", "ATV"}: 270, {"SSV", "PHV"}: 280, {"SSV", "GFD"}: 290,
	{"OKD", "WLB"}: 230, {"OKD", "CRH"}: 240, {"OKD", "ATV"}: 250, {"OKD", "PHV"}: 260,
	{"OKD", "GFD"}: 270, {"WLB", "CRH"}: 250, {"WLB", "ATV"}: 260, {"WLB", "PHV"}: 270,
	{"WLB", "GFD"}: 280, {"CRH", "ATV"}: 240, {"CRH", "PHV"}: 250, {"CRH", "GFD"}: 260,
	{"CRH", "SFO"}: 270, {"CRH", "RMS"}: 280, {"CRH", "HKG"}: 290, {"CRH", "JFK"}: 300,
	{"ATV", "PHV"}: 230, {"ATV", "GFD"}: 240, {"PHV", "GFD"}: 220, {"LHR", "CDG"}: 100,
	{"OKD", "LAX"}: 220,
}

// trRates are compute_exchange_rate's rates from USD, in the order it
// tries them; a rate is an int or a float, as in the Python.
var trRates = []struct {
	from, to string
	rate     any
}{
	{"USD", "RMB", int64(7)}, {"USD", "EUR", 0.8}, {"USD", "JPY", int64(110)},
	{"USD", "GBP", 0.7}, {"USD", "CAD", 1.3}, {"USD", "AUD", 1.4},
	{"USD", "INR", int64(70)}, {"USD", "RUB", int64(60)}, {"USD", "BRL", 3.8},
	{"USD", "MXN", int64(20)},
}

func trIsAirport(v any) bool {
	s, ok := v.(string)
	return ok && slices.Contains(trAirports, s)
}

// trFlightCost is get_flight_cost's one cost (long_context=False); its
// ValueErrors are what book_flight catches.
func trFlightCost(from, to, date, class any) (float64, error) {
	for _, v := range []any{from, to} { // hash((from, to))
		if err := hashable(v); err != nil {
			return 0, err
		}
	}
	f, fok := from.(string)
	t, tok := to.(string)
	base, found := trRoutes[[2]string{f, t}]
	if !fok || !tok || !found {
		return 0, raiseKind("ValueError", "No available route for the given airports.")
	}
	var factor int64
	switch class {
	case "economy":
		factor = 1
	case "business":
		factor = 2
	case "first":
		factor = 5
	default:
		return 0, raiseKind("ValueError", "Invalid travel class. Options are: economy, business, first.")
	}
	// sum(int(char) for char in travel_date if char.isdigit()): odd or even
	chars, err := iterate(date)
	if err != nil {
		return 0, err
	}
	odd := false
	for _, c := range chars {
		s, ok := c.(string)
		if !ok {
			return 0, noAttr(c, "isdigit")
		}
		if !isDigits(s) {
			continue
		}
		n, err := parseInt(s)
		if err != nil {
			return 0, err
		}
		odd = odd != (n.Bit(0) == 1)
	}
	mult := int64(2)
	if odd {
		mult = 1
	}
	return float64(base * factor * mult), nil
}

// trExchange is compute_exchange_rate.
func trExchange(base, target, value any) (any, error) {
	for _, x := range trRates {
		if pyval.Eq(base, x.from) && pyval.Eq(target, x.to) {
			p, err := arith("*", value, x.rate)
			if err != nil {
				return nil, err
			}
			f, err := toFloat(p)
			if err != nil {
				return nil, err
			}
			return dictOf("exchanged_value", f), nil
		}
		if pyval.Eq(base, x.to) && pyval.Eq(target, x.from) {
			q, err := arith("/", value, x.rate)
			if err != nil {
				return nil, err
			}
			return dictOf("exchanged_value", pyval.Round2(q.(float64))), nil
		}
	}
	return nil, raiseKind("ValueError", "No available exchange rate for the given currencies.")
}

// trUpdate is v[key] += x or v[key] -= x (op "+=" or "-=").
func trUpdate(v any, key, op string, x any) error {
	cur, err := getItem(v, key)
	if err != nil {
		return err
	}
	res, err := arith(op, cur, x)
	if err != nil {
		return err
	}
	v.(*pyval.Dict).Set(key, res)
	return nil
}
