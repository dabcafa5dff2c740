"""Sections joined per partition (``messages.join_fanout``) and split again: the same sections,
in the same order per partition, each message within the limit unless a section alone is over it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stream.pipeline.messages import FanOutMessage, join_fanout, split_sections

section = st.builds(lambda partition, body, key: FanOutMessage(partition, key, b"{" + body + b"}"),
                    st.integers(0, 3), st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ")),
                    st.binary(min_size=1, max_size=4))


@given(st.lists(section, max_size=30), st.integers(1, 120))
def test_joined_sections_split_back_in_order(sections: list[FanOutMessage], limit: int) -> None:
    messages = join_fanout(sections, limit)
    for partition in {s.partition for s in sections}:
        wanted = [s.value for s in sections if s.partition == partition]
        mine = [m for m in messages if m.partition == partition]
        assert [part for m in mine for part in split_sections(m.value)] == wanted
        for m in mine:
            parts = split_sections(m.value)
            assert len(m.value) <= limit or len(parts) == 1, "only a section over the limit stands alone over it"
            first = next(s for s in sections if s.partition == partition and s.value == parts[0])
            assert m.key == first.key or any(s.key == m.key and s.value == parts[0] for s in sections)
    assert len(messages) <= len(sections)
    if sections and sum(len(s.value) + 1 for s in sections) <= limit:
        assert len(messages) == len({s.partition for s in sections}), "one message per partition when all fit"
