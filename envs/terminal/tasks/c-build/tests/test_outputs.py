import subprocess

DIR = "/app/calc"


def build():
    subprocess.run(["make", "-C", DIR, "clean"], capture_output=True, check=True)
    return subprocess.run(["make", "-C", DIR], capture_output=True, text=True)


def test_make_builds():
    r = build()
    assert r.returncode == 0, r.stdout + r.stderr
    with open(DIR + "/calc", "rb") as f:
        assert f.read(4) == b"\x7fELF", "calc is not a compiled executable"


def test_calc_adds():
    assert build().returncode == 0
    for a, b, want in [("2", "3", "5"), ("10", "-4", "6"), ("1000000", "1", "1000001")]:
        r = subprocess.run([DIR + "/calc", a, b], capture_output=True, text=True, timeout=10)
        assert r.returncode == 0
        assert r.stdout.strip() == want
