import json


def expected():
    with open("/app/orders.json") as f:
        orders = json.load(f)
    totals = {}
    for o in orders:
        if o["status"] == "paid":
            totals[o["customer"]] = totals.get(o["customer"], 0) + sum(i["qty"] * i["price"] for i in o["items"])
    return {c: round(v, 2) for c, v in totals.items()}


def test_summary_is_json_object():
    with open("/app/summary.json") as f:
        got = json.load(f)
    assert isinstance(got, dict)


def test_summary_values():
    with open("/app/summary.json") as f:
        got = json.load(f)
    want = expected()
    assert set(got) == set(want), "wrong set of customers"
    for c, v in want.items():
        assert abs(float(got[c]) - v) < 0.006, f"{c}: {got[c]} != {v}"
