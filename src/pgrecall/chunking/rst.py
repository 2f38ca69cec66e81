"""reStructuredText: section titles found by docutils give the outline of the source text."""

from __future__ import annotations

from docutils import nodes
from docutils.core import publish_doctree

from pgrecall.chunking.model import Heading

# Parse only: no file inclusion, no raw passthrough, no messages, never halt.
_SETTINGS = {
    "report_level": 5,
    "halt_level": 5,
    "warning_stream": False,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "doctitle_xform": False,
    "sectsubtitle_xform": False,
    "docinfo_xform": False,
}


def headings(text: str) -> tuple[Heading, ...]:
    """Section titles with their nesting depth, spanning title line, underline and any overline."""
    try:
        doctree = publish_doctree(text, settings_overrides=_SETTINGS)
    except Exception:
        # Markup docutils cannot take leaves the outline empty; the text still chunks by paragraphs.
        return ()
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    out = []
    for section in doctree.findall(nodes.section):
        title = section[0] if len(section) and isinstance(section[0], nodes.title) else None
        # docutils reports a section title at the line of its underline (1-based).
        if title is None or title.line is None or not 2 <= title.line <= len(lines):
            continue
        under = title.line - 1
        mark = lines[under].strip()
        if len(set(mark)) != 1 or mark[0].isalnum():
            continue  # not where docutils said: leave the outline without it
        first = under - 1
        if first > 0 and lines[first - 1].strip() and lines[first - 1].strip() == lines[under].strip():
            first -= 1
        level = 1 + sum(1 for p in _ancestors(section) if isinstance(p, nodes.section))
        end = starts[under] + len(lines[under])
        out.append(Heading(level, " ".join(title.astext().split()), starts[first], end))
    return tuple(sorted(out, key=lambda h: h.start))


def _ancestors(node: nodes.Node) -> list[nodes.Node]:
    out = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out
