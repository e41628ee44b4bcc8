// The live conversation view (/chat?session=ID): the session's history, its
// details, a composer that starts dashboard turns, and the live stream of
// the session's run events (tokens, tool cards, denials, confirmations).
import { h, replace, fmtTime, announce, toast } from "../dom.js";
import { api, enc } from "../api.js";
import { toolCard, messageEl, renderHistory } from "../conversation.js";
import { watchRun, handleConfirmEvent } from "../confirm.js";

const stateText = {
  load_context: "Loading context…",
  call_llm: "Calling the model…",
  execute_tools: "Running tools…",
  update_memory: "Saving…",
  finalize: "Finishing…",
};

function newSessionID() {
  const b = new Uint8Array(9);
  crypto.getRandomValues(b);
  return "dash_" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export async function render({ main, params, socket, navigate, setReload }) {
  let sessionID = params.get("session") || "";
  const isNew = !sessionID;
  let offTopic = null;
  let runID = "";
  let running = false;
  let live = null; // {stream: message element, cards: Map(id -> card)}
  let disposed = false;

  const title = h("h1#chat-title", isNew ? "New chat" : "Session");
  const meta = h("div.row.muted#session-meta");
  const runState = h("span#run-state", { role: "status" }, "");
  const log = h("div.conversation#conversation", { role: "log", "aria-live": "polite", "aria-relevant": "additions", "aria-label": "Conversation" });
  const details = h("details.card#session-details", h("summary", "Session details"), h("div#session-details-body", h("p.muted", "No session yet.")));
  const input = h("textarea#message", { name: "message", rows: 3, placeholder: "Ask something… (Enter sends, Shift+Enter adds a line)", required: true, maxlength: 100000 });
  const send = h("button.primary#send", { type: "submit" }, "Send");
  const stop = h("button.danger#stop", { type: "button", hidden: true }, "Stop");
  const form = h("form.composer#composer", { "aria-label": "Send a message" },
    h("label.sr-only", { for: "message" }, "Message"),
    input,
    h("div.row", runState, h("span.grow"), stop, send));

  replace(main, title, meta, details, h("h2.sr-only", "Messages"), log, form);

  // Follow the conversation as it grows, unless the admin scrolled up.
  let follow = true;
  const onScroll = () => { follow = main.scrollHeight - main.scrollTop - main.clientHeight < 80; };
  main.addEventListener("scroll", onScroll, { passive: true });
  const follower = new MutationObserver(() => { if (follow) main.scrollTop = main.scrollHeight; });
  follower.observe(log, { childList: true, subtree: true, characterData: true });

  function setRunning(on, stateLabel = "") {
    running = on;
    send.disabled = on;
    if (!on) stop.disabled = false;
    stop.hidden = !on;
    runState.textContent = on ? (stateLabel || "Running…") : stateLabel;
  }

  async function loadSnapshot() {
    if (!sessionID) return;
    let d;
    try {
      d = await api.get(`/api/sessions/${enc(sessionID)}`);
    } catch (err) {
      if (err.status === 404 && isNew) return; // not created yet
      if (err.status === 404) {
        replace(log, h("p.error-box", { role: "alert" }, `No session ${sessionID}. It may have been deleted.`));
        form.hidden = true;
        return;
      }
      toast(err.message, "error");
      return;
    }
    if (disposed) return;
    const s = d.session;
    title.textContent = s.title || s.id;
    document.title = `${title.textContent} · N-Agent`;
    replace(meta,
      h("span", "id ", h("code#session-id", s.id)),
      h("span.badge", s.source),
      s.status ? h(`span.badge.${s.status}#session-status`, s.status) : null,
      h("span", `updated ${fmtTime(s.updated_at)}`),
      h("button.danger#delete-session", { type: "button", onclick: () => deleteSession(s) }, "Delete"));
    renderDetails(d);
    replace(log, renderHistory(d));
    live = null;
    if (d.active_run) {
      runID = d.active_run.run_id || runID;
      setRunning(true, "A turn is running…");
      live = { stream: null, cards: new Map(), partial: true };
    } else if (!live) {
      setRunning(false);
    }
  }

  function renderDetails(d) {
    const body = document.getElementById("session-details-body");
    if (!body) return;
    const ts = d.task_state;
    replace(body,
      h("dl.kv",
        h("dt", "Source"), h("dd", d.session.source),
        h("dt", "Created"), h("dd", fmtTime(d.session.created_at)),
        h("dt", "Task state"), h("dd", ts ? `${ts.status}, ${ts.iteration_count} iteration(s)${ts.error ? ` — ${ts.error}` : ""}` : "none"),
        h("dt", "External memory"), h("dd", (d.external_memory?.enabled || []).join(", ") || "none",
          d.external_memory?.snapshot_frozen ? " (snapshot frozen)" : ""),
        h("dt", "Summary"), h("dd", d.summary?.content ? h("pre", d.summary.content) : "none")),
      h("h3", "Tool-call records"),
      (d.tool_calls || []).length === 0 ? h("p.muted", "No tool calls.") :
        h("table",
          h("thead", h("tr", h("th", "Tool"), h("th", "Status"), h("th", "Duration"), h("th", "When"))),
          h("tbody", d.tool_calls.map((c) => h("tr",
            h("td", h("code", c.name)), h("td", h(`span.badge.${c.status}`, c.status)),
            h("td.num", `${c.duration_ms ?? ""} ms`), h("td", fmtTime(c.created_at)))))));
  }

  async function deleteSession(s) {
    if (!confirm(`Delete session ${s.id} and everything recorded for it? Its sandbox is released too.`)) return;
    try {
      await api.del(`/api/sessions/${enc(s.id)}`);
      toast("Session deleted.", "success");
      navigate("/sessions");
    } catch (err) {
      toast(err.message, "error");
    }
  }

  // ensureLive starts the live state for a turn this page did not start
  // (another tab or channel), which is re-rendered from the store when done.
  function ensureLive() {
    if (!live) live = { stream: null, cards: new Map(), partial: true };
    return live;
  }

  function onEvent(ev) {
    handleConfirmEvent(ev);
    const l = ensureLive();
    switch (ev.type) {
      case "state":
        if (ev.state === "load_context" && !running) setRunning(true);
        if (running) runState.textContent = stateText[ev.state] || ev.state;
        if (ev.run_id) runID = ev.run_id;
        break;
      case "delta":
        if (!l.stream) {
          l.stream = messageEl("assistant", "", { streaming: true });
          log.append(l.stream);
        }
        if (ev.content) l.stream.appendText(ev.content);
        if (ev.reasoning_content) l.stream.appendReasoning(ev.reasoning_content);
        if (!running) setRunning(true);
        break;
      case "tool_started": {
        if (l.stream) { l.stream.finish(); if (!l.stream.text.textContent) l.stream.remove(); l.stream = null; }
        const card = toolCard({ ...ev.tool, status: "running" });
        l.cards.set(ev.tool.id, card);
        log.append(card);
        break;
      }
      case "tool_finished": {
        let card = l.cards.get(ev.tool.id);
        if (!card) {
          card = toolCard({ ...ev.tool });
          l.cards.set(ev.tool.id, card);
          log.append(card);
        }
        card.update(ev.tool);
        if (ev.tool.status === "denied") { card.open = true; announce(`Tool ${ev.tool.name} was denied.`); }
        break;
      }
      case "run_error":
        // The turn could not start at all (queue full, store failure).
        if (l.stream) l.stream.finish();
        live = null;
        runID = "";
        setRunning(false, "Not started");
        log.append(h("p.error-box", { role: "alert" }, `The turn could not start: ${ev.message}`));
        break;
      case "warning":
        log.append(h("p.warn-box", { role: "note" }, `Warning: ${ev.message}`));
        break;
      case "run_finished": {
        const r = ev.result || {};
        if (l.stream) l.stream.finish();
        if (r.status && r.status !== "completed") {
          if (l.stream && !l.stream.text.textContent && r.content) l.stream.appendText(r.content);
          else if (!l.stream && r.content) log.append(messageEl("assistant", r.content, { error: true }));
          if (r.status === "cancelled") log.append(h("p.note", { role: "status" }, "Stopped: the turn was cancelled; what it had written is kept."));
          else if (r.error || r.reason) log.append(h("p.error-box", { role: "alert" }, `The turn ${r.status}: ${r.error || r.reason}`));
        } else if (!l.stream && r.content) {
          log.append(messageEl("assistant", r.content));
        }
        const partial = l.partial;
        live = null;
        runID = "";
        setRunning(false, r.status === "completed" ? "" : `Turn ${r.status || "ended"}`);
        announce(r.status === "completed" ? "The answer is complete." : `The turn ${r.status}.`);
        // Refresh the title, status and details; re-render the messages only
        // if this page did not see the whole turn.
        refreshAfterRun(partial);
        break;
      }
      default:
        break;
    }
  }

  async function refreshAfterRun(rerender) {
    if (rerender) return loadSnapshot();
    try {
      const d = await api.get(`/api/sessions/${enc(sessionID)}`);
      if (disposed) return;
      title.textContent = d.session.title || d.session.id;
      document.title = `${title.textContent} · N-Agent`;
      const st = document.getElementById("session-status");
      if (st) { st.textContent = d.session.status; st.className = `badge ${d.session.status}`; } else loadMetaOnly(d);
      renderDetails(d);
    } catch { /* the live view stays */ }
  }

  function loadMetaOnly(d) {
    const s = d.session;
    replace(meta,
      h("span", "id ", h("code#session-id", s.id)),
      h("span.badge", s.source),
      s.status ? h(`span.badge.${s.status}#session-status`, s.status) : null,
      h("span", `updated ${fmtTime(s.updated_at)}`),
      h("button.danger#delete-session", { type: "button", onclick: () => deleteSession(s) }, "Delete"));
  }

  // subscribe starts the live stream of the session; the promise resolves
  // when the server confirmed it (a turn is started only after that).
  function subscribe() {
    if (!sessionID) return Promise.resolve();
    if (!offTopic) offTopic = socket.subscribe(`session:${sessionID}`, onEvent);
    return offTopic.ready;
  }

  async function sendMessage() {
    const text = input.value.trim();
    if (!text || running) return;
    if (!sessionID) {
      sessionID = newSessionID();
      history.replaceState(null, "", `/chat?session=${enc(sessionID)}`);
      window.dispatchEvent(new Event("nagent:location"));
    }
    await subscribe();
    log.querySelector(".empty")?.remove();
    log.append(messageEl("user", text));
    input.value = "";
    setRunning(true, "Starting…");
    stop.disabled = true; // until the server names the run
    live = { stream: null, cards: new Map() };
    try {
      const res = await api.post("/api/runs", { session_id: sessionID, message: text });
      runID = res.run_id;
      stop.disabled = false;
      watchRun(sessionID);
    } catch (err) {
      setRunning(false);
      live = null;
      log.append(h("p.error-box", { role: "alert" }, `Not sent: ${err.message}`));
      input.value = text;
    }
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); sendMessage(); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); sendMessage(); }
  });
  stop.addEventListener("click", async () => {
    // The run may finish (run_finished) before this request answers, so the
    // label is set first and never after.
    runState.textContent = "Stopping…";
    try {
      if (runID) await api.post(`/api/runs/${enc(runID)}/stop`);
      else await api.post(`/api/sessions/${enc(sessionID)}/stop`);
    } catch (err) {
      if (running && err.status !== 404) toast(err.message, "error");
    }
  });

  setReload(() => loadSnapshot());
  if (sessionID) {
    subscribe();
    await loadSnapshot();
  } else {
    replace(log, h("p.muted.empty", "Start a conversation: the turn runs on the server with source “dashboard”, and you watch it here as it happens."));
  }
  input.focus();

  return () => {
    disposed = true;
    follower.disconnect();
    main.removeEventListener("scroll", onScroll);
    if (offTopic) offTopic();
  };
}
