"""Snippets split into plain and matched pieces, so a front end can mark the matched words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.store.highlight import MARK_END, MARK_START, highlight


@dataclass(frozen=True)
class Piece:
    """A run of snippet text; `matched` when it is a word the query's stemmed terms found."""

    text: str
    matched: bool


def _pieces(marked: str) -> list[Piece]:
    out: list[Piece] = []
    rest = marked
    while rest:
        start = rest.find(MARK_START)
        if start < 0:
            out.append(Piece(rest, False))
            break
        end = rest.find(MARK_END, start)
        if end < 0:
            out.append(Piece(rest.replace(MARK_START, ""), False))
            break
        if start:
            out.append(Piece(rest[:start], False))
        out.append(Piece(rest[start + 1 : end], True))
        rest = rest[end + 1 :]
    return out


class Highlighter:
    """Marks the words of texts that match a search's stemmed terms, in each text's own language."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def pieces(self, rows: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[Piece]]:
        """For each (text, regconfig, matched lexemes): the text as plain and matched pieces."""
        return [_pieces(marked) for marked in highlight(self.pool, rows)]
