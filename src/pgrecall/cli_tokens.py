"""`pgrecall token create|list|revoke`: bearer tokens for the HTTP transport."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from pgrecall.auth import TOKEN_PREFIX, new_token, token_hash
from pgrecall.cli import _echo_json, _fail, app
from pgrecall.cli_entries import open_app
from pgrecall.errors import InvalidInputError
from pgrecall.store.entries import parse_id
from pgrecall.store.tokens import TokenStore
from pgrecall.validation import check_owner

token_app = typer.Typer(help="Bearer tokens for `pgrecall serve --transport http` (only a hash is stored).")
app.add_typer(token_app, name="token")


@token_app.command("create")
def create(
    owner: Annotated[str, typer.Option(help="The owner whose entries this token reads and writes.")],
    name: Annotated[str, typer.Option(help="A label to recognise it by in `token list`.")] = "",
    from_env: Annotated[
        str | None,
        typer.Option(
            help="Register the token held in this environment variable instead of making one (idempotent: "
            "a token already registered, or revoked, is left as it is). For deployments."
        ),
    ] = None,
) -> None:
    """Create a token and print it once; store it in your client, it cannot be shown again."""
    try:
        owner = check_owner(owner)
    except InvalidInputError as exc:
        _fail(str(exc))
    if from_env is not None:
        token = os.environ.get(from_env, "")
        if not token.startswith(TOKEN_PREFIX) or len(token) < len(TOKEN_PREFIX) + 32:
            _fail(f"{from_env} must hold {TOKEN_PREFIX!r} followed by at least 32 URL-safe characters")
    else:
        token = new_token()
    with open_app(with_embedder=False) as opened:
        assert opened.pool is not None
        tokens = TokenStore(opened.pool)
        digest = token_hash(token)
        known = tokens.known(digest) if from_env is not None else None
        if known is not None:
            state = "revoked; left revoked" if known[1] else "already registered"
            typer.echo(f"the token in {from_env} is {state} (owner {known[0]!r})", err=True)
            return
        info = tokens.create(owner, name, digest)
    if from_env is None:
        typer.echo(token)
        typer.echo(f"token {info.id} for owner {info.owner!r} created; it is shown only now", err=True)
    else:
        typer.echo(f"token from {from_env} registered as {info.id} for owner {info.owner!r}", err=True)


@token_app.command("list")
def list_tokens() -> None:
    """List tokens (id, owner, name, created, last used, revoked) — never the tokens themselves."""
    with open_app(with_embedder=False) as opened:
        assert opened.pool is not None
        tokens = TokenStore(opened.pool).list()
    _echo_json([{**t.__dict__, "id": str(t.id)} for t in tokens])


@token_app.command("revoke")
def revoke(token_id: Annotated[str, typer.Argument(help="Token id from `token list`.")]) -> None:
    """Revoke a token: requests carrying it get 401 from now on."""
    try:
        ident = parse_id(token_id)
    except InvalidInputError as exc:
        _fail(str(exc))
    with open_app(with_embedder=False) as opened:
        assert opened.pool is not None
        info = TokenStore(opened.pool).revoke(ident)
    if info is None:
        _fail(f"id: no active token {ident}")
    typer.echo(f"token {info.id} of owner {info.owner!r} revoked")
