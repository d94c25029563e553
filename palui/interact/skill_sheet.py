"""`/skills`: one card per folder of the skills directory (its name, state, description, the
start of its digest, its files), with ✅ Trust on a skill that is not trusted — in a private chat
only, where the person reads what they trust. A tap trusts the folder exactly as the card showed
it (`sk:t:<digest prefix>`): if a file changed since, nothing is trusted and the card is drawn
again as it is now. Trusting records the digest (`palui.db.skills`) and bumps the settings
version, so every process offers the skill from its next turn.
"""

from __future__ import annotations

from palui import callbacks
from palui.callbacks import SkillButton
from palui.chat.groups import threaded_to
from palui.domain import Button, Card, Inbound
from palui.interact.taps import SheetTap
from palui.ports import Cards
from palui.skills import SkillLibrary, SkillState, SkillView

KEY_HEX = 16  # digest hex digits a button carries
STATES = {
    SkillState.TRUSTED: "✅ trusted",
    SkillState.UNTRUSTED: "🆕 not trusted",
    SkillState.CHANGED: "⚠️ changed since it was trusted",
    SkillState.BROKEN: "❌ not usable",
}
NO_SKILLS = "No skills are installed. Put a skill's folder (with its SKILL.md) in {root}."
PRIVATE_ONLY = "Skills can be trusted only in your private chat with me."


def _private(inbound: Inbound) -> bool:
    return inbound.chat_id == inbound.user.id


class SkillSheet:
    def __init__(self, library: SkillLibrary, channel: Cards) -> None:
        self.library = library
        self._channel = channel

    def card(self, view: SkillView, *, private: bool) -> Card:
        lines = [f"🧩 {view.name}  ·  {STATES[view.state]}"]
        skill = view.skill
        if skill is not None:
            lines.append(skill.description)
            lines.append(f"Files: {', '.join(skill.files)}")
        else:
            lines.append(f"Why: {getattr(view.found, 'problem', '')}")
        if view.digest:
            lines.append(f"Digest: {view.digest[:KEY_HEX]}…")
        buttons: tuple[Button, ...] = ()
        if private and skill is not None and view.state is not SkillState.TRUSTED:
            buttons = (Button("✅ Trust", callbacks.skill("t", view.digest[:KEY_HEX])),)
        return Card("\n".join(lines), buttons=buttons)

    async def post(self, inbound: Inbound) -> str | None:
        """Send a card per skill; the text to send instead when there is none."""
        views = await self.library.look()
        if not views:
            return NO_SKILLS.format(root=self.library.root)
        private = _private(inbound)
        for view in views:
            card = self.card(view, private=private)
            await self._channel.send_card(inbound.chat_id, card, reply_to=threaded_to(inbound))
        untrusted = any(v.state is not SkillState.TRUSTED and v.skill for v in views)
        return None if private or not untrusted else PRIVATE_ONLY

    async def tap(self, inbound: Inbound, button: SkillButton) -> SheetTap:
        chat, message = inbound.chat_id, inbound.message_id
        if not _private(inbound):
            return SheetTap(PRIVATE_ONLY, chat, message)
        views = await self.library.look()
        shown = next((v for v in views if v.digest.startswith(button.key)), None)
        if button.op != "t" or len(button.key) != KEY_HEX or shown is None:
            return SheetTap("That skill changed or is gone; send /skills again.", chat, message)
        try:
            trusted = await self.library.trust(
                shown.name, f"user:{inbound.user.id}", digest=button.key
            )
        except LookupError as exc:
            return SheetTap(str(exc), chat, message)
        notice = f"{shown.name} is trusted: offered from the next turn."
        return SheetTap(notice, chat, message, self.card(trusted, private=True))
