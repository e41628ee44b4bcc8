// The plugin page: installed WASM plugins and their tools, upload, remove,
// and a direct tool call for plugin authors.
import { h, replace, fmtMS, pretty, toast } from "../dom.js";
import { api, enc } from "../api.js";

export async function render({ main, setReload }) {
  const list = h("div#plugin-list");
  const manifest = h("input#plugin-manifest", { type: "file", accept: ".yaml,.yml", required: true });
  const module = h("input#plugin-module", { type: "file", accept: ".wasm", required: true });
  const uploadOut = h("div#plugin-upload-result", { "aria-live": "polite" });
  const callPlugin = h("select#call-plugin");
  const callTool = h("select#call-tool");
  const callArgs = h("textarea.code#call-args", { rows: 5, spellcheck: "false" }, "{}");
  const callOut = h("div#call-result", { "aria-live": "polite" });
  let plugins = [];

  replace(main,
    h("h1", "Plugins"),
    h("section", { "aria-labelledby": "pl-list-title" }, h("h2#pl-list-title", "Installed"), list),
    h("div.grid2",
      h("section.card", { "aria-labelledby": "pl-up-title" },
        h("h2#pl-up-title", "Install a plugin"),
        h("form#plugin-upload", { onsubmit: (e) => { e.preventDefault(); upload(); } },
          h("div.field", h("label", { for: "plugin-manifest" }, "Manifest (plugin.yaml)"), manifest),
          h("div.field", h("label", { for: "plugin-module" }, "Module (.wasm)"), module),
          h("div.row", h("button.primary", { type: "submit" }, "Install"))),
        uploadOut),
      h("section.card", { "aria-labelledby": "pl-call-title" },
        h("h2#pl-call-title", "Call a tool directly"),
        h("form#plugin-call", { onsubmit: (e) => { e.preventDefault(); call(); } },
          h("div.row",
            h("div.field", h("label", { for: "call-plugin" }, "Plugin"), callPlugin),
            h("div.field", h("label", { for: "call-tool" }, "Tool"), callTool)),
          h("div.field", h("label", { for: "call-args" }, "Arguments (JSON)"), callArgs),
          h("div.row", h("button.primary", { type: "submit" }, "Call"))),
        callOut)));

  // Tools come as {name, description, risk_level} (API.md) or as names.
  const toolOf = (t) => (typeof t === "string" ? { name: t } : t);
  const stateOf = (p) => p.status || p.state || "";

  function fillTools() {
    const p = plugins.find((x) => x.name === callPlugin.value);
    replace(callTool, (p?.tools || []).map(toolOf).map((t) => h("option", { value: t.name }, t.name)));
  }
  callPlugin.addEventListener("change", fillTools);

  async function load() {
    try {
      const res = await api.get("/api/plugins");
      plugins = res.plugins || [];
    } catch (err) {
      replace(list, h("p.error-box", err.message));
      return;
    }
    replace(callPlugin, plugins.map((p) => h("option", { value: p.name }, p.name)));
    fillTools();
    if (plugins.length === 0) {
      replace(list, h("p.empty", "No plugins installed. Install one below, or with `nagent plugin install DIR`."));
      return;
    }
    replace(list, h("table#plugin-table",
      h("thead", h("tr", h("th", "Plugin"), h("th", "Status"), h("th", "Tools"), h("th", "Allowed hosts"), h("th", h("span.sr-only", "Actions")))),
      h("tbody", plugins.map((p) => h("tr", { "data-plugin": p.name },
        h("td", h("strong", p.name), p.version ? h("span.muted", ` ${p.version}`) : null, h("div.muted", p.description || "")),
        h("td", h(`span.badge.${["ok", "loaded", "ready"].includes(stateOf(p)) ? "ok" : stateOf(p)}`, stateOf(p)), p.error ? h("div.error-box", p.error) : null),
        h("td", h("ul", (p.tools || []).map(toolOf).map((t) => h("li", h("code", t.name),
          t.risk_level ? [" ", h("span.badge", t.risk_level)] : null, t.description ? h("div.muted", t.description) : null)))),
        h("td", (p.allowed_hosts || []).join(", ") || "none"),
        h("td", h("button.danger", { type: "button", "aria-label": `Remove ${p.name}`, onclick: () => remove(p.name) }, "Remove")))))));
  }

  async function upload() {
    if (!manifest.files[0] || !module.files[0]) { replace(uploadOut, h("p.error-box", "Choose both the manifest and the module.")); return; }
    const fd = new FormData();
    fd.append("manifest", manifest.files[0]);
    fd.append("module", module.files[0]);
    try {
      const res = await api.post("/api/plugins", fd);
      replace(uploadOut, h("p.ok-box", `Installed ${res.plugin.name}.`));
      manifest.value = "";
      module.value = "";
      load();
    } catch (err) {
      replace(uploadOut, h("p.error-box", err.message));
    }
  }

  async function remove(name) {
    if (!confirm(`Remove the plugin ${name}? Its tools disappear from new turns.`)) return;
    try {
      await api.del(`/api/plugins/${enc(name)}`);
      toast(`${name} removed.`, "success");
    } catch (err) {
      toast(err.message, "error");
    }
    load();
  }

  async function call() {
    let args;
    try { args = JSON.parse(callArgs.value || "{}"); } catch (err) {
      replace(callOut, h("p.error-box", `The arguments are not valid JSON: ${err.message}`));
      return;
    }
    if (!callPlugin.value || !callTool.value) { replace(callOut, h("p.error-box", "Choose a plugin and a tool.")); return; }
    try {
      const r = await api.post(`/api/plugins/${enc(callPlugin.value)}/call`, { tool: callTool.value, arguments: args });
      replace(callOut, h("p", h(`span.badge.${r.status}`, r.status), " ", fmtMS(r.duration_ms)),
        h("pre", pretty(r.content || r.error || "")));
    } catch (err) {
      replace(callOut, h("p.error-box", err.message));
    }
  }

  setReload(load);
  await load();
}
