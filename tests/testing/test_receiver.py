"""The webhook receiver: what ``webhook.send`` posts is kept and printed, its signature checked
with the secret, its size and its sender's pace bounded."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import httpx
import pytest

from loopengine.errors import TriggerError
from loopengine.testing import WebhookReceiver
from loopengine.testing._receiver import MAX_BODY, MAX_KEPT
from loopengine.triggers import standard_signature, webhook_key
from tests.waiting import next_line

SECRET = "whsec_HQ1EWSWIHUvCuQR2kEcFr5EKy/BSlcIf"


def _signed(body: bytes, secret: str = SECRET, stamp: int | None = None) -> dict[str, str]:
    sent_at = str(int(time.time()) if stamp is None else stamp)
    signature = standard_signature(webhook_key(secret), "msg_1", sent_at, body)
    return {
        "webhook-id": "msg_1",
        "webhook-timestamp": sent_at,
        "webhook-signature": f"v1,{signature}",
        "content-type": "application/json",
    }


def test_a_post_is_kept_and_answered() -> None:
    with WebhookReceiver() as receiver:
        answer = httpx.post(f"{receiver.url}/alerts", json={"down": "x"})
    assert (answer.status_code, answer.json()) == (200, {"received": True, "verified": None})
    assert [(d.path, d.body, d.verified) for d in receiver.deliveries] == [
        ("/alerts", {"down": "x"}, None)
    ]


def test_a_signed_delivery_is_verified() -> None:
    body = b'{"down": "x"}'
    with WebhookReceiver(secret=SECRET) as receiver:
        answer = httpx.post(f"{receiver.url}/alerts", content=body, headers=_signed(body))
    assert answer.json() == {"received": True, "verified": True}
    assert receiver.deliveries[0].line() == 'POST /alerts  verified  {"down": "x"}'


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        (dict, "missing header webhook-id"),
        (lambda: _signed(b'{"down": "y"}'), "no v1 signature in webhook-signature matches"),
        (lambda: _signed(b'{"down": "x"}', stamp=1), "webhook-timestamp is"),
        (lambda: _signed(b'{"down": "x"}', secret="another secret, 16+ bytes"), "no v1 signature"),
    ],
    ids=["unsigned", "another body", "late", "another secret"],
)
def test_a_delivery_whose_signature_does_not_hold_is_refused(
    headers: Callable[[], dict[str, str]], why: str
) -> None:
    """Each delivery is signed as the test runs (a signature made when the tests were collected
    is late by the time a long suite runs them)."""
    sent = headers()
    with WebhookReceiver(secret=SECRET) as receiver:
        answer = httpx.post(f"{receiver.url}/alerts", content=b'{"down": "x"}', headers=sent)
    assert answer.status_code == 401
    assert why in answer.json()["error"]
    (delivery,) = receiver.deliveries
    assert (delivery.verified, delivery.body) == (False, None)
    assert delivery.line().startswith(f"POST /alerts  refused: {why}")


def test_the_newest_deliveries_are_kept_up_to_a_bound() -> None:
    with WebhookReceiver() as receiver, httpx.Client() as client:
        for index in range(MAX_KEPT + 2):
            client.post(receiver.url, json=index)
    assert len(receiver.deliveries) == MAX_KEPT
    assert (receiver.deliveries[0].body, receiver.deliveries[-1].body) == (2, MAX_KEPT + 1)


def test_a_body_over_the_bound_is_refused_before_it_is_read() -> None:
    with (
        WebhookReceiver() as receiver,
        socket.create_connection(("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))) as sock,
    ):
        head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n"
        sock.sendall(head.encode())
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 413 ")
    assert receiver.deliveries == []


@pytest.mark.parametrize("body", [b"not json", b"[" * 100_000 + b"]" * 100_000])
def test_a_body_that_is_no_json_is_refused(body: bytes) -> None:
    with WebhookReceiver() as receiver:
        answer = httpx.post(receiver.url, content=body)
    assert answer.status_code == 400
    assert receiver.deliveries == []


def test_a_length_that_is_no_number_of_bytes_is_refused() -> None:
    """``²`` is a digit to Python, not to HTTP."""
    with (
        WebhookReceiver() as receiver,
        socket.create_connection(("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))) as sock,
    ):
        sock.sendall("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ²\r\n\r\n".encode("latin-1"))
        sock.settimeout(60)
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 411 ")


def test_a_sender_that_stalls_is_cut_off() -> None:
    """A sender that never finishes its body holds no thread past the read timeout."""
    with (
        WebhookReceiver(read_timeout_s=0.5) as receiver,
        socket.create_connection(("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))) as sock,
    ):
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
        sock.settimeout(60)
        assert sock.recv(4096) == b""
    assert receiver.deliveries == []


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(TriggerError, match="use at least 16"):
        WebhookReceiver(secret="short")


def test_the_command_line_prints_each_delivery_until_ctrl_c() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "loopengine.testing", "--receive", "--secret", SECRET],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = next_line(process)
        url = re.search(r"http://127\.0\.0\.1:\d+", banner)
        assert url is not None, banner
        assert "(checks Standard Webhooks signatures); Ctrl-C stops it" in banner
        body = json.dumps({"down": "x"}).encode()
        assert httpx.post(f"{url[0]}/hook", content=body, headers=_signed(body)).status_code == 200
        assert next_line(process) == 'POST /hook  verified  {"down": "x"}\n'
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert (process.returncode, out, err) == (0, "stopped\n", "")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--receive", "--secret", "short"], "error: --secret: the secret is 5 bytes"),
        (["--receive", "--echo"], "--receive serves no model"),
        (["--secret", SECRET, "--echo"], "--secret checks the deliveries --receive gets"),
    ],
    ids=["short secret", "with echo", "secret alone"],
)
def test_the_command_line_refuses_what_makes_no_receiver(arguments: list[str], said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loopengine.testing", *arguments],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert said in done.stderr
