// The inbox: results that schedules delivered to the dashboard (`--deliver
// inbox`), unread first, each linking to the session of its run. New
// messages arrive live on the websocket's inbox topic.
import { h, replace, fmtTime, debounce, toast, announce } from "../dom.js";
import { api, qs, enc } from "../api.js";

export async function render({ main, socket, setReload }) {
  const unreadOnly = h("input#inbox-unread-only", { type: "checkbox" });
  const count = h("p.muted#inbox-count", { role: "status" }, "");
  const list = h("div#inbox-list");
  replace(main,
    h("div.row", h("h1", "Inbox"), h("span.grow"), h("a", { href: "/schedules" }, "Schedules")),
    h("p.muted", "Results of schedules that deliver to the inbox (", h("code", "nagent schedule add … --deliver inbox"), ")."),
    h("div.toolbar", h("label.check", unreadOnly, " Unread only")),
    count, list);

  let ctrl = null;
  async function load() {
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    let res;
    try {
      res = await api.get("/api/inbox" + qs({ unread: unreadOnly.checked ? "true" : "", limit: 200 }), { signal: ctrl.signal });
    } catch (err) {
      if (err.name === "AbortError") return;
      replace(list, h("p.error-box", { role: "alert" }, err.message));
      return;
    }
    const msgs = res.messages || [];
    count.textContent = `${res.unread} unread`;
    window.dispatchEvent(new CustomEvent("nagent:inbox", { detail: { unread: res.unread } }));
    if (msgs.length === 0) {
      replace(list, h("p.empty#inbox-empty", unreadOnly.checked ? "No unread messages." : "No messages yet. Schedules that deliver to the inbox put their results here."));
      return;
    }
    replace(list, h("ul.stack.plain#inbox-messages", { "aria-label": "Inbox messages, unread first" }, msgs.map((m) => {
      const unread = !m.read_at;
      return h(`li.card.inbox-item${unread ? ".unread" : ""}`, { "data-inbox-id": m.id, "data-read": unread ? "false" : "true", "aria-labelledby": `inbox-h-${m.id}` },
        h("div.row",
          h(`h2.inbox-title#inbox-h-${m.id}`, m.schedule_name || m.schedule_id),
          unread ? h("span.badge.unread", "unread") : h("span.badge.cancelled", "read"),
          h(`span.badge.${m.status}`, m.status),
          h("span.grow"),
          h("span.muted", fmtTime(m.created_at))),
        h("pre.inbox-content", m.content || "(no text)"),
        h("div.row",
          m.session_id ? h("a.inbox-session", { href: `/chat?session=${enc(m.session_id)}` }, "Open the session") : null,
          h("span.grow"),
          unread ? h("button.mark-read", { type: "button", "aria-label": `Mark the message from ${m.schedule_name} read`, onclick: (e) => markRead(m, e.currentTarget) }, "Mark read") : null));
    })));
  }

  async function markRead(m, btn) {
    btn.disabled = true;
    try {
      await api.post(`/api/inbox/${enc(m.id)}/read`);
      announce(`Message from ${m.schedule_name} marked read.`);
    } catch (err) {
      toast(err.message, "error");
      btn.disabled = false;
      return;
    }
    await load();
    main.focus({ preventScroll: true });
  }

  unreadOnly.addEventListener("change", () => load());
  const refresh = debounce(() => load(), 200);
  const off = socket.subscribe("inbox", (ev) => {
    if (ev && ev.type === "inbox.message") announce(`New inbox message from ${ev.message.schedule_name}.`);
    refresh();
  });
  setReload(() => load());
  await load();
  return () => { off(); if (ctrl) ctrl.abort(); };
}
