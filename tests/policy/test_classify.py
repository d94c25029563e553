"""Tool classes: inference, the connector's marks, the kinds file, and fail-closed defaults."""

from __future__ import annotations

from typing import Any

import pytest

from palui.domain import RemoteTool
from palui.errors import ConfigError
from palui.policy import (
    Classification,
    ClassSource,
    ToolClass,
    classify,
    definition_hash,
    draft_kinds_file,
    parse_kinds_file,
    recheck,
)
from palui.policy.lexicon import WORDS, Effect, Form, Strength

READ, WRITE, DESTRUCTIVE = ToolClass.READ, ToolClass.WRITE, ToolClass.DESTRUCTIVE
STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}


def tool(
    name: str,
    description: str = "",
    annotations: dict[str, Any] | None = None,
    /,
    **properties: Any,
) -> RemoteTool:
    schema = {"type": "object", "properties": properties}
    return RemoteTool(name, description, schema, annotations)


def enum(*values: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def emails() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "format": "email"}}


# (tool, class, sends out)
# fmt: off
TOOLS = [
    # reads, English, real-world shaped
    (tool("fetch", "Fetches a URL and extracts its contents as markdown.",
          url={"type": "string", "format": "uri"}, max_length=INT, start_index=INT, raw=BOOL),
     READ, True),
    (tool("read_file", "Read the complete contents of a file from the file system. Provides "
          "detailed error messages if the file cannot be read.", path=STR), READ, False),
    (tool("list_directory", "Get a detailed listing of all files and directories in a path.",
          path=STR), READ, False),
    (tool("search_files", "Recursively search for files matching a pattern.", path=STR,
          pattern=STR, excludePatterns={"type": "array", "items": STR}), READ, False),
    (tool("get_file_info", "Retrieve metadata about a file. Returns size, creation time, last "
          "modified time, permissions, and type.", path=STR), READ, False),
    (tool("git_log", "Shows the commit logs", repo_path=STR, max_count=INT), DESTRUCTIVE, False),
    (tool("list_issues", "List issues in a GitHub repository with filtering options",
          owner=STR, repo=STR, state=enum("open", "closed", "all"),
          sort=enum("created", "updated", "comments"), direction=enum("asc", "desc")),
     READ, False),
    (tool("get_file_contents", "Get the contents of a file or directory from a GitHub "
          "repository", owner=STR, repo=STR, path=STR, branch=STR), READ, False),
    (tool("list_commits", "Get list of commits of a branch", owner=STR, repo=STR, sha=STR),
     READ, False),
    (tool("search_repositories", "Search for GitHub repositories", query=STR, page=INT),
     READ, False),
    (tool("slack_get_channel_history", "Get recent messages from a channel",
          channel_id=STR, limit=INT), READ, True),
    (tool("slack_list_channels", "List public channels in the workspace", limit=INT,
          cursor=STR), READ, False),
    (tool("read_email", "Retrieves the content of a specific email", messageId=STR),
     READ, False),
    (tool("search_emails", "Searches for emails using Gmail search syntax", query=STR,
          maxResults=INT), READ, False),
    (tool("notion_retrieve_page", "Retrieve a page from Notion", page_id=STR), READ, False),
    (tool("notion_query_database", "Query a database", database_id=STR,
          filter={"type": "object"}, sorts={"type": "array"}), READ, False),
    (tool("brave_web_search", "Performs a web search", query=STR, count=INT, offset=INT),
     DESTRUCTIVE, False),
    (tool("get_current_time", "Get current time in a specific timezone", timezone=STR),
     READ, False),
    (tool("list_posts", "Lists recent posts and their latest updates", blog_id=STR),
     READ, False),
    (tool("getResultSet", "Returns a set of rows"), READ, False),
    (tool("get_weather", "Get the forecast", city=STR,
          date_to={"type": "string", "format": "date"}), READ, False),
    (tool("list_installed_packages", "Lists installed packages"), READ, False),
    (tool("list_deleted_files", "Lists files in the trash"), DESTRUCTIVE, False),
    # writes
    (tool("write_file", "Create a new file or completely replace an existing file.",
          path=STR, content=STR), WRITE, False),
    (tool("edit_file", "Make line-based edits to a text file.", path=STR,
          edits={"type": "array"}, dryRun=BOOL), WRITE, False),
    (tool("create_directory", "Create a new directory", path=STR), WRITE, False),
    (tool("move_file", "Move or rename files and directories.", source=STR,
          destination=STR), WRITE, True),
    (tool("create_issue", "Create a new issue in a GitHub repository", owner=STR, repo=STR,
          title=STR, body=STR, labels={"type": "array"}), WRITE, False),
    (tool("create_or_update_file", "Create or update a single file", path=STR, content=STR,
          message=STR, branch=STR, sha=STR), WRITE, False),
    (tool("merge_pull_request", "Merge a pull request", pull_number=INT,
          merge_method=enum("merge", "squash", "rebase")), WRITE, False),
    (tool("git_commit", "Records changes to the repository", repo_path=STR, message=STR),
     WRITE, False),
    (tool("slack_post_message", "Post a new message to a Slack channel", channel_id=STR,
          text=STR), WRITE, True),
    (tool("slack_reply_to_thread", "Reply to a specific message thread", channel_id=STR,
          thread_ts=STR, text=STR), WRITE, True),
    (tool("slack_add_reaction", "Add a reaction emoji to a message", channel_id=STR,
          timestamp=STR, reaction=STR), WRITE, True),
    (tool("send_email", "Sends a new email", to=emails(), subject=STR, body=STR, cc=emails(),
          bcc=emails()), WRITE, True),
    (tool("draft_email", "Draft a new email", to=emails(), subject=STR, body=STR), WRITE, True),
    (tool("notion_update_page", "Update the properties of a page", page_id=STR,
          properties={"type": "object"}), WRITE, False),
    (tool("config", "Get or set a configuration value", key=STR, value=STR), WRITE, False),
    (tool("http_request", "Make an HTTP request", url=STR, method=enum("GET", "POST")),
     WRITE, True),
    (tool("schedule_job", "Schedule a recurring job", prompt=STR, schedule=STR), WRITE, False),
    (tool("send_message", "Posts to one of the allowed chats", chat_id=INT, text=STR),
     WRITE, True),
    (tool("add_memory", "Remember a fact about the user", content=STR), WRITE, False),
    (tool("create_event", "Creates a calendar event", summary=STR, attendees=emails(),
          send_updates=BOOL), WRITE, True),
    (tool("archive_project", "Archives a project; it can be unarchived later", id=STR),
     WRITE, False),
    (tool("items", "Use this tool to set the item's value", value=STR), WRITE, False),
    # destructive
    (tool("delete_file", "Deletes a file", path=STR), DESTRUCTIVE, False),
    (tool("forget_memory", "Forget one memory", memory_id=STR), DESTRUCTIVE, False),
    (tool("git_reset", "Unstages all staged changes", repo_path=STR), DESTRUCTIVE, False),
    (tool("notion_delete_block", "Delete a block", block_id=STR), DESTRUCTIVE, False),
    (tool("modify_email", "Modifies email labels", messageId=STR,
          addLabelIds={"type": "array"}, removeLabelIds={"type": "array"}), DESTRUCTIVE, False),
    (tool("write_file", "Writes text", path=STR, mode=enum("append", "overwrite")),
     DESTRUCTIVE, False),
    (tool("run_command", "Run a shell command", command=STR), DESTRUCTIVE, False),
    (tool("query", "Run a read-only SQL query", sql=STR), DESTRUCTIVE, False),
    (tool("cancel_subscription", "", subscription_id=STR), DESTRUCTIVE, False),
    (tool("clear_cache"), DESTRUCTIVE, False),
    (tool("purgeQueue", "", queueName=STR), DESTRUCTIVE, False),
    (tool("kill-process", "", pid=INT), DESTRUCTIVE, False),
    (tool("cleanup", "Deletes temporary files older than a week"), DESTRUCTIVE, False),
    (tool("trash_email", "Moves an email to the trash", id=STR), DESTRUCTIVE, False),
    (tool("http_request", "", url=STR, method=STR), DESTRUCTIVE, True),
    (tool("execute_query", "Execute a query against the warehouse", query=STR),
     DESTRUCTIVE, False),
    (tool("run_code", "", code=STR, language=enum("python", "js")), DESTRUCTIVE, False),
    (tool("get_note", "Gets a note. If true, the note is deleted after reading",
          note_id=STR, consume={"type": "boolean", "description": "whether to delete it"}),
     DESTRUCTIVE, False),
    # nothing tells
    (tool("frobnicate", "Frobnicates the widget"), DESTRUCTIVE, False),
    (tool("maps_geocode", "Convert an address into coordinates", address=STR),
     DESTRUCTIVE, True),
    (tool("x1"), DESTRUCTIVE, False),
    # Portuguese
    (tool("listar_tarefas", "Lista as tarefas do projeto"), READ, False),
    (tool("buscarClientes", "Busca clientes pelo nome", nome=STR), READ, False),
    (tool("obter_saldo", "Obtém o saldo da conta"), READ, False),
    (tool("consultar_pedido", "Consulta um pedido", numero=INT), READ, False),
    (tool("ver_extrato", "Mostra o extrato do mês"), READ, False),
    (tool("criar_tarefa", "Cria uma tarefa", titulo=STR), WRITE, False),
    (tool("atualizarCadastro", "Atualiza o cadastro do cliente", id=STR), WRITE, False),
    (tool("enviar_mensagem", "Envia uma mensagem", destinatario=STR, texto=STR), WRITE, True),
    (tool("agendar_reuniao", "Agenda uma reunião",
          para={"type": "string", "format": "email"}, data=STR), WRITE, True),
    (tool("publicar_post", "Publica um texto no blog", texto=STR), WRITE, True),
    (tool("postar_no_canal", "Posta uma mensagem", canal=STR), WRITE, True),
    (tool("apagar_tarefa", "Apaga uma tarefa", id=STR), DESTRUCTIVE, False),
    (tool("excluir-arquivo", "Exclui um arquivo", caminho=STR), DESTRUCTIVE, False),
    (tool("cancelar_assinatura", "Cancela a assinatura do cliente"), DESTRUCTIVE, False),
    (tool("esquecer_memoria", "Esquece uma memória"), DESTRUCTIVE, False),
    (tool("limpar_historico", "Limpa o histórico"), DESTRUCTIVE, False),
    (tool("tarefas", "Apagando tarefas antigas"), DESTRUCTIVE, False),
    (tool("notas", "Retorna as notas e remove as antigas"), DESTRUCTIVE, False),
    (tool("mostrar_fatura", "Mostra a fatura", operacao=enum("ver", "excluir")),
     DESTRUCTIVE, False),
    # with the connector's marks
    (tool("get_config", "Reads the configuration", {"readOnlyHint": True},
          operation=enum("get", "set"), key=STR), WRITE, False),
    (tool("frobnicate", "", {"readOnlyHint": True}), READ, False),
    (tool("frobnicate", "", {"title": "Frobnicator"}), DESTRUCTIVE, False),
    (tool("list_notes", "", {"title": "List notes"}), READ, False),
    (tool("list_things", "", {"readOnlyHint": False}), DESTRUCTIVE, False),
    (tool("get_thing", "", {"readOnlyHint": False, "destructiveHint": False}), WRITE, False),
    (tool("delete_thing", "", {"readOnlyHint": False, "destructiveHint": False}),
     DESTRUCTIVE, False),
    (tool("get_thing", "", {"readOnlyHint": True, "consequentialHint": True}),
     DESTRUCTIVE, False),
    (tool("get_thing", "", {"readOnlyHint": True, "destructiveHint": True}), DESTRUCTIVE, False),
    (tool("fetch", "", {"readOnlyHint": True}, url=STR), READ, True),
    (tool("frob", "", {"openWorldHint": True}), DESTRUCTIVE, False),
    (tool("add_note", "", {"idempotentHint": True}, text=STR), WRITE, False),
    (tool("get_thing", "", {"readOnlyHint": "yes"}), DESTRUCTIVE, False),
    (tool("get_thing", "", {"readOnlyHint": False, "consequentialHint": False}), WRITE, False),
    (tool("send_report", "", {"readOnlyHint": True}, recipient=STR), WRITE, True),
    (tool("settings_tool", "", {"readOnlyHint": True},
          options={"type": "object", "properties": {"action": enum("read", "delete")}}),
     DESTRUCTIVE, False),
]
# fmt: on


@pytest.mark.parametrize(
    ("remote", "expected_class", "expected_sends_out"),
    TOOLS,
    ids=[f"{i:02d}-{row[0].name}" for i, row in enumerate(TOOLS)],
)
def test_tool_gets_the_expected_class_and_sends_out(
    remote: RemoteTool, expected_class: ToolClass, expected_sends_out: bool
) -> None:
    # Each on a connector named after the name's first word, as `[mcp.slack]` serves
    # `slack_list_channels`: that word is then the name's namespace, not its verb.
    connector = remote.name.split("_")[0]
    result = classify(f"mcp-{connector}__{remote.name}", remote, None)
    assert (result.tool_class, result.sends_out) == (expected_class, expected_sends_out), result
    assert result.reason


def test_the_table_covers_at_least_sixty_tools() -> None:
    assert len(TOOLS) >= 60


@pytest.mark.parametrize(
    ("remote", "source", "conflict"),
    [
        (
            tool("get_config", "", {"readOnlyHint": True}, operation=enum("get", "set")),
            ClassSource.INFERRED,
            "marked read-only, but argument 'operation' may be 'set'",
        ),
        (
            tool("delete_thing", "", {"readOnlyHint": False, "destructiveHint": False}),
            ClassSource.INFERRED,
            "marked not destructive, but name verb 'delete'",
        ),
        (tool("frobnicate", "", {"readOnlyHint": True}), ClassSource.ANNOTATION, None),
        (tool("list_things", "", {"readOnlyHint": False}), ClassSource.ANNOTATION, None),
        (tool("get_thing", "", {"destructiveHint": True}), ClassSource.ANNOTATION, None),
        (tool("list_notes", "", {"title": "List notes"}), ClassSource.INFERRED, None),
        (tool("frobnicate", "", {"title": "Frobnicator"}), ClassSource.UNSURE, None),
        (tool("frobnicate"), ClassSource.UNSURE, None),
    ],
    ids=lambda value: getattr(value, "name", None),
)
def test_marks_are_believed_only_where_inference_sees_no_sign_of_change(
    remote: RemoteTool, source: ClassSource, conflict: str | None
) -> None:
    result = classify(f"mcp-x__{remote.name}", remote, None)
    assert (result.source, result.conflict) == (source, conflict)


def test_reason_names_the_signal() -> None:
    assert classify("x__a", tool("delete_note"), None).reason == "name verb 'delete'"
    result = classify("x__b", tool("config", operation=enum("get", "set")), None)
    assert result.reason == "argument 'operation' may be 'set'"
    assert "sends out: argument 'url'" in classify("x__c", tool("fetch", url=STR), None).reason


def test_idempotent_hint_is_surfaced() -> None:
    marked = tool("add_note", "", {"idempotentHint": True, "destructiveHint": False})
    assert classify("x__add_note", marked, None).idempotent
    assert not classify("x__add_note", tool("add_note"), None).idempotent


# --- never `read` with a changing verb anywhere ------------------------------------------

CHANGING_FORMS = sorted(form for form, word in WORDS.items() if word.effect is not Effect.READ)
CHANGING_BASES = sorted(
    form
    for form, word in WORDS.items()
    if word.effect is not Effect.READ and word.form is Form.BASE
)

PLACES = {
    "name prefix": lambda form: tool(f"{form}_item", "Gets the item."),
    "name suffix": lambda form: tool(f"item_{form}", "Shows the item."),
    "camelCase name": lambda form: tool(f"item{form.capitalize()}", "Lists items."),
    "kebab name": lambda form: tool(f"get-item-and-{form}"),
    "description start": lambda form: tool("get_item", f"{form.capitalize()} the item."),
    "description after and": lambda form: tool("get_item", f"Gets the item and {form} it."),
    "description after comma": lambda form: tool("get_item", f"Finds the item, {form} it."),
    "description after can": lambda form: tool("get_item", f"This tool can {form} items."),
    "title": lambda form: RemoteTool("get_item", "Gets the item.", {}, None, f"Item {form}"),
}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("marked_read_only", [False, True])
def test_a_changing_verb_anywhere_is_never_read(place: str, marked_read_only: bool) -> None:
    make = PLACES[place]
    said_read = []
    for form in CHANGING_FORMS:
        remote = make(form)
        if marked_read_only:
            remote = RemoteTool(
                remote.name,
                remote.description,
                remote.input_schema,
                {"readOnlyHint": True},
                remote.title,
            )
        # On a connector named after the word, so it can't pass for the name's namespace.
        if classify(f"mcp-{form}__{remote.name}", remote, None).tool_class is READ:
            said_read.append(form)
    assert said_read == []


ARGUMENT_PLACES = {
    "option value": lambda base: tool("get_item", operation=enum("get", base)),
    "nested option value": lambda base: tool(
        "get_item", options={"type": "object", "properties": {"action": enum("list", base)}}
    ),
    "array option value": lambda base: tool(
        "get_item", ops={"type": "array", "items": {"enum": ["read", base]}}
    ),
    "oneOf option value": lambda base: tool(
        "get_item", mode={"oneOf": [{"const": "list"}, {"const": base}]}
    ),
}


@pytest.mark.parametrize("place", list(ARGUMENT_PLACES))
def test_a_changing_verb_in_the_options_is_never_read(place: str) -> None:
    make = ARGUMENT_PLACES[place]
    said_read = [b for b in CHANGING_BASES if classify("x__t", make(b), None).tool_class is READ]
    assert said_read == []


def test_a_strong_changing_verb_in_an_argument_is_never_read() -> None:
    strong = [base for base in CHANGING_BASES if WORDS[base].strength is Strength.STRONG]
    makers = [
        lambda base: tool(
            "get_item", flag={"type": "boolean", "description": f"Whether to {base} it"}
        ),
        lambda base: tool("get_item", **{f"{base}_after": BOOL}),
        lambda base: tool("get_item", **{f"{base}Item": BOOL}),
    ]
    said_read = [
        (i, base)
        for i, make in enumerate(makers)
        for base in strong
        if classify("x__t", make(base), None).tool_class is READ
    ]
    assert said_read == []


@pytest.mark.parametrize("make", [*PLACES.values(), *ARGUMENT_PLACES.values()])
def test_the_same_places_say_read_when_the_word_changes_nothing(make: Any) -> None:
    # Keeps the two tests above honest: with a reading verb in the same place, each tool is a
    # read (a word that is no verb would leave names such as `blue_item` without a verb).
    assert classify("x__t", make("get"), None).tool_class is READ


def test_word_forms_in_both_languages_are_read() -> None:
    for form in [
        "deleting",
        "deletes",
        "deleted",
        "apaga",
        "apagando",
        "exclui",
        "excluído",
        "envia",
        "cria",
        "criou",
        "cancelled",
        "copies",
        "sent",
    ]:
        assert classify("x__t", tool("thing", f"{form.capitalize()} it."), None).tool_class in (
            WRITE,
            DESTRUCTIVE,
        ), form


# --- the kinds file --------------------------------------------------------------------

KINDS = """\
infer: true
tools:
  mcp-notes__delete_all:   # a name that lies
    kind: read
    source: you
    reason: "only lists what would be deleted"
  mcp-notes__notify:
    kind: sends_out
    reason: "texts the customer"
  mcp-notes__frob:
    kind: write
    sends_out: false
    source: assistant
    reason: "it saves a draft"
"""


def test_kinds_file_wins_over_marks_and_inference() -> None:
    kinds = parse_kinds_file(KINDS)
    marked = tool("delete_all", "Deletes every note", {"destructiveHint": True})
    result = classify("mcp-notes__delete_all", marked, kinds)
    assert (result.tool_class, result.source) == (READ, ClassSource.YOU)
    assert result.reason == "only lists what would be deleted"


def test_kinds_file_accepts_the_peer_sends_out_kind_and_assistant_source() -> None:
    kinds = parse_kinds_file(KINDS)
    notify = classify("mcp-notes__notify", tool("notify"), kinds)
    assert (notify.tool_class, notify.sends_out, notify.source) == (WRITE, True, ClassSource.YOU)
    # An assistant's entry is an unconfirmed proposal: it may only make the class stricter, so
    # the unsure tool stays destructive and keeps the destination it was found to send to.
    frob = classify("mcp-notes__frob", tool("frob", to=STR), kinds)
    assert kinds.tools["mcp-notes__frob"].source is ClassSource.ASSISTANT
    assert (frob.tool_class, frob.sends_out, frob.source) == (DESTRUCTIVE, True, ClassSource.UNSURE)


def test_kinds_file_without_sends_out_keeps_destinations_found_in_arguments() -> None:
    kinds = parse_kinds_file("tools:\n  mcp-web__fetch: {kind: read}\n")
    result = classify("mcp-web__fetch", tool("fetch", url=STR), kinds)
    assert (result.tool_class, result.sends_out) == (READ, True)


def test_kinds_file_names_tools_by_full_name_only() -> None:
    kinds = parse_kinds_file(KINDS)
    other = classify("mcp-other__delete_all", tool("delete_all"), kinds)
    assert (other.tool_class, other.source) == (DESTRUCTIVE, ClassSource.INFERRED)


def test_connector_card_override_applies_unless_the_kinds_file_names_the_tool() -> None:
    card = Classification(
        tool_class=READ,
        sends_out=False,
        source=ClassSource.YOU,
        reason="set in the card",
        definition_hash="old",
    )
    remote = tool("delete_all", "Deletes every note")
    overridden = classify("mcp-other__delete_all", remote, None, override=card)
    assert (overridden.tool_class, overridden.reason) == (READ, "set in the card")
    assert overridden.definition_hash == definition_hash(remote)
    from_file = classify("mcp-notes__delete_all", remote, parse_kinds_file(KINDS), override=card)
    assert from_file.reason == "only lists what would be deleted"


@pytest.mark.parametrize(
    ("remote", "expected_class", "source"),
    [
        (tool("list_notes", "Lists notes"), DESTRUCTIVE, ClassSource.UNSURE),
        (tool("add_note", "Adds a note"), DESTRUCTIVE, ClassSource.UNSURE),
        (tool("frob", "", {"readOnlyHint": True}), READ, ClassSource.ANNOTATION),
        (
            tool("frob", "", {"readOnlyHint": True}, operation=enum("get", "set")),
            WRITE,
            ClassSource.INFERRED,
        ),
        (tool("list_notes", "", {"title": "Notes"}), DESTRUCTIVE, ClassSource.UNSURE),
    ],
)
def test_with_inference_off_only_the_file_and_marks_decide(
    remote: RemoteTool, expected_class: ToolClass, source: ClassSource
) -> None:
    kinds = parse_kinds_file("infer: false\ntools: {}\n")
    result = classify(f"mcp-x__{remote.name}", remote, kinds)
    assert (result.tool_class, result.source) == (expected_class, source)


def test_empty_kinds_file_infers_and_names_nothing() -> None:
    kinds = parse_kinds_file("")
    assert kinds.infer is True and dict(kinds.tools) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tools: [", "not valid YAML (line"),
        ("- a\n- b\n", "expected a mapping"),
        ("infer: true\nrules: {}\n", "key 'rules': unknown"),
        ("infer: maybe\n", "key 'infer': expected true or false"),
        ("tools: [a, b]\n", "key 'tools': expected a mapping"),
        ("tools:\n  __a: {kind: write}\n", "tool '__a': name it as <connector>__<tool>"),
        ("tools:\n  mcp-n__a: write\n", "tool 'mcp-n__a': expected a mapping"),
        ("tools:\n  mcp-n__a: {kind: write, why: x}\n", "tool 'mcp-n__a', key 'why': unknown"),
        ("tools:\n  mcp-n__a: {reason: x}\n", "tool 'mcp-n__a', key 'kind': missing"),
        ("tools:\n  mcp-n__a: {kind: reed}\n", "tool 'mcp-n__a', key 'kind': 'reed' is not"),
        ("tools:\n  mcp-n__a: {kind: read, sends_out: 2}\n", "key 'sends_out': expected true"),
        ("tools:\n  mcp-n__a: {kind: sends_out, sends_out: false}\n", "contradicts kind"),
        ("tools:\n  mcp-n__a: {kind: read, source: boss}\n", "key 'source': 'boss' is not"),
        ("tools:\n  mcp-n__a: {kind: read, reason: [1]}\n", "key 'reason': expected text"),
        (
            "tools:\n  mcp-n__a: {kind: read}\n  mcp-n__a: {kind: write}\n",
            "key 'mcp-n__a' appears twice (line 3)",
        ),
    ],
)
def test_bad_kinds_file_is_one_line_naming_file_tool_and_key(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_kinds_file(text, "config/tool_kinds.yaml")
    message = str(caught.value)
    assert message.startswith("config/tool_kinds.yaml: ")
    assert expected in message
    assert "\n" not in message


def test_kinds_digest_follows_content_not_layout() -> None:
    base = parse_kinds_file(KINDS).digest
    relaid = "# comment\n" + KINDS.replace('"it saves a draft"', "it saves a draft")
    assert parse_kinds_file(relaid).digest == base
    assert parse_kinds_file(KINDS.replace("kind: read", "kind: write")).digest != base
    assert parse_kinds_file(KINDS.replace("infer: true", "infer: false")).digest != base
    assert parse_kinds_file(KINDS.replace("draft", "copy")).digest != base


def test_draft_lists_unsure_tools_first_and_round_trips() -> None:
    tools = {
        "mcp-n__list_notes": tool("list_notes"),
        "mcp-n__frob": tool("frob", "Frobnicates", to=STR),
        "mcp-n__add_note": tool("add_note", 'Adds a "quoted" note: #1'),
        "mcp-n__zap": tool("zap", "", {"destructiveHint": True}),
        "mcp-n__aardvark": tool("aardvark"),
    }
    classifications = {name: classify(name, remote, None) for name, remote in tools.items()}
    text = draft_kinds_file(classifications)
    order = [name for name in classifications if f'  "{name}":' in text]
    positions = sorted(order, key=lambda name: text.index(f'"{name}":'))
    assert positions[:2] == ["mcp-n__aardvark", "mcp-n__frob"]
    parsed = parse_kinds_file(text)
    assert parsed.infer is True
    for name, c in classifications.items():
        entry = parsed.tools[name]
        assert (entry.tool_class, entry.sends_out, entry.source, entry.reason) == (
            c.tool_class,
            c.sends_out,
            c.source,
            c.reason,
        )
    assert parse_kinds_file(draft_kinds_file({}, infer=False)).infer is False


# --- definition hashes -----------------------------------------------------------------

BASE_TOOL = tool("add_note", "Adds a note", {"destructiveHint": False}, text=STR)


@pytest.mark.parametrize(
    "changed",
    [
        tool("add_note", "Adds a note, and emails it", {"destructiveHint": False}, text=STR),
        tool("add_note", "Adds a note", {"destructiveHint": False}, text=STR, to=STR),
        tool("add_note", "Adds a note", {"destructiveHint": True}, text=STR),
        tool("add_note", "Adds a note", None, text=STR),
        tool("add_notes", "Adds a note", {"destructiveHint": False}, text=STR),
    ],
)
def test_definition_hash_changes_with_the_definition(changed: RemoteTool) -> None:
    assert definition_hash(changed) != definition_hash(BASE_TOOL)


def test_definition_hash_ignores_key_order() -> None:
    reordered = RemoteTool(
        "add_note",
        "Adds a note",
        {"properties": {"text": {"type": "string"}}, "type": "object"},
        {"destructiveHint": False},
    )
    assert definition_hash(reordered) == definition_hash(BASE_TOOL)


def test_changed_definition_drops_an_inferred_class_until_looked_at_again() -> None:
    stored = classify("mcp-n__add_note", BASE_TOOL, None)
    changed = tool("add_note", "Adds a note", {"destructiveHint": False}, text=STR, cc=STR)
    assert recheck(stored, BASE_TOOL) is stored
    fallback = recheck(stored, changed)
    assert (fallback.tool_class, fallback.source) == (DESTRUCTIVE, ClassSource.UNSURE)
    assert fallback.definition_hash == definition_hash(changed)


def test_changed_definition_keeps_a_class_a_person_set() -> None:
    kinds = parse_kinds_file("tools:\n  mcp-n__add_note: {kind: write}\n")
    stored = classify("mcp-n__add_note", BASE_TOOL, kinds)
    changed = tool("add_note", "Adds a note and deletes the old one")
    assert recheck(stored, changed) is stored
