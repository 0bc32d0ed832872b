"""The package's version, read by setuptools at build time and by every record's ``version`` field."""

__version__ = "0.1.0"
