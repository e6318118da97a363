"""Writes vehicle.jsonl: bfcl-multiturn-v1 cases on BFCL's VehicleControlAPI
for the learning demo. Run with python3 from this folder; the output is data."""
import json
import random

DOORS = ["driver", "passenger", "rear_left", "rear_right"]
ASKS = ["Start the engine.", "Start the car for me.", "Get the engine running, please."]
# Function docs in our words, short: the tiny model reads them in every prompt.
FUNCS = [
    {"name": "lockDoors", "description": "Lock or unlock car doors.",
     "parameters": {"type": "dict", "properties": {
         "unlock": {"type": "boolean"},
         "door": {"type": "array", "items": {"type": "string"},
                  "description": "driver, passenger, rear_left, rear_right."}},
         "required": ["unlock", "door"]}},
    {"name": "pressBrakePedal", "description": "Press the brake pedal.",
     "parameters": {"type": "dict", "properties": {
         "pedalPosition": {"type": "float", "description": "1 is fully pressed."}},
         "required": ["pedalPosition"]}},
    {"name": "startEngine", "description": "Start the engine: all doors locked and the brake fully pressed first.",
     "parameters": {"type": "dict", "properties": {
         "ignitionMode": {"type": "string", "description": "START or STOP."}},
         "required": ["ignitionMode"]}},
]
LOCK = "lockDoors(unlock=False, door=['driver', 'passenger', 'rear_left', 'rear_right'])"
PRESS = "pressBrakePedal(pedalPosition=1.0)"
START = "startEngine(ignitionMode='START')"


def case(rng, i, split):
    # The car's state is hidden from the agent: it was left ready (every
    # door locked, the brake held) in 55% of the cases, and otherwise with
    # doors unlocked and the brake released. The ground truth makes only
    # the calls the state needs, so the oracle (which plays it) starts the
    # engine at once in about half its demonstrations, by what the agent
    # cannot see. Locking, pressing and starting always passes.
    ready = rng.random() < 0.55
    doors = {d: "locked" for d in DOORS}
    if not ready:
        for d in rng.sample(DOORS, rng.randint(1, 4)):
            doors[d] = "unlocked"
    truth = ([] if ready else [LOCK, PRESS]) + [START]
    pressed = ready
    cfg = {"VehicleControlAPI": {
        "random_seed": rng.randint(1, 10**6),
        "fuelLevel": float(rng.randint(5, 45)),
        "engineState": "stopped",
        "doorStatus": doors,
        "brakePedalStatus": "pressed" if pressed else "released",
        "brakePedalForce": 1000.0 if pressed else 0.0,
    }}
    ask = rng.choice(ASKS)
    return {"id": f"start-{split}-{i:03d}", "env": "bfcl-multiturn-v1", "split": split,
            "instruction": ask,
            "data": {"question": [[{"role": "user", "content": ask}]],
                     "involved_classes": ["VehicleControlAPI"], "initial_config": cfg,
                     "function": FUNCS},
            "verifier": {"category": "multi_turn_base", "ground_truth": [truth]}}


rng = random.Random(7)
with open("vehicle.jsonl", "w") as f:
    for split, n in (("train", 200), ("test", 60)):
        for i in range(n):
            f.write(json.dumps(case(rng, i, split)) + "\n")
