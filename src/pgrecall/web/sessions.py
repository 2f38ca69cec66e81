"""Signed-in browser sessions and one-time sign-in codes, kept in this process's memory only.

A session id is the only thing the browser holds (in an HttpOnly cookie); the owner and the CSRF
token stay here. A restart signs everyone out, which is the safe direction for a local tool.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

SESSION_SECONDS = 12 * 3600
ONCE_SECONDS = 10 * 60
MAX_SESSIONS = 10_000  # bounded: a flood of sign-ins evicts the oldest sessions, never grows memory


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
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
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
