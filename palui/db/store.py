"""Repositories: the only way the rest of Palui reads or writes rows, gathered over one database.

Each method is one transaction. Rows leave the repositories as frozen dataclasses (the records
of `palui.domain`), never as ORM objects, so nothing above the database layer can lazily load or
accidentally write. Each concept's repository lives in a module of its own in `palui.db`.
"""

from __future__ import annotations

from palui.db.approval_edits import ApprovalEditRepo
from palui.db.approvals import ApprovalRepo
from palui.db.calls import CallRecordRepo
from palui.db.chat_choices import ChatChoiceRepo
from palui.db.engine import Database
from palui.db.heartbeats import HeartbeatRepo
from palui.db.inbox import InboxRepo
from palui.db.jobs import JobRepo
from palui.db.leases import DeliveryLeaseRepo, LeaseRepo
from palui.db.ledger import ActionLedger
from palui.db.memory import MemoryRepo
from palui.db.outbox import OutboxRepo
from palui.db.queues import QueueRepo
from palui.db.recovery import RecoveryRepo
from palui.db.retention import RetentionRepo
from palui.db.runs import RunRepo
from palui.db.sessions import ChatRepo
from palui.db.skills import SkillTrustRepo
from palui.db.stand_ins import StandInRepo
from palui.db.stop_requests import StopRequestRepo
from palui.db.strangers import StrangerRepo
from palui.db.tools import ToolSettingRepo
from palui.db.topics import TopicRepo
from palui.db.turn_listing import TurnListingRepo
from palui.db.turns import TurnRepo
from palui.db.usage import UsageRepo
from palui.db.web import WebRepo
from palui.db.webhooks import WebhookRepo


class Store:
    """All repositories over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.inbox = InboxRepo(db)
        self.chats = ChatRepo(db)
        self.choices = ChatChoiceRepo(db)  # a chat's /model and /voice
        self.turns = TurnRepo(db)
        self.outbox = OutboxRepo(db)
        self.strangers = StrangerRepo(db)
        self.tool_calls = CallRecordRepo(db)  # each call's record
        self.approvals = ApprovalRepo(db)
        self.tool_settings = ToolSettingRepo(db)
        self.actions = ActionLedger(db)
        self.approval_edits = ApprovalEditRepo(db)
        self.memory = MemoryRepo(db)
        self.webhooks = WebhookRepo(db)
        self.leases = LeaseRepo(db)
        self.recovery = RecoveryRepo(db)
        self.delivery_leases = DeliveryLeaseRepo(db)
        self.heartbeats = HeartbeatRepo(db)  # which lease holders still run
        self.jobs = JobRepo(db)
        self.stop_requests = StopRequestRepo(db)
        self.retention = RetentionRepo(db)  # the daily prune (chat.sweepers)
        self.usage = UsageRepo(db)  # the web console's charts
        self.web = WebRepo(db)  # the web console's links and sessions
        self.runs = RunRepo(db)  # `palui runs`: a turn's steps
        self.turn_listing = TurnListingRepo(db)  # the web console's turns and their calls
        self.skills = SkillTrustRepo(db)  # skills trusted by digest (palui.skills)
        self.queues = QueueRepo(db)  # what waits for a chat, in one query (chat.workers)
        self.topics = TopicRepo(db)  # conversation keys of topics (palui.db.topics)
        self.stand_ins = StandInRepo(db)  # fallbacks that stood in for a refused primary
