"""What the tracing module decides without a collector: which ``traceparent`` headers are kept
(a header is untrusted input: malformed, oversized or hostile ones are ignored), where spans are
exported to, and that a process which does not trace hands out one no-op span."""

from __future__ import annotations

import pytest

import loopengine._tracing as tracing

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
VALID = f"00-{TRACE_ID}-{PARENT_ID}-01"


def test_a_valid_traceparent_is_kept_as_sent() -> None:
    assert tracing.traceparent(VALID) == VALID
    assert tracing.carried(VALID) == {"traceparent": VALID}
    assert tracing.trace_id(VALID) == TRACE_ID


def test_a_later_versions_header_is_read_for_its_first_four_fields() -> None:
    assert tracing.traceparent(f"cc-{TRACE_ID}-{PARENT_ID}-01-what-comes-next") == VALID


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        VALID.upper(),
        f"ff-{TRACE_ID}-{PARENT_ID}-01",
        f"00-{'0' * 32}-{PARENT_ID}-01",
        f"00-{TRACE_ID}-{'0' * 16}-01",
        f"00-{TRACE_ID}-{PARENT_ID}-01-extra",
        f"00-{TRACE_ID[:-1]}-{PARENT_ID}-01",
        f"00-{TRACE_ID}-{PARENT_ID}-1",
        f"00_{TRACE_ID}_{PARENT_ID}_01",
        f"00-{TRACE_ID}-{PARENT_ID}-0g",
        f"cc-{TRACE_ID}-{PARENT_ID}-01" + "-x" * 1000,
        "\n".join([VALID] * 2),
    ],
)
def test_a_malformed_or_oversized_traceparent_is_ignored(header: str | None) -> None:
    assert tracing.traceparent(header) is None
    assert tracing.carried(header) == {}


def test_no_endpoint_asks_for_no_traces() -> None:
    assert tracing.exporting(None, {}) is None
    assert tracing.exporting({"service_name": "nightly"}, {}) is None


def test_the_config_names_the_collector_whose_v1_traces_takes_the_spans() -> None:
    config = {"otlp_endpoint": "http://127.0.0.1:4318/", "service_name": "nightly"}
    assert tracing.exporting(config, {}) == tracing.Exporting(
        "http://127.0.0.1:4318/v1/traces", service_name="nightly"
    )


def test_the_standard_environment_variables_override_the_config() -> None:
    config = {"otlp_endpoint": "http://127.0.0.1:4318", "sample_ratio": 0.5}
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.internal:4318"}
    assert tracing.exporting(config, base) == tracing.Exporting(
        "http://collector.internal:4318/v1/traces", sample_ratio=0.5
    )
    traces = {**base, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://other:4318/traces"}
    assert tracing.exporting(None, traces) == tracing.Exporting("http://other:4318/traces")
    named = {**base, "OTEL_SERVICE_NAME": "nightly"}
    assert tracing.exporting({"service_name": "x"}, named) == tracing.Exporting(
        "http://collector.internal:4318/v1/traces", service_name="nightly"
    )


def test_a_process_that_does_not_trace_hands_out_one_no_op_span() -> None:
    with tracing.span("execution x", {}) as first, tracing.span("phase y", {}) as second:
        first.set("loopengine.outcome", "failed")
        first.fail("nothing is kept")
    assert first is second
    assert tracing.outgoing() == {}
