"""Phase one's fan-out of a ladder's rounds built in one pass equals it built round by round by
the plain definition (:func:`round_messages`, the oracle: per partition its players' entries
joined, split in halves while a part exceeds the limit)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import RoundResult, Standing
from stream.contracts.encoding import entry_texts, join_entries, number_texts, update_head
from stream.pipeline.messages import FanOutMessage, partition_messages
from stream.pipeline.partitioner import partitions_of
from stream.pipeline.phase_one import _ToRate

import numpy as np


def group_by_partition(players: list[str], partitions: int) -> dict[int, list[int]]:
    """Indices of ``players`` grouped by their partition (in input order within a group)."""
    groups: dict[int, list[int]] = {}
    for index, partition in enumerate(partitions_of(players, partitions)):
        groups.setdefault(partition, []).append(index)
    return groups


def round_messages(round_: RoundResult, seq: int, entries: list[str], partitions: int, limit: int) -> list[FanOutMessage]:
    """The oracle: one round's fan-out messages from the texts of its entries, per partition
    (ascending) its players' entries joined, split in halves while a part exceeds ``limit``."""
    players = round_.players()
    head = update_head(round_.ladder, round_.round_id, seq, round_.occurred_at, round_.weight, round_.field_size)

    def encode(index: list[int]) -> list[tuple[int, bytes]]:
        value = join_entries(head, [entries[i] for i in index])
        if len(value) <= limit or len(index) == 1:
            return [(index[0], value)]
        half = len(index) // 2
        return encode(index[:half]) + encode(index[half:])

    return [FanOutMessage(partition, players[first].encode(), value)
            for partition, index in sorted(group_by_partition(players, partitions).items())
            for first, value in encode(index)]


@st.composite
def ladder_rounds(draw: st.DrawFn) -> list[RoundResult]:
    """Rounds of one ladder from a small pool (players recur across rounds), ids of any text."""
    pool = draw(st.lists(st.text(min_size=1, max_size=6), min_size=2, max_size=12, unique=True))
    rounds = []
    for k in range(draw(st.integers(1, 6))):
        players = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=len(pool), unique=True))
        ranks = draw(st.lists(st.integers(1, 3), min_size=len(players), max_size=len(players)))
        rounds.append(RoundResult(round_id=f"r{k}", ladder="lädder", occurred_at=1.7e9 + k,
                                  standings=[Standing(p, r) for p, r in zip(players, ranks)]))
    return rounds


@settings(max_examples=200, deadline=None)
@given(ladder_rounds(), st.integers(1, 5), st.integers(1, 400), st.data())
def test_ladder_messages_equal_round_messages_one_by_one(rounds: list[RoundResult], partitions: int, limit: int,
                                                         data: st.DataObject) -> None:
    items = [_ToRate(k, r, 10 + k, r.players()) for k, r in enumerate(rounds)]
    flat = [p for item in items for p in item.players]
    bounds = np.concatenate(([0], np.cumsum([len(item.players) for item in items]))).tolist()
    performance = np.asarray(data.draw(st.lists(st.floats(-5e3, 5e3), min_size=len(flat), max_size=len(flat))))
    previous = data.draw(st.lists(st.integers(0, 50), min_size=len(flat), max_size=len(flat)))
    entries = entry_texts(flat, [s.rank for r in rounds for s in r.standings], number_texts("performance", performance),
                          previous)
    one_by_one = [round_messages(item.round_, item.seq, entries[a:b], partitions, limit)
                  for item, a, b in zip(items, bounds[:-1], bounds[1:])]
    heads = [update_head(i.round_.ladder, i.round_.round_id, i.seq, i.round_.occurred_at, i.round_.weight,
                         len(i.players)) for i in items]
    assert partition_messages(heads, entries, flat, bounds, partitions, limit) == one_by_one


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=8), max_size=30), st.integers(1, 7))
def test_partitions_of_equals_partition_for_one_by_one(keys: list[str], partitions: int) -> None:
    from stream.pipeline.partitioner import partition_for, partitions_of

    assert partitions_of(keys, partitions) == [partition_for(k, partitions) for k in keys]
    assert partitions_of(keys, partitions) == [partition_for(k, partitions) for k in keys]  # now all known
