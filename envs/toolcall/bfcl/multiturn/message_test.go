package multiturn

import (
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// msgProbes are calls the fixture does not make, with what BFCL's
// MessageAPI answered them (Python 3.11) and its state afterwards, as
// json.dumps writes it with generated_ids sorted and the keys that are no
// str tagged as State tags them: arguments of other types (dict keys
// that are ints, floats, bools or None), configs with values of other
// types, malformed inbox messages, seeds of each type.
var msgProbes = []struct {
	config  string
	calls   []string
	results []string
	state   string
}{
	{
		config: "{}",
		calls: []string{
			"list_users()",
			"get_user_id(user='Bob')",
			"get_user_id(user=5)",
			"get_user_id(user=[1])",
			"message_get_login_status()",
			"send_message(receiver_id='USR002', message='hi')",
			"search_messages(keyword='x')",
			"view_messages_sent()",
			"get_message_stats()",
			"delete_message(receiver_id='USR002')",
			"message_login(user_id=5)",
			"message_login(user_id='USR001')",
			"message_get_login_status()",
			"add_contact(user_name=5)",
			"add_contact(user_name=True)",
			"add_contact(user_name=5.0)",
			"add_contact(user_name=None)",
			"add_contact(user_name=[1])",
			"add_contact(user_name={'a': 1})",
			"add_contact(user_name='Alice')",
			"add_contact(user_name=2.5)",
			"list_users()",
			"get_user_id(user=True)",
			"get_user_id(user=1.0)",
			"get_user_id(user=None)",
			"send_message(receiver_id='USR002', message='hi')",
			"send_message(receiver_id='USR002', message=[1, 2])",
			"send_message(receiver_id=5, message='x')",
			"send_message(receiver_id='USR005', message={'k': None})",
			"send_message(receiver_id='USR002', message='My name is Alice. I want to connect.')",
			"search_messages(keyword='FILE')",
			"search_messages(keyword=5)",
			"search_messages(keyword=None)",
			"get_message_stats()",
			"view_messages_sent()",
			"delete_message(receiver_id='USR003')",
			"delete_message(receiver_id='nope')",
			"delete_message(receiver_id=None)",
			"delete_message(receiver_id='USR002')",
			"view_messages_sent()",
		},
		results: []string{
			"{\"user_list\": [\"Alice\", \"Bob\", \"Catherine\", \"Daniel\"]}",
			"{\"user_id\": \"USR002\"}",
			"{\"error\": \"User '5' not found in the workspace.\"}",
			"Error during execution: unhashable type: 'list'",
			"{\"login_status\": false}",
			"{\"error\": \"No user is currently logged in.\"}",
			"{\"error\": \"No user is currently logged in.\"}",
			"{\"error\": \"No user is currently logged in.\"}",
			"{\"error\": \"No user is currently logged in.\"}",
			"{\"error\": \"No user is currently logged in.\"}",
			"{\"login_status\": false, \"message\": \"User ID '5' not found.\"}",
			"{\"login_status\": true, \"message\": \"User 'USR001' logged in successfully.\"}",
			"{\"login_status\": true}",
			"{\"added_status\": true, \"user_id\": \"USR005\", \"message\": \"Contact '5' added successfully.\"}",
			"{\"added_status\": true, \"user_id\": \"USR006\", \"message\": \"Contact 'True' added successfully.\"}",
			"{\"error\": \"User name '5.0' already exists.\"}",
			"{\"added_status\": true, \"user_id\": \"USR007\", \"message\": \"Contact 'None' added successfully.\"}",
			"Error during execution: unhashable type: 'list'",
			"Error during execution: unhashable type: 'dict'",
			"{\"error\": \"User name 'Alice' already exists.\"}",
			"{\"added_status\": true, \"user_id\": \"USR008\", \"message\": \"Contact '2.5' added successfully.\"}",
			"{\"user_list\": [\"Alice\", \"Bob\", \"Catherine\", \"Daniel\", 5, true, null, 2.5]}",
			"{\"user_id\": \"USR006\"}",
			"{\"user_id\": \"USR006\"}",
			"{\"user_id\": \"USR007\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 67410}, \"message\": \"Message sent to 'USR002' successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 41772}, \"message\": \"Message sent to 'USR002' successfully.\"}",
			"{\"error\": \"Receiver ID '5' not found.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 24547}, \"message\": \"Message sent to 'USR005' successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 24421}, \"message\": \"Message sent to 'USR002' successfully.\"}",
			"Error during execution: 'list' object has no attribute 'lower'",
			"Error during execution: 'int' object has no attribute 'lower'",
			"Error during execution: 'NoneType' object has no attribute 'lower'",
			"{\"stats\": {\"received_count\": 7, \"total_contacts\": 4}}",
			"{\"messages\": {\"USR002\": [\"My name is Alice. I want to connect.\", \"hi\", [1, 2], \"My name is Alice. I want to connect.\"], \"USR003\": [\"Could you upload the file?\"], \"USR004\": [\"Could you upload the file?\"], \"USR005\": [{\"k\": null}]}}",
			"{\"deleted_status\": true, \"receiver_id\": \"USR003\", \"message\": \"Receiver USR003's latest message deleted successfully.\"}",
			"{\"error\": \"Receiver ID nope not found.\"}",
			"{\"error\": \"Receiver ID None not found.\"}",
			"{\"deleted_status\": true, \"receiver_id\": \"USR002\", \"message\": \"Receiver USR002's latest message deleted successfully.\"}",
			"{\"messages\": {\"USR004\": [\"Could you upload the file?\"], \"USR002\": [\"hi\", [1, 2], \"My name is Alice. I want to connect.\"], \"USR005\": [{\"k\": null}]}}",
		},
		state: "{\"generated_ids\": [24421, 24547, 41772, 67410], \"user_count\": 8, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\", \"\\u0000int:5\": \"USR005\", \"\\u0000int:1\": \"USR006\", \"\\u0000None\": \"USR007\", \"\\u0000float:2.5\": \"USR008\"}, \"inbox\": [{\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"hi\"}, {\"USR002\": [1, 2]}, {\"USR005\": {\"k\": null}}, {\"USR002\": \"My name is Alice. I want to connect.\"}], \"message_count\": 7, \"current_user\": \"USR001\"}",
	},
	{
		config: "{\"user_map\": {\"A\": 5, \"B\": \"x\", \"C\": [\"L\"], \"D\": true}, \"current_user\": \"x\", \"inbox\": []}",
		calls: []string{
			"send_message(receiver_id=5.0, message='a')",
			"send_message(receiver_id=True, message='b')",
			"send_message(receiver_id=1, message='c')",
			"send_message(receiver_id=['L'], message='d')",
			"send_message(receiver_id='x', message='e')",
			"view_messages_sent()",
			"get_message_stats()",
			"search_messages(keyword='')",
			"delete_message(receiver_id=5)",
			"view_messages_sent()",
			"message_login(user_id=['L'])",
			"message_get_login_status()",
			"list_users()",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 67410}, \"message\": \"Message sent to '5.0' successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 41772}, \"message\": \"Message sent to 'True' successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 24547}, \"message\": \"Message sent to '1' successfully.\"}",
			"Error during execution: unhashable type: 'list'",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 60424}, \"message\": \"Message sent to 'x' successfully.\"}",
			"{\"messages\": {\"5.0\": [\"a\"], \"true\": [\"b\", \"c\"], \"x\": [\"e\"]}}",
			"{\"stats\": {\"received_count\": 4, \"total_contacts\": 3}}",
			"{\"results\": [{\"receiver_id\": 5.0, \"message\": \"a\"}, {\"receiver_id\": true, \"message\": \"b\"}, {\"receiver_id\": 1, \"message\": \"c\"}, {\"receiver_id\": \"x\", \"message\": \"e\"}]}",
			"{\"deleted_status\": true, \"receiver_id\": 5.0, \"message\": \"Receiver 5's latest message deleted successfully.\"}",
			"{\"messages\": {\"true\": [\"b\", \"c\"], \"x\": [\"e\"]}}",
			"{\"login_status\": true, \"message\": \"User '['L']' logged in successfully.\"}",
			"{\"login_status\": true}",
			"{\"user_list\": [\"A\", \"B\", \"C\", \"D\"]}",
		},
		state: "{\"generated_ids\": [24421, 24547, 41772, 60424, 67410], \"user_count\": 4, \"user_map\": {\"A\": 5, \"B\": \"x\", \"C\": [\"L\"], \"D\": true}, \"inbox\": [{\"\\u0000int:1\": \"b\"}, {\"\\u0000int:1\": \"c\"}, {\"x\": \"e\"}], \"message_count\": 7, \"current_user\": [\"L\"]}",
	},
	{
		config: "{\"generated_ids\": [1, 2], \"current_user\": \"USR001\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
			"view_messages_sent()",
		},
		results: []string{
			"Error during execution: 'list' object has no attribute 'add'",
			"{\"messages\": {\"USR002\": [\"My name is Alice. I want to connect.\"], \"USR003\": [\"Could you upload the file?\"], \"USR004\": [\"Could you upload the file?\"]}}",
		},
		state: "{\"generated_ids\": [1, 2], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": \"USR001\"}",
	},
	{
		config: "{\"generated_ids\": \"abc\", \"current_user\": \"USR001\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"Error during execution: 'in <string>' requires string as left operand, not int",
		},
		state: "{\"generated_ids\": \"abc\", \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": \"USR001\"}",
	},
	{
		config: "{\"generated_ids\": 7, \"current_user\": \"USR001\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"Error during execution: argument of type 'int' is not iterable",
		},
		state: "{\"generated_ids\": 7, \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": \"USR001\"}",
	},
	{
		config: "{\"generated_ids\": {\"a\": 1}, \"current_user\": \"USR001\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"Error during execution: 'dict' object has no attribute 'add'",
		},
		state: "{\"generated_ids\": {\"a\": 1}, \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": \"USR001\"}",
	},
	{
		config: "{\"user_count\": \"5\", \"message_count\": \"x\", \"current_user\": 1}",
		calls: []string{
			"add_contact(user_name='Z')",
			"send_message(receiver_id='USR002', message='m')",
			"get_message_stats()",
		},
		results: []string{
			"Error during execution: can only concatenate str (not \"int\") to str",
			"Error during execution: can only concatenate str (not \"int\") to str",
			"{\"stats\": {\"received_count\": 4, \"total_contacts\": 3}}",
		},
		state: "{\"generated_ids\": [67410], \"user_count\": \"5\", \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": \"x\", \"current_user\": 1}",
	},
	{
		config: "{\"user_count\": null, \"message_count\": null, \"current_user\": [0]}",
		calls: []string{
			"add_contact(user_name='Z')",
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"Error during execution: unsupported operand type(s) for +=: 'NoneType' and 'int'",
			"Error during execution: unsupported operand type(s) for +=: 'NoneType' and 'int'",
		},
		state: "{\"generated_ids\": [67410], \"user_count\": null, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": null, \"current_user\": [0]}",
	},
	{
		config: "{\"user_count\": [], \"message_count\": {}}",
		calls: []string{
			"add_contact(user_name='Z')",
			"message_login(user_id='USR002')",
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"Error during execution: 'int' object is not iterable",
			"{\"login_status\": true, \"message\": \"User 'USR002' logged in successfully.\"}",
			"Error during execution: unsupported operand type(s) for +=: 'dict' and 'int'",
		},
		state: "{\"generated_ids\": [67410], \"user_count\": [], \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": {}, \"current_user\": \"USR002\"}",
	},
	{
		config: "{\"user_count\": 2.0, \"message_count\": 1.5, \"current_user\": 0.5}",
		calls: []string{
			"add_contact(user_name='Z')",
			"add_contact(user_name='Y')",
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"added_status\": true, \"user_id\": \"USR3.0\", \"message\": \"Contact 'Z' added successfully.\"}",
			"{\"added_status\": true, \"user_id\": \"USR4.0\", \"message\": \"Contact 'Y' added successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 67410}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [67410], \"user_count\": 4.0, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\", \"Z\": \"USR3.0\", \"Y\": \"USR4.0\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 2.5, \"current_user\": 0.5}",
	},
	{
		config: "{\"user_count\": -5, \"message_count\": true, \"current_user\": \"u\"}",
		calls: []string{
			"add_contact(user_name='Z')",
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"added_status\": true, \"user_id\": \"USR-04\", \"message\": \"Contact 'Z' added successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 67410}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [67410], \"user_count\": -4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\", \"Z\": \"USR-04\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 2, \"current_user\": \"u\"}",
	},
	{
		config: "{\"user_count\": 9223372036854775807}",
		calls: []string{
			"add_contact(user_name='Z')",
		},
		results: []string{
			"{\"added_status\": true, \"user_id\": \"USR9223372036854775808\", \"message\": \"Contact 'Z' added successfully.\"}",
		},
		state: "{\"generated_ids\": [], \"user_count\": 9223372036854775808, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\", \"Z\": \"USR9223372036854775808\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": null}",
	},
	{
		config: "{\"user_count\": 1e16}",
		calls: []string{
			"add_contact(user_name='Z')",
		},
		results: []string{
			"{\"added_status\": true, \"user_id\": \"USR1e+16\", \"message\": \"Contact 'Z' added successfully.\"}",
		},
		state: "{\"generated_ids\": [], \"user_count\": 1e+16, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\", \"Z\": \"USR1e+16\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": null}",
	},
	{
		config: "{\"user_map\": {\"A\": \"USR003\"}, \"user_count\": 2}",
		calls: []string{
			"add_contact(user_name='B')",
			"list_users()",
		},
		results: []string{
			"{\"error\": \"User ID 'USR003' already exists.\"}",
			"{\"user_list\": [\"A\"]}",
		},
		state: "{\"generated_ids\": [], \"user_count\": 3, \"user_map\": {\"A\": \"USR003\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}], \"message_count\": 3, \"current_user\": null}",
	},
	{
		config: "{\"current_user\": \"u\", \"inbox\": [{\"A\": \"hello\"}, {\"B\": [\"x\"]}, [], {}]}",
		calls: []string{
			"search_messages(keyword='HELLO')",
			"search_messages(keyword=1)",
			"view_messages_sent()",
			"get_message_stats()",
			"delete_message(receiver_id='A')",
			"delete_message(receiver_id='B')",
		},
		results: []string{
			"Error during execution: 'list' object has no attribute 'lower'",
			"Error during execution: 'int' object has no attribute 'lower'",
			"Error during execution: 'list' object has no attribute 'items'",
			"Error during execution: 'list' object has no attribute 'items'",
			"Error during execution: list index out of range",
			"Error during execution: list index out of range",
		},
		state: "{\"generated_ids\": [], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"A\": \"hello\"}, {\"B\": [\"x\"]}, [], {}], \"message_count\": 3, \"current_user\": \"u\"}",
	},
	{
		config: "{\"current_user\": \"u\", \"inbox\": [{\"A\": \"hello\"}, {}, {\"B\": \"x\"}]}",
		calls: []string{
			"delete_message(receiver_id='B')",
			"delete_message(receiver_id='A')",
			"view_messages_sent()",
		},
		results: []string{
			"{\"deleted_status\": true, \"receiver_id\": \"B\", \"message\": \"Receiver B's latest message deleted successfully.\"}",
			"Error during execution: list index out of range",
			"Error during execution: list index out of range",
		},
		state: "{\"generated_ids\": [], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"A\": \"hello\"}, {}], \"message_count\": 3, \"current_user\": \"u\"}",
	},
	{
		config: "{\"current_user\": \"u\", \"inbox\": [{\"A\": \"x\", \"B\": \"y\"}, {\"B\": \"y\", \"A\": \"x\"}, {\"A\": \"x\"}]}",
		calls: []string{
			"delete_message(receiver_id='A')",
			"view_messages_sent()",
			"search_messages(keyword='X')",
		},
		results: []string{
			"{\"deleted_status\": true, \"receiver_id\": \"A\", \"message\": \"Receiver A's latest message deleted successfully.\"}",
			"{\"messages\": {\"A\": [\"x\"], \"B\": [\"y\"]}}",
			"{\"results\": [{\"receiver_id\": \"A\", \"message\": \"x\"}]}",
		},
		state: "{\"generated_ids\": [], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"A\": \"x\", \"B\": \"y\"}, {\"B\": \"y\", \"A\": \"x\"}], \"message_count\": 3, \"current_user\": \"u\"}",
	},
	{
		config: "{\"current_user\": \"u\", \"inbox\": [{\"A\": \"x\"}, {\"B\": \"y\"}, {\"A\": \"x\"}, {\"A\": \"z\"}]}",
		calls: []string{
			"delete_message(receiver_id='A')",
			"delete_message(receiver_id='A')",
			"view_messages_sent()",
			"get_message_stats()",
		},
		results: []string{
			"{\"deleted_status\": true, \"receiver_id\": \"A\", \"message\": \"Receiver A's latest message deleted successfully.\"}",
			"{\"deleted_status\": true, \"receiver_id\": \"A\", \"message\": \"Receiver A's latest message deleted successfully.\"}",
			"{\"messages\": {\"B\": [\"y\"], \"A\": [\"x\"]}}",
			"{\"stats\": {\"received_count\": 2, \"total_contacts\": 2}}",
		},
		state: "{\"generated_ids\": [], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"B\": \"y\"}, {\"A\": \"x\"}], \"message_count\": 3, \"current_user\": \"u\"}",
	},
	{
		config: "{\"current_user\": \"u\", \"inbox\": [{\"A\": \"\u00c9COLE \u0130stanbul \u03a3\u0391\u03a3\"}]}",
		calls: []string{
			"search_messages(keyword='\u00e9cole')",
			"search_messages(keyword='i\u0307stanbul')",
			"search_messages(keyword='\u03c3\u03b1\u03c2')",
		},
		results: []string{
			"{\"results\": [{\"receiver_id\": \"A\", \"message\": \"\\u00c9COLE \\u0130stanbul \\u03a3\\u0391\\u03a3\"}]}",
			"{\"results\": [{\"receiver_id\": \"A\", \"message\": \"\\u00c9COLE \\u0130stanbul \\u03a3\\u0391\\u03a3\"}]}",
			"{\"results\": [{\"receiver_id\": \"A\", \"message\": \"\\u00c9COLE \\u0130stanbul \\u03a3\\u0391\\u03a3\"}]}",
		},
		state: "{\"generated_ids\": [], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"A\": \"\\u00c9COLE \\u0130stanbul \\u03a3\\u0391\\u03a3\"}], \"message_count\": 3, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": 2.5, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 64889}, \"message\": \"Message sent to 'USR002' successfully.\"}",
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 54078}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [54078, 64889], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}, {\"USR002\": \"m\"}], \"message_count\": 5, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": -2.75, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 29686}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [29686], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": 1e300, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 44264}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [44264], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": \"abc\", \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 83160}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [83160], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": \"\", \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 69569}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [69569], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": true, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 27611}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [27611], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": 1180591620717411303427, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 31416}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [31416], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": -7, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 52445}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [52445], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
	{
		config: "{\"random_seed\": 0, \"current_user\": \"u\"}",
		calls: []string{
			"send_message(receiver_id='USR002', message='m')",
		},
		results: []string{
			"{\"sent_status\": true, \"message_id\": {\"new_id\": 60494}, \"message\": \"Message sent to 'USR002' successfully.\"}",
		},
		state: "{\"generated_ids\": [60494], \"user_count\": 4, \"user_map\": {\"Alice\": \"USR001\", \"Bob\": \"USR002\", \"Catherine\": \"USR003\", \"Daniel\": \"USR004\"}, \"inbox\": [{\"USR002\": \"My name is Alice. I want to connect.\"}, {\"USR003\": \"Could you upload the file?\"}, {\"USR004\": \"Could you upload the file?\"}, {\"USR002\": \"m\"}], \"message_count\": 4, \"current_user\": \"u\"}",
	},
}

func TestMessageProbes(t *testing.T) {
	for i, p := range msgProbes {
		cfg, err := pyval.Decode([]byte(p.config))
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		all := pyval.NewDict()
		all.Set("MessageAPI", cfg)
		in, err := NewInstances([]string{"MessageAPI"}, all)
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		for j, src := range p.calls {
			c, err := ParseCall(src)
			if err != nil {
				t.Fatalf("probe %d: %v", i, err)
			}
			if got := in.Run(c); got != p.results[j] {
				t.Errorf("probe %d (%s): %s\n  got  %s\n  want %s", i, p.config, src, got, p.results[j])
			}
		}
		if got := pyval.Dumps(in.Class("MessageAPI").State()); got != p.state {
			t.Errorf("probe %d (%s): state\n  got  %s\n  want %s", i, p.config, got, p.state)
		}
	}
}

func TestMessageLoadRefuses(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"random_seed": [1]}`: "The only supported seed types are: None,\nint, float, str, bytes, and bytearray.",
		`{"user_map": []}`:     "user_map is a list, not a dict",
		`{"inbox": {}}`:        "inbox is a dict, not a list",
	} {
		v, err := pyval.Decode([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		var c messageAPI
		if err := c.Load(v.(*pyval.Dict)); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", cfg, err, want)
		}
	}
}
