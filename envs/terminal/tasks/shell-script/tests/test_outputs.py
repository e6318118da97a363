import os
import subprocess

SCRIPT = "/app/bin/countlines"


def test_executable():
    assert os.path.isfile(SCRIPT)
    assert os.access(SCRIPT, os.X_OK), "countlines is not executable"


def test_counts_lines(tmp_path):
    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    (tmp_path / "sub dir").mkdir()
    (tmp_path / "sub dir" / "b c.txt").write_text("x\ny\n")
    (tmp_path / "sub dir" / "skip.md").write_text("no\nno\nno\nno\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "d.txt").write_text("only\n")
    r = subprocess.run([SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "6"


def test_usage():
    r = subprocess.run([SCRIPT], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2
    assert r.stderr.strip() == "usage: countlines DIR"
    assert r.stdout == ""
