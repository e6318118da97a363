import os
import subprocess
import time
import urllib.request

import pytest


@pytest.fixture(scope="module", autouse=True)
def served():
    assert os.access("/app/serve.sh", os.X_OK), "/app/serve.sh is not an executable file"
    subprocess.run(["bash", "-c", "/app/serve.sh"], timeout=20,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


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
