// The schedules page: every schedule with its next and last run, run now,
// pause and resume, and each schedule's recent runs linking to their sessions.
import { h, replace, fmtTime, debounce, toast, announce } from "../dom.js";
import { api, enc } from "../api.js";

export async function render({ main, socket, setReload }) {
  const note = h("p.muted#scheduler-note", "");
  const list = h("div#schedule-list");
  const runsBox = h("section.card#schedule-runs", { hidden: true, "aria-labelledby": "runs-title" });
  replace(main,
    h("div.row", h("h1", "Schedules"), h("span.grow"), h("a#schedules-inbox-link", { href: "/inbox" }, "Inbox")),
    note,
    h("p.muted", "Add and remove schedules with ", h("code", "nagent schedule add"), " and ", h("code", "nagent schedule remove"), "."),
    list, runsBox);

  let shown = ""; // the schedule whose runs are open

  async function load() {
    let res;
    try {
      res = await api.get("/api/schedules");
    } catch (err) {
      replace(list, h("p.error-box", { role: "alert" }, err.message));
      return;
    }
    note.textContent = res.scheduler_enabled
      ? "The scheduler runs in this server: enabled schedules fire on time."
      : "scheduler.enabled is off in this server: schedules fire only when run by hand.";
    const scs = res.schedules || [];
    if (scs.length === 0) {
      replace(list, h("p.empty#schedules-empty", "No schedules yet. Add one with: nagent schedule add NAME --every 1h --prompt \"…\" --deliver inbox"));
      return;
    }
    replace(list, h("table#schedules-table",
      h("caption.sr-only", "Schedules by name"),
      h("thead", h("tr", ["Name", "When", "Delivers to", "State", "Next run", "Last run"].map((c) => h("th", { scope: "col" }, c)),
        h("th", { scope: "col" }, h("span.sr-only", "Actions")))),
      h("tbody", scs.map((s) => h("tr", { "data-schedule-id": s.id, "data-schedule-name": s.name },
        h("td", h("strong", s.name), h("div.muted.mono", s.id)),
        h("td", s.description || `${s.kind} ${s.spec}`, h("div.muted", s.timezone)),
        h("td", s.delivery_kind === "inbox" ? h("a", { href: "/inbox" }, "inbox") : h("span.mono", s.target)),
        h("td", h(`span.badge.${s.enabled ? "enabled" : "paused"}`, s.enabled ? "enabled" : "paused")),
        h("td", s.next_run_at ? fmtTime(s.next_run_at) : "—"),
        h("td", s.last_run_at ? fmtTime(s.last_run_at) : "never"),
        h("td", h("div.row",
          h("button.primary.run-now", { type: "button", "aria-label": `Run ${s.name} now`, onclick: (e) => runNow(s, e.currentTarget) }, "Run now"),
          s.enabled
            ? h("button.pause", { type: "button", "aria-label": `Pause ${s.name}`, onclick: () => setEnabled(s, false) }, "Pause")
            : h("button.resume", { type: "button", "aria-label": `Resume ${s.name}`, onclick: () => setEnabled(s, true) }, "Resume"),
          h("button.show-runs", { type: "button", "aria-label": `Recent runs of ${s.name}`, "aria-controls": "schedule-runs",
            onclick: () => showRuns(s.id, true) }, "Runs"))))))));
    if (shown) showRuns(shown, false);
  }

  async function runNow(s, btn) {
    btn.disabled = true;
    try {
      const r = await api.post(`/api/schedules/${enc(s.id)}/run`);
      const msg = r.run.status === "running" ? `${s.name} is running.` : `${s.name}: ${r.run.status.replace("_", " ")}${r.run.note ? " — " + r.run.note : ""}`;
      toast(msg, r.run.status === "running" ? "success" : "info");
      announce(msg);
      await showRuns(s.id, false);
      pollUntilDone(s.id, r.run.id);
    } catch (err) {
      toast(err.message, "error");
    } finally {
      btn.disabled = false;
    }
  }

  // A run started here finishes in the background: look again until it is done.
  let pollTimer = null;
  function pollUntilDone(id, runID, tries = 0) {
    clearTimeout(pollTimer);
    if (tries > 300) return;
    pollTimer = setTimeout(async () => {
      try {
        const d = await api.get(`/api/schedules/${enc(id)}`);
        const run = (d.runs || []).find((x) => x.id === runID);
        if (shown === id) renderRuns(d);
        if (run && (run.status === "running" || run.delivery_status === "pending")) return pollUntilDone(id, runID, tries + 1);
        load();
      } catch { pollUntilDone(id, runID, tries + 1); }
    }, tries < 10 ? 500 : 2000);
  }

  async function setEnabled(s, on) {
    try {
      await api.post(`/api/schedules/${enc(s.id)}/${on ? "resume" : "pause"}`);
      const msg = `${s.name} ${on ? "resumed" : "paused"}.`;
      toast(msg, "success");
      announce(msg);
    } catch (err) {
      toast(err.message, "error");
    }
    await load();
    const row = list.querySelector(`tr[data-schedule-id="${CSS.escape(s.id)}"] ${on ? ".pause" : ".resume"}`);
    if (row) row.focus();
  }

  async function showRuns(id, focus) {
    shown = id;
    try {
      renderRuns(await api.get(`/api/schedules/${enc(id)}?limit=20`));
      if (focus) runsBox.querySelector("h2").focus();
    } catch (err) {
      runsBox.hidden = false;
      replace(runsBox, h("h2#runs-title", "Recent runs"), h("p.error-box", err.message));
    }
  }

  function renderRuns(d) {
    const s = d.schedule;
    const runs = d.runs || [];
    runsBox.hidden = false;
    replace(runsBox,
      h("h2#runs-title", { tabindex: "-1" }, `Recent runs of ${s.name}`),
      h("p.muted", s.prompt),
      runs.length === 0 ? h("p.empty", "No runs yet.") : h("table#runs-table",
        h("caption.sr-only", `Recent runs of ${s.name}, newest first`),
        h("thead", h("tr", ["Scheduled for", "Trigger", "Status", "Session", "Delivery", "Error"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", runs.map((r) => h("tr", { "data-run-id": r.id },
          h("td", fmtTime(r.scheduled_for)),
          h("td", r.trigger),
          h("td", h(`span.badge.${r.status}`, r.status.replace("_", " ")), r.note ? h("div.muted", r.note) : null),
          h("td", r.session_id && r.started_at ? h("a.session-link", { href: `/chat?session=${enc(r.session_id)}` }, r.session_id) : h("span.muted", "—")),
          h("td", h(`span.badge.${r.delivery_status}`, r.delivery_status), r.delivery_attempts > 1 ? h("div.muted", `${r.delivery_attempts} attempts`) : null),
          h("td", [r.error, r.delivery_error].filter(Boolean).join(" · ")))))));
  }

  const refresh = debounce(() => load(), 400);
  const offs = [socket.subscribe("inbox", () => refresh()), socket.subscribe("sessions", () => refresh())];
  setReload(() => load());
  await load();
  return () => { clearTimeout(pollTimer); offs.forEach((f) => f()); };
}
