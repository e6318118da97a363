import pytest

from stats import mean, median


@pytest.mark.parametrize("values,want", [([1, 2], 1.5), ([2, 4, 6], 4), ([5], 5)])
def test_mean(values, want):
    assert mean(values) == want


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd():
    assert median([3, 1, 2]) == 2
