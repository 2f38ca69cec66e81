"""One model runtime per PGRECALL_HOME: a worker process holding the embedder and language detection.

Clients talk to it over HTTP on a private unix socket (server.py). For the rest of pgrecall:

* ``WorkerEmbedder.from_settings(settings)`` — an Embedder (model/dim known without loading);
  ``.client.start()`` at server start, ``.ready()`` / ``.state()`` before a search, ``.wait_ready(t)``.
* ``WorkerDetector(embedder.client).detect(text, codes, thresholds)`` — a ``Detection``.
* ``client.close()`` at process exit (a killed process is pruned anyway); ``lifecycle.stop_worker``,
  ``lifecycle.worker_status`` for a ``pgrecall worker stop|status`` command.

The worker itself: ``python -m pgrecall.worker --home DIR`` (started by lifecycle.ensure_worker).
"""

# Reported by `status`; a starter replaces a worker that speaks another version (after an upgrade).
# 2: HTTP on the socket (1 was a custom binary frame protocol).
PROTOCOL_VERSION = 2
