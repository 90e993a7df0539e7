"""Events and metrics: the log filtered by name pattern and time, an event emitted from the form
under the API's bounds, each metric series with its latest value and a sparkline; what events
and labels hold shown as text."""

from __future__ import annotations

import re

import pytest
from starlette.exceptions import HTTPException

from loopengine.console._drawing import HEIGHT, WIDTH, polyline
from loopengine.console._signals import Refused, event_data, names_wanted
from loopengine.triggers import MAX_EVENT_BYTES, MAX_EVENT_DEPTH
from tests.console.conftest import HOSTILE, IMAGE, SCRIPT, Console, Served


def test_an_empty_data_field_is_an_empty_object() -> None:
    assert event_data("  ") == {}


def test_data_is_read_as_a_json_object() -> None:
    assert event_data('{"page": 1}') == {"page": 1}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{page: 1}", "data is not JSON"),
        ("[1, 2]", "data is not a JSON object"),
        ('{"x": NaN}', "NaN"),
        ("[" * 5000, f"nested more than {MAX_EVENT_DEPTH} levels"),
        ('{"a": ' * 40 + "1" + "}" * 40, f"nested more than {MAX_EVENT_DEPTH} levels"),
    ],
)
def test_data_out_of_shape_is_refused_as_the_api_refuses_it(text: str, said: str) -> None:
    refused = event_data(text)
    assert isinstance(refused, Refused)
    assert said in refused.message
    assert refused.status_code == 422


def test_data_too_large_is_a_413() -> None:
    refused = event_data('{"x": "' + "a" * MAX_EVENT_BYTES + '"}')
    assert refused == Refused(f"data is over {MAX_EVENT_BYTES} bytes as JSON: send a reference "
                              "to it instead", 413)  # fmt: skip


def test_a_name_filter_is_an_event_pattern() -> None:
    assert names_wanted("seo.**")("seo.page.updated")
    assert not names_wanted("seo.*")("seo.page.updated")
    assert names_wanted("")("any.name")


@pytest.mark.parametrize("given", ["seo.<b>", "a" * 201])
def test_a_name_filter_that_is_no_pattern_is_a_422(given: str) -> None:
    with pytest.raises(HTTPException) as refused:
        names_wanted(given)
    assert refused.value.status_code == 422


def test_a_series_spans_the_box_from_its_least_to_its_greatest() -> None:
    assert (
        polyline([1.0, 3.0, 2.0]) == f"0.0,{HEIGHT - 1:.1f} 60.0,1.0 {WIDTH:.1f},{HEIGHT / 2:.1f}"
    )


def test_a_flat_or_single_series_is_drawn_and_a_value_not_finite_left_out() -> None:
    assert polyline([5.0]) == f"0.0,{HEIGHT - 1:.1f}"
    assert polyline([float("nan"), float("inf")]) == ""
    assert (
        polyline([2.0, float("nan"), 2.0]) == f"0.0,{HEIGHT - 1:.1f} {WIDTH:.1f},{HEIGHT - 1:.1f}"
    )


def test_values_out_of_the_bounds_given_stay_in_the_box() -> None:
    assert polyline([-5.0, 5.0], low=0.0, high=1.0) == f"0.0,{HEIGHT - 1:.1f} {WIDTH:.1f},1.0"


def test_an_event_emitted_from_the_form_is_listed_as_text(console: Console) -> None:
    data = '{"note": "' + " ".join(HOSTILE).replace('"', "'") + '"}'
    emitted = console.post("/console/events", {"name": "hostile.shown", "data": data})
    assert emitted.status_code == 303
    assert re.fullmatch(r"/console/events\?emitted=\d+", emitted.headers["location"])
    page = console.http.get(emitted.headers["location"]).text
    assert "emitted: the loops whose pattern it matches are queued" in page
    assert "<code>hostile.shown</code>" in page
    assert SCRIPT.replace('"', "'") not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<td>console</td>" in page


def test_a_name_no_event_has_is_refused_beside_its_field(console: Console) -> None:
    refused = console.post("/console/events", {"name": IMAGE, "data": ""})
    assert refused.status_code == 422
    assert 'id="event-name-error">event name' in refused.text
    assert IMAGE not in refused.text
    assert 'value="&lt;img src=x onerror=alert(1)&gt;"' in refused.text


def test_data_out_of_bounds_is_refused_beside_its_field(console: Console) -> None:
    deep = '{"a": ' * 40 + "1" + "}" * 40
    refused = console.post("/console/events", {"name": "deep.one", "data": deep})
    assert refused.status_code == 422
    assert f"nested more than {MAX_EVENT_DEPTH} levels" in refused.text
    assert "deep.one" not in console.http.get("/console/events").text.split("</form>")[-1]


def test_a_form_over_the_console_s_bound_is_a_413(console: Console) -> None:
    data = '{"x": "' + "a" * MAX_EVENT_BYTES + '"}'
    assert console.post("/console/events", {"name": "big", "data": data}).status_code == 413


def test_an_emit_form_without_its_csrf_token_is_refused(served: Served, console: Console) -> None:
    refused = console.http.post(
        "/console/events", data={"name": "x.y"}, headers={"Origin": served.url}
    )
    assert refused.status_code == 403


def test_events_are_filtered_by_name_pattern_and_time(console: Console) -> None:
    for name in ("filtered.kept", "other.left"):
        assert console.post("/console/events", {"name": name}).status_code == 303
    page = console.http.get("/console/events", params={"name": "filtered.*"}).text
    assert "<code>filtered.kept</code>" in page
    assert "other.left" not in page.split("</form>")[-1]
    later = console.http.get("/console/events", params={"since": "2999-01-01T00:00"}).text
    assert "No event matches these filters." in later
    earlier = console.http.get("/console/events", params={"until": "2000-01-01T00:00"}).text
    assert "No event matches these filters." in earlier


@pytest.mark.parametrize(
    ("query", "said"),
    [({"name": "a..b"}, "name: invalid event pattern"), ({"since": "soon"}, "since: write")],
)
def test_a_bad_filter_is_a_422_page(console: Console, query: dict[str, str], said: str) -> None:
    page = console.http.get("/console/events", params=query)
    assert page.status_code == 422
    assert said in page.text


def test_a_metric_series_shows_its_latest_value_labels_and_sparkline(
    served: Served, console: Console
) -> None:
    for value in ("1", "4", "2.5"):
        served.workspace.cli("metrics", "record", "queue.depth", value, "--label", f"host={IMAGE}")
    page = console.http.get("/console/metrics", params={"name": "queue.*"}).text
    row = page[page.index("<code>queue.depth</code>") :]
    assert "<strong>2.5</strong>" in row
    assert "host=&lt;img src=x onerror=alert(1)&gt;" in row
    assert IMAGE not in page
    points = re.search(r'<polyline points="([^"]*)"/>', row)
    assert points is not None
    assert points.group(1) == polyline([1.0, 4.0, 2.5])
    assert 'aria-label="queue.depth: from 1 to 4"' in row


def test_no_series_matching_says_so(console: Console) -> None:
    page = console.http.get("/console/metrics", params={"name": "nothing.here"}).text
    assert "No metric series matches this pattern." in page


def test_a_pattern_of_many_double_stars_is_answered(console: Console) -> None:
    assert console.post("/console/events", {"name": ".".join(["d"] * 90)}).status_code == 303
    page = console.http.get("/console/events", params={"name": "**." * 66 + "x"})
    assert page.status_code == 200
    assert "No event matches these filters." in page.text
