"""Signed-in browser sessions and one-time sign-in codes, kept in this process's memory only.

A session id is the only thing the browser holds (in an HttpOnly cookie); the owner and the CSRF
token stay here. A restart signs everyone out, which is the safe direction for a local tool.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass

SESSION_SECONDS = 12 * 3600
ONCE_SECONDS = 10 * 60
# Memory stays bounded, and one owner's sign-ins only ever evict that owner's own oldest sessions:
# a token holder signing in in a loop cannot sign anyone else out.
MAX_SESSIONS = 10_000
MAX_SESSIONS_PER_OWNER = 32
# Sign-in attempts (right or wrong) per token and per client address, in a sliding window.
SIGNIN_WINDOW_S = 60.0
SIGNIN_PER_TOKEN = 10
SIGNIN_PER_ADDRESS = 30
_MAX_LIMITER_KEYS = 10_000


class TooManySessionsError(Exception):
    """Every session slot is taken by live sessions of other owners."""


@dataclass(frozen=True)
class Session:
    """One signed-in browser: whose data it sees, and the token its forms must carry."""

    id: str
    owner: str
    csrf: str
    expires: float


class SessionStore:
    """Sessions by id, and one-time codes that each open one session once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._codes: dict[str, tuple[str, float]] = {}

    def open(self, owner: str) -> Session:
        """A new session for `owner`."""
        now = time.monotonic()
        session = Session(secrets.token_urlsafe(32), owner, secrets.token_urlsafe(32), now + SESSION_SECONDS)
        with self._lock:
            self._prune(now)
            own = [key for key, s in self._sessions.items() if s.owner == owner]  # oldest first
            for key in own[: max(0, len(own) - MAX_SESSIONS_PER_OWNER + 1)]:
                del self._sessions[key]
            if len(self._sessions) >= MAX_SESSIONS:
                raise TooManySessionsError
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with that id, if any."""
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or session.expires <= time.monotonic():
                self._sessions.pop(session_id, None)
                return None
            return session

    def close(self, session_id: str | None) -> None:
        """Sign a session out."""
        if session_id:
            with self._lock:
                self._sessions.pop(session_id, None)

    def issue_code(self, owner: str) -> str:
        """A code that opens one session for `owner`, once, within ONCE_SECONDS."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._codes[code] = (owner, time.monotonic() + ONCE_SECONDS)
        return code

    def redeem_code(self, code: str) -> str | None:
        """The owner a code was issued for; the code is spent whether or not it was still valid."""
        with self._lock:
            found = self._codes.pop(code, None)
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    def _prune(self, now: float) -> None:
        for key in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[key]
        for key in [k for k, (_, until) in self._codes.items() if until <= now]:
            del self._codes[key]


class SignInLimiter:
    """Counts sign-in attempts per token and per client address; refuses past the limits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def allow(self, token: str | None, address: str | None) -> bool:
        """Record one attempt; False when the token or the address is over its limit."""
        now = time.monotonic()
        keys = []
        if token:
            # A digest, not the token: this table is no second copy of the credentials.
            keys.append(("t:" + hashlib.sha256(token.encode()).hexdigest(), SIGNIN_PER_TOKEN))
        if address:
            keys.append(("a:" + address, SIGNIN_PER_ADDRESS))
        with self._lock:
            if len(self._seen) > _MAX_LIMITER_KEYS:
                self._forget_old(now)
            allowed = True
            for key, limit in keys:
                times = self._seen.setdefault(key, deque())
                while times and times[0] <= now - SIGNIN_WINDOW_S:
                    times.popleft()
                if len(times) >= limit:
                    allowed = False
                else:
                    times.append(now)
            return allowed

    def _forget_old(self, now: float) -> None:
        for key in [k for k, t in self._seen.items() if not t or t[-1] <= now - SIGNIN_WINDOW_S]:
            del self._seen[key]
        while len(self._seen) > _MAX_LIMITER_KEYS:  # still full of live keys: drop the oldest
            self._seen.pop(next(iter(self._seen)))
