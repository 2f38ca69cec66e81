import pytest

from pgrecall.domain.validation import check_body, check_kind, check_metadata, check_tags, parse_id
from pgrecall.errors import InvalidInputError
from pgrecall.store.entries import decode_cursor


def test_body_rules() -> None:
    assert check_body(" text ", 10) == " text "
    with pytest.raises(InvalidInputError, match="text: must not be empty"):
        check_body(" \n\t ", 10)
    with pytest.raises(InvalidInputError, match="text: is 11 characters; the limit is 10"):
        check_body("x" * 11, 10)
    with pytest.raises(InvalidInputError, match="NUL"):
        check_body("a\x00b", 10)


def test_tags_are_trimmed_and_deduplicated() -> None:
    assert check_tags([" a ", "b", "a"]) == ["a", "b"]
    with pytest.raises(InvalidInputError, match="tags: must be a list"):
        check_tags("a,b")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="tags: tags must not be empty"):
        check_tags([" "])
    with pytest.raises(InvalidInputError, match="the limit is 64"):
        check_tags([f"t{i}" for i in range(65)])


def test_kind_and_metadata_rules() -> None:
    assert check_kind(None) == "note"
    with pytest.raises(InvalidInputError, match="kind"):
        check_kind("has space")
    deep: dict[str, object] = {}
    node = deep
    for _ in range(12):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    with pytest.raises(InvalidInputError, match="metadata: is nested deeper"):
        check_metadata(deep)
    with pytest.raises(InvalidInputError, match="metadata: must be plain JSON"):
        check_metadata({"x": float("nan")})
    with pytest.raises(InvalidInputError, match="metadata: must not contain NUL"):
        check_metadata({"x": "a\x00"})


def test_ids_and_cursors() -> None:
    with pytest.raises(InvalidInputError, match="id: must be a UUID"):
        parse_id("not-a-uuid")
    with pytest.raises(InvalidInputError, match="cursor: not a cursor"):
        decode_cursor("garbage!!")
