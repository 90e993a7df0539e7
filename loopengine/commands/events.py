"""``emit`` and ``events list``: the event log, appended to and read newest first.

``emit`` writes its row without an event loop, the engine or the loop models: scripts call it
in loops, and its start-up is most of its cost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopengine._json import NonFiniteNumber, loads
from loopengine.app import emit, events, open_reader, read_now, read_settings, write_now
from loopengine.commands._console import Console
from loopengine.commands._listing import name_filter
from loopengine.errors import ContractError
from loopengine.store import iso
from loopengine.triggers import MAX_EVENT_BYTES, EventDataProblem, event_data_problem

__all__ = ["run_emit", "run_events_list"]


def _event_data(text: str | None) -> Any:
    """``--data`` as an event's data: its text bounded before it is parsed (JSON too deep for
    the parser is too deep for an event), then the data held to every event's bounds."""
    if text is None:
        return {}
    if len(text.encode()) > MAX_EVENT_BYTES:
        raise ContractError(EventDataProblem.too_big("--data").message)
    try:
        data = loads(text, root="--data")
    except RecursionError:
        raise ContractError(EventDataProblem.too_deep("--data").message) from None
    except NonFiniteNumber as exc:
        raise ContractError(str(exc)) from None
    except ValueError as exc:
        raise ContractError(
            f"--data is not JSON ({exc}): write e.g. --data '{{\"page\": 1}}'"
        ) from None
    if problem := event_data_problem(data, named="--data"):
        raise ContractError(problem.message)
    return data


def run_emit(
    console: Console, name: str, data_text: str | None, config: Path | None, as_json: bool
) -> int:
    data = _event_data(data_text)
    url = read_settings(config).database_url
    event = write_now(url, emit(name, data, "cli"))
    if as_json:
        console.json(
            {"id": event.id, "name": name, "data": data, "created_at": iso(event.created_at)}
        )
    else:
        console.print(f"emitted {name} (event {event.id})")
    return 0


def run_events_list(
    console: Console, pattern: str | None, limit: int, config: Path | None, as_json: bool
) -> int:
    wanted = name_filter(pattern, limit)
    with open_reader(config) as reader:
        rows = read_now(reader, events(wanted, limit))
    views = [
        {
            "id": row.id,
            "name": row.name,
            "source": row.source,
            "data": row.data,
            "execution_id": row.execution_id,
            "created_at": iso(row.created_at),
        }
        for row in rows
    ]
    if as_json:
        console.json({"events": views})
    elif not views:
        console.print("No events yet: `loopengine emit NAME --data '{...}'`.")
    else:
        table = [("id", "event", "source", "created", "data")]
        table += [
            (str(v["id"]), v["name"], v["source"], str(v["created_at"]), _short(v["data"]))
            for v in views
        ]
        console.table(table, ((), ("bold",), ("dim",), ("dim",)))
    return 0


def _short(data: Any, width: int = 60) -> str:
    text = json.dumps(data, separators=(",", ":"), default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
