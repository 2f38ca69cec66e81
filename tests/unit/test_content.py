import hashlib

import pytest

from pgrecall.domain.text import content_hash, normalize_text


@pytest.mark.parametrize(
    "variant",
    [
        "Caf\u00e9 au lait",  # precomposed é
        "Cafe\u0301 au lait",  # e + combining acute: same after NFC
        "  Caf\u00e9\tau\n\n lait  ",  # whitespace runs and padding
        "Caf\u00e9\u00a0au\u2003lait",  # no-break and em spaces are whitespace too
    ],
)
def test_hash_is_over_normalized_text(variant: str) -> None:
    expected = "sha256:" + hashlib.sha256("Café au lait".encode()).hexdigest()
    assert content_hash(variant) == expected


def test_hash_distinguishes_real_changes() -> None:
    assert content_hash("Café au lait") != content_hash("Cafe au lait")
    assert content_hash("a b") != content_hash("ab")


def test_normalize_keeps_case_and_punctuation() -> None:
    assert normalize_text(" Hello,\r\n  World! ") == "Hello, World!"
