"""Fixtures come from plugins in tests/helpers: a real embedded PostgreSQL, and MCP sessions over it.

Commands the tests start load their models in-process unless a test asks for the shared worker
(PGRECALL_MODELS=worker): a worker per temporary home would outlive its test by its idle period.
"""

import os

os.environ.setdefault("PGRECALL_MODELS", "in-process")

pytest_plugins = ["tests.helpers.postgres", "tests.helpers.mcp_session"]
