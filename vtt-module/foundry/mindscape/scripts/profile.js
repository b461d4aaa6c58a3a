/**
 * The psionic profile editor, as pure functions: form fields from the rule system's
 * combatant JSON Schema (served by `systems.describe`), and a profile back from the form.
 * The profile is stored in `flags.mindscape.<system>`; the daemon's adapter merges it with
 * what the game system itself stores (abilities, level, hit points).
 */
import { InvalidParamsError, UsageError } from "./errors.js";
import { idLabel } from "./labels.js";

/**
 * Fields the actor already names, and those the game system's sheet owns: hit points
 * are read from (and written to) the sheet only, and a `hp` stored in these flags is
 * ignored by the companion's adapters (SHEET_ONLY in adapters/core.py).
 */
export const SKIP = new Set(["id", "name", "hp"]);

/**
 * Where the language file labels the values of a list field: the conditions a creature
 * has (`MINDSCAPE.Condition`); any other list (attack and defense modes) holds modes.
 */
const LIST_LABELS = { conditions: "Condition" };

function typesOf(prop) {
  const t = prop?.type;
  return Array.isArray(t) ? t : t ? [t] : [];
}

/**
 * Form fields for every simple property of the combatant schema; object-valued
 * properties (mind state, dedicated dice, ...) are edited as JSON in "advanced".
 * @param {object} schema  the combatant JSON Schema
 * @param {object} profile  the stored profile
 * @param {(key:string, fallback:string)=>string} label
 */
export function profileFields(schema, profile = {}, label = (_k, f) => f) {
  const fields = [];
  const advanced = {};
  const props = schema?.properties ?? {};
  for (const [key, prop] of Object.entries(props)) {
    if (SKIP.has(key)) continue;
    const types = typesOf(prop);
    const value = profile[key];
    const base = {
      key,
      label: label(`MINDSCAPE.Field.${key}`, prop.title ?? key.replace(/_/g, " ")),
      hint: prop.description ?? "",
    };
    const enumValues = prop.enum ?? prop.items?.enum;
    if (types.includes("array") && Array.isArray(prop.items?.enum)) {
      const chosen = new Set(Array.isArray(value) ? value : []);
      fields.push({ ...base, kind: "multi", options: prop.items.enum.map((v) => ({ value: v, label: idLabel(label, LIST_LABELS[key] ?? "Mode", v), checked: chosen.has(v) })) });
    } else if (Array.isArray(enumValues) && !types.includes("array")) {
      // A choice by its label (`MINDSCAPE.Value.<field>.<value>`: a kind, a class group), a number as it is.
      const option = (v) => ({ value: String(v), label: idLabel(label, `Value.${key}`, v), selected: String(value) === String(v) });
      fields.push({ ...base, kind: "select", options: [{ value: "", label: "—", selected: value === undefined }, ...enumValues.filter((v) => v !== null).map(option)], numeric: types.includes("integer") || types.includes("number") });
    } else if (types.includes("integer") || types.includes("number")) {
      fields.push({ ...base, kind: "number", value: value ?? "", min: prop.minimum ?? "", max: prop.maximum ?? "", step: types.includes("integer") ? 1 : "any", placeholder: prop.default ?? "" });
    } else if (types.includes("boolean")) {
      fields.push({ ...base, kind: "checkbox", checked: Boolean(value ?? prop.default) });
    } else if (types.includes("string")) {
      fields.push({ ...base, kind: "text", value: value ?? "" });
    } else if (value !== undefined) {
      advanced[key] = value;
    }
  }
  // Keys of the stored profile the schema does not describe stay editable too.
  for (const [key, value] of Object.entries(profile)) {
    if (!(key in props) && !SKIP.has(key)) advanced[key] = value;
  }
  // Flags per kind keep the template free of helpers Foundry may not register.
  const flagged = fields.map((f) => ({
    ...f, isNumber: f.kind === "number", isText: f.kind === "text", isCheckbox: f.kind === "checkbox",
    isSelect: f.kind === "select", isMulti: f.kind === "multi",
  }));
  return { fields: flagged, advanced: Object.keys(advanced).length ? JSON.stringify(advanced, null, 2) : "" };
}

/**
 * The profile a submitted form describes: empty fields are left out (the adapter then
 * derives them), numbers are numbers, the advanced JSON is merged last.
 * @throws {UsageError} when the advanced JSON does not parse
 */
export function profileFromForm(fields, form) {
  const profile = {};
  for (const f of fields) {
    const raw = form[f.key];
    if (f.kind === "number") {
      if (raw !== undefined && raw !== "") profile[f.key] = Number(raw);
    } else if (f.kind === "select") {
      if (raw !== undefined && raw !== "") profile[f.key] = f.numeric ? Number(raw) : raw;
    } else if (f.kind === "checkbox") {
      if (raw) profile[f.key] = true;
      else if (raw === false) profile[f.key] = false;
    } else if (f.kind === "multi") {
      const list = Array.isArray(raw) ? raw : raw ? [raw] : [];
      if (list.length) profile[f.key] = list;
    } else if (raw !== undefined && raw !== "") {
      profile[f.key] = String(raw);
    }
  }
  const text = String(form.advanced ?? "").trim();
  if (text) {
    let extra;
    try {
      extra = JSON.parse(text);
    } catch (error) {
      throw new UsageError("MINDSCAPE.Error.AdvancedJson", { message: String(error.message) });
    }
    if (!extra || typeof extra !== "object" || Array.isArray(extra)) throw new UsageError("MINDSCAPE.Error.AdvancedJson", { message: "not an object" });
    Object.assign(profile, extra);
  }
  return profile;
}

/**
 * Actor data as the adapter should see it with `profile` stored for `system`: a copy of
 * `actor.toObject()` with the new flags, so the daemon validates before anything is saved.
 */
export function actorDataWithProfile(actorData, moduleId, system, profile) {
  const copy = structuredClone(actorData);
  copy.flags = copy.flags ?? {};
  copy.flags[moduleId] = { ...(copy.flags[moduleId] ?? {}), [system]: profile };
  return copy;
}

/**
 * A refused profile's problems in the form's own words, to show in the form (kept open
 * with what was typed): `[{key, label, message}]`, `key` the form's field the problem is
 * in ("advanced" for the JSON, null for the sheet's own data) and `label` what the form
 * calls it. A JSON that does not parse is the advanced field's; the companion's −32602
 * names each problem by where `adapters.import` read it (API.md): the profile's field
 * (`/data/actor/flags/<module>/<system>/<field>/…`), a field it derived or defaulted
 * (`/combatant/<field>`), or the sheet. Null for any other error (the companion not
 * answering, a refusal of the house rules): nothing in the form can mend it.
 * @param {unknown} error  what saving the profile threw
 * @param {{fields:{key:string, label:string}[], system:string}} spec  `profileForm`'s answer
 * @param {{label:(key:string, fallback:string)=>string, message:(error:unknown)=>string}} words
 *   `message`: an error's sentence (errors.js `describeError`)
 * @param {string} moduleId
 * @returns {{key:string|null, label:string, message:string}[]|null}
 */
export function profileProblems(error, spec, words, moduleId) {
  const advanced = words.label("MINDSCAPE.Profile.Advanced", "Advanced (JSON)");
  if (error instanceof UsageError && error.key === "MINDSCAPE.Error.AdvancedJson") return [{ key: "advanced", label: advanced, message: words.message(error) }];
  if (!(error instanceof InvalidParamsError)) return null;
  const found = (error.data?.errors ?? []).map((p) => ({ path: String(p?.path ?? ""), message: String(p?.message ?? "") }));
  if (!found.length || !found.every((p) => /^\/(data|combatant)(\/|$)/.test(p.path))) return null;
  const profile = `/flags/${moduleId}/${spec.system}/`;
  // A JSON Pointer's first segment after `prefix`, unescaped (RFC 6901), or null.
  const segment = (path, prefix) => {
    const at = path.indexOf(prefix);
    return at < 0 ? null : path.slice(at + prefix.length).split("/")[0].replace(/~1/g, "/").replace(/~0/g, "~");
  };
  return found.map(({ path, message }) => {
    const typed = segment(path, profile);
    const key = typed ?? (path.startsWith("/combatant/") ? segment(path, "/combatant/") : null);
    const shown = spec.fields.find((f) => f.key === key);
    if (shown) return { key, label: shown.label, message };
    // Typed in the advanced JSON, or derived from the sheet and the profile.
    if (typed !== null) return { key: "advanced", label: `${advanced} › ${typed}`, message };
    if (key !== null) return { key: null, label: words.label(`MINDSCAPE.Field.${key}`, key.replace(/_/g, " ")), message };
    return { key: null, label: words.label("MINDSCAPE.Profile.Sheet", "The sheet"), message: `${message} (${path})` };
  });
}

/**
 * The profile form's context to ask again after `problems` (`profileProblems`): the
 * form as it was (`previous`, put back into the fields by the dialog), the advanced JSON
 * as typed (open when it has a problem), each field with a problem marked.
 * @param {object} spec  `profileForm`'s answer
 * @param {object} form  the form as submitted (`readForm`)
 * @param {{key:string|null}[]} problems
 */
export function profileAgainContext(spec, form, problems) {
  const keys = new Set(problems.map((p) => p.key));
  return {
    ...spec,
    previous: form,
    advanced: String(form.advanced ?? spec.advanced ?? ""),
    advancedInvalid: keys.has("advanced"),
    fields: spec.fields.map((f) => ({ ...f, invalid: keys.has(f.key) })),
    problems,
  };
}
