from pathlib import Path


def test_first_line_copied():
    assert Path("/app/out.txt").read_text() == "hello from the subfolder\n"
