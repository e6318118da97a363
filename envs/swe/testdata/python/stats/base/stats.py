"""Descriptive statistics of lists of numbers."""


def mean(values):
    """Return the arithmetic mean of values; ValueError when empty."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values):
    """Return the median of values; ValueError when empty."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
