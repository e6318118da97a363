package telecom

import (
	"testing"
)

// The expected values in this file were produced by tau2's own Python
// (TelecomEnvironment, at the data's commit) on the same data: tool
// results as the agent reads them, and the databases' hashes, tau2's
// get_db_hash and get_user_db_hash.

// Every tau2 telecom task: the hashes of the agent's and the user's
// databases at the task's initial state, each gold action's result, and
// the hashes after the gold actions.
func TestGoldAsTau2(t *testing.T) {
	tasks := realTasks(t)
	want := []struct {
		id    string
		init  [2]string
		gold  []string
		final [2]string
	}{
		{"[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "0225958c9329708dabfd72ff5fdd48c65c024b553dda0f4a7129146f54eccb7f"},
			[]string{"Data Roaming is now ON.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "0246e41b8012988333b4cef33c4fc88055f746e1bfbb59ced5f84e4bf7543b03"}},
		{"[mobile_data_issue]user_abroad_roaming_disabled_on[PERSONA:Easy]",
			[2]string{"b167dc73a096e4e7e486bbf75ae428c81a4a1dd174b30f6e157a2a6e7e731d10", "aed352ffa46ada5d2784e69a45086a21ae48067b065f59162808906ff7b1afc9"},
			[]string{"Roaming enabled successfully"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "0246e41b8012988333b4cef33c4fc88055f746e1bfbb59ced5f84e4bf7543b03"}},
		{"[mobile_data_issue]user_abroad_roaming_disabled_off[PERSONA:Hard]",
			[2]string{"b167dc73a096e4e7e486bbf75ae428c81a4a1dd174b30f6e157a2a6e7e731d10", "44f3ebb410c976d06c18f725b336e432ff0a51e7900586be03d5edd1d3dd6c4a"},
			[]string{"Roaming enabled successfully", "Data Roaming is now ON.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "0246e41b8012988333b4cef33c4fc88055f746e1bfbb59ced5f84e4bf7543b03"}},
		{"[mobile_data_issue]data_mode_off[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "271e17a101fa74c3266cf1b246bd6ccae748bdba3446a8e36095a7ff125b2476"},
			[]string{"Mobile Data is now ON.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[mobile_data_issue]data_saver_mode_on[PERSONA:Easy]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "a3067b3fe305df75e040cae4c59b7cbb813a9aa9c1cb7b7499722e6eba6b4d16"},
			[]string{"Data Saver Mode is now OFF.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "4946e7b208fefa86109388d94b5c8fb26d541b44521a105e13c8197704ccfb43"}},
		{"[mobile_data_issue]bad_network_preference[PERSONA:Hard]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "f0b8b8be6f410c348db7ccc529afcd48461cea9e406fe232c1ca1c642ea77e97"},
			[]string{"Preferred Network Mode set to: 4g_5g_preferred\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[mobile_data_issue]bad_vpn[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "22c00be1f23f06c53c6d7b41443926e570efd550aa72b8afdde03eec489a1012"},
			[]string{"VPN disconnected successfully.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "4946e7b208fefa86109388d94b5c8fb26d541b44521a105e13c8197704ccfb43"}},
		{"[mobile_data_issue]data_usage_exceeded[PERSONA:Easy]",
			[2]string{"2041156d154b2ed1c5fe372ef44b0aca85555a4c91c82def969bc1d61d8c7548", "f60de0c735f73ee3a4c63bcddf1fe1f2c2f79427ae5999a815382b5fff80f3fd"},
			[]string{"{\"message\": \"Successfully added 2.0 GB of data for line L1002 for $4.00\", \"new_data_refueling_gb\": \"2.0\", \"charge\": \"4.0\"}"},
			[2]string{"ed58804f463f2bd376b6b4ede4df00ac7213ddde567c29c2db998112193af23d", "4946e7b208fefa86109388d94b5c8fb26d541b44521a105e13c8197704ccfb43"}},
		{"[service_issue]airplane_mode_on[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "5fbd92bd42e95b55822f7102f2671d32f3a01374d2ea67aaf5a17290878bbc91"},
			[]string{"Airplane Mode is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[service_issue]unseat_sim_card[PERSONA:Easy]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "7fb7f4136e5a00923ed91565d53c5b0cde2c44cb4ad31f6c0061dc3d2e095c8a"},
			[]string{"SIM card re-seated successfully.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[service_issue]lock_sim_card_pin[PERSONA:Hard]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "957e846578526e02c7724c7a788415482ca8d846c398f7d779df8b4bbe4fdac8"},
			[]string{"Transfer successful"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "957e846578526e02c7724c7a788415482ca8d846c398f7d779df8b4bbe4fdac8"}},
		{"[service_issue]break_apn_settings[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "4c39b23be07e5d6205eb281051ddf905ae8ac813e9cc5e804582ea0324b522dc"},
			[]string{"APN settings will reset at reboot.\nStatus Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%", "Resetting APN settings...\nRestarting network services...\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[service_issue]overdue_bill_suspension[PERSONA:Easy]",
			[2]string{"aad6f2f4527d73683cc0c097cb47d3af5f353aacafac295936eba4d6684a7842", "f27c4a613fd74fd2a9695894dd0e994dbfac1d1188b6174b2b079925215863f4"},
			[]string{"Payment request sent to the customer for bill B1234321", "Payment of 65.0 USD has been made for bill B1234321.", "{\"message\": \"Line resumed successfully\", \"line\": {\"line_id\": \"L1002\", \"phone_number\": \"555-123-2002\", \"status\": \"Active\", \"plan_id\": \"P1002\", \"device_id\": \"D1002\", \"data_used_gb\": 8.7, \"data_refueling_gb\": 0.0, \"roaming_enabled\": true, \"contract_end_date\": \"2026-12-31\", \"last_plan_change_date\": \"2024-12-15\", \"last_sim_replacement_date\": \"2025-01-20\", \"suspension_start_date\": null}}", "Restarting network services...\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"5a12d77ca0d6959245f5155557792b0e965cda126bda4a0b3f821a39ce242a61", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[service_issue]contract_end_suspension[PERSONA:Hard]",
			[2]string{"742995a3e358cbadf5e5774323c80cd384b2afd3017c050fcd0c4c8510a61118", "f27c4a613fd74fd2a9695894dd0e994dbfac1d1188b6174b2b079925215863f4"},
			[]string{"Transfer successful"},
			[2]string{"742995a3e358cbadf5e5774323c80cd384b2afd3017c050fcd0c4c8510a61118", "f27c4a613fd74fd2a9695894dd0e994dbfac1d1188b6174b2b079925215863f4"}},
		{"[mms_issue]bad_network_preference[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "f0b8b8be6f410c348db7ccc529afcd48461cea9e406fe232c1ca1c642ea77e97"},
			[]string{"Preferred Network Mode set to: 4g_5g_preferred\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[mms_issue]bad_wifi_calling[PERSONA:Easy]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "75d67965efc93bf1e4656ca5df8fd9fb262d6d0329cad76836628161d4e904ee"},
			[]string{"Wi-Fi Calling is now OFF.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "abe07bfae957fb036354b696e075e78cb2c59239cd05382861bd59e077250faa"}},
		{"[mms_issue]break_apn_mms_setting[PERSONA:Hard]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "1c1bc3f6b5012b84c0c315b93c1c7425a83bb34898bae883c723829f0e6d5300"},
			[]string{"APN settings will reset at reboot.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%", "Resetting APN settings...\nRestarting network services...\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "65e1838b2dc6410394b9fbc80327c3625fb90ba2c4a1b2ae5ef5e2e6e19ecc32"}},
		{"[mms_issue]break_app_sms_permission[PERSONA:None]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "f107f98261f880b98474645f61f2bb282db60ca065d0ef97aa40c44688db0585"},
			[]string{"Success. Permission 'sms' granted to app 'messaging'.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "4946e7b208fefa86109388d94b5c8fb26d541b44521a105e13c8197704ccfb43"}},
		{"[mms_issue]break_app_storage_permission[PERSONA:Easy]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "822e3532b1de61ff7b4485a891f55311190fa3fa5dd7d626453747e03d030c50"},
			[]string{"Success. Permission 'storage' granted to app 'messaging'.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "4946e7b208fefa86109388d94b5c8fb26d541b44521a105e13c8197704ccfb43"}},
		{"[mms_issue]break_app_both_permissions[PERSONA:Hard]",
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "d9e2c8068ff1f8b068dfcc1afdf9028b8b1f10db93db14690ca78cdb3aaa2a0a"},
			[]string{"Success. Permission 'sms' granted to app 'messaging'.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%", "Success. Permission 'storage' granted to app 'messaging'.\nStatus Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"},
			[2]string{"304cf5ef059852e117ea801ab9a5efc24c9713ec887679dc2e30acceb4b6742d", "4946e7b208fefa86109388d94b5c8fb26d541b44521a105e13c8197704ccfb43"}},
	}
	if len(tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(tasks), len(want))
	}
	d := NewDomain()
	for i, w := range want {
		task := &tasks[i]
		if task.Labels["tau2_id"] != w.id {
			t.Fatalf("task %d is %s, want %s", i, task.Labels["tau2_id"], w.id)
		}
		wd := startWorld(t, d, task)
		if got := [2]string{wd.agentHash(), wd.userHash()}; got != w.init {
			t.Errorf("%s: initial hashes\n got %v\nwant %v", w.id, got, w.init)
		}
		c, err := CriteriaOf(task)
		if err != nil {
			t.Fatal(err)
		}
		for j, a := range c.Actions {
			if got := content(t, wd, a.Requestor, a.Name, string(a.Arguments)); got != w.gold[j] {
				t.Errorf("%s: gold action %d %s:\n got %q\nwant %q", w.id, j, a.Name, got, w.gold[j])
			}
		}
		if got := [2]string{wd.agentHash(), wd.userHash()}; got != w.final {
			t.Errorf("%s: final hashes\n got %v\nwant %v", w.id, got, w.final)
		}
	}
}

// A sequence of calls of every tool, of both sides, through their error
// paths (ids of nothing or of another customer, a line that is not
// active, a float slice index, a refuel of 0, a second payment request,
// an unknown network mode, permissions, app and APN settings), from the
// overdue-bill task's initial state; then the hashes.
func TestCallsAsTau2(t *testing.T) {
	tasks := realTasks(t)
	w := startWorld(t, NewDomain(), &tasks[12])
	calls := []struct{ side, name, args, want string }{
		{sideAgent, "get_customer_by_phone", `{"phone_number":"555-123-2003"}`, "{\"customer_id\": \"C1001\", \"full_name\": \"John Smith\", \"date_of_birth\": \"1985-06-15\", \"email\": \"john.smith@example.com\", \"phone_number\": \"555-123-2002\", \"address\": {\"street\": \"123 Main St\", \"city\": \"Anytown\", \"state\": \"CA\", \"zip_code\": \"90210\"}, \"account_status\": \"Active\", \"payment_methods\": [{\"method_type\": \"Credit Card\", \"account_number_last_4\": \"1235\", \"expiration_date\": \"12/2026\"}], \"line_ids\": [\"L1001\", \"L1002\", \"L1003\"], \"bill_ids\": [\"B1001\", \"B1002\", \"B1003\", \"B1234321\"], \"created_at\": \"2025-01-15 10:30:00\", \"last_extension_date\": null, \"goodwill_credit_used_this_year\": 25.0}"},
		{sideAgent, "get_customer_by_phone", `{"phone_number":"555-123-1002"}`, "{\"customer_id\": \"C1002\", \"full_name\": \"Sarah Johnson\", \"date_of_birth\": \"1990-11-22\", \"email\": \"sarah.j@example.com\", \"phone_number\": \"555-123-1002\", \"address\": {\"street\": \"456 Oak Ave\", \"city\": \"Springfield\", \"state\": \"IL\", \"zip_code\": \"62701\"}, \"account_status\": \"Active\", \"payment_methods\": [{\"method_type\": \"Debit Card\", \"account_number_last_4\": \"1234\", \"expiration_date\": \"12/2026\"}, {\"method_type\": \"Credit Card\", \"account_number_last_4\": \"5678\", \"expiration_date\": \"06/2027\"}], \"line_ids\": [\"L1004\", \"L1005\", \"L1006\", \"L1007\", \"L1008\"], \"bill_ids\": [\"B1004\", \"B1005\"], \"created_at\": \"2025-02-10 14:15:00\", \"last_extension_date\": \"2025-01-05\", \"goodwill_credit_used_this_year\": 0.0}"},
		{sideAgent, "get_customer_by_phone", `{"phone_number":"555-999-0000"}`, "Error: Customer with phone number 555-999-0000 not found"},
		{sideAgent, "get_customer_by_id", `{"customer_id":"C1004"}`, "{\"customer_id\": \"C1004\", \"full_name\": \"Emma Wilson\", \"date_of_birth\": \"1995-08-17\", \"email\": \"emma.w@example.com\", \"phone_number\": \"555-123-1004\", \"address\": {\"street\": \"101 River Rd\", \"city\": \"Austin\", \"state\": \"TX\", \"zip_code\": \"73301\"}, \"account_status\": \"Pending Verification\", \"payment_methods\": [], \"line_ids\": [], \"bill_ids\": [], \"created_at\": \"2025-01-25 16:20:00\", \"last_extension_date\": null, \"goodwill_credit_used_this_year\": 0.0}"},
		{sideAgent, "get_customer_by_id", `{"customer_id":"c1001"}`, "Error: Customer with ID c1001 not found"},
		{sideAgent, "get_customer_by_name", `{"full_name":"SARAH johnson","dob":"1990-11-22"}`, "[{\"customer_id\": \"C1002\", \"full_name\": \"Sarah Johnson\", \"date_of_birth\": \"1990-11-22\", \"email\": \"sarah.j@example.com\", \"phone_number\": \"555-123-1002\", \"address\": {\"street\": \"456 Oak Ave\", \"city\": \"Springfield\", \"state\": \"IL\", \"zip_code\": \"62701\"}, \"account_status\": \"Active\", \"payment_methods\": [{\"method_type\": \"Debit Card\", \"account_number_last_4\": \"1234\", \"expiration_date\": \"12/2026\"}, {\"method_type\": \"Credit Card\", \"account_number_last_4\": \"5678\", \"expiration_date\": \"06/2027\"}], \"line_ids\": [\"L1004\", \"L1005\", \"L1006\", \"L1007\", \"L1008\"], \"bill_ids\": [\"B1004\", \"B1005\"], \"created_at\": \"2025-02-10 14:15:00\", \"last_extension_date\": \"2025-01-05\", \"goodwill_credit_used_this_year\": 0.0}]"},
		{sideAgent, "get_customer_by_name", `{"full_name":"Sarah Johnson","dob":"1990-11-23"}`, "[]"},
		{sideAgent, "get_details_by_id", `{"id":"D1002"}`, "{\"device_id\": \"D1002\", \"device_type\": \"phone\", \"model\": \"Smartphone Pro Max\", \"imei\": \"234567890123456\", \"is_esim_capable\": true, \"activated\": true, \"activation_date\": \"2025-02-15 11:45:00\", \"last_esim_transfer_date\": \"2025-01-20 09:30:00\"}"},
		{sideAgent, "get_details_by_id", `{"id":"P1003"}`, "{\"plan_id\": \"P1003\", \"name\": \"Unlimited Plus\", \"data_limit_gb\": 999.0, \"price_per_month\": 85.0, \"data_refueling_price_per_gb\": 0.1}"},
		{sideAgent, "get_details_by_id", `{"id":"B1234321"}`, "{\"bill_id\": \"B1234321\", \"customer_id\": \"C1001\", \"period_start\": \"2025-01-01\", \"period_end\": \"2025-01-31\", \"issue_date\": \"2025-01-01\", \"total_due\": 65.0, \"due_date\": \"2025-01-15\", \"line_items\": [{\"description\": \"Charge for line L1002\", \"amount\": 65.0, \"date\": \"2025-02-25\", \"item_type\": \"Charge\"}], \"status\": \"Overdue\"}"},
		{sideAgent, "get_details_by_id", `{"id":"Q1"}`, "Error: Unknown ID format or type: Q1"},
		{sideAgent, "get_details_by_id", `{"id":"L0"}`, "Error: Line with ID L0 not found"},
		{sideAgent, "get_details_by_id", `{"id":""}`, "Error: Unknown ID format or type: "},
		{sideAgent, "get_bills_for_customer", `{"customer_id":"C1001","limit":2}`, "[{\"bill_id\": \"B1003\", \"customer_id\": \"C1001\", \"period_start\": \"2025-03-01\", \"period_end\": \"2025-03-31\", \"issue_date\": \"2025-03-01\", \"total_due\": 0.0, \"due_date\": \"2025-03-15\", \"line_items\": [], \"status\": \"Draft\"}, {\"bill_id\": \"B1002\", \"customer_id\": \"C1001\", \"period_start\": \"2025-02-01\", \"period_end\": \"2025-02-28\", \"issue_date\": \"2025-02-05\", \"total_due\": 150.0, \"due_date\": \"2025-02-19\", \"line_items\": [{\"description\": \"Basic Plan - Line 555-123-2001\", \"amount\": 40.0, \"date\": \"2025-02-05\", \"item_type\": \"Plan Charge\"}, {\"description\": \"Premium Plan - Line 555-123-2002\", \"amount\": 65.0, \"date\": \"2025-02-05\", \"item_type\": \"Plan Charge\"}, {\"description\": \"Basic Plan - Line 555-123-2003\", \"amount\": 40.0, \"date\": \"2025-02-05\", \"item_type\": \"Plan Charge\"}, {\"description\": \"Suspension Fee - Line 555-123-2003\", \"amount\": 5.0, \"date\": \"2025-02-05\", \"item_type\": \"Fee\"}], \"status\": \"Issued\"}]"},
		{sideAgent, "get_bills_for_customer", `{"customer_id":"C1001","limit":-3}`, "[{\"bill_id\": \"B1003\", \"customer_id\": \"C1001\", \"period_start\": \"2025-03-01\", \"period_end\": \"2025-03-31\", \"issue_date\": \"2025-03-01\", \"total_due\": 0.0, \"due_date\": \"2025-03-15\", \"line_items\": [], \"status\": \"Draft\"}]"},
		{sideAgent, "get_bills_for_customer", `{"customer_id":"C1001","limit":2.0}`, "Error: slice indices must be integers or None or have an __index__ method"},
		{sideAgent, "get_bills_for_customer", `{"customer_id":"C1004"}`, "[]"},
		{sideAgent, "get_data_usage", `{"customer_id":"C1001","line_id":"L1002"}`, "{\"line_id\": \"L1002\", \"data_used_gb\": \"8.7\", \"data_limit_gb\": \"15.0\", \"data_refueling_gb\": \"0.0\", \"cycle_end_date\": \"2025-02-28\"}"},
		{sideAgent, "get_data_usage", `{"customer_id":"C1002","line_id":"L1002"}`, "Error: Line L1002 not found for customer C1002"},
		{sideAgent, "suspend_line", `{"customer_id":"C1001","line_id":"L1002","reason":"x"}`, "Error: Line must be active to suspend"},
		{sideAgent, "suspend_line", `{"customer_id":"C1001","line_id":"L1001","reason":"travel"}`, "{\"message\": \"Line suspended successfully. $5/month holding fee will apply.\", \"line\": {\"line_id\": \"L1001\", \"phone_number\": \"555-123-2001\", \"status\": \"Suspended\", \"plan_id\": \"P1001\", \"device_id\": \"D1001\", \"data_used_gb\": 3.2, \"data_refueling_gb\": 0.0, \"roaming_enabled\": false, \"contract_end_date\": \"2026-12-31\", \"last_plan_change_date\": \"2025-01-10\", \"last_sim_replacement_date\": null, \"suspension_start_date\": \"2025-02-25\"}}"},
		{sideAgent, "resume_line", `{"customer_id":"C1001","line_id":"L1001"}`, "{\"message\": \"Line resumed successfully\", \"line\": {\"line_id\": \"L1001\", \"phone_number\": \"555-123-2001\", \"status\": \"Active\", \"plan_id\": \"P1001\", \"device_id\": \"D1001\", \"data_used_gb\": 3.2, \"data_refueling_gb\": 0.0, \"roaming_enabled\": false, \"contract_end_date\": \"2026-12-31\", \"last_plan_change_date\": \"2025-01-10\", \"last_sim_replacement_date\": null, \"suspension_start_date\": null}}"},
		{sideAgent, "resume_line", `{"customer_id":"C1001","line_id":"L1001"}`, "Error: Line must be suspended to resume"},
		{sideAgent, "enable_roaming", `{"customer_id":"C1001","line_id":"L1002"}`, "Roaming was already enabled"},
		{sideAgent, "disable_roaming", `{"customer_id":"C1001","line_id":"L1002"}`, "Roaming disabled successfully"},
		{sideAgent, "disable_roaming", `{"customer_id":"C1001","line_id":"L1002"}`, "Roaming was already disabled"},
		{sideAgent, "enable_roaming", `{"customer_id":"C9","line_id":"L1002"}`, "Error: Customer with ID C9 not found"},
		{sideAgent, "refuel_data", `{"customer_id":"C1001","line_id":"L1001","gb_amount":0}`, "Error: Refuel amount must be positive"},
		{sideAgent, "refuel_data", `{"customer_id":"C1001","line_id":"L1001","gb_amount":-1.5}`, "Error: Refuel amount must be positive"},
		{sideAgent, "refuel_data", `{"customer_id":"C1001","line_id":"L1001","gb_amount":3}`, "{\"message\": \"Successfully added 3 GB of data for line L1001 for $15.00\", \"new_data_refueling_gb\": \"3.0\", \"charge\": \"15.0\"}"},
		{sideAgent, "refuel_data", `{"customer_id":"C1001","line_id":"L1001","gb_amount":0.25}`, "{\"message\": \"Successfully added 0.25 GB of data for line L1001 for $1.25\", \"new_data_refueling_gb\": \"3.25\", \"charge\": \"1.25\"}"},
		{sideAgent, "refuel_data", `{"customer_id":"C1001","line_id":"L1001","gb_amount":1000000000000000000000000000000}`, "{\"message\": \"Successfully added 1000000000000000000000000000000 GB of data for line L1001 for $4999999999999999817948147482624.00\", \"new_data_refueling_gb\": \"1e+30\", \"charge\": \"5e+30\"}"},
		{sideAgent, "send_payment_request", `{"customer_id":"C1001","bill_id":"B1004"}`, "Error: Bill B1004 not found for customer C1001"},
		{sideAgent, "send_payment_request", `{"customer_id":"C1001","bill_id":"B9"}`, "Error: Bill B9 not found for customer C1001"},
		{sideUser, "check_payment_request", `{}`, "No payment request has been made."},
		{sideAgent, "send_payment_request", `{"customer_id":"C1001","bill_id":"B1234321"}`, "Payment request sent to the customer for bill B1234321"},
		{sideAgent, "send_payment_request", `{"customer_id":"C1001","bill_id":"B1002"}`, "Error: A bill is already awaiting payment for this customer"},
		{sideUser, "check_payment_request", `{}`, "You have a payment request for bill B1234321 of 65.0 USD."},
		{sideUser, "make_payment", `{}`, "Payment of 65.0 USD has been made for bill B1234321."},
		{sideUser, "make_payment", `{}`, "You do not have a payment request."},
		{sideAgent, "get_details_by_id", `{"id":"B1234321"}`, "{\"bill_id\": \"B1234321\", \"customer_id\": \"C1001\", \"period_start\": \"2025-01-01\", \"period_end\": \"2025-01-31\", \"issue_date\": \"2025-01-01\", \"total_due\": 65.0, \"due_date\": \"2025-01-15\", \"line_items\": [{\"description\": \"Charge for line L1002\", \"amount\": 65.0, \"date\": \"2025-02-25\", \"item_type\": \"Charge\"}], \"status\": \"Paid\"}"},
		{sideAgent, "resume_line", `{"customer_id":"C1001","line_id":"L1002"}`, "{\"message\": \"Line resumed successfully\", \"line\": {\"line_id\": \"L1002\", \"phone_number\": \"555-123-2002\", \"status\": \"Active\", \"plan_id\": \"P1002\", \"device_id\": \"D1002\", \"data_used_gb\": 8.7, \"data_refueling_gb\": 0.0, \"roaming_enabled\": false, \"contract_end_date\": \"2026-12-31\", \"last_plan_change_date\": \"2024-12-15\", \"last_sim_replacement_date\": \"2025-01-20\", \"suspension_start_date\": null}}"},
		{sideUser, "check_status_bar", `{}`, "Status Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"},
		{sideUser, "check_network_status", `{}`, "Airplane Mode: OFF\nSIM Card Status: active\nCellular Connection: no_service\nCellular Signal: none\nCellular Network Type: none\nMobile Data Enabled: Yes\nData Roaming Enabled: No\nWi-Fi Radio: OFF\nWi-Fi Connected: No"},
		{sideUser, "reboot_device", `{}`, "Restarting network services...\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_network_status", `{}`, "Airplane Mode: OFF\nSIM Card Status: active\nCellular Connection: connected\nCellular Signal: excellent\nCellular Network Type: 5G\nMobile Data Enabled: Yes\nData Roaming Enabled: No\nWi-Fi Radio: OFF\nWi-Fi Connected: No"},
		{sideUser, "run_speed_test", `{}`, "Speed Test Result: 275.00 Mbps (Excellent). Connection is very fast."},
		{sideUser, "check_network_mode_preference", `{}`, "Network Mode Preference: 4g_5g_preferred"},
		{sideUser, "set_network_mode_preference", `{"mode":"3g_only"}`, "Preferred Network Mode set to: 3g_only\nStatus Bar: 📶² Fair | 3G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "run_speed_test", `{}`, "Speed Test Result: 1.50 Mbps (Poor). Connection is slow. Web browsing may be sluggish, streaming difficult."},
		{sideUser, "set_network_mode_preference", `{"mode":"5g"}`, "Failed to set network mode: '5g' is not a valid option. Please use one of: 4g_5g_preferred, 4g_only, 3g_only, 2g_only\nStatus Bar: 📶² Fair | 3G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "set_network_mode_preference", `{"mode":"2g_only"}`, "Preferred Network Mode set to: 2g_only\nStatus Bar: 📶¹ Poor | 2G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "can_send_mms", `{}`, "Your messaging app cannot send MMS messages."},
		{sideUser, "run_speed_test", `{}`, "Speed Test Result: 0.05 Mbps (Very Poor). Connection is very slow. Basic web browsing might be difficult."},
		{sideUser, "set_network_mode_preference", `{"mode":"4g_only"}`, "Preferred Network Mode set to: 4g_only\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "toggle_data_saver_mode", `{}`, "Data Saver Mode is now ON.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔽 Data Saver | 🔋 80%"},
		{sideUser, "check_data_restriction_status", `{}`, "Data Saver mode is ON (limits data usage)."},
		{sideUser, "run_speed_test", `{}`, "Speed Test Result: 8.80 Mbps (Fair). Connection is okay for web browsing and some standard definition streaming."},
		{sideUser, "toggle_data_saver_mode", `{}`, "Data Saver Mode is now OFF.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "connect_vpn", `{}`, "VPN connected successfully.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔒 VPN Connected | 🔋 80%"},
		{sideUser, "connect_vpn", `{}`, "VPN already connected."},
		{sideUser, "check_vpn_status", `{}`, "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', 'server_performance': <PerformanceLevel.EXCELLENT: 'excellent'>}"},
		{sideUser, "disconnect_vpn", `{}`, "VPN disconnected successfully.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "disconnect_vpn", `{}`, "No active VPN connection to disconnect.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_vpn_status", `{}`, "VPN is turned OFF."},
		{sideUser, "toggle_wifi", `{}`, "Wi-Fi is now ON.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_wifi_status", `{}`, "Wi-Fi is ON but not connected to any network."},
		{sideUser, "toggle_airplane_mode", `{}`, "Airplane Mode is now ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"},
		{sideUser, "toggle_wifi", `{}`, "Cannot change Wi-Fi settings while Airplane Mode is ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"},
		{sideUser, "check_sim_status", `{}`, "Your SIM card is active and working."},
		{sideUser, "check_network_status", `{}`, "Airplane Mode: ON\nSIM Card Status: active\nCellular Connection: no_service\nCellular Signal: none\nCellular Network Type: none\nMobile Data Enabled: Yes\nData Roaming Enabled: No\nWi-Fi Radio: ON\nWi-Fi Connected: No"},
		{sideUser, "toggle_airplane_mode", `{}`, "Airplane Mode is now OFF.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "toggle_wifi", `{}`, "Wi-Fi is now OFF.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_wifi_status", `{}`, "Wi-Fi is turned OFF."},
		{sideUser, "toggle_wifi_calling", `{}`, "Wi-Fi Calling is now ON.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_wifi_calling_status", `{}`, "Wi-Fi Calling is currently turned ON."},
		{sideUser, "toggle_wifi_calling", `{}`, "Wi-Fi Calling is now OFF.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "toggle_data", `{}`, "Mobile Data is now OFF.\nStatus Bar: 📶³ Good | 4G | 📵 Data Disabled | 🔋 80%"},
		{sideUser, "run_speed_test", `{}`, "Speed test failed: No Connection."},
		{sideUser, "toggle_data", `{}`, "Mobile Data is now ON.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "toggle_roaming", `{}`, "Data Roaming is now ON.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "toggle_roaming", `{}`, "Data Roaming is now OFF.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "reseat_sim_card", `{}`, "SIM card re-seated successfully.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_apn_settings", `{}`, "Current APN Name: internet\nMMSC URL (for picture messages): http://mms.carrier.com/mms/wapenc\n(These are technical settings, usually best left unchanged.)"},
		{sideUser, "set_apn_settings", `{"apn_settings":{"apn_name":"broken","mmsc_url":null,"mms_port":8080}}`, "APN settings set to: broken\nStatus Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"},
		{sideUser, "check_apn_settings", `{}`, "Current APN Name: broken\nMMSC URL (for picture messages): Not Set\n(These are technical settings, usually best left unchanged.)"},
		{sideUser, "check_status_bar", `{}`, "Status Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"},
		{sideUser, "reset_apn_settings", `{}`, "APN settings will reset at reboot.\nStatus Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"},
		{sideUser, "reboot_device", `{}`, "Resetting APN settings...\nRestarting network services...\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_apn_settings", `{}`, "Current APN Name: internet\nMMSC URL (for picture messages): http://mms.carrier.com/mms/wapenc\n(These are technical settings, usually best left unchanged.)"},
		{sideUser, "check_installed_apps", `{}`, "The following apps are installed on the phone: messaging, browser"},
		{sideUser, "check_app_status", `{"app_name":"browser"}`, "Status for App: browser\n - Permissions Granted:\n   - storage\n   - network"},
		{sideUser, "check_app_status", `{"app_name":"camera"}`, "App 'camera' not found on this phone."},
		{sideUser, "check_app_permissions", `{"app_name":"messaging"}`, "App 'messaging' has permission for: sms, storage, phone."},
		{sideUser, "check_app_permissions", `{"app_name":"maps"}`, "App 'maps' not found on this phone."},
		{sideUser, "grant_app_permission", `{"app_name":"browser","permission":"SMS"}`, "Success. Permission 'sms' granted to app 'browser'.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "grant_app_permission", `{"app_name":"browser","permission":"camera"}`, "Error. Permission 'camera' not tracked for app 'browser', available permissions: ['sms', 'storage', 'phone', 'network']\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "grant_app_permission", `{"app_name":"maps","permission":"sms"}`, "Error. App 'maps' not found. Cannot grant permission.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔋 80%"},
		{sideUser, "check_app_status", `{"app_name":"browser"}`, "Status for App: browser\n - Permissions Granted:\n   - sms\n   - storage\n   - network"},
		{sideUser, "can_send_mms", `{}`, "Your messaging app can send MMS messages."},
		{sideAgent, "transfer_to_human_agents", `{"summary":"x"}`, "Transfer successful"},
	}
	for i, c := range calls {
		if got := content(t, w, c.side, c.name, c.args); got != c.want {
			t.Errorf("call %d %s(%s):\n got %q\nwant %q", i, c.name, c.args, got, c.want)
		}
	}
	want := [2]string{"f355a16da91ade1471a0b2a380136505c43a84ef1a2e252980432522ddddd8ef", "19c1a0e64bb5016dedc5e7ab6d35409cdbb5b2ab81a73a11a8682252759b1118"}
	if got := [2]string{w.agentHash(), w.userHash()}; got != want {
		t.Errorf("hashes\n got %v\nwant %v", got, want)
	}
}
