"""Which loopback or private destinations a config allows (``actions.http.allow``,
``http_allow``): globs of ``host`` or ``host:port``, matched without resolving anything, so a
config is checked without an HTTP client; ``builtins._net`` checks each address a request
resolves to against them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

__all__ = ["Allowed", "host_port", "unlisted"]


def _globs(pattern: str) -> tuple[str, str]:
    """The host and port globs of ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    pattern = pattern.lower()
    if pattern.startswith("["):
        host, _, rest = pattern[1:].partition("]")
        return host, rest.removeprefix(":") or "*"
    if pattern.count(":") == 1:
        host, _, port = pattern.partition(":")
        return host, port
    return pattern, "*"


@dataclass(frozen=True, slots=True)
class Allowed:
    """The loopback or private destinations allowed all the same: globs of ``host`` or
    ``host:port``, matched against a URL's host name and each address it resolves to;
    ``setting`` names where a user lists more."""

    patterns: tuple[str, ...] = ()
    setting: str = "http_allow"

    def admits(self, host: str, port: int) -> bool:
        return any(
            fnmatchcase(host.lower(), host_glob) and fnmatchcase(str(port), port_glob)
            for host_glob, port_glob in map(_globs, self.patterns)
        )


def host_port(url: str) -> tuple[str, int]:
    """The host and port an http or https ``url`` reaches; ``ValueError`` for a bad port."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        raise ValueError(f"{url!r} has no valid port") from None
    return parts.hostname or "", port


def unlisted(url: str, allow: Sequence[str], setting: str) -> str | None:
    """Why ``url`` may not be sent to: its host is not listed in ``allow`` (a public one
    neither), named ``setting``; None when it is."""
    try:
        host, port = host_port(url)
    except ValueError as exc:
        return str(exc)
    if Allowed(tuple(allow)).admits(host, port):
        return None
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"{shown} is not listed under {setting}: list '{shown}' there to send to it"
