"""Key builders follow docs/contracts.md, and one player's / one ladder's keys share a slot."""

from hypothesis import given
from hypothesis import strategies as st
from redis.crc import key_slot

from stream.store import keys


def test_names_match_the_contract() -> None:
    assert keys.ladders() == "ems:ladders"
    assert keys.ladder("L") == "ems:ladder:{L}"
    assert keys.leaderboard("L") == "ems:lb:{L}"
    assert keys.rounds("L") == "ems:rounds:{L}"
    assert keys.round_record("L", "R") == "ems:round:{L}:R"
    assert keys.round_results("L", "R") == "ems:round-results:{L}:R"
    assert keys.round_perf("L", "R") == "ems:round-perf:{L}:R"
    assert keys.player("L", "P") == "ems:player:{L|P}"
    assert keys.history("L", "P") == "ems:history:{L|P}"
    assert keys.lease("L") == "ems:lease:{L}"
    assert keys.fence("L") == "ems:fence:{L}"


def test_one_players_keys_share_a_slot_and_one_ladders_keys_too() -> None:
    assert key_slot(keys.player("L", "alice").encode()) == key_slot(keys.history("L", "alice").encode())
    ladder_slots = {key_slot(k.encode()) for k in (
        keys.ladder("L"), keys.leaderboard("L"), keys.rounds("L"), keys.round_record("L", "r1"),
        keys.round_results("L", "r1"), keys.round_perf("L", "r1"), keys.lease("L"), keys.fence("L"))}
    assert len(ladder_slots) == 1


@given(st.text(min_size=1, max_size=8), st.lists(st.text(max_size=8), max_size=5))
def test_players_equals_player_one_by_one(ladder: str, ids: list[str]) -> None:
    assert keys.players(ladder, ids) == [keys.player(ladder, p) for p in ids]
