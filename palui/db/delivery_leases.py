"""Delivery leases: one process at a time sends a chat's outbox (DESIGN §3, several processes).

Replies are committed to the shared outbox and any process may deliver them (after its own turn,
a command, a tap, its start-up or its retry sweep). Without a lease two processes could send the
same reply part at once; with it the others leave the chat's outbox to the holder, which reads
it again until it is empty. The rows behave exactly like chat leases, in their own table.
"""

from __future__ import annotations

from palui.db.leases import LeaseRepo
from palui.db.models import DeliveryLease


class DeliveryLeaseRepo(LeaseRepo):
    table = DeliveryLease
