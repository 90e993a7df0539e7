"""OpenTelemetry traces: a span per execution, phase, skill call and LLM call, exported by
OTLP/HTTP once ``enable`` installed a tracer provider. Until then every span is one shared no-op
object and OpenTelemetry is never imported, so a process without ``tracing:`` pays nothing.

W3C ``traceparent`` headers are read here as plain strings (``traceparent``, ``carried``) so the
API and the queue carry them without OpenTelemetry; a job's trigger keeps its sender's, and its
execution's span continues that trace in whichever process runs it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopengine._secrets import redact

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span as OtelSpan
    from opentelemetry.trace import Tracer

__all__ = [
    "ENDPOINT_ENV",
    "INSTALL",
    "SERVICE_ENV",
    "TRACEPARENT",
    "TRACES_ENDPOINT_ENV",
    "AttributeValue",
    "Exporting",
    "Span",
    "answered",
    "carried",
    "current",
    "disable",
    "enable",
    "exporting",
    "llm_span",
    "outgoing",
    "span",
    "start",
    "trace_id",
    "traceparent",
]

AttributeValue = str | int | float | bool
"""What a span attribute may hold (OpenTelemetry's scalar values)."""
TRACEPARENT = "traceparent"
ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
SERVICE_ENV = "OTEL_SERVICE_NAME"
INSTALL = "pip install 'loopengine[otel]'"
_MAX_HEADER = 512
_HEADER = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?", re.DOTALL)
_PROVIDER = "openai"
"""The protocol every node speaks (``gen_ai.provider.name``): OpenAI's chat completions."""


class Span:
    """What a call site may tell its span: an attribute, or that its work failed. This one, the
    span of a process that does not trace, keeps nothing."""

    __slots__ = ()

    def set(self, key: str, value: AttributeValue) -> None:
        pass

    def fail(self, message: str) -> None:
        pass


class _Recording(Span):
    __slots__ = ("span",)

    def __init__(self, span: OtelSpan) -> None:
        self.span = span

    def set(self, key: str, value: AttributeValue) -> None:
        self.span.set_attribute(key, value)

    def fail(self, message: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.span.set_status(Status(StatusCode.ERROR, redact(message)))


_OFF: AbstractContextManager[Span] = nullcontext(Span())
_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def traceparent(value: str | None) -> str | None:
    """A request's ``traceparent`` header as version 00 carries it, or None when it is absent or
    malformed (ignored, as the W3C recommendation says): a longer header of a later version is
    read for its first four fields."""
    if value is None or len(value) > _MAX_HEADER:
        return None
    found = _HEADER.fullmatch(value.strip())
    if found is None:
        return None
    version, trace_id, parent_id, flags, rest = found.groups()
    if (
        version == "ff"
        or (version == "00" and rest)
        or not int(trace_id, 16)
        or not int(parent_id, 16)
    ):
        return None
    return f"00-{trace_id}-{parent_id}-{flags}"


def carried(header: str | None) -> dict[str, str]:
    """What a job's trigger keeps of a request's ``traceparent`` header: the header when valid."""
    found = traceparent(header)
    return {} if found is None else {TRACEPARENT: found}


def trace_id(parent: str | None) -> str | None:
    """The trace id of a ``traceparent`` (None for None)."""
    return None if parent is None else parent.split("-")[1]


@dataclass(frozen=True, slots=True)
class Exporting:
    """Where spans go and which are kept (``tracing:`` of loopengine.yaml, or the environment)."""

    url: str
    """The collector's ``/v1/traces`` URL."""
    service_name: str = "loopengine"
    sample_ratio: float = 1.0
    timeout_s: float = 3.0


def exporting(config: Mapping[str, Any] | None, environ: Mapping[str, str]) -> Exporting | None:
    """How this process exports spans, or None when nothing asks for traces: the traces URL of
    ``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``/v1/traces`` under
    ``$OTEL_EXPORTER_OTLP_ENDPOINT``, else under the config's ``otlp_endpoint``;
    ``$OTEL_SERVICE_NAME`` names the service over the config's ``service_name``."""
    config = config or {}
    base = environ.get(ENDPOINT_ENV) or config.get("otlp_endpoint")
    url = environ.get(TRACES_ENDPOINT_ENV) or (base and base.rstrip("/") + "/v1/traces")
    if not url:
        return None
    kept = {k: config[k] for k in ("service_name", "sample_ratio", "timeout_s") if k in config}
    if environ.get(SERVICE_ENV):
        kept["service_name"] = environ[SERVICE_ENV]
    return Exporting(url, **kept)


def start(wanted: Exporting) -> None:
    """Export spans as ``wanted`` says, in batches from a thread of their own; ``ImportError``
    when OpenTelemetry is not installed."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        resource=Resource.create({"service.name": wanted.service_name}),
        sampler=ParentBased(TraceIdRatioBased(wanted.sample_ratio)),
    )
    exporter = OTLPSpanExporter(endpoint=wanted.url, timeout=wanted.timeout_s)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    enable(provider)


def enable(provider: TracerProvider) -> None:
    """Trace through ``provider`` from now on (``start`` gives one exporting by OTLP/HTTP)."""
    global _tracer, _provider
    _provider, _tracer = provider, provider.get_tracer("loopengine")


def disable() -> None:
    """Stop tracing: the spans still held are exported (each export within its deadline; a
    collector that cannot be reached loses them, nothing else)."""
    global _tracer, _provider
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def span(
    name: str, attributes: Mapping[str, AttributeValue], parent: str | None = None
) -> AbstractContextManager[Span]:
    """A span around the ``with`` block, child of the current one, or of ``parent`` (a
    ``traceparent``, ignored when malformed) when given; an exception leaving the block marks
    it failed."""
    if _tracer is None:
        return _OFF
    return _recording(_tracer, name, attributes, traceparent(parent))


def llm_span(
    operation: str, node: str, model: str, url: str, body: Mapping[str, Any]
) -> AbstractContextManager[Span]:
    """The span of one call to a node (``operation``: ``chat``, ``embeddings``), with the GenAI
    semantic conventions' request attributes (``gen_ai.*``) and the node's address."""
    if _tracer is None:
        return _OFF
    from urllib.parse import urlsplit

    address = urlsplit(url)
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.system": _PROVIDER,
        "gen_ai.provider.name": _PROVIDER,
        "gen_ai.request.model": model,
        "server.address": address.hostname or "",
        "server.port": address.port or (443 if address.scheme == "https" else 80),
        "loopengine.llm.node": node,
    }
    for key in ("max_tokens", "temperature"):
        if key in body:
            attributes[f"gen_ai.request.{key}"] = body[key]
    return _recording(_tracer, f"{operation} {model}", attributes, None, client=True)


def answered(span: Span, model: str, usage: Mapping[str, int], latency_ms: float) -> None:
    """Tell a chat completion's span what the node answered: its model, tokens and latency."""
    span.set("gen_ai.response.model", model)
    span.set("gen_ai.usage.input_tokens", int(usage.get("prompt_tokens", 0)))
    span.set("gen_ai.usage.output_tokens", int(usage.get("completion_tokens", 0)))
    span.set("loopengine.llm.latency_ms", round(latency_ms, 3))


def current() -> str | None:
    """The current span's ``traceparent``, when this process traces and a span is open."""
    if _tracer is None:
        return None
    from opentelemetry.trace import get_current_span

    context = get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def outgoing() -> dict[str, str]:
    """The headers an outgoing request carries: the current span's ``traceparent``, if any."""
    return carried(current())


def _remote(parent: str) -> Any:
    """The OpenTelemetry context of a ``traceparent`` (a remote parent)."""
    from opentelemetry.trace import (
        NonRecordingSpan,
        SpanContext,
        TraceFlags,
        set_span_in_context,
    )

    _, trace_id, span_id, flags = parent.split("-")
    context = SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(int(flags, 16))
    )
    return set_span_in_context(NonRecordingSpan(context))


@contextmanager
def _recording(
    tracer: Tracer,
    name: str,
    attributes: Mapping[str, AttributeValue],
    parent: str | None,
    *,
    client: bool = False,
) -> Iterator[Span]:
    from opentelemetry.trace import SpanKind

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    context = None if parent is None else _remote(parent)
    with tracer.start_as_current_span(
        name,
        context,
        kind,
        attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as otel:
        recording = _Recording(otel)
        try:
            yield recording
        except Exception as exc:
            otel.set_attribute("error.type", type(exc).__qualname__)
            recording.fail(f"{type(exc).__name__}: {exc}")
            raise
