"""The watchdog's stall decision (pure functions): offsets history -> stalled partitions -> heal / exit.

The end offsets include the embedded Tansu broker's quirk: ListOffsets(LATEST) answers the base
offset of the partition's last record batch + 1, below the real end when that batch holds
several records.
"""

from __future__ import annotations

from stream.pipeline.runtime.watchdog import Observation, Track, assess, decide, describe

ROUNDS = ("rounds", 0)
OTHER = ("rounds", 1)
UPDATES = ("player-updates", 2)
TIMEOUT = 60.0


def run(history: list[dict[tuple[str, int], Observation]], *, every_s: float = 5.0,
        timeout_s: float = TIMEOUT) -> list[set[tuple[str, int]]]:
    """Feed one observation per check (``every_s`` apart) to assess; the stalled set after each."""
    tracks: dict[tuple[str, int], Track] = {}
    out = []
    for i, observed in enumerate(history):
        tracks, stalled = assess(tracks, observed, i * every_s, timeout_s)
        out.append(stalled)
    return out


def test_a_lagging_partition_whose_committed_offset_never_moves_is_stalled_after_the_timeout() -> None:
    stuck = Observation(end=50, committed=20, position=20)
    results = run([{ROUNDS: stuck}] * 14)  # checks at 0, 5, ..., 65 s
    assert all(not s for s in results[:12]), "not before STALL_TIMEOUT_S (60 s) without progress"
    assert results[12] == {ROUNDS} and results[13] == {ROUNDS}


def test_a_partition_that_keeps_committing_is_never_stalled_even_while_lagging() -> None:
    history = [{ROUNDS: Observation(end=1000, committed=10 * i, position=10 * i)} for i in range(40)]
    assert not any(run(history))


def test_progress_restarts_the_clock() -> None:
    history = [{ROUNDS: Observation(end=50, committed=20, position=20)}] * 10  # 0 .. 45 s
    history += [{ROUNDS: Observation(end=60, committed=21, position=21)}] * 13  # one commit at 50 s
    results = run(history)
    assert not any(results[:22]), "at 105 s, 21 has been unchanged for 55 s only"
    assert results[22] == {ROUNDS}  # 110 s: 60 s unmoved


def test_a_partition_that_stops_lagging_forgets_its_history() -> None:
    stuck = {ROUNDS: Observation(end=50, committed=20, position=20)}
    caught_up = {ROUNDS: Observation(end=20, committed=20, position=20)}
    results = run([stuck] * 11 + [caught_up] + [stuck] * 13)  # lagging again from 60 s
    assert not any(results[:24]) and results[24] == {ROUNDS}


def test_tansu_end_offset_below_the_real_end_is_no_false_alarm() -> None:
    # a healthy idle partition: the last batch (offsets 100..109) was consumed and committed (110),
    # but Tansu reports its end as 100 + 1: the end is BEHIND the committed offset, forever
    idle = {ROUNDS: Observation(end=101, committed=110, position=110)}
    assert not any(run([idle] * 30))


def test_tansu_end_offset_still_reveals_a_stall_behind_the_last_batch() -> None:
    # the consumer stopped at 100; the last batch is 100..109 (real end 110), Tansu says 101
    stuck = {ROUNDS: Observation(end=101, committed=100, position=100)}
    assert run([stuck] * 13)[-1] == {ROUNDS}


def test_tansu_end_offset_hides_a_stall_inside_the_last_batch() -> None:
    # stopped at 105 inside the last batch 100..109: Tansu's 101 does not show the lag (documented blind spot)
    stuck = {ROUNDS: Observation(end=101, committed=105, position=105)}
    assert not any(run([stuck] * 30))


def test_messages_in_the_workers_hands_are_a_slow_handler_not_a_stall() -> None:
    # fetched beyond the committed offset (a handler retrying while Redis is down, a long barrier wait)
    fetched = {ROUNDS: Observation(end=50, committed=20, position=30)}
    in_flight = {ROUNDS: Observation(end=50, committed=20, position=20, in_flight=True)}
    assert not any(run([fetched] * 30)) and not any(run([in_flight] * 30))
    # and the clock starts only once nothing is in hand any more
    results = run([fetched] * 10 + [{ROUNDS: Observation(end=50, committed=30, position=30)}] * 13)
    assert not any(results[:22]) and results[22] == {ROUNDS}


def test_nothing_committed_yet_falls_back_to_the_fetch_position() -> None:
    # a new consumer group: Faust records no committed offset; the position is where fetching starts
    never_fetched = {ROUNDS: Observation(end=5, committed=None, position=0)}
    no_position = {ROUNDS: Observation(end=5, committed=None, position=None)}
    consumed = {ROUNDS: Observation(end=5, committed=None, position=5)}
    assert run([never_fetched] * 13)[-1] == {ROUNDS}
    assert run([no_position] * 13)[-1] == {ROUNDS}
    assert not any(run([consumed] * 30))


def test_unknown_end_offset_and_unassigned_partitions_are_dropped() -> None:
    stuck = Observation(end=50, committed=20, position=20)
    tracks, _ = assess({}, {ROUNDS: stuck, UPDATES: stuck}, 0.0, TIMEOUT)
    assert set(tracks) == {ROUNDS, UPDATES}
    tracks, stalled = assess(tracks, {ROUNDS: Observation(None, 20, 20)}, 61.0, TIMEOUT)  # UPDATES revoked
    assert tracks == {} and stalled == set()


def test_partitions_are_judged_independently() -> None:
    history = [{ROUNDS: Observation(50, 20, 20), OTHER: Observation(90, 10 * i, 10 * i), UPDATES: Observation(7, 7, 7)}
               for i in range(13)]
    assert run(history)[-1] == {ROUNDS}


def test_decide_heals_first_then_exits_when_the_heal_did_not_help() -> None:
    first = decide({ROUNDS}, {}, 100.0, TIMEOUT, True)
    assert first.heal == {ROUNDS} and not first.exit and first.healed_at == {ROUNDS: 100.0}
    waiting = decide({ROUNDS}, first.healed_at, 159.0, TIMEOUT, True)
    assert not waiting.heal and not waiting.exit and waiting.healed_at == {ROUNDS: 100.0}
    gone = decide({ROUNDS}, first.healed_at, 160.0, TIMEOUT, True)
    assert gone.exit and gone.hopeless == {ROUNDS} and not gone.heal


def test_decide_without_exit_heals_again_and_forgets_recovered_partitions() -> None:
    first = decide({ROUNDS, UPDATES}, {}, 0.0, TIMEOUT, False)
    again = decide({ROUNDS, UPDATES}, first.healed_at, 60.0, TIMEOUT, False)
    assert again.heal == {ROUNDS, UPDATES} and not again.exit and again.hopeless == {ROUNDS, UPDATES}
    assert again.healed_at == {ROUNDS: 60.0, UPDATES: 60.0}
    recovered = decide({UPDATES}, again.healed_at, 70.0, TIMEOUT, False)
    assert recovered.healed_at == {UPDATES: 60.0} and not recovered.heal
    # a partition that stalls again later is healed first again, not exited on at once
    later = decide({ROUNDS}, recovered.healed_at, 500.0, TIMEOUT, True)
    assert later.heal == {ROUNDS} and not later.exit


def test_describe_names_each_partition_with_its_offsets() -> None:
    text = describe({UPDATES, ROUNDS}, {ROUNDS: Observation(101, 100, 100)})
    assert text == "player-updates[2], rounds[0] (committed 100, position 100, end 101)"
