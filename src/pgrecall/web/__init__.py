"""The web page at /ui: browse, search with explained scores, curate; the same services as the tools."""
