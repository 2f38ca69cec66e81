"""Matched CJK words marked in snippets (the index holds their bigrams, ts_headline sees whole runs)."""

from __future__ import annotations

from pgrecall.domain.text import make_snippet
from pgrecall.services.highlight import Piece, mark_cjk


def _marked(text: str, terms: list[str]) -> list[tuple[str, bool]]:
    return [(p.text, p.matched) for p in mark_cjk([Piece(text, False)], terms)]


def test_bigrams_mark_the_word_inside_the_sentence() -> None:
    assert _marked("我们的团队使用代码审查。", ["代码", "码审"]) == [
        ("我们的团队使用", False),
        ("代码审", True),
        ("查。", False),
    ]
    assert _marked("데이터베이스를 백업", ["데이", "이터"]) == [("데이터", True), ("베이스를 백업", False)]


def test_lone_characters_and_other_pieces() -> None:
    assert _marked("x 日 y 日本", ["日"]) == [("x ", False), ("日", True), (" y 日本", False)]
    kept = [Piece("PostgreSQL", True), Piece("です", False)]
    assert mark_cjk(kept, ["postgresql"]) == kept


def test_the_snippet_opens_at_a_bigram_inside_a_long_run() -> None:
    body = "前置きの文章です。" * 40 + "ここで代码审查の話をします。" + "後書きの文章です。" * 40
    out = make_snippet(body, ["代码", "码审"], limit=120)
    assert out.startswith("… ") and "代码审查" in out
