// agentloop web chat: plain JavaScript over the gateway's public API (REST + SSE).
//
// Events come from GET /v1/sessions/{id}/events, read with fetch() rather than
// EventSource: EventSource cannot send an Authorization header, and the token
// must never ride in a URL. The reader keeps the last seq and resumes with
// Last-Event-ID after a drop, so a reconnect neither loses nor repeats events.
// Everything the server sends is shown with textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

const state = {
  token: sessionStorage.getItem("agentloop.token") || "",
  sessionId: null,
  activeRunId: null,
  lastSeq: 0,
  stream: null,        // AbortController of the open event stream
  streamGen: 0,        // bumps on every (re)subscribe; stale readers stop
  history: new Set(),  // messages shown from the transcript (JSON), so a replayed copy is not shown twice
  live: null,          // the assistant bubble being streamed {el, blocks}
  tools: new Map(),    // toolCallId -> card element
  approvals: new Map() // approvalId -> card element
};

// ---- HTTP ----------------------------------------------------------------

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.token) h["Authorization"] = "Bearer " + state.token;
  return h;
}

async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch (e) { data = { raw: text }; }
  }
  if (!res.ok) {
    const err = new Error((data && data.error && data.error.message) || res.status + " " + res.statusText);
    err.status = res.status;
    err.code = data && data.error && data.error.code;
    throw err;
  }
  return data;
}

function showError(e) {
  $("error").textContent = e ? (e.message || String(e)) : "";
}

function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// list takes the array out of a list response, whatever its field is called.
function list(data, ...names) {
  if (Array.isArray(data)) return data;
  for (const n of names) if (data && Array.isArray(data[n])) return data[n];
  return [];
}

// ---- sessions ------------------------------------------------------------

async function loadSessions() {
  try {
    const data = await api("GET", "/v1/sessions?limit=100");
    const ul = $("sessions");
    ul.replaceChildren();
    for (const s of list(data, "sessions", "items", "data")) {
      const li = document.createElement("li");
      li.dataset.sessionId = s.id;
      li.title = (s.cwd || "") + "\n" + s.id;
      li.textContent = s.label || shortCwd(s.cwd) || s.id;
      const st = document.createElement("span");
      st.className = "st";
      st.textContent = s.status || "";
      li.append(st);
      if (s.id === state.sessionId) li.classList.add("current");
      li.addEventListener("click", () => openSession(s.id));
      ul.append(li);
    }
    setConn("live", "connected");
    showError(null);
  } catch (e) {
    setConn("error", e.status === 401 || e.status === 403 ? "token refused" : "offline");
    showError(e);
  }
}

function shortCwd(cwd) {
  if (!cwd) return "";
  const parts = cwd.split("/").filter(Boolean);
  return parts.slice(-2).join("/") || cwd;
}

async function createSession(ev) {
  ev.preventDefault();
  const cwd = $("new-cwd").value.trim();
  try {
    const s = await api("POST", "/v1/sessions", cwd ? { cwd } : {});
    await loadSessions();
    await openSession(s.id);
  } catch (e) {
    showError(e);
  }
}

async function openSession(id) {
  closeStream();
  state.sessionId = id;
  state.activeRunId = null;
  state.lastSeq = 0;
  state.history.clear();
  state.tools.clear();
  state.approvals.clear();
  state.live = null;
  $("log").replaceChildren();
  for (const li of $("sessions").children) li.classList.toggle("current", li.dataset.sessionId === id);
  $("session-title").textContent = id;
  $("prompt").disabled = false;
  $("send").disabled = false;
  try {
    await loadHistory(id);
  } catch (e) {
    showError(e);
    return;
  }
  openStream(id, state.lastSeq);
}

// loadHistory shows the transcript, then remembers the session's headSeq so
// the event stream starts right after what is on screen.
async function loadHistory(id) {
  const s = await api("GET", "/v1/sessions/" + encodeURIComponent(id));
  state.lastSeq = s.headSeq || 0;
  setStatus(s.status);
  setActiveRun(s.activeRunId || null);
  let after = "";
  const size = window.agentloopPageSize || 500; // entries per request (a test makes it small)
  for (;;) {
    const q = "?limit=" + size + (after ? "&after=" + encodeURIComponent(after) : "");
    const data = await api("GET", "/v1/sessions/" + encodeURIComponent(id) + "/messages" + q);
    const entries = list(data, "entries", "messages", "items", "data");
    for (const e of entries) renderEntry(e);
    const next = data && data.nextAfter;
    if (!next || entries.length === 0) break;
    after = next;
  }
}

function renderEntry(e) {
  if (!e || e.type !== "message" || !e.message) return;
  state.history.add(JSON.stringify(e.message));
  renderMessage(e.message);
}

// fromHistory reports whether a live message is one the transcript already
// showed (a run in progress when the session was opened), once.
function fromHistory(m) {
  const key = JSON.stringify(m);
  if (!state.history.has(key)) return false;
  state.history.delete(key);
  return true;
}

// renderMessage puts a whole message on screen (history, or a message_end
// whose streaming was not seen).
function renderMessage(m) {
  if (m.role === "user") {
    const text = blocksText(m.content);
    if (text) addBubble("user", text);
  } else if (m.role === "assistant") {
    for (const b of m.content || []) {
      if (b.type === "text" && b.text) addBubble("assistant", b.text);
      else if (b.type === "thinking" && b.thinking) addBubble("thinking", b.thinking);
      else if (b.type === "toolCall") toolCard(b.id, b.name, b.arguments);
    }
    if (m.stopReason === "error" && m.errorMessage) addBubble("error", m.errorMessage);
  } else if (m.role === "toolResult") {
    const card = toolCard(m.toolCallId, m.toolName);
    finishTool(card, blocksText(m.content), !!m.isError);
  }
}

function blocksText(content) {
  if (typeof content === "string") return content;
  return (content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
}

// ---- the event stream ----------------------------------------------------

function closeStream() {
  state.streamGen++;
  if (state.stream) state.stream.abort();
  state.stream = null;
}

function openStream(id, after) {
  closeStream();
  const gen = state.streamGen;
  const ctl = new AbortController();
  state.stream = ctl;
  readStream(id, after, gen, ctl).catch(() => {});
}

async function readStream(id, after, gen, ctl) {
  let delay = 500;
  while (gen === state.streamGen) {
    try {
      const h = headers({ Accept: "text/event-stream" });
      h["Last-Event-ID"] = String(state.lastSeq); // from what is on screen: nothing lost in between
      const res = await fetch("/v1/sessions/" + encodeURIComponent(id) + "/events", { headers: h, signal: ctl.signal });
      if (!res.ok) {
        let msg = res.status + " " + res.statusText;
        try { const j = await res.json(); if (j.error) msg = j.error.message; } catch (e) {}
        throw Object.assign(new Error(msg), { status: res.status });
      }
      setConn("live", "live");
      delay = 500;
      await readSSE(res.body, gen, (msg) => {
        if (msg.id) state.lastSeq = Number(msg.id) || state.lastSeq;
        if (!msg.data) return;
        let ev;
        try { ev = JSON.parse(msg.data); } catch (e) { return; }
        onEvent(ev);
      });
    } catch (e) {
      if (gen !== state.streamGen) return;
      setConn("error", "reconnecting");
      if (e.status === 401 || e.status === 403 || e.status === 404) { showError(e); return; }
    }
    if (gen !== state.streamGen) return;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

// readSSE parses text/event-stream from a ReadableStream and calls onMessage
// with {id, event, data} for each message (comments and retry: are skipped).
async function readSSE(body, gen, onMessage) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let msg = { id: "", event: "", data: "" };
  let hasData = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || gen !== state.streamGen) return;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === "\r" && buf[nl + 1] === "\n" ? 2 : 1));
        if (line === "") {
          if (hasData || msg.id) onMessage(msg);
          msg = { id: "", event: "", data: "" };
          hasData = false;
          continue;
        }
        if (line[0] === ":") continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? "" : line.slice(c + 1);
        if (v[0] === " ") v = v.slice(1);
        if (field === "data") { msg.data += (hasData ? "\n" : "") + v; hasData = true; }
        else if (field === "id") msg.id = v;
        else if (field === "event") msg.event = v;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function onEvent(ev) {
  if (ev.sessionId && ev.sessionId !== state.sessionId) return;
  switch (ev.type) {
    case "run_start":
      setActiveRun(ev.runId);
      setStatus("running");
      break;
    case "run_queued":
      addNote("run queued (position " + (ev.position || 0) + ")");
      break;
    case "session_status":
      setStatus(ev.status);
      break;
    case "message_start":
      if (ev.message && ev.message.role === "user" && !fromHistory(ev.message)) renderMessage(ev.message);
      else if (ev.message && ev.message.role === "assistant") state.live = { el: null, blocks: new Map(), ts: ev.message.timestamp };
      break;
    case "message_update":
      onUpdate(ev);
      break;
    case "message_end":
      onMessageEnd(ev.message);
      break;
    case "tool_execution_start": {
      const card = toolCard(ev.toolCallId, ev.toolName, ev.args);
      card.dataset.state = "running";
      card.querySelector(".state").textContent = "running";
      break;
    }
    case "tool_execution_end": {
      const card = toolCard(ev.toolCallId, ev.toolName);
      finishTool(card, blocksText(ev.result && ev.result.content), !!ev.isError);
      break;
    }
    case "approval_requested":
      approvalCard(ev);
      break;
    case "approval_resolved":
      resolveApproval(ev.approvalId, ev.decision, ev.by);
      break;
    case "resync":
      // The ring no longer holds what we missed: refetch everything.
      openSession(state.sessionId);
      break;
    case "run_end":
      if (ev.reason && ev.reason !== "stop") addNote("run ended: " + ev.reason + (ev.text ? " — " + ev.text : ""));
      if (ev.error) addBubble("error", ev.error);
      if (state.activeRunId === ev.runId) setActiveRun(null);
      setStatus("idle");
      state.live = null;
      for (const card of state.approvals.values()) if (!card.dataset.resolved) markResolved(card, "cancelled");
      break;
    case "retry":
    case "warning":
    case "model_fallback":
      if (ev.text) addNote(ev.text);
      break;
  }
}

function onUpdate(ev) {
  if (!state.live) state.live = { el: null, blocks: new Map() };
  const live = state.live;
  const i = ev.contentIndex || 0;
  switch (ev.event) {
    case "text_delta":
    case "thinking_delta": {
      let b = live.blocks.get(i);
      if (!b) {
        b = addBubble(ev.event === "text_delta" ? "assistant" : "thinking", "");
        b.classList.add("streaming");
        live.blocks.set(i, b);
      }
      b.textContent += ev.delta || "";
      break;
    }
    case "toolcall_start":
      live.blocks.set(i, toolCard(ev.toolCallId, ev.toolName));
      break;
    case "toolcall_end":
      if (ev.block) toolCard(ev.block.id, ev.block.name, ev.block.arguments);
      break;
  }
}

function onMessageEnd(m) {
  if (!m || m.role === "user") return; // shown at its message_start
  const dup = fromHistory(m);
  if (m.role === "assistant") {
    const live = state.live;
    state.live = null;
    if (live && live.blocks.size > 0) {
      for (const el of live.blocks.values()) el.classList.remove("streaming");
      if (dup) {
        // The transcript already showed this message: drop the streamed copy.
        for (const el of live.blocks.values()) if (!el.dataset.toolCallId) el.remove();
      } else if (m.stopReason === "error" && m.errorMessage) {
        addBubble("error", m.errorMessage);
      }
      return;
    }
  }
  if (!dup) renderMessage(m);
}

// ---- rendering -----------------------------------------------------------

function addBubble(kind, text) {
  const div = document.createElement("div");
  div.className = "msg " + kind;
  div.textContent = text;
  append(div);
  return div;
}

function addNote(text) { return addBubble("note", text); }

function append(el) {
  const log = $("log");
  const stick = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  log.append(el);
  if (stick) log.scrollTop = log.scrollHeight;
}

function toolCard(id, name, args) {
  let card = id ? state.tools.get(id) : null;
  if (!card) {
    card = document.createElement("div");
    card.className = "tool";
    card.dataset.toolCallId = id || "";
    card.dataset.state = "pending";
    const head = document.createElement("div");
    head.className = "head";
    const n = document.createElement("span");
    n.className = "name";
    const st = document.createElement("span");
    st.className = "state";
    st.textContent = "pending";
    head.append(n, st);
    const a = document.createElement("pre");
    a.className = "args";
    card.append(head, a);
    if (id) state.tools.set(id, card);
    append(card);
  }
  if (name) {
    card.dataset.toolName = name;
    card.querySelector(".name").textContent = name;
  }
  if (args !== undefined && args !== null) {
    card.querySelector(".args").textContent = typeof args === "string" ? args : JSON.stringify(args, null, 1);
  }
  return card;
}

function finishTool(card, text, isError) {
  card.dataset.state = isError ? "error" : "done";
  card.querySelector(".state").textContent = isError ? "error" : "done";
  let out = card.querySelector(".out");
  if (!out) {
    out = document.createElement("pre");
    out.className = "out";
    card.append(out);
  }
  out.textContent = text || "";
}

const decisions = [
  ["allow_once", "Allow once"],
  ["allow_session", "Allow for session"],
  ["deny", "Deny"]
];

function approvalCard(ev) {
  if (state.approvals.has(ev.approvalId)) return;
  const card = document.createElement("div");
  card.className = "approval";
  card.dataset.approvalId = ev.approvalId;
  card.dataset.toolCallId = ev.toolCallId || "";
  const title = document.createElement("div");
  title.className = "title";
  title.textContent = "Approve " + (ev.toolName || "tool") + "?";
  const args = document.createElement("pre");
  args.textContent = ev.args === undefined ? "" : JSON.stringify(ev.args, null, 1);
  const buttons = document.createElement("div");
  buttons.className = "buttons";
  const offered = Array.isArray(ev.options) && ev.options.length ? ev.options : null;
  for (const [decision, label] of decisions) {
    if (offered && !offered.includes(decision)) continue;
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.decision = decision;
    b.textContent = label;
    b.addEventListener("click", () => answer(ev.approvalId, decision, card));
    buttons.append(b);
  }
  const res = document.createElement("div");
  res.className = "resolution";
  card.append(title, args, buttons, res);
  state.approvals.set(ev.approvalId, card);
  append(card);
  setStatus("requires_action");
}

async function answer(id, decision, card) {
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  try {
    await api("POST", "/v1/approvals/" + encodeURIComponent(id), { decision });
    markResolved(card, decision);
  } catch (e) {
    if (e.status === 409) markResolved(card, "answered elsewhere");
    else {
      showError(e);
      for (const b of card.querySelectorAll("button")) b.disabled = false;
    }
  }
}

function resolveApproval(id, decision, by) {
  const card = state.approvals.get(id);
  if (card) markResolved(card, decision + (by ? " by " + by : ""));
}

function markResolved(card, text) {
  card.dataset.resolved = text;
  card.querySelector(".resolution").textContent = "→ " + text;
}

function setStatus(s) {
  const el = $("session-status");
  el.dataset.status = s || "";
  el.textContent = s || "";
}

function setActiveRun(id) {
  state.activeRunId = id;
  $("abort").disabled = !id;
}

function setConn(st, text) {
  const el = $("conn");
  el.dataset.state = st;
  el.textContent = text;
}

// ---- actions -------------------------------------------------------------

async function send(ev) {
  ev.preventDefault();
  const text = $("prompt").value;
  if (!text.trim() || !state.sessionId) return;
  $("send").disabled = true;
  try {
    const r = await api("POST", "/v1/sessions/" + encodeURIComponent(state.sessionId) + "/runs",
      { input: text, idempotencyKey: newKey(), onBusy: "queue" });
    $("prompt").value = "";
    if (r && r.runId && !state.activeRunId) setActiveRun(r.runId);
    showError(null);
  } catch (e) {
    showError(e);
  } finally {
    $("send").disabled = false;
  }
}

async function abortRun() {
  if (!state.activeRunId) return;
  try {
    await api("POST", "/v1/runs/" + encodeURIComponent(state.activeRunId) + "/abort");
  } catch (e) {
    showError(e);
  }
}

$("token").value = state.token;
$("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.token = $("token").value.trim();
  if (state.token) sessionStorage.setItem("agentloop.token", state.token);
  else sessionStorage.removeItem("agentloop.token");
  loadSessions();
  if (state.sessionId) openSession(state.sessionId);
});
$("new-session").addEventListener("submit", createSession);
$("refresh").addEventListener("click", loadSessions);
$("composer").addEventListener("submit", send);
$("prompt").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("composer").requestSubmit(); }
});
$("abort").addEventListener("click", abortRun);
loadSessions();
