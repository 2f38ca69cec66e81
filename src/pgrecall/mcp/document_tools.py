"""The documents tools: ingest, get (outline or a section), list, delete/restore."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from pgrecall.errors import InvalidInputError
from pgrecall.mcp import params as p
from pgrecall.mcp.document_schemas import DocumentDetailOut, DocumentListOut, DocumentOut, IngestOut
from pgrecall.mcp.errors import checked, run_blocking
from pgrecall.mcp.notifications import announce_write
from pgrecall.mcp.observability import observe
from pgrecall.mcp.runtime import Runtime, runtime_tool

if TYPE_CHECKING:
    from pgrecall.services.documents import Ingested

MAX_OFFSET = 1_000_000  # a page past a million documents is a mistake, not a listing
DocumentId = Annotated[str, Field(description="Document id (UUID).")]
Version = Annotated[str | None, Field(description="Version label, e.g. '2.1'.", max_length=100)]


def _payload(
    text: str | None, path: str | None, roots: list[Path] | None, max_bytes: int
) -> tuple[bytes, str | None]:
    """The document's bytes and file name: the text sent, or a server file under an allowed root.

    `roots` None: this transport reads no server files (HTTP: the caller is not the local user).
    """
    if (text is None) == (path is None):
        raise InvalidInputError("text", "give exactly one of text and path")
    if text is not None:
        return text.encode("utf-8", "surrogatepass"), None
    assert path is not None
    if roots is None:
        raise InvalidInputError("path", "not over HTTP: send the content as text")
    if not roots:
        raise InvalidInputError("path", "reading server files is off (set PGRECALL_INGEST_ROOTS); send text")
    resolved = Path(path).expanduser().resolve()  # symlinks resolved: a link out of a root is outside
    if not any(resolved == root or root in resolved.parents for root in roots):
        raise InvalidInputError("path", f"{path} is outside the allowed roots")
    from pgrecall.chunking import DocumentError
    from pgrecall.services.document_files import read_document_file  # with the parsers: at the first ingest

    try:
        return read_document_file(resolved, max_bytes), resolved.name
    except OSError as exc:
        raise InvalidInputError("path", f"{path}: {exc.strerror or type(exc).__name__}") from None
    except DocumentError as exc:
        raise InvalidInputError("path", f"{path}: {exc}") from None


def _naming_the_content(
    field: str, ingest: "Callable[..., Ingested]", *args: Any, **kwargs: Any
) -> "Ingested":
    """Run an ingest; content that cannot be parsed is the caller's mistake, named by its field."""
    from pgrecall.chunking import DocumentError  # the parsers load with the first ingest, not at start

    try:
        return ingest(*args, **kwargs)
    except DocumentError as exc:
        raise InvalidInputError(field, str(exc)) from None


def register_document_tools(
    server: MCPServer, runtime: Runtime, current_owner: Callable[[], str], *, read_paths: bool = False
) -> None:
    """Register the documents tools on `server`; `read_paths` only for stdio (a local user)."""

    @runtime_tool(server, runtime, annotations=p.annotations(idempotent=True))
    async def ingest_document(
        source: Annotated[str, Field(description="Path or URL naming it; ingesting it again updates it.")],
        text: Annotated[str | None, Field(description="The content; omit to read `path`.")] = None,
        path: Annotated[
            str | None,
            Field(description="Server file to read instead (stdio only, under allowed roots)."),
        ] = None,
        format: Annotated[
            Literal["markdown", "html", "text", "pdf", "rst"] | None,
            Field(description="Omit: inferred from source."),
        ] = None,
        title: p.Title = None,
        version: Version = None,
        language: p.Language = None,
    ) -> IngestOut:
        """Store a whole document as chunks cut at headings and paragraphs: search finds each passage
        with its section. Ingesting a source again changes only what changed (the rest keeps ids)."""
        with observe(runtime.metrics, "ingest_document") as call:
            owner = current_owner()
            roots = runtime.settings.ingest_root_paths
            data, name = await run_blocking(
                _payload, text, path, roots if read_paths else None, runtime.settings.max_document_bytes
            )
            done = await run_blocking(
                _naming_the_content,
                "path" if path is not None else "text",
                runtime.app.documents.ingest,
                owner,
                data,
                source=source,
                format=format,
                title=title,
                version=version,
                language=language,
                name=name,
            )
            if done.vector_pending:
                runtime.reembed.poke(owner)
            if done.written:
                await announce_write(None, document_id=str(done.document.id))
            call.fields.update(status=done.status, written=done.written)
            return IngestOut.of(done)

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def get_document(
        id: DocumentId,
        section: Annotated[
            str | None, Field(description='Section heading (or path tail) whose text to include; "*": all.')
        ] = None,
    ) -> DocumentDetailOut:
        """A document's outline: sections in order with chunk ids and hashes; with `section`, its text."""
        with observe(runtime.metrics, "get_document"):
            owner = current_owner()
            document, sections = await run_blocking(runtime.app.documents.outline, owner, id)
            if section is not None and section.strip() == "*":
                text = await run_blocking(runtime.app.documents.text, owner, document.id)
                return DocumentDetailOut.of(document, sections, None, text)
            return checked(DocumentDetailOut.of, document, sections, section)

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def list_documents(
        source_prefix: p.SourcePrefix = None,
        version: Version = None,
        include_deleted: p.IncludeDeleted = False,
        limit: p.ListLimit = 20,
        offset: Annotated[
            int,
            Field(description="How many to skip.", ge=0, le=MAX_OFFSET, json_schema_extra=p.OR_NULL),
            p.NULL_IS_DEFAULT,
        ] = 0,
    ) -> DocumentListOut:
        """Browse ingested documents by source, then version (search finds their passages)."""
        with observe(runtime.metrics, "list_documents"):
            found = await run_blocking(
                runtime.app.documents.list,
                current_owner(),
                source_prefix=source_prefix,
                version=version,
                include_deleted=include_deleted,
                limit=limit,
                offset=offset,
            )
            return DocumentListOut(documents=[DocumentOut.of(d) for d in found])

    @runtime_tool(server, runtime, annotations=p.annotations(destructive=True, idempotent=True))
    async def delete_document(
        id: DocumentId,
        restore: Annotated[
            bool,
            Field(description="True: undo an earlier delete instead.", json_schema_extra=p.OR_NULL),
            p.NULL_IS_DEFAULT,
        ] = False,
    ) -> DocumentOut:
        """Soft-delete a document with its chunks (restorable with restore=true)."""
        with observe(runtime.metrics, "delete_document"):
            service = runtime.app.documents
            document = await run_blocking(service.restore if restore else service.delete, current_owner(), id)
            await announce_write(None, document_id=str(document.id))
            return DocumentOut.of(document)
