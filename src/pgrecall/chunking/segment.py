"""Cut points inside a span of text: paragraphs, lines, sentences, words, and the splitter.

Every function works on offsets into the one normalized text, so every piece it returns is a
verbatim span of it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

Span = tuple[int, int]
Cutter = Callable[[str, int, int], list[int]]

_BLANK_LINE = re.compile(r"\n[ \t]*\n\s*")
# Western sentence end: terminal punctuation, closing quotes or brackets, then whitespace.
_WESTERN_END = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s)")
# CJK sentence end: ideographic full stop, fullwidth ! ? ; (and .) need no space after them.
_CJK_END = re.compile(r"[。！？；．｡]+[」』）〕】\"'”’]*")
# Words before a period that do not end a sentence (a single letter is an initial).
_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "etc",
        "vs",
        "cf",
        "al",
        "fig",
        "figs",
        "no",
        "nos",
        "vol",
        "pp",
        "ch",
        "sec",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "inc",
        "ltd",
        "co",
        "approx",
        "z.b",
        "bzw",
        "usw",
        "ca",
        "nr",
        "s.a",
        "u.a",
    ]
)


def trim(text: str, start: int, end: int) -> Span:
    """The span without whitespace at either end (empty spans collapse to (start, start))."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def paragraphs(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Runs of non-blank lines, trimmed."""
    end = len(text) if end is None else end
    out = []
    pos = start
    for match in _BLANK_LINE.finditer(text, start, end):
        out.append(trim(text, pos, match.start()))
        pos = match.end()
    out.append(trim(text, pos, end))
    return [(s, e) for s, e in out if e > s]


def line_cuts(text: str, start: int, end: int) -> list[int]:
    """The start of every line after the first."""
    return [i + 1 for i in range(start, end - 1) if text[i] == "\n"]


def _abbreviation(text: str, dot: int) -> bool:
    word_start = dot
    while word_start > 0 and (text[word_start - 1].isalpha() or text[word_start - 1] == "."):
        word_start -= 1
    word = text[word_start:dot].lower()
    return len(word) == 1 or word in _ABBREVIATIONS


def sentence_cuts(text: str, start: int, end: int) -> list[int]:
    """Offsets where a sentence ends, for prose in any script.

    Western scripts: [.!?…] (plus closing quotes/brackets) followed by whitespace and a character
    that is not a lower-case letter, unless the word before a single '.' is an abbreviation or an
    initial. CJK: after 。！？； (and their halfwidth/fullwidth forms), no space needed.
    """
    cuts = set()
    for match in _WESTERN_END.finditer(text, start, end):
        after = match.end()
        nxt = after
        while nxt < end and text[nxt].isspace():
            nxt += 1
        if nxt >= end or text[nxt].islower():
            continue
        if text[match.start() : match.end()].startswith(".") and _abbreviation(text, match.start()):
            continue
        cuts.add(after)
    for match in _CJK_END.finditer(text, start, end):
        if match.end() < end:
            cuts.add(match.end())
    return sorted(c for c in cuts if start < c < end)


def word_cuts(text: str, start: int, end: int) -> list[int]:
    """The start of every word (after a whitespace run)."""
    return [i for i in range(start + 1, end) if text[i - 1].isspace() and not text[i].isspace()]


def pack(spans: Sequence[Span], max_chars: int) -> list[list[Span]]:
    """Consecutive spans grouped greedily while a group's covering span fits in max_chars."""
    groups: list[list[Span]] = []
    for span in spans:
        if groups and span[1] - groups[-1][0][0] <= max_chars:
            groups[-1].append(span)
        else:
            groups.append([span])
    return groups


def _rebalance(groups: list[list[Span]], max_chars: int, min_chars: int) -> None:
    """Move trailing pieces forward while the last group is shorter than min_chars."""
    while len(groups) > 1 and len(groups[-2]) > 1:
        last, before = groups[-1], groups[-2]
        if last[-1][1] - last[0][0] >= min_chars or last[-1][1] - before[-1][0] > max_chars:
            return
        last.insert(0, before.pop())


def _hard_cuts(text: str, start: int, end: int, max_chars: int) -> list[Span]:
    out = []
    while end - start > max_chars:
        limit = start + max_chars
        cut = limit
        for i in range(limit, start + max_chars // 2, -1):
            if text[i].isspace():
                cut = i
                break
        out.append(trim(text, start, cut))
        start = trim(text, cut, end)[0]
    out.append((start, end))
    return [s for s in out if s[1] > s[0]]


def split(text: str, span: Span, max_chars: int, min_chars: int, cutters: Sequence[Cutter]) -> list[Span]:
    """`span` cut into pieces of at most max_chars, at the first cutter's points where they suffice.

    A piece still too long is cut with the next cutter; past the last one it is cut at
    max_chars (at a space when there is one in the second half of the window).
    """
    start, end = trim(text, *span)
    if end - start <= max_chars:
        return [(start, end)] if end > start else []
    if not cutters:
        return _hard_cuts(text, start, end, max_chars)
    bounds = [start, *cutters[0](text, start, end), end]
    pieces = [trim(text, a, b) for a, b in itertools.pairwise(bounds)]
    pieces = [p for p in pieces if p[1] > p[0]]
    if len(pieces) <= 1:
        return split(text, (start, end), max_chars, min_chars, cutters[1:])
    out: list[Span] = []
    small: list[Span] = []
    for piece in pieces:
        if piece[1] - piece[0] <= max_chars:
            small.append(piece)
            continue
        out.extend(_grouped(text, small, max_chars, min_chars))
        small = []
        out.extend(split(text, piece, max_chars, min_chars, cutters[1:]))
    out.extend(_grouped(text, small, max_chars, min_chars))
    return out


def _grouped(text: str, spans: list[Span], max_chars: int, min_chars: int) -> list[Span]:
    groups = pack(spans, max_chars)
    _rebalance(groups, max_chars, min_chars)
    return [(g[0][0], g[-1][1]) for g in groups]


PROSE: tuple[Cutter, ...] = (sentence_cuts, line_cuts, word_cuts)
LINES: tuple[Cutter, ...] = (line_cuts, sentence_cuts, word_cuts)
