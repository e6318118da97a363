package telecom

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
)

// UserDB is tau2's TelecomUserDB, the user's side: the phone's settings
// and state (Device) and the user's surroundings (where they are, what
// their line allows, the agent's payment request), which tau2's
// environment keeps in step with the agent's database (sync).
type UserDB struct {
	Device       Phone
	Surroundings Surroundings
}

// Phone is tau2's MockPhoneAttributes.
type Phone struct {
	SimCardStatus              string // active, missing, locked_pin, locked_puk
	SimCardMissing             bool
	AirplaneMode               bool
	NetworkSignalStrength      string // none, poor, fair, good, excellent
	NetworkTechnologyConnected string // none, 2G, 3G, 4G, 5G
	NetworkConnectionStatus    string // connected, searching, no_service, emergency_only
	BatteryLevel               int
	DataEnabled                bool
	RoamingEnabled             bool
	NetworkModePreference      string // 4g_5g_preferred, 4g_only, 3g_only, 2g_only
	APN                        *APNSettings
	WifiEnabled                bool
	WifiConnected              bool
	WifiSSID                   *string
	WifiSignalStrength         string
	WifiCallingEnabled         bool
	WifiCallingMMSOverWifi     bool
	DataSaverMode              bool
	VPNEnabledSetting          bool
	VPNConnected               bool
	// VPNDetails may be the episode's default details themselves (as in
	// tau2, where connect_vpn assigns its shared default object and
	// break_vpn then changes it).
	VPNDetails *VPNDetails
	Apps       []*App // in order (a dict in tau2)
}

// APNSettings is an Access Point Name configuration.
type APNSettings struct {
	APNName       string // internet, broken
	ResetAtReboot bool
	MMSAPN        *string
	MMSCURL       *string
	MMSProxy      *string
	MMSPort       *int
}

// VPNDetails describes a VPN connection.
type VPNDetails struct {
	ServerAddress     *string
	Protocol          *string
	ServerPerformance string // unknown, poor, fair, good, excellent
}

// App is an installed app and its permissions: Key is its key in tau2's
// dict of apps (which tools look it up by), Name its app_name.
type App struct {
	Key, Name                     string
	SMS, Storage, PhoneCalls, Net bool
}

// Surroundings is tau2's UserSurroundings.
type Surroundings struct {
	Name                    *string
	PhoneNumber             *string
	IsAbroad                bool
	RoamingAllowed          bool
	SignalStrength          []TechSignal // in order (a dict in tau2)
	MobileDataUsageExceeded bool
	LineActive              bool
	PaymentRequest          *PaymentRequest
}

// TechSignal is the signal of one network technology where the user is.
type TechSignal struct{ Tech, Strength string }

// PaymentRequest is a bill the agent asked the user to pay.
type PaymentRequest struct {
	BillID    string
	AmountDue float64
	Paid      bool
}

// The phone's enums.
var (
	simStatuses   = []string{simActive, simMissing, simLockedPIN, simLockedPUK}
	technologies  = []string{techNone, tech2G, tech3G, tech4G, tech5G}
	strengths     = []string{sigNone, sigPoor, sigFair, sigGood, sigExcellent}
	netStatuses   = []string{netConnected, netSearching, netNoService, "emergency_only"}
	modes         = []string{mode45G, mode4G, mode3G, mode2G}
	apnNames      = []string{apnInternet, apnBroken}
	performances  = []string{"unknown", sigPoor, sigFair, sigGood, sigExcellent}
	permissionSet = []string{"sms", "storage", "phone", "network"}
)

const (
	simActive, simMissing, simLockedPIN, simLockedPUK = "active", "missing", "locked_pin", "locked_puk"
	techNone, tech2G, tech3G, tech4G, tech5G          = "none", "2G", "3G", "4G", "5G"
	sigNone, sigPoor, sigFair, sigGood, sigExcellent  = "none", "poor", "fair", "good", "excellent"
	netConnected, netSearching, netNoService          = "connected", "searching", "no_service"
	mode45G, mode4G, mode3G, mode2G                   = "4g_5g_preferred", "4g_only", "3g_only", "2g_only"
	apnInternet, apnBroken                            = "internet", "broken"
	defaultMMSCURL                                    = "http://mms.carrier.com/mms/wapenc"
)

func strPtr(s string) *string { return &s }

// defaultAPN is APNSettings().
func defaultAPN() *APNSettings {
	return &APNSettings{APNName: apnInternet, MMSAPN: strPtr("mms"), MMSCURL: strPtr(defaultMMSCURL)}
}

// defaultVPN is the details connect_vpn gives a connection.
func defaultVPN() *VPNDetails {
	return &VPNDetails{ServerAddress: strPtr("192.168.1.1"), Protocol: strPtr("OpenVPN"), ServerPerformance: sigExcellent}
}

// defaultApps are MockPhoneAttributes' default app_statuses.
func defaultApps() []*App {
	return []*App{{Key: "messaging", Name: "messaging", SMS: true, Storage: true, PhoneCalls: true},
		{Key: "browser", Name: "browser", Storage: true, Net: true}}
}

func defaultSignals() []TechSignal {
	return []TechSignal{{tech2G, sigPoor}, {tech3G, sigFair}, {tech4G, sigGood}, {tech5G, sigExcellent}}
}

// ParseUserDB reads a user_db.toml as TelecomUserDB's model does.
func ParseUserDB(toml []byte) (*UserDB, error) {
	j, err := tomlToJSON(toml)
	if err != nil {
		return nil, err
	}
	u := &UserDB{}
	r := newReader("TelecomUserDB", j)
	u.Device = defaultPhone()
	r.optObject("device", func(r *reader) { readPhone(r, &u.Device) })
	u.Surroundings = Surroundings{SignalStrength: defaultSignals(), LineActive: true}
	r.optObject("surroundings", func(r *reader) { readSurroundings(r, &u.Surroundings) })
	if err := r.done(); err != nil {
		return nil, err
	}
	return u, nil
}

// defaultPhone is MockPhoneAttributes().
func defaultPhone() Phone {
	return Phone{SimCardStatus: simActive, NetworkSignalStrength: sigGood, NetworkTechnologyConnected: tech5G,
		NetworkConnectionStatus: netConnected, BatteryLevel: 80, DataEnabled: true, NetworkModePreference: mode45G,
		APN: defaultAPN(), WifiSignalStrength: sigNone, Apps: defaultApps()}
}

func readPhone(r *reader, p *Phone) {
	t, f := true, false
	r.enum("sim_card_status", &p.SimCardStatus, simStatuses, simActive)
	r.boolean("sim_card_missing", &p.SimCardMissing, &f)
	r.boolean("airplane_mode", &p.AirplaneMode, &f)
	r.enum("network_signal_strength", &p.NetworkSignalStrength, strengths, sigGood)
	r.enum("network_technology_connected", &p.NetworkTechnologyConnected, technologies, tech5G)
	r.enum("network_connection_status", &p.NetworkConnectionStatus, netStatuses, netConnected)
	r.integer("battery_level", &p.BatteryLevel, 80)
	r.boolean("data_enabled", &p.DataEnabled, &t)
	r.boolean("roaming_enabled", &p.RoamingEnabled, &f)
	r.enum("network_mode_preference", &p.NetworkModePreference, modes, mode45G)
	p.APN = defaultAPN()
	if r.has("active_apn_settings") {
		r.object("active_apn_settings", func(r *reader) { p.APN = readAPN(r) })
	}
	r.boolean("wifi_enabled", &p.WifiEnabled, &f)
	r.boolean("wifi_connected", &p.WifiConnected, &f)
	r.optStr("wifi_ssid", &p.WifiSSID)
	r.enum("wifi_signal_strength", &p.WifiSignalStrength, strengths, sigNone)
	r.boolean("wifi_calling_enabled", &p.WifiCallingEnabled, &f)
	r.boolean("wifi_calling_mms_over_wifi", &p.WifiCallingMMSOverWifi, &f)
	r.boolean("data_saver_mode", &p.DataSaverMode, &f)
	r.boolean("vpn_enabled_setting", &p.VPNEnabledSetting, &f)
	r.boolean("vpn_connected", &p.VPNConnected, &f)
	r.optObject("vpn_details", func(r *reader) {
		v := &VPNDetails{}
		r.optStr("server_address", &v.ServerAddress)
		r.optStr("protocol", &v.Protocol)
		r.enum("server_performance", &v.ServerPerformance, performances, "unknown")
		p.VPNDetails = v
	})
	p.Apps = nil
	r.dictOf("app_statuses", func() { p.Apps = defaultApps() }, func(key string, r *reader) {
		a := &App{Key: key}
		r.str("app_name", &a.Name)
		if r.has("permissions") {
			r.object("permissions", func(r *reader) {
				r.boolean("sms", &a.SMS, &f)
				r.boolean("storage", &a.Storage, &f)
				r.boolean("phone", &a.PhoneCalls, &f)
				r.boolean("network", &a.Net, &f)
			})
		}
		p.Apps = append(p.Apps, a)
	})
}

func readAPN(r *reader) *APNSettings {
	a := defaultAPN()
	f := false
	r.enum("apn_name", &a.APNName, apnNames, apnInternet)
	r.boolean("reset_at_reboot", &a.ResetAtReboot, &f)
	if r.has("mms_apn") {
		a.MMSAPN = nil
		r.optStr("mms_apn", &a.MMSAPN)
	}
	if r.has("mmsc_url") {
		a.MMSCURL = nil
		r.optStr("mmsc_url", &a.MMSCURL)
	}
	r.optStr("mms_proxy", &a.MMSProxy)
	r.optInt("mms_port", &a.MMSPort)
	return a
}

func readSurroundings(r *reader, s *Surroundings) {
	f, t := false, true
	r.optStr("name", &s.Name)
	r.optStr("phone_number", &s.PhoneNumber)
	r.boolean("is_abroad", &s.IsAbroad, &f)
	r.boolean("roaming_allowed", &s.RoamingAllowed, &f)
	if r.has("signal_strength") {
		s.SignalStrength = nil
		r.used["signal_strength"] = true
		if err := tau2.EachMember(r.members["signal_strength"], func(k string, raw json.RawMessage) error {
			var v string
			if json.Unmarshal(raw, &v) != nil || !slices.Contains(technologies, k) || !slices.Contains(strengths, v) {
				return fmt.Errorf("%q: %s; want a technology of %q and a strength of %q", k, raw, technologies, strengths)
			}
			s.SignalStrength = append(s.SignalStrength, TechSignal{k, v})
			return nil
		}); err != nil {
			r.failf("signal_strength: %v", err)
		}
	}
	r.boolean("mobile_data_usage_exceeded", &s.MobileDataUsageExceeded, &f)
	r.boolean("line_active", &s.LineActive, &t)
	r.optObject("payment_request", func(r *reader) {
		p := &PaymentRequest{}
		r.str("bill_id", &p.BillID)
		r.float("amount_due", &p.AmountDue)
		r.boolean("paid", &p.Paid, &f)
		s.PaymentRequest = p
	})
}

// clone is a deep copy, keeping the phone's VPN details the episode's
// default ones when they are (def, the original's default, and the copy's).
func (u *UserDB) clone(def, newDef *VPNDetails) *UserDB {
	c := *u
	p := &c.Device
	a := *u.Device.APN
	p.APN = &a
	if v := u.Device.VPNDetails; v != nil {
		if v == def {
			p.VPNDetails = newDef
		} else {
			w := *v
			p.VPNDetails = &w
		}
	}
	p.Apps = make([]*App, len(u.Device.Apps))
	for i, x := range u.Device.Apps {
		y := *x
		p.Apps[i] = &y
	}
	c.Surroundings.SignalStrength = append([]TechSignal(nil), u.Surroundings.SignalStrength...)
	if pr := u.Surroundings.PaymentRequest; pr != nil {
		q := *pr
		c.Surroundings.PaymentRequest = &q
	}
	return &c
}

// --- the user's database as model_dump writes it ---

func optInt(n *int) any {
	if n == nil {
		return nil
	}
	return *n
}

func (a *APNSettings) py() *obj {
	return dict("apn_name", a.APNName, "reset_at_reboot", a.ResetAtReboot, "mms_apn", optStr(a.MMSAPN),
		"mmsc_url", optStr(a.MMSCURL), "mms_proxy", optStr(a.MMSProxy), "mms_port", optInt(a.MMSPort))
}

func (v *VPNDetails) py() *obj {
	return dict("server_address", optStr(v.ServerAddress), "protocol", optStr(v.Protocol), "server_performance", v.ServerPerformance)
}

func (a *App) permissions() *obj {
	return dict("sms", a.SMS, "storage", a.Storage, "phone", a.PhoneCalls, "network", a.Net)
}

func (p *Phone) py() *obj {
	var vpn any
	if p.VPNDetails != nil {
		vpn = p.VPNDetails.py()
	}
	apps := &obj{}
	for _, a := range p.Apps {
		apps.add(a.Key, dict("app_name", a.Name, "permissions", a.permissions()))
	}
	return dict("sim_card_status", p.SimCardStatus, "sim_card_missing", p.SimCardMissing, "airplane_mode", p.AirplaneMode,
		"network_signal_strength", p.NetworkSignalStrength, "network_technology_connected", p.NetworkTechnologyConnected,
		"network_connection_status", p.NetworkConnectionStatus, "battery_level", p.BatteryLevel,
		"data_enabled", p.DataEnabled, "roaming_enabled", p.RoamingEnabled, "network_mode_preference", p.NetworkModePreference,
		"active_apn_settings", p.APN.py(), "wifi_enabled", p.WifiEnabled, "wifi_connected", p.WifiConnected,
		"wifi_ssid", optStr(p.WifiSSID), "wifi_signal_strength", p.WifiSignalStrength,
		"wifi_calling_enabled", p.WifiCallingEnabled, "wifi_calling_mms_over_wifi", p.WifiCallingMMSOverWifi,
		"data_saver_mode", p.DataSaverMode, "vpn_enabled_setting", p.VPNEnabledSetting, "vpn_connected", p.VPNConnected,
		"vpn_details", vpn, "app_statuses", apps)
}

func (s *Surroundings) py() *obj {
	signals := &obj{}
	for _, t := range s.SignalStrength {
		signals.add(t.Tech, t.Strength)
	}
	var pr any
	if p := s.PaymentRequest; p != nil {
		pr = dict("bill_id", p.BillID, "amount_due", p.AmountDue, "paid", p.Paid)
	}
	return dict("name", optStr(s.Name), "phone_number", optStr(s.PhoneNumber), "is_abroad", s.IsAbroad,
		"roaming_allowed", s.RoamingAllowed, "signal_strength", signals,
		"mobile_data_usage_exceeded", s.MobileDataUsageExceeded, "line_active", s.LineActive, "payment_request", pr)
}

func (u *UserDB) py() *obj { return dict("device", u.Device.py(), "surroundings", u.Surroundings.py()) }
