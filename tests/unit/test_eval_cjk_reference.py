"""The bigram BM25 reference of `pgrecall eval` for Chinese, Japanese and Korean texts."""

from __future__ import annotations

from pgrecall.evaluation import runner

PATTERN = runner.Bm25Settings("english", "english", "en").token_pattern


def test_runs_become_overlapping_bigrams_and_other_words_stay() -> None:
    tokens = runner.cjk_bigram_tokens("PostgreSQLですね。The 日 ＤＢを使う", PATTERN, frozenset({"the"}))
    assert tokens == ["postgresql", "です", "すね", "日", "db", "を使", "使う"]


def test_a_word_inside_a_sentence_finds_its_document() -> None:
    ids = ["zh", "en", "ko"]
    texts = [
        "我们的团队使用代码审查来保证质量。",
        "The team reviews the code before merging.",
        "데이터베이스를 매일 백업합니다.",
    ]
    run, _ = runner.bm25_by_language_run(
        ids,
        texts,
        ["zh", "en", "ko"],
        {"q1": "代码", "q2": "데이터베이스", "q3": "reviewing code"},
        {"q1": "zh", "q2": "ko", "q3": "en"},
        runner.Bm25Settings("english", "english", "en"),
    )
    assert run["q1"] == ["zh"] and run["q2"] == ["ko"] and run["q3"] == ["en"]
