"""The package version (kept in step with ``pyproject.toml`` by ``tests/test_package.py``)."""

__version__ = "0.1.0"
