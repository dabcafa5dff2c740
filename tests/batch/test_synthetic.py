"""The §6.1 generator: deterministic per seed, the requested shape, ranks that follow performance."""

from __future__ import annotations

from pathlib import Path

from stream.batch import read_rounds, synthetic_rounds, write_jsonl


def test_seeded_and_shaped() -> None:
    one = list(synthetic_rounds(200, 6, 50, seed=5))
    assert one == list(synthetic_rounds(200, 6, 50, seed=5))
    assert one != list(synthetic_rounds(200, 6, 50, seed=6))
    assert len(one) == 6
    for r in one:
        assert r.field_size == 50 and len(set(r.players())) == 50
        assert r.ranks().tolist() == list(range(1, 51))  # no ties without a quantum
    assert one[1].occurred_at > one[0].occurred_at
    assert len({p for r in one for p in r.players()}) > 100


def test_tie_quantum_gives_competition_ranks() -> None:
    for r in synthetic_rounds(100, 3, 100, seed=2, tie_quantum=50.0):
        ranks = r.ranks()
        assert ranks[0] == 1 and (ranks[1:] >= ranks[:-1]).all()
        assert len(set(ranks.tolist())) < 100
        # competition ranking: a rank equals 1 + the number of players strictly ahead
        assert all(rank == 1 + int((ranks < rank).sum()) for rank in ranks.tolist())


def test_jsonl_round_trip(tmp_path: Path) -> None:
    rounds = list(synthetic_rounds(30, 4, 10, seed=1))
    path = tmp_path / "s.jsonl.gz"
    assert write_jsonl(rounds, path) == 4
    assert read_rounds(path) == rounds
