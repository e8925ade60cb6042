// Live pages: when /api/live says a table changed, fetch this page's live
// region again (?fragment=1) and swap it in. No library; nothing from the
// internet. Keyboard focus survives the swap (the same link is focused again).
(() => {
  "use strict";
  const live = document.getElementById("live");
  const state = document.getElementById("live-state");
  if (!live || !window.EventSource) return;
  const onlyTable = live.dataset.table || null;
  let busy = false;
  let again = false;
  let updates = 0;
  let streaming = false;  // the /api/live stream is open
  const MIN_GAP_MS = 250;

  function say(text, on) {
    if (!state) return;
    state.textContent = text;
    state.className = on ? "live-state on" : "live-state";
  }

  // What names a focusable element across a swap: its row (an alert's, a table's) and
  // its link, id or label; and, among the elements so named, which one it was.
  const FOCUSABLE = "a[href], button, input, [tabindex]";

  function name(el) {
    const row = el.closest("[data-alert], [data-table]");
    const where = row ? (row.dataset.alert || row.dataset.table) : "";
    const what = el.getAttribute("href") || el.id || el.getAttribute("aria-label") || el.tagName;
    return `${where}|${what}`;
  }

  function focusKey() {
    const el = document.activeElement;
    if (!el || el === live || !live.contains(el)) return null;
    const same = Array.from(live.querySelectorAll(FOCUSABLE)).filter((x) => name(x) === name(el));
    return { name: name(el), nth: same.indexOf(el) };
  }

  function refocus(key) {
    if (!key) return;
    const same = Array.from(live.querySelectorAll(FOCUSABLE)).filter((x) => name(x) === key.name);
    const found = same[Math.min(key.nth, same.length - 1)];
    if (found) found.focus();
  }

  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    const started = Date.now();
    try {
      const answer = await fetch(live.dataset.fragment, { credentials: "same-origin", cache: "no-store" });
      if (answer.redirected || answer.status === 401) { window.location.reload(); return; }
      if (!answer.ok) say(`not updated (${answer.status}), retrying`, false);
      if (answer.ok) {
        const key = focusKey();
        live.innerHTML = await answer.text();
        refocus(key);
        updates += 1;
        document.body.dataset.updates = String(updates);
        // Up to date again: the header says so while the stream is open.
        if (streaming) say("live", true);
      }
    } catch (err) {
      say("update failed, retrying", false);
    } finally {
      // At most one fetch in flight and one every MIN_GAP_MS: a busy floor sends many
      // changes a second, and each fetch shows all of them at once.
      const wait = Math.max(0, MIN_GAP_MS - (Date.now() - started));
      window.setTimeout(() => {
        busy = false;
        if (again) { again = false; refresh(); }
      }, wait);
    }
  }

  function concerns(event) {
    if (!onlyTable) return true;
    try {
      const data = JSON.parse(event.data);
      return !data.table || `${data.site}/${data.table}` === onlyTable;
    } catch (err) {
      return true;
    }
  }

  function changed(event) { if (concerns(event)) refresh(); }

  // A page whose figures age without any change (how long an alert is open)
  // asks again every data-tick seconds.
  const tick = Number(live.dataset.tick || 0);
  if (tick > 0) window.setInterval(refresh, tick * 1000);

  // The stream pings every data-keepalive seconds: one that carries nothing for two and
  // a half of them is a link gone silent (a roam, a NAT state dropped: no close ever
  // comes), and is opened again.
  const SILENT_MS = Number(live.dataset.keepalive || 15) * 2500;
  let source = null;
  let heard = 0;
  let retry = null;
  let backoff = 1000;

  function connect() {
    if (source) source.close();
    window.clearTimeout(retry);
    retry = null;
    const opened = new EventSource("/api/live");
    source = opened;
    heard = Date.now();
    opened.onopen = () => {
      streaming = true;
      backoff = 1000;
      heard = Date.now();
      say("live", true);
      refresh();  // whatever changed while the stream was away
    };
    opened.onerror = () => {
      streaming = false;
      say("reconnecting…", false);
      if (opened.readyState === EventSource.CLOSED) {
        // An HTTP error (a session signed out, say): the browser tries no more. A fetch
        // of the page tells: a sign-in asked for reloads it onto the form.
        refresh();
        if (retry === null) {
          retry = window.setTimeout(() => { retry = null; if (!document.hidden) connect(); }, backoff);
          backoff = Math.min(backoff * 2, 30000);
        }
      }
    };
    const heardOf = (event) => { heard = Date.now(); changed(event); };
    opened.onmessage = heardOf;
    for (const name of ["status", "state", "stats", "events", "rounds", "alerts", "change"]) {
      opened.addEventListener(name, heardOf);
    }
    opened.addEventListener("ping", () => { heard = Date.now(); });
  }

  window.setInterval(() => {
    if (source && streaming && Date.now() - heard > SILENT_MS) {
      streaming = false;
      say("reconnecting…", false);
      connect();
    }
  }, 1000);

  // A hidden page lets its stream go: a browser keeps six connections to a host over
  // HTTP/1.1, and six open pages would leave none for a fetch. Shown again, it opens a
  // stream, which brings the page up to date.
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      if (source) source.close();
      source = null;
      streaming = false;
      say("paused while hidden", false);
    } else {
      connect();
    }
  });

  if (document.hidden) say("paused while hidden", false);
  else connect();
})();
