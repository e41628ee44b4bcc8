// The memory page: memory.md and user.md editors (builtin and per project),
// observations.md, and the external-memory provider health counters.
import { h, replace, fmtTime, toast, announce } from "../dom.js";
import { api, enc } from "../api.js";
import { codeEditor } from "../editor.js";

export async function render({ main, params, setReload }) {
  const providers = h("div#memory-providers");
  const health = h("div#memory-health");
  const heading = h("h2#memory-file-title", "File");
  const ed = codeEditor({ id: "memory-content", label: "File content" });
  const note = h("p.muted#memory-file-note", "");
  const save = h("button.primary#memory-save", { type: "button" }, "Save");
  const status = h("span.muted", { role: "status" }, "");
  const newProject = h("input#memory-new-project", { type: "text", placeholder: "project name", pattern: "[a-z0-9][a-z0-9_-]{0,63}" });
  let current = null;

  replace(main,
    h("h1", "Memory"),
    h("div.policy-layout",
      h("section.card", { "aria-labelledby": "mem-files-title" },
        h("h2#mem-files-title", "Files"), providers,
        h("form", { onsubmit: (e) => { e.preventDefault(); const n = newProject.value.trim(); if (n) open(n, "memory.md"); } },
          h("div.field", h("label", { for: "memory-new-project" }, "New project"), newProject,
            h("small.muted", "A project is created by saving its first file.")),
          h("button", { type: "submit" }, "Open"))),
      h("section", { "aria-labelledby": "memory-file-title" },
        heading, note, ed.el, h("div.row", status, h("span.grow"), save))),
    h("section", { "aria-labelledby": "mem-health-title" }, h("h2#mem-health-title", "Provider health"), health));

  async function load() {
    const res = await api.get("/api/memory");
    replace(providers, (res.providers || []).map((p) => h("div",
      h("h3", p.name),
      h("ul.filelist", (p.files || []).map((f) => h("li",
        h("button.link", { type: "button", "data-provider": p.name, "data-file": f.name, onclick: () => open(p.name, f.name) }, f.name),
        h("span.muted", ` ${f.size ?? 0} B`), f.read_only ? h("span.muted", " · read only") : null))))));
    renderHealth(res.health);
  }

  function renderHealth(counters) {
    const cs = counters || [];
    replace(health, cs.length === 0 ? h("p.empty#memory-health-ok", "No provider failures recorded.") : h("table",
      h("thead", h("tr", h("th", "Provider"), h("th", "Operation"), h("th", "Failures"), h("th", "Timeouts"), h("th", "Last error"), h("th", "When"))),
      h("tbody", cs.map((c) => h("tr",
        h("td", c.provider), h("td", c.operation), h("td.num", String(c.failures)), h("td.num", String(c.timeouts)),
        h("td", c.last_error || ""), h("td", fmtTime(c.last_failed_at || c.last_at)))))));
  }

  async function open(provider, file) {
    status.textContent = "";
    try {
      const f = await api.get(`/api/memory/${enc(provider)}/${enc(file)}`);
      current = f;
      heading.textContent = `${provider} / ${file}`;
      ed.value = f.content || "";
      ed.textarea.readOnly = !!f.read_only;
      save.disabled = !!f.read_only;
      note.textContent = f.read_only ? "Read only: written by the runtime after each turn." : (f.modified_at ? `Last modified ${fmtTime(f.modified_at)}. Entries are separated by a blank line.` : "A new file. Entries are separated by a blank line.");
      history.replaceState(null, "", `/memory?provider=${enc(provider)}&file=${enc(file)}`);
    } catch (err) {
      if (err.status === 404) {
        current = { provider, file, read_only: false };
        heading.textContent = `${provider} / ${file}`;
        ed.value = "";
        ed.textarea.readOnly = false;
        save.disabled = false;
        note.textContent = "A new file.";
        return;
      }
      toast(err.message, "error");
    }
  }

  save.addEventListener("click", async () => {
    if (!current) return;
    try {
      await api.put(`/api/memory/${enc(current.provider)}/${enc(current.file)}`, { content: ed.value });
      await open(current.provider, current.file);
      status.textContent = "Saved.";
      announce("Memory file saved.");
      load();
    } catch (err) {
      status.textContent = "";
      toast(err.message, "error");
    }
  });

  setReload(load);
  await load();
  await open(params.get("provider") || "builtin", params.get("file") || "memory.md");
}
