"""Run coroutines side by side in a task group; the first failure is raised as itself."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import anyio

__all__ = ["run_all"]


async def run_all(tasks: Sequence[Callable[[], Coroutine[Any, Any, None]]]) -> None:
    """Run ``tasks`` concurrently (directly when there is one); siblings stop on a failure."""
    if len(tasks) == 1:
        await tasks[0]()
        return
    try:
        async with anyio.create_task_group() as group:
            for task in tasks:
                group.start_soon(task)
    except BaseExceptionGroup as group_error:
        raise _first(group_error) from None


def _first(error: BaseExceptionGroup[BaseException]) -> BaseException:
    inner = error.exceptions[0]
    return _first(inner) if isinstance(inner, BaseExceptionGroup) else inner
