"""Tables, one module per concept. Times are stored in UTC; every row a turn needs to resume
lives here. Import any model from `palui.db.models` (Alembic's env does too)."""

from palui.db.models.approvals import ApprovalEdit, ApprovalRow, PausedTurn
from palui.db.models.base import NAMING, Base, UTCDateTime, utcnow
from palui.db.models.calls import CallRecordRow, TurnOfferRow
from palui.db.models.chats import (
    Chat,
    ChatSession,
    MessageRow,
    ModelCall,
    ModelStandIn,
    Topic,
    Turn,
)
from palui.db.models.jobs import JobRow, JobRun
from palui.db.models.leases import ChatLease, DeliveryLease, ProcessHeartbeat, StopRequest
from palui.db.models.mail import InboxUpdate, OutboxMessage, StrangerNotice
from palui.db.models.memory import MemorySlice, MemorySwitches, RecallCheck
from palui.db.models.oauth import OAuthGrant, OAuthSignIn, ServerQuestion
from palui.db.models.tools import (
    ActionRow,
    ConnectorSetting,
    SendCapNotice,
    SettingsVersion,
    SkillTrust,
    ToolSetting,
)
from palui.db.models.upkeep import UpkeepMark
from palui.db.models.web import WebLink, WebSession
from palui.db.models.webhooks import WebhookDelivery

__all__ = [
    "NAMING",
    "ActionRow",
    "ApprovalEdit",
    "ApprovalRow",
    "Base",
    "CallRecordRow",
    "Chat",
    "ChatLease",
    "ChatSession",
    "ConnectorSetting",
    "DeliveryLease",
    "InboxUpdate",
    "JobRow",
    "JobRun",
    "MemorySlice",
    "MemorySwitches",
    "MessageRow",
    "ModelCall",
    "ModelStandIn",
    "OAuthGrant",
    "OAuthSignIn",
    "OutboxMessage",
    "PausedTurn",
    "ProcessHeartbeat",
    "RecallCheck",
    "SendCapNotice",
    "ServerQuestion",
    "SettingsVersion",
    "SkillTrust",
    "StopRequest",
    "StrangerNotice",
    "ToolSetting",
    "Topic",
    "Turn",
    "TurnOfferRow",
    "UTCDateTime",
    "UpkeepMark",
    "WebLink",
    "WebSession",
    "WebhookDelivery",
    "utcnow",
]
