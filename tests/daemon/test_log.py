"""The daemon's log masks known secrets in a line's message and fields, as text and as JSON."""

from __future__ import annotations

import io
import json

import pytest

from loopengine._secrets import remember
from loopengine.daemon import DaemonLog

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
