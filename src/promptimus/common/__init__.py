"""The original promptimus' `promptimus.common` package (kept for code written against it)."""
