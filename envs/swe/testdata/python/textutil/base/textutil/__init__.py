"""Small text helpers."""

from .core import slugify, title_case

__all__ = ["slugify", "title_case"]
