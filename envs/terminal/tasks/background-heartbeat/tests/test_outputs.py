import os
import time


def read_pid():
    with open("/app/heartbeat.pid") as f:
        return int(f.read().strip())


def lines():
    with open("/app/heartbeat.log") as f:
        return [l.strip() for l in f if l.strip()]


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
