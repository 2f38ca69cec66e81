"""One model runtime per PGRECALL_HOME: a worker process holding the embedder and language detection.

Clients talk to it over a private unix socket (protocol.py). For the rest of pgrecall:

* ``WorkerEmbedder.from_settings(settings)`` — an Embedder (model/dim known without loading);
  ``.client.start()`` at server start, ``.ready()`` / ``.state()`` before a search, ``.wait_ready(t)``.
* ``WorkerDetector(embedder.client).detect(text, codes, thresholds)`` — a ``Detection``.
* ``client.close()`` at process exit (a killed process is pruned anyway); ``lifecycle.stop_worker``,
  ``lifecycle.worker_status`` for a ``pgrecall worker stop|status`` command.

The worker itself: ``python -m pgrecall.worker --home DIR`` (started by lifecycle.ensure_worker).
"""
