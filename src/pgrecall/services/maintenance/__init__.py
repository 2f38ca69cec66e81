"""Maintenance use cases: fill pending vectors (reembed, also in the background) and re-detect languages."""

from pgrecall.services.maintenance.background import BackgroundReembed
from pgrecall.services.maintenance.redetect import RedetectReport, redetect_languages
from pgrecall.services.maintenance.reembed import reembed_all, reembed_owner

__all__ = ["BackgroundReembed", "RedetectReport", "redetect_languages", "reembed_all", "reembed_owner"]
