package telecom

import (
	"encoding/json"
	"sort"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
)

// The tools as the agent (and the simulated user) sees them: tau2's names
// and parameters, descriptions in other words. The schemas are strict
// (no other parameters; every one required but get_bills_for_customer's
// limit and set_apn_settings' fields, which have defaults in tau2), so a
// call that reaches a tool has arguments of the types tau2's code expects.

// prop is one parameter: its JSON Schema.
type prop struct {
	name     string
	schema   map[string]any
	optional bool
}

func str(name, desc string) prop {
	return prop{name: name, schema: map[string]any{"type": "string", "description": desc}}
}

func params(ps ...prop) json.RawMessage {
	props := map[string]any{}
	req := []string{}
	for _, p := range ps {
		props[p.name] = p.schema
		if !p.optional {
			req = append(req, p.name)
		}
	}
	sort.Strings(req)
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false})
	if err != nil {
		panic(err)
	}
	return b
}

func tool(name, desc string, ps ...prop) toolcall.Tool {
	return toolcall.Tool{Name: name, Description: desc, Parameters: params(ps...)}
}

var (
	pCustomer = str("customer_id", "The customer's id, such as 'C1001'.")
	pLine     = str("line_id", "The line's id, such as 'L1001'; the customer must hold the line.")
)

// agentTools are tau2's TelecomTools, in its order.
var agentTools = []toolcall.Tool{
	tool(ToolCustomerByPhone, "Find a customer by a phone number: their primary contact number or the number of one of their lines. Returns the customer's record.",
		str("phone_number", "The phone number, such as '555-123-2002'.")),
	tool(ToolCustomerByID, "Get a customer's record by their customer id.", pCustomer),
	tool(ToolCustomerByName, "Find customers by full name (case does not matter) and date of birth. Returns a list of the matching customers' records, which may be empty.",
		str("full_name", "The customer's full name, such as 'John Smith'."),
		str("dob", "The date of birth, YYYY-MM-DD.")),
	tool(ToolDetailsByID, "Get the record of a line, device, bill, customer or plan by its id, whose first letter says which (L, D, B, C or P).",
		str("id", "The id, such as 'L1002', 'D1001', 'B1002', 'C1001' or 'P1002'.")),
	tool(ToolSuspendLine, "Suspend an active line of a customer (for at most 6 months; a holding fee applies). Returns a message and the line after the change.",
		pCustomer, pLine, str("reason", "Why the line is suspended.")),
	tool(ToolResumeLine, "Resume a suspended line of a customer (or one pending activation). Returns a message and the line after the change.",
		pCustomer, pLine),
	tool(ToolBills, "List a customer's bills, the most recently issued first.",
		pCustomer, prop{name: "limit", optional: true, schema: map[string]any{"type": "integer",
			"description": "The most bills to return (default 12)."}}),
	tool(ToolPaymentRequest, "Send the customer a request to pay one of their bills: the bill awaits payment, and the customer can pay it on their phone. Fails when another bill of theirs already awaits payment. It does not check whether the bill is already paid: check that first.",
		pCustomer, str("bill_id", "The bill's id, such as 'B1002'; the customer must hold the bill.")),
	tool(ToolDataUsage, "Get a line's mobile data use in the current billing cycle: data used, the plan's limit, data refueled, and the cycle's end date.",
		pCustomer, pLine),
	tool(ToolEnableRoaming, "Enable international roaming on a customer's line.", pCustomer, pLine),
	tool(ToolDisableRoaming, "Disable international roaming on a customer's line.", pCustomer, pLine),
	tool(ToolTransfer, "Transfer the user to a human agent, with a summary of the issue. Transfer only when the user asks for a human agent, or when the policy and your tools cannot solve the issue. Ends the conversation.",
		str("summary", "A summary of the user's issue.")),
	tool(ToolRefuelData, "Add data to a customer's line for the current cycle, charged to the customer's next bill at the plan's refueling price per GB. Returns a message, the line's refueled data and the charge.",
		pCustomer, pLine, prop{name: "gb_amount", schema: map[string]any{"type": "number",
			"description": "How much data to add, in GB; more than 0."}}),
}

// userTools are tau2's TelecomUserTools: what the user can do and check
// on their phone, in its order.
var userTools = []toolcall.Tool{
	tool(ToolStatusBar, "Show the icons of the phone's status bar: signal strength and network type, mobile data (on, off, data saver), Wi-Fi, VPN, airplane mode and battery."),
	tool(ToolNetworkStatus, "Show the phone's connection status: airplane mode, the SIM, the cellular connection, signal and network type, mobile data, data roaming and Wi-Fi."),
	tool(ToolModePreference, "Show the phone's preferred network mode."),
	tool(ToolSetModePreference, "Set the type of cellular network the phone prefers. Faster networks (4G, 5G) give faster data and may use more battery. The phone then searches for a network.",
		str("mode", "One of '4g_5g_preferred', '4g_only', '3g_only', '2g_only'.")),
	tool(ToolSpeedTest, "Measure the phone's mobile data download speed, and say what it is good for."),
	tool(ToolAirplane, "Turn airplane mode on or off. On, it cuts every radio: cellular, Wi-Fi and Bluetooth."),
	tool(ToolSIMStatus, "Show whether the SIM card works: active, missing, or locked with a PIN or PUK code."),
	tool(ToolReseatSIM, "Take the SIM card out and put it back in, which can fix a SIM the phone does not recognise."),
	tool(ToolToggleData, "Turn mobile data on or off: whether the phone uses the cellular network for internet when Wi-Fi is not there."),
	tool(ToolToggleRoaming, "Turn data roaming on or off: whether the phone uses data networks outside the carrier's coverage, such as abroad."),
	tool(ToolDataRestriction, "Show whether a data-limiting feature is on: Data Saver mode."),
	tool(ToolToggleDataSaver, "Turn Data Saver mode on or off. On, it cuts data use, which can slow data down."),
	tool(ToolAPNSettings, "Show the APN settings the phone connects to the carrier's data network with: the APN name and the MMSC URL for picture messages."),
	tool(ToolSetAPN, "Set the phone's APN settings. The phone then searches for a network.",
		prop{name: "apn_settings", schema: map[string]any{"type": "object", "additionalProperties": false,
			"description": "The settings; a field left out takes its default.",
			"properties": map[string]any{
				"apn_name":        map[string]any{"type": "string", "enum": []string{apnInternet, apnBroken}, "description": "The APN's name (default 'internet')."},
				"reset_at_reboot": map[string]any{"type": "boolean", "description": "Whether the settings reset to the defaults at the next reboot (default false)."},
				"mms_apn":         map[string]any{"type": []string{"string", "null"}, "description": "The APN for MMS (default 'mms')."},
				"mmsc_url":        map[string]any{"type": []string{"string", "null"}, "description": "The MMS center's URL (default 'http://mms.carrier.com/mms/wapenc')."},
				"mms_proxy":       map[string]any{"type": []string{"string", "null"}, "description": "The MMS proxy's address (default none)."},
				"mms_port":        map[string]any{"type": []string{"integer", "null"}, "description": "The MMS proxy's port (default none)."},
			}}}),
	tool(ToolResetAPN, "Reset the APN settings to the defaults, at the next reboot."),
	tool(ToolWifiStatus, "Show whether Wi-Fi is on, the network it is connected to and its signal strength."),
	tool(ToolToggleWifi, "Turn the Wi-Fi radio on or off."),
	tool(ToolWifiCalling, "Show whether Wi-Fi Calling is on: calls over Wi-Fi instead of the cellular network."),
	tool(ToolToggleWifiCalling, "Turn Wi-Fi Calling on or off; it can help where the cellular signal is weak."),
	tool(ToolVPNStatus, "Show whether a VPN is on and connected, with the connection's details."),
	tool(ToolConnectVPN, "Connect the VPN."),
	tool(ToolDisconnectVPN, "Disconnect the VPN; the VPN can slow the connection down or block content."),
	tool(ToolInstalledApps, "List the apps installed on the phone."),
	tool(ToolAppStatus, "Show an app's details: the permissions it has.", str("app_name", "The app's name, such as 'messaging'.")),
	tool(ToolAppPermissions, "Show the permissions an app has (SMS, storage, phone, network).", str("app_name", "The app's name, such as 'messaging'.")),
	tool(ToolGrantPermission, "Give an app a permission, which some of its functions need.",
		str("app_name", "The app's name, such as 'messaging'."),
		str("permission", "The permission, in lower case: 'sms', 'storage', 'phone' or 'network'.")),
	tool(ToolCanSendMMS, "Check whether the messaging app can send MMS (picture) messages."),
	tool(ToolReboot, "Restart the phone, which clears many passing glitches: services and connections start afresh."),
	tool(ToolCheckPayment, "Check whether the agent sent a payment request for a bill."),
	tool(ToolMakePayment, "Pay the bill of the agent's payment request."),
}

// ToolDone ends a solo episode: tau2's solo agent's stop tool.
const ToolDone = "done"

var doneTool = tool(ToolDone, "Call this when the ticket is solved (and in no other call): it ends the episode.")

// soloTools are what a solo agent gets: the agent's tools, the phone's,
// and done.
var soloTools = append(append(append([]toolcall.Tool{}, agentTools...), userTools...), doneTool)

func toolNames(side string) []string {
	ts := agentTools
	if side == sideUser {
		ts = userTools
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// AgentTools and UserTools return the two sides' tools.
func AgentTools() []toolcall.Tool { return append([]toolcall.Tool(nil), agentTools...) }
func UserTools() []toolcall.Tool  { return append([]toolcall.Tool(nil), userTools...) }
