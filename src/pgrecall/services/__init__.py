"""Use cases every front end calls: entries, search, retrieval, context, citations, tokens, maintenance."""
