// The skills page: the skills the agent sees, with their SKILL.md and files.
import { h, replace } from "../dom.js";
import { api, qs, enc } from "../api.js";

export async function render({ main, params, setReload }) {
  const list = h("div#skill-list");
  const view = h("section.card#skill-view", { "aria-live": "polite" }, h("p.muted", "Choose a skill to read it."));
  replace(main, h("h1", "Skills"), h("div.policy-layout", list, view));

  async function load() {
    const res = await api.get("/api/skills");
    const skills = res.skills || [];
    replace(list,
      (res.warnings || []).length ? h("div.error-box", h("strong", "Skipped: "), h("ul", res.warnings.map((w) => h("li", w)))) : null,
      skills.length === 0 ? h("p.empty", "No skills.") : h("ul.cards", skills.map((s) => h("li.card",
        h("button.link", { type: "button", "data-skill": s.name, onclick: () => open(s.name) }, s.name),
        " ", h("span.badge", s.source),
        h("p.muted", s.description),
        (s.tags || []).length ? h("p", (s.tags || []).map((t) => h("span.badge", t))) : null))));
  }

  async function open(name, file = "") {
    try {
      const s = await api.get(`/api/skills/${enc(name)}` + qs({ file }));
      replace(view,
        h("h2", name, file ? h("span.muted", ` / ${file}`) : null),
        (s.files || []).length ? h("nav", { "aria-label": "Skill files" },
          h("button.link", { type: "button", onclick: () => open(name) }, "SKILL.md"), " ",
          s.files.map((f) => [h("button.link", { type: "button", onclick: () => open(name, f) }, f), " "])) : null,
        h("pre.skill-content", s.content || ""));
      history.replaceState(null, "", "/skills" + qs({ skill: name, file }));
    } catch (err) {
      replace(view, h("p.error-box", err.message));
    }
  }

  setReload(load);
  await load();
  if (params.get("skill")) await open(params.get("skill"), params.get("file") || "");
}
