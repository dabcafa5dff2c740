"""The compiled loops give the same floats whatever the number of threads (fixed blocks)."""

import numba
import numpy as np

from stream.engine import PlayerBatch, elapsed_days, phase_one, preset, rate_round
from stream.engine.kernels import PLAYER_BLOCK


def test_floats_do_not_depend_on_the_thread_count() -> None:
    params = preset("paper-codeforces")
    n = 3 * PLAYER_BLOCK + 17
    rng = np.random.default_rng(4)
    batch = rate_round(PlayerBatch.new(n, params), rng.permutation(n) // 3, params, time=0.0).after
    ranks = rng.permutation(n) // 2
    days = elapsed_days(batch.last_time, 86_400.0)
    results = []
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(threads)
        try:
            perf = phase_one(batch.mu, batch.sigma, days, ranks, params)
            after = rate_round(batch, ranks, params, time=86_400.0).after
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        results.append((perf, after.mu))
    for perf, mu in results[1:]:
        assert np.array_equal(perf, results[0][0]) and np.array_equal(mu, results[0][1])
    assert len(np.unique(results[0][0])) > n // 3  # really many distinct equations
