"""Which loop serves which webhook path, kept up to date as loops load and unload.

Two triggers claiming one path: the first claim serves it (a reload keeps a claim's place), the
other is logged as an error naming both, and takes over once the first is gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from loopengine.contract import Loop, WebhookTrigger
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._loops import triggers_of

__all__ = ["HookRoute", "HookTable", "hook_path"]


@dataclass(frozen=True, slots=True)
class HookRoute:
    """A webhook trigger and the loop it fires."""

    loop: Loop
    trigger_id: str
    trigger: WebhookTrigger

    @property
    def path(self) -> str:
        return hook_path(self.trigger.config.path)


def hook_path(path: str) -> str:
    """``path`` as served under ``/hooks/``: without leading or trailing slashes."""
    return path.strip("/")


def _claims(loop: Loop) -> dict[tuple[str, str], HookRoute]:
    return {
        (loop.id, trigger_id): HookRoute(loop, trigger_id, trigger)
        for trigger_id, trigger in triggers_of(loop)
        if isinstance(trigger, WebhookTrigger)
    }


class HookTable:
    """The served webhook paths; ``update`` follows the loops folder, ``route`` looks one up."""

    def __init__(self, log: DaemonLog) -> None:
        self.log = log
        self.claims: dict[tuple[str, str], HookRoute] = {}
        self.routes: dict[str, HookRoute] = {}

    def update(self, loaded: Iterable[Loop], removed: Iterable[str]) -> None:
        """Follow a scan: a loaded loop's claims replace its old ones (in their place), a
        removed loop's go."""
        loaded = list(loaded)
        fresh = {key: route for loop in loaded for key, route in _claims(loop).items()}
        gone = {*removed, *(loop.id for loop in loaded)}
        kept = {key: r for key, r in self.claims.items() if key[0] not in gone or key in fresh}
        self.claims = {**kept, **fresh}
        routes: dict[str, HookRoute] = {}
        for key, route in self.claims.items():
            first = routes.setdefault(route.path, route)
            if first is not route and key in fresh:
                self._clash(first, route)
        self.routes = routes

    def route(self, path: str) -> HookRoute | None:
        """The route serving ``/hooks/{path}``, or None."""
        return self.routes.get(hook_path(path))

    def _clash(self, first: HookRoute, other: HookRoute) -> None:
        self.log.line(
            "error",
            f"webhook path /hooks/{first.path} is served by loop '{first.loop.id}' (trigger "
            f"'{first.trigger_id}'); loop '{other.loop.id}' (trigger '{other.trigger_id}') "
            "claims it too and is not served there: change one path",
            loop=other.loop.id,
        )
