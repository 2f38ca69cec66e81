"""What an entry is and its rules: entries, text, validation, language, ranking (no I/O, no SQL)."""
