"""Files people send, made into what a chat turn reads (DESIGN §1.1 for whose words they are).

`intake` decides, per message, what its file becomes: a voice note's transcript (`voice`: the
person's own words), a photo as an image for the model (`photos`), a document's text fenced as
data (`documents`); or a clear reply when it can't be read, and then no turn runs for it. The
chat layer runs the intake before a turn (palui.chat.media_step); the channel downloads, the
`Transcriber` port transcribes.
"""

from palui.media.intake import MediaIntake, MediaLimits, Read, Refused
from palui.media.photos import with_images

__all__ = ["MediaIntake", "MediaLimits", "Read", "Refused", "with_images"]
