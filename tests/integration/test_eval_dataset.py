"""`pgrecall eval` inputs: BEIR validation errors, the vector cache file, URL rewriting, query clipping."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrecall.cli.root import app as cli_app
from pgrecall.domain.validation import MAX_QUERY_CHARS
from pgrecall.errors import InvalidInputError
from pgrecall.evaluation import DatasetError, load_dataset, parse_modes
from pgrecall.evaluation.loader import with_database
from pgrecall.evaluation.runner import clip_query
from pgrecall.evaluation.vectors import VectorCache, cache_dir, model_dir_name, text_key

TINY = Path(__file__).resolve().parents[1] / "data" / "beir-tiny"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A writable copy of the tiny dataset, to break."""
    target = tmp_path / "tiny"
    shutil.copytree(TINY, target)
    return target


def _error(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return str(info.value)


def test_tiny_dataset_loads() -> None:
    ds = load_dataset(TINY)
    assert len(ds.docs) == 30 and len(ds.queries) == 7
    # q7 has no judgement: it is not evaluated.
    assert list(ds.evaluated_queries()) == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert list(ds.evaluated_queries(limit=2)) == ["q1", "q2"]
    assert ds.qrels["q5"]["d10"] == 0  # a judged non-relevant pair is kept


def test_missing_directory_and_files(tmp_path: Path, tiny: Path) -> None:
    assert "not a directory" in _error(tmp_path / "nope")
    (tiny / "queries.jsonl").unlink()
    shutil.rmtree(tiny / "qrels")
    message = _error(tiny)
    assert "missing queries.jsonl, qrels/test.tsv" in message


def test_malformed_corpus_lines_are_named_with_line_numbers(tiny: Path) -> None:
    lines = (tiny / "corpus.jsonl").read_text().splitlines()
    lines[2] = '{"_id": "d3", "title": "broken'
    lines[4] = json.dumps({"title": "no id", "text": "x"})
    lines[6] = json.dumps({"_id": "d1", "title": "again", "text": "duplicate"})
    lines[8] = json.dumps({"_id": "d9", "title": "t", "text": 42})
    lines[10] = "[1, 2]"
    (tiny / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    message = _error(tiny)
    assert "corpus.jsonl:3: not valid JSON" in message
    assert "corpus.jsonl:5: '_id' must be a non-empty string" in message
    assert "corpus.jsonl:7: duplicate _id 'd1' (first on line 1)" in message
    assert "corpus.jsonl:9: 'text' must be a string, got int" in message
    assert "corpus.jsonl:11: expected a JSON object, got list" in message


def test_malformed_queries_are_named(tiny: Path) -> None:
    with (tiny / "queries.jsonl").open("a") as fh:
        fh.write(json.dumps({"_id": "q8"}) + "\n")
        fh.write(json.dumps({"_id": "q9", "text": "   "}) + "\n")
    message = _error(tiny)
    assert "queries.jsonl:8: 'text' is missing" in message
    assert "queries.jsonl:9: query 'q9' has an empty 'text'" in message


def test_qrels_with_unknown_ids_and_bad_fields(tiny: Path) -> None:
    with (tiny / "qrels" / "test.tsv").open("a") as fh:
        fh.write("q404\td1\t1\n")  # line 22
        fh.write("q1\td404\t1\n")  # line 23
        fh.write("q1\td1\thigh\n")  # line 24
        fh.write("q1\td1\n")  # line 25
    message = _error(tiny)
    assert "qrels/test.tsv:22: query-id 'q404' is not in queries.jsonl" in message
    assert "qrels/test.tsv:23: corpus-id 'd404' is not in corpus.jsonl" in message
    assert "qrels/test.tsv:24: score 'high' is not an integer" in message
    assert "qrels/test.tsv:25: expected 3 tab-separated fields" in message


def test_qrels_header_is_optional_and_nothing_judged_is_refused(tiny: Path) -> None:
    qrels = tiny / "qrels" / "test.tsv"
    body = qrels.read_text().splitlines()[1:]
    qrels.write_text("\n".join(body) + "\n")
    assert len(load_dataset(tiny).qrels) == 6  # no header: the first line is data, not lost
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t0\n")
    assert "no query has a relevant" in _error(tiny)


def test_cli_reports_dataset_errors_and_bad_modes(tiny: Path, tmp_path: Path) -> None:
    (tiny / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\nnot json\n')
    env = {"PGRECALL_HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(cli_app, ["eval", "--dataset", str(tiny)], env=env)
    assert result.exit_code == 1
    assert "corpus.jsonl:2: not valid JSON" in result.output
    result = CliRunner().invoke(cli_app, ["eval", "--dataset", str(TINY), "--modes", "hybrid,fuzzy"], env=env)
    assert result.exit_code == 2
    assert "modes: must be a comma-separated subset of hybrid,vector,lexical" in result.output


def test_parse_modes() -> None:
    assert parse_modes("lexical, hybrid,lexical") == ["lexical", "hybrid"]
    with pytest.raises(InvalidInputError):
        parse_modes(" , ")


def test_vector_cache_round_trip(tmp_path: Path) -> None:
    with VectorCache(tmp_path, "m:odel/1", 3) as cache:
        cache.put_many([(text_key("a"), [0.1, 0.2, 0.3]), (text_key("b"), [1.0, 0.0, 0.0])])
    assert cache.path.parent == cache_dir(tmp_path, "m:odel/1")
    with VectorCache(tmp_path, "m:odel/1", 3) as cache:
        got = cache.get_many([text_key("a"), text_key("b"), text_key("c")])
        assert len(cache) == 2
    assert set(got) == {text_key("a"), text_key("b")}
    # float32 on disk: what pgvector keeps anyway.
    assert got[text_key("a")] == pytest.approx([0.1, 0.2, 0.3], abs=1e-7)
    # A vector of the wrong length (another dimension under the same name) is a miss, not a crash.
    with VectorCache(tmp_path, "m:odel/1", 4) as cache:
        assert cache.get_many([text_key("a")]) == {}
    assert model_dir_name("a:b") != model_dir_name("a_b")


def test_with_database_rewrites_path_and_dbname() -> None:
    assert (
        with_database("postgresql://u@/pgrecall?host=/tmp/run", "x_1") == "postgresql://u@/x_1?host=/tmp/run"
    )
    assert (
        with_database("postgresql://u:p@h1:5432,h2/app?target_session_attrs=read-write", "e")
        == "postgresql://u:p@h1:5432,h2/e?target_session_attrs=read-write"
    )
    assert with_database("postgresql://h/?dbname=app&sslmode=require", "e") == (
        "postgresql://h/e?dbname=e&sslmode=require"
    )


def test_clip_query_at_a_word_boundary() -> None:
    assert clip_query("  what   is\nlift ") == "what is lift"
    long = " ".join(["aerodynamic"] * 200)
    clipped = clip_query(long)
    assert len(clipped) <= MAX_QUERY_CHARS and clipped.endswith("aerodynamic")
