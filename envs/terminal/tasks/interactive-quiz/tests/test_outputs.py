import hashlib


def test_quiz_passed():
    want = hashlib.sha256(b"42|lanimret|blue").hexdigest()
    with open("/app/quiz_passed.txt") as f:
        assert f.read().strip() == want
