"""Pages from templates: one jinja2 environment per console, autoescape on for every template
(a tool's arguments or a model's words are never markup), and the headers every page carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from aiohttp import web

from palui.web.viewer import Viewer

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
JINJA: web.AppKey[jinja2.Environment] = web.AppKey("palui_jinja", jinja2.Environment)

# No script may run, nothing may load from elsewhere, no page may frame the console, and no link
# leaks the address (a sign-in link's token) to another site. `same-origin`, not `no-referrer`:
# under `no-referrer` a browser sends `Origin: null` with the console's own forms, and the sign-in
# form is refused unless its Origin is the console's (palui.web.access).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def taint_source(label: str | None) -> str:
    """`mcp-notes:mcp-notes__search_notes` as `mcp-notes (search_notes)`."""
    if not label:
        return "an untrusted source"
    connector, _, tool = label.partition(":")
    short = tool.removeprefix(f"{connector}__")
    return f"{connector} ({short})" if short else connector


def environment() -> jinja2.Environment:
    # The static folder is a search path too, so the public pages can inline the stylesheet
    # (they are shown before a session exists, and assets need one).
    loader = jinja2.FileSystemLoader([TEMPLATES, STATIC])
    env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["when"] = lambda at: at.strftime("%Y-%m-%d %H:%M:%S") if at else "—"
    env.filters["thousands"] = lambda n: f"{n:,}"
    env.filters["source"] = taint_source
    return env


def render(
    request: web.Request, template: str, *, status: int = 200, **context: Any
) -> web.Response:
    """The page, with the viewer, its CSRF token and the nav entry in its context."""
    viewer = request.get("viewer")
    context.setdefault("nav", "")
    context["viewer"] = viewer
    context["csrf"] = viewer.csrf if isinstance(viewer, Viewer) else ""
    html = request.app[JINJA].get_template(template).render(**context)
    return web.Response(
        text=html, status=status, content_type="text/html", headers=SECURITY_HEADERS
    )


def see_other(location: str) -> web.Response:
    """The answer to every POST: back to a page."""
    return web.Response(status=303, headers={**SECURITY_HEADERS, "Location": location})
