// The sandbox page: sandboxes with their state, the execution history,
// force release, and direct execution in a session's sandbox.
import { h, replace, fmtTime, fmtMS, debounce, toast, announce } from "../dom.js";
import { api, qs, enc } from "../api.js";

export async function render({ main, socket, setReload }) {
  const list = h("div#sandbox-list");
  const histSession = h("input#history-session", { type: "text", placeholder: "all sessions" });
  const history = h("div#sandbox-history");
  const execSession = h("input#exec-session", { type: "text", required: true, spellcheck: "false" });
  const execCode = h("textarea.code#exec-code", { rows: 6, spellcheck: "false" }, "print('hello from the sandbox')");
  const execTimeout = h("input#exec-timeout", { type: "number", min: 100, max: 600000, step: 100, value: 30000 });
  const execBtn = h("button.primary#exec-run", { type: "submit" }, "Run");
  const execOut = h("div#exec-result", { "aria-live": "polite" });
  const unavailable = h("p.error-box#sandbox-unavailable", { hidden: true },
    "No sandbox manager runs in this server, so there is nothing to list or run. Configure the sandbox backend and restart.");

  const backendNote = h("p.muted#sandbox-backend", "");
  const unisolatedNote = h("p.warn-box#sandbox-unisolated", { hidden: true },
    "execute_code runs UNISOLATED here: a plain subprocess with the server's user, files and network (sandbox.allow_unisolated).");
  replace(main,
    h("h1", "Sandboxes"), unavailable, backendNote, unisolatedNote,
    h("section", { "aria-labelledby": "sb-list-title" }, h("h2#sb-list-title", "Active sandboxes"), list),
    h("div.grid2",
      h("section.card", { "aria-labelledby": "sb-exec-title" },
        h("h2#sb-exec-title", "Run code directly"),
        h("form#exec-form", { onsubmit: (e) => { e.preventDefault(); runExec(); } },
          h("div.field", h("label", { for: "exec-session" }, "Session id"), execSession),
          h("div.field", h("label", { for: "exec-code" }, "Python code"), execCode),
          h("div.field", h("label", { for: "exec-timeout" }, "Timeout (ms)"), execTimeout),
          h("div.row", execBtn)),
        execOut),
      h("section.card", { "aria-labelledby": "sb-hist-title" },
        h("h2#sb-hist-title", "Execution history"),
        h("form.toolbar", { onsubmit: (e) => { e.preventDefault(); loadHistory(); } },
          h("div.field", h("label", { for: "history-session" }, "Session"), histSession),
          h("button", { type: "submit" }, "Show")),
        history)));

  async function loadList() {
    let res;
    try {
      res = await api.get("/api/sandboxes");
    } catch (err) {
      replace(list, h("p.error-box", err.message));
      return;
    }
    unavailable.hidden = res.available !== false;
    backendNote.textContent = res.available === false ? "" : `Backend: ${res.backend || "?"}.`;
    unisolatedNote.hidden = !res.unisolated;
    if (!execSession.value && (res.sandboxes || []).length) execSession.value = res.sandboxes[0].session_id;
    const sbs = res.sandboxes || [];
    if (sbs.length === 0) {
      replace(list, h("p.empty#sandbox-empty", "No active sandbox."));
      return;
    }
    replace(list, h("table#sandbox-table",
      h("thead", h("tr", h("th", "Session"), h("th", "Backend"), h("th", "State"), h("th", "Created"), h("th", "Last used"), h("th", "Executions"), h("th", h("span.sr-only", "Actions")))),
      h("tbody", sbs.map((s) => h("tr", { "data-session-id": s.session_id },
        h("td", h("a", { href: `/chat?session=${enc(s.session_id)}` }, s.session_id)),
        h("td", s.backend),
        h("td", h(`span.badge.${s.state}`, s.state)),
        h("td", fmtTime(s.created_at)),
        h("td", fmtTime(s.last_used_at)),
        h("td.num", String(s.executions ?? "")),
        h("td", h("div.row",
          h("button", { type: "button", onclick: () => { histSession.value = s.session_id; loadHistory(); } }, "History"),
          h("button.danger.release", {
            type: "button", "aria-label": `Force release the sandbox of ${s.session_id}`,
            onclick: () => release(s.session_id),
          }, "Force release"))))))));
  }

  async function release(sessionID) {
    if (!confirm(`Force release the sandbox of ${sessionID}? A running execution is killed.`)) return;
    try {
      await api.post(`/api/sandboxes/${enc(sessionID)}/release`, { force: true, reason: "dashboard" });
      toast(`Sandbox of ${sessionID} released.`, "success");
      announce(`Sandbox of ${sessionID} released.`);
    } catch (err) {
      toast(err.message, "error");
    }
    loadList();
  }

  async function loadHistory() {
    try {
      const res = await api.get("/api/sandboxes/history" + qs({ session_id: histSession.value.trim(), limit: 50 }));
      const ex = res.executions || [];
      replace(history, ex.length === 0 ? h("p.empty", "No executions recorded.") : ex.map((e) => {
        const ok = e.exit_code === 0 && (!e.status || e.status === "success");
        const label = e.exit_reason && e.exit_reason !== "ok" && e.exit_reason !== "exited" ? e.exit_reason : `exit ${e.exit_code}`;
        return h("details.tool", { "data-status": ok ? "success" : "error" },
          h("summary",
            h("span.tool-name", e.session_id, e.seq ? ` #${e.seq}` : ""),
            h(`span.badge.${ok ? "success" : "error"}`, label),
            h("span.dur", [fmtTime(e.created_at || e.started_at), fmtMS(e.duration_ms)].filter(Boolean).join(" · "))),
          h("div.tool-body",
            e.code ? [h("h4", "Code"), h("pre", e.code)] : null,
            e.code_sha256 ? h("p.muted", "code sha256 ", h("code", e.code_sha256)) : null,
            e.backend ? h("p.muted", `backend ${e.backend}`) : null,
            e.result ? [h("h4", "Result"), h("pre", e.result)] : null,
            e.stdout ? [h("h4", "stdout"), h("pre", e.stdout)] : null,
            e.stderr ? [h("h4", "stderr"), h("pre", e.stderr)] : null,
            (e.allowed_tools || []).length ? h("p.muted", `tools it may call: ${e.allowed_tools.join(", ")}`) : null));
      }));
    } catch (err) {
      replace(history, err.code === "unavailable" ? h("p.muted", "No sandbox manager runs, so there is no history.") : h("p.error-box", err.message));
    }
  }

  async function runExec() {
    const sid = execSession.value.trim();
    if (!sid) { execSession.focus(); return; }
    execBtn.disabled = true;
    replace(execOut, h("p.muted", "Running…"));
    try {
      const r = await api.post(`/api/sandboxes/${enc(sid)}/exec`, { code: execCode.value, timeout_ms: Number(execTimeout.value) || 30000 });
      replace(execOut,
        h("p", h(`span.badge.${r.exit_code === 0 ? "success" : "error"}`, `exit ${r.exit_code}`), " ", r.exit_reason || r.reason || "", " · ", fmtMS(r.duration_ms)),
        r.warning ? h("p.warn-box", r.warning) : null,
        h("h4", "stdout"), h("pre#exec-stdout", r.stdout || ""),
        r.stderr ? [h("h4", "stderr"), h("pre", r.stderr)] : null);
      loadList();
    } catch (err) {
      replace(execOut, h("p.error-box", err.message));
    } finally {
      execBtn.disabled = false;
    }
  }

  const refresh = debounce(() => { loadList(); }, 300);
  const off = socket.subscribe("sandbox", () => refresh());
  setReload(() => loadList());
  await loadList();
  if (unavailable.hidden) loadHistory();
  else replace(history, h("p.muted", "No sandbox manager runs, so there is no history."));
  return off;
}
