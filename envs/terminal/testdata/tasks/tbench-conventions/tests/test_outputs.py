import os
import subprocess


def test_works_in_app():
    assert os.getcwd() == "/app"


def test_built_in_app():
    assert open("/app/data.txt").read() == "hello conventions\n"
    assert open("/app/seed.txt").read() == "seeded\n"


def test_python_is_python3():
    out = subprocess.run(["python", "-c", "import sys; print(sys.version_info[0])"], capture_output=True, text=True)
    assert out.stdout.strip() == "3"


def test_out():
    assert open("/app/out.txt").read() == "HELLO CONVENTIONS\n"
