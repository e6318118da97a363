import collections


def expected():
    counts = collections.Counter()
    with open("/app/access.log") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 8 and fields[8].startswith("5"):
                counts[fields[0]] += 1
    return [ip for ip, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def test_bad_ips_file():
    with open("/app/bad_ips.txt") as f:
        got = [l.strip() for l in f if l.strip()]
    assert got, "bad_ips.txt is empty"
    assert set(got) == set(expected()), "wrong set of IPs"


def test_bad_ips_order():
    with open("/app/bad_ips.txt") as f:
        got = [l.strip() for l in f if l.strip()]
    assert got == expected()
