#!/bin/bash
set -e
python3 - <<'PY'
import json

with open("/app/orders.json") as f:
    orders = json.load(f)
totals = {}
for o in orders:
    if o["status"] == "paid":
        totals[o["customer"]] = totals.get(o["customer"], 0) + sum(i["qty"] * i["price"] for i in o["items"])
with open("/app/summary.json", "w") as f:
    json.dump({c: round(v, 2) for c, v in sorted(totals.items())}, f, indent=2)
PY
