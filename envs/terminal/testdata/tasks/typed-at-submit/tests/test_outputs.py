from pathlib import Path


def test_both_typed_commands_ran():
    assert Path("/app/typed.txt").read_text() == "first\nsecond\n"
