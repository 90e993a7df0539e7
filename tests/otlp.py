"""Spans for the tests: kept in memory by the SDK's exporter (the ``spans`` fixture), or received
by an OTLP/HTTP collector on 127.0.0.1 that accepts ``POST /v1/traces`` in protobuf, as the SDK's
exporter sends it, and keeps each span it decodes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopengine._tracing as tracing
from tests.builtins.http_server import in_thread

__all__ = ["Collector", "ReceivedSpan", "collecting", "spans"]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this process ends while the test runs, each as it ends."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    try:
        yield exporter
    finally:
        tracing.disable()


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    service: str
    attributes: dict[str, Any]
    error: bool


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return None if kind is None else getattr(any_value, kind)


def _decoded(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        span.name,
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex(),
                        str(resource.get("service.name")),
                        {a.key: _value(a.value) for a in span.attributes},
                        span.status.code == span.status.STATUS_CODE_ERROR,
                    )
                )
    return found


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        with self.server.lock:
            self.server.spans.extend(_decoded(body))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class Collector(ThreadingHTTPServer):
    daemon_threads = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.spans: list[ReceivedSpan] = []

    @property
    def endpoint(self) -> str:
        """The base URL a config's ``otlp_endpoint`` names."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def received(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.spans)

    def named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.received() if span.name == name]


@contextmanager
def collecting() -> Iterator[Collector]:
    """A collector serving until the block ends."""
    server = Collector()
    with in_thread(server):
        yield server
