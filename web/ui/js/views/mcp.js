// The MCP page: sites with their health, add (stdio or HTTP), probe, remove.
import { h, replace, pretty, toast } from "../dom.js";
import { api, enc } from "../api.js";

export async function render({ main, setReload }) {
  const list = h("div#mcp-list");
  const name = h("input#mcp-name", { type: "text", required: true, pattern: "[a-z0-9-]+" });
  const transport = h("select#mcp-transport", ["stdio", "streamable_http", "sse"].map((t) => h("option", { value: t }, t)));
  const command = h("input#mcp-command", { type: "text", placeholder: "npx" });
  const args = h("input#mcp-args", { type: "text", placeholder: "mcp-server-everything stdio" });
  const url = h("input#mcp-url", { type: "url", placeholder: "http://127.0.0.1:3001/mcp" });
  const stdioFields = h("div",
    h("div.field", h("label", { for: "mcp-command" }, "Command"), command),
    h("div.field", h("label", { for: "mcp-args" }, "Arguments (space-separated)"), args));
  const httpFields = h("div", { hidden: true }, h("div.field", h("label", { for: "mcp-url" }, "URL"), url));
  const addOut = h("div", { "aria-live": "polite" });
  const probeOut = h("section.card#mcp-probe", { "aria-live": "polite", hidden: true });

  transport.addEventListener("change", () => { stdioFields.hidden = transport.value !== "stdio"; httpFields.hidden = transport.value === "stdio"; });

  replace(main,
    h("h1", "MCP sites"),
    list, probeOut,
    h("section.card", { "aria-labelledby": "mcp-add-title" },
      h("h2#mcp-add-title", "Add a site"),
      h("form", { onsubmit: (e) => { e.preventDefault(); add(); } },
        h("div.row",
          h("div.field", h("label", { for: "mcp-name" }, "Name"), name),
          h("div.field", h("label", { for: "mcp-transport" }, "Transport"), transport)),
        stdioFields, httpFields,
        h("button.primary", { type: "submit" }, "Add")),
      addOut));

  // healthOf reads a site's health: {health: "healthy", error, tools: [names]}
  // from the server, or {healthy, last_error, tools: n} as API.md first put it.
  function healthOf(st) {
    if (!st) return { state: "not connected", error: "", tools: "" };
    const state = typeof st.health === "string" ? st.health : (st.healthy ? "healthy" : "unhealthy");
    return { state, error: st.error || st.last_error || "", tools: Array.isArray(st.tools) ? st.tools.length : (st.tools ?? "") };
  }

  async function load() {
    const res = await api.get("/api/mcp");
    const sites = res.sites || [];
    replace(list, sites.length === 0 ? h("p.empty", "No MCP sites.") : h("table#mcp-table",
      h("thead", h("tr", h("th", "Site"), h("th", "Transport"), h("th", "Target"), h("th", "Health"), h("th", "Tools"), h("th", h("span.sr-only", "Actions")))),
      h("tbody", sites.map((s) => {
        const origin = s.source || s.origin || "";
        const hl = healthOf(s.health);
        return h("tr", { "data-site": s.name },
          h("td", h("strong", s.name), h("div.muted", origin), s.enabled === false ? h("div.muted", "disabled") : null),
          h("td", s.transport),
          h("td", h("code", s.url || [s.command, ...(s.args || [])].join(" "))),
          h("td", h(`span.badge.${hl.state}`, hl.state), hl.error ? h("div.muted", hl.error) : null),
          h("td.num", String(hl.tools)),
          h("td", h("div.row",
            h("button", { type: "button", onclick: () => probe(s.name) }, "Probe"),
            origin === "config" ? null : h("button.danger", { type: "button", "aria-label": `Remove ${s.name}`, onclick: () => remove(s.name) }, "Remove"))));
      }))));
  }

  async function add() {
    const body = { name: name.value.trim(), transport: transport.value };
    if (transport.value === "stdio") {
      body.command = command.value.trim();
      body.args = args.value.trim() ? args.value.trim().split(/\s+/) : [];
    } else {
      body.url = url.value.trim();
    }
    try {
      await api.post("/api/mcp", body);
      replace(addOut, h("p.ok-box", `Added ${body.name}.`));
      load();
    } catch (err) {
      replace(addOut, h("p.error-box", err.message));
    }
  }

  async function probe(n) {
    probeOut.hidden = false;
    replace(probeOut, h("h2", `Probing ${n}…`));
    try {
      const r = await api.post(`/api/mcp/${enc(n)}/probe`);
      replace(probeOut, h("h2", `${n}: ${r.tools.length} tool(s) as the model sees them`),
        r.tools.map((t) => h("details.tool", { "data-status": "success" },
          h("summary", h("span.tool-name", t.name), h("span.badge", t.risk_level)),
          h("div.tool-body", h("p", t.description),
            t.remote_name ? h("p.muted", `remote name ${t.remote_name}`) : null,
            t.input_schema ? h("pre", pretty(t.input_schema)) : null))));
    } catch (err) {
      replace(probeOut, h("h2", `Probing ${n} failed`), h("p.error-box", err.message));
    }
    load();
  }

  async function remove(n) {
    if (!confirm(`Remove the MCP site ${n}?`)) return;
    try { await api.del(`/api/mcp/${enc(n)}`); } catch (err) { toast(err.message, "error"); }
    load();
  }

  setReload(load);
  await load();
}
