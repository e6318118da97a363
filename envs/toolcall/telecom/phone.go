package telecom

import (
	"fmt"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The user's side: tau2's TelecomUserTools on the simulated phone, its
// tools (what the user can do and check on the phone), the helpers tasks
// break the phone with, and its assertions, with tau2's results.

func (w *world) phone() *Phone         { return &w.user.Device }
func (w *world) around() *Surroundings { return &w.user.Surroundings }
func noArgs(a *args) error             { return a.check() }

// withBar is a change's message and the status bar after it.
func withBar(w *world, status string) any { return status + "\nStatus Bar: " + w.statusBar() }

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// simStatus is the SIM's status: missing when it is out.
func (w *world) simStatus() string {
	if w.phone().SimCardMissing {
		return simMissing
	}
	return w.phone().SimCardStatus
}

func (w *world) app(key string) (*App, bool) {
	for _, a := range w.phone().Apps {
		if a.Key == key {
			return a, true
		}
	}
	return nil, false
}

// The status bar's signal icons, and the speed test's ranges (Mbps) by
// network technology and factors by signal strength.
var (
	signalIcons   = map[string]string{sigNone: "📵 No Signal", sigPoor: "📶¹ Poor", sigFair: "📶² Fair", sigGood: "📶³ Good", sigExcellent: "📶⁴ Excellent"}
	speedRanges   = map[string][2]float64{tech2G: {0.1, 0.4}, tech3G: {1.0, 5.0}, tech4G: {10.0, 100.0}, tech5G: {50.0, 500.0}}
	signalFactors = map[string]float64{sigPoor: 0.2, sigFair: 0.5, sigGood: 0.8, sigExcellent: 1.0}
	speedAdvice   = map[string]string{
		"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
		"Poor":      "Connection is slow. Web browsing may be sluggish, streaming difficult.",
		"Fair":      "Connection is okay for web browsing and some standard definition streaming.",
		"Good":      "Connection is good for most activities, including HD streaming.",
		"Excellent": "Connection is very fast.",
	}
	simMessages = map[string]string{
		simActive:    "Your SIM card is active and working.",
		simMissing:   "No SIM card detected in the phone.",
		simLockedPIN: "The SIM card is locked with a PIN code.",
		simLockedPUK: "The SIM card is locked with a PUK code.",
	}
)

// statusBar is what the phone's status bar shows.
func (w *world) statusBar() string {
	p := w.phone()
	var ind []string
	if p.AirplaneMode {
		ind = append(ind, "✈️ Airplane Mode")
	} else {
		ind = append(ind, signalIcons[p.NetworkSignalStrength])
		if p.NetworkTechnologyConnected != techNone {
			ind = append(ind, p.NetworkTechnologyConnected)
		}
		if p.DataEnabled && p.NetworkTechnologyConnected != techNone {
			ind = append(ind, "📱 Data Enabled")
			if p.DataSaverMode {
				ind = append(ind, "🔽 Data Saver")
			}
		} else {
			ind = append(ind, "📵 Data Disabled")
		}
	}
	if p.WifiEnabled && p.WifiConnected {
		if p.WifiSSID != nil && *p.WifiSSID != "" {
			ind = append(ind, "📡 Connected to "+*p.WifiSSID)
		} else {
			ind = append(ind, "📡 Enabled")
		}
	}
	if p.VPNConnected {
		ind = append(ind, "🔒 VPN Connected")
	}
	ind = append(ind, fmt.Sprintf("🔋 %d%%", p.BatteryLevel))
	return strings.Join(ind, " | ")
}

// mobileDataWorking: no airplane mode, a signal, service, roaming where
// the user is abroad, data on and not used up.
func (w *world) mobileDataWorking() bool {
	p, s := w.phone(), w.around()
	switch {
	case p.AirplaneMode, p.NetworkSignalStrength == sigNone, p.NetworkConnectionStatus == netNoService:
		return false
	case s.IsAbroad && (!p.RoamingEnabled || !s.RoamingAllowed):
		return false
	}
	return p.DataEnabled && !s.MobileDataUsageExceeded
}

// speedTest is the simulated download speed (Mbps, rounded to two
// decimals) and its description; ok is false with no connection.
func (w *world) speedTest() (speed float64, desc string, ok bool) {
	if !w.mobileDataWorking() {
		return 0, "No Connection", false
	}
	p := w.phone()
	factor := 1.0
	if p.VPNConnected && p.VPNDetails != nil && p.VPNDetails.ServerPerformance == sigPoor {
		factor = 0.1
	}
	if p.DataSaverMode {
		factor *= 0.2
	}
	r := speedRanges[p.NetworkTechnologyConnected]
	speed = pyval.Round2((r[0] + r[1]) / 2.0 * signalFactors[p.NetworkSignalStrength] * factor)
	switch {
	case speed < 1:
		desc = "Very Poor"
	case speed < 5:
		desc = "Poor"
	case speed < 25:
		desc = "Fair"
	case speed < 100:
		desc = "Good"
	default:
		desc = "Excellent"
	}
	return speed, desc, true
}

// canSendMMS: mobile data works, on 3G or better, no MMS over Wi-Fi
// calling (which the carrier does not support), an MMSC URL, and a
// messaging app allowed SMS and storage.
func (w *world) canSendMMS() bool {
	p := w.phone()
	if !w.mobileDataWorking() || p.NetworkTechnologyConnected == tech2G ||
		p.WifiCallingEnabled && p.WifiCallingMMSOverWifi || p.APN.MMSCURL == nil {
		return false
	}
	app, ok := w.app("messaging")
	return ok && app.Storage && app.SMS
}

// networkSearch is simulate_network_search: the connection the SIM, the
// preferred mode and the signals around allow, none in airplane mode,
// with a broken APN or an inactive line.
func (w *world) networkSearch() {
	p, s := w.phone(), w.around()
	signalOf := func(tech string) string {
		for _, t := range s.SignalStrength {
			if t.Tech == tech {
				return t.Strength
			}
		}
		return sigNone
	}
	none := func() {
		p.NetworkConnectionStatus, p.NetworkTechnologyConnected, p.NetworkSignalStrength = netNoService, techNone, sigNone
	}
	if w.simStatus() == simActive {
		p.NetworkConnectionStatus = netConnected
		tech := tech4G
		switch p.NetworkModePreference {
		case mode45G:
			if signalOf(tech5G) != sigNone {
				tech = tech5G
			}
		case mode3G:
			tech = tech3G
		case mode2G:
			tech = tech2G
		}
		p.NetworkTechnologyConnected, p.NetworkSignalStrength = tech, signalOf(tech)
	} else {
		none()
	}
	if p.AirplaneMode || p.APN.APNName == apnBroken || !s.LineActive {
		none()
	}
}

func (w *world) toggleAirplane() bool {
	p := w.phone()
	wasOn := p.AirplaneMode
	p.AirplaneMode = !wasOn
	if wasOn {
		p.NetworkConnectionStatus = netSearching
		if p.WifiEnabled {
			p.WifiConnected, p.WifiSSID, p.WifiSignalStrength = false, nil, sigNone
		}
	} else {
		p.WifiConnected, p.WifiSSID, p.WifiSignalStrength = false, nil, sigNone
		w.disconnectVPN()
	}
	w.networkSearch()
	return p.AirplaneMode
}

func (w *world) toggleData() bool {
	p := w.phone()
	p.DataEnabled = !p.DataEnabled
	w.networkSearch()
	return p.DataEnabled
}

func (w *world) toggleRoaming() bool {
	p := w.phone()
	p.RoamingEnabled = !p.RoamingEnabled
	w.networkSearch()
	return p.RoamingEnabled
}

func (w *world) toggleDataSaver() bool {
	p := w.phone()
	p.DataSaverMode = !p.DataSaverMode
	return p.DataSaverMode
}

// connectVPN connects with the default details; false when connected.
func (w *world) connectVPN() bool {
	p := w.phone()
	if p.VPNConnected {
		return false
	}
	p.VPNConnected, p.VPNDetails = true, w.vpn
	return true
}

func (w *world) disconnectVPN() bool {
	p := w.phone()
	if !p.VPNConnected {
		return false
	}
	p.VPNConnected, p.VPNDetails = false, nil
	return true
}

// vpnRepr is Python's repr of the VPN details' model_dump(): a dict whose
// performance is an enum member.
func vpnRepr(v *VPNDetails) string {
	s := func(p *string) string {
		if p == nil {
			return "None"
		}
		return pyval.Quote(*p)
	}
	return fmt.Sprintf("{'server_address': %s, 'protocol': %s, 'server_performance': <PerformanceLevel.%s: %s>}",
		s(v.ServerAddress), s(v.Protocol), strings.ToUpper(v.ServerPerformance), pyval.Quote(v.ServerPerformance))
}

// permissionNames lists an app's granted permissions in the model's order.
func permissionNames(a *App) []string {
	var out []string
	for i, on := range []bool{a.SMS, a.Storage, a.PhoneCalls, a.Net} {
		if on {
			out = append(out, permissionSet[i])
		}
	}
	return out
}

func (a *App) setPermission(name string, on bool) {
	switch name {
	case "sms":
		a.SMS = on
	case "storage":
		a.Storage = on
	case "phone":
		a.PhoneCalls = on
	case "network":
		a.Net = on
	}
}
