"""Batch side: input files, in-process replay (the pipeline's reference), metrics, synthetic data."""

from stream.batch.metrics import Metrics
from stream.batch.replay import RatedRound, ReplayResult, replay
from stream.batch.sources import SourceError, read_rounds
from stream.batch.synthetic import synthetic_rounds, write_jsonl

__all__ = ["Metrics", "RatedRound", "ReplayResult", "SourceError", "read_rounds", "replay",
           "synthetic_rounds", "write_jsonl"]
