package multiturn

import (
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

type trProbeCall struct{ call, result string }

// trProbes are calls the recorded runs do not make (wrong types, odd
// dates and numbers, broken records), with what BFCL's TravelAPI answered
// under Python 3.11 and its state after them (its repr). The one set that
// Python writes in hash order is given in the order TravelAPI uses.
var trProbes = []struct {
	config string
	calls  []trProbeCall
	state  string
}{
	{
		config: "{\"credit_card_list\": {\"card1\": {\"card_number\": \"1111\", \"balance\": 5000.0}, \"card2\": {\"card_number\": \"2222\", \"balance\": 300}, \"card3\": {\"card_number\": \"3333\"}, \"card4\": [\"balance\"], \"card5\": {\"balance\": \"lots\"}}, \"booking_record\": {\"b1\": {\"card_id\": \"card1\", \"travel_date\": \"2024-01-01\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 200.0, \"transaction_id\": \"t1\"}, \"b2\": {\"card_id\": \"nocard\", \"travel_cost\": 10.0}, \"b3\": {\"card_id\": \"card1\"}, \"b4\": {\"card_id\": \"card5\", \"travel_cost\": 1.5}}, \"access_token\": \"tok\", \"token_type\": \"Bearer\", \"token_expires_in\": 5, \"token_scope\": \"read\", \"user_first_name\": \"Ann\", \"user_last_name\": \"Lee\", \"budget_limit\": null}",
		calls: []trProbeCall{
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=20240115, travel_class='economy')", "Error during execution: 'int' object is not iterable"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=['12', '3', 'a', ''], travel_class='economy')", "{\"travel_cost_list\": [200.0]}"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=['13', '3'], travel_class='first')", "{\"travel_cost_list\": [2000.0]}"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=['²'], travel_class='economy')", "Error during execution: invalid literal for int() with base 10: '²'"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=['1²'], travel_class='economy')", "Error during execution: invalid literal for int() with base 10: '1²'"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date={'12': 1, '5': 2}, travel_class='business')", "{\"travel_cost_list\": [400.0]}"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=[1], travel_class='economy')", "Error during execution: 'int' object has no attribute 'isdigit'"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date='2024-0²-01', travel_class='economy')", "Error during execution: invalid literal for int() with base 10: '²'"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date='٢٠٢٤-01-15', travel_class='economy')", "{\"travel_cost_list\": [200.0]}"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=None, travel_class='economy')", "Error during execution: 'NoneType' object is not iterable"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date=2.5, travel_class='economy')", "Error during execution: 'float' object is not iterable"},
			{"get_flight_cost(travel_from=['SFO'], travel_to={'a': 1}, travel_date='2024-01-01', travel_class='economy')", "Error during execution: unhashable type: 'list'"},
			{"get_flight_cost(travel_from='SFO', travel_to={'a': 1}, travel_date='2024-01-01', travel_class='economy')", "Error during execution: unhashable type: 'dict'"},
			{"get_flight_cost(travel_from='SFO', travel_to='LAX', travel_date='2024-01-01', travel_class='coach')", "Error during execution: Invalid travel class. Options are: economy, business, first."},
			{"get_flight_cost(travel_from=None, travel_to='LAX', travel_date='2024-01-01', travel_class='coach')", "Error during execution: No available route for the given airports."},
			{"get_flight_cost('JFK', 'PEK', '2024-01-02', 'first')", "{\"travel_cost_list\": [5000.0]}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-1-5', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_id\": \"3426812\", \"transaction_id\": \"45451592\", \"booking_status\": true, \"booking_history\": {}}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01- 5', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_id\": \"7223063\", \"transaction_id\": \"35535380\", \"booking_status\": true, \"booking_history\": {}}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-02-30', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid date format. Use YYYY-MM-DD.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-02-29', travel_from='SFO', travel_to='LAX', travel_class='first')", "{\"booking_id\": \"6765159\", \"transaction_id\": \"96206559\", \"booking_status\": true, \"booking_history\": {}}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2023-02-29', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid date format. Use YYYY-MM-DD.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='0000-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid date format. Use YYYY-MM-DD.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-13-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid date format. Use YYYY-MM-DD.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-32', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid date format. Use YYYY-MM-DD.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-05 ', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid date format. Use YYYY-MM-DD.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='٢٠٢٤-01-1٥', travel_from='SFO', travel_to='LAX', travel_class='business')", "{\"booking_id\": \"8737609\", \"transaction_id\": \"49536459\", \"booking_status\": true, \"booking_history\": {}}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-1-1٥', travel_from='SFO', travel_to='LAX', travel_class='business')", "{\"booking_id\": \"7580219\", \"transaction_id\": \"20768819\", \"booking_status\": true, \"booking_history\": {}}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date=20240101, travel_from='SFO', travel_to='LAX', travel_class='economy')", "Error during execution: strptime() argument 1 must be str, not int"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class=['economy'])", "Error during execution: unhashable type: 'list'"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class=None)", "{\"booking_status\": false, \"error\": \"Invalid travel class. Must be one of {'first', 'business', 'economy'}\"}"},
			{"book_flight(access_token='tok', card_id=['card1'], travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "Error during execution: unhashable type: 'list'"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='CDG', travel_class='economy')", "{\"booking_status\": false, \"error\": \"No available route for the given airports.\"}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to=['LAX'], travel_class='economy')", "{\"booking_status\": false, \"error\": \"Invalid destination airport code: ['LAX']\"}"},
			{"book_flight(access_token='tok', card_id='card3', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Balance not found\"}"},
			{"book_flight(access_token='tok', card_id='card4', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "Error during execution: list indices must be integers or slices, not str"},
			{"book_flight(access_token='tok', card_id='card5', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "Error during execution: '<' not supported between instances of 'str' and 'float'"},
			{"book_flight(access_token='tok', card_id='card2', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Insufficient funds\"}"},
			{"book_flight(access_token='tok', card_id='card2', travel_date='2024-01-02', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_id\": \"5615346\", \"transaction_id\": \"37889221\", \"booking_status\": true, \"booking_history\": {}}"},
			{"get_credit_card_balance(access_token='tok', card_id='card2')", "{\"card_balance\": 100.0}"},
			{"get_credit_card_balance(access_token='tok', card_id='nope')", "{\"error\": \"Card not registered. Here are a list of card_id's: ['card1', 'card2', 'card3', 'card4', 'card5']\"}"},
			{"get_credit_card_balance(access_token='tok', card_id='card3')", "Error during execution: 'balance'"},
			{"get_credit_card_balance(access_token='tok', card_id=['x'])", "Error during execution: unhashable type: 'list'"},
			{"get_booking_history(access_token='tok')", "{\"booking_history\": {\"b1\": {\"card_id\": \"card1\", \"travel_date\": \"2024-01-01\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 200.0, \"transaction_id\": \"t1\"}, \"b2\": {\"card_id\": \"nocard\", \"travel_cost\": 10.0}, \"b3\": {\"card_id\": \"card1\"}, \"b4\": {\"card_id\": \"card5\", \"travel_cost\": 1.5}, \"3426812\": {\"card_id\": \"card1\", \"travel_date\": \"2024-1-5\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 400.0, \"transaction_id\": \"45451592\"}, \"7223063\": {\"card_id\": \"card1\", \"travel_date\": \"2024-01- 5\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 400.0, \"transaction_id\": \"35535380\"}, \"6765159\": {\"card_id\": \"card1\", \"travel_date\": \"2024-02-29\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"first\", \"travel_cost\": 1000.0, \"transaction_id\": \"96206559\"}, \"8737609\": {\"card_id\": \"card1\", \"travel_date\": \"\\u0662\\u0660\\u0662\\u0664-01-1\\u0665\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"business\", \"travel_cost\": 400.0, \"transaction_id\": \"49536459\"}, \"7580219\": {\"card_id\": \"card1\", \"travel_date\": \"2024-1-1\\u0665\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"business\", \"travel_cost\": 400.0, \"transaction_id\": \"20768819\"}, \"5615346\": {\"card_id\": \"card2\", \"travel_date\": \"2024-01-02\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 200.0, \"transaction_id\": \"37889221\"}}}"},
			{"retrieve_invoice(access_token='tok', booking_id=['x'])", "Error during execution: unhashable type: 'list'"},
			{"retrieve_invoice(access_token='tok', booking_id='b1')", "{\"invoice\": {\"booking_id\": \"b1\", \"travel_date\": \"2024-01-01\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 200.0, \"transaction_id\": \"t1\"}}"},
			{"retrieve_invoice(access_token='tok', booking_id='b3')", "Error during execution: 'travel_date'"},
			{"retrieve_invoice(access_token='tok')", "{\"error\": \"Booking not found\"}"},
			{"retrieve_invoice('tok', 'b1', 'ins')", "{\"invoice\": {\"booking_id\": \"b1\", \"travel_date\": \"2024-01-01\", \"travel_from\": \"SFO\", \"travel_to\": \"LAX\", \"travel_class\": \"economy\", \"travel_cost\": 200.0, \"transaction_id\": \"t1\"}}"},
			{"cancel_booking(access_token='tok', booking_id='b2')", "Error during execution: 'nocard'"},
			{"cancel_booking(access_token='tok', booking_id='b3')", "Error during execution: 'travel_cost'"},
			{"cancel_booking(access_token='tok', booking_id='b4')", "Error during execution: can only concatenate str (not \"float\") to str"},
			{"cancel_booking(access_token='tok', booking_id='b1')", "{\"cancel_status\": true}"},
			{"cancel_booking(access_token='tok', booking_id={})", "Error during execution: unhashable type: 'dict'"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='b2', insurance_cost='100', card_id='card1')", "Error during execution: unsupported operand type(s) for -=: 'float' and 'str'"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='b2', insurance_cost=100, card_id='card2')", "{\"insurance_id\": \"685211766\", \"insurance_status\": true}"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='b2', insurance_cost=100, card_id='card3')", "Error during execution: 'balance'"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='b2', insurance_cost=100, card_id=5)", "{\"insurance_status\": false, \"error\": \"Credit card not registered\"}"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='zz', insurance_cost=100, card_id='card1')", "{\"insurance_status\": false, \"error\": \"Booking not found\"}"},
			{"set_budget_limit(access_token='tok', budget_limit='2000')", "{\"budget_limit\": 2000.0}"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='b2', insurance_cost='100', card_id='card1')", "Error during execution: '<' not supported between instances of 'float' and 'str'"},
			{"purchase_insurance(access_token='tok', insurance_type='x', booking_id='b2', insurance_cost=2500, card_id='card1')", "{\"insurance_status\": false, \"error\": \"Exceeded budget limit\"}"},
			{"set_budget_limit(access_token='tok', budget_limit='1_000')", "{\"budget_limit\": 1000.0}"},
			{"set_budget_limit(access_token='tok', budget_limit=' 1e3 ')", "{\"budget_limit\": 1000.0}"},
			{"set_budget_limit(access_token='tok', budget_limit='١٢.٥')", "{\"budget_limit\": 12.5}"},
			{"set_budget_limit(access_token='tok', budget_limit='abc')", "Error during execution: could not convert string to float: 'abc'"},
			{"set_budget_limit(access_token='tok', budget_limit='1__0')", "Error during execution: could not convert string to float: '1__0'"},
			{"set_budget_limit(access_token='tok', budget_limit='0x10')", "Error during execution: could not convert string to float: '0x10'"},
			{"set_budget_limit(access_token='tok', budget_limit='1e999')", "{\"budget_limit\": Infinity}"},
			{"set_budget_limit(access_token='tok', budget_limit='-Infinity')", "{\"budget_limit\": -Infinity}"},
			{"set_budget_limit(access_token='tok', budget_limit='nan')", "{\"budget_limit\": NaN}"},
			{"set_budget_limit(access_token='tok', budget_limit=None)", "Error during execution: float() argument must be a string or a real number, not 'NoneType'"},
			{"set_budget_limit(access_token='tok', budget_limit=[1])", "Error during execution: float() argument must be a string or a real number, not 'list'"},
			{"set_budget_limit(access_token='tok', budget_limit=True)", "{\"budget_limit\": 1.0}"},
			{"set_budget_limit(access_token='tok', budget_limit=123456789012345678901234567890)", "{\"budget_limit\": 1.2345678901234568e+29}"},
			{"set_budget_limit(access_token='tok', budget_limit=100)", "{\"budget_limit\": 100.0}"},
			{"book_flight(access_token='tok', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_id\": \"4009123\", \"transaction_id\": \"16939572\", \"booking_status\": true, \"booking_history\": {}}"},
			{"compute_exchange_rate(base_currency='USD', target_currency='RMB', value='5')", "{\"exchanged_value\": 5555555.0}"},
			{"compute_exchange_rate(base_currency='USD', target_currency='RMB', value='x')", "Error during execution: could not convert string to float: 'xxxxxxx'"},
			{"compute_exchange_rate(base_currency='USD', target_currency='EUR', value='5')", "Error during execution: can't multiply sequence by non-int of type 'float'"},
			{"compute_exchange_rate(base_currency='RMB', target_currency='USD', value='5')", "Error during execution: unsupported operand type(s) for /: 'str' and 'int'"},
			{"compute_exchange_rate(base_currency='USD', target_currency='RMB', value=[1])", "Error during execution: float() argument must be a string or a real number, not 'list'"},
			{"compute_exchange_rate(base_currency='USD', target_currency='RMB', value=None)", "Error during execution: unsupported operand type(s) for *: 'NoneType' and 'int'"},
			{"compute_exchange_rate(base_currency='RMB', target_currency='USD', value={})", "Error during execution: unsupported operand type(s) for /: 'dict' and 'int'"},
			{"compute_exchange_rate(base_currency='USD', target_currency='JPY', value=True)", "{\"exchanged_value\": 110.0}"},
			{"compute_exchange_rate(base_currency='RMB', target_currency='USD', value=123456789012345678901234567890)", "{\"exchanged_value\": 1.763668414462081e+28}"},
			{"compute_exchange_rate(base_currency='USD', target_currency='RMB', value=123456789012345678901234567890)", "{\"exchanged_value\": 8.641975230864197e+29}"},
			{"compute_exchange_rate(base_currency='USD', target_currency='EUR', value=123456789012345678901234567890)", "{\"exchanged_value\": 9.876543120987655e+28}"},
			{"compute_exchange_rate(base_currency='RMB', target_currency='USD', value=7)", "{\"exchanged_value\": 1.0}"},
			{"compute_exchange_rate(base_currency='GBP', target_currency='USD', value=10)", "{\"exchanged_value\": 14.29}"},
			{"compute_exchange_rate(base_currency='EUR', target_currency='USD', value=-0.001)", "{\"exchanged_value\": -0.0}"},
			{"compute_exchange_rate(base_currency='CAD', target_currency='USD', value=0.125)", "{\"exchanged_value\": 0.1}"},
			{"compute_exchange_rate(base_currency='USD', target_currency='CAD', value=3.3)", "{\"exchanged_value\": 4.29}"},
			{"compute_exchange_rate(base_currency='USD', target_currency='USD', value=3.3)", "Error during execution: No available exchange rate for the given currencies."},
			{"verify_traveler_information(first_name='Ann', last_name='Lee', date_of_birth=19900101, passport_number='US1')", "Error during execution: strptime() argument 1 must be str, not int"},
			{"verify_traveler_information(first_name='Ann', last_name='Lee', date_of_birth='1990-01-01', passport_number=5)", "Error during execution: 'int' object has no attribute 'startswith'"},
			{"verify_traveler_information(first_name='Ann', last_name='Lee', date_of_birth='2015-01-01', passport_number='US1')", "{\"verification_status\": false, \"verification_failure\": \"Traveler must be at least 18 years old.\"}"},
			{"verify_traveler_information(first_name='Ann', last_name='Lee', date_of_birth='1990-02-30', passport_number='US1')", "{\"verification_status\": false, \"verification_failure\": \"Invalid date of birth format. Please use YYYY-MM-DD.\"}"},
			{"verify_traveler_information(first_name='Ann', last_name='Lee', date_of_birth='1990-1-1', passport_number='U')", "{\"verification_status\": false, \"verification_failure\": \"Passport must be issued by the United States.\"}"},
			{"verify_traveler_information(first_name='Ann', last_name='Lee', date_of_birth='1990-1-1', passport_number='US')", "{\"verification_status\": true}"},
			{"verify_traveler_information(first_name=None, last_name=5, date_of_birth='1990-1-1', passport_number='US')", "{\"verification_status\": false, \"verification_failure\": \"Cannot book flight information for another user.Expected Ann Lee, got None 5\"}"},
			{"get_nearest_airport_by_city(location=['x'])", "Error during execution: unhashable type: 'list'"},
			{"get_nearest_airport_by_city(location=5)", "{\"nearest_airport\": \"Unknown\"}"},
			{"get_nearest_airport_by_city(location='Tokyo')", "{\"nearest_airport\": \"HND\"}"},
			{"contact_customer_support(booking_id={}, message='m')", "Error during execution: unhashable type: 'dict'"},
			{"contact_customer_support(booking_id='b1', message='m')", "{\"error\": \"Booking not found\"}"},
			{"travel_get_login_status()", "{\"status\": true}"},
			{"get_budget_fiscal_year('x', includeRemoved=True)", "{\"budget_fiscal_year\": \"2018\"}"},
			{"get_all_credit_cards()", "{\"credit_card_list\": {\"card1\": {\"card_number\": \"1111\", \"balance\": 2200.0}, \"card2\": {\"card_number\": \"2222\", \"balance\": 0.0}, \"card3\": {\"card_number\": \"3333\"}, \"card4\": [\"balance\"], \"card5\": {\"balance\": \"lots\"}}}"},
			{"list_all_airports()", "['RMS', 'SBK', 'MPC', 'SVP', 'SHD', 'CDG', 'LHR', 'SSV', 'OKD', 'WLB', 'PEK', 'HND', 'HKG', 'CIA', 'CRH', 'ATV', 'PHV', 'GFD', 'SFO', 'LAX', 'JFK', 'ORD', 'BOS']"},
			{"register_credit_card(access_token='tok', card_number='card1', expiration_date='1', cardholder_name='x', card_verification_number=1)", "{\"error\": \"Card already registered\"}"},
			{"register_credit_card(access_token='tok', card_number=['x'], expiration_date='1', cardholder_name='x', card_verification_number=1)", "Error during execution: unhashable type: 'list'"},
			{"register_credit_card(access_token='tok', card_number='9999', expiration_date='1', cardholder_name='x', card_verification_number=1)", "{\"card_id\": \"170044479994\"}"},
			{"authenticate_travel(client_id='a', client_secret='b', refresh_token='c', grant_type=['read'], user_first_name='Bo', user_last_name='Li')", "{\"expires_in\": 2, \"access_token\": \"260254\", \"token_type\": \"Bearer\", \"scope\": [\"read\"]}"},
			{"get_booking_history(access_token='tok')", "{\"error\": \"Invalid access token\"}"},
			{"register_credit_card(access_token='260254', card_number='1', expiration_date='1', cardholder_name='x', card_verification_number=1)", "{\"card_id\": \"106959206840\"}"},
			{"book_flight(access_token='260254', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_id\": \"3601617\", \"transaction_id\": \"17587245\", \"booking_status\": true, \"booking_history\": {}}"},
			{"purchase_insurance(access_token='260254', insurance_type='x', booking_id='b1', insurance_cost=1.25, card_id='card1')", "{\"insurance_status\": false, \"error\": \"Booking not found\"}"},
			{"get_all_credit_cards()", "{\"credit_card_list\": {\"card1\": {\"card_number\": \"1111\", \"balance\": 1800.0}, \"card2\": {\"card_number\": \"2222\", \"balance\": 0.0}, \"card3\": {\"card_number\": \"3333\"}, \"card4\": [\"balance\"], \"card5\": {\"balance\": \"lots\"}, \"170044479994\": {\"card_number\": \"9999\", \"expiration_date\": \"1\", \"cardholder_name\": \"x\", \"card_verification_number\": 1, \"balance\": 54544}, \"106959206840\": {\"card_number\": \"1\", \"expiration_date\": \"1\", \"cardholder_name\": \"x\", \"card_verification_number\": 1, \"balance\": 79962}}}"},
		},
		state: "{'credit_card_list': {'card1': {'card_number': '1111', 'balance': 1800.0}, 'card2': {'card_number': '2222', 'balance': 0.0}, 'card3': {'card_number': '3333'}, 'card4': ['balance'], 'card5': {'balance': 'lots'}, '170044479994': {'card_number': '9999', 'expiration_date': '1', 'cardholder_name': 'x', 'card_verification_number': 1, 'balance': 54544}, '106959206840': {'card_number': '1', 'expiration_date': '1', 'cardholder_name': 'x', 'card_verification_number': 1, 'balance': 79962}}, 'booking_record': {'b2': {'card_id': 'nocard', 'travel_cost': 10.0}, 'b3': {'card_id': 'card1'}, 'b4': {'card_id': 'card5', 'travel_cost': 1.5}, '3426812': {'card_id': 'card1', 'travel_date': '2024-1-5', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'economy', 'travel_cost': 400.0, 'transaction_id': '45451592'}, '7223063': {'card_id': 'card1', 'travel_date': '2024-01- 5', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'economy', 'travel_cost': 400.0, 'transaction_id': '35535380'}, '6765159': {'card_id': 'card1', 'travel_date': '2024-02-29', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'first', 'travel_cost': 1000.0, 'transaction_id': '96206559'}, '8737609': {'card_id': 'card1', 'travel_date': '٢٠٢٤-01-1٥', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'business', 'travel_cost': 400.0, 'transaction_id': '49536459'}, '7580219': {'card_id': 'card1', 'travel_date': '2024-1-1٥', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'business', 'travel_cost': 400.0, 'transaction_id': '20768819'}, '5615346': {'card_id': 'card2', 'travel_date': '2024-01-02', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'economy', 'travel_cost': 200.0, 'transaction_id': '37889221'}, '4009123': {'card_id': 'card1', 'travel_date': '2024-01-01', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'economy', 'travel_cost': 400.0, 'transaction_id': '16939572'}, '3601617': {'card_id': 'card1', 'travel_date': '2024-01-01', 'travel_from': 'SFO', 'travel_to': 'LAX', 'travel_class': 'economy', 'travel_cost': 400.0, 'transaction_id': '17587245'}}, 'access_token': '260254', 'token_type': 'Bearer', 'token_expires_in': 2, 'token_scope': ['read'], 'user_first_name': 'Bo', 'user_last_name': 'Li', 'budget_limit': 100.0, 'long_context': False}",
	},
	{
		config: "{\"random_seed\": 7}",
		calls: []trProbeCall{
			{"travel_get_login_status()", "{\"status\": false}"},
			{"register_credit_card(access_token=None, card_number='1', expiration_date='1', cardholder_name='x', card_verification_number=1)", "{\"error\": \"Token not initialized\"}"},
			{"authenticate_travel(client_id='a', client_secret='b', refresh_token='c', grant_type='read_write', user_first_name='Bo', user_last_name='Li')", "{\"expires_in\": 2, \"access_token\": \"439563\", \"token_type\": \"Bearer\", \"scope\": \"read_write\"}"},
			{"travel_get_login_status()", "{\"status\": true}"},
			{"register_credit_card(access_token='439563', card_number='1', expiration_date='1', cardholder_name='x', card_verification_number=1)", "{\"card_id\": \"267279807972\"}"},
			{"book_flight(access_token='439563', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Card not registered\"}"},
			{"purchase_insurance(access_token='439563', insurance_type='x', booking_id='b1', insurance_cost=1.25, card_id='card1')", "{\"insurance_status\": false, \"error\": \"Booking not found\"}"},
			{"get_all_credit_cards()", "{\"credit_card_list\": {\"267279807972\": {\"card_number\": \"1\", \"expiration_date\": \"1\", \"cardholder_name\": \"x\", \"card_verification_number\": 1, \"balance\": 61750}}}"},
		},
		state: "{'credit_card_list': {'267279807972': {'card_number': '1', 'expiration_date': '1', 'cardholder_name': 'x', 'card_verification_number': 1, 'balance': 61750}}, 'booking_record': {}, 'access_token': '439563', 'token_type': 'Bearer', 'token_expires_in': 2, 'token_scope': 'read_write', 'user_first_name': 'Bo', 'user_last_name': 'Li', 'budget_limit': None, 'long_context': False}",
	},
	{
		config: "{}",
		calls: []trProbeCall{
			{"travel_get_login_status()", "{\"status\": false}"},
			{"authenticate_travel(client_id='a', client_secret='b', refresh_token='c', grant_type='read_write', user_first_name='Bo', user_last_name='Li')", "{\"expires_in\": 2, \"access_token\": \"251675\", \"token_type\": \"Bearer\", \"scope\": \"read_write\"}"},
			{"register_credit_card(access_token='251675', card_number='1', expiration_date='1', cardholder_name='x', card_verification_number=1)", "{\"card_id\": \"391310425148\"}"},
			{"book_flight(access_token='251675', card_id='card1', travel_date='2024-01-01', travel_from='SFO', travel_to='LAX', travel_class='economy')", "{\"booking_status\": false, \"error\": \"Card not registered\"}"},
			{"purchase_insurance(access_token='251675', insurance_type='x', booking_id='b1', insurance_cost=1.25, card_id='card1')", "{\"insurance_status\": false, \"error\": \"Booking not found\"}"},
			{"get_all_credit_cards()", "{\"credit_card_list\": {\"391310425148\": {\"card_number\": \"1\", \"expiration_date\": \"1\", \"cardholder_name\": \"x\", \"card_verification_number\": 1, \"balance\": 58617}}}"},
		},
		state: "{'credit_card_list': {'391310425148': {'card_number': '1', 'expiration_date': '1', 'cardholder_name': 'x', 'card_verification_number': 1, 'balance': 58617}}, 'booking_record': {}, 'access_token': '251675', 'token_type': 'Bearer', 'token_expires_in': 2, 'token_scope': 'read_write', 'user_first_name': 'Bo', 'user_last_name': 'Li', 'budget_limit': None, 'long_context': False}",
	},
}

func TestTravelProbes(t *testing.T) {
	n := 0
	for i, p := range trProbes {
		cfg, err := pyval.Decode([]byte(p.config))
		if err != nil {
			t.Fatal(err)
		}
		in, err := NewInstances([]string{"TravelAPI"}, dictOf("TravelAPI", cfg))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.calls {
			call, err := ParseCall(c.call)
			if err != nil {
				t.Fatalf("%s: %v", c.call, err)
			}
			n++
			if got := in.Run(call); got != c.result {
				t.Errorf("probe %d: %s\n  got  %s\n  want %s", i, c.call, got, c.result)
			}
		}
		if got := pyval.Repr(in.Class("TravelAPI").State()); got != p.state {
			t.Errorf("probe %d: state\n  got  %s\n  want %s", i, got, p.state)
		}
	}
	t.Logf("%d probe calls compared", n)
}
