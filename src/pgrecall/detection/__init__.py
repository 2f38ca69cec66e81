"""Language detection: lingua's models and the script rules that name a text's language.

A model adapter, not domain rules: the `Detection` it returns and the `Thresholds` it applies are
domain types (pgrecall.domain.language). It runs in the model worker (or in-process when the worker
is off), never in a caller's request path on its own.
"""
