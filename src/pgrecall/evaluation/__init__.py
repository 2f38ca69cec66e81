"""`pgrecall eval`: retrieval quality of the search modes on a BEIR collection, against a bm25s reference."""

from pgrecall.evaluation.dataset import BeirDataset, DatasetError, load_dataset
from pgrecall.evaluation.loader import EvalError
from pgrecall.evaluation.pipeline import evaluate, parse_modes

__all__ = ["BeirDataset", "DatasetError", "EvalError", "evaluate", "load_dataset", "parse_modes"]
