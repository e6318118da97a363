import pytest

from inventory import Inventory


class TestInventory:
    def test_add(self):
        inv = Inventory()
        inv.add("apple", 3)
        assert inv.count("apple") == 3

    def test_remove(self):
        inv = Inventory()
        inv.add("pear", 5)
        inv.remove("pear", 2)
        assert inv.count("pear") == 3

    def test_add_rejects_zero(self):
        with pytest.raises(ValueError):
            Inventory().add("plum", 0)
