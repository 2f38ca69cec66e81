"""Figures quoted in the docs are the ones in the committed JSON their command wrote: they cannot drift.

Each check names the page, the JSON (written by the command the page names next to the figure) and
how the figure is read from both. A re-run that changes a JSON fails here until the page says so.
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ROWS = {"hybrid (convex)": "hybrid", "hybrid (rrf)": "hybrid_rrf", "vector": "vector", "lexical": "lexical"}


def _json(name: str) -> Any:
    return json.loads((ROOT / "benchmarks" / name).read_text())


def _table_after(page: str, marker: str) -> dict[str, list[str]]:
    """The first Markdown table after `marker` on a docs page: first cell → the other cells (no **)."""
    text = (DOCS / page).read_text()
    start = text.index(marker)
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize(
    ("marker", "json_name"),
    [
        ("debian-manuals at 1200 (benchmarks/", "documents-eval-debian-manuals-1200.json"),
        ("documents-eval-postgresql-doc.json. Again a subset", "documents-eval-postgresql-doc.json"),
    ],
)
def test_the_documents_eval_tables_are_the_json(marker: str, json_name: str) -> None:
    results = _json(json_name)["results"]
    table = _table_after("benchmarks-documents.md", marker)
    for row, system in ROWS.items():
        chunked_doc, chunked_passage, whole_doc, _ = table[row]
        assert float(chunked_doc) == results["chunked"][system]["document"]["nDCG@10"], row
        assert float(chunked_passage) == results["chunked"][system]["passage"]["nDCG@10"], row
        assert float(whole_doc) == results["whole"][system]["document"]["nDCG@10"], row


def test_the_chunk_size_table_is_the_json() -> None:
    table = _table_after("benchmarks-documents.md", "| chunk_chars | chunks | hybrid, document |")
    for size in ("600", "1200", "2000"):
        run = _json(f"documents-eval-debian-manuals-{size}.json")
        chunked = run["results"]["chunked"]
        chunks, doc, *passages = table[size]
        assert int(chunks) == run["stored_units"]["chunked"], size
        assert float(doc) == chunked["hybrid"]["document"]["nDCG@10"], size
        systems = ("hybrid", "vector", "lexical", "hybrid_rrf", "bm25s")
        assert [float(cell) for cell in passages] == [chunked[s]["passage"]["nDCG@10"] for s in systems]


def test_the_whole_collection_lexical_table_is_the_json() -> None:
    table = _table_after("benchmarks-documents.md", "| collection (all documents, all queries) |")
    for run in _json("documents-eval-lexical-full.json")["collections"]:
        name = run["collection"]["name"]
        row = next(cells for label, cells in table.items() if label.startswith(name + " "))
        chunked, whole = run["results"]["chunked"], run["results"]["whole"]
        doc, one, gain, passage, bm25 = (float(cell.replace("+", "")) for cell in row)
        assert doc == chunked["lexical"]["document"]["nDCG@10"], name
        assert one == whole["lexical"]["document"]["nDCG@10"], name
        assert gain == round(doc - one, 4), name
        assert passage == chunked["lexical"]["passage"]["nDCG@10"], name
        assert bm25 == chunked["bm25s"]["document"]["nDCG@10"], name


def test_the_tool_list_size_is_the_json() -> None:
    quoted = re.search(r"input schemas\) is ([\d ]+) bytes", (DOCS / "mcp.md").read_text())
    assert quoted is not None, "docs/mcp.md no longer quotes the model-visible size of tools/list"
    assert int(quoted.group(1).replace(" ", "")) == _json("tool_surface.json")["model_visible_bytes"]


def _get(data: Any, path: str) -> Any:
    """A value of nested JSON by a dotted path (keys may hold spaces, not dots)."""
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def _line_with(page: str, anchor: str) -> str:
    lines = [line for line in (DOCS / page).read_text().splitlines() if anchor in line]
    assert len(lines) == 1, f"docs/{page}: {len(lines)} lines hold {anchor!r}"
    return lines[0]


EVAL_COLUMNS = ("hybrid", "hybrid_rrf", "vector", "lexical", "bm25s")


@pytest.mark.parametrize(
    ("page", "marker", "json_name"),
    [
        (
            "quality.md",
            "| nDCG@10 | hybrid (convex) | hybrid (rrf) | vector | lexical | bm25s |",
            "eval-collections.json",
        ),
        (
            "quality.md",
            "| nDCG@10 | hybrid (convex) | hybrid (rrf) | vector | lexical | bigram BM25 |",
            "eval-cjk.json",
        ),
        (
            "fusion-code.md",
            "| nDCG@10, with 0019 and the ceiling | hybrid (convex) |",
            "eval-dotted-names.json",
        ),
    ],
)
def test_the_collection_quality_tables_are_the_json(page: str, marker: str, json_name: str) -> None:
    table = _table_after(page, marker)
    for run in _json(json_name)["collections"]:
        name = run["dataset"]["name"]
        row = next(cells for label, cells in table.items() if label.lower().startswith(name + " "))
        quoted = [float(cell.split()[0]) for cell in row[: len(EVAL_COLUMNS)]]
        measured = [round(run["results"][system]["metrics"]["nDCG@10"], 4) for system in EVAL_COLUMNS]
        assert quoted == measured, name
        best_branch = max(measured[2], measured[3])
        assert float(row[-1]) == round(measured[0] - best_branch, 3), name


# (page, a phrase only the figure's line holds, JSON, dotted path, how the docs round it)
QUOTES = [
    ("scaling.md", "| single node | 27.7 ms", "citus_scale-100k.json", "latency_ms.single.p95", "{:.1f} ms"),
    (
        "scaling.md",
        "| coordinator + 2 workers | 35.4 ms",
        "citus_scale-100k.json",
        "latency_ms.cluster.p95",
        "{:.1f} ms",
    ),
    (
        "scaling.md",
        "| single node | 27.7 ms",
        "citus_scale-100k.json",
        "throughput.single.per_second",
        "{:.1f} searches/s",
    ),
    (
        "scaling.md",
        "| coordinator + 2 workers | 35.4 ms",
        "citus_scale-100k.json",
        "throughput.cluster.per_second",
        "{:.1f} searches/s",
    ),
    (
        "scaling.md",
        "| one owner per transaction (`migrate citus`) | 88.7 s",
        "stats_rebuild-100x10000.json",
        "owner_batches.1.longest_search_ms",
        "{:.0f} ms (729 searches)",
    ),
    (
        "scaling.md",
        "| one owner per transaction (`migrate citus`) | 88.7 s",
        "stats_rebuild-100x10000.json",
        "owner_batches.1.longest_write_ms",
        "{:.0f} ms (1,535 writes)",
    ),
    (
        "scaling.md",
        "| one owner per transaction (`migrate citus`) | 88.7 s",
        "stats_rebuild-100x10000.json",
        "owner_batches.1.rebuild_seconds",
        "| {:.1f} s |",
    ),
    ("benchmarks.md", "| embedded cold init", "foundation.json", "cold_init_s", "{:.2f} s"),
    ("benchmarks.md", "| warm restart", "foundation.json", "warm_restart_s_median", "{:.2f} s"),
    (
        "benchmarks.md",
        "| `migrate upgrade head`",
        "foundation.json",
        "migrate_upgrade_head_empty_s",
        "{:.2f} s",
    ),
    ("benchmarks.md", "high accuracy: load", "foundation.json", "lingua_high_accuracy.load_s", "{:.1f} s"),
    (
        "benchmarks.md",
        "high accuracy: load",
        "foundation.json",
        "lingua_high_accuracy.rss_added_mb",
        "+{:.0f} MB",
    ),
    (
        "benchmarks.md",
        "low accuracy: load",
        "foundation.json",
        "lingua_low_accuracy.rss_total_mb",
        "{:.0f} MB",
    ),
    ("benchmarks.md", "| stdio server: spawn", "startup.json", "initialize.median_s", "median {:.2f} s"),
    (
        "benchmarks.md",
        "3 windows in total",
        "startup.json",
        "windows.1.total_rss_mb",
        "{:.0f} MB (`compact`)",
    ),
    ("benchmarks.md", "`pgrecall --help`", "startup.json", "cli.help_s_median", "{:.2f} s /"),
    ("benchmarks.md", "`pgrecall --help`", "startup.json", "cli.add_warm_s_median", "/ {:.1f} s"),
    ("benchmarks.md", "| load test, 16 HTTP", "load-compare.json", "load.old.ops_per_s", "{:.1f} →"),
    ("benchmarks.md", "| load test, 16 HTTP", "load-compare.json", "load.new.ops_per_s", "→ {:.1f} ops/s"),
    ("benchmarks.md", "| load test, 16 HTTP", "load-compare.json", "load.new.p95_ms", "→ {:.0f} ms"),
    (
        "benchmarks.md",
        "| CPU per embedding",
        "embed_cpu.json",
        "model_only_ceiling.cold query cache.max_operations_per_s",
        "≤ {:.0f} ops/s",
    ),
    (
        "search.md",
        "| lexical nDCG@10 vs bm25s",
        "lexical_quality.json",
        "cranfield.pgrecall_default_budget",
        "Cranfield {:.3f}",
    ),
    ("search.md", "| lexical nDCG@10 vs bm25s", "lexical_quality.json", "cranfield.bm25s", "vs {:.3f}"),
    (
        "search.md",
        "| lexical nDCG@10 vs bm25s",
        "lexical_quality.json",
        "cisi.pgrecall_default_budget",
        "CISI {:.3f}",
    ),
    ("search.md", "| lexical nDCG@10 vs bm25s", "lexical_quality.json", "cisi.bm25s", "vs {:.3f}"),
    (
        "search.md",
        "| search statement at 100k",
        "search.json",
        "sizes.100000.latency.hybrid.search_ms.p50",
        "hybrid {:.1f} /",
    ),
    (
        "search.md",
        "| search statement at 100k",
        "search.json",
        "sizes.100000.latency.hybrid.search_ms.p95",
        "/ {:.1f} ms, vector",
    ),
    (
        "search.md",
        "| search statement at 100k",
        "search.json",
        "sizes.100000.latency.vector.search_ms.p50",
        "vector {:.1f} /",
    ),
    (
        "search.md",
        "| search statement at 100k",
        "search.json",
        "sizes.100000.latency.vector.search_ms.p95",
        "/ {:.1f} ms, lexical",
    ),
    (
        "search.md",
        "| search statement at 100k",
        "search.json",
        "sizes.100000.latency.hybrid_filtered.search_ms.p99",
        "p99 {:.1f} ms",
    ),
    (
        "search.md",
        "| same, ratio to the plain anchor",
        "search.json",
        "sizes.100000.latency.hybrid.ratio_to_anchor.p95",
        "hybrid {:.1f}× at 100k",
    ),
    (
        "search.md",
        "| same, ratio to the plain anchor",
        "search.json",
        "sizes.10000.latency.hybrid.ratio_to_anchor.p95",
        "{:.1f}× at 10k",
    ),
    (
        "search.md",
        "| HNSW recall@10 vs exact",
        "search.json",
        "sizes.100000.hnsw_recall_at_10.unfiltered",
        "| {} at 100k",
    ),
    (
        "search.md",
        "| HNSW recall@10 vs exact",
        "search.json",
        "sizes.100000.hnsw_recall_at_10.filtered",
        "{:.1f} filtered",
    ),
    ("operations.md", "model worker): 48", "load.json", "operations.overall.per_s", "{:.1f} operations/s"),
    ("operations.md", "model worker): 48", "load.json", "operations.overall.p95_ms", "/ {:.0f} /"),
    ("operations.md", "896 ms, add_entry", "load.json", "operations.search.p99_ms", "{:.0f} ms, add_entry"),
    ("operations.md", "all 582 acknowledged", "load.json", "verification.verified", "all {} acknowledged"),
    (
        "languages.md",
        "| `compact` (default)",
        "detection.json",
        "accuracy.new.short.stemmable.right",
        "| {:.1%} /",
    ),
    (
        "languages.md",
        "| `compact` (default)",
        "detection.json",
        "accuracy.new.short.stemmable.wrong",
        "/ {:.1%} % |",
    ),
    (
        "languages.md",
        "| `compact` (default)",
        "detection.json",
        "accuracy.new.long.stemmable.right",
        "| {:.1%} /",
    ),
    (
        "languages.md",
        "| `full`: lingua",
        "detection.json",
        "accuracy.baseline.short.stemmable.right",
        "| {:.1%} /",
    ),
    (
        "languages.md",
        "| `full`: lingua",
        "detection.json",
        "accuracy.baseline.short.stemmable.wrong",
        "/ {:.1%} % |",
    ),
]


_SEGMENTERS = "cjk_segmenter.json"
_KIWI = "results.ko.segmenters.kiwi-content"
QUOTES += [
    (
        "languages.md",
        "against 0.9037 in mode A",
        _SEGMENTERS,
        "results.ja.side_checks.sudachi-A-surface.words.metrics.nDCG@10",
        "{} against 0.9037",
    ),
    (
        "languages.md",
        "against 0.9037 in mode A",
        _SEGMENTERS,
        "results.ja.side_checks.sudachi-A-surface.vs_sudachi-A.p_two_sided",
        "p {})",
    ),
    (
        "languages.md",
        "and take its memory from",
        _SEGMENTERS,
        f"{_KIWI}.memory.added_mb_loaded",
        "from {:.0f} to",
    ),
    (
        "languages.md",
        "and take its memory from",
        _SEGMENTERS,
        f"{_KIWI}.memory_all_dictionaries.added_mb_loaded",
        "to {:.0f} MB",
    ),
    (
        "languages.md",
        "+60 MB resident for rjieba",
        _SEGMENTERS,
        "results.zh.segmenters.rjieba.memory.added_mb_loaded",
        "+{:.0f} MB resident",
    ),
    (
        "languages.md",
        "MB growing to",
        _SEGMENTERS,
        "results.ja.segmenters.sudachi-A.memory.added_mb_after_collection",
        "growing to {:.0f} MB",
    ),
    (
        "languages.md",
        "MB for Kiwi (more than",
        _SEGMENTERS,
        f"{_KIWI}.memory.added_mb_loaded",
        "+{:.0f} MB for Kiwi",
    ),
]


for _detector, _anchor in (("new", "| `compact`, DDTP |"), ("baseline", "| `full`, DDTP |")):
    for _bucket in ("short", "overall"):
        _path = f"ddtp.accuracy.{_detector}.{_bucket}.all"
        QUOTES += [
            ("languages.md", _anchor, "detection.json", f"{_path}.right", "| {:.1%} /"),
            ("languages.md", _anchor, "detection.json", f"{_path}.wrong", "/ {:.1%} % |"),
        ]


@pytest.mark.parametrize(("page", "anchor", "json_name", "path", "form"), QUOTES)
def test_a_quoted_figure_is_the_json(page: str, anchor: str, json_name: str, path: str, form: str) -> None:
    value = _get(_json(json_name), path)
    places = re.search(r"\{:\.(\d)f\}", form)
    if places is not None:  # the docs round half up, as a reader does: 0.185 s reads 0.19 s
        exact = Decimal(str(value)).quantize(Decimal(1).scaleb(-int(places.group(1))), ROUND_HALF_UP)
        form, value = form.replace(places.group(0), "{}"), exact
    percent = re.search(r"\{:\.\d%\}", form)
    if percent is not None:  # a share quoted in per cent, the sign written once after the figures
        form, value = form.replace(percent.group(0), "{}"), format(value, percent.group(0)[2:-1])[:-1]
    quoted = form.format(value)
    assert quoted in _line_with(page, anchor), f"docs/{page} should quote {quoted!r} ({json_name}: {path})"


def _round4(value: float) -> str:
    return str(Decimal(repr(value)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def _rows(page: str, marker: str) -> dict[str, list[str]]:
    """The table after `marker`, without its header's separator row."""
    return {row: cells for row, cells in _table_after(page, marker).items() if row != "---"}


def test_the_fusion_evidence_replay_table_is_the_json() -> None:
    table = _rows("fusion-evidence.md", "| collection | vector | lexical | length |")
    doc = _json("fusion_evidence.json")
    assert set(table) == set(doc["collections"]), "the study quotes every replayed collection"
    named = doc["named"]
    for name, cells in table.items():
        alone = doc["collections"][name]
        vector, lexical, length, length_margin, first_margin, variant, variant_margin = cells
        assert (vector, lexical) == (_round4(alone["vector"]), _round4(alone["lexical"])), name
        assert length == _round4(named["old"]["nDCG@10"][name]), name
        assert float(length_margin) == float(_round4(named["old"]["margins"][name])), name
        assert float(first_margin) == float(_round4(named["first study"]["margins"][name])), name
        assert variant == _round4(named["variant"]["nDCG@10"][name]), name
        assert float(variant_margin) == float(_round4(named["variant"]["margins"][name])), name


def test_the_fusion_evidence_untouched_eval_is_the_json() -> None:
    table = _rows("fusion-evidence.md", "| debian-it-sentences (1000 docs, 150 q) |")
    assert len(table) == 2
    for row, cells in table.items():
        json_name = row.split("(")[1].rstrip(")")
        results = _json(json_name)["results"]
        quoted = [float(cell) for cell in cells[: len(EVAL_COLUMNS)]]
        measured = [round(results[system]["metrics"]["nDCG@10"], 4) for system in EVAL_COLUMNS]
        assert quoted == measured, row
        best = max(results[s]["metrics"]["nDCG@10"] for s in ("vector", "lexical"))
        margin = round(results["hybrid"]["metrics"]["nDCG@10"] - best, 4)
        assert float(cells[len(EVAL_COLUMNS)]) == margin, row


def test_the_fusion_evidence_documents_table_is_the_json() -> None:
    table = _rows("fusion-evidence.md", "| collection and rule | chunked, document |")
    assert len(table) == 4
    for row, (chunked_doc, chunked_passage, whole_doc) in table.items():
        results = _json(row.split("(")[1].rstrip(")"))["results"]
        assert float(chunked_doc) == results["chunked"]["hybrid"]["document"]["nDCG@10"], row
        assert float(chunked_passage) == results["chunked"]["hybrid"]["passage"]["nDCG@10"], row
        assert float(whole_doc) == results["whole"]["hybrid"]["document"]["nDCG@10"], row


def _signed(cell: str) -> float:
    return float(cell.replace("−", "-"))


def test_the_fusion_normalisation_tables_are_the_json() -> None:
    doc = _json("fusion_normalisation.json")
    table = _rows("fusion-normalisation.md", "| collection | role | vector | lexical | shipped (length) |")
    assert set(table) == set(doc["collections"]), "the study quotes every collection it replayed"
    for name, cells in table.items():
        _, vector, lexical, shipped, shipped_margin, frozen, frozen_margin, delta, counts, p = cells
        alone, best = doc["collections"][name], doc["collections"][name]["best"]
        old, new = doc["grid"]["best"][name]["1,0.2"], doc["grid"]["dbsf-lex"][name]["1.3,0.3"]
        assert (vector, lexical) == (_round4(alone["vector"]), _round4(alone["lexical"])), name
        assert (shipped, frozen) == (_round4(old), _round4(new)), name
        assert _signed(shipped_margin) == float(_round4(old - best)), name
        assert _signed(frozen_margin) == float(_round4(new - best)), name
        assert _signed(delta) == float(_round4(new - old)), name
        paired = doc["frozen_vs_shipped"][name]
        assert counts == f"{paired['better']} / {paired['worse']}", name
        assert p == f"{paired['p_two_sided']:.2f}", name
    text = (DOCS / "fusion-normalisation.md").read_text()
    checked = 0
    for label, split in doc["splits"].items():
        for rule, row in split["rules"].items():
            cells = _line_with_cells(text, f"| {label.replace('→', ' → ')} | {rule} |")
            tuned, reported, gate = cells[3], cells[4], cells[6].strip("*")
            assert tuned == f"{row['tuned']['worst']:+.4f} / {row['tuned']['mean']:+.4f}".replace("-", "−")
            assert reported == (
                f"{row['reported']['worst']:+.4f} / {row['reported']['mean']:+.4f}".replace("-", "−")
            )
            assert gate.startswith("yes") == row["beats"], (label, rule)
            checked += 1
    assert checked == 16


def test_the_fusion_normalisation_statement_gives_the_replay() -> None:
    replay = _json("fusion_normalisation.json")["grid"]
    statement = _json("fusion_normalisation-statement.json")["collections"]
    assert len(statement) == 10
    for name, rules in statement.items():
        # Measured before dbsf-lex shipped, the rules were named "shipped" (length) and "frozen".
        length, dbsf = rules.get("length", rules.get("shipped")), rules.get("dbsf-lex", rules.get("frozen"))
        assert _round4(length["nDCG@10"]) == _round4(replay["best"][name]["1,0.2"]), name
        assert _round4(dbsf["nDCG@10"]) == _round4(replay["dbsf-lex"][name]["1.3,0.3"]), name


def _line_with_cells(text: str, start: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.startswith(start)]
    assert len(lines) == 1, start
    return [c.strip() for c in lines[0].strip("|").split("|")]


def _right_wrong(cell: str) -> list[tuple[float, float]]:
    """'93.2 (3.5) / 98.0 (0.5)' → [(93.2, 3.5), (98.0, 0.5)]; '—' for a bucket without texts."""
    return [(float(m[1]), float(m[2])) for m in re.finditer(r"([\d.]+) \(([\d.]+)\)", cell)]


def test_the_per_language_table_is_the_json() -> None:
    data = _json("detection.json")
    table = _table_after("languages.md", "| language | code | stemmed (regconfig) |")
    checked = 0
    for cells in table.values():
        code = re.fullmatch(r"`([a-z]{2})`", cells[0])
        if code is None:  # the CJK, Thai and other-languages rows point elsewhere
            continue
        for column, accuracy in ((4, data["accuracy"]["new"]), (5, data["ddtp"]["accuracy"]["new"])):
            measured = [
                (round(100 * r["right"], 1), round(100 * r["wrong"], 1))
                for bucket in ("short", "long")
                if (r := accuracy[bucket]["by_language"].get(code[1])) is not None
            ]
            assert _right_wrong(cells[column]) == measured, f"{code[1]}, column {column}"
            checked += 1
    assert checked >= 60


def test_the_bm25s_tokenization_study_is_the_json() -> None:
    table = _table_after("benchmarks-documents.md", "| bm25s over the 5 393 chunks, document level |")
    variants = _json("bm25s_tokenization.json")["document_level"]
    assert {row: float(cells[0]) for row, cells in table.items() if row in variants} == {
        label: figures["nDCG@10"] for label, figures in variants.items()
    }


@pytest.mark.parametrize(
    ("marker", "json_name"),
    [
        ("| nDCG@10 (debian-manuals, whole collection) |", "documents-eval-debian-manuals-full.json"),
        ("| nDCG@10 (postgresql-doc, whole collection) |", "documents-eval-postgresql-doc-full.json"),
        ("| nDCG@10 (python-doc, whole collection) |", "documents-eval-python-doc-full.json"),
        ("| nDCG@10 (python-doc, with 0019 and the ceiling) |", "documents-eval-python-doc-0019.json"),
        (
            "| nDCG@10 (postgresql-doc, with 0019 and the ceiling) |",
            "documents-eval-postgresql-doc-0019.json",
        ),
        (
            "| nDCG@10 (debian-devguides, translated questions) |",
            "documents-eval-debian-devguides-translated.json",
        ),
        ("| nDCG@10 (debian-devguides, heading questions) |", "documents-eval-debian-devguides.json"),
        (
            "| nDCG@10 (debian-manuals, translated questions) |",
            "documents-eval-debian-manuals-translated.json",
        ),
    ],
)
def test_the_whole_debian_manuals_tables_are_the_json(marker: str, json_name: str) -> None:
    results = _json(json_name)["results"]
    table = _table_after("benchmarks-documents.md", marker)
    for row, system in {**ROWS, "bm25s (same chunks / whole documents)": "bm25s"}.items():
        chunked_doc, chunked_passage, whole_doc, gain = table[row]
        assert float(chunked_doc) == results["chunked"][system]["document"]["nDCG@10"], row
        assert float(chunked_passage) == results["chunked"][system]["passage"]["nDCG@10"], row
        assert float(whole_doc) == results["whole"][system]["document"]["nDCG@10"], row
        assert float(gain) == round(float(chunked_doc) - float(whole_doc), 4), row


def test_the_translated_questions_language_tables_are_the_json() -> None:
    results = _json("documents-eval-debian-manuals-translated.json")["results"]
    rows = {**ROWS, "bm25s (same chunks / whole documents)": "bm25s"}
    table = _rows("benchmarks-documents.md", "| nDCG@10 by question language |")
    assert set(table) == set(rows)
    for row, system in rows.items():
        chunked, whole = results["chunked"][system], results["whole"][system]
        quoted = [
            _round4(figures["nDCG@10 by language"][language])
            for language in ("en", "de")
            for figures in (chunked["document"], chunked["passage"], whole["document"])
        ]
        assert table[row] == quoted, row
    # By the page's language: the second part of the query id.
    table = _rows("benchmarks-documents.md", "| chunked document nDCG@10 by page → question language |")
    assert set(table) == {*ROWS, "bm25s"}
    for row, cells in table.items():
        per_query = results["chunked"][ROWS.get(row, row)]["per_query_document_nDCG@10"]
        groups: dict[str, list[float]] = {}
        for qid, value in per_query.items():
            groups.setdefault(qid.split(":")[1], []).append(value)
        quoted = [
            _round4(round(sum(v) / len(v), 4)) for v in (groups[p] for p in ("de", "fr", "es", "ja", "en"))
        ]
        assert cells == quoted, row


def test_the_1m_table_is_the_json() -> None:
    """docs/benchmarks-documents.md, 1M chunks: this run's column and the run before's, each from its JSON."""
    table = _rows("benchmarks-documents.md", "| figure | 8 000 real parents (this run) |")
    for column, json_name in enumerate(("search-1m.json", "search-1m-derived-parents.json")):
        size = _json(json_name)["sizes"]["1000000"]
        load, latency, recall = size["load"], size["latency"], size["hnsw_recall_at_10"]

        def cell(row: str, column: int = column) -> str:
            return table[row][column]

        copy = "COPY (generated tsvector in 17 languages, statistics triggers)"
        assert cell(copy) == f"{load['copy_seconds']} s, {load['import_rows_per_s']} rows/s", json_name
        hnsw = "HNSW build (m 24, ef_construction 256, `maintenance_work_mem` 4 GB)"
        assert cell(hnsw) == f"{load['hnsw_build_seconds']} s", json_name
        for row, mode in (
            ("hybrid search p50 / p95 / p99", "hybrid"),
            ("1 %-selective tag filter: hybrid p50 / p95 / p99", "hybrid_filtered"),
        ):
            ms = latency[mode]["search_ms"]
            assert cell(row) == f"{ms['p50']} / {ms['p95']} / {ms['p99']} ms", (json_name, row)
        shipped = "HNSW recall@10 at `ef_search` 250 (shipped when run), unfiltered / filtered"
        assert cell(shipped) == f"{recall['unfiltered']} / {recall['filtered']}", json_name
        for branch in ("unfiltered", "filtered"):
            row = f"recall@10 at `ef_search` 400 / 600 / 800 / 1000, {branch}"
            swept = [str(recall["by_ef_search"][ef][branch]) for ef in ("400", "600", "800", "1000")]
            assert cell(row) == " / ".join(swept), (json_name, row)


def test_the_1m_run_at_head_is_the_json() -> None:
    """docs/benchmarks-documents.md, the 1M run at head with the `ef_search` tier."""
    size = _json("search-1m-ef600.json")["sizes"]["1000000"]
    table = _rows(
        "benchmarks-documents.md", "| figure (1M, 8 000 real parents, `ef_search` 600 by the tier) |"
    )
    recall, latency, load = size["hnsw_recall_at_10"], size["latency"], size["load"]
    assert table["HNSW recall@10, unfiltered / filtered"] == [
        f"{recall['unfiltered']} / {recall['filtered']}"
    ]
    for row, mode in (
        ("hybrid search p50 / p95 / p99", "hybrid"),
        ("1 %-selective tag filter: hybrid p50 / p95 / p99", "hybrid_filtered"),
    ):
        ms = latency[mode]["search_ms"]
        assert table[row] == [f"{ms['p50']} / {ms['p95']} / {ms['p99']} ms"], row
    vec, lex = latency["vector"]["search_ms"]["p95"], latency["lexical"]["search_ms"]["p95"]
    assert table["vector / lexical p95"] == [f"{vec} / {lex} ms"]
    assert table["COPY, HNSW build"] == [f"{load['copy_seconds']} s, {load['hnsw_build_seconds']} s"]


def test_the_russian_sentence_check_is_the_json() -> None:
    """docs/fusion-normalisation.md, "After shipping": the shipped rule's rows of the new collection."""
    table = _rows("fusion-normalisation.md", "| debian-ru-sentences | nDCG@10 |")
    results = _json("eval-ru-sentences.json")["results"]
    rows = {
        "hybrid, base 1.3 (shipped)": "hybrid",
        "vector": "vector",
        "lexical": "lexical",
        "hybrid (rrf)": "hybrid_rrf",
        "bm25s (reference)": "bm25s",
    }
    for row, system in rows.items():
        assert table[row][0] == _round4(results[system]["metrics"]["nDCG@10"]), row


# docs/languages.md, word segmenters against bigrams: row → (language, segmenter) in cjk_segmenter.json.
CJK_SEGMENTER_ROWS = {
    "Japanese, Sudachi mode A": ("ja", "sudachi-A"),
    "Japanese, Sudachi mode C": ("ja", "sudachi-C"),
    "Chinese, rjieba default": ("zh", "rjieba"),
    "Chinese, rjieba search": ("zh", "rjieba-search"),
    "Korean, Kiwi all morphemes": ("ko", "kiwi"),
    "Korean, Kiwi content morphemes": ("ko", "kiwi-content"),
}


def _half_up(value: float, places: int) -> Decimal:
    return Decimal(str(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)


def test_the_cjk_segmenter_study_is_the_json() -> None:
    """Every cell of the segmenter table: nDCG@10, paired counts and p, recall, speed, size, memory."""
    results = _json("cjk_segmenter.json")["results"]
    table = _rows("languages.md", "| language, segmenter | bigrams | words |")
    assert set(table) == set(CJK_SEGMENTER_ROWS)
    for row, (language, name) in CJK_SEGMENTER_ROWS.items():
        bigrams, entry = results[language]["bigrams"], results[language]["segmenters"][name]
        words, both = entry["words"], entry["words+bigrams"]
        cells = table[row]
        ndcg = [float(cell) for cell in cells[:3]]
        assert ndcg == [x["metrics"]["nDCG@10"] for x in (bigrams, words, both)], row
        for cell, figures in ((cells[3], words), (cells[4], both)):
            paired = figures["vs_bigrams"]
            assert cell == f"{paired['better']} / {paired['worse']}, p {paired['p_two_sided']}", row
        assert cells[5] == f"{words['metrics']['R@100']} ({bigrams['metrics']['R@100']})", row
        per_second = [_half_up(x["speed"]["chars_per_second"] / 1e6, 2) for x in (words, bigrams)]
        assert cells[6] == "{} ({})".format(*per_second), row
        assert cells[7] == f"{_half_up(entry['installed_mb_total'], 0)} MB", row
        memory = entry["memory"]
        loaded, used = (_half_up(memory[k], 0) for k in ("added_mb_loaded", "added_mb_after_collection"))
        assert cells[8] == f"{loaded} / {used} MB", row


def test_the_fusion_languages_tables_are_the_json() -> None:
    doc = _json("fusion-languages.json")
    table = _rows("fusion-languages.md", "| collection | hybrid before |")
    assert set(table) == set(doc["collections"]), "the study quotes every collection it ran"
    for name, cells in table.items():
        run = doc["collections"][name]
        before, after, change, vector, lexical, margin = cells
        assert (before, after) == (_round4(run["before"]["hybrid"]), _round4(run["after"]["hybrid"])), name
        assert (vector, lexical) == (_round4(run["vector"]), _round4(run["lexical"])), name
        assert _signed(change) == run["change"], name
        assert _signed(margin) == run["margin_after"], name
    manuals = _rows("fusion-languages.md", "| debian-manuals, nDCG@10 (document / passage) |")
    labels = {
        "hybrid before": "before",
        "blend by share": "blend by share",
        "gate": "gate",
        "the rule (shipped)": "rule",
        "vector branch": "vector",
        "lexical branch": "lexical",
        "hybrid rrf": "hybrid_rrf",
    }
    assert set(manuals) == set(labels)
    for label, key in labels.items():
        for cell, questions in zip(manuals[label], ("heading", "translated"), strict=True):
            figures = doc["debian-manuals"][questions][key]
            assert cell == f"{_round4(figures['document'])} / {_round4(figures['passage'])}", label


@pytest.mark.parametrize(
    ("marker", "json_name"),
    [
        ("| postgresql-doc, nDCG@10 | document |", "fusion_code-postgresql-doc.json"),
        ("| python-doc, nDCG@10 | document |", "fusion_code-python-doc.json"),
        ("| postgresql-doc with 0019, nDCG@10 | document |", "fusion_code-postgresql-doc-0019.json"),
        ("| python-doc with 0019, nDCG@10 | document |", "fusion_code-python-doc-0019.json"),
    ],
)
def test_the_code_ceiling_tables_are_the_json(marker: str, json_name: str) -> None:
    results = _json(json_name)["results"]
    table = _rows("fusion-code.md", marker)
    for label, cells in table.items():
        if label.startswith("vector / lexical / rrf"):
            for cell, level in zip(cells[:2], ("document", "passage"), strict=True):
                shown = [_round4(results[s][level]["all"]) for s in ("vector", "lexical", "hybrid_rrf")]
                assert cell == " / ".join(shown), (label, cell)
            continue
        cap = "1.0" if label.startswith("hybrid, no ceiling") else label.split()[1].strip("*")
        run = results[f"hybrid cap {cap}"]
        assert cells[:3] == [
            _round4(run["document"]["all"]),
            _round4(run["passage"]["all"]),
            _round4(run["passage"]["code"]),
        ], label
        if cap != "1.0":
            change = _signed(cells[3].split()[0])
            assert change == round(run["passage_vs_no_cap"]["mean_difference"], 4), label


def test_the_cjk_words_fusion_table_is_the_json() -> None:
    results = _json("cjk_words_fusion.json")["results"]
    table = _table_after("languages.md", "**Words in hybrid search (study")
    words = {"ja": "sudachi-A", "zh": "rjieba", "ko": "kiwi-content"}
    for language, segmenter in words.items():
        row = next(cells for name, cells in table.items() if name.startswith(f"debian-{language} "))
        bigrams = results[language]["tokenizations"]["bigrams"]["nDCG@10"]
        chosen = results[language]["tokenizations"][segmenter]
        figures = chosen["nDCG@10"]
        assert float(row[0]) == bigrams["hybrid"]
        assert float(row[1]) == figures["hybrid"]
        assert row[2].startswith(f"{chosen['hybrid_vs_bigrams']['mean_difference']:+.4f}")
        assert float(row[3]) == figures["vector"]
        assert float(row[4]) == figures["hybrid_minus_best_branch"]
        assert float(row[5]) == figures["oracle_of_branches"]


GROUPED_RUNS = {
    "debian-manuals, headings": "debian-manuals",
    "debian-manuals, translated answers": "debian-manuals-translated",
    "postgresql-doc, index questions": "postgresql-doc",
    "python-doc, index questions": "python-doc",
    "debian-devguides, headings (held out)": "debian-devguides",
    "debian-devguides, translated answers (held out)": "debian-devguides-translated",
}


def test_the_grouped_document_table_is_the_json() -> None:
    quoted = _table_after("benchmarks-documents.md", "| hybrid, document nDCG@10 | grouped |")
    assert set(quoted) - {"---"} == set(GROUPED_RUNS)
    for row, name in GROUPED_RUNS.items():
        doc = _json(f"documents-eval-{name}-grouped.json")
        assert doc["parameters"]["document_level"].startswith("chunked: a search grouped by document")
        chunked, whole = doc["results"]["chunked"]["hybrid"], doc["results"]["whole"]["hybrid"]
        grouped, first = (
            chunked["per_query_document_nDCG@10"],
            chunked["per_query_document_first_chunks_nDCG@10"],
        )
        found = sum(first[q] == 0 and grouped[q] > 0 for q in grouped)
        g, f, w = (
            chunked["document"]["nDCG@10"],
            chunked["document_first_chunks"]["nDCG@10"],
            whole["document"]["nDCG@10"],
        )
        assert quoted[row] == [
            f"{g:.4f}",
            f"{f:.4f}",
            f"{w:.4f}",
            f"{g - w:+.4f}",
            f"{found} of {len(grouped)}",
        ], row


def test_the_issue_36_summary_is_the_json() -> None:
    sources = {row: f"documents-eval-{name}-grouped.json" for row, name in GROUPED_RUNS.items()}
    quoted = _table_after("benchmarks-documents.md", "**Where the two targets stand")
    table = {row: [c.replace("−", "-") for c in cells] for row, cells in quoted.items() if row in sources}
    assert set(table) == set(sources)
    for row, json_name in sources.items():
        results = _json(json_name)["results"]
        ndcg = {
            (layout, system, level): float(results[layout][system][level]["nDCG@10"])
            for layout in ("chunked", "whole")
            for system in ("hybrid", "vector", "lexical")
            for level in ("document", "passage")
            if level in results[layout][system]
        }
        gain = ndcg["chunked", "hybrid", "document"] - ndcg["whole", "hybrid", "document"]
        margins = [
            ndcg["chunked", "hybrid", level]
            - max(ndcg["chunked", "vector", level], ndcg["chunked", "lexical", level])
            for level in ("document", "passage")
        ]
        assert table[row] == [f"{gain:+.4f}", " / ".join(f"{m:+.4f}" for m in margins)], row
