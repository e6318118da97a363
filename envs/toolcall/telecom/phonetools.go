package telecom

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The phone's functions by name (tau2's TelecomUserTools): its tools,
// the helpers tasks break the phone with, and its assertions.

// User tool names.
const (
	ToolStatusBar         = "check_status_bar"
	ToolNetworkStatus     = "check_network_status"
	ToolModePreference    = "check_network_mode_preference"
	ToolSetModePreference = "set_network_mode_preference"
	ToolSpeedTest         = "run_speed_test"
	ToolAirplane          = "toggle_airplane_mode"
	ToolSIMStatus         = "check_sim_status"
	ToolReseatSIM         = "reseat_sim_card"
	ToolToggleData        = "toggle_data"
	ToolToggleRoaming     = "toggle_roaming"
	ToolDataRestriction   = "check_data_restriction_status"
	ToolToggleDataSaver   = "toggle_data_saver_mode"
	ToolAPNSettings       = "check_apn_settings"
	ToolSetAPN            = "set_apn_settings"
	ToolResetAPN          = "reset_apn_settings"
	ToolWifiStatus        = "check_wifi_status"
	ToolToggleWifi        = "toggle_wifi"
	ToolWifiCalling       = "check_wifi_calling_status"
	ToolToggleWifiCalling = "toggle_wifi_calling"
	ToolVPNStatus         = "check_vpn_status"
	ToolConnectVPN        = "connect_vpn"
	ToolDisconnectVPN     = "disconnect_vpn"
	ToolInstalledApps     = "check_installed_apps"
	ToolAppStatus         = "check_app_status"
	ToolAppPermissions    = "check_app_permissions"
	ToolGrantPermission   = "grant_app_permission"
	ToolCanSendMMS        = "can_send_mms"
	ToolReboot            = "reboot_device"
	ToolCheckPayment      = "check_payment_request"
	ToolMakePayment       = "make_payment"
)

// simple is a function of no arguments.
func simple(tool bool, fn func(w *world) any) function {
	return function{tool: tool, run: func(w *world, a *args) (any, error) {
		if err := noArgs(a); err != nil {
			return nil, err
		}
		return fn(w), nil
	}}
}

var userFuncs = map[string]function{
	ToolStatusBar: simple(true, func(w *world) any { return "Status Bar: " + w.statusBar() }),
	ToolNetworkStatus: simple(true, func(w *world) any {
		p := w.phone()
		lines := []string{
			"Airplane Mode: " + onOff(p.AirplaneMode),
			"SIM Card Status: " + w.simStatus(),
			"Cellular Connection: " + p.NetworkConnectionStatus,
			"Cellular Signal: " + p.NetworkSignalStrength,
			"Cellular Network Type: " + p.NetworkTechnologyConnected,
			"Mobile Data Enabled: " + yesNo(p.DataEnabled),
			"Data Roaming Enabled: " + yesNo(p.RoamingEnabled),
			"Wi-Fi Radio: " + onOff(p.WifiEnabled),
			"Wi-Fi Connected: " + yesNo(p.WifiConnected),
		}
		if p.WifiConnected {
			ssid := "None"
			if p.WifiSSID != nil {
				ssid = *p.WifiSSID
			}
			lines = append(lines, "Connected Wi-Fi Network: "+ssid)
		}
		return strings.Join(lines, "\n")
	}),
	ToolModePreference: simple(true, func(w *world) any { return "Network Mode Preference: " + w.phone().NetworkModePreference }),
	ToolSetModePreference: {tool: true, run: func(w *world, a *args) (any, error) {
		mode := a.str("mode")
		if err := a.check(); err != nil {
			return nil, err
		}
		if !slices.Contains(modes, mode) {
			return fmt.Sprintf("Failed to set network mode: '%s' is not a valid option. Please use one of: %s\nStatus Bar: %s",
				mode, strings.Join(modes, ", "), w.statusBar()), nil
		}
		w.phone().NetworkModePreference = mode
		w.networkSearch()
		return withBar(w, "Preferred Network Mode set to: "+mode), nil
	}},
	ToolSpeedTest: simple(true, func(w *world) any {
		speed, desc, ok := w.speedTest()
		if !ok {
			return "Speed test failed: " + desc + "."
		}
		return fmt.Sprintf("Speed Test Result: %s Mbps (%s). %s", fixed2(speed), desc, speedAdvice[desc])
	}),
	ToolAirplane:  simple(true, func(w *world) any { return withBar(w, "Airplane Mode is now "+onOff(w.toggleAirplane())+".") }),
	ToolSIMStatus: simple(true, func(w *world) any { return simMessages[w.simStatus()] }),
	ToolReseatSIM: simple(true, func(w *world) any {
		w.phone().SimCardMissing = false
		w.networkSearch()
		return withBar(w, "SIM card re-seated successfully.")
	}),
	ToolToggleData:    simple(true, func(w *world) any { return withBar(w, "Mobile Data is now "+onOff(w.toggleData())+".") }),
	ToolToggleRoaming: simple(true, func(w *world) any { return withBar(w, "Data Roaming is now "+onOff(w.toggleRoaming())+".") }),
	ToolDataRestriction: simple(true, func(w *world) any {
		return "Data Saver mode is " + map[bool]string{true: "ON (limits data usage).", false: "OFF."}[w.phone().DataSaverMode]
	}),
	ToolToggleDataSaver: simple(true, func(w *world) any { return withBar(w, "Data Saver Mode is now "+onOff(w.toggleDataSaver())+".") }),
	ToolAPNSettings: simple(true, func(w *world) any {
		apn := w.phone().APN
		url := "Not Set"
		if apn.MMSCURL != nil && *apn.MMSCURL != "" {
			url = *apn.MMSCURL
		}
		return "Current APN Name: " + apn.APNName + "\nMMSC URL (for picture messages): " + url +
			"\n(These are technical settings, usually best left unchanged.)"
	}),
	ToolSetAPN: {tool: true, run: func(w *world, a *args) (any, error) {
		raw, _ := a.get("apn_settings", true)
		if err := a.check(); err != nil {
			return nil, err
		}
		r := newReader("APNSettings", raw)
		apn := readAPN(r)
		if err := r.done(); err != nil {
			return nil, fmt.Errorf("%s: %w", ToolSetAPN, err) // the schema lets only valid settings through
		}
		w.phone().APN = apn
		w.networkSearch()
		return withBar(w, "APN settings set to: "+apn.APNName), nil
	}},
	ToolResetAPN: simple(true, func(w *world) any {
		w.phone().APN.ResetAtReboot = true
		w.networkSearch()
		return withBar(w, "APN settings will reset at reboot.")
	}),
	ToolWifiStatus: simple(true, func(w *world) any {
		p := w.phone()
		switch {
		case !p.WifiEnabled:
			return "Wi-Fi is turned OFF."
		case p.WifiConnected:
			ssid := "None"
			if p.WifiSSID != nil {
				ssid = *p.WifiSSID
			}
			return fmt.Sprintf("Wi-Fi is ON and connected to '%s'. Signal strength: %s.", ssid, p.WifiSignalStrength)
		}
		return "Wi-Fi is ON but not connected to any network."
	}),
	ToolToggleWifi: simple(true, func(w *world) any {
		p := w.phone()
		if p.AirplaneMode {
			return "Cannot change Wi-Fi settings while Airplane Mode is ON.\nStatus Bar: " + w.statusBar()
		}
		p.WifiEnabled = !p.WifiEnabled
		if !p.WifiEnabled {
			p.WifiConnected, p.WifiSSID, p.WifiSignalStrength = false, nil, sigNone
		}
		return withBar(w, "Wi-Fi is now "+onOff(p.WifiEnabled)+".")
	}),
	ToolWifiCalling: simple(true, func(w *world) any {
		return "Wi-Fi Calling is currently turned " + onOff(w.phone().WifiCallingEnabled) + "."
	}),
	ToolToggleWifiCalling: simple(true, func(w *world) any {
		p := w.phone()
		p.WifiCallingEnabled = !p.WifiCallingEnabled
		return withBar(w, "Wi-Fi Calling is now "+onOff(p.WifiCallingEnabled)+".")
	}),
	ToolVPNStatus: simple(true, func(w *world) any {
		p := w.phone()
		switch {
		case p.VPNConnected && p.VPNDetails != nil:
			return "VPN is ON and connected. Details: " + vpnRepr(p.VPNDetails)
		case p.VPNConnected:
			return "VPN is ON and connected (no specific details available)."
		case p.VPNEnabledSetting:
			return "VPN is turned ON in settings, but currently not connected."
		}
		return "VPN is turned OFF."
	}),
	ToolConnectVPN: simple(true, func(w *world) any {
		if !w.connectVPN() {
			return "VPN already connected."
		}
		return withBar(w, "VPN connected successfully.")
	}),
	ToolDisconnectVPN: simple(true, func(w *world) any {
		if !w.disconnectVPN() {
			return withBar(w, "No active VPN connection to disconnect.")
		}
		return withBar(w, "VPN disconnected successfully.")
	}),
	ToolInstalledApps: simple(true, func(w *world) any {
		var keys []string
		for _, a := range w.phone().Apps {
			keys = append(keys, a.Key)
		}
		return "The following apps are installed on the phone: " + strings.Join(keys, ", ")
	}),
	ToolAppStatus: {tool: true, run: func(w *world, a *args) (any, error) {
		name := a.str("app_name")
		if err := a.check(); err != nil {
			return nil, err
		}
		app, ok := w.app(name)
		if !ok {
			return fmt.Sprintf("App '%s' not found on this phone.", name), nil
		}
		lines := []string{"Status for App: " + name}
		if perms := permissionNames(app); len(perms) == 0 {
			lines = append(lines, " - Permissions: None granted.")
		} else {
			lines = append(lines, " - Permissions Granted:")
			for _, p := range perms {
				lines = append(lines, "   - "+p)
			}
		}
		return strings.Join(lines, "\n"), nil
	}},
	ToolAppPermissions: {tool: true, run: func(w *world, a *args) (any, error) {
		name := a.str("app_name")
		if err := a.check(); err != nil {
			return nil, err
		}
		app, ok := w.app(name)
		if !ok {
			return fmt.Sprintf("App '%s' not found on this phone.", name), nil
		}
		switch perms := permissionNames(app); {
		case len(perms) == 0:
			return fmt.Sprintf("App '%s' currently has no permissions granted.", name), nil
		default:
			return fmt.Sprintf("App '%s' has permission for: %s.", name, strings.Join(perms, ", ")), nil
		}
	}},
	ToolGrantPermission: {tool: true, run: func(w *world, a *args) (any, error) {
		name, perm := a.str("app_name"), a.str("permission")
		if err := a.check(); err != nil {
			return nil, err
		}
		perm = pyval.Lower(perm)
		app, ok := w.app(name)
		var msg string
		switch {
		case !ok:
			msg = fmt.Sprintf("Error. App '%s' not found. Cannot grant permission.", name)
		case !slices.Contains(permissionSet, perm):
			quoted := make([]string, len(permissionSet))
			for i, p := range permissionSet {
				quoted[i] = pyval.Quote(p)
			}
			msg = fmt.Sprintf("Error. Permission '%s' not tracked for app '%s', available permissions: [%s]", perm, name, strings.Join(quoted, ", "))
		default:
			app.setPermission(perm, true)
			msg = fmt.Sprintf("Success. Permission '%s' granted to app '%s'.", perm, name)
		}
		return msg + "\nStatus Bar: " + w.statusBar(), nil
	}},
	ToolCanSendMMS: simple(true, func(w *world) any {
		if w.canSendMMS() {
			return "Your messaging app can send MMS messages."
		}
		return "Your messaging app cannot send MMS messages."
	}),
	ToolReboot: simple(true, func(w *world) any {
		p := w.phone()
		var lines []string
		if p.APN.ResetAtReboot {
			lines = append(lines, "Resetting APN settings...")
			p.APN = defaultAPN()
		}
		lines = append(lines, "Restarting network services...")
		p.NetworkConnectionStatus = netSearching
		w.networkSearch()
		return withBar(w, strings.Join(lines, "\n"))
	}),
	ToolCheckPayment: simple(true, func(w *world) any {
		pr := w.around().PaymentRequest
		if pr == nil {
			return "No payment request has been made."
		}
		return fmt.Sprintf("You have a payment request for bill %s of %s USD.", pr.BillID, pyval.FloatRepr(pr.AmountDue))
	}),
	ToolMakePayment: simple(true, func(w *world) any {
		pr := w.around().PaymentRequest
		if pr == nil {
			return "You do not have a payment request."
		}
		pr.Paid = true
		return fmt.Sprintf("Payment of %s USD has been made for bill %s.", pyval.FloatRepr(pr.AmountDue), pr.BillID)
	}),

	// Helpers of tasks' initial states.
	"set_user_info": {run: func(w *world, a *args) (any, error) {
		name, phone := a.str("name"), a.str("phone_number")
		if err := a.check(); err != nil {
			return nil, err
		}
		w.around().Name, w.around().PhoneNumber = &name, &phone
		return nil, nil
	}},
	"set_user_location": {run: func(w *world, a *args) (any, error) {
		abroad := a.boolean("abroad")
		if err := a.check(); err != nil {
			return nil, err
		}
		w.around().IsAbroad = abroad
		return nil, nil
	}},
	"simulate_network_search": simple(false, func(w *world) any { w.networkSearch(); return nil }),
	"turn_airplane_mode_on":   turn((*world).toggleAirplane, true, "Airplane Mode is now ON."),
	"turn_airplane_mode_off":  turn((*world).toggleAirplane, false, "Airplane Mode is now OFF."),
	"unseat_sim_card": simple(false, func(w *world) any {
		w.phone().SimCardMissing = true
		w.networkSearch()
		return "SIM card un-seated successfully."
	}),
	"lock_sim_card": {run: func(w *world, a *args) (any, error) {
		mode := a.str("mode")
		if err := a.check(); err != nil {
			return nil, err
		}
		switch mode {
		case "pin":
			w.phone().SimCardStatus = simLockedPIN
		case "puk":
			w.phone().SimCardStatus = simLockedPUK
		}
		w.networkSearch()
		return "SIM card locked successfully in " + mode + " mode.", nil
	}},
	"turn_data_on":             simple(false, func(w *world) any { w.phone().DataEnabled = true; return "Data connection restored." }),
	"turn_data_off":            turn((*world).toggleData, false, "Data connection broken."),
	"turn_roaming_on":          turn((*world).toggleRoaming, true, "Data Roaming is now ON."),
	"turn_roaming_off":         turn((*world).toggleRoaming, false, "Data Roaming is now OFF."),
	"turn_data_saver_mode_on":  turn((*world).toggleDataSaver, true, "Data Saver Mode is now ON."),
	"turn_data_saver_mode_off": turn((*world).toggleDataSaver, false, "Data Saver Mode is now OFF."),
	"break_apn_settings": simple(false, func(w *world) any {
		w.phone().APN.APNName = apnBroken
		w.networkSearch()
		return "APN settings broken. Please call reset_apn_settings() to fix."
	}),
	"break_apn_mms_setting": simple(false, func(w *world) any {
		w.phone().APN.MMSCURL = nil
		return "APN MMS setting broken. Please call reset_apn_settings() to fix."
	}),
	"set_wifi_calling": {run: func(w *world, a *args) (any, error) {
		on, mms := a.boolean("enabled"), a.optBool("mms_over_wifi")
		if err := a.check(); err != nil {
			return nil, err
		}
		p := w.phone()
		p.WifiCallingEnabled = on
		msg := "Wi-Fi Calling is now " + onOff(on) + "."
		if mms != nil {
			p.WifiCallingMMSOverWifi = *mms
			msg += "\nMMS over Wi-Fi is now " + onOff(*mms) + "."
		}
		return msg, nil
	}},
	"break_vpn": {run: func(w *world, a *args) (any, error) {
		if err := noArgs(a); err != nil {
			return nil, err
		}
		w.connectVPN()
		if w.phone().VPNDetails == nil { // connected, but no details to break
			return nil, fail("'NoneType' object has no attribute 'server_performance'")
		}
		w.phone().VPNDetails.ServerPerformance = sigPoor
		return "VPN connection broken.", nil
	}},
	"remove_app_permission": {run: func(w *world, a *args) (any, error) {
		name, perm := a.str("app_name"), a.str("permission")
		if err := a.check(); err != nil {
			return nil, err
		}
		perm = pyval.Lower(perm)
		app, ok := w.app(name)
		switch {
		case !ok:
			return fmt.Sprintf("App '%s' not found. Cannot remove permission.", name), nil
		case !slices.Contains(permissionSet, perm):
			return fmt.Sprintf("Permission '%s' not tracked for app '%s'.", perm, name), nil
		}
		app.setPermission(perm, false)
		return fmt.Sprintf("Permission '%s' removed from app '%s'.", perm, name), nil
	}},

	// Assertions.
	"assert_airplane_mode_status":          boolAssert("expected_status", func(w *world) bool { return w.phone().AirplaneMode }),
	"assert_mobile_data_status":            boolAssert("expected_status", func(w *world) bool { return w.mobileDataWorking() }),
	"assert_mobile_roaming_status":         boolAssert("expected_status", func(w *world) bool { return w.phone().RoamingEnabled }),
	"assert_mobile_data_saver_mode_status": boolAssert("expected_status", func(w *world) bool { return w.phone().DataSaverMode }),
	"assert_can_send_mms":                  boolAssert("expected_status", func(w *world) bool { return w.canSendMMS() }),
	"assert_mobile_data_usage_exceeded":    boolAssert("expected_status", func(w *world) bool { return w.around().MobileDataUsageExceeded }),
	"assert_service_status": {run: func(w *world, a *args) (any, error) {
		want := a.str("expected_status")
		if err := a.check(); err != nil {
			return nil, err
		}
		if !slices.Contains(netStatuses, want) {
			return nil, fail("'%s' is not a valid NetworkStatus", want)
		}
		return w.phone().NetworkConnectionStatus == want, nil
	}},
	"assert_internet_speed": {run: func(w *world, a *args) (any, error) {
		want, desc := a.num("expected_speed"), a.optStr("expected_desc")
		if err := a.check(); err != nil {
			return nil, err
		}
		speed, got, _ := w.speedTest()
		if desc == nil {
			return speed >= want.f, nil
		}
		return speed >= want.f && pyval.Lower(got) == pyval.Lower(*desc), nil
	}},
	"assert_internet_not_excellent": simple(false, func(w *world) any {
		_, desc, _ := w.speedTest()
		return pyval.Lower(desc) != "excellent"
	}),
}

// turn is a helper that turns a setting on or off with its toggle, as
// tau2 does: toggled, and toggled back when that was the wrong way.
func turn(toggle func(*world) bool, on bool, msg string) function {
	return simple(false, func(w *world) any {
		if toggle(w) != on {
			toggle(w)
		}
		return msg
	})
}

// boolAssert is an assertion that a state of the phone is expected.
func boolAssert(arg string, state func(w *world) bool) function {
	return function{run: func(w *world, a *args) (any, error) {
		want := a.boolean(arg)
		if err := a.check(); err != nil {
			return nil, err
		}
		return state(w) == want, nil
	}}
}
