from .store import Inventory

__all__ = ["Inventory"]
