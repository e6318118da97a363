package multiturn

import (
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// vehProbes are calls the recorded runs do not make (other seeds and
// configs, wrong types, float() of odd strings, big ints), with the
// results and final state (its repr) that BFCL's own VehicleControlAPI
// gives under Python 3.11.
var vehProbes = []struct {
	config string
	calls  [][2]string
	state  string
}{
	{
		config: `{}`,
		calls: [][2]string{
			{`get_current_speed()`, `{"currentSpeed": 111.92365689097284}`},
			{`get_outside_temperature_from_google()`, `{"outsideTemperature": 31.29968928699752}`},
			{`get_current_speed()`, `{"currentSpeed": 44.51081620775468}`},
			{`get_outside_temperature_from_weather_com()`, `{"error": 404}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 4, 'doorStatus': {'driver': 'unlocked', 'passenger': 'unlocked', 'rear_left': 'unlocked', 'rear_right': 'unlocked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{"random_seed": 7, "fuelLevel": 10}`,
		calls: [][2]string{
			{`get_current_speed()`, `{"currentSpeed": 38.85993177997948}`},
			{`fillFuelTank(fuelAmount=5)`, `{"fuelLevel": 15}`},
			{`fillFuelTank(fuelAmount=2.5)`, `{"fuelLevel": 17.5}`},
			{`fillFuelTank(fuelAmount=True)`, `{"fuelLevel": 18.5}`},
			{`fillFuelTank(fuelAmount=-1)`, `{"error": "Fuel amount cannot be negative."}`},
			{`fillFuelTank(fuelAmount=100)`, `{"error": "Cannot fill gas above the tank capacity."}`},
			{`fillFuelTank(fuelAmount=None)`, `Error during execution: '<' not supported between instances of 'NoneType' and 'int'`},
			{`fillFuelTank(fuelAmount=[1])`, `Error during execution: '<' not supported between instances of 'list' and 'int'`},
			{`estimate_drive_feasibility_by_mileage(distance=371)`, `{"canDrive": false}`},
			{`estimate_drive_feasibility_by_mileage(distance=None)`, `Error during execution: '<' not supported between instances of 'float' and 'NoneType'`},
		},
		state: `{'fuelLevel': 18.5, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 4, 'doorStatus': {'driver': 'unlocked', 'passenger': 'unlocked', 'rear_left': 'unlocked', 'rear_right': 'unlocked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{}`,
		calls: [][2]string{
			{`lockDoors(unlock=False, door='driver')`, `Error during execution: 'd'`},
			{`lockDoors(unlock=False, door=5)`, `Error during execution: 'int' object is not iterable`},
			{`lockDoors(unlock=False, door=None)`, `Error during execution: 'NoneType' object is not iterable`},
			{`lockDoors(unlock=False, door=[['a']])`, `Error during execution: unhashable type: 'list'`},
			{`lockDoors(unlock=False, door=[1.5])`, `Error during execution: 1.5`},
			{`lockDoors(unlock=False, door=[True])`, `Error during execution: True`},
			{`lockDoors(unlock=0, door=['driver', 'passenger'])`, `{"lockStatus": "locked", "remainingUnlockedDoors": 2}`},
			{`lockDoors(unlock='yes', door={'driver': 1})`, `{"lockStatus": "unlocked", "remainingUnlockedDoors": 3}`},
			{`lockDoors(False, ['driver','passenger','rear_left','rear_right', 'trunk'])`, `Error during execution: 'trunk'`},
			{`startEngine('START')`, `{"error": "Brake pedal needs to be pressed when starting the engine."}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 0, 'doorStatus': {'driver': 'locked', 'passenger': 'locked', 'rear_left': 'locked', 'rear_right': 'locked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{}`,
		calls: [][2]string{
			{`lockDoors(False, ['driver','passenger','rear_left','rear_right'])`, `{"lockStatus": "locked", "remainingUnlockedDoors": 0}`},
			{`startEngine('START')`, `{"error": "Brake pedal needs to be pressed when starting the engine."}`},
			{`pressBrakePedal(0.5)`, `{"brakePedalStatus": "pressed", "brakePedalForce": 500.0}`},
			{`startEngine('START')`, `{"error": "Must press the brake fully before starting the engine."}`},
			{`pressBrakePedal(True)`, `{"brakePedalStatus": "pressed", "brakePedalForce": 1000.0}`},
			{`displayCarStatus('brakePedal')`, `{"brakePedalStatus": "pressed", "brakePedalForce": 1000}`},
			{`startEngine('STOP')`, `{"error": "Invalid ignition mode."}`},
			{`startEngine('START')`, `{"engineState": "running", "fuelLevel": 0.0, "batteryVoltage": 12.6}`},
			{`displayCarStatus('engine')`, `{"engineState": "running"}`},
			{`setCruiseControl(speed=65, activate=True, distanceToNextVehicle=100)`, `{"cruiseStatus": "active", "currentSpeed": 65.0, "distanceToNextVehicle": 100.0}`},
			{`setCruiseControl(speed='62', activate=True, distanceToNextVehicle=' 1_0.5 ')`, `{"error": "Invalid speed"}`},
			{`setCruiseControl(speed='nan', activate=True, distanceToNextVehicle='-inf')`, `{"error": "Invalid speed"}`},
			{`setCruiseControl(speed='abc', activate=True, distanceToNextVehicle=1)`, `Error during execution: could not convert string to float: 'abc'`},
			{`setCruiseControl(speed=None, activate=False, distanceToNextVehicle=1)`, `Error during execution: float() argument must be a string or a real number, not 'NoneType'`},
			{`setCruiseControl(speed=60, activate=False, distanceToNextVehicle=[1])`, `Error during execution: float() argument must be a string or a real number, not 'list'`},
			{`setCruiseControl(speed='0x10', activate=False, distanceToNextVehicle=1)`, `Error during execution: could not convert string to float: '0x10'`},
			{`setCruiseControl(speed='1e999', activate=0, distanceToNextVehicle='Infinity')`, `{"cruiseStatus": "inactive", "currentSpeed": Infinity, "distanceToNextVehicle": Infinity}`},
			{`setCruiseControl(speed='-0.0', activate=1, distanceToNextVehicle='+nan')`, `{"cruiseStatus": "active", "currentSpeed": -0.0, "distanceToNextVehicle": NaN}`},
			{`setCruiseControl(speed=12345678901234567890123, activate=1, distanceToNextVehicle=2)`, `{"error": "Invalid speed"}`},
			{`setCruiseControl(speed='1__0', activate=1, distanceToNextVehicle=2)`, `Error during execution: could not convert string to float: '1__0'`},
			{`setCruiseControl(speed='.5e1', activate=1, distanceToNextVehicle='5.')`, `{"cruiseStatus": "active", "currentSpeed": 5.0, "distanceToNextVehicle": 5.0}`},
			{`displayCarStatus('climate')`, `{"currentACTemperature": 25.0, "fanSpeed": 50, "climateMode": "auto", "humidityLevel": 50.0}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'running', 'remainingUnlockedDoors': 0, 'doorStatus': {'driver': 'locked', 'passenger': 'locked', 'rear_left': 'locked', 'rear_right': 'locked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'pressed', 'distanceToNextVehicle': 5.0, 'cruiseStatus': 'active', 'destination': 'None', 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{}`,
		calls: [][2]string{
			{`adjustClimateControl(temperature=68, unit='fahrenheit')`, `{"currentACTemperature": 68, "climateMode": "auto", "humidityLevel": 50.0}`},
			{`adjustClimateControl(temperature=70.3, unit='fahrenheit', fanSpeed=100, mode='cool')`, `{"currentACTemperature": 70.3, "climateMode": "cool", "humidityLevel": 50.0}`},
			{`adjustClimateControl(temperature='x', unit='fahrenheit')`, `Error during execution: unsupported operand type(s) for -: 'str' and 'int'`},
			{`displayCarStatus('climate')`, `{"currentACTemperature": "x", "fanSpeed": 100, "climateMode": "cool", "humidityLevel": 50.0}`},
			{`adjustClimateControl(temperature=20, fanSpeed=101)`, `{"error": "Fan speed must be between 0 and 100."}`},
			{`adjustClimateControl(temperature=20, fanSpeed='5')`, `Error during execution: '<=' not supported between instances of 'int' and 'str'`},
			{`adjustClimateControl(temperature=True, unit='fahrenheit', fanSpeed=False)`, `{"currentACTemperature": true, "climateMode": "auto", "humidityLevel": 50.0}`},
			{`adjustClimateControl(temperature=12345678901234567890123, unit='fahrenheit')`, `{"currentACTemperature": 12345678901234567890123, "climateMode": "auto", "humidityLevel": 50.0}`},
			{`displayCarStatus('climate')`, `{"currentACTemperature": 6.858710500685871e+21, "fanSpeed": 50, "climateMode": "auto", "humidityLevel": 50.0}`},
			{`displayCarStatus(5)`, `{"error": "Invalid option"}`},
			{`displayCarStatus('parkingBrake')`, `{"parkingBrakeStatus": "released", "parkingBrakeForce": 0.0, "slopeAngle": 0.0}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 4, 'doorStatus': {'driver': 'unlocked', 'passenger': 'unlocked', 'rear_left': 'unlocked', 'rear_right': 'unlocked'}, 'acTemperature': 6.858710500685871e+21, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{}`,
		calls: [][2]string{
			{`setHeadlights('auto')`, `{"headlightStatus": "off"}`},
			{`setHeadlights('on')`, `{"headlightStatus": "on"}`},
			{`setHeadlights(1)`, `{"error": "Invalid headlight mode."}`},
			{`activateParkingBrake('engage')`, `{"parkingBrakeStatus": "engaged", "_parkingBrakeForce": 500.0, "_slopeAngle": 10.0}`},
			{`displayCarStatus('parkingBrake')`, `{"parkingBrakeStatus": "engaged", "parkingBrakeForce": 500.0, "slopeAngle": 10.0}`},
			{`activateParkingBrake('release')`, `{"parkingBrakeStatus": "released", "_parkingBrakeForce": 0.0, "_slopeAngle": 10.0}`},
			{`activateParkingBrake(None)`, `{"error": "Invalid mode"}`},
			{`pressBrakePedal(0)`, `{"brakePedalStatus": "released", "brakePedalForce": 0.0}`},
			{`pressBrakePedal(1.5)`, `{"error": "Pedal position must be between 0 and 1."}`},
			{`pressBrakePedal(0.333)`, `{"brakePedalStatus": "pressed", "brakePedalForce": 333.0}`},
			{`pressBrakePedal([1])`, `Error during execution: '<=' not supported between instances of 'int' and 'list'`},
			{`pressBrakePedal(False)`, `{"brakePedalStatus": "released", "brakePedalForce": 0.0}`},
			{`releaseBrakePedal()`, `{"brakePedalStatus": "released", "brakePedalForce": 0.0}`},
			{`display_log(['a', 1, None])`, `{"log": ["a", 1, null]}`},
			{`display_log(messages='x')`, `{"log": "x"}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 4, 'doorStatus': {'driver': 'unlocked', 'passenger': 'unlocked', 'rear_left': 'unlocked', 'rear_right': 'unlocked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'on', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{}`,
		calls: [][2]string{
			{`liter_to_gallon(30)`, `{"gallon": 7.925160000000001}`},
			{`liter_to_gallon(12.7)`, `{"gallon": 3.3549844}`},
			{`liter_to_gallon('3')`, `Error during execution: can't multiply sequence by non-int of type 'float'`},
			{`liter_to_gallon(None)`, `Error during execution: unsupported operand type(s) for *: 'NoneType' and 'float'`},
			{`liter_to_gallon([1])`, `Error during execution: can't multiply sequence by non-int of type 'float'`},
			{`liter_to_gallon({})`, `Error during execution: unsupported operand type(s) for *: 'dict' and 'float'`},
			{`liter_to_gallon(True)`, `{"gallon": 0.264172}`},
			{`gallon_to_liter(12345678901234567890123)`, `{"liter": 4.673345636952235e+22}`},
			{`gallon_to_liter(7)`, `{"liter": 26.497870000000002}`},
			{`estimate_distance('08540', '94704')`, `{"distance": 2550.0}`},
			{`estimate_distance(1, 2)`, `{"error": "distance not found in database."}`},
			{`estimate_distance('94016', '94016')`, `{"error": "distance not found in database."}`},
			{`get_zipcode_based_on_city('Autumnville')`, `{"zipcode": "51479"}`},
			{`get_zipcode_based_on_city(None)`, `{"zipcode": "00000"}`},
			{`set_navigation(5)`, `Error during execution: can only concatenate str (not "int") to str`},
			{`set_navigation(destination='123 Main St')`, `{"status": "Navigating to 123 Main St"}`},
			{`set_navigation(['x'])`, `Error during execution: can only concatenate str (not "list") to str`},
			{`check_tire_pressure()`, `{"frontLeftTirePressure": 32.0, "frontRightTirePressure": 32.0, "rearLeftTirePressure": 30.0, "rearRightTirePressure": 30.0, "healthy_tire_pressure": true, "car_info": {}}`},
			{`find_nearest_tire_shop()`, `{"shopLocation": "456 Oakwood Avenue, Rivermist, 83214"}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 4, 'doorStatus': {'driver': 'unlocked', 'passenger': 'unlocked', 'rear_left': 'unlocked', 'rear_right': 'unlocked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': ['x'], 'frontLeftTirePressure': 32.0, 'frontRightTirePressure': 32.0, 'rearLeftTirePressure': 30.0, 'rearRightTirePressure': 30.0, 'long_context': False}`,
	},
	{
		config: `{"frontLeftTirePressure": 40, "frontRightTirePressure": 40, "rearLeftTirePressure": 39.9, "rearRightTirePressure": 20, "doorStatus": {"driver": "locked", "passenger": "locked"}, "remainingUnlockedDoors": 0, "fuelLevel": 49}`,
		calls: [][2]string{
			{`check_tire_pressure()`, `{"frontLeftTirePressure": 40, "frontRightTirePressure": 40, "rearLeftTirePressure": 39.9, "rearRightTirePressure": 20, "healthy_tire_pressure": true, "car_info": {}}`},
			{`startEngine('START')`, `{"error": "All doors must be locked before starting the engine. Here are the unlocked doors: "}`},
			{`lockDoors(True, ['driver'])`, `{"lockStatus": "unlocked", "remainingUnlockedDoors": 3}`},
			{`fillFuelTank(1)`, `{"fuelLevel": 50}`},
			{`fillFuelTank(0.5)`, `{"error": "Cannot fill gas above the tank capacity."}`},
			{`displayCarStatus('doors')`, `{"doorStatus": {"driver": "unlocked", "passenger": "locked"}}`},
			{`displayCarStatus('fuel')`, `{"fuelLevel": 50}`},
			{`estimate_drive_feasibility_by_mileage(980)`, `{"canDrive": true}`},
		},
		state: `{'fuelLevel': 50, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 3, 'doorStatus': {'driver': 'unlocked', 'passenger': 'locked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'released', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 40, 'frontRightTirePressure': 40, 'rearLeftTirePressure': 39.9, 'rearRightTirePressure': 20, 'long_context': False}`,
	},
	{
		config: `{"frontLeftTirePressure": 35, "frontRightTirePressure": 35, "rearLeftTirePressure": 35, "rearRightTirePressure": 35.0000001, "fuelLevel": -1.0, "brakePedalStatus": "pressed", "brakePedalForce": 1000, "doorStatus": {"driver": "locked", "passenger": "locked", "rear_left": "locked", "rear_right": "locked"}}`,
		calls: [][2]string{
			{`check_tire_pressure()`, `{"frontLeftTirePressure": 35, "frontRightTirePressure": 35, "rearLeftTirePressure": 35, "rearRightTirePressure": 35.0000001, "healthy_tire_pressure": false, "car_info": {}}`},
			{`startEngine('START')`, `{"error": "Fuel tank is empty."}`},
			{`fillFuelTank(0.5)`, `{"error": "Fuel tank is empty. Min fuel level is 0 gallons."}`},
			{`fillFuelTank(1)`, `{"fuelLevel": 0.0}`},
			{`startEngine('GO')`, `{"error": "Invalid ignition mode."}`},
			{`displayCarStatus('engine')`, `{"engineState": "stopped"}`},
		},
		state: `{'fuelLevel': 0.0, 'batteryVoltage': 12.6, 'engine_state': 'stopped', 'remainingUnlockedDoors': 0, 'doorStatus': {'driver': 'locked', 'passenger': 'locked', 'rear_left': 'locked', 'rear_right': 'locked'}, 'acTemperature': 25.0, 'fanSpeed': 50, 'acMode': 'auto', 'humidityLevel': 50.0, 'headLightStatus': 'off', 'parkingBrakeStatus': 'released', 'brakePedalStatus': 'pressed', 'distanceToNextVehicle': 50.0, 'cruiseStatus': 'inactive', 'destination': 'None', 'frontLeftTirePressure': 35, 'frontRightTirePressure': 35, 'rearLeftTirePressure': 35, 'rearRightTirePressure': 35.0000001, 'long_context': False}`,
	},
}

func TestVehicleProbes(t *testing.T) {
	for i, p := range vehProbes {
		cfg, err := pyval.Decode([]byte(p.config))
		if err != nil {
			t.Fatal(err)
		}
		c, err := New("VehicleControlAPI", cfg.(*pyval.Dict))
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		for _, call := range p.calls {
			if got := runOn(t, "VehicleControlAPI", c, call[0]); got != call[1] {
				t.Errorf("probe %d: %s\n  got  %s\n  want %s", i, call[0], got, call[1])
			}
		}
		if got := pyval.Repr(c.State()); got != p.state {
			t.Errorf("probe %d: state\n  got  %s\n  want %s", i, got, p.state)
		}
	}
}
