"""The bundled recall server (palui/recall_server): its MCP tools as Palui's connector sees them,
over stdio and streamable HTTP, and its store at a realistic size."""

from __future__ import annotations

import asyncio
import random
import re
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from palui.config import McpServerSettings
from palui.connectors import Backoff, McpConnector
from palui.domain import ConnectorState, ToolOutcome
from palui.recall_server import MemoryStore, NewMemory
from palui.recall_server.run import default_db_path, parse_args
from palui.recall_server.schema import SCHEMA_VERSION, SchemaTooNew

FAST = Backoff(initial_s=0.05, factor=2.0, max_s=0.2)
BOUND_S = 20  # generous upper bound for anything that waits on a subprocess
RECALL_TOOLS = {
    "add_memory",
    "search_memories",
    "ask_memory",
    "get_profile",
    "list_memories",
    "forget_memory",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def recall(db: Path) -> McpServerSettings:
    return McpServerSettings(
        command=sys.executable, args=("-m", "palui.recall_server", "--db", str(db))
    )


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Any]]:
    """`await connect(settings)`: a connected McpConnector, stopped after the test."""
    started: list[McpConnector] = []

    async def make(settings: McpServerSettings, slug: str = "recall") -> McpConnector:
        connector = McpConnector(slug, settings, backoff=FAST)
        started.append(connector)
        await connector.start()
        async with asyncio.timeout(BOUND_S):
            await connector.wait_for_state(ConnectorState.CONNECTED)
        return connector

    yield make
    for connector in started:
        await connector.stop()


@pytest.fixture
async def memory(connect: Callable[..., Any], tmp_path: Path) -> McpConnector:
    connector: McpConnector = await connect(recall(tmp_path / "recall.db"))
    return connector


async def ok(connector: McpConnector, tool: str, **arguments: Any) -> str:
    outcome = await connector.call(tool, arguments)
    assert not outcome.is_error, outcome.text
    return outcome.text


def ids(text: str) -> list[int]:
    """The memory numbers in a listing, in order (`#12 (...) content` lines)."""
    return [int(n) for n in re.findall(r"^#(\d+) ", text, re.MULTILINE)]


def saved_id(text: str) -> int:
    found = re.search(r"memory #(\d+)", text)
    assert found, text
    return int(found.group(1))


# -- the tools over stdio ------------------------------------------------------------------------


async def test_tools_are_listed_with_annotations_that_class_them(memory: McpConnector) -> None:
    tools = {tool.name: tool for tool in memory.tools()}

    assert set(tools) == RECALL_TOOLS
    annotations = {name: tool.annotations or {} for name, tool in tools.items()}
    assert annotations["forget_memory"]["destructiveHint"] is True
    assert annotations["forget_memory"]["readOnlyHint"] is False
    assert annotations["forget_memory"]["idempotentHint"] is False
    for name in ("search_memories", "ask_memory", "get_profile", "list_memories"):
        assert annotations[name]["readOnlyHint"] is True, name
    assert annotations["add_memory"]["readOnlyHint"] is False
    assert annotations["add_memory"]["destructiveHint"] is False
    assert tools["add_memory"].input_schema["required"] == ["content"]
    assert tools["forget_memory"].input_schema["required"] == ["id"]


async def test_a_saved_memory_is_found_then_forgotten(memory: McpConnector) -> None:
    saved = await ok(memory, "add_memory", content="The spare key is under the blue flowerpot")
    other = await ok(memory, "add_memory", content="Lunch with Dewi on Thursday")
    key_id = saved_id(saved)

    found = await ok(memory, "search_memories", query="where is the spare key?")
    forgotten = await ok(memory, "forget_memory", id=key_id)
    after = await memory.call("search_memories", {"query": "spare key"})
    again = await memory.call("forget_memory", {"id": key_id})

    assert ids(found)[0] == key_id and "blue flowerpot" in found
    assert saved_id(other) not in ids(found)
    assert "blue flowerpot" in forgotten
    assert not after.is_error and ids(after.text) == [] and "No memory matches" in after.text
    assert again.is_error and f"no memory #{key_id}" in again.text


async def test_saving_one_source_id_twice_returns_the_memory_saved_first(
    memory: McpConnector,
) -> None:
    first = await ok(memory, "add_memory", content="Likes jasmine tea", source_id="chat1:0-30")
    second = await ok(memory, "add_memory", content="different text", source_id="chat1:0-30")
    listed = await ok(memory, "list_memories")

    assert saved_id(first) == saved_id(second)
    assert "Already saved" in second and "nothing changed" in second
    assert ids(listed) == [saved_id(first)]
    assert "jasmine tea" in listed and "different text" not in listed


async def test_concurrent_saves_of_one_source_id_store_it_once(
    connect: Callable[..., Any], tmp_path: Path
) -> None:
    db = tmp_path / "recall.db"
    # Two server processes on one file, and many calls in flight on each.
    one: McpConnector = await connect(recall(db), slug="one")
    two: McpConnector = await connect(recall(db), slug="two")
    calls = [
        connector.call("add_memory", {"content": f"slice saved by {n}", "source_id": "s:1-40"})
        for n in range(12)
        for connector in (one, two)
    ]

    outcomes: list[ToolOutcome] = await asyncio.gather(*calls)
    listed = await ok(one, "list_memories")

    assert not any(outcome.is_error for outcome in outcomes)
    assert len({saved_id(outcome.text) for outcome in outcomes}) == 1
    assert sum("Saved memory" in outcome.text for outcome in outcomes) == 1
    assert len(ids(listed)) == 1


FTS_TRAPS = [
    'birthday "rina',
    "rina's birthday",
    "birthday AND",
    "OR birthday NOT",
    "NEAR(rina birthday)",
    "birthday*",
    "content: birthday",
    "{content tags}: birthday",
    "-birthday +rina ^sister",
    "(((birthday",
    "kind:profile birthday",
    "birthday; DROP TABLE memories; --",
    "ulang tahun Rina 🎂",
]


async def test_punctuation_and_fts_syntax_in_a_query_are_just_text(memory: McpConnector) -> None:
    await ok(memory, "add_memory", content="My sister Rina's birthday is on 4 May", tags=["family"])

    for query in FTS_TRAPS:
        searched = await memory.call("search_memories", {"query": query})
        asked = await memory.call("ask_memory", {"question": query})
        profiled = await memory.call("get_profile", {"query": query})

        for outcome in (searched, asked, profiled):
            assert not outcome.is_error, (query, outcome.text)
        assert "4 May" in searched.text and "4 May" in asked.text, query


async def test_a_query_with_no_words_is_refused_with_a_reason(memory: McpConnector) -> None:
    outcome = await memory.call("search_memories", {"query": '"" * () ^:'})

    assert outcome.is_error and "no words" in outcome.text


async def test_ask_memory_returns_the_memories_that_answer_the_question(
    memory: McpConnector,
) -> None:
    await ok(memory, "add_memory", content="Car insurance renews every March with Allianz")
    dentist = await ok(memory, "add_memory", content="Dentist is Dr. Sari, clinic on Jalan Mawar")
    await ok(memory, "add_memory", content="Prefers window seats on long flights")

    answer = await ok(memory, "ask_memory", question="Who is my dentist?")

    assert ids(answer)[0] == saved_id(dentist)
    assert "Dr. Sari" in answer and "Allianz" not in answer


async def test_get_profile_gives_what_is_known_about_the_person_matched_to_the_message(
    memory: McpConnector,
) -> None:
    name = await ok(
        memory, "add_memory", content="Name is Budi; lives in Bandung", tags=["profile"]
    )
    diet = await ok(
        memory, "add_memory", content="Vegetarian, allergic to peanuts", tags=["Profile"]
    )
    recipe = await ok(memory, "add_memory", content="The peanuts sauce recipe from Bu Tini")
    await ok(memory, "add_memory", content="Meeting notes about the quarterly budget")

    everything = await ok(memory, "get_profile")
    matched = await ok(memory, "get_profile", query="can I eat satay with peanuts sauce?")

    assert ids(everything) == [saved_id(diet), saved_id(name)]  # profile only, newest first
    # profile memories that match, then other matches, then the rest of the profile
    assert ids(matched) == [saved_id(diet), saved_id(recipe), saved_id(name)]
    assert "quarterly budget" not in matched


async def test_list_memories_filters_by_tag_and_pages(memory: McpConnector) -> None:
    work = [
        saved_id(await ok(memory, "add_memory", content=f"work item {n}", tags=["work"]))
        for n in range(5)
    ]
    await ok(memory, "add_memory", content="a holiday plan", tags=["travel"])

    first_page = await ok(memory, "list_memories", tag="WORK", limit=2)
    last_page = await ok(memory, "list_memories", tag="work", limit=2, offset=4)
    untagged = await ok(memory, "list_memories", tag="nothing-here")

    assert ids(first_page) == [work[4], work[3]] and "1-2 of 5" in first_page
    assert ids(last_page) == [work[0]] and "5-5 of 5" in last_page
    assert ids(untagged) == [] and "No memories" in untagged


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_memory", {"content": "   "}, "content is empty"),
    ("add_memory", {"content": "x", "tags": [" "]}, "each tag"),
    ("add_memory", {"content": "x", "source_id": ""}, "source_id"),
    ("search_memories", {"query": "tea", "limit": 0}, "limit"),
    ("list_memories", {"offset": -1}, "offset"),
    ("forget_memory", {"id": 999}, "no memory #999"),
    ("forget_memory", {"id": "first"}, "id"),
]


async def test_bad_input_is_a_tool_error_that_says_what_is_wrong(memory: McpConnector) -> None:
    for tool, arguments, reason in BAD_CALLS:
        outcome = await memory.call(tool, arguments)

        assert outcome.is_error and reason in outcome.text, (tool, arguments, outcome.text)


async def test_results_carry_structured_content_too(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "palui.recall_server", "--db", str(tmp_path / "recall.db")],
    )
    async with asyncio.timeout(BOUND_S), Client(params) as client:
        added = await client.call_tool("add_memory", {"content": "Tea, no sugar", "tags": ["diet"]})
        found = await client.call_tool("search_memories", {"query": "sugar"})

    assert added.structured_content is not None and added.structured_content["created"] is True
    memory = added.structured_content["memory"]
    assert memory["tags"] == ["diet"] and memory["kind"] == "fact"
    assert found.structured_content == {"memories": [memory]}


async def test_streamable_http_serves_the_same_tools(
    connect: Callable[..., Any], tmp_path: Path
) -> None:
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "palui.recall_server",
        "--db",
        str(tmp_path / "recall.db"),
        "--http",
        f"127.0.0.1:{port}",
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        # The connector retries with back-off until the server listens.
        connector = await connect(McpServerSettings(url=f"http://127.0.0.1:{port}/mcp"))
        saved = await ok(
            connector, "add_memory", content="Over HTTP: the wifi password is on the fridge"
        )
        found = await ok(connector, "search_memories", query="wifi password")
        names = {tool.name for tool in connector.tools()}
        await connector.stop()
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), BOUND_S)

    assert names == RECALL_TOOLS
    assert ids(found) == [saved_id(saved)]


# -- the command line ----------------------------------------------------------------------------


def test_db_path_defaults_to_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert default_db_path() == Path("data") / "recall.db"
    monkeypatch.setenv("PALUI_DATA_DIR", str(tmp_path))
    assert default_db_path() == tmp_path / "recall.db"
    assert parse_args(["--http", "127.0.0.1:8765"]).http == ("127.0.0.1", 8765)
    with pytest.raises(SystemExit):
        parse_args(["--http", "8765"])


# -- the store -----------------------------------------------------------------------------------

# A sentence of words reads better than 34 quoted strings.
WORDS = (  # noqa: SIM905
    "meeting project budget coffee garden train ticket report weekend market invoice bicycle "
    "kitchen window laptop charger printer football concert museum river mountain blanket "
    "umbrella pharmacy bakery library harbour tomato noodle sandal jacket lantern pillow"
).split()


def synthetic(rng: random.Random, count: int) -> list[NewMemory]:
    memories = []
    for n in range(count):
        words = rng.choices(WORDS, k=rng.randint(6, 14))
        tags = ("profile",) if n % 50 == 0 else ("work",) if n % 3 == 0 else ()
        memories.append(NewMemory(" ".join(words), source_id=f"bulk:{n}", tags=tags))
    return memories


def test_search_over_twenty_thousand_memories_returns_the_right_top_hits(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "recall.db") as store:
        added = store.add_many(synthetic(random.Random(1), 20_000))
        both, _ = store.add("Passport renewal at the immigration office, bring the old passport")
        one, _ = store.add("The immigration form is in the top drawer")
        profile, _ = store.add("Allergic to shellfish and shrimp", tags=["profile"])
        readded = store.add_many(synthetic(random.Random(1), 10))  # known source ids

        searched = store.search("passport immigration", limit=5)
        asked = store.ask("Where is my immigration form?", limit=3)
        profiled = store.profile("Is there shrimp in this noodle soup?", limit=5)
        common = store.search("meeting", limit=10)
        page, total = store.page(limit=10, tag="work")

        assert added == 20_000 and readded == 0 and store.count() == 20_003
        assert [m.id for m in searched] == [both.id, one.id]  # every word first, then some
        assert asked[0].id == one.id
        assert profiled[0].id == profile.id
        assert len(common) == 10 and all("meeting" in m.content for m in common)
        assert total == sum(1 for n in range(20_000) if n % 50 and n % 3 == 0)
        assert len(page) == 10
        assert all("work" in m.tags for m in page)
        assert [m.id for m in page] == sorted((m.id for m in page), reverse=True)


def test_the_schema_is_created_once_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "recall.db"
    with MemoryStore(path) as store:
        store.add("kept across restarts", source_id="a")
    with MemoryStore(path) as store:
        again, created = store.add("ignored", source_id="a")
        assert not created and again.content == "kept across restarts"

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew):
        MemoryStore(path)


def test_forgetting_removes_a_memory_from_search_and_tags(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "recall.db") as store:
        memory, _ = store.add("Gym on Tuesdays", tags=["routine"])
        assert store.forget(memory.id) == memory
        assert store.forget(memory.id) is None
        assert store.search("gym") == []
        assert store.page(tag="routine") == ([], 0)


def test_a_long_chat_message_is_matched_on_its_keywords_wherever_they_are(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "recall.db") as store:
        store.add_many(synthetic(random.Random(2), 500))
        dentist, _ = store.add("The dentist moved the appointment to 9 June")
        message = (
            "so I was wondering if you could tell me whether it is the case that there is "
            "something I should know before I go and see the dentist next week"
        )

        assert store.profile(message, limit=3)[0].id == dentist.id
        assert store.ask(message, limit=3)[0].id == dentist.id


async def test_palui_recall_server_serves_the_memory_tools_over_stdio(tmp_path) -> None:
    from palui.config import McpServerSettings
    from palui.connectors import McpConnector
    from palui.domain import ConnectorState

    settings = McpServerSettings(
        command=sys.executable,
        args=("-m", "palui.cli.main", "recall-server", "--db", str(tmp_path / "recall.db")),
    )
    connector = McpConnector("memory", settings)
    await connector.start()
    try:
        assert (
            await connector.wait_for_state(ConnectorState.CONNECTED, ConnectorState.ERRORED)
            == ConnectorState.CONNECTED
        )
        names = {tool.name for tool in connector.tools()}
        assert {"add_memory", "search_memories", "forget_memory"} <= names
    finally:
        await connector.stop()
