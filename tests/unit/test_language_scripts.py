"""The script check for languages without a text-search config: what it says, and what it costs."""

from __future__ import annotations

import pytest

from pgrecall.detection.short_text import SAME_STEMMER
from pgrecall.domain.language import (
    CONFIG_TO_ISO,
    ISO_TO_CONFIG,
    SCRIPT_SAMPLE_CHARS,
    Detection,
    LanguageCatalog,
    LanguageDetector,
    unstemmable_script,
)
from pgrecall.errors import InvalidInputError

CATALOG = LanguageCatalog({"simple", "english", "german"})


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("東京タワーの高さは三百三十三メートルです。", "ja"),
        ("PostgreSQLのGINインデックスとpgvectorの設定について", "ja"),  # English names, Japanese text
        ("北京是中华人民共和国的首都。", "zh"),
        ("서울은 대한민국의 수도입니다.", "ko"),
        ("กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "th"),
        ("The restaurant is called 寿司屋 and the fish is very fresh", None),  # one quoted word
        ("Die Häuser am See sind im Winter kalt.", None),
        ("Дома у озера очень красивые.", None),
        ("", None),
    ],
)
def test_script_names_the_language(text: str, iso: str | None) -> None:
    assert unstemmable_script(text) == iso


class CountingBackend:
    """A detection backend that only counts how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> Detection:
        self.calls += 1
        return Detection("de", 0.9)


def test_unstemmable_script_never_reaches_the_model() -> None:
    backend = CountingBackend()
    detector = LanguageDetector(CATALOG, backend)
    for text, iso in (
        ("東京タワーの高さ", "ja"),
        ("北京是首都", "zh"),
        ("서울은 수도", "ko"),
        ("กรุงเทพมหานคร", "th"),
    ):
        resolved = detector.resolve(None, text)
        assert resolved.regconfig == "simple" and resolved.detected == iso
        # Chinese, Japanese and Korean are searched by bigrams (migration 0017): no "unsupported" note.
        segmented = iso != "th"
        assert resolved.how == ("detected" if segmented else "unsupported")
        assert (resolved.note is None) == segmented and resolved.iso == (iso if segmented else None)
    assert backend.calls == 0
    assert detector.resolve(None, "Die Häuser am See sind kalt.").how == "detected"
    assert backend.calls == 1


def test_script_check_reads_a_bounded_sample() -> None:
    # The verdict depends on the first SCRIPT_SAMPLE_CHARS characters only, however long the text.
    english_then_japanese = "a" * SCRIPT_SAMPLE_CHARS + "東京" * 100_000
    assert unstemmable_script(english_then_japanese) is None
    assert unstemmable_script("東京タワー" + "a" * 100_000) is None
    assert unstemmable_script("東京タワー" * 1000 + "a" * 100_000) == "ja"


def test_malay_is_stemmed_as_indonesian() -> None:
    catalog = LanguageCatalog({"simple", "english", "indonesian"})
    assert catalog.resolve_for_entry("ms").regconfig == "indonesian"
    assert catalog.resolve_for_entry("id").regconfig == "indonesian"
    assert CONFIG_TO_ISO["indonesian"] == "id"
    # The detectors pool the codes SAME_STEMMER names; each pair must share a config here.
    assert all(ISO_TO_CONFIG[a] == ISO_TO_CONFIG[b] for a, b in SAME_STEMMER.items())


def test_explicit_codes() -> None:
    assert CATALOG.resolve_for_entry(" JA ").detected == "ja"
    assert CATALOG.resolve_for_entry("de").how == "explicit"
    assert CATALOG.resolve_for_entry("simple").how == "explicit"
    with pytest.raises(InvalidInputError, match="unknown language 'jp'"):
        CATALOG.resolve_for_entry("jp")
    # Filters (resolve_explicit) still take only configs the server has.
    with pytest.raises(InvalidInputError, match="unknown language 'ja'"):
        CATALOG.resolve_explicit("ja")
