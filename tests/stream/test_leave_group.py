"""LEAVE_GROUP_ON_STOP: a stopping consumer sends aiokafka's LeaveGroup, or only forgets its
generation (the coordinator drops it at its session timeout: what the embedded broker needs,
stream/stack/README.md "No leader after everyone left")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.protocol.group import LeaveGroupRequest

from stream.pipeline.runtime.compat import leave_group_on_stop
from stream.settings import Settings


class Member:
    """What ``GroupCoordinator._maybe_leave_group`` reads of a coordinator: a member of generation 3."""

    def __init__(self) -> None:
        self.group_id, self.member_id, self.generation, self._group_instance_id = "g", "m-1", 3, None
        self.sent: list[object] = []

    async def _send_req(self, request: object) -> object:
        self.sent.append(request)
        return None

    def reset_generation(self) -> None:
        self.generation, self.member_id = -1, ""


@pytest.fixture
def restored() -> Iterator[None]:
    yield
    leave_group_on_stop(True)


def stop(member: Member) -> None:
    asyncio.run(GroupCoordinator._maybe_leave_group(member))  # type: ignore[arg-type]


def test_a_stopping_member_leaves_its_group_by_default(restored: None) -> None:
    assert Settings().leave_group_on_stop is True
    leave_group_on_stop(Settings().leave_group_on_stop)
    member = Member()
    stop(member)
    assert [type(r).__name__ for r in member.sent] == [LeaveGroupRequest.__name__], member.sent
    assert member.generation == -1


def test_without_leave_group_it_only_forgets_its_generation(restored: None) -> None:
    settings = Settings.from_env({"LEAVE_GROUP_ON_STOP": "false"})
    leave_group_on_stop(settings.leave_group_on_stop)
    leave_group_on_stop(settings.leave_group_on_stop)  # idempotent
    member = Member()
    stop(member)
    assert member.sent == [], "no LeaveGroup request"
    assert (member.generation, member.member_id) == (-1, ""), "the next join starts as a new member"
    leave_group_on_stop(True)
    again = Member()
    stop(again)
    assert len(again.sent) == 1, "switched back: LeaveGroup sent again"
