"""The boundaries Palui's core talks through, as narrow protocols (implementations are injected).

A consumer depends on the narrow port it uses, not on the whole channel:

- `channel`: the chat channel's ports: `Sending` a reply's typed rendered `Part`s (sent, edited
  into a preview, deleted), `Notices`, `Cards`, `Files`, `Reactions`, `Voice` (a spoken
  answer), `Leftovers` (looking for a message whose id a crash kept from the records);
  `Replies` (the outbox's), `Answering` (a turn's), `Notifying` (cards and notices); and
  `Channel`, all of them: what a real adapter
  (Telegram, the console) implements and only the composition root holds;
- `streaming`: the raw calls a channel streams an answer with (`Streaming`, `StreamFaces`) and
  the stream a turn feeds (`ReplyStream`, built and paced by `palui.delivery`);
- `inbound`: where a channel puts what people send (`InboundSink`, `Interactions`) and how a
  conversation (a chat, or one topic of it) is keyed (`ConversationKeys`);
- `model`: `ChatModel`, `Transcriber`, `Speaker`; `tools`: `Toolset`, `ToolRunner`, `Ledger`, …;
- `leases`: the leases work runs under (`Fences`, `SenderLeases`) and background work (`Spawner`).

The agent and the chat layer depend on these, never on the libraries or layers behind them.
"""

from palui.ports.channel import Answering as Answering
from palui.ports.channel import Cards as Cards
from palui.ports.channel import Channel as Channel
from palui.ports.channel import Files as Files
from palui.ports.channel import Leftovers as Leftovers
from palui.ports.channel import Notes as Notes
from palui.ports.channel import Notices as Notices
from palui.ports.channel import Notifying as Notifying
from palui.ports.channel import Part as Part
from palui.ports.channel import Reactions as Reactions
from palui.ports.channel import Replies as Replies
from palui.ports.channel import Sending as Sending
from palui.ports.channel import Voice as Voice
from palui.ports.inbound import ConversationKeys as ConversationKeys
from palui.ports.inbound import InboundSink as InboundSink
from palui.ports.inbound import Interactions as Interactions
from palui.ports.leases import Fences as Fences
from palui.ports.leases import SenderLeases as SenderLeases
from palui.ports.leases import Spawner as Spawner
from palui.ports.model import ChatModel as ChatModel
from palui.ports.model import DeltaHandler as DeltaHandler
from palui.ports.model import Speaker as Speaker
from palui.ports.model import Transcriber as Transcriber
from palui.ports.streaming import ReplyStream as ReplyStream
from palui.ports.streaming import StreamFaces as StreamFaces
from palui.ports.streaming import Streaming as Streaming
from palui.ports.tools import Delegations as Delegations
from palui.ports.tools import Ledger as Ledger
from palui.ports.tools import OriginToolset as OriginToolset
from palui.ports.tools import ScopedToolset as ScopedToolset
from palui.ports.tools import ToolRunner as ToolRunner
from palui.ports.tools import Toolset as Toolset
