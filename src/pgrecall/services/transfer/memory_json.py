"""Read the knowledge graph of the MCP reference memory server (@modelcontextprotocol/server-memory).

Its file (memory.jsonl; memory.json before it was renamed) holds one JSON object per line:
`{"type":"entity","name":…,"entityType":…,"observations":[…]}` or
`{"type":"relation","from":…,"to":…,"relationType":…}`.

Mapping, one pgrecall entry per entity (relations are not entries of their own):
- id: uuid5 of the entity name, so the same entity always lands on the same entry and a
  re-import updates it instead of adding a copy;
- title: the name; text: the observations, one per line (the name when there are none);
- kind: entityType folded to the kind token rule (lowercase ASCII; 'entity' if nothing is left);
  tags: [entityType] as written; source: 'mcp-server-memory';
- metadata.mcp_memory: name, entityType, every relation touching the entity (sorted, without
  repeats), and unknown keys of the entity line under `extra`. A relation with an end that is
  no entity of the file is kept on the end that is one, dropped if neither is, and counted
  (RelationCounts) either way;
- each distinct relation between two entities of the file also becomes a link (get_related):
  its relationType as the relation when it is one of pgrecall's (case and spaces forgiven),
  otherwise relates_to with the relationType in the link's note;
- language detected like any write; vector pending until `pgrecall reembed` (or --reembed);
- no version or timestamps, so nothing proves an entity newer than its stored entry: under the
  default --on-conflict newer a changed entity is skipped (counted as skipped_not_newer: the
  entry may have been edited in pgrecall since), under overwrite it is updated (version + 1);
  an unchanged one is left alone.
Entities listed twice are merged (observations in order, without repeats).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psycopg

from pgrecall.domain.links import DEFAULT_RELATION, check_relation
from pgrecall.errors import InvalidInputError
from pgrecall.services.transfer.importer import ImportOptions, ImportReport, RecordValidator, run_import
from pgrecall.services.transfer.lines import LineError, max_line_bytes, read_jsonl

# Fixed forever: changing it would give every imported entity a new id.
MEMORY_NAMESPACE = uuid.UUID("6f0c7a52-4f3e-5b8e-9a51-2d6c3e1b7f40")
SOURCE = "mcp-server-memory"
_NOT_KIND = re.compile(r"[^a-z0-9_.:-]+")
_ENTITY_KEYS = {"type", "name", "entityType", "observations"}


def entity_id(name: str) -> uuid.UUID:
    """The entry id of a memory-server entity (stable across imports)."""
    return uuid.uuid5(MEMORY_NAMESPACE, name)


def entity_kind(entity_type: str) -> str:
    """entityType folded to pgrecall's kind token: 'Project Milestone' → 'project_milestone'."""
    folded = unicodedata.normalize("NFKD", entity_type).encode("ascii", "ignore").decode().lower()
    token = _NOT_KIND.sub("_", folded).strip("_.:-")[:64]
    return token or "entity"


@dataclass
class _Entity:
    line: int
    name: str
    entity_type: str
    observations: list[str]
    extra: dict[str, Any]
    relations: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RelationCounts:
    """What became of the file's relations (the summary's `relations`).

    seen: valid relation lines; duplicates: lines repeating an earlier relation; stored:
    distinct relations written into the metadata of at least one entity; dangling: distinct
    relations with an end that is no entity of the file (stored on the other end if that one
    is, else dropped: counted in `dropped` as well). seen = duplicates + stored + dropped.
    """

    seen: int = 0
    duplicates: int = 0
    stored: int = 0
    dangling: int = 0
    dropped: int = 0
    linked: int = 0  # distinct relations between two different entities of the file: made links


@dataclass
class MemoryGraph:
    """The entities of a memory file as import lines, plus the lines that were refused."""

    items: list[tuple[int, Any]]
    entities: int
    relations: RelationCounts


def _entity(line: int, obj: dict[str, Any]) -> _Entity | LineError:
    name, entity_type, observations = obj.get("name"), obj.get("entityType"), obj.get("observations", [])
    if not isinstance(name, str) or not name.strip():
        return LineError(line, "name: an entity needs a non-empty string name")
    if not isinstance(entity_type, str):
        return LineError(line, "entityType: must be a string")
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        return LineError(line, "observations: must be a list of strings")
    extra = {k: v for k, v in obj.items() if k not in _ENTITY_KEYS}
    return _Entity(line, name, entity_type, list(observations), extra)


def _relation(line: int, obj: dict[str, Any]) -> dict[str, str] | LineError:
    rel = {key: obj.get(key) for key in ("from", "to", "relationType")}
    for key, value in rel.items():
        if not isinstance(value, str) or not value:
            return LineError(line, f"{key}: a relation needs a non-empty string {key!r}")
    return {k: str(v) for k, v in rel.items()}


def _record(entity: _Entity) -> dict[str, Any]:
    observations = [o for o in entity.observations if o.strip()]
    meta: dict[str, Any] = {
        "name": entity.name,
        "entityType": entity.entity_type,
        "relations": sorted(entity.relations, key=lambda r: (r["from"], r["relationType"], r["to"])),
    }
    if entity.extra:
        meta["extra"] = entity.extra
    tag = entity.entity_type.strip()
    return {
        "id": str(entity_id(entity.name)),
        "kind": entity_kind(entity.entity_type),
        "source": SOURCE,
        "title": entity.name,
        "text": "\n".join(observations) if observations else entity.name,
        "tags": [tag] if tag and len(tag) <= 100 else [],
        "metadata": {"mcp_memory": meta},
    }


def _link_line(rel: dict[str, str]) -> dict[str, Any]:
    # The relation as a link line of the import format (services/transfer/links.py).
    try:
        relation, note = check_relation(rel["relationType"]), None
    except InvalidInputError:
        relation, note = DEFAULT_RELATION, f"memory relation: {rel['relationType'][:900]}"
    line = {"type": "link", "from_id": str(entity_id(rel["from"])), "relation": relation}
    return {**line, "to_id": str(entity_id(rel["to"])), **({"note": note} if note else {})}


def _links(
    entities: dict[str, _Entity], relations: list[tuple[int, dict[str, str]]]
) -> list[tuple[int, Any]]:
    first: dict[tuple[str, str, str], int] = {}
    for line, rel in relations:
        if rel["from"] in entities and rel["to"] in entities and rel["from"] != rel["to"]:
            first.setdefault((rel["from"], rel["relationType"], rel["to"]), line)
    return [
        (line, _link_line({"from": f, "relationType": t, "to": to})) for (f, t, to), line in first.items()
    ]


def _attach(entities: dict[str, _Entity], relations: list[dict[str, str]]) -> RelationCounts:
    # Each distinct relation goes into the metadata of each of its ends that is an entity.
    distinct = list({(r["from"], r["relationType"], r["to"]): r for r in relations}.values())
    stored = dangling = 0
    for rel in distinct:
        ends = [entities[n] for n in dict.fromkeys((rel["from"], rel["to"])) if n in entities]
        dangling += len(ends) < len({rel["from"], rel["to"]})
        stored += bool(ends)
        for end in ends:
            end.relations.append(rel)
    return RelationCounts(
        seen=len(relations),
        duplicates=len(relations) - len(distinct),
        stored=stored,
        dangling=dangling,
        dropped=len(distinct) - stored,
    )


def read_memory_json(
    path: Path, on_line: Callable[[], object] | None = None, *, line_limit: int
) -> MemoryGraph:
    """Parse a memory-server file into import lines (one per entity, at the entity's first line).

    A relation whose ends are not both entities of the file is no error (the memory server
    itself accepts those): it is kept on the end that exists, and counted as dangling.
    """
    entities: dict[str, _Entity] = {}
    relations: list[tuple[int, dict[str, str]]] = []
    errors: list[tuple[int, Any]] = []
    for line, obj in read_jsonl(path, on_line, line_limit=line_limit):
        if isinstance(obj, LineError):
            errors.append((line, obj))
            continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        parsed: _Entity | dict[str, str] | LineError
        if kind == "entity":
            parsed = _entity(line, obj)
        elif kind == "relation":
            parsed = _relation(line, obj)
        else:
            parsed = LineError(line, f"type: must be 'entity' or 'relation', got {kind!r}")
        if isinstance(parsed, LineError):
            errors.append((line, parsed))
        elif isinstance(parsed, _Entity):
            known = entities.get(parsed.name)
            if known is None:
                entities[parsed.name] = parsed
            else:
                known.observations += [o for o in parsed.observations if o not in known.observations]
        else:
            relations.append((line, parsed))
    counts = _attach(entities, [rel for _, rel in relations])
    links = _links(entities, relations)
    items = errors + [(e.line, _record(e)) for e in entities.values()] + links
    items.sort(key=lambda item: item[0])
    return MemoryGraph(items=items, entities=len(entities), relations=replace(counts, linked=len(links)))


def import_memory_json(
    conn: psycopg.Connection[dict[str, Any]],
    path: Path,
    validator: RecordValidator,
    options: ImportOptions,
    *,
    statement_timeout_ms: int = 30_000,
    on_total: Callable[[int], object] | None = None,
    on_item: Callable[[], object] | None = None,
) -> tuple[ImportReport, MemoryGraph]:
    """Import a memory-server file into `validator`'s default owner (see the module docstring)."""
    graph = read_memory_json(path, line_limit=max_line_bytes(validator.max_text_chars))
    if on_total is not None:
        on_total(len(graph.items))

    def items() -> Iterator[tuple[int, Any]]:
        for item in graph.items:
            yield item
            if on_item is not None:
                on_item()

    report = run_import(conn, items(), validator, options, statement_timeout_ms=statement_timeout_ms)
    return report, graph
