"""Languages this server cannot stem (Japanese, Chinese, Korean: bigrams; Thai…), through an MCP client."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

from pgrecall.config import Settings
from pgrecall.domain.language import SEGMENTED
from tests.helpers.mcp_calls import call, call_error
from tests.helpers.subprocess_server import run_pgrecall

pytestmark = pytest.mark.anyio

TEXTS = {
    "ja": "東京タワーの高さは三百三十三メートルで、展望台から富士山が見えることもあります。",
    "zh": "北京是中华人民共和国的首都，也是全国的政治、文化和国际交往中心。",
    "ko": "서울은 대한민국의 수도이며 가장 큰 도시로, 한강이 도시 한가운데를 흐릅니다.",
    "th": "กรุงเทพมหานครเป็นเมืองหลวงและนครที่มีประชากรมากที่สุดของประเทศไทย",
}
GERMAN = "Die Häuser am See sind im Winter kalt und still."


def _unsupported(language: dict[str, object], iso: str) -> None:
    assert {k: language[k] for k in ("regconfig", "iso", "how", "detected")} == {
        "regconfig": "simple",
        "iso": None,
        "how": "unsupported",
        "detected": iso,
    }
    note = language["note"]
    assert isinstance(note, str) and note.startswith(f"{iso} has no text-search config") and "simple" in note


def _segmented(language: dict[str, object], iso: str, how: str = "detected") -> None:
    # Chinese, Japanese and Korean: 'simple', searched by character bigrams (migration 0017), no note.
    assert language == {"regconfig": "simple", "iso": iso, "how": how, "detected": iso, "note": None}


def _stored(language: dict[str, object], iso: str) -> None:
    if iso in SEGMENTED:
        _segmented(language, iso)
    else:
        _unsupported(language, iso)


@pytest.mark.parametrize("iso", sorted(TEXTS))
async def test_unstemmable_text_is_stored_simple_and_said_so(client: Client, iso: str) -> None:
    added = await call(client, "add_entry", text=TEXTS[iso], tags=["city"])
    _stored(added["language"], iso)
    fetched = await call(client, "get_entry", id=added["id"])
    assert fetched["language"] == "simple" and fetched["detected_language"] == iso
    assert fetched["text"] == TEXTS[iso]
    listed = await call(client, "list_entries")
    assert [(e["id"], e["detected_language"]) for e in listed["entries"]] == [(added["id"], iso)]


async def test_stemmable_text_has_no_unsupported_fields(client: Client) -> None:
    added = await call(client, "add_entry", text=GERMAN)
    assert added["language"] == {
        "regconfig": "german",
        "iso": "de",
        "how": "detected",
        "detected": None,
        "note": None,
    }
    short = await call(client, "add_entry", text="ok")  # too short to detect: 'simple', not unsupported
    assert short["language"]["how"] == "default" and short["language"]["detected"] is None
    fetched = await call(client, "get_entry", id=added["id"])
    assert fetched["detected_language"] is None


async def test_stats_counts_unsupported_languages(client: Client) -> None:
    ids = {iso: (await call(client, "add_entry", text=text))["id"] for iso, text in TEXTS.items()}
    await call(client, "add_entry", text="大阪城は豊臣秀吉によって築かれた城で、今は公園になっています。")
    await call(client, "add_entry", text=GERMAN)
    await call(client, "add_entry", text="ok")
    stats = await call(client, "stats")
    assert stats["unsupported_languages"] == {"th": 1}  # ja, zh, ko: searched by bigrams
    assert stats["by_language"] == {"german": 1, "simple": 6}
    await call(client, "delete_entry", id=ids["ja"])
    await call(client, "update_entry", id=ids["th"], language="en")  # the caller re-stems it: not counted
    stats = await call(client, "stats")
    assert stats["unsupported_languages"] == {}


async def test_explicit_code_without_config_is_unsupported_not_refused(client: Client) -> None:
    added = await call(client, "add_entry", text="すし", language="ja")
    _segmented(added["language"], "ja", "explicit")
    # Any real ISO 639-1 language we cannot stem, whatever the text's script.
    polish = await call(client, "add_entry", text="Dom nad jeziorem jest piękny zimą.", language="PL")
    _unsupported(polish["language"], "pl")
    # A code that names no language is still a mistake.
    assert "unknown language 'xx'" in await call_error(client, "add_entry", text="hello", language="xx")
    explicit = await call(client, "add_entry", text="すし", language="de")
    assert explicit["language"] == {
        "regconfig": "german",
        "iso": "de",
        "how": "explicit",
        "detected": None,
        "note": None,
    }
    # Filters still take only configs this server has: 'ja' names no set of entries to filter on.
    assert "unknown language 'ja'" in await call_error(client, "list_entries", language="ja")
    stats = await call(client, "stats")
    assert stats["unsupported_languages"] == {"pl": 1}


async def test_update_keeps_or_clears_the_detected_language(client: Client) -> None:
    added = await call(client, "add_entry", text=TEXTS["ko"])
    retitled = await call(client, "update_entry", id=added["id"], title="Seoul")
    assert retitled["language"]["how"] == "kept" and retitled["language"]["detected"] == "ko"
    assert retitled["entry"]["detected_language"] == "ko"
    # A 'simple' entry whose text changes is detected again.
    rewritten = await call(client, "update_entry", id=added["id"], text=TEXTS["zh"])
    _segmented(rewritten["language"], "zh")
    german = await call(client, "update_entry", id=added["id"], text=GERMAN)
    assert german["language"]["how"] == "detected" and german["entry"]["language"] == "german"
    assert german["entry"]["detected_language"] is None
    declared = await call(client, "update_entry", id=added["id"], language="th")
    _unsupported(declared["language"], "th")
    assert declared["entry"]["language"] == "simple" and declared["entry"]["detected_language"] == "th"
    stats = await call(client, "stats")
    assert stats["unsupported_languages"] == {"th": 1}


async def test_search_finds_cjk_words_inside_sentences(client: Client) -> None:
    # Han, kana and Hangul runs are indexed as overlapping bigrams: a word inside an unspaced
    # sentence matches lexically, and so does a Latin word glued to Japanese.
    added = await call(client, "add_entry", text="東京タワー 展望台 富士山")
    await call(client, "add_entry", text=GERMAN)
    exact = await call(client, "search", query="富士山", mode="lexical")
    assert exact["status"] == "ok" and [h["id"] for h in exact["hits"]] == [added["id"]]
    assert exact["hits"][0]["language"] == "simple"
    part = await call(client, "search", query="富士", mode="lexical")
    assert [h["id"] for h in part["hits"]] == [added["id"]]
    sentence = await call(client, "search", query="東京タワーの展望台から富士山は見えますか", mode="lexical")
    assert [h["id"] for h in sentence["hits"]] == [added["id"]]
    for text in TEXTS.values():
        result = await call(client, "search", query=text, mode="lexical")
        assert result["status"] in {"ok", "no_matches"}


def test_cli_stats_prints_unsupported_languages(settings: Settings, tmp_path: Path) -> None:
    from pgrecall.app import App

    with App(settings, embedder=None) as app:
        app.entries.add(settings.owner, text=TEXTS["th"])
    assert settings.database_url is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env |= {
        "PGRECALL_DATABASE_URL": settings.database_url.get_secret_value(),
        "PGRECALL_HOME": str(tmp_path / "home"),
        "PGRECALL_MODELS": "in-process",
    }
    result = run_pgrecall(env, "stats")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["unsupported_languages"] == {"th": 1}
