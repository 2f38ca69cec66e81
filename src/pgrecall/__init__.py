"""pgrecall: a memory and knowledge store for AI assistants, kept in PostgreSQL."""

__version__ = "0.1.0"
