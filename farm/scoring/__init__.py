"""Scoring from evidence: pure checks (one family per module), one registry, one `score` entry point."""

from farm.scoring.evidence import Evidence, ScoreResult
from farm.scoring.score import score
from farm.scoring.transcript import load_evidence, rescore_run_dir

__all__ = ["Evidence", "ScoreResult", "load_evidence", "rescore_run_dir", "score"]
