"""The two public routes a remote connector's sign-in needs (palui/connectors/signin.py):
`/oauth/callback`, where the authorization server sends the browser back, and
`/oauth/client.json`, Palui's client metadata document (served only when PALUI_WEB_URL is https,
since only an https address may be a client id). The pages say nothing about the grant."""

from __future__ import annotations

import html
from dataclasses import dataclass

from aiohttp import web

from palui.connectors.oauth import CALLBACK_PATH, CLIENT_DOCUMENT_PATH, OAuthSetup
from palui.connectors.signin import SignIns

PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>Palui</title>"
    "<meta name='referrer' content='no-referrer'></head>"
    "<body style='font-family:sans-serif;margin:3em'><p>{}</p></body></html>"
)
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
}
SIGNED_IN = "Signed in. You can close this tab and go back to the chat."


@dataclass(frozen=True, slots=True)
class OAuthRoutes:
    sign_ins: SignIns
    setup: OAuthSetup

    def add_to(self, router: web.UrlDispatcher) -> None:
        router.add_get(CALLBACK_PATH, self._callback)
        router.add_get(CLIENT_DOCUMENT_PATH, self._client_document)

    async def _callback(self, request: web.Request) -> web.Response:
        refused = await self.sign_ins.complete(dict(request.query))
        text, status = (SIGNED_IN, 200) if refused is None else (refused, 400)
        return web.Response(
            text=PAGE.format(html.escape(text)),
            status=status,
            content_type="text/html",
            headers=HEADERS,
        )

    async def _client_document(self, request: web.Request) -> web.Response:
        document = self.setup.client_document()
        if document is None:
            return web.json_response({"error": "PALUI_WEB_URL is not https"}, status=404)
        return web.json_response(document, headers={"Cache-Control": "max-age=300"})
