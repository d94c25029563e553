"""Getting an answer on screen exactly once: the one home of "nothing shown twice".

- `outbox`: the ONE sender of a chat's replies, in order, each part recorded as it goes out,
  under the chat's delivery lock and lease;
- `shown`: the ONE place that decides whether a part is already on screen (in its preview, or
  sent by a sender that died before recording it), and finds an interrupted turn's preview;
- `pacer`: when and what a growing answer shows, for both faces of streaming: `preview` (a
  message edited in place) and `draft` (a native draft that falls back to the preview);
- `streams`: the stream a chat turn feeds, built from the channel's raw calls, including the
  preview an interrupted turn left, taken over by its re-run (`LeftPreview`).

Channel-specific work (Telegram's calls, its error mapping, its probes) stays in the adapter
behind `palui.ports`; SQL stays in `palui.db` (this package calls its repositories). It sits
below `palui.turns` and `palui.chat`, which use it, and above the adapters.
"""
