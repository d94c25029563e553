"""The router parses a tap's callback data once and hands the typed button to the one handler
registered for its type; two handlers for one type are refused when the router is built, and a
tap nobody owns is told the button is not valid."""

from __future__ import annotations

from typing import Any, cast

import pytest

from palui import callbacks
from palui.callbacks import ApprovalAction, ApprovalButton, JobButton
from palui.db import Store
from palui.domain import ChatUser, Inbound
from palui.interact.router import NOT_VALID, Router
from palui.ports import Channel

USER = ChatUser(id=1, username="ana")


class _Inbox:
    def __init__(self) -> None:
        self.done: list[int] = []

    async def mark_done(self, update_ids: list[int]) -> None:
        self.done += update_ids


class _Store:
    def __init__(self) -> None:
        self.inbox = _Inbox()


class _Toasts:
    def __init__(self) -> None:
        self.told: list[str] = []

    async def answer_callback(self, _query_id: str, text: str) -> None:
        self.told.append(text)


class _Taps:
    def __init__(self, *buttons: type[callbacks.Callback]) -> None:
        self.buttons = buttons
        self.got: list[Any] = []

    async def tap(self, _inbound: Inbound, button: Any) -> bool:
        self.got.append(button)
        return True


def _router(*taps: _Taps) -> tuple[Router, _Store, _Toasts]:
    store, toasts = _Store(), _Toasts()
    return Router([], taps, cast(Store, store), cast(Channel, toasts)), store, toasts


def _tap(data: str, update_id: int = 7) -> Inbound:
    return Inbound(update_id, 1, USER, None, callback_query_id="q", callback_data=data)


async def test_the_router_hands_the_parsed_button_to_its_one_handler() -> None:
    approvals, jobs = _Taps(ApprovalButton), _Taps(JobButton)
    router, _, _ = _router(approvals, jobs)
    tap = _tap(callbacks.job("p", "tok"))
    assert await router.owns(tap)
    assert await router.handle(tap) is True
    assert jobs.got == [JobButton("p", "tok")] and approvals.got == []
    assert await router.handle(_tap(callbacks.approval("t", ApprovalAction.DENY)))
    assert approvals.got == [ApprovalButton("t", ApprovalAction.DENY)]


async def test_a_tap_no_handler_owns_is_not_valid_and_done() -> None:
    router, store, toasts = _router(_Taps(ApprovalButton))
    for data in ("jb:p:tok", "zz:forged", "ap:t:maybe"):
        assert await router.handle(_tap(data, update_id=9)) is False
    assert toasts.told == [NOT_VALID] * 3 and store.inbox.done == [9, 9, 9]


def test_two_handlers_for_one_button_type_are_refused() -> None:
    with pytest.raises(ValueError, match="ApprovalButton"):
        _router(_Taps(ApprovalButton), _Taps(ApprovalButton, JobButton))
