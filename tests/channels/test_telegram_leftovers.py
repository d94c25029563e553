"""The search for a message sent but never recorded: ids above the floor, one at a time, the
first that is the bot's; never past what this process sent since, never more than a few."""

from __future__ import annotations

import pytest

from palui.channels.telegram.leftovers import MAX_PROBES, Probe, SentIds, find, read_refusal
from palui.errors import ChannelError


class Chat:
    def __init__(self, answers: dict[int, Probe]) -> None:
        self.answers = answers
        self.probed: list[int] = []

    async def probe(self, message_id: int) -> Probe:
        self.probed.append(message_id)
        return self.answers.get(message_id, Probe.NOT_OURS)


async def test_the_first_message_of_ours_above_the_floor_is_found_past_the_persons() -> None:
    chat = Chat({11: Probe.NOT_OURS, 12: Probe.OURS, 13: Probe.OURS})
    assert await find(chat.probe, 10, None) == 12
    assert chat.probed == [11, 12]


async def test_nothing_is_probed_at_or_past_a_message_this_process_sent_since() -> None:
    chat = Chat({12: Probe.OURS})
    assert await find(chat.probe, 10, 12) is None
    assert chat.probed == [11]


async def test_the_search_gives_up_after_a_few_probes_or_when_telegram_cant_say() -> None:
    far = Chat({10 + MAX_PROBES + 1: Probe.OURS})
    assert await find(far.probe, 10, None) is None
    assert far.probed == list(range(11, 11 + MAX_PROBES))
    unsure = Chat({11: Probe.UNSURE, 12: Probe.OURS})
    assert await find(unsure.probe, 10, None) is None
    assert unsure.probed == [11]


async def test_a_strict_search_telegram_did_not_answer_fails_instead_of_finding_nothing() -> None:
    # A reply part not found is sent: "Telegram did not answer" (an outage) must not read "no".
    chat = Chat({11: Probe.FAILED, 12: Probe.OURS})
    with pytest.raises(ChannelError) as failed:
        await find(chat.probe, 10, None, strict=True)
    assert not failed.value.permanent
    assert await find(chat.probe, 10, None) is None  # a preview's search: gives up, as before


def test_telegrams_refusals_are_read_as_telegram_means_them() -> None:
    assert read_refusal("Bad Request: message is not modified: specified new") is Probe.OURS
    assert read_refusal("Bad Request: message can't be edited") is Probe.NOT_OURS
    assert read_refusal("Bad Request: message to edit not found") is Probe.NOT_OURS
    assert read_refusal("Bad Request: chat not found") is Probe.NOT_OURS
    assert read_refusal("Bad Request: something else") is Probe.UNSURE


def test_the_ids_sent_are_kept_per_chat_and_bounded() -> None:
    sent = SentIds()
    for message_id in (5, 9, 7):
        sent.note(1, message_id)
    sent.note(2, 100)
    assert sent.newest(1) == 9
    assert sent.first_above(1, 6) == 7
    assert sent.first_above(1, 9) is None
    assert sent.newest(3) is None
