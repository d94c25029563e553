"""A web connector in this process (`mcp-web`, untrusted): `fetch(url)`, a read tool that sends
out (its URL argument), and `check_address(email)`, a read tool that reaches an e-mail address.
Each answers from a dict of pages, so a test can plant an injection in what a page says."""

from __future__ import annotations

from palui.domain import RemoteTool
from tests.toolkit import FunctionToolset

WEB_ID = "mcp-web"


class WebToolset(FunctionToolset):
    def __init__(self, pages: dict[str, str] | None = None, *, trust: str = "untrusted") -> None:
        self.pages = dict(pages or {})
        super().__init__(
            WEB_ID,
            {"fetch": self.fetch, "check_address": self.check_address},
            read_only=("fetch", "check_address"),
            trust=trust,
        )

    def tools(self) -> list[RemoteTool]:
        read = {"readOnlyHint": True}
        return [
            RemoteTool(
                "fetch",
                "Fetches a web page and returns its text",
                {
                    "type": "object",
                    "properties": {"url": {"type": "string", "format": "uri"}},
                    "required": ["url"],
                },
                read,
            ),
            RemoteTool(
                "check_address",
                "Checks whether an e-mail address exists",
                {
                    "type": "object",
                    "properties": {"email": {"type": "string", "format": "email"}},
                    "required": ["email"],
                },
                read,
            ),
        ]

    async def fetch(self, url: str) -> str:
        return self.pages.get(url, f"(page {url}: nothing here)")

    async def check_address(self, email: str) -> str:
        return f"{email} exists"

    def fetched(self) -> list[str]:
        return [arguments["url"] for name, arguments in self.calls if name == "fetch"]
