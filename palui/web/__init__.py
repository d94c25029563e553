"""The web console: pages under `/ui` on Palui's own HTTP server (DESIGN §1.12).

Server-rendered HTML (aiohttp + jinja2, autoescape on), no JavaScript at all and nothing from the
internet; the one stylesheet is served by Palui under `/ui/static/`, behind the session like
every page. It reads through `palui.db.Store` and the same parts the chat uses (an approval is
decided by `Approvals.decide`, the function a tap goes through), never through sqlalchemy.

The contract the page modules keep:
- `console.console_app(deps)` builds the sub-application; `palui.app` builds `WebDeps` and hands
  the sub-application to `palui.http.server.HttpServer`, which mounts it at `/ui`.
- `access` (middleware): no session, no page: every path but the sign-in ones answers 401 with
  a page that says to send `/web`. It sets `request["viewer"]` (`viewer.Viewer`: the person's
  user id, the chats they may see, the session's CSRF token), and refuses (403) any POST whose
  form lacks that token, before a handler runs.
- Each page module exposes `routes(deps) -> list[web.RouteDef]`; `routes.add_routes` lists them.
  Handlers read the viewer from the request, show only its `chat_ids`, and answer a POST with a
  303 back to a page.
- Templates in `templates/` extend `base.html` (blocks `title` and `content`); `render.render`
  puts `viewer`, `csrf` and `nav` (the page's name) in every context, and every form carries
  `<input type="hidden" name="csrf" value="{{ csrf }}">`.

Which chats a person sees: their private chat with the bot (its id is their user id) and every
group where Palui stored a message from them (the inbox records who wrote); a group they never
spoke in is not theirs, and nobody outside `PALUI_ALLOWED_USERS` gets a session at all.
"""
