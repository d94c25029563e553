"""The composition root, the only one: `root.Palui` builds every part from Settings, hands each
its collaborators, and owns the start/stop order; `start.run` is `palui run`, which polls
Telegram before the rest of Palui is imported (`palui.app.start`). Nothing below it builds a
part or rewires one.

This package's own import loads nothing: `palui run` imports `start` first and `root` (the
whole daemon) only once Telegram is polled.
"""
