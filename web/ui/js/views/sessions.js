// The session list: search, filter by source and status, live updates.
import { h, replace, fmtTime, debounce, toast } from "../dom.js";
import { api, qs, enc } from "../api.js";
import { channelStatus } from "./channels.js";

const sources = ["", "dashboard", "api", "cli", "feishu", "acp", "cron"];
const statuses = ["", "running", "completed", "failed", "cancelled"];
const pageSize = 50;

export async function render({ main, params, socket, navigate, setReload }) {
  const state = { q: params.get("q") || "", source: params.get("source") || "", status: params.get("status") || "", offset: 0 };
  const q = h("input#filter-q", { type: "search", value: state.q, placeholder: "id or title", "aria-describedby": "filter-help" });
  const source = h("select#filter-source", sources.map((s) => h("option", { value: s, selected: s === state.source }, s || "any source")));
  const status = h("select#filter-status", statuses.map((s) => h("option", { value: s, selected: s === state.status }, s || "any status")));
  const count = h("p.muted#session-count", { role: "status" }, "");
  const body = h("div#session-list");
  const more = h("button#more", { type: "button", hidden: true }, "Load more");
  const channels = channelStatus();

  replace(main,
    h("div.row", h("h1", "Sessions"), h("span.grow"), h("a.button.primary", { href: "/chat" }, "New chat")),
    h("form.toolbar", { role: "search", onsubmit: (e) => { e.preventDefault(); reload(); } },
      h("div.field", h("label", { for: "filter-q" }, "Search"), q),
      h("div.field", h("label", { for: "filter-source" }, "Source"), source),
      h("div.field", h("label", { for: "filter-status" }, "Status"), status),
      h("span.sr-only#filter-help", "Matches a substring of the session id or title.")),
    count, body, more, channels);

  let rows = [];
  let ctrl = null;
  async function load(append = false) {
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    const query = { q: state.q, source: state.source, status: state.status, limit: pageSize, offset: append ? rows.length : 0 };
    history.replaceState(null, "", "/sessions" + qs({ q: state.q, source: state.source, status: state.status }));
    let res;
    try {
      res = await api.get("/api/sessions" + qs(query), { signal: ctrl.signal });
    } catch (err) {
      if (err.name === "AbortError") return;
      replace(body, h("p.error-box", { role: "alert" }, err.message));
      return;
    }
    rows = append ? rows.concat(res.sessions) : res.sessions;
    more.hidden = !res.has_more;
    count.textContent = rows.length === 0 ? "" : `${rows.length}${res.has_more ? "+" : ""} session${rows.length === 1 ? "" : "s"}`;
    if (rows.length === 0) {
      replace(body, h("p.empty", state.q || state.source || state.status ? "No session matches these filters." : "No sessions yet. Start one with New chat."));
      return;
    }
    replace(body, h("table#sessions-table",
      h("caption.sr-only", "Sessions, newest first"),
      h("thead", h("tr", h("th", { scope: "col" }, "Title"), h("th", { scope: "col" }, "Source"), h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col" }, "Iterations"), h("th", { scope: "col" }, "Updated"))),
      h("tbody", rows.map((s) => h("tr", { "data-session-id": s.id },
        h("td", h("a", { href: `/chat?session=${enc(s.id)}` }, s.title || s.id), h("div.muted.mono", s.id)),
        h("td", h("span.badge", s.source)),
        h("td", s.running ? h("span.badge.running", "running") : (s.status ? h(`span.badge.${s.status}`, s.status) : "")),
        h("td.num", String(s.iteration_count ?? "")),
        h("td", fmtTime(s.updated_at)))))));
  }
  const reload = () => { state.q = q.value.trim(); state.source = source.value; state.status = status.value; load(); };
  q.addEventListener("input", debounce(reload, 250));
  source.addEventListener("change", reload);
  status.addEventListener("change", reload);
  more.addEventListener("click", () => load(true).catch((e) => toast(e.message, "error")));

  const refresh = debounce(() => load(), 400);
  const off = socket.subscribe("sessions", () => refresh());
  setReload(() => { load(); channels.load(); });
  channels.load();
  const channelTimer = setInterval(() => channels.load(), 15000);
  await load();
  void navigate;
  return () => { off(); clearInterval(channelTimer); if (ctrl) ctrl.abort(); };
}
