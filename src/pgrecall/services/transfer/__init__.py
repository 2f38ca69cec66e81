"""Moving entries in and out: JSONL export/import and the MCP memory server's memory.json."""

from pgrecall.services.transfer.export import export_jsonl
from pgrecall.services.transfer.importer import ImportOptions, ImportReport, LineError, import_jsonl
from pgrecall.services.transfer.memory_json import import_memory_json

__all__ = ["ImportOptions", "ImportReport", "LineError", "export_jsonl", "import_jsonl", "import_memory_json"]
