import collections
import re


def expected():
    with open("/app/text.txt") as f:
        words = re.findall(r"[a-z]+", f.read().lower())
    counts = collections.Counter(words)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return [f"{n} {w}" for w, n in ranked]


def test_top5_exists():
    with open("/app/top5.txt") as f:
        assert f.read().strip(), "top5.txt is empty"


def test_top5_content():
    with open("/app/top5.txt") as f:
        got = [" ".join(line.split()) for line in f.read().splitlines() if line.strip()]
    assert got == expected()
