"""Options the list and search commands share, and limits in help built from the domain's."""

from __future__ import annotations

from typing import Annotated

import typer


def upto(limit: int) -> str:
    """The range a count option takes, as help shows it: `(1-LIMIT)`."""
    return f"(1-{limit})"


Kind = Annotated[str | None, typer.Option(metavar="KIND", help="Only entries of this kind.")]
Source = Annotated[str | None, typer.Option(metavar="TEXT", help="Only entries with this source (any case).")]
SourcePrefix = Annotated[
    str | None, typer.Option(metavar="TEXT", help="Only entries whose source starts with this.")
]
Document = Annotated[
    str | None, typer.Option(metavar="ID", help="Only chunks of this document (see pgrecall documents).")
]
Version = Annotated[
    str | None, typer.Option(metavar="LABEL", help="Only chunks of documents of this version.")
]
Language = Annotated[
    str | None, typer.Option(metavar="CODE", help="Only entries in this language (ISO 639-1 code).")
]
TagsAll = Annotated[
    list[str] | None, typer.Option("--tag", metavar="TAG", help="Only entries with all these tags.")
]
Superseded = Annotated[bool, typer.Option("--superseded", help="Include entries a live entry supersedes.")]
Expired = Annotated[bool, typer.Option("--expired", help="Include entries past their expiry.")]
