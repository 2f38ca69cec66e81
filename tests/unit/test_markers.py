"""tests/conftest.py marks each test by the resources its code, fixtures and helpers refer to."""

from __future__ import annotations

import subprocess
import sys

import pytest

RESOURCES = {"db", "models", "subprocess", "browser"}


def _marks(request: pytest.FixtureRequest) -> set[str]:
    return {mark.name for mark in request.node.iter_markers()} & RESOURCES


def _start_a_process() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_a_pure_test_has_no_resource(request: pytest.FixtureRequest) -> None:
    assert _marks(request) == set()


def test_a_helper_that_starts_a_process_marks_its_caller(request: pytest.FixtureRequest) -> None:
    assert callable(_start_a_process)  # referred to, not called: the mark comes from the code
    assert _marks(request) == {"subprocess"}


def test_the_session_database_marks_db(db_url: str, request: pytest.FixtureRequest) -> None:
    assert _marks(request) == {"db"}


def test_an_app_marks_db_and_models(runtime: object, request: pytest.FixtureRequest) -> None:
    assert _marks(request) == {"db", "models"}
