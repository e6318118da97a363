import pytest

def test_pass():
    pass

def test_fail():
    assert 1 == 2, "one is not two"

@pytest.mark.skip(reason="not here")
def test_skip():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n == 1

class TestGroup:
    def test_in_class(self):
        pass

@pytest.fixture
def broken():
    yield
    raise RuntimeError("teardown broke")

def test_teardown(broken):
    pass
