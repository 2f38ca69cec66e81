"""Container HEALTHCHECK: exit 0 when the server's /healthz answers 200 (stdlib only, no curl)."""

import os
import sys
import urllib.request

URL = os.environ.get("PGRECALL_HEALTHCHECK_URL", "http://127.0.0.1:8765/healthz")

try:
    with urllib.request.urlopen(URL, timeout=4) as response:  # noqa: S310 - a fixed local http URL
        sys.exit(0 if response.status == 200 else 1)
except Exception as exc:  # any failure means unhealthy; say why in `docker inspect`
    print(f"unhealthy: {URL}: {exc}", file=sys.stderr)
    sys.exit(1)
