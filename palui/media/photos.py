"""Photos: the image goes to the model as an image part beside the caption, only when the model
accepts images; otherwise a reply that says so, and no model call.

History keeps a text placeholder (`[photo] caption`), never the image: a base64 photo would
ride along in every later turn's context and in the database for good. The image is attached
to that placeholder message for the turn that reads it alone (`with_images`); a turn resumed
after a card sees the placeholder.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence

from palui.domain import Attachment, Message, Role

NO_VISION = (
    "The model I use can't see images, so I can't look at that photo. Describe it in words, or "
    "ask the operator for a model that sees images (PALUI_MODEL_VISION=true tells me it does)."
)


# The photo's item among the message's someone-else's words (`palui.turns.foreign` fences it).
ATTACHED = "(an image: it is attached to the user's message that follows)"


def placeholder(caption: str | None) -> str:
    """What history holds for a photo: the caption is the person's own words about it."""
    caption = (caption or "").strip()
    return f"[photo] {caption}" if caption else "[photo]"


def data_url(attachment: Attachment, image: bytes) -> str:
    mime = attachment.mime_type or "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"


def with_images(
    messages: Sequence[Message], images: Mapping[str, tuple[str, ...]]
) -> list[Message]:
    """`messages` with each photo's image on its placeholder message (`images`: placeholder ->
    data URLs), the newest such user message: the one this turn just added."""
    out = list(messages)
    left = dict(images)
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if message.role is Role.USER and message.content in left:
            urls = left.pop(message.content)
            out[index] = Message(Role.USER, message.content, images=urls)
    return out
