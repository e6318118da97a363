import subprocess

REPO = "/app/repo"


def git(*args):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", REPO, *args],
                          capture_output=True, text=True, check=True).stdout


def test_secret_restored():
    with open(REPO + "/secret.txt") as f:
        assert f.read() == "launch code: 4417-bravo\n"


def test_restoration_committed():
    assert git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git("log", "-1", "--format=%s").strip() == "Restore secret.txt"
    assert git("show", "HEAD:secret.txt") == "launch code: 4417-bravo\n"


def test_history_kept_and_tree_clean():
    subjects = git("log", "--format=%s").splitlines()
    assert subjects[1:] == ["Remove the secret, add notes", "Rotate the code", "Initial commit"]
    assert git("status", "--porcelain").strip() == ""
