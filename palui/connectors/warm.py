"""What the MCP client loads on a first tool call, loaded at start instead.

The SDK checks a result against the tool's output schema with jsonschema, which it imports (and
whose metaschemas it reads) on the first call to a tool that declares one: a few hundred ms the
first answer would pay. Run in a thread at start; a failure only leaves that first call slower.
"""

from __future__ import annotations

import asyncio
import contextlib

# The shape MCP servers declare for a tool returning text: a result object with one string.
_SCHEMA = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}


async def prepare_result_checks() -> None:
    await asyncio.to_thread(_check_once)


def _check_once() -> None:
    # Imported here on purpose: this is the import being paid early, off the event loop.
    from jsonschema import exceptions  # type: ignore[import-untyped]
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]
    from referencing import Registry

    with contextlib.suppress(Exception):
        validator = validator_for(_SCHEMA)
        validator.check_schema(_SCHEMA)
        exceptions.best_match(validator(_SCHEMA, registry=Registry()).iter_errors({"result": 1}))
