"""``stream simulate --through-stream``: the closed loop's rounds rated by the real pipeline (an
embedded broker, Redis and worker) give the ratings ``stream replay`` gives the same rounds
(within 1e-9), and so the very matches the in-process loop forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stream.batch.replay import ReplayResult, rate_sequence
from stream.cli.simulate_stream import StreamRater, embedded_pipeline
from stream.engine.ladders import LadderConfig, parse_ladders
from stream.matchmaking.simulate import SimConfig, default_queue, simulate

pytestmark = pytest.mark.integration


def test_ratings_through_the_stream_equal_replay(tmp_path: Path) -> None:
    ladder = parse_ladders("").of("sim")
    queue = default_queue()
    sim = SimConfig(players=30, games=3, seed=7)
    raters: list[StreamRater] = []
    with embedded_pipeline("", tmp_path / "worker.log") as link:
        def rater(config: LadderConfig, names: list[str], tag: str) -> StreamRater:
            raters.append(StreamRater(config, names, tag, link=link, ladder_name=queue.ladder))
            return raters[-1]

        streamed = simulate(sim, ladder, queue, ("matchmaker",), engine=rater)["matchmaker"]
        (used,) = raters
        assert len(used.published) == len(streamed.true_p) > 0
        stored_mu, stored_sigma = link.ratings(used.name, used.names)
    replay = ReplayResult(params=ladder.elo_mmr)
    rate_sequence(replay, used.published, keep_rounds=False)
    table = replay.ladders[used.name]
    rows = table.lookup(used.names)
    played = rows >= 0
    assert played.sum() > 0 and np.isnan(stored_mu[~played]).all()  # who never played has no rating
    assert np.abs(stored_mu[played] - table.mu[rows[played]]).max() <= 1e-9
    assert np.abs(stored_sigma[played] - table.sigma[rows[played]]).max() <= 1e-9
    in_process = simulate(sim, ladder, queue, ("matchmaker",))["matchmaker"]
    assert streamed.true_p == in_process.true_p and streamed.won == in_process.won  # the same matches
    assert np.allclose(streamed.predicted, in_process.predicted, rtol=0, atol=1e-9)
