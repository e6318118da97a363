"""A stock of items, counted by name."""


class Inventory:
    """Counts items by name."""

    def __init__(self):
        self._stock = {}

    def add(self, name, count=1):
        """Add count items of name."""
        if count <= 0:
            raise ValueError("count must be positive")
        self._stock[name] = self._stock.get(name, 0) + count

    def remove(self, name, count=1):
        """Remove count items of name."""
        if count <= 0:
            raise ValueError("count must be positive")
        self._stock[name] = self._stock.get(name, 0) - count

    def count(self, name):
        """Return how many items of name there are."""
        return self._stock.get(name, 0)
