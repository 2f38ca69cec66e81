"""Fixtures come from plugins in tests/helpers: a real embedded PostgreSQL, and MCP sessions over it."""

pytest_plugins = ["tests.helpers.postgres", "tests.helpers.mcp_session"]
