import os
import subprocess
import time

import pytest


def read_pid():
    with open("/app/heartbeat.pid") as f:
        return int(f.read().strip())


def lines():
    try:
        with open("/app/heartbeat.log") as f:
            return [l.strip() for l in f if l.strip()]
    except FileNotFoundError:
        return []


@pytest.fixture(scope="module", autouse=True)
def started():
    # The script runs in a shell of its own that then exits, as a login
    # shell would: the job must outlive it.
    assert os.access("/app/start-heartbeat.sh", os.X_OK), "/app/start-heartbeat.sh is not an executable file"
    subprocess.run(["bash", "-c", "/app/start-heartbeat.sh"], timeout=10, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(50):
        if os.path.exists("/app/heartbeat.pid") and lines():
            break
        time.sleep(0.1)


def test_job_running():
    pid = read_pid()
    assert os.path.exists(f"/proc/{pid}"), f"process {pid} is not running"
    with open(f"/proc/{pid}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    assert state != "Z", f"process {pid} is a zombie"


def test_log_grows_every_second():
    before = len(lines())
    time.sleep(3.2)
    after = lines()
    assert len(after) - before >= 2, f"{len(after) - before} new lines in 3 seconds"
    now = time.time()
    for l in after[-2:]:
        assert l.isdigit(), f"{l!r} is not a Unix time"
        assert abs(int(l) - now) < 10, f"{l} is not the current time"
