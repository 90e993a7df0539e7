"""Run coroutines side by side in a task group; the first failure is raised as itself."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio

__all__ = ["first_error", "run_all"]


async def run_all(tasks: Sequence[Callable[[], Coroutine[Any, Any, None]]]) -> None:
    """Run ``tasks`` concurrently (directly when there is one); siblings stop on a failure."""
    if len(tasks) == 1:
        await tasks[0]()
        return
    with first_error():
        async with anyio.create_task_group() as group:
            for task in tasks:
                group.start_soon(task)


@contextmanager
def first_error() -> Iterator[None]:
    """Raise a task group's first failure as itself rather than wrapped in an exception group."""
    try:
        yield
    except BaseExceptionGroup as group_error:
        raise _first(group_error) from None


def _first(error: BaseExceptionGroup[BaseException]) -> BaseException:
    inner = error.exceptions[0]
    return _first(inner) if isinstance(inner, BaseExceptionGroup) else inner
