// cairn's session viewer: the list with search, a session's whole
// scroll-back across compactions, a chart of context and cost per
// request, and the live tail. Plain DOM, no build step; every text from a
// transcript goes in through textContent.
"use strict";

const app = document.getElementById("app");
const status = document.getElementById("status");
let tail = null;

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") n.textContent = v;
    else if (k === "class") n.className = v;
    else n.setAttribute(k, v);
  }
  for (const k of kids) if (k) n.append(k);
  return n;
}

async function api(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (_) {}
    throw new Error(msg);
  }
  return r.json();
}

function fail(err) {
  app.replaceChildren(el("p", { class: "muted", text: "Could not load: " + err.message }));
}

function age(iso) {
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (s < 90) return "just now";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  if (s < 129600) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " days ago";
}

// The list of sessions, newest first, with "more" paging.
async function showList(q) {
  document.getElementById("q").value = q || "";
  const table = el("table", { class: "sessions" },
    el("thead", {}, el("tr", {}, el("th", { text: "First prompt" }), el("th", { text: "Project" }),
      el("th", { text: "Modified" }), el("th", { text: "Messages" }))));
  const body = el("tbody");
  table.append(body);
  const more = el("button", { text: "More sessions" });
  app.replaceChildren(table);
  let cursor = "";
  async function page() {
    const params = new URLSearchParams({ limit: "50" });
    if (q) params.set("q", q);
    if (cursor) params.set("cursor", cursor);
    const res = await api("/api/sessions?" + params);
    for (const s of res.sessions) {
      const link = el("a", { href: "#/s/" + encodeURIComponent(s.sessionId) },
        el("div", { text: s.firstPrompt || "(no prompt)" }), el("div", { class: "id", text: s.sessionId }));
      body.append(el("tr", { class: "session" }, el("td", {}, link), el("td", { class: "id", text: s.project }),
        el("td", { text: age(s.modified), title: s.modified }), el("td", { text: String(s.messages) })));
    }
    if (res.sessions.length === 0 && !cursor) {
      app.replaceChildren(el("p", { class: "muted", text: q ? "No session matches." : "No sessions yet." }));
    }
    cursor = res.next || "";
    if (cursor) app.append(more); else more.remove();
  }
  more.onclick = () => page().catch(fail);
  await page();
}

function parse(raw) { return typeof raw === "string" ? JSON.parse(raw) : raw; }

function blocks(msg) {
  if (!msg) return [];
  if (typeof msg.content === "string") return [{ type: "text", text: msg.content }];
  return msg.content || [];
}

function resultText(b) {
  if (typeof b.content === "string") return b.content;
  return (b.content || []).map(c => c.type === "text" ? c.text : "[" + c.type + "]").join("\n");
}

// An Edit's change as removed and added lines.
function diffOf(input) {
  const pre = el("pre", { class: "diff" });
  for (const l of String(input.old_string || "").split("\n")) pre.append(el("span", { class: "del", text: "- " + l + "\n" }));
  for (const l of String(input.new_string || "").split("\n")) pre.append(el("span", { class: "add", text: "+ " + l + "\n" }));
  return pre;
}

// The renderer keeps tool calls by id so a result folds into its call.
function renderer(root) {
  const calls = new Map();
  return function render(e) {
    if (e.type === "system" && e.subtype === "compact_boundary") {
      const m = e.compactMetadata || {};
      const kept = m.preservedSegment ? "; recent messages kept verbatim" : "";
      root.append(el("div", { class: "boundary event", "data-kind": "boundary",
        text: "Compacted (" + (m.trigger || "auto") + ", " + (m.preTokens || "?") + " tokens before" + kept + ")" }));
      return;
    }
    if (e.type !== "user" && e.type !== "assistant") return;
    const msg = e.message || {};
    if (e.isCompactSummary) {
      const d = el("details", { class: "tool summary event" }, el("summary", { text: "What the compaction kept (summary)" }));
      d.append(el("pre", { text: blocks(msg).map(b => b.text || "").join("\n") }));
      root.append(d);
      return;
    }
    for (const b of blocks(msg)) {
      if (b.type === "text" && b.text && b.text.trim()) {
        if (e.type === "user" && (e.isMeta || b.text.startsWith("<"))) continue;
        root.append(el("div", { class: (e.type === "user" ? "prompt" : "reply") + " event", text: b.text }));
      } else if (b.type === "tool_use") {
        const input = b.input || {};
        const label = b.name + " " + (input.file_path || input.command || input.pattern || input.description || "");
        const d = el("details", { class: "tool event" }, el("summary", { text: label.trim() }));
        d.append(b.name === "Edit" ? diffOf(input) : el("pre", { text: JSON.stringify(input, null, 2) }));
        calls.set(b.id, d);
        root.append(d);
      } else if (b.type === "tool_result") {
        const out = el("pre", { text: resultText(b) });
        const call = calls.get(b.tool_use_id);
        if (call) call.append(el("div", { class: "muted", text: b.is_error ? "error:" : "result:" }), out);
        else root.append(el("details", { class: "tool event" }, el("summary", { text: "tool result" }), out));
      }
    }
  };
}

// The chart: context size (tokens sent) and estimated cost of each request,
// compactions marked.
function chart(points, compactions) {
  const W = 900, H = 180, P = 28;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const box = el("div", { class: "chart" });
  if (points.length === 0) {
    box.append(el("p", { class: "muted", text: "No requests recorded yet." }));
    return box;
  }
  const maxCtx = Math.max(...points.map(p => p.ctx), 1);
  const maxCost = Math.max(...points.map(p => p.cost), 1e-9);
  const x = i => P + (points.length === 1 ? 0 : i * (W - 2 * P) / (points.length - 1));
  const line = (cls, f) => {
    const pl = document.createElementNS(svg.namespaceURI, "polyline");
    pl.setAttribute("class", cls);
    pl.setAttribute("points", points.map((p, i) => x(i).toFixed(1) + "," + (H - P - f(p) * (H - 2 * P)).toFixed(1)).join(" "));
    svg.append(pl);
  };
  for (const c of compactions) {
    const ln = document.createElementNS(svg.namespaceURI, "line");
    ln.setAttribute("class", "compaction");
    const cx = x(Math.max(0, c - 0.5)); // between the last request before it and the first after
    ln.setAttribute("x1", cx); ln.setAttribute("x2", cx);
    ln.setAttribute("y1", P / 2); ln.setAttribute("y2", H - P / 2);
    svg.append(ln);
  }
  line("ctx", p => p.ctx / maxCtx);
  line("cost", p => p.cost / maxCost);
  const label = (tx, ty, s) => { const t = document.createElementNS(svg.namespaceURI, "text"); t.setAttribute("x", tx); t.setAttribute("y", ty); t.textContent = s; svg.append(t); };
  label(P, 14, "context: up to " + maxCtx.toLocaleString() + " tokens");
  label(W / 2, 14, "cost per request (est., dashed): up to $" + maxCost.toFixed(4));
  label(P, H - 6, points.length + " requests" + (compactions.length ? ", " + compactions.length + " compactions (dotted)" : ""));
  box.append(svg);
  return box;
}

// Claude Sonnet's list prices per million tokens, for the estimate.
const PRICE = { input: 3, output: 15, write: 3.75, read: 0.3 };

function usagePoint(u) {
  const ctx = (u.input_tokens || 0) + (u.cache_creation_input_tokens || 0) + (u.cache_read_input_tokens || 0);
  const cost = ((u.input_tokens || 0) * PRICE.input + (u.output_tokens || 0) * PRICE.output +
    (u.cache_creation_input_tokens || 0) * PRICE.write + (u.cache_read_input_tokens || 0) * PRICE.read) / 1e6;
  return { ctx, cost };
}

async function showSession(id, live) {
  const head = el("div", {}, el("h2", { text: "Session" }), el("div", { class: "id", text: id }));
  const chartBox = el("div");
  const scroll = el("div", { id: "scrollback" });
  app.replaceChildren(head, chartBox, scroll);
  // Every page, oldest last fetched: the whole history across compactions.
  let events = [], before = "", pages = 0;
  for (;;) {
    const params = new URLSearchParams({ limit: "100" });
    if (before) params.set("before", before);
    const page = await api("/api/sessions/" + encodeURIComponent(id) + "/events?" + params);
    events = page.events.map(parse).concat(events);
    pages++;
    if (!page.hasMore || pages > 200) break;
    before = page.firstId;
  }
  const render = renderer(scroll);
  const points = [], compactions = [], seenResponses = new Set();
  function account(e) {
    if (e.type === "system" && e.subtype === "compact_boundary") compactions.push(points.length);
    if (e.type === "assistant" && e.message && e.message.usage) {
      const key = e.message.id || e.uuid; // one response is one line per block
      if (!seenResponses.has(key)) { seenResponses.add(key); points.push(usagePoint(e.message.usage)); }
    }
  }
  for (const e of events) { render(e); account(e); }
  chartBox.replaceChildren(chart(points, compactions));
  // The live tail: new lines as they are written (off with ?tail=off, for
  // a still page to print or capture).
  if (tail) tail.close();
  if (!live) return;
  tail = new EventSource("/api/sessions/" + encodeURIComponent(id) + "/stream");
  tail.onopen = () => { status.textContent = "live"; };
  tail.onmessage = m => {
    try {
      const e = JSON.parse(m.data);
      render(e); account(e);
      chartBox.replaceChildren(chart(points, compactions));
    } catch (_) {}
  };
  tail.onerror = () => { status.textContent = "tail paused"; };
}

function route() {
  if (tail) { tail.close(); tail = null; status.textContent = ""; }
  const h = location.hash.slice(1) || "/";
  let m;
  if ((m = h.match(/^\/s\/([^?]+)(\?.*)?$/))) {
    const live = new URLSearchParams(m[2] || "").get("tail") !== "off";
    return showSession(decodeURIComponent(m[1]), live).catch(fail);
  }
  const q = new URLSearchParams(h.split("?")[1] || "").get("q") || "";
  return showList(q).catch(fail);
}

document.getElementById("search").onsubmit = ev => {
  ev.preventDefault();
  const q = document.getElementById("q").value.trim();
  location.hash = q ? "#/?q=" + encodeURIComponent(q) : "#/";
};
window.addEventListener("hashchange", route);
route();
