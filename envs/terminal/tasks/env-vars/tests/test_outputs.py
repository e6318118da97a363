import hashlib
import subprocess


def test_report_written_with_settings():
    digest = hashlib.sha256(b"alice:3").hexdigest()[:16]
    with open("/app/report.txt") as f:
        assert f.read() == f"user=alice\nlevel=3\ndigest={digest}\n"


def test_env_file_exports():
    r = subprocess.run(
        ["bash", "-c", "source /app/report.env && bash -c 'echo \"$REPORT_USER $REPORT_LEVEL\"'"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "alice 3"
