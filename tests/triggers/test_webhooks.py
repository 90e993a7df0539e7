"""Webhook signatures: Standard Webhooks and GitHub deliveries signed with the hook's secret are
accepted, anything else is refused with a reason that never holds the expected signature."""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
from collections.abc import Callable

import pytest
from starlette.datastructures import Headers

from loopengine.errors import TriggerError
from loopengine.triggers import (
    MAX_HEADER_CHARS,
    SecretProblem,
    delivery_of,
    replay_digest,
    secret_problem,
    verify_delivery,
    webhook_key,
)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
"""The test vector of the Standard Webhooks specification."""
KEY = webhook_key(SECRET)
NOW = 1_614_265_330
BODY = b'{"test": 2432232314}'
DELIVERY = "msg_p5jXN8AQM9LWM0D4loKWxJek"
GITHUB_SECRET = "It's a Secret to Everybody"
"""The test vector of GitHub's documentation."""
GITHUB_DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
MUTATIONS = 2_000
"""Mutated deliveries per kind of mutation (six kinds: 12,000 in all)."""


def _signed(
    body: bytes = BODY, delivery: str = DELIVERY, stamp: int = NOW, key: bytes = KEY
) -> dict[str, str]:
    mac = hmac.digest(key, f"{delivery}.{stamp}.".encode() + body, hashlib.sha256)
    signature = "v1," + base64.b64encode(mac).decode()
    return {"webhook-id": delivery, "webhook-timestamp": str(stamp), "webhook-signature": signature}


def _github(body: bytes = b"Hello, World!", key: bytes = GITHUB_SECRET.encode()) -> dict[str, str]:
    signature = "sha256=" + hmac.digest(key, body, hashlib.sha256).hex()
    return {"X-GitHub-Delivery": GITHUB_DELIVERY, "X-Hub-Signature-256": signature}


def _verify(
    headers: dict[str, str],
    body: bytes = BODY,
    *,
    style: str = "standard",
    key: bytes = KEY,
    now: float = NOW,
) -> str:
    return verify_delivery(style, key, Headers(headers), body, now=now, tolerance_s=300)


def test_the_standard_webhooks_test_vector_is_accepted() -> None:
    headers = {
        "webhook-id": DELIVERY,
        "webhook-timestamp": str(NOW),
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    assert _verify(headers) == DELIVERY


def test_the_github_test_vector_is_accepted() -> None:
    headers = {
        "X-GitHub-Delivery": GITHUB_DELIVERY,
        "X-Hub-Signature-256": (
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        ),
    }
    key = webhook_key(GITHUB_SECRET)
    assert _verify(headers, b"Hello, World!", style="github", key=key) == GITHUB_DELIVERY


def test_a_whsec_secret_is_base64_decoded_any_other_used_as_utf8() -> None:
    raw = b"\x00\xff sixteen bytes key"
    assert webhook_key("whsec_" + base64.b64encode(raw).decode()) == raw
    assert webhook_key("a plain sécret, long enough") == "a plain sécret, long enough".encode()


@pytest.mark.parametrize(
    "secret", ["whsec_", "whsec_" + base64.b64encode(b"short").decode(), "short"]
)
def test_a_key_under_sixteen_bytes_is_refused(secret: str) -> None:
    with pytest.raises(TriggerError, match="at least 16"):
        webhook_key(secret)


def test_a_delivery_signed_with_a_plain_secret_is_accepted() -> None:
    key = webhook_key("not-a-whsec-secret")
    assert _verify(_signed(key=key), key=key) == DELIVERY


def test_a_whsec_secret_that_is_not_base64_is_refused() -> None:
    with pytest.raises(TriggerError, match="not base64"):
        webhook_key("whsec_not base64!")


def test_a_secret_read_from_the_environment_that_gives_a_key_has_no_problem() -> None:
    assert secret_problem("${ secret.HOOK }", {"HOOK": SECRET}) is None


def test_a_secret_whose_variable_is_not_set_names_it_and_is_marked_unset() -> None:
    problem = secret_problem("${ secret.HOOK }", {"OTHER": SECRET})
    assert problem is not None
    assert problem.unset
    assert problem.message.startswith("webhook secret $HOOK is not set: a webhook's secret must")


@pytest.mark.parametrize(
    ("secret", "environ", "message"),
    [
        ("${ secret.HOOK }", {"HOOK": "short"}, "webhook secret $HOOK: the secret is 5 bytes"),
        ("${ secret.HOOK }", {"HOOK": ""}, "webhook secret $HOOK: the secret is 0 bytes"),
        ("${ secret.HOOK }", {"HOOK": "whsec_!"}, "webhook secret $HOOK: the secret starts"),
        ("hunter2", {}, "webhook secret written in the file: the secret is 7 bytes"),
        ("${ secret.HOOK", {}, "unclosed '${'"),
    ],
    ids=["short", "empty", "not-base64", "in-clear", "bad-template"],
)
def test_a_secret_that_gives_no_key_of_16_bytes_is_a_problem_whatever_the_environment(
    secret: str, environ: dict[str, str], message: str
) -> None:
    problem = secret_problem(secret, environ)
    assert isinstance(problem, SecretProblem)
    assert not problem.unset
    assert problem.message.startswith(message)


def test_header_names_are_case_insensitive() -> None:
    headers = {name.upper(): value for name, value in _signed().items()}
    assert _verify(headers) == DELIVERY


def test_any_one_of_several_signatures_accepts() -> None:
    headers = _signed()
    good = headers["webhook-signature"]
    others = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= v1a,c29tZXRoaW5n"
    headers["webhook-signature"] = f"{others} {good}"
    assert _verify(headers) == DELIVERY


def test_a_signature_of_another_version_is_not_read_as_v1() -> None:
    headers = _signed()
    headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", "v2,")
    with pytest.raises(TriggerError, match="no v1 signature"):
        _verify(headers)


@pytest.mark.parametrize("skew", [299, -299])
def test_a_delivery_within_the_tolerance_is_accepted(skew: int) -> None:
    assert _verify(_signed(stamp=NOW - skew)) == DELIVERY


@pytest.mark.parametrize(("skew", "side"), [(301, "past"), (-301, "future")])
def test_a_delivery_past_the_tolerance_is_refused_saying_how_far_off(skew: int, side: str) -> None:
    with pytest.raises(TriggerError, match=f"is 301 s in the {side}; accepted within ±300 s"):
        _verify(_signed(stamp=NOW - skew))


@pytest.mark.parametrize("name", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_each_standard_header_is_required(name: str) -> None:
    headers = _signed()
    del headers[name]
    with pytest.raises(TriggerError, match=f"missing header {name}"):
        _verify(headers)


@pytest.mark.parametrize("name", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_header_of_a_megabyte_is_refused_unread(name: str) -> None:
    headers = _signed()
    headers[name] = "v1," + "A" * 1_000_000
    with pytest.raises(TriggerError, match=f"header {name} is over {MAX_HEADER_CHARS} characters"):
        _verify(headers)


@pytest.mark.parametrize(
    ("name", "value"),
    [("webhook-timestamp", "1614265330.5"), ("webhook-timestamp", "-5"), ("webhook-id", "a b")],
)
def test_a_malformed_id_or_timestamp_is_refused(name: str, value: str) -> None:
    headers = _signed()
    headers[name] = value
    with pytest.raises(TriggerError, match=f"header {name} must be"):
        _verify(headers)


def test_the_reason_never_holds_the_expected_signature() -> None:
    changed = BODY + b" "
    expected = _signed(changed)["webhook-signature"].removeprefix("v1,")
    with pytest.raises(TriggerError) as refused:
        _verify(_signed(), changed)
    assert expected[:8] not in str(refused.value)


def test_the_github_reason_never_holds_the_expected_signature() -> None:
    changed = b"Hello, World?"
    expected = _github(changed)["X-Hub-Signature-256"].removeprefix("sha256=")
    with pytest.raises(TriggerError) as refused:
        _verify(_github(), changed, style="github", key=GITHUB_SECRET.encode())
    assert expected[:8] not in str(refused.value)


def test_a_github_delivery_with_a_changed_body_is_refused() -> None:
    key = GITHUB_SECRET.encode()
    with pytest.raises(TriggerError, match="X-Hub-Signature-256 does not match"):
        _verify(_github(), b"Hello, World?", style="github", key=key)


@pytest.mark.parametrize("name", ["X-GitHub-Delivery", "X-Hub-Signature-256"])
def test_each_github_header_is_required(name: str) -> None:
    headers = _github()
    del headers[name]
    with pytest.raises(TriggerError, match=f"missing header {name}"):
        _verify(headers, b"Hello, World!", style="github", key=GITHUB_SECRET.encode())


def test_a_github_signature_without_its_prefix_is_refused() -> None:
    headers = _github()
    headers["X-Hub-Signature-256"] = headers["X-Hub-Signature-256"].removeprefix("sha256=")
    with pytest.raises(TriggerError, match="must be sha256=<hex"):
        _verify(headers, b"Hello, World!", style="github", key=GITHUB_SECRET.encode())


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(TriggerError, match="unknown webhook style 'gitlab'"):
        _verify(_signed(), style="gitlab")


def test_an_unsigned_delivery_names_itself_by_its_style_header_or_not_at_all() -> None:
    assert delivery_of("standard", Headers({"webhook-id": "msg_1"})) == "msg_1"
    assert delivery_of("github", Headers({"x-github-delivery": "d-1"})) == "d-1"
    assert delivery_of("standard", Headers({"x-github-delivery": "d-1"})) is None


def test_an_unsigned_delivery_id_is_bounded() -> None:
    with pytest.raises(TriggerError, match="1 to 200 visible ASCII characters"):
        delivery_of("standard", Headers({"webhook-id": "m" * 201}))


def test_a_github_delivery_is_also_named_by_its_body_which_alone_is_signed() -> None:
    assert replay_digest("github", b"Hello, World!") == hashlib.sha256(b"Hello, World!").hexdigest()


def test_a_standard_delivery_is_named_by_its_signed_id_alone() -> None:
    assert replay_digest("standard", BODY) is None


def test_the_body_of_an_unknown_style_names_nothing() -> None:
    with pytest.raises(TriggerError, match="unknown webhook style 'gitlab'"):
        replay_digest("gitlab", BODY)


# Mutations: each changes one signed part of a valid delivery; every result must be refused.

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"


def _other_char(rng: random.Random, text: str, at: int) -> str:
    return rng.choice([c for c in _ALPHABET if c != text[at]])


def _mutate_text(rng: random.Random, text: str) -> str:
    """``text`` with one character replaced, inserted or deleted (never the same text)."""
    at = rng.randrange(len(text))
    kind = rng.choice(("replace", "insert", "delete") if len(text) > 1 else ("replace", "insert"))
    if kind == "replace":
        return text[:at] + _other_char(rng, text, at) + text[at + 1 :]
    if kind == "insert":
        return text[:at] + rng.choice(_ALPHABET) + text[at:]
    return text[:at] + text[at + 1 :]


def _mutate_bytes(rng: random.Random, body: bytes) -> bytes:
    at = rng.randrange(len(body))
    kind = rng.choice(("flip", "insert", "delete"))
    if kind == "flip":
        return body[:at] + bytes([body[at] ^ (1 << rng.randrange(8))]) + body[at + 1 :]
    if kind == "insert":
        return body[:at] + bytes([rng.randrange(256)]) + body[at:]
    return body[:at] + body[at + 1 :]


def _signature_changed(rng: random.Random) -> tuple[dict[str, str], bytes]:
    headers = _signed()
    value = headers["webhook-signature"]
    at = rng.randrange(3, len(value))
    headers["webhook-signature"] = value[:at] + _other_char(rng, value, at) + value[at + 1 :]
    return headers, BODY


def _id_changed(rng: random.Random) -> tuple[dict[str, str], bytes]:
    headers = _signed()
    headers["webhook-id"] = _mutate_text(rng, DELIVERY)
    return headers, BODY


def _timestamp_changed(rng: random.Random) -> tuple[dict[str, str], bytes]:
    headers = _signed()
    headers["webhook-timestamp"] = str(NOW + rng.choice([-1, 1]) * rng.randint(1, 299))
    return headers, BODY


def _body_changed(rng: random.Random) -> tuple[dict[str, str], bytes]:
    return _signed(), _mutate_bytes(rng, BODY)


def _header_renamed(rng: random.Random) -> tuple[dict[str, str], bytes]:
    headers = _signed()
    name = rng.choice(sorted(headers))
    renamed = _mutate_text(rng, name).lower()
    while renamed == name:
        renamed = _mutate_text(rng, name).lower()
    headers[renamed] = headers.pop(name)
    return headers, BODY


def _github_body_changed(rng: random.Random) -> tuple[dict[str, str], bytes]:
    return _github(), _mutate_bytes(rng, b"Hello, World!")


Mutation = Callable[[random.Random], tuple[dict[str, str], bytes]]


@pytest.mark.parametrize(
    "mutate",
    [
        _signature_changed,
        _id_changed,
        _timestamp_changed,
        _body_changed,
        _header_renamed,
        _github_body_changed,
    ],
)
def test_every_mutated_delivery_is_refused(mutate: Mutation) -> None:
    rng = random.Random(f"webhooks-{mutate.__name__}")
    github = mutate is _github_body_changed
    style, key = ("github", GITHUB_SECRET.encode()) if github else ("standard", KEY)
    accepted = []
    for _ in range(MUTATIONS):
        headers, body = mutate(rng)
        try:
            _verify(headers, body, style=style, key=key)
        except TriggerError:
            continue
        accepted.append((headers, body))
    assert accepted == []
