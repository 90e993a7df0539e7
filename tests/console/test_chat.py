"""The console's chat: a message sent through the form is answered by the chat loop as
``POST /chat`` answers it, each chain stage a badge that opens on its tools; sessions are
listed and each thread readable; whatever a model wrote is shown as text."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from starlette.exceptions import HTTPException

from loopengine.api._chat import MAX_MESSAGE
from loopengine.console._chat import SHOWN_MESSAGES, STREAMED, chat_fields, progress_text
from loopengine.store import threads, write_once
from loopengine.testing import FakeLLMServer, reply, tool_call
from loopengine.threads import new_batch
from tests.api.test_chat import TOKEN as CLUSTER_TOKEN
from tests.api.test_chat import chat_daemon
from tests.console.conftest import HOSTILE, IMAGE, LINK, SCRIPT, Console, Served

FACTS = f"Loops have seven phases. {SCRIPT}"
"""The file the research stage reads: its hostile text comes back as a tool's result."""
HOSTILE_REPLY = f'Paris. {SCRIPT} {IMAGE} [click]({LINK}) <a href="{LINK}">here</a>'


@dataclass
class Chatting:
    console: Console
    llm: FakeLLMServer
    database: str

    def send(self, message: str, **fields: str) -> tuple[int, str]:
        response = self.console.post("/console/chat", {"message": message, **fields})
        return response.status_code, response.text


@pytest.fixture(scope="module")
def chatting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chatting]:
    """The console of a daemon whose cluster (OL1, M1, M2) is one scripted server; logged in."""
    with chat_daemon(tmp_path_factory.mktemp("console-chat")) as daemon:
        (daemon.workspace.root / "facts.txt").write_text(FACTS)
        client = Served(daemon.workspace, daemon.api).client()
        assert client.login(CLUSTER_TOKEN).status_code == 303
        yield Chatting(client, daemon.llm, daemon.workspace.env["LOOPENGINE_DATABASE"])
        client.close()


def _reflexive(llm: FakeLLMServer) -> None:
    llm.script("ol1", [tool_call("read_file", {"path": "facts.txt"}), reply("7 phases.")])
    llm.script("m1", [reply("Loops have seven phases.")])
    llm.script("m2", [reply("Reviewed: loops have seven phases.")])


def test_a_form_sends_its_message_session_and_mode() -> None:
    fields = {"message": "Hi", "session": "s-1", "mode": "simple"}
    assert chat_fields(fields) == ("Hi", "s-1", "simple")


def test_a_message_without_a_session_starts_a_new_one_each_time() -> None:
    first, second = (chat_fields({"message": "Hi"})[1] for _ in range(2))
    assert all((first, second))
    assert first != second


def test_a_message_without_a_mode_lets_the_chat_choose() -> None:
    assert chat_fields({"message": "Hi", "session": "s"})[2] is None


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"message": "  "}, "message: write something"),
        ({"message": "x" * (MAX_MESSAGE + 1)}, f"message: at most {MAX_MESSAGE}"),
        ({"message": "Hi", "session": "a/b"}, "session:"),
        ({"message": "Hi", "session": "a b"}, "session:"),
        ({"message": "Hi", "session": "s" * 201}, "session:"),
        ({"message": "Hi", "mode": "<script>"}, "mode: simple or reflexive"),
    ],
)
def test_a_field_out_of_the_api_s_bounds_is_refused(fields: dict[str, str], problem: str) -> None:
    with pytest.raises(HTTPException) as refused:
        chat_fields(fields)
    assert refused.value.status_code == 422
    assert problem in refused.value.detail


def test_the_chat_page_offers_the_form_and_the_sessions(chatting: Chatting) -> None:
    page = chatting.console.http.get("/console/chat").text
    assert '<form class="chat" method="post" action="/console/chat">' in page
    assert f'maxlength="{MAX_MESSAGE}"' in page
    assert '<h2 id="sessions">Sessions</h2>' in page


def test_a_message_is_answered_with_the_chain_as_closed_badges(chatting: Chatting) -> None:
    chatting.llm.script("ol1", [reply("Paris.")])
    status, page = chatting.send("Capital of France?", mode="simple")
    assert status == 200
    assert '<span class="who">simple</span> Paris.</p>' in page
    assert page.count('<details class="stage"') == 1
    assert '<details class="stage" data-key="1" open' not in page
    assert ">OL1 ▸ 1 turn</span>" in page


def test_each_stage_opens_on_its_tools_arguments_results_duration_and_status(
    chatting: Chatting,
) -> None:
    _reflexive(chatting.llm)
    status, page = chatting.send("Analyse the facts file", mode="reflexive")
    assert status == 200
    badges = [part.split("</span>")[0] for part in page.split('<span class="badge st-')[1:]]
    assert badges == ['ok">OL1 ▸ 2 turns', 'ok">M1 ▸ 1 turn', 'ok">M2 ▸ 1 turn']
    research = page.split('<details class="stage"')[1]
    assert "<dt>Status</dt><dd>ok</dd>" in research
    assert "<dt>Duration</dt><dd>" in research
    assert "<code>read_file</code>" in research
    assert "&#34;path&#34;: &#34;facts.txt&#34;" in research
    assert "Loops have seven phases. &lt;script&gt;" in research
    assert "No tool called." in page.split('<details class="stage"')[2]


def test_a_stopped_stage_says_so_and_why(chatting: Chatting) -> None:
    again = tool_call("read_file", {"path": "facts.txt"})
    chatting.llm.script("ol1", [again, again, reply("Seven.")])
    chatting.llm.script("m1", [reply("Seven phases.")])
    chatting.llm.script("m2", [reply("Reviewed.")])
    status, page = chatting.send("Analyse the facts file", mode="reflexive")
    assert status == 200
    research = page.split('<details class="stage"')[1].split("</details>")[0]
    assert '<span class="badge st-loop_stopped">' in research
    assert "<dt>Status</dt><dd>loop_stopped: " in research


def test_what_a_model_wrote_is_shown_as_text(chatting: Chatting) -> None:
    chatting.llm.script("ol1", [reply(HOSTILE_REPLY)])
    status, page = chatting.send(f"Say {IMAGE}", mode="simple")
    assert status == 200
    for hostile in (SCRIPT, IMAGE, f'href="{LINK}'):
        assert hostile not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;a href=&#34;javascript:alert(1)&#34;&gt;here&lt;/a&gt;" in page


def test_the_session_is_kept_for_the_next_message_and_its_thread_readable(
    chatting: Chatting,
) -> None:
    chatting.llm.script("ol1", [reply(HOSTILE_REPLY)])
    status, page = chatting.send("First <b>question</b>", session="ada-1", mode="simple")
    assert status == 200
    assert 'name="session" maxlength="200" value="ada-1"' in page
    listed = chatting.console.http.get("/console/chat").text.split('id="sessions"')[1]
    assert '<a href="/console/chat/sessions/ada-1"><code>ada-1</code></a>' in listed
    thread = chatting.console.http.get("/console/chat/sessions/ada-1")
    assert thread.status_code == 200
    assert "First &lt;b&gt;question&lt;/b&gt;" in thread.text
    assert "Paris. &lt;script&gt;" in thread.text
    for hostile in HOSTILE[:2]:
        assert hostile not in thread.text


def test_a_long_thread_shows_its_newest_messages(chatting: Chatting) -> None:
    said = [{"role": "user", "content": f"message {n}."} for n in range(SHOWN_MESSAGES + 1)]
    batch = new_batch("long-thread", said, operation_id="op", now=time.time())
    write_once(chatting.database, threads.append_batch, batch)
    page = chatting.console.http.get("/console/chat/sessions/long-thread").text
    assert page.count('<li class="said">') == SHOWN_MESSAGES
    assert "message 0." not in page
    assert f"message {SHOWN_MESSAGES}." in page
    assert "1 earlier ones are not shown" in page


def test_a_session_never_written_is_an_empty_thread(chatting: Chatting) -> None:
    page = chatting.console.http.get("/console/chat/sessions/never-written").text
    assert "This session has no message." in page


def test_a_session_id_a_chat_could_not_name_is_a_404(chatting: Chatting) -> None:
    response = chatting.console.http.get("/console/chat/sessions/" + "s" * 201)
    assert response.status_code == 404


def test_a_message_as_long_as_the_api_takes_is_sent(chatting: Chatting) -> None:
    chatting.llm.script("ol1", [reply("Long.")])
    status, page = chatting.send("é" * MAX_MESSAGE, mode="simple")
    assert status == 200
    assert '<span class="who">simple</span> Long.</p>' in page


def test_a_message_over_the_api_s_bound_is_refused_on_the_page(chatting: Chatting) -> None:
    status, page = chatting.send("x" * (MAX_MESSAGE + 1))
    assert status == 422
    assert f"message: at most {MAX_MESSAGE} characters" in page
    assert 'role="alert"' in page


def test_a_chain_that_ends_without_a_reply_says_each_stage_s_reason(chatting: Chatting) -> None:
    status, page = chatting.send("Capital of France?", mode="simple")
    assert status == 503
    assert "no reply (OL1: " in page


def test_a_message_without_the_form_s_csrf_token_is_refused(chatting: Chatting) -> None:
    console = chatting.console
    data = {"message": "Hi", "csrf": "forged"}
    response = console.http.post("/console/chat", data=data, headers={"Origin": console.url})
    assert response.status_code == 403


def test_progress_says_which_stage_answers_and_which_tool_it_called() -> None:
    assert progress_text("llm.stage", {"node": "OL1", "role": "research"}) == (
        "OL1 (research) is answering…"
    )
    called = {"node": "OL1", "name": "read_file", "ok": False}
    assert progress_text("llm.tool", called) == "OL1 called read_file (failed)"
    done = {"node": "M1", "status": "loop_stopped", "turns": 2}
    assert progress_text("llm.stage_done", done) == "M1: loop_stopped, 2 turns"


def _events(text: str) -> list[tuple[str, str]]:
    """The (name, data) of each event of a stream whose data are JSON strings."""
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_a_script_is_streamed_the_chain_s_progress_then_the_page(chatting: Chatting) -> None:
    _reflexive(chatting.llm)
    fields = {"message": "Analyse the facts file", "mode": "reflexive"}
    response = chatting.console.post("/console/chat", fields, Accept=STREAMED)
    assert response.headers["content-type"].startswith(STREAMED)
    events = _events(response.text)
    progress = [data for name, data in events if name == "progress"]
    assert progress[:2] == ["OL1 (research) is answering…", "OL1 called read_file (ok)"]
    assert [name for name, _ in events][-1] == "page"
    page = events[-1][1]
    assert page.startswith("<!doctype html>")
    assert "Reviewed: loops have seven phases.</p>" in page
    assert "Loops have seven phases. &lt;script&gt;" in page


def test_a_streamed_message_refused_is_a_page_saying_why(chatting: Chatting) -> None:
    fields = {"message": " "}
    response = chatting.console.post("/console/chat", fields, Accept=STREAMED)
    (name, page), *_ = _events(response.text)
    assert name == "page"
    assert "message: write something to send" in page


def test_a_message_posted_from_another_site_is_refused_unsent(chatting: Chatting) -> None:
    asked = len(chatting.llm.requests_for("ol1"))
    response = chatting.console.post(
        "/console/chat", {"message": "Hi", "mode": "simple"}, Origin="http://evil.example"
    )
    assert response.status_code == 403
    assert len(chatting.llm.requests_for("ol1")) == asked


def test_the_chat_and_a_session_need_a_login(chatting: Chatting) -> None:
    with httpx.Client(base_url=chatting.console.url, timeout=30) as anonymous:
        for path in ("/console/chat", "/console/chat/sessions/ada-1"):
            response = anonymous.get(path)
            assert response.status_code == 303
            assert response.headers["location"].startswith("/login?next=")


def test_without_a_cluster_the_page_says_what_is_missing(console: Console) -> None:
    response = console.post("/console/chat", {"message": "Hi"})
    assert response.status_code == 503
    assert "no LLM nodes configured: add cluster.nodes to loopengine.yaml" in response.text
