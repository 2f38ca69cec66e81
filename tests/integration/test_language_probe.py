"""A long query is stemmed whole only in the languages its longest words are in (the probe)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from pgrecall.domain.text import content_hash
from pgrecall.store import search as store

NOTES = {
    "german": [
        "Der Kindergarten schließt freitags schon um vierzehn Uhr wegen der Teamsitzung.",
        "Die Heizungsanlage im Verwaltungsgebäude wird jeden Oktober gewartet und geprüft.",
        "Das Brot wird mit Sauerteig gebacken und muss zwei Stunden gehen.",
    ],
    "english": [
        "The kindergarten pickup moved to the side entrance during the renovation.",
        "Nightly backups of the database cluster are kept for thirty days.",
        "The quarterly report summarises revenue in the northern region.",
    ],
    "french": [
        "La piscine municipale est ouverte le dimanche matin pendant les vacances scolaires.",
        "Le rapport trimestriel résume les recettes de la région septentrionale.",
        "Les sauvegardes nocturnes de la base de données sont conservées trente jours.",
    ],
}
LONG_GERMAN = (
    "Wann wird die Heizungsanlage im Verwaltungsgebäude gewartet, und wer prüft danach "
    "die Teamsitzung im Kindergarten wegen der Renovierung?"
)


@pytest.fixture
def url(db_url: str) -> str:
    with psycopg.connect(db_url) as conn:
        for language, bodies in NOTES.items():
            for body in bodies:
                conn.execute(
                    "INSERT INTO entries (body, content_hash, language) VALUES (%s, %s, %s::regconfig)",
                    (body, content_hash(body), language),
                )
    return db_url


def stemmed_languages(url: str, params: store.SearchParams) -> set[str]:
    """The languages the statement stems the whole query in: its own CTEs up to `stemmed`."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        rows = conn.execute(store.SQL_STEMMED_LANGUAGES, store.bind(params)).fetchall()
        return {r["cfg"] for r in rows}


def lexical(query: str, **tuning: Any) -> store.SearchParams:
    return store.SearchParams(
        owner="default", query=query, top_k=5, use_vector=False, tuning=replace(store.Tuning(), **tuning)
    )


def search(url: str, params: store.SearchParams) -> list[tuple[str, str]]:
    """The statement as SearchStore runs it: knobs, then the search, in one transaction."""
    with psycopg.connect(url, row_factory=dict_row) as conn, conn.transaction():
        conn.execute(store.SQL_SET_KNOBS, store.knobs(params.tuning, False))
        found = store.to_rows(conn.execute(store.build_statement(params), store.bind(params)).fetchall())
    return [(row.language, row.body) for row in found.rows]


def test_a_long_query_is_stemmed_only_in_the_languages_its_longest_words_are_in(url: str) -> None:
    assert len(set(LONG_GERMAN.lower().split())) > store.Tuning().language_probe_words
    assert stemmed_languages(url, lexical(LONG_GERMAN)) == {"german"}
    # Without the probe every language stems it, and the answer is the same.
    unprobed = lexical(LONG_GERMAN, language_probe_words=1000)
    assert stemmed_languages(url, unprobed) == {"german", "english", "french"}
    probed_hits = search(url, lexical(LONG_GERMAN))
    assert probed_hits[0][1].startswith("Die Heizungsanlage")
    assert probed_hits == search(url, unprobed)


def test_a_short_query_is_stemmed_in_every_language(url: str) -> None:
    assert stemmed_languages(url, lexical("Kindergarten Renovierung")) == {"german", "english", "french"}


def test_a_probe_no_language_holds_falls_back_to_every_language(url: str) -> None:
    # The nine longest words are in no note; the short word that is ("Brot") is still searched.
    query = (
        "Zwischenablage Quellcodeverwaltung Bildschirmauflösung Druckerwarteschlange "
        "Tastaturbelegung Sprachausgabe Festplattenverschlüsselung Dateisystemprüfung "
        "Netzwerkfreigabe Brot"
    )
    assert stemmed_languages(url, lexical(query)) == {"german", "english", "french"}
    assert search(url, lexical(query))[0][1].startswith("Das Brot")


def test_the_language_filter_still_bounds_the_probe(url: str) -> None:
    params = lexical(LONG_GERMAN)
    params = replace(params, filters=replace(params.filters, language="english"))
    assert stemmed_languages(url, params) <= {"english"}


# Its eight longest words: six are in the German notes, two ("renovation", "summarises") in the English.
MOSTLY_GERMAN = (
    "Wird die Heizungsanlage im Verwaltungsgebäude nach der Teamsitzung gewartet, "
    "Sauerteig gebacken, renovation summarises"
)
# Its eight longest words: four German, four English.
HALF_AND_HALF = (
    "Heizungsanlage Verwaltungsgebäude Teamsitzung gewartet renovation quarterly summarises northern revenue"
)


def test_a_language_holding_under_half_of_what_the_best_holds_is_not_stemmed(url: str) -> None:
    assert store.Tuning().language_probe_ratio == 0.5
    # English holds 2 of the 6 probe words German holds: a third, kept only by a looser probe.
    assert stemmed_languages(url, lexical(MOSTLY_GERMAN)) == {"german"}
    assert stemmed_languages(url, lexical(MOSTLY_GERMAN, language_probe_ratio=0.25)) == {"german", "english"}


def test_a_query_written_in_two_languages_is_stemmed_in_both(url: str) -> None:
    assert stemmed_languages(url, lexical(HALF_AND_HALF)) == {"german", "english"}
    hits = search(url, lexical(HALF_AND_HALF))
    assert {language for language, _ in hits[:2]} == {"german", "english"}
    assert {body.split()[1] for _, body in hits[:2]} == {"Heizungsanlage", "quarterly"}
