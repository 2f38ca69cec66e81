from pgrecall.domain.text import overlap, shingles


def test_identical_and_disjoint() -> None:
    assert overlap("the cat sat on the mat", "The cat  sat on the mat.") == 1.0
    assert overlap("the cat sat on the mat", "dogs bark at night loudly") == 0.0


def test_small_edit_keeps_high_overlap() -> None:
    a = "Our team decided to move the weekly planning meeting from Monday to Tuesday at ten."
    b = "Our team decided to move the weekly planning meeting from Monday to Wednesday at ten."
    assert 0.6 < overlap(a, b) < 1.0


def test_short_texts_fall_back_to_the_word_tuple() -> None:
    assert shingles("hi there") == frozenset({("hi", "there")})
    assert shingles("") == frozenset()
