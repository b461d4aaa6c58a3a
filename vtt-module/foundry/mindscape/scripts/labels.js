/**
 * How the companion's ids and the language file's texts read to people: an id's label
 * from lang/en.json (a mode, a condition, a phase, a fact's value), with a readable
 * fallback for the ids a plugin system adds that the file does not know; `{name}`
 * placeholders filled; and the `code` marks of the texts, shown as code in the dialogs
 * that are HTML and dropped where the text is shown as it is (notices, settings).
 */

/** An id as words, for an id the language file does not know: "mind-blank" → "mind blank". */
export function spaced(id) {
  return String(id ?? "").replace(/[-_]+/g, " ");
}

/**
 * The label of `id` in a group of the language file (`MINDSCAPE.<group>.<id>`: "Mode",
 * "Condition", "Phase", "Value.winner", …), or the id as words.
 * @param {(key:string, fallback:string)=>string} label  `svc.t.label`
 */
export function idLabel(label, group, id) {
  return label(`MINDSCAPE.${group}.${id}`, spaced(id));
}

/** A combatant's conditions by their labels ("Dazed, Initiative penalty"), "" for none. */
export function conditionsText(conditions, label) {
  return (conditions ?? []).map((c) => idLabel(label, "Condition", c)).join(", ");
}

/**
 * `text` with each `{name}` replaced by `data[name]`, as Foundry's `i18n.format` does;
 * one `data` lacks (or holds null) is replaced by `missing`, or stays when it is not given.
 */
export function fill(text, data, missing = null) {
  return String(text).replace(/{([^}]+)}/g, (whole, key) => {
    const value = data?.[key];
    if (value !== undefined && value !== null) return String(value);
    return missing ?? whole;
  });
}

/** The text of `key` filled with `data` (as `fill`), or null when the language file has no such key (a plugin's id). */
export function filled(label, key, data, missing = null) {
  const text = label(key, null);
  return typeof text === "string" ? fill(text, data, missing) : null;
}

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** A plain text made safe for a place that reads it as HTML: `&<>"'` escaped. */
export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ESC[c]);
}

/**
 * A plain text made safe as the content of an HTML element (a notice: never an
 * attribute): `&<>` escaped, which is all markup there starts with; quotes and
 * apostrophes stay as they are.
 */
export function htmlText(text) {
  return String(text ?? "").replace(/[&<>]/g, (c) => ESC[c]);
}

/**
 * A text for an HTML template's raw slot (`{{{…}}}`): escaped, with each `code`
 * (a command to type, such as `mindscape serve`) shown as code.
 */
export function codeHtml(text) {
  return escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

/** A text shown as it is (a notice, a status line): the code marks dropped, the words kept. */
export function plainText(text) {
  return String(text ?? "").replace(/`([^`]*)`/g, "$1");
}
