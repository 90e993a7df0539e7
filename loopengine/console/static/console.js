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
// which details are open; whether `page` is still to follow.
function swap(page) {
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
  return page.querySelector("[data-stream]") !== null;
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

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  const live = document.querySelector("[data-stream]");
  if (live && window.EventSource) {
    follow(live.dataset.stream);
  }
});
