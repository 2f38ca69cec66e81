"""Chinese, Japanese and Korean found by their words (migration 0017: runs indexed as bigrams)."""

from __future__ import annotations

import psycopg

from pgrecall.app import App
from pgrecall.db import migrate as schema
from pgrecall.domain.language import CJK_RUN
from pgrecall.evaluation.runner import cjk_bigram_tokens
from pgrecall.services.search import SearchOptions
from tests.helpers.search import lexical_hits
from tests.integration.test_search_stats import df_of, mismatches

LEXICAL = SearchOptions(mode="lexical")
JAPANESE = "PostgreSQLですべてのメモを検索できます。チームの知識を一か所にまとめましょう。"
CHINESE = "我们的团队使用代码审查来保证质量，每个合并请求都需要两位同事批准。"
KOREAN = "데이터베이스를 매일 백업하고 복구 절차를 문서로 남겨야 합니다."
ENGLISH_TSV = "SELECT tsv::text FROM entries WHERE language = 'english'::regconfig"
ENGLISH = "The team reviews every merge request before it reaches the main branch."


def test_words_inside_unspaced_sentences_match(app: App) -> None:
    ids = {
        name: str(app.entries.add("default", text=text).entry.id)
        for name, text in (("ja", JAPANESE), ("zh", CHINESE), ("ko", KOREAN), ("en", ENGLISH))
    }
    # A word inside a sentence, as a query of its own and inside a question in the same language.
    assert lexical_hits(app, "検索") == [ids["ja"]]
    assert lexical_hits(app, "知識をまとめる方法") == [ids["ja"]]
    assert lexical_hits(app, "代码") == [ids["zh"]]
    assert lexical_hits(app, "团队") == [ids["zh"]]
    assert lexical_hits(app, "复原") == []  # characters the text does not hold in that order
    # Korean: the noun is found with its object particle attached (데이터베이스를), and vice versa.
    assert lexical_hits(app, "데이터베이스") == [ids["ko"]]
    assert lexical_hits(app, "백업은") == [ids["ko"]]
    # A Latin word glued to Japanese matches both ways.
    assert lexical_hits(app, "PostgreSQL") == [ids["ja"]]
    assert lexical_hits(app, "postgresqlで") == [ids["ja"]]
    # English stays as it was: stemmed, and not matched by CJK queries.
    assert lexical_hits(app, "reviewing merge requests") == [ids["en"]]


def test_cjk_entries_have_no_unsupported_note(app: App) -> None:
    for iso, text in (("ja", JAPANESE), ("zh", CHINESE), ("ko", KOREAN)):
        written = app.entries.add("default", text=text)
        assert written.language.note is None and written.language.detected == iso
        assert written.language.regconfig == "simple" and written.language.how == "detected"
    thai = app.entries.add("default", text="กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย").language
    assert thai.how == "unsupported" and thai.note is not None
    assert app.entries.stats("default").unsupported_languages == {"th": 1}


def test_statistics_stay_exact_after_cjk_update_and_delete(app: App, db_url: str) -> None:
    a = app.entries.add("default", text=CHINESE).entry
    b = app.entries.add("default", text="代码库的团队文档放在维基上。").entry
    assert df_of(db_url, "团队") == 2 and df_of(db_url, "代码") == 2
    assert mismatches(db_url) == (0, 0)
    app.entries.update("default", a.id, text="我们的小组每周开会一次。")
    assert df_of(db_url, "团队") == 1 and df_of(db_url, "小组") == 1
    assert mismatches(db_url) == (0, 0)
    app.entries.update("default", b.id, title="团队的代码")
    assert df_of(db_url, "团队") == 1 and mismatches(db_url) == (0, 0)
    app.entries.delete("default", b.id)
    assert df_of(db_url, "团队") == 0 and df_of(db_url, "小组") == 1
    assert mismatches(db_url) == (0, 0)
    assert lexical_hits(app, "团队") == []
    app.entries.restore("default", b.id)
    assert lexical_hits(app, "团队") == [str(b.id)] and mismatches(db_url) == (0, 0)


def test_migration_bigrams_existing_entries_and_back(empty_db_url: str) -> None:
    url = empty_db_url
    schema.upgrade(url, "0016_id_tail_index")
    insert = (
        "INSERT INTO entries (body, content_hash, language) VALUES (%s, 'sha256:' || repeat('0', 64), %s)"
    )
    with psycopg.connect(url) as conn:
        conn.execute(insert, (JAPANESE, "simple"))
        conn.execute(insert, (ENGLISH, "english"))
        english_before = conn.execute(ENGLISH_TSV).fetchone()
    assert df_of(url, "検索") == 0
    schema.upgrade(url, "head")
    assert df_of(url, "検索") == 1 and df_of(url, "postgresql") == 1 and mismatches(url) == (0, 0)
    with psycopg.connect(url) as conn:
        english_after = conn.execute(ENGLISH_TSV).fetchone()
        storage = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'entries'::regclass AND attname = 'tsv'"
        ).fetchone()
    assert english_after == english_before and storage == ("m",)  # other text keeps its exact tsv
    schema.downgrade(url, "0016_id_tail_index")
    assert df_of(url, "検索") == 0 and mismatches(url) == (0, 0)
    schema.upgrade(url, "head")
    assert df_of(url, "検索") == 1 and mismatches(url) == (0, 0)


def test_the_eval_reference_splits_as_the_index_does(db_url: str) -> None:
    # `pgrecall eval`'s bigram BM25 reference and the stored tsv must see the same CJK terms.
    texts = [JAPANESE, CHINESE, KOREAN, "ｶﾀｶﾅ 々 日本語テキスト abc"]
    with psycopg.connect(db_url) as conn:
        for text in texts:
            row = conn.execute(
                "SELECT array_agg(t.lexeme ORDER BY t.lexeme) FROM unnest(to_tsvector('simple', "
                "pgrecall_cjk_bigrams(%s))) AS t",
                (text,),
            ).fetchone()
            assert row is not None
            indexed = {lexeme for lexeme in row[0] if CJK_RUN.search(lexeme)}
            reference = {
                t for t in cjk_bigram_tokens(text, r"(?u)\b\w\w+\b", frozenset()) if CJK_RUN.search(t)
            }
            assert indexed == reference


def test_matched_cjk_words_are_marked(app: App) -> None:
    app.entries.add("default", text=CHINESE)
    result = app.search.search("default", "代码审查", top_k=1, options=LEXICAL)
    terms = result.hits[0].breakdown.matched_terms
    assert terms == ["代码", "审查", "码审"]
    (pieces,) = app.highlighter.pieces([(CHINESE, "simple", terms)])
    assert [p.text for p in pieces if p.matched] == ["代码审查"]
