package multiturn

import (
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// vehicleAPI is BFCL's VehicleControlAPI (vehicle_control.py): a car's
// engine, doors, climate control, lights, brakes, cruise control and tire
// pressures, with a few lookups (distances between zip codes, unit
// conversions) and readings drawn from random.Random(random_seed).
//
// Only the base category is ported: Load is _load_scenario with
// long_context=False, so the long-context extensions (the metadata,
// weather, intermediary cities and parking-brake instructions BFCL adds
// to some results) are left out, and long_context is always False.
//
// The attributes keep whatever Python value the scenario or a call gave
// them (a fuel level loaded as an int stays an int), and the arithmetic
// on them is Python's, with its TypeErrors.
type vehicleAPI struct {
	random *Random

	fuelLevel              any
	batteryVoltage         any
	engineState            any
	remainingUnlockedDoors int64
	doorStatus             *pyval.Dict
	acTemperature          any
	fanSpeed               any
	acMode                 any
	humidityLevel          any
	headLightStatus        any
	parkingBrakeStatus     any
	parkingBrakeForce      any // private in Python (_parkingBrakeForce)
	slopeAngle             any // private in Python (_slopeAngle)
	brakePedalStatus       any
	brakePedalForce        any // private in Python (_brakePedalForce)
	distanceToNextVehicle  any
	cruiseStatus           any
	destination            any
	tirePressures          [4]any // front left, front right, rear left, rear right
}

func init() { register("VehicleControlAPI", func() Class { return &vehicleAPI{} }) }

// vehTireKeys name the tire pressures, in tirePressures' order.
var vehTireKeys = [4]string{"frontLeftTirePressure", "frontRightTirePressure", "rearLeftTirePressure", "rearRightTirePressure"}

// vehDefaults are DEFAULT_STATE's values, by the scenario's keys.
func vehDefaults() *pyval.Dict {
	doors := pyval.NewDict()
	for _, d := range []string{"driver", "passenger", "rear_left", "rear_right"} {
		doors.Set(d, "unlocked")
	}
	return dictOf(
		"random_seed", int64(141053),
		"fuelLevel", 0.0,
		"batteryVoltage", 12.6,
		"engineState", "stopped",
		"doorStatus", doors,
		"acTemperature", 25.0,
		"fanSpeed", int64(50),
		"acMode", "auto",
		"humidityLevel", 50.0,
		"headLightStatus", "off",
		"parkingBrakeStatus", "released",
		"parkingBrakeForce", 0.0,
		"slopeAngle", 0.0,
		"brakePedalStatus", "released",
		"brakePedalForce", 0.0,
		"distanceToNextVehicle", 50.0,
		"cruiseStatus", "inactive",
		"destination", "None",
		"frontLeftTirePressure", 32.0,
		"frontRightTirePressure", 32.0,
		"rearLeftTirePressure", 30.0,
		"rearRightTirePressure", 30.0,
	)
}

func (v *vehicleAPI) Load(cfg *pyval.Dict) error {
	def := vehDefaults()
	get := func(k string) any {
		if x, ok := cfg.Get(k); ok {
			return x
		}
		return def.Value(k)
	}
	var err error
	if v.random, err = seedRandom(get("random_seed")); err != nil {
		return err
	}
	v.fuelLevel = get("fuelLevel")
	v.batteryVoltage = get("batteryVoltage")
	v.engineState = get("engineState")
	doors, ok := get("doorStatus").(*pyval.Dict)
	if !ok {
		return noAttr(get("doorStatus"), "keys")
	}
	v.doorStatus = doors
	// The scenario's remainingUnlockedDoors is overridden by the doors.
	v.remainingUnlockedDoors = 4
	for _, s := range doors.Vals {
		if pyval.Eq(s, "locked") {
			v.remainingUnlockedDoors--
		}
	}
	v.acTemperature = get("acTemperature")
	v.fanSpeed = get("fanSpeed")
	v.acMode = get("acMode")
	v.humidityLevel = get("humidityLevel")
	v.headLightStatus = get("headLightStatus")
	v.parkingBrakeStatus = get("parkingBrakeStatus")
	v.parkingBrakeForce = get("parkingBrakeForce")
	v.slopeAngle = get("slopeAngle")
	v.brakePedalStatus = get("brakePedalStatus")
	v.brakePedalForce = get("brakePedalForce")
	v.distanceToNextVehicle = get("distanceToNextVehicle")
	v.cruiseStatus = get("cruiseStatus")
	v.destination = get("destination")
	for i, k := range vehTireKeys {
		v.tirePressures[i] = get(k)
	}
	return nil
}

// State is vars(instance) without the private attributes, in Python's
// order of assignment.
func (v *vehicleAPI) State() *pyval.Dict {
	d := dictOf(
		"fuelLevel", v.fuelLevel,
		"batteryVoltage", v.batteryVoltage,
		"engine_state", v.engineState,
		"remainingUnlockedDoors", v.remainingUnlockedDoors,
		"doorStatus", v.doorStatus,
		"acTemperature", v.acTemperature,
		"fanSpeed", v.fanSpeed,
		"acMode", v.acMode,
		"humidityLevel", v.humidityLevel,
		"headLightStatus", v.headLightStatus,
		"parkingBrakeStatus", v.parkingBrakeStatus,
		"brakePedalStatus", v.brakePedalStatus,
		"distanceToNextVehicle", v.distanceToNextVehicle,
		"cruiseStatus", v.cruiseStatus,
		"destination", v.destination,
	)
	for i, k := range vehTireKeys {
		d.Set(k, v.tirePressures[i])
	}
	d.Set("long_context", false)
	return d
}

func (v *vehicleAPI) Methods() []Method {
	return []Method{
		{Name: "startEngine", Params: []Param{Req("ignitionMode")}, Call: v.startEngine},
		{Name: "fillFuelTank", Params: []Param{Req("fuelAmount")}, Call: v.fillFuelTank},
		{Name: "lockDoors", Params: []Param{Req("unlock"), Req("door")}, Call: v.lockDoors},
		{Name: "adjustClimateControl", Params: []Param{Req("temperature"), Opt("unit", "celsius"), Opt("fanSpeed", int64(50)), Opt("mode", "auto")}, Call: v.adjustClimateControl},
		{Name: "get_outside_temperature_from_google", Call: func([]any) (any, error) {
			return dictOf("outsideTemperature", v.random.Uniform(-10.0, 40.0)), nil
		}},
		{Name: "get_outside_temperature_from_weather_com", Call: func([]any) (any, error) {
			return dictOf("error", int64(404)), nil
		}},
		{Name: "setHeadlights", Params: []Param{Req("mode")}, Call: v.setHeadlights},
		{Name: "displayCarStatus", Params: []Param{Req("option")}, Call: v.displayCarStatus},
		{Name: "activateParkingBrake", Params: []Param{Req("mode")}, Call: v.activateParkingBrake},
		{Name: "pressBrakePedal", Params: []Param{Req("pedalPosition")}, Call: v.pressBrakePedal},
		{Name: "releaseBrakePedal", Call: func([]any) (any, error) {
			v.brakePedalStatus, v.brakePedalForce = "released", 0.0
			return dictOf("brakePedalStatus", "released", "brakePedalForce", 0.0), nil
		}},
		{Name: "setCruiseControl", Params: []Param{Req("speed"), Req("activate"), Req("distanceToNextVehicle")}, Call: v.setCruiseControl},
		{Name: "get_current_speed", Call: func([]any) (any, error) {
			return dictOf("currentSpeed", v.random.Uniform(0.0, 120.0)), nil
		}},
		{Name: "display_log", Params: []Param{Req("messages")}, Call: func(a []any) (any, error) {
			return dictOf("log", a[0]), nil
		}},
		{Name: "estimate_drive_feasibility_by_mileage", Params: []Param{Req("distance")}, Call: func(a []any) (any, error) {
			reach, err := arith("*", v.fuelLevel, 20.0)
			if err != nil {
				return nil, err
			}
			short, err := Compare("<", reach, a[0])
			if err != nil {
				return nil, err
			}
			return dictOf("canDrive", !short), nil
		}},
		{Name: "liter_to_gallon", Params: []Param{Req("liter")}, Call: func(a []any) (any, error) {
			return vehConvert("gallon", a[0], 0.264172)
		}},
		{Name: "gallon_to_liter", Params: []Param{Req("gallon")}, Call: func(a []any) (any, error) {
			return vehConvert("liter", a[0], 3.78541)
		}},
		{Name: "estimate_distance", Params: []Param{Req("cityA"), Req("cityB")}, Call: func(a []any) (any, error) {
			return vehDistance(a[0], a[1]), nil
		}},
		{Name: "get_zipcode_based_on_city", Params: []Param{Req("city")}, Call: func(a []any) (any, error) {
			zip := "00000"
			if city, ok := a[0].(string); ok {
				if z, ok := vehZipcodes[city]; ok {
					zip = z
				}
			}
			return dictOf("zipcode", zip), nil
		}},
		{Name: "set_navigation", Params: []Param{Req("destination")}, Call: func(a []any) (any, error) {
			v.destination = a[0] // set even when the message below fails
			s, err := arith("+", "Navigating to ", a[0])
			if err != nil {
				return nil, err
			}
			return dictOf("status", s), nil
		}},
		{Name: "check_tire_pressure", Call: v.checkTirePressure},
		{Name: "find_nearest_tire_shop", Call: func([]any) (any, error) {
			return dictOf("shopLocation", "456 Oakwood Avenue, Rivermist, 83214"), nil
		}},
	}
}

func (v *vehicleAPI) startEngine(a []any) (any, error) {
	mode := a[0]
	if pyval.Eq(mode, "STOP") {
		v.engineState = "stopped"
	}
	if v.remainingUnlockedDoors > 0 {
		var unlocked []string
		for i, d := range v.doorStatus.Keys {
			if pyval.Eq(v.doorStatus.Vals[i], "unlocked") {
				unlocked = append(unlocked, d)
			}
		}
		return errDict("All doors must be locked before starting the engine. Here are the unlocked doors: " + strings.Join(unlocked, ", ")), nil
	}
	if !pyval.Eq(v.brakePedalStatus, "pressed") {
		return errDict("Brake pedal needs to be pressed when starting the engine."), nil
	}
	if !pyval.Eq(v.brakePedalForce, 1000.0) {
		return errDict("Must press the brake fully before starting the engine."), nil
	}
	empty, err := Compare("<", v.fuelLevel, 0.0)
	if err != nil {
		return nil, err
	}
	if empty {
		return errDict("Fuel tank is empty."), nil
	}
	if !pyval.Eq(mode, "START") {
		return errDict("Invalid ignition mode."), nil
	}
	v.engineState = "running"
	return dictOf("engineState", v.engineState, "fuelLevel", v.fuelLevel, "batteryVoltage", v.batteryVoltage), nil
}

func (v *vehicleAPI) fillFuelTank(a []any) (any, error) {
	amount := a[0]
	neg, err := Compare("<", amount, int64(0))
	if err != nil {
		return nil, err
	}
	if neg {
		return errDict("Fuel amount cannot be negative."), nil
	}
	level, err := arith("+", v.fuelLevel, amount)
	if err != nil {
		return nil, err
	}
	over, err := Compare(">", level, int64(50))
	if err != nil {
		return nil, err
	}
	if over {
		return errDict("Cannot fill gas above the tank capacity."), nil
	}
	// Python adds again for this test and for the new level: the same sum.
	under, err := Compare("<", level, 0.0)
	if err != nil {
		return nil, err
	}
	if under {
		return errDict("Fuel tank is empty. Min fuel level is 0 gallons."), nil
	}
	v.fuelLevel = level
	return dictOf("fuelLevel", v.fuelLevel), nil
}

func (v *vehicleAPI) lockDoors(a []any) (any, error) {
	to := "locked"
	if Truthy(a[0]) {
		to = "unlocked"
	}
	doors, err := iterate(a[1])
	if err != nil {
		return nil, err
	}
	for _, d := range doors {
		status, err := dictGet(v.doorStatus, d)
		if err != nil {
			return nil, err
		}
		if pyval.Eq(status, to) {
			continue
		}
		v.doorStatus.Set(d.(string), to)
		if to == "unlocked" {
			v.remainingUnlockedDoors++
		} else {
			v.remainingUnlockedDoors--
		}
	}
	return dictOf("lockStatus", to, "remainingUnlockedDoors", v.remainingUnlockedDoors), nil
}

func (v *vehicleAPI) adjustClimateControl(a []any) (any, error) {
	temp, unit, fan, mode := a[0], a[1], a[2], a[3]
	ok, err := Compare("<=", int64(0), fan)
	if err != nil {
		return nil, err
	}
	if ok {
		if ok, err = Compare("<=", fan, int64(100)); err != nil {
			return nil, err
		}
	}
	if !ok {
		return errDict("Fan speed must be between 0 and 100."), nil
	}
	v.acTemperature = temp
	if pyval.Eq(unit, "fahrenheit") {
		// (temperature - 32) * 5 / 9; a failure leaves acTemperature set.
		c, err := arith("-", temp, int64(32))
		if err == nil {
			c, err = arith("*", c, int64(5))
		}
		if err == nil {
			c, err = arith("/", c, int64(9))
		}
		if err != nil {
			return nil, err
		}
		v.acTemperature = c
	}
	v.fanSpeed, v.acMode = fan, mode
	return dictOf("currentACTemperature", temp, "climateMode", mode, "humidityLevel", v.humidityLevel), nil
}

func (v *vehicleAPI) setHeadlights(a []any) (any, error) {
	switch {
	case pyval.Eq(a[0], "on"):
		v.headLightStatus = "on"
	case pyval.Eq(a[0], "off"), pyval.Eq(a[0], "auto"):
		v.headLightStatus = "off"
	default:
		return errDict("Invalid headlight mode."), nil
	}
	return dictOf("headlightStatus", v.headLightStatus), nil
}

func (v *vehicleAPI) displayCarStatus(a []any) (any, error) {
	option, _ := a[0].(string)
	switch option {
	case "fuel":
		return dictOf("fuelLevel", v.fuelLevel), nil
	case "battery":
		return dictOf("batteryVoltage", v.batteryVoltage), nil
	case "doors":
		return dictOf("doorStatus", v.doorStatus), nil
	case "climate":
		return dictOf("currentACTemperature", v.acTemperature, "fanSpeed", v.fanSpeed, "climateMode", v.acMode, "humidityLevel", v.humidityLevel), nil
	case "headlights":
		return dictOf("headlightStatus", v.headLightStatus), nil
	case "parkingBrake":
		return dictOf("parkingBrakeStatus", v.parkingBrakeStatus, "parkingBrakeForce", v.parkingBrakeForce, "slopeAngle", v.slopeAngle), nil
	case "brakePedal":
		return dictOf("brakePedalStatus", v.brakePedalStatus, "brakePedalForce", v.brakePedalForce), nil
	case "engine":
		return dictOf("engineState", v.engineState), nil
	}
	return errDict("Invalid option"), nil
}

func (v *vehicleAPI) activateParkingBrake(a []any) (any, error) {
	switch {
	case pyval.Eq(a[0], "engage"):
		v.parkingBrakeStatus, v.parkingBrakeForce = "engaged", 500.0
	case pyval.Eq(a[0], "release"):
		v.parkingBrakeStatus, v.parkingBrakeForce = "released", 0.0
	default:
		return errDict("Invalid mode"), nil
	}
	v.slopeAngle = 10.0 // on release too, as in Python
	return dictOf("parkingBrakeStatus", v.parkingBrakeStatus, "_parkingBrakeForce", v.parkingBrakeForce, "_slopeAngle", 10.0), nil
}

func (v *vehicleAPI) pressBrakePedal(a []any) (any, error) {
	pos := a[0]
	ok, err := Compare("<=", int64(0), pos)
	if err != nil {
		return nil, err
	}
	if ok {
		if ok, err = Compare("<=", pos, int64(1)); err != nil {
			return nil, err
		}
	}
	if !ok {
		return errDict("Pedal position must be between 0 and 1."), nil
	}
	if pyval.Eq(pos, int64(0)) {
		v.brakePedalStatus, v.brakePedalForce = "released", 0.0
		return dictOf("brakePedalStatus", "released", "brakePedalForce", 0.0), nil
	}
	force, err := arith("*", pos, int64(1000))
	if err != nil {
		return nil, err
	}
	f, err := toFloat(force)
	if err != nil {
		return nil, err
	}
	v.brakePedalStatus, v.brakePedalForce = "pressed", force
	return dictOf("brakePedalStatus", "pressed", "brakePedalForce", f), nil
}

func (v *vehicleAPI) setCruiseControl(a []any) (any, error) {
	dist, err := toFloat(a[2])
	if err != nil {
		return nil, err
	}
	speed, err := toFloat(a[0])
	if err != nil {
		return nil, err
	}
	if pyval.Eq(v.engineState, "stopped") {
		return errDict("Start the engine before activating the cruise control."), nil
	}
	status := "inactive"
	if Truthy(a[1]) {
		v.distanceToNextVehicle = dist // set even for an invalid speed
		if speed < 0 || speed > 120 || floatMod(speed, 5) != 0 {
			return errDict("Invalid speed"), nil
		}
		status = "active"
	}
	v.cruiseStatus, v.distanceToNextVehicle = status, dist
	return dictOf("cruiseStatus", status, "currentSpeed", speed, "distanceToNextVehicle", dist), nil
}

func (v *vehicleAPI) checkTirePressure([]any) (any, error) {
	sum := v.tirePressures[0]
	for _, p := range v.tirePressures[1:] {
		var err error
		if sum, err = arith("+", sum, p); err != nil {
			return nil, err
		}
	}
	mean, err := arith("/", sum, int64(4))
	if err != nil {
		return nil, err
	}
	healthy, err := Compare("<=", int64(30), mean)
	if err != nil {
		return nil, err
	}
	if healthy {
		if healthy, err = Compare("<=", mean, int64(35)); err != nil {
			return nil, err
		}
	}
	d := pyval.NewDict()
	for i, k := range vehTireKeys {
		d.Set(k, v.tirePressures[i])
	}
	d.Set("healthy_tire_pressure", healthy)
	d.Set("car_info", pyval.NewDict())
	return d, nil
}

// vehConvert is a unit conversion: {key: amount * factor}.
func vehConvert(key string, amount any, factor float64) (any, error) {
	x, err := arith("*", amount, factor)
	if err != nil {
		return nil, err
	}
	return dictOf(key, x), nil
}

// vehDistances are estimate_distance's known distances, in km, between
// two zip codes either way round.
var vehDistances = []struct {
	a, b string
	km   float64
}{
	{"83214", "74532", 750.0},
	{"56108", "62947", 320.0},
	{"71354", "83462", 450.0},
	{"47329", "52013", 290.0},
	{"69238", "51479", 630.0},
	{"94016", "83214", 980.0},
	{"94016", "94704", 600.0},
	{"94704", "08540", 2550.0},
	{"94016", "08540", 1950.0},
	{"62947", "47329", 1053.0},
	{"94016", "62947", 780.0},
	{"74532", "94016", 880.0},
}

func vehDistance(cityA, cityB any) *pyval.Dict {
	a, aok := cityA.(string)
	b, bok := cityB.(string)
	if aok && bok {
		for _, d := range vehDistances {
			if a == d.a && b == d.b || a == d.b && b == d.a {
				return dictOf("distance", d.km)
			}
		}
	}
	return errDict("distance not found in database.")
}

// vehZipcodes are get_zipcode_based_on_city's cities; any other is
// "00000".
var vehZipcodes = map[string]string{
	"Rivermist":       "83214",
	"Stonebrook":      "74532",
	"Maplecrest":      "56108",
	"Silverpine":      "62947",
	"Shadowridge":     "71354",
	"Sunset Valley":   "83462",
	"Oakendale":       "47329",
	"Willowbend":      "52013",
	"Crescent Hollow": "69238",
	"Autumnville":     "51479",
	"San Francisco":   "94016",
}
