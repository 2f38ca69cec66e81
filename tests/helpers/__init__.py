"""Test helpers: pytest plugins (fixtures) and plain functions the test modules import."""
