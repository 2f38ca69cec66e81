"""The worker's language-detection process (`python -m pgrecall.worker.detect_child`).

Lingua holds the GIL for the whole 7-17 s of building a high-accuracy detector, which would freeze
every thread of the worker (no `status` reply, no query accepted). So detection lives in this child:
frames in on stdin, frames out on stdout, one request at a time; it exits when stdin closes (the
worker went away, however it died).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, BinaryIO

from pgrecall.worker.protocol import (
    ProtocolError,
    Thresholds,
    check_codes,
    check_texts,
    check_thresholds,
    encode_frame,
    error_reply,
    read_frame,
)

log = logging.getLogger("pgrecall.worker.detect")

DetectorKey = tuple[tuple[str, ...], Thresholds]


class DetectorCache:
    """One detector per (codes, thresholds), built on first use."""

    def __init__(self) -> None:
        self._detectors: dict[DetectorKey, Any] = {}

    def get(self, key: DetectorKey) -> Any:
        """The detector for key, building it if needed."""
        detector = self._detectors.get(key)
        if detector is None:
            from pgrecall.config import Settings
            from pgrecall.detection.detectors import make_detector

            codes, limits = key
            started = time.perf_counter()
            # PGRECALL_DETECTOR reaches the worker (and this child) in the environment it starts with.
            detector = make_detector(Settings().detector, codes, limits)
            log.info("detector for %d languages built in %.2f s", len(codes), time.perf_counter() - started)
            self._detectors[key] = detector
        return detector


def handle(cache: DetectorCache, header: dict[str, Any]) -> dict[str, Any]:
    """Answer one request: `warm` builds a detector, `detect` runs it over `texts`."""
    key: DetectorKey = (check_codes(header.get("codes")), check_thresholds(header))
    texts = check_texts(header.get("texts", []))
    detector = cache.get(key)
    results = []
    for text in texts:
        found = detector.detect(text)
        results.append([found.iso, found.confidence])
    return {"ok": True, "results": results}


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Loop over requests until stdin closes."""
    cache = DetectorCache()
    while True:
        try:
            frame = read_frame(stdin.read)
        except ProtocolError as exc:
            # The worker is our only peer; a broken stream means it is gone or confused: exit.
            log.error("bad frame from the worker: %s", exc)
            return 2
        if frame is None:
            return 0
        try:
            reply = handle(cache, frame.header)
        except ProtocolError as exc:
            reply = error_reply(str(exc))
        except Exception as exc:
            log.exception("detection failed")
            reply = error_reply(f"{type(exc).__name__}: {exc}", kind="detection")
        stdout.write(encode_frame(reply))
        stdout.flush()


def main() -> int:
    """Entry point of the child."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s detect[%(process)d] %(message)s")
    # Frames get a private copy of stdout; fd 1 itself then points at stderr (the worker log), so a
    # stray print from a library can never corrupt the frame stream.
    frames = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return serve(sys.stdin.buffer, frames)


if __name__ == "__main__":
    sys.exit(main())
