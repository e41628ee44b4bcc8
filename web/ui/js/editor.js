// A plain textarea with a line-number gutter. Lines with errors are marked
// in the gutter, and jumpTo(line) moves the caret there.
import { h } from "./dom.js";

/**
 * codeEditor({id, label, value}) returns {el, textarea, setErrors, jumpTo, value}.
 * The textarea keeps its native keyboard behaviour, except that Tab inserts
 * two spaces (Escape then Tab leaves the editor, so focus is never trapped).
 */
export function codeEditor({ id, label, value = "", rows = 20 }) {
  const gutter = h("pre.gutter", { "aria-hidden": "true" });
  const textarea = h("textarea.code", {
    id, spellcheck: "false", autocomplete: "off", autocapitalize: "off", wrap: "off", rows,
    "aria-label": label, "aria-describedby": `${id}-errors`,
  });
  textarea.value = value;
  let errorLines = new Set();
  let escaped = false;

  function renderGutter() {
    const n = textarea.value.split("\n").length;
    gutter.replaceChildren();
    for (let i = 1; i <= n; i++) {
      if (errorLines.has(i)) gutter.append(h("span.bad", { title: "error on this line" }, String(i)));
      else gutter.append(String(i));
      if (i < n) gutter.append("\n");
    }
    gutter.scrollTop = textarea.scrollTop;
  }
  textarea.addEventListener("input", renderGutter);
  textarea.addEventListener("scroll", () => { gutter.scrollTop = textarea.scrollTop; });
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { escaped = true; return; }
    if (e.key === "Tab" && !e.shiftKey && !escaped && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      const { selectionStart: s, selectionEnd: t } = textarea;
      textarea.setRangeText("  ", s, t, "end");
      renderGutter();
    }
    escaped = false;
  });
  renderGutter();

  const el = h("div.editor", gutter, textarea);
  return {
    el,
    textarea,
    get value() { return textarea.value; },
    set value(v) { textarea.value = v; errorLines = new Set(); renderGutter(); },
    setErrors(lines) { errorLines = new Set(lines.filter((l) => l > 0)); renderGutter(); },
    jumpTo(line) {
      const lines = textarea.value.split("\n");
      let pos = 0;
      for (let i = 0; i < Math.min(line - 1, lines.length); i++) pos += lines[i].length + 1;
      textarea.focus();
      textarea.setSelectionRange(pos, pos + (lines[line - 1] || "").length);
      const lh = parseFloat(getComputedStyle(textarea).lineHeight) || 18;
      textarea.scrollTop = Math.max(0, (line - 4) * lh);
    },
  };
}
