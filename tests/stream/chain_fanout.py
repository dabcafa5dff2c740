"""Chained fan-outs for phase-two tests and bench/handlers.py: what a batched phase one stores and
sends for rounds rated in one batch (DESIGN15), made in process.

Each round is registered and its fan-out stored per round as phase one does (``register_round``,
``queue_round``: the digests phase two verifies against); its sections carry every entry's
``previous_seq`` (the seq of the player's previous round in the list, 0 for a first round) and
the performances ``stream.batch.replay`` computes for the rounds in order. So the rounds must
be the ladder's whole history (a fresh Redis).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stream.batch.replay import replay
from stream.contracts import PlayerUpdate, RoundResult
from stream.engine import Params
from stream.pipeline.encoding import encode_update, number_texts
from stream.pipeline.messages import FanOutMessage
from stream.pipeline.partitioner import group_by_partition
from stream.store.store import Store


def sections(round_: RoundResult, seq: int, performance: np.ndarray, previous: list[int],
             partitions: int) -> list[FanOutMessage]:
    """A round's one-section messages, one per partition of its players (as build_fanout)."""
    players, ranks = round_.players(), round_.ranks()
    texts = number_texts("performance", performance)
    out = []
    for partition, index in sorted(group_by_partition(players, partitions).items()):
        update = PlayerUpdate(ladder=round_.ladder, round_id=round_.round_id, seq=seq, occurred_at=round_.occurred_at,
                              weight=round_.weight, field_size=round_.field_size,
                              players=[players[i] for i in index], ranks=ranks[index].tolist(),
                              performances=performance[index].tolist(), previous_seqs=[previous[i] for i in index])
        value = encode_update(update, [texts[i] for i in index])
        out.append(FanOutMessage(partition, players[index[0]].encode(), value))
    return out


async def queue_chained(store: Store, rounds: Sequence[RoundResult], params: Params,
                        partitions: int) -> list[list[FanOutMessage]]:
    """Register every round, store its chained fan-out; each round's messages, in order."""
    rated = replay(list(rounds), params).rounds
    assert [(r.ladder, r.round_id) for r in rated] == [(r.ladder, r.round_id) for r in rounds], "rounds with outcomes"
    last: dict[tuple[str, str], int] = {}
    out = []
    for round_, done in zip(rounds, rated):
        registration = await store.register_round(
            round_.ladder, round_.round_id, content_hash=round_.content_hash(), occurred_at=round_.occurred_at,
            received_at=0.0, field_size=round_.field_size, body=round_.to_json().encode())
        seq = registration.seq
        players = round_.players()
        assert list(done.players) == players
        previous = [last.get((round_.ladder, p), 0) for p in players]
        messages = sections(round_, seq, np.asarray(done.performance, dtype=np.float64), previous, partitions)
        await store.queue_round(round_.ladder, round_.round_id, players, seq, pending=round_.field_size,
                                messages=[(m.partition, m.value) for m in messages])
        last.update(((round_.ladder, p), seq) for p in players)
        out.append(messages)
    return out
