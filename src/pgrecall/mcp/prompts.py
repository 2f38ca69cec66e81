"""The MCP prompts a user picks from a menu: recall before answering, save decisions, review memory.

Each one is a user message that tells the assistant which pgrecall tools to call, with which
arguments, and what to do with the results. Only tools that exist are named (tools/list).
"""

# No `from __future__ import annotations`: the SDK evaluates prompt signatures.

import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from pgrecall.domain.validation import MAX_TOP_K
from pgrecall.mcp.runtime import Runtime

MAX_ARGUMENT_CHARS = 2000  # the argument is pasted into the prompt: a question, not a document

Question = Annotated[str, Field(description="The question to answer from memory.")]
Topic = Annotated[
    str | None, Field(description="What to focus on (optional; omitted: the whole conversation / memory).")
]
TagList = Annotated[str | None, Field(description="Comma-separated tags (optional), e.g. 'project-x,infra'.")]


def _text(name: str, value: str | None) -> str | None:
    """A prompt argument, trimmed; None when absent; INVALID_PARAMS when blank or too long."""
    if value is None:
        return None
    clean = " ".join(value.split())
    if not clean:
        raise MCPError(INVALID_PARAMS, f"{name}: must not be empty")
    if len(clean) > MAX_ARGUMENT_CHARS:
        raise MCPError(INVALID_PARAMS, f"{name}: at most {MAX_ARGUMENT_CHARS} characters")
    return clean


def _tags(value: str | None) -> list[str]:
    text = _text("tags", value)
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def recall_text(question: str, tags: list[str]) -> str:
    """The message of recall_before_answering."""
    tag_filter = f', "tags_any": {json.dumps(tags, ensure_ascii=False)}' if tags else ""
    return f"""Before you answer, look in my pgrecall memory.

My question: {question}

1. Call build_context with {{"query": <my question, as a full sentence>{tag_filter}, "token_budget": 4000}}.
   If its status is empty_store or no_matches, say that my memory has nothing on this, then answer
   from general knowledge and label that part as not from memory.
2. If a block looks relevant but is cut short, or you need more, call search with the same query
   and "top_k": 10, then get_entry with the id of each hit you want to read in full.
3. Answer using the blocks. After each statement taken from memory, cite its label ([S1], [S2], …).
   End with a "Sources" list: label, title, id and content_hash of every block you cited.
4. If blocks disagree, say so and prefer the most recently updated one; do not merge them silently.
Do not write to memory while answering (no add_entry, update_entry or delete_entry)."""


def save_text(topic: str | None, tags: list[str]) -> str:
    """The message of save_decisions."""
    focus = f"about: {topic}" if topic else "in this conversation so far"
    extra_tags = f" Add these tags to every entry: {', '.join(tags)}." if tags else ""
    return f"""Save the decisions we made {focus} to my pgrecall memory.

1. List each decision in one sentence: what was decided, why, and what it replaces, if anything.
   Skip open questions and ideas we dropped.
2. For each decision, first call search with {{"query": <the decision as a sentence>, "top_k": 5}}.
   If a hit already records the same decision, call update_entry with its "id" (and
   "expected_version" from get_entry) to bring it up to date instead of adding a new entry. If a hit
   records a decision this one reverses, update that entry's text to say it was replaced, and by what.
3. Otherwise call add_entry with {{"kind": "decision", "title": <a short title, under 80 characters>,
   "text": <the decision, its reason and its context, self-contained: it will be read without this
   conversation>, "tags": [<2-4 lowercase tags: project, component, topic>]}}.{extra_tags}
   Prefer tags already in use: call list_tags once first (with "prefix" to narrow it down).
   Mention related entries by id in the text (e.g. "see <id>") to link them.
4. add_entry returns "similar": if an entry there says nearly the same, merge the two with
   update_entry and delete_entry the newer duplicate.
5. Finish with a table: title, id, content_hash, and whether it was added or updated."""


def review_text(topic: str | None) -> str:
    """The message of review_memory."""
    if topic:
        query = json.dumps(topic, ensure_ascii=False)
        gather = f"""Call search with {{"query": {query}, "top_k": {MAX_TOP_K}}}, then list_entries
   with {{"limit": 100}} and keep the entries about {topic}."""
    else:
        gather = """Call stats (to see the size), then list_entries with {"limit": 100}; follow
   "next_cursor" for at most 5 pages. recent_activity with {"since": "30d"} shows what changed lately."""
    return f"""Review my pgrecall memory{f" about {topic}" if topic else ""} and propose a clean-up.

1. {gather}
2. Near-duplicates: for each entry that might repeat another, call search with its title or the
   first sentence of its text and "top_k": 5; entries saying the same thing are duplicates (search
   collapses near-identical texts into one hit, so also compare the list_entries results directly).
3. Stale entries: facts with a date or version that has passed, plans that were carried out or dropped,
   and entries that the newer entries contradict.
4. Contradictions: entries that cannot both be true; the one updated last is usually right.
5. Show me a table: ids, titles, the problem (duplicate / stale / contradiction) and the fix you propose:
   merge into one entry (update_entry on the one to keep with the merged text, then delete_entry the
   others), correct it (update_entry), or remove it (delete_entry; restore_entry undoes it).
6. Change nothing until I confirm. Then make exactly the changes I approved, and list each with its id
   and new content_hash."""


def _required_arguments_middleware(server: MCPServer) -> ServerMiddleware[Any]:
    """A missing or unknown prompt argument as INVALID_PARAMS naming it (the SDK's is an internal error)."""

    async def check(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "prompts/get" and isinstance(ctx.params, dict):
            name, given = ctx.params.get("name"), ctx.params.get("arguments") or {}
            prompt = next((p for p in await server.list_prompts() if p.name == name), None)
            if prompt is not None and isinstance(given, dict):
                known = {a.name: a.required for a in prompt.arguments or []}
                problems = [f"{a}: required" for a, required in known.items() if required and a not in given]
                problems += [f"{a}: unknown argument" for a in given if a not in known]
                if problems:
                    raise MCPError(INVALID_PARAMS, f"prompt {name}: " + "; ".join(problems))
        return await call_next(ctx)

    return check


def register_prompts(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register the prompts on `server` (they read nothing: the assistant calls the tools)."""
    del runtime, current_owner  # same signature as the other registrations; prompts are static text
    server.middleware.append(_required_arguments_middleware(server))

    @server.prompt(
        name="recall_before_answering",
        title="Recall before answering",
        description="Search my memory for a question and answer with cited entries (build_context).",
    )
    async def recall_before_answering(question: Question, tags: TagList = None) -> str:
        clean = _text("question", question)
        assert clean is not None
        return recall_text(clean, _tags(tags))

    @server.prompt(
        name="save_decisions",
        title="Save what we decided",
        description="Summarise this conversation's decisions into tagged, linked entries (kind 'decision').",
    )
    async def save_decisions(topic: Topic = None, tags: TagList = None) -> str:
        return save_text(_text("topic", topic), _tags(tags))

    @server.prompt(
        name="review_memory",
        title="Review my memory",
        description="Find near-duplicate, stale and contradicting entries and propose merges or fixes.",
    )
    async def review_memory(topic: Topic = None) -> str:
        return review_text(_text("topic", topic))
