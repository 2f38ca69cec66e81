"""What `tools/list` costs a client's context: bytes of the JSON result, per part and per tool.

The figure that counts is `model_visible_bytes`: names, descriptions and input schemas, which a
model reads on every conversation (output schemas and annotations stay with the client).

Run: python benchmarks/tool_surface.py [--json benchmarks/tool_surface.json] [--per-tool]
(benchmarks/tool_surface-3e4ba70.json and tool_surface-d741cd9.json: the figures before each trim.)

Nothing is opened: the server is built over a deferred runtime (no database, no model) and its tool
list is serialized exactly as it goes on the wire (aliases, no nulls, compact JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp_types import ListToolsResult

from pgrecall.config import Settings
from pgrecall.evaluation import record
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server, model_visible_bytes


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _descriptions(node: Any) -> int:
    """Bytes of every "description" string in a schema (nested ones included)."""
    if isinstance(node, dict):
        own = len(node["description"].encode()) if isinstance(node.get("description"), str) else 0
        return own + sum(_descriptions(v) for k, v in node.items() if k != "description")
    if isinstance(node, list):
        return sum(_descriptions(v) for v in node)
    return 0


async def measure() -> dict[str, Any]:
    """Sizes of the serialized tools/list result."""
    with tempfile.TemporaryDirectory(prefix="pgrecall-surface-") as home:
        settings = Settings(home=Path(home))  # type: ignore[call-arg]
        runtime = Runtime.deferred(settings, lambda: None)  # type: ignore[arg-type,return-value]
        server = create_server(runtime)
        tools = await server.list_tools()
    wire = ListToolsResult(tools=tools).model_dump(mode="json", by_alias=True, exclude_none=True)
    per_tool: dict[str, dict[str, int]] = {}
    for tool_model, tool in zip(tools, wire["tools"], strict=True):
        per_tool[tool["name"]] = {
            "total": _size(tool),
            "model_visible": model_visible_bytes([tool_model]),
            "description": len(tool.get("description", "").encode()),
            "input_schema": _size(tool.get("inputSchema", {})),
            "output_schema": _size(tool.get("outputSchema", {})),
            "schema_descriptions": _descriptions(tool.get("inputSchema", {}))
            + _descriptions(tool.get("outputSchema", {})),
        }
    totals = {key: sum(t[key] for t in per_tool.values()) for key in next(iter(per_tool.values()))}
    return {
        "model_visible_bytes": model_visible_bytes(tools),
        "tools_list_bytes": _size(wire),
        "tools": len(per_tool),
        "parts": totals,
        "per_tool": per_tool,
    }


def main() -> None:
    """Print (and optionally save) the sizes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--per-tool", action="store_true", help="print each tool's figures")
    args = parser.parse_args()
    run = record.Run(vars(args))
    figures = asyncio.run(measure())
    print(
        f"tools/list: {figures['model_visible_bytes']} bytes model-visible (names, descriptions, input "
        f"schemas), {figures['tools_list_bytes']} bytes in all, for {figures['tools']} tools"
    )
    for key, value in figures["parts"].items():
        print(f"  {key:20} {value:7}")
    if args.per_tool:
        for name, parts in figures["per_tool"].items():
            print(f"{name:18} " + " ".join(f"{k}={v}" for k, v in parts.items()))
    if args.json:
        record.write(run.finish(figures), args.json)
    sys.exit(0)


if __name__ == "__main__":
    main()
