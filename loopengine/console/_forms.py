"""A form's fields from an ``application/x-www-form-urlencoded`` body, bounded in bytes and in
fields before anything reads them."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.requests import Request

__all__ = ["MAX_FIELDS", "MAX_FORM_BYTES", "read_form"]

MAX_FORM_BYTES = 65_536
"""Most bytes of a form's body."""
MAX_FIELDS = 100
"""Most fields one form sends."""
_FORM = "application/x-www-form-urlencoded"


async def read_form(request: Request, max_bytes: int = MAX_FORM_BYTES) -> dict[str, str]:
    """The fields of the form ``request`` posts, the first of each name; 415 for another kind
    of body, 413 past ``max_bytes``, 400 past ``MAX_FIELDS`` or for text not UTF-8."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind != _FORM:
        raise HTTPException(415, f"a form is sent as {_FORM}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise HTTPException(413, f"the form is over {max_bytes} bytes")
    try:
        text = body.decode()
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS, errors="strict")
    except ValueError:
        raise HTTPException(
            400, f"the form is not UTF-8 text of at most {MAX_FIELDS} fields"
        ) from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields
