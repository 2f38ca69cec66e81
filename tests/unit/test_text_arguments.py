"""Which parameter types keep a string argument as sent (the rest get the SDK's JSON pre-parse)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from pgrecall.mcp.text_arguments import accepts_text


@pytest.mark.parametrize(
    "annotation",
    [str, str | None, Annotated[str | None, Field(max_length=5)], Literal["a", "b"] | None, int | str],
)
def test_types_that_take_a_string(annotation: Any) -> None:
    assert accepts_text(annotation)


@pytest.mark.parametrize(
    "annotation",
    [list[str] | None, dict[str, Any] | None, int, bool, float | None, datetime | None, Literal[1, 2]],
)
def test_types_that_do_not(annotation: Any) -> None:
    assert not accepts_text(annotation)
