"""The bonus pool (stream.engine.bonus): accrues per day up to its cap, doubles positive display
changes while it lasts and is consumed by them; losses take nothing."""

from __future__ import annotations

import numpy as np
import pytest

from stream.engine.bonus import DAY_S, BonusPool, bonus

POOL = BonusPool(per_day=10.0, cap=25.0)


def test_accrues_doubles_and_is_consumed() -> None:
    times = np.array([1.0, 2.0, 3.0, 4.0]) * DAY_S  # season starts at 0
    deltas = np.array([4.0, -7.0, 30.0, 5.0])
    got = bonus(0.0, times, deltas, POOL, now=10 * DAY_S)
    # day 1: pool 10, +4 takes 4 (left 6); day 2: 16, a loss takes nothing; day 3: 25 (capped), +30 takes 25;
    # day 4: 10, +5 takes 5
    np.testing.assert_allclose(got.taken, [4.0, 0.0, 25.0, 5.0])
    np.testing.assert_allclose(got.pool_after, [6.0, 16.0, 0.0, 5.0])
    assert got.total == 34.0 and got.pool_now == 25.0  # capped again by day 10


def test_no_rounds_and_bad_config() -> None:
    got = bonus(0.0, np.zeros(0), np.zeros(0), POOL, now=DAY_S)
    assert got.total == 0.0 and got.pool_now == 10.0
    with pytest.raises(ValueError, match="bonus_cap"):
        BonusPool(1.0, -1.0)
