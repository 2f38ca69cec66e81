"""The worker's detection process: it builds the detector the worker's settings name, and nothing more."""

from __future__ import annotations

import psutil

from pgrecall.config import DetectorKind
from pgrecall.domain.language import DEFAULT_THRESHOLDS
from pgrecall.worker.detection import DetectPool


def test_the_detection_process_gets_its_kind_from_the_worker() -> None:
    reads: list[str] = []

    def kind() -> DetectorKind:
        reads.append("full")
        return "full"

    pool = DetectPool(kind)
    try:
        for _ in range(2):
            found = pool.submit(("de", "en"), DEFAULT_THRESHOLDS, ["Der Zug nach Hamburg hat Verspätung."])
            assert found.result(timeout=300) == [["de", found.result()[0][1]]]
        assert reads == ["full"]  # read once, by the worker
        maps = [[m.path for m in child.memory_maps()] for child in psutil.Process().children()]
        (detecting,) = [paths for paths in maps if any("lingua" in path for path in paths)]
        # The process that holds the models never loads pydantic (the settings' library) beside them.
        assert not [path for path in detecting if "pydantic" in path]
    finally:
        pool.stop()
