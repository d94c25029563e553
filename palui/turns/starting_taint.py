"""A turn's starting taint: the one place that decides it, from every source (DESIGN §1.1).

Taint is not laundered through the conversation: a turn whose history holds a message of a
tainted turn, or whose session summary was built from one, starts tainted and names the latest
source and how many turns ago it came in. Taint is provenance and travels: memory from a recall
that is not trusted, or a memory saved in a tainted turn (recall reports its origin), taints the
turn it informs; a webhook payload taints its summary turn; a job created in a tainted turn
taints each of its runs. Someone else's words in the person's messages (a forward, a replied-to
message of someone else, a document or photo: `Inbound.foreign`) taint the turn that reads them
and, stored as untrusted history, the turns after it. During the turn `CallRunner` adds taint
as untrusted results arrive (a memory tool's result too); this module only decides the start.
"""

from __future__ import annotations

from collections.abc import Sequence

from palui.db import History
from palui.domain import RECALL_ID, Inbound, JobRecord, Role, Taint, TaintVia
from palui.memory import Recalled
from palui.policy.taint_rule import taints

EARLIER_SUMMARY = "an earlier summary"
EARLIER_MESSAGE = "an earlier message"


def from_history(history: History) -> Taint | None:
    """The taint a conversation carries into its next turn: the latest tainted message's source
    (counted in turns since), else the summary's."""
    tainted = [index for index, origin in enumerate(history.provenance) if origin.tainted]
    if not tainted:
        return Taint(EARLIER_SUMMARY, turns_ago=1) if history.summary_tainted else None
    last = tainted[-1]
    origin = history.provenance[last]
    # Each reply after it is one turn later (the current turn has no reply yet).
    later = {
        after.turn_id
        for message, after in zip(
            history.messages[last + 1 :], history.provenance[last + 1 :], strict=True
        )
        if message.role == Role.ASSISTANT
    }
    ago = len(later - {origin.turn_id}) + 1
    if origin.taint is not None:
        return origin.taint.carried(ago)
    return Taint(EARLIER_SUMMARY if history.summary_tainted else EARLIER_MESSAGE, turns_ago=ago)


def from_recall(recalled: Recalled) -> Taint | None:
    """Memory recalled into the context taints the turn unless recall is trusted and every
    memory in it was saved from a clean turn; it names the memory's origin."""
    if not recalled.text:
        return None
    if taints(recalled.trust):
        return Taint(RECALL_ID, f"{RECALL_ID}__get_profile")
    if recalled.origins:
        return Taint.from_label(recalled.origins[0]).through(TaintVia.MEMORY)
    return None


def from_foreign(batch: Sequence[Inbound]) -> Taint | None:
    """The latest piece of someone else's words in the messages this turn answers, named as
    the channel labelled it ("a forwarded message from Ana"). The person's own text is not."""
    found = [item for inbound in batch for item in inbound.foreign]
    return Taint.foreign(found[-1].label) if found else None


def chat_turn(history: History, recalled: Recalled, batch: Sequence[Inbound] = ()) -> Taint | None:
    # The batch's own foreign words come first: they are in this turn, and the history (which
    # holds them too, stored as untrusted) would count them as an earlier turn's.
    return from_foreign(batch) or from_history(history) or from_recall(recalled)


def webhook_turn(webhook: str) -> Taint:
    """A webhook's payload is untrusted: its summary turn is tainted from the start."""
    return Taint.webhook(webhook)


def job_turn(job: JobRecord) -> Taint | None:
    """A job's run starts clean when a clean turn created it (its prompt is then the person's
    words); a job created in a tainted turn taints every run, naming that turn's source."""
    if job.taint_source is None:
        return None
    return Taint.from_label(job.taint_source).through(TaintVia.JOB)
