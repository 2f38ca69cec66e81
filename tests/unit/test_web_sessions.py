"""Issue 39 B: one owner's sign-ins evict only that owner's sessions."""

from __future__ import annotations

from pgrecall.web.sessions import MAX_SESSIONS_PER_OWNER, SIGNIN_PER_TOKEN, SessionStore, SignInLimiter


def test_an_owner_signing_in_in_a_loop_evicts_only_its_own_oldest_sessions() -> None:
    store = SessionStore()
    bob = store.open("bob")
    alice_first = store.open("alice")
    alice = [store.open("alice") for _ in range(3 * MAX_SESSIONS_PER_OWNER)]
    assert store.get(bob.id) == bob
    assert store.get(alice_first.id) is None
    assert all(store.get(s.id) is not None for s in alice[-MAX_SESSIONS_PER_OWNER:])
    assert store.get(alice[-MAX_SESSIONS_PER_OWNER - 1].id) is None


def test_sign_ins_are_limited_per_token_and_per_address() -> None:
    limiter = SignInLimiter()
    assert all(limiter.allow("pgr_a", f"10.0.0.{i}") for i in range(SIGNIN_PER_TOKEN))
    assert not limiter.allow("pgr_a", "10.0.0.99")  # the token is over, from any address
    assert limiter.allow("pgr_b", "10.0.0.99")  # another token is not
    crowded = SignInLimiter()
    results = [crowded.allow(f"pgr_{i}", "127.0.0.1") for i in range(100)]
    assert results.count(True) < 100 and not results[-1]  # the address is over, whatever the token
