package multiturn

import (
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// travelAPI is BFCL's TravelAPI (travel_booking.py): a travel booking
// system with an access token, registered credit cards, flight bookings,
// a budget limit, and ids drawn from random.Random(random_seed).
//
// Only the base (long_context=False) behaviour is ported: the long-context
// extension's extra cards and bookings, and the full flight-cost list it
// returns, are left out, as BFCL's base categories never load them.
//
// Deliberate deviations from the Python:
//   - book_flight's invalid-class message writes the set of classes as
//     {'first', 'business', 'economy'}; Python's order depends on the
//     process's string hashes, and this is its order with PYTHONHASHSEED=0,
//     under which testdata/record.py records BFCL's classes.
//   - verify_traveler_information computes the age from time.Now() in the
//     local time zone, as datetime.today() does, so its verdict for a
//     traveler turning 18 about now depends on the day it runs, as in Python.
//   - Load refuses a credit_card_list or booking_record that is not a dict
//     (Python would accept it and fail later); BFCL's data has none.
type travelAPI struct {
	rng       *Random
	cards     *pyval.Dict // credit_card_list: card id → card (a dict)
	bookings  *pyval.Dict // booking_record: booking id → booking (a dict)
	token     any         // access_token
	tokenType any
	expiresIn any // token_expires_in
	scope     any // token_scope
	firstName any
	lastName  any
	budget    any // budget_limit, None or a number
}

func init() { register("TravelAPI", func() Class { return &travelAPI{} }) }

// trDefaultSeed is the random_seed of TravelAPI's DEFAULT_STATE.
const trDefaultSeed = 141053

func (t *travelAPI) Load(cfg *pyval.Dict) error {
	seed, ok := cfg.Get("random_seed")
	if !ok {
		seed = int64(trDefaultSeed)
	}
	var err error
	if t.rng, err = seedRandom(seed); err != nil {
		return err
	}
	if t.cards, err = trDictField(cfg, "credit_card_list"); err != nil {
		return err
	}
	if t.bookings, err = trDictField(cfg, "booking_record"); err != nil {
		return err
	}
	t.token = cfg.Value("access_token")
	t.tokenType = cfg.Value("token_type")
	t.expiresIn = cfg.Value("token_expires_in")
	t.scope = cfg.Value("token_scope")
	t.firstName = cfg.Value("user_first_name")
	t.lastName = cfg.Value("user_last_name")
	t.budget = cfg.Value("budget_limit")
	return nil
}

// trDictField is a config entry that must be a dict, a new empty one when
// it is absent.
func trDictField(cfg *pyval.Dict, key string) (*pyval.Dict, error) {
	v, ok := cfg.Get(key)
	if !ok {
		return pyval.NewDict(), nil
	}
	d, ok := v.(*pyval.Dict)
	if !ok {
		return nil, Raise("%s is a %s, not a dict", key, TypeName(v))
	}
	return d, nil
}

// State is vars(instance) without the private attributes, in the order
// _load_scenario assigns them (long_context included: it is public).
func (t *travelAPI) State() *pyval.Dict {
	return dictOf(
		"credit_card_list", t.cards,
		"booking_record", t.bookings,
		"access_token", t.token,
		"token_type", t.tokenType,
		"token_expires_in", t.expiresIn,
		"token_scope", t.scope,
		"user_first_name", t.firstName,
		"user_last_name", t.lastName,
		"budget_limit", t.budget,
		"long_context", false,
	)
}

func (t *travelAPI) Methods() []Method {
	return []Method{
		{Name: "authenticate_travel", Params: []Param{Req("client_id"), Req("client_secret"), Req("refresh_token"), Req("grant_type"), Req("user_first_name"), Req("user_last_name")}, Call: t.authenticate},
		{Name: "travel_get_login_status", Call: t.loginStatus},
		{Name: "get_budget_fiscal_year", Params: []Param{Opt("lastModifiedAfter", nil), Opt("includeRemoved", nil)}, Call: func([]any) (any, error) {
			return dictOf("budget_fiscal_year", "2018"), nil
		}},
		{Name: "register_credit_card", Params: []Param{Req("access_token"), Req("card_number"), Req("expiration_date"), Req("cardholder_name"), Req("card_verification_number")}, Call: t.registerCard},
		{Name: "get_flight_cost", Params: []Param{Req("travel_from"), Req("travel_to"), Req("travel_date"), Req("travel_class")}, Call: func(a []any) (any, error) {
			cost, err := trFlightCost(a[0], a[1], a[2], a[3])
			if err != nil {
				return nil, err
			}
			return dictOf("travel_cost_list", []any{cost}), nil
		}},
		{Name: "get_credit_card_balance", Params: []Param{Req("access_token"), Req("card_id")}, Call: t.cardBalance},
		{Name: "book_flight", Params: []Param{Req("access_token"), Req("card_id"), Req("travel_date"), Req("travel_from"), Req("travel_to"), Req("travel_class")}, Call: t.bookFlight},
		{Name: "retrieve_invoice", Params: []Param{Req("access_token"), Opt("booking_id", nil), Opt("insurance_id", nil)}, Call: t.retrieveInvoice},
		{Name: "get_booking_history", Params: []Param{Req("access_token")}, Call: func(a []any) (any, error) {
			if msg := t.checkToken(a[0]); msg != "" {
				return errDict(msg), nil
			}
			return dictOf("booking_history", pyval.Copy(t.bookings)), nil
		}},
		{Name: "list_all_airports", Call: func([]any) (any, error) {
			out := make([]any, len(trAirports))
			for i, a := range trAirports {
				out[i] = a
			}
			return out, nil
		}},
		{Name: "cancel_booking", Params: []Param{Req("access_token"), Req("booking_id")}, Call: t.cancelBooking},
		{Name: "compute_exchange_rate", Params: []Param{Req("base_currency"), Req("target_currency"), Req("value")}, Call: func(a []any) (any, error) {
			return trExchange(a[0], a[1], a[2])
		}},
		{Name: "verify_traveler_information", Params: []Param{Req("first_name"), Req("last_name"), Req("date_of_birth"), Req("passport_number")}, Call: t.verifyTraveler},
		{Name: "set_budget_limit", Params: []Param{Req("access_token"), Req("budget_limit")}, Call: func(a []any) (any, error) {
			if msg := t.checkToken(a[0]); msg != "" {
				return errDict(msg), nil
			}
			limit, err := toFloat(a[1])
			if err != nil {
				return nil, err
			}
			t.budget = limit
			return dictOf("budget_limit", limit), nil
		}},
		{Name: "get_nearest_airport_by_city", Params: []Param{Req("location")}, Call: func(a []any) (any, error) {
			s, ok, err := strKey(a[0])
			if err != nil {
				return nil, err
			}
			code := "Unknown"
			if c, found := trCityAirports[s]; ok && found {
				code = c
			}
			return dictOf("nearest_airport", code), nil
		}},
		{Name: "purchase_insurance", Params: []Param{Req("access_token"), Req("insurance_type"), Req("booking_id"), Req("insurance_cost"), Req("card_id")}, Call: t.purchaseInsurance},
		{Name: "contact_customer_support", Params: []Param{Req("booking_id"), Req("message")}, Call: func(a []any) (any, error) {
			found, err := dictHas(t.bookings, a[0])
			if err != nil {
				return nil, err
			}
			if !found {
				return errDict("Booking not found"), nil
			}
			return dictOf("customer_support_message", "Thank you for contacting customer support. Your message has been received and we will get back to you shortly."), nil
		}},
		{Name: "get_all_credit_cards", Call: func([]any) (any, error) {
			return dictOf("credit_card_list", t.cards), nil
		}},
	}
}

// checkToken is the check the secured methods share: the error text for
// an expired token or another access token, or "" when it is valid.
func (t *travelAPI) checkToken(access any) string {
	if pyval.Eq(t.expiresIn, int64(0)) {
		return "Token expired"
	}
	if !pyval.Eq(access, t.token) {
		return "Invalid access token"
	}
	return ""
}

// drawID is str(random.randint(lo, hi)).
func (t *travelAPI) drawID(lo, hi int64) string { return Str(t.rng.Intn(lo, hi)) }

func (t *travelAPI) authenticate(a []any) (any, error) {
	grant := a[3]
	t.expiresIn = int64(2)
	t.token = t.drawID(100000, 999999)
	t.tokenType = "Bearer"
	t.scope = pyval.Copy(grant)
	t.firstName = pyval.Copy(a[4])
	t.lastName = pyval.Copy(a[5])
	return dictOf("expires_in", int64(2), "access_token", t.token, "token_type", "Bearer", "scope", grant), nil
}

func (t *travelAPI) loginStatus([]any) (any, error) {
	out := t.expiresIn != nil && !pyval.Eq(t.expiresIn, int64(0))
	return dictOf("status", out), nil
}

func (t *travelAPI) registerCard(a []any) (any, error) {
	if t.expiresIn == nil {
		return errDict("Token not initialized"), nil
	}
	if msg := t.checkToken(a[0]); msg != "" {
		return errDict(msg), nil
	}
	// Python checks the card number against the card ids.
	known, err := dictHas(t.cards, a[1])
	if err != nil {
		return nil, err
	}
	if known {
		return errDict("Card already registered"), nil
	}
	id := t.drawID(100000000000, 999999999999)
	t.cards.Set(id, dictOf(
		"card_number", pyval.Copy(a[1]),
		"expiration_date", pyval.Copy(a[2]),
		"cardholder_name", pyval.Copy(a[3]),
		"card_verification_number", pyval.Copy(a[4]),
		"balance", t.rng.Intn(10000, 99999),
	))
	return dictOf("card_id", id), nil
}

func (t *travelAPI) cardBalance(a []any) (any, error) {
	if msg := t.checkToken(a[0]); msg != "" {
		return errDict(msg), nil
	}
	known, err := dictHas(t.cards, a[1])
	if err != nil {
		return nil, err
	}
	if !known {
		ids := make([]any, len(t.cards.Keys))
		for i, k := range t.cards.Keys {
			ids[i] = k
		}
		return errDict("Card not registered. Here are a list of card_id's: " + pyval.Repr(ids)), nil
	}
	bal, err := getItem(t.cards.Value(a[1].(string)), "balance")
	if err != nil {
		return nil, err
	}
	return dictOf("card_balance", bal), nil
}

// trBookingFailed is book_flight's answer when it books nothing.
func trBookingFailed(msg string) *pyval.Dict {
	return dictOf("booking_status", false, "error", msg)
}

func (t *travelAPI) bookFlight(a []any) (any, error) {
	access, cardID, date, from, to, class := a[0], a[1], a[2], a[3], a[4], a[5]
	if msg := t.checkToken(access); msg != "" {
		return trBookingFailed(msg), nil
	}
	known, err := dictHas(t.cards, cardID)
	if err != nil {
		return nil, err
	}
	if !known {
		return trBookingFailed("Card not registered"), nil
	}
	id := cardID.(string)
	card := t.cards.Value(id)
	hasBalance, err := contains(card, "balance")
	if err != nil {
		return nil, err
	}
	if !hasBalance {
		return trBookingFailed("Balance not found"), nil
	}
	if !trIsAirport(from) {
		return trBookingFailed("Invalid departure airport code: " + Str(from)), nil
	}
	if !trIsAirport(to) {
		return trBookingFailed("Invalid destination airport code: " + Str(to)), nil
	}
	if _, err := strptime(date, false); isExc(err, "ValueError") {
		return trBookingFailed("Invalid date format. Use YYYY-MM-DD."), nil
	} else if err != nil {
		return nil, err
	}
	if err := hashable(class); err != nil {
		return nil, err
	}
	if s, ok := class.(string); !ok || (s != "economy" && s != "business" && s != "first") {
		return trBookingFailed("Invalid travel class. Must be one of {'first', 'business', 'economy'}"), nil
	}
	cost, err := trFlightCost(from, to, date, class)
	if isExc(err, "ValueError") {
		return trBookingFailed(err.Error()), nil
	} else if err != nil {
		return nil, err
	}
	bal, err := getItem(card, "balance")
	if err != nil {
		return nil, err
	}
	if short, err := Compare("<", bal, cost); err != nil {
		return nil, err
	} else if short {
		return trBookingFailed("Insufficient funds"), nil
	}
	if t.budget != nil {
		bal, err := getItem(card, "balance")
		if err != nil {
			return nil, err
		}
		if under, err := Compare("<", bal, t.budget); err != nil {
			return nil, err
		} else if under {
			return trBookingFailed("Balance is less than budget limit"), nil
		}
	}
	if err := trUpdate(card, "balance", "-=", cost); err != nil {
		return nil, err
	}
	bookingID := t.drawID(1000000, 9999999)
	transactionID := t.drawID(10000000, 99999999)
	t.bookings.Set(bookingID, dictOf(
		"card_id", id,
		"travel_date", date,
		"travel_from", from,
		"travel_to", to,
		"travel_class", class,
		"travel_cost", cost,
		"transaction_id", transactionID,
	))
	return dictOf("booking_id", bookingID, "transaction_id", transactionID, "booking_status", true, "booking_history", pyval.NewDict()), nil
}

func (t *travelAPI) retrieveInvoice(a []any) (any, error) {
	if msg := t.checkToken(a[0]); msg != "" {
		return errDict(msg), nil
	}
	found, err := dictHas(t.bookings, a[1])
	if err != nil {
		return nil, err
	}
	if !found {
		return errDict("Booking not found"), nil
	}
	record := t.bookings.Value(a[1].(string))
	invoice := dictOf("booking_id", a[1])
	for _, k := range []string{"travel_date", "travel_from", "travel_to", "travel_class", "travel_cost", "transaction_id"} {
		v, err := getItem(record, k)
		if err != nil {
			return nil, err
		}
		invoice.Set(k, v)
	}
	return dictOf("invoice", invoice), nil
}

func (t *travelAPI) cancelBooking(a []any) (any, error) {
	fail := func(msg string) (any, error) { return dictOf("cancel_status", false, "error", msg), nil }
	if msg := t.checkToken(a[0]); msg != "" {
		return fail(msg)
	}
	found, err := dictHas(t.bookings, a[1])
	if err != nil {
		return nil, err
	}
	if !found {
		return fail("Booking not found")
	}
	id := a[1].(string)
	record := t.bookings.Value(id)
	cardID, err := getItem(record, "card_id")
	if err != nil {
		return nil, err
	}
	cost, err := getItem(record, "travel_cost")
	if err != nil {
		return nil, err
	}
	card, err := dictGet(t.cards, cardID)
	if err != nil {
		return nil, err
	}
	if err := trUpdate(card, "balance", "+=", cost); err != nil {
		return nil, err
	}
	t.bookings.Delete(id)
	return dictOf("cancel_status", true), nil
}

func (t *travelAPI) verifyTraveler(a []any) (any, error) {
	first, last, birth, passport := a[0], a[1], a[2], a[3]
	fail := func(msg string) (any, error) {
		return dictOf("verification_status", false, "verification_failure", msg), nil
	}
	if !pyval.Eq(t.firstName, first) || !pyval.Eq(t.lastName, last) {
		return fail("Cannot book flight information for another user." +
			"Expected " + Str(t.firstName) + " " + Str(t.lastName) + ", got " + Str(first) + " " + Str(last))
	}
	born, err := strptime(birth, false)
	if isExc(err, "ValueError") {
		return fail("Invalid date of birth format. Please use YYYY-MM-DD.")
	} else if err != nil {
		return nil, err
	}
	now := time.Now()
	age := now.Year() - born.Year()
	if now.Month() < born.Month() || now.Month() == born.Month() && now.Day() < born.Day() {
		age--
	}
	if age < 18 {
		return fail("Traveler must be at least 18 years old.")
	}
	p, ok := passport.(string)
	if !ok {
		return nil, noAttr(passport, "startswith")
	}
	if len(p) < 2 || p[:2] != "US" {
		return fail("Passport must be issued by the United States.")
	}
	return dictOf("verification_status", true), nil
}

func (t *travelAPI) purchaseInsurance(a []any) (any, error) {
	access, bookingID, cost, cardID := a[0], a[2], a[3], a[4]
	fail := func(msg string) (any, error) { return dictOf("insurance_status", false, "error", msg), nil }
	if msg := t.checkToken(access); msg != "" {
		return fail(msg)
	}
	if t.budget != nil {
		over, err := Compare("<", t.budget, cost)
		if err != nil {
			return nil, err
		}
		if over {
			return fail("Exceeded budget limit")
		}
	}
	found, err := dictHas(t.bookings, bookingID)
	if err != nil {
		return nil, err
	}
	if !found {
		return fail("Booking not found")
	}
	known, err := dictHas(t.cards, cardID)
	if err != nil {
		return nil, err
	}
	if !known {
		return fail("Credit card not registered")
	}
	if err := trUpdate(t.cards.Value(cardID.(string)), "balance", "-=", pyval.Copy(cost)); err != nil {
		return nil, err
	}
	return dictOf("insurance_id", t.drawID(100000000, 999999999), "insurance_status", true), nil
}
