"""Snippets split into plain and matched pieces, so a front end can mark the matched words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.domain.language import CJK_RUN
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


def mark_cjk(pieces: list[Piece], terms: Sequence[str]) -> list[Piece]:
    """Marks the CJK terms ts_headline cannot see: the index holds bigrams of runs its parser keeps whole.

    A character is matched when a matched bigram covers it, or when it is a matched lone character
    (a run of one); neighbouring matches merge into one piece.
    """
    grams = {t for t in terms if CJK_RUN.fullmatch(t)}
    if not grams:
        return pieces
    out: list[Piece] = []
    for piece in pieces:
        text = piece.text
        if piece.matched or not CJK_RUN.search(text):
            out.append(piece)
            continue
        hit = [False] * len(text)
        for run in CJK_RUN.finditer(text):
            a, b = run.span()
            if b - a == 1 and text[a] in grams:
                hit[a] = True
            for i in range(a, b - 1):
                if text[i : i + 2] in grams:
                    hit[i] = hit[i + 1] = True
        start = 0
        for i in range(1, len(text) + 1):
            if i == len(text) or hit[i] != hit[start]:
                out.append(Piece(text[start:i], hit[start]))
                start = i
    return out


class Highlighter:
    """Marks the words of texts that match a search's stemmed terms, in each text's own language."""

    def __init__(self, pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> None:
        self.pool = pool

    def pieces(self, rows: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[Piece]]:
        """For each (text, regconfig, matched lexemes): the text as plain and matched pieces."""
        marked = highlight(self.pool, rows)
        return [mark_cjk(_pieces(text), terms) for text, (_, _, terms) in zip(marked, rows, strict=True)]
