"""Text arguments stay text: the SDK's JSON pre-parse is kept for parameters that cannot take a string.

The SDK parses a string argument as JSON whenever its parameter is not typed exactly `str`, for
clients that send arrays and objects as JSON text. For an optional text (`str | None`) that turned
"null" into None (update_entry kept the old text, silently) and "[1, 2]" into a list (rejected).
A parameter that accepts a string gets the string as sent; the others are pre-parsed as before.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import PrivateAttr


def accepts_text(annotation: Any) -> bool:
    """True if a value of type `annotation` may be a string (str, a union with str, string literals)."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return accepts_text(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(accepts_text(member) for member in typing.get_args(annotation))
    if origin is Literal:
        return any(isinstance(value, str) for value in typing.get_args(annotation))
    return False


class TextPreservingFuncMetadata(FuncMetadata):
    """FuncMetadata whose JSON pre-parse leaves the arguments of text parameters alone."""

    # Names (and aliases) of the parameters that take a string: fixed with the tool, so found once.
    _text_keys: frozenset[str] = PrivateAttr(default=frozenset())

    def model_post_init(self, context: Any, /) -> None:
        """Find the text parameters once, when the tool is registered."""
        super().model_post_init(context)
        self._text_keys = frozenset(
            key
            for name, field in self.arg_model.model_fields.items()
            if accepts_text(field.annotation)
            for key in (name, field.alias)
            if key is not None
        )

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """Pre-parse (as the SDK does) only the arguments whose parameter cannot take a string."""
        text_keys = self._text_keys
        parsed = super().pre_parse_json({k: v for k, v in data.items() if k not in text_keys})
        return {key: data[key] if key in text_keys else parsed[key] for key in data}


def preserve_text_arguments(metadata: FuncMetadata) -> FuncMetadata:
    """The same metadata, with text arguments kept as sent."""
    if isinstance(metadata, TextPreservingFuncMetadata):
        return metadata
    return TextPreservingFuncMetadata(
        arg_model=metadata.arg_model,
        output_schema=metadata.output_schema,
        output_model=metadata.output_model,
        wrap_output=metadata.wrap_output,
    )
