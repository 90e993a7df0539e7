"""The daemon's log masks known secrets in a line's message and fields, as text and as JSON."""

from __future__ import annotations

import io
import json
import random

import pytest

from loopengine._secrets import remember
from loopengine.daemon import DaemonLog
from loopengine.daemon._log import _stamp
from loopengine.store import iso

SECRET = "lg-8e1f0c3b9a27d564"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_line_masks_known_secrets_in_its_message_and_fields(as_json: bool) -> None:
    remember(SECRET)
    stream = io.StringIO()
    DaemonLog(stream, as_json=as_json).line("error", f"refused {SECRET}", data={SECRET: SECRET})
    written = stream.getvalue()
    assert SECRET not in written
    if as_json:
        assert json.loads(written)["message"] == "refused ***"
        assert json.loads(written)["data"] == {"***": "***"}
    else:
        assert written.endswith(' data="{\\"***\\": \\"***\\"}" refused ***\n')


def test_a_lines_stamp_is_its_instant_as_the_store_writes_instants() -> None:
    """Formatted once a second, rounded as ``datetime`` rounds, at the edges of a millisecond
    and of a second too."""
    drawn = random.Random(7)
    instants = [drawn.uniform(0, 4e9) for _ in range(20_000)]
    instants += [1.9999995, 1.0000005, 1.9994995, 1.9995, 0.0, 5.999999499, 5.9999995, 7.5]
    assert [_stamp(at) for at in instants] == [iso(at) for at in instants]
