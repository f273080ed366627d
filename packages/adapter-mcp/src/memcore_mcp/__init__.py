"""A Model Context Protocol server over memcore."""

__version__ = "0.1.0"
