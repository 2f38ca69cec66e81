"""Where a model puts related and unrelated texts on its cosine scale, measured once per model.

Cosines are model-specific: the bundled model puts a question and an unrelated passage near 0.78
and a passage that answers it near 0.88, other models spread from 0.1 to 0.6. Search judges a
hit's absolute similarity on its model's own scale: 0 at the typical unrelated pair, 1 at the
typical related one. The scale is measured on a fixed set of question/answer pairs in several
languages and topics (each question against its own answer: related; against every other
answer: unrelated), so it needs no tuning per model and no data from the store.
"""

from __future__ import annotations

import json
import logging
import os
import re
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path

from pgrecall.embeddings.base import Embedder

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


class ScaleCache:
    """One ModelScale per model, measured once and kept in `directory` across processes.

    A search never waits for the measurement: the pairs' passages go through the passage lane
    of the model worker, which may be busy with someone's long text. A search asks without
    waiting (`wait=False`): it gets the scale once known, else None (no absolute cap for that
    search) and the measurement starts in the background, once per model and home (the first
    search that has a query vector starts it; an embedder that is down starts nothing).
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._scales: dict[str, ModelScale] = {}
        self._measuring: set[str] = set()
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, *, wait: bool = True) -> ModelScale | None:
        """The embedder's scale; None when it is not known yet (`wait=False`) or cannot be measured."""
        model = embedder.model
        with self._lock:
            known = self._scales.get(model) or self._read(model)
            if known is not None:
                self._scales[model] = known
                return known
            if not wait:
                if model not in self._measuring:
                    self._measuring.add(model)
                    threading.Thread(
                        target=self._measure, args=(embedder,), name="pgrecall-scale", daemon=True
                    ).start()
                return None
        return self._measure(embedder)

    def _measure(self, embedder: Embedder) -> ModelScale | None:
        try:
            scale = measure(embedder)
        except Exception:  # an embedder failure here must not fail a search
            log.warning("could not measure the model's cosine scale", exc_info=True)
            with self._lock:
                self._measuring.discard(embedder.model)
            return None
        with self._lock:
            self._scales[scale.model] = scale
            self._measuring.discard(scale.model)
        self._write(scale)
        return scale

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
