import time
import urllib.request


def get(path):
    last = None
    for _ in range(8):
        try:
            with urllib.request.urlopen("http://127.0.0.1:8000" + path, timeout=2) as r:
                return r.status, r.read().decode()
        except OSError as e:
            last = e
            time.sleep(0.25)
    raise AssertionError(f"GET {path}: {last}")


def test_index():
    status, body = get("/index.html")
    assert status == 200
    assert "<h1>It works</h1>" in body


def test_health():
    status, body = get("/health.txt")
    assert status == 200
    assert body.strip() == "ok"
