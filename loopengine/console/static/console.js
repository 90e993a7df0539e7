// Progressive enhancement only: every page reads and works without this file.
"use strict";

// Each UTC instant also in the reader's own time zone, on hover.
function localTimes(root) {
  for (const node of root.querySelectorAll("time[datetime]")) {
    const moment = new Date(node.getAttribute("datetime"));
    if (!Number.isNaN(moment.getTime())) {
      node.title = moment.toLocaleString();
    }
  }
}

// The page's live regions replaced by those of `page` (the same page read again), keeping
// which details are open; whether `page` is still to follow (asked before its regions move
// here, a stream being named by a region).
function swap(page) {
  const following = page.querySelector("[data-stream]") !== null;
  for (const region of document.querySelectorAll("[data-live][id]")) {
    const fresh = page.getElementById(region.id);
    if (!fresh || fresh.innerHTML === region.innerHTML) {
      continue;
    }
    const open = new Set();
    for (const details of region.querySelectorAll("details[open][data-key]")) {
      open.add(details.dataset.key);
    }
    for (const details of fresh.querySelectorAll("details[data-key]")) {
      details.open = open.has(details.dataset.key);
    }
    const adopted = document.adoptNode(fresh);
    localTimes(adopted);
    region.replaceWith(adopted);
  }
  return following;
}

// Follow the stream a page names: on each change, read the page again (one read at a time).
function follow(url) {
  const source = new EventSource(url);
  let reading = false;
  let again = false;
  const reread = async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin" });
      if (answer.ok && !answer.redirected) {
        const page = new DOMParser().parseFromString(await answer.text(), "text/html");
        if (!swap(page)) {
          source.close();
        }
      }
    } finally {
      reading = false;
      if (again) {
        again = false;
        reread();
      }
    }
  };
  source.addEventListener("change", reread);
}

// One server-sent event of a block of lines: its name and its data (a JSON string).
function sseEvent(block) {
  let name = "message";
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) {
      name = line.slice(7);
    } else if (line.startsWith("data: ")) {
      data += line.slice(6);
    }
  }
  return { name, data: data ? JSON.parse(data) : "" };
}

// The page's main part replaced by that of `html` (the page the server rendered).
function showPage(html) {
  const page = new DOMParser().parseFromString(html, "text/html");
  const main = page.querySelector("main");
  if (!main) {
    return;
  }
  const adopted = document.adoptNode(main);
  localTimes(adopted);
  document.querySelector("main").replaceWith(adopted);
  document.title = page.title;
  chatByStream();
}

// The chat form sent by script: the chain's progress shown while it runs, then the page with
// the reply in place of this one (without script the form posts and the reply is a new page).
function chatByStream() {
  const form = document.querySelector("form.chat");
  const status = document.getElementById("chat-progress");
  if (!form || !status || !window.TextDecoderStream) {
    return;
  }
  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    status.textContent = "Sent: waiting for the chain…";
    try {
      const answer = await fetch(form.action, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { Accept: "text/event-stream" },
        credentials: "same-origin",
      });
      const kind = answer.headers.get("content-type") || "";
      if (!kind.startsWith("text/event-stream") || !answer.body) {
        showPage(await answer.text());
        return;
      }
      const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          break;
        }
        buffered += value;
        let end = buffered.indexOf("\n\n");
        while (end >= 0) {
          const event = sseEvent(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
          if (event.name === "progress") {
            status.textContent = event.data;
          } else if (event.name === "page") {
            showPage(event.data);
          }
          end = buffered.indexOf("\n\n");
        }
      }
    } catch {
      status.textContent = "The reply could not be read: send again.";
    } finally {
      button.disabled = false;
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  chatByStream();
  const live = document.querySelector("[data-stream]");
  if (live && window.EventSource) {
    follow(live.dataset.stream);
  }
});
