# Citus (the official image) with pgvector, for the `citus` compose profile.
# The official image is PostgreSQL's with the PGDG apt repository already set up: pgvector comes
# from there, built for the image's own PostgreSQL (PG_MAJOR).
ARG CITUS_IMAGE=citusdata/citus:14.0
FROM ${CITUS_IMAGE}

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends "postgresql-${PG_MAJOR}-pgvector" \
    && rm -rf /var/lib/apt/lists/*
