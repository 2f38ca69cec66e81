"""SQL of the entry store: constant text, bound parameters only."""

# Columns every read returns: never the vector itself.
COLUMNS = """
    id, owner, kind, source, title, body, tags, metadata, language,
    content_hash, version, created_at, updated_at, deleted_at, embedding_model, embedding_dim,
    detected_language, expires_at, supersedes, language_how, language_confidence,
    document_id, ordinal, section_path
"""

# ON CONFLICT makes a repeated idempotency key a no-op even when two servers race
# on it: the unique index decides, the loser reads the winner's row.
SQL_INSERT = f"""
INSERT INTO entries (owner, kind, source, title, body, tags, metadata, language, content_hash,
                     embedding, embedding_model, embedding_dim, idempotency_key, detected_language,
                     expires_at, supersedes, language_how, language_confidence, document_id, ordinal,
                     section_path)
VALUES (%(owner)s, %(kind)s, %(source)s, %(title)s, %(body)s, %(tags)s, %(metadata)s,
        %(language)s::regconfig, %(content_hash)s, %(embedding)s::vector, %(embedding_model)s,
        %(embedding_dim)s, %(idempotency_key)s, %(detected_language)s, %(expires_at)s, %(supersedes)s,
        %(language_how)s, %(language_confidence)s, %(document_id)s, %(ordinal)s, %(section_path)s)
ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING {COLUMNS}
"""

SQL_BY_IDEMPOTENCY_KEY = f"""
SELECT {COLUMNS} FROM entries WHERE owner = %(owner)s AND idempotency_key = %(idempotency_key)s
"""

SQL_BY_HASH = f"""
SELECT {COLUMNS} FROM entries
WHERE owner = %(owner)s AND content_hash = %(content_hash)s AND deleted_at IS NULL
ORDER BY created_at, id
LIMIT %(limit)s
"""

SQL_GET = f"SELECT {COLUMNS} FROM entries WHERE owner = %(owner)s AND id = %(id)s"

# COALESCE keeps a field when the caller did not send it; the `set_*` flags let a
# caller clear a nullable field explicitly (source/title to NULL).
SQL_UPDATE = f"""
UPDATE entries SET
    kind = COALESCE(%(kind)s, kind),
    source = CASE WHEN %(set_source)s THEN %(source)s ELSE source END,
    title = CASE WHEN %(set_title)s THEN %(title)s ELSE title END,
    body = COALESCE(%(body)s, body),
    tags = COALESCE(%(tags)s, tags),
    metadata = COALESCE(%(metadata)s, metadata),
    language = COALESCE(%(language)s::regconfig, language),
    detected_language = CASE WHEN %(language)s::regconfig IS NULL THEN detected_language
                             ELSE %(detected_language)s END,
    language_how = CASE WHEN %(language)s::regconfig IS NULL THEN language_how ELSE %(language_how)s END,
    language_confidence = CASE WHEN %(language)s::regconfig IS NULL THEN language_confidence
                               ELSE %(language_confidence)s::real END,
    content_hash = COALESCE(%(content_hash)s, content_hash),
    embedding = CASE WHEN %(reset_embedding)s THEN %(embedding)s::vector ELSE embedding END,
    embedding_model = CASE WHEN %(reset_embedding)s THEN %(embedding_model)s ELSE embedding_model END,
    embedding_dim = CASE WHEN %(reset_embedding)s THEN %(embedding_dim)s ELSE embedding_dim END,
    expires_at = CASE WHEN %(set_expires_at)s THEN %(expires_at)s::timestamptz ELSE expires_at END,
    supersedes = CASE WHEN %(set_supersedes)s THEN %(supersedes)s::uuid ELSE supersedes END,
    version = version + 1,
    updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NULL
  AND (%(expected_version)s::integer IS NULL OR version = %(expected_version)s::integer)
RETURNING {COLUMNS}
"""

SQL_SOFT_DELETE = f"""
UPDATE entries SET deleted_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NULL
RETURNING {COLUMNS}
"""

SQL_RESTORE = f"""
UPDATE entries SET deleted_at = NULL, updated_at = statement_timestamp()
WHERE owner = %(owner)s AND id = %(id)s AND deleted_at IS NOT NULL
RETURNING {COLUMNS}
"""

# {filters}: the ` AND …` fragments of store/filters.py over alias e.
# Keyset pagination, newest first: (created_at, id) is unique and never changes,
# so rows inserted while a caller pages can neither shift nor repeat earlier pages.
SQL_LIST = f"""
SELECT {COLUMNS} FROM entries e
WHERE e.owner = %(owner)s
  AND (%(include_deleted)s OR e.deleted_at IS NULL){{filters}}
  AND (%(cursor_ts)s::timestamptz IS NULL OR (e.created_at, e.id) < (%(cursor_ts)s, %(cursor_id)s::uuid))
ORDER BY e.created_at DESC, e.id DESC
LIMIT %(limit)s
"""

SQL_SET_EMBEDDING = """
UPDATE entries SET embedding = %(embedding)s::vector, embedding_model = %(model)s, embedding_dim = %(dim)s
WHERE owner = %(owner)s AND id = %(id)s AND content_hash = %(content_hash)s
"""

SQL_PENDING = """
SELECT id, title, body, content_hash FROM entries
WHERE owner = %(owner)s AND deleted_at IS NULL AND embedding_model IS DISTINCT FROM %(model)s
  AND (%(after)s::uuid IS NULL OR id > %(after)s::uuid)
ORDER BY id
LIMIT %(limit)s
"""

SQL_PENDING_COUNT = """
SELECT count(*) AS n FROM entries
WHERE owner = %(owner)s AND deleted_at IS NULL AND embedding_model IS DISTINCT FROM %(model)s
"""

SQL_MANY = f"SELECT {COLUMNS} FROM entries WHERE owner = %(owner)s AND id = ANY(%(ids)s::uuid[])"

# One live entry per hash: the oldest, so a pin always resolves to the same entry.
SQL_BY_HASHES = f"""
SELECT DISTINCT ON (content_hash) {COLUMNS} FROM entries
WHERE owner = %(owner)s AND content_hash = ANY(%(hashes)s::text[]) AND deleted_at IS NULL
ORDER BY content_hash, created_at, id
"""

# Vectors leave the store only for in-process re-ranking (MMR); never in a response.
SQL_VECTORS = """
SELECT id, embedding FROM entries
WHERE owner = %(owner)s AND id = ANY(%(ids)s::uuid[]) AND embedding_model = %(model)s
"""

# Any entry of the owner, deleted or superseded too: a moved file or a new version of a document
# repeats texts whose vectors are already stored.
SQL_VECTORS_BY_TEXT = """
SELECT DISTINCT ON (content_hash, title) content_hash, title, embedding FROM entries
WHERE owner = %(owner)s AND content_hash = ANY(%(hashes)s) AND embedding_model = %(model)s
    AND embedding IS NOT NULL
"""

SQL_SCHEMA_REVISION = "SELECT version_num FROM alembic_version"

SQL_OWNERS = "SELECT DISTINCT owner FROM entries ORDER BY owner"

SQL_PENDING_TOTAL = """
SELECT count(*) AS n FROM entries WHERE deleted_at IS NULL AND embedding_model IS DISTINCT FROM %(model)s
"""

# 'unsupported': live entries stored as 'simple' because their language has no config here.
SQL_COUNT_BY = """
SELECT 'language' AS dimension, language::text AS value, count(*) AS n
FROM entries WHERE owner = %(owner)s AND deleted_at IS NULL GROUP BY language
UNION ALL
SELECT 'unsupported', detected_language, count(*) FROM entries
WHERE owner = %(owner)s AND deleted_at IS NULL AND language = 'simple'::regconfig
  AND detected_language IS NOT NULL
GROUP BY detected_language
UNION ALL
SELECT 'kind', kind, count(*) FROM entries WHERE owner = %(owner)s AND deleted_at IS NULL GROUP BY kind
UNION ALL
SELECT 'state', CASE WHEN deleted_at IS NULL THEN 'live' ELSE 'deleted' END, count(*)
FROM entries WHERE owner = %(owner)s GROUP BY 2
UNION ALL
SELECT 'vector_model', coalesce(embedding_model, '(pending)'), count(*)
FROM entries WHERE owner = %(owner)s AND deleted_at IS NULL GROUP BY 2
ORDER BY 1, 2
"""

# Ids starting with a prefix, as the range [prefix00…, prefixff…]: uuid order is byte order, so
# the (owner, id) primary key answers it with a range scan (LIKE over id::text would scan them all).
# Ids given by a part (what the CLI and the web page show, or a prefix): one statement. Ids that
# start with the part are a range of the (owner, id) primary key; ids that end with it (the random
# end of a UUIDv7, which is what the front ends show) are a range of the id's text reversed, in
# the "C" collation (index entries_id_tail, migration 0015): `tail` is the part's text reversed,
# `tail_end` the same followed by '~', which sorts after every hex digit and the dash.
SQL_IDS_MATCHING = """
(SELECT id FROM entries
 WHERE owner = %(owner)s AND id BETWEEN %(low)s::uuid AND %(high)s::uuid
   AND (%(include_deleted)s OR deleted_at IS NULL)
 ORDER BY id
 LIMIT %(limit)s)
UNION
(SELECT id FROM entries
 WHERE owner = %(owner)s
   AND reverse(id::text) COLLATE "C" >= %(tail)s AND reverse(id::text) COLLATE "C" < %(tail_end)s
   AND (%(include_deleted)s OR deleted_at IS NULL)
 ORDER BY id
 LIMIT %(limit)s)
ORDER BY id
LIMIT %(limit)s
"""
