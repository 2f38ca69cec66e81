from pgrecall.domain.ranking import Candidate, collapse, dedup, estimate_tokens, mmr, order_pins, pack


def _c(key: str, body: str, score: float = 1.0, digest: str | None = None) -> Candidate[str]:
    return Candidate(key, digest or f"sha256:{key}", body, score, key)


def test_order_pins_keeps_first_occurrence() -> None:
    assert order_pins(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_dedup_exact_and_near() -> None:
    base = "the quarterly planning meeting moves from monday to tuesday at ten in room four"
    near = base.replace("room four", "room 4")  # one changed word
    other = "completely unrelated text about gardening and tomatoes in the summer"
    kept = dedup([_c("1", base), _c("2", base, digest="sha256:1"), _c("3", near), _c("4", other)])
    assert [c.key for c in kept] == ["1", "4"]


def test_collapse_names_the_entry_each_duplicate_collapsed_into() -> None:
    base = "the quarterly planning meeting moves from monday to tuesday at ten in room four"
    other = "completely unrelated text about gardening and tomatoes in the summer"
    near = base.replace("room four", "room 4")
    kept, dropped = collapse([_c("1", other), _c("2", base), _c("3", base, digest="sha256:2"), _c("4", near)])
    assert [c.key for c in kept] == ["1", "2"] and dropped == [("3", "2"), ("4", "2")]


def test_dedup_keeps_moderate_overlap() -> None:
    a = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    b = "alpha beta gamma delta epsilon lambda mu nu xi omicron"
    assert [c.key for c in dedup([_c("1", a), _c("2", b)])] == ["1", "2"]


def test_mmr_prefers_novelty_over_a_redundant_second() -> None:
    cands = [_c("a", "x", 1.0), _c("b", "y", 0.95), _c("c", "z", 0.93)]
    vectors = {"a": [1.0, 0.0], "b": [0.999, 0.04], "c": [0.0, 1.0]}
    assert [c.key for c in mmr(cands, vectors, 3)] == ["a", "c", "b"]
    assert [c.key for c in mmr(cands, vectors, 3, lam=1.0)] == ["a", "b", "c"]


def test_pack_never_exceeds_budget_and_never_cuts() -> None:
    cands = [_c(str(i), ("word " * n).strip()) for i, n in enumerate([30, 500, 40, 20])]
    packed = pack(cands, 120, lambda i, c: f"[S{i}]\n{c.body}")
    assert [c.key for c, _, _ in packed.included] == ["0", "2"]
    assert [(c.key, why) for c, _, why in packed.dropped] == [
        ("1", "larger than token_budget"),
        ("3", "budget exhausted"),
    ]
    context = "\n\n".join(block for _, block, _ in packed.included)
    assert estimate_tokens(context) == packed.total_tokens <= 120
    for cand, block, _ in packed.included:
        assert block.endswith(cand.body)


def test_token_estimate_handles_unspaced_scripts() -> None:
    assert estimate_tokens("one two three") == 4
    assert estimate_tokens("漢" * 400) == 100
