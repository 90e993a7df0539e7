// Progressive enhancement only: every page reads and works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Each UTC instant also in the reader's own time zone, on hover.
  for (const node of document.querySelectorAll("time[datetime]")) {
    const moment = new Date(node.getAttribute("datetime"));
    if (!Number.isNaN(moment.getTime())) {
      node.title = moment.toLocaleString();
    }
  }
});
