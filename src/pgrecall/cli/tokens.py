"""`pgrecall token create|list|revoke`: bearer tokens for the HTTP transport."""

from __future__ import annotations

import logging
import math
import os
import string
from typing import Annotated

import typer

from pgrecall.cli.common import echo_json, fail, open_app

log = logging.getLogger(__name__)

MIN_TOKEN_BITS = 128
_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits, "-_")
STRENGTH_RULE = (
    f"at least {MIN_TOKEN_BITS} bits estimated: runs (abc…, 123…), keyboard rows (qwerty…), words, "
    "dates and repeats count only as hard as zxcvbn finds them to guess, the rest length × log2(size "
    "of the character classes used: a-z, A-Z, 0-9, -_); and at least 8 distinct characters"
)


def estimated_bits(secret: str) -> float:
    """A token secret's strength in bits: zxcvbn's patterns, its brute-forced stretches by their classes.

    zxcvbn alone prices a brute-forced character at log2(10) bits (it assumes human passwords), which
    would refuse random 32-character URL-safe secrets (192 bits); its patterns (sequences, keyboard
    walks, dictionary words, repeats, dates) are what a guesser tries first and are priced as it
    prices them.
    """
    from zxcvbn import zxcvbn

    alphabet = sum(len(chars) for chars in _CLASSES if any(c in chars for c in secret))
    per_char = math.log2(alphabet) if alphabet > 1 else 0.0
    bits = 0.0
    for match in zxcvbn(secret, max_length=max(len(secret), 1))["sequence"]:
        if match["pattern"] == "bruteforce":
            bits += len(match["token"]) * per_char
        else:
            bits += math.log2(max(float(match["guesses"]), 1.0))
    return bits


def _strong(secret: str) -> bool:
    """True when a token's secret part passes STRENGTH_RULE (a guard against 'changeme…', 'abcdef…')."""
    return len(set(secret)) >= 8 and estimated_bits(secret) >= MIN_TOKEN_BITS


app = typer.Typer(help="Bearer tokens for `pgrecall serve --transport http` (only a hash is stored).")


@app.command("create")
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
    allow_weak: Annotated[
        bool,
        typer.Option(
            "--allow-weak",
            help="Tests only: register a --from-env token that fails the strength rule (said on stderr "
            "and in the log as a warning). Never for a deployment.",
        ),
    ] = False,
) -> None:
    """Create a token and print it once; store it in your client, it cannot be shown again."""
    from pgrecall.domain.validation import check_owner
    from pgrecall.errors import InvalidInputError
    from pgrecall.services.tokens import (
        MAX_TOKEN_CHARS,
        MIN_TOKEN_SECRET_CHARS,
        TOKEN_PREFIX,
        new_token,
        well_formed,
    )

    try:
        owner = check_owner(owner)
    except InvalidInputError as exc:
        fail(str(exc))
    if from_env is not None:
        token = os.environ.get(from_env, "")
        if not well_formed(token):
            fail(
                f"{from_env} must hold {TOKEN_PREFIX!r} followed by {MIN_TOKEN_SECRET_CHARS} to "
                f"{MAX_TOKEN_CHARS - len(TOKEN_PREFIX)} URL-safe characters"
            )
        if not _strong(token.removeprefix(TOKEN_PREFIX)):
            if not allow_weak:
                fail(
                    f"{from_env} holds a weak token: it needs {STRENGTH_RULE}; "
                    "make one with: pgrecall token create"
                )
            log.warning("registering a weak token (--allow-weak)", extra={"fields": {"variable": from_env}})
            typer.echo(
                f"pgrecall: warning: {from_env} holds a weak token, registered because of --allow-weak "
                "(for tests only: anyone who guesses it acts as this owner)",
                err=True,
            )
    elif allow_weak:
        fail("--allow-weak applies to --from-env only: a generated token is always strong", 2)
    else:
        token = new_token()
    with open_app(with_embedder=False) as opened:
        tokens = opened.tokens
        known = tokens.known(token) if from_env is not None else None
        if known is not None:
            state = "revoked; left revoked" if known[1] else "already registered"
            typer.echo(f"the token in {from_env} is {state} (owner {known[0]!r})", err=True)
            return
        info = tokens.create(owner, name, token)
    if from_env is None:
        typer.echo(token)
        typer.echo(f"token {info.id} for owner {info.owner!r} created; it is shown only now", err=True)
    else:
        typer.echo(f"token from {from_env} registered as {info.id} for owner {info.owner!r}", err=True)


@app.command("list")
def list_tokens() -> None:
    """List tokens (id, owner, name, created, last used, revoked) — never the tokens themselves."""
    with open_app(with_embedder=False) as opened:
        tokens = opened.tokens.list()
    echo_json([{**t.__dict__, "id": str(t.id)} for t in tokens])


@app.command("revoke")
def revoke(token_id: Annotated[str, typer.Argument(help="Token id from `token list`.")]) -> None:
    """Revoke a token: requests carrying it get 401 from now on."""
    from pgrecall.domain.validation import parse_id
    from pgrecall.errors import InvalidInputError

    try:
        ident = parse_id(token_id)
    except InvalidInputError as exc:
        fail(str(exc))
    with open_app(with_embedder=False) as opened:
        info = opened.tokens.revoke(ident)
    if info is None:
        fail(f"id: no active token {ident}")
    typer.echo(f"token {info.id} of owner {info.owner!r} revoked")
