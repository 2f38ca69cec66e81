"""Moving entries in and out: JSONL export/import and the MCP memory server's memory.json."""

from pgrecall.services.transfer.export import export_jsonl
from pgrecall.services.transfer.importer import ImportOptions, ImportReport, import_jsonl
from pgrecall.services.transfer.lines import LineError, count_lines, wrong_format_hint
from pgrecall.services.transfer.memory_json import RelationCounts, import_memory_json

__all__ = [
    "ImportOptions",
    "ImportReport",
    "LineError",
    "RelationCounts",
    "count_lines",
    "export_jsonl",
    "import_jsonl",
    "import_memory_json",
    "wrong_format_hint",
]
