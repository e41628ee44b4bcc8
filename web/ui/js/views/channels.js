// The channels block: the gateway's chat adapters (Feishu …) with their
// state, since when, last error and restarts. Shown on the sessions page.
import { h, replace, fmtTime } from "../dom.js";
import { api } from "../api.js";

/** channelStatus returns a section that loads and shows the adapters' health. */
export function channelStatus() {
  const body = h("div#channel-list", h("p.muted", "Loading…"));
  const box = h("section.card#channels", { "aria-labelledby": "channels-title" }, h("h2#channels-title", "Channels"), body);
  box.load = async () => {
    let res;
    try {
      res = await api.get("/api/gateway");
    } catch (err) {
      replace(body, h("p.error-box", err.message));
      return;
    }
    const ads = res.adapters || [];
    const sched = h("p.muted#scheduler-state", "Scheduler: ", res.scheduler_enabled ? "enabled" : "off (scheduler.enabled)", " · ", h("a", { href: "/schedules" }, "Schedules"), " · ", h("a", { href: "/inbox" }, "Inbox"));
    if (ads.length === 0) {
      replace(body, h("p.muted#channels-none", res.feishu_configured ? "Feishu is configured but its adapter has not started." : "No chat adapter runs (Feishu is not configured)."), sched);
      return;
    }
    replace(body, h("table#channels-table",
      h("caption.sr-only", "Chat adapters"),
      h("thead", h("tr", ["Adapter", "State", "Since", "Restarts", "Last error"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", ads.map((a) => h("tr", { "data-adapter": a.name },
        h("td", a.name),
        h("td", h(`span.badge.${a.state}`, a.state)),
        h("td", fmtTime(a.since)),
        h("td.num", String(a.restarts)),
        h("td", a.last_error || ""))))), sched);
  };
  return box;
}
