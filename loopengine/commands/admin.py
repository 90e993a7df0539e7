"""``flags set|list``: the switches that gate actions."""

from __future__ import annotations

from pathlib import Path

from loopengine.app import list_flags, open_runtime, perform, set_flag
from loopengine.commands._console import Console
from loopengine.errors import ContractError
from loopengine.store import iso

__all__ = ["run_flags_list", "run_flags_set"]

_ON = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}


async def run_flags_set(
    console: Console, name: str, state: str, config: Path | None, as_json: bool
) -> int:
    if state.lower() not in _ON:
        raise ContractError(f"flag state {state!r}: write on or off")
    enabled = _ON[state.lower()]
    async with open_runtime(config, create=False) as runtime:
        await perform(runtime.store, set_flag(name, enabled))
    if as_json:
        console.json({"name": name, "enabled": enabled})
    else:
        console.print(f"flag {name} is {'on' if enabled else 'off'}")
    return 0


async def run_flags_list(console: Console, config: Path | None, as_json: bool) -> int:
    async with open_runtime(config, create=False) as runtime:
        rows = await perform(runtime.store, list_flags())
    if as_json:
        console.json({"flags": [flag.as_json() for flag in rows]})
    elif not rows:
        console.print("No flags set: `loopengine flags set NAME on`.")
    else:
        console.table(
            [(f.name, "on" if f.enabled else "off", str(iso(f.updated_at))) for f in rows],
            (("bold",), (), ("dim",)),
        )
    return 0
