"""The benchmarks' own fakes keep up with the ports they stand in for.

`bench/soak.py`'s channel once lacked `send_part`'s `reply_to` after the port gained it: every
reply failed, and the soak measured an app that sent nothing. Nothing type-checks `bench/`, so
this does: each method a bench fake (a channel, a model) overrides takes every parameter of the
port's."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from types import ModuleType

import pytest

from palui.ports import Channel, ChatModel
from tests.toolkit import REPO

BENCH = REPO / "bench"


def _bench_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _parameters(function: object) -> set[str]:
    return {n for n in inspect.signature(function).parameters if n != "self"}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "fake_name", "port"),
    [("soak", "CountingChannel", Channel), ("soak", "ReadThenAnswer", ChatModel)],
)
def test_a_bench_fake_takes_what_its_port_passes(module: str, fake_name: str, port: type) -> None:
    fake = getattr(_bench_module(module), fake_name)
    overridden = [n for n in vars(fake) if not n.startswith("_") and hasattr(port, n)]
    assert any(callable(getattr(fake, n)) for n in overridden)  # it stands in for the port
    for name in overridden:
        if not callable(getattr(port, name)):
            continue  # an attribute (a model's name), not a method
        missing = _parameters(getattr(port, name)) - _parameters(getattr(fake, name))
        assert not missing, f"{fake_name}.{name} lacks {sorted(missing)}"
