/**
 * Foundry's own API behind one small surface: the few places where v12 and v13 differ,
 * so the rest of the module reads the same on both, and the canvas queries it makes.
 */
import { MODULE_ID } from "./consts.js";

/** Foundry's major version (12 or 13). */
export function generation(game = globalThis.game) {
  return Number(game?.release?.generation ?? 12);
}

/** An HTMLElement from a hook argument: jQuery in v12, HTMLElement in v13. */
export function elementOf(html) {
  if (!html) return null;
  if (typeof HTMLElement !== "undefined" && html instanceof HTMLElement) return html;
  if (html[0]) return html[0];
  return html.element ?? html;
}

/** Render a module template (v13 moved renderTemplate under foundry.applications.handlebars). */
export function renderTemplate(name, context) {
  const fn = globalThis.foundry?.applications?.handlebars?.renderTemplate ?? globalThis.renderTemplate;
  return fn(templatePath(name), context);
}

/** The path of one of this module's templates. */
export function templatePath(name) {
  return `modules/${MODULE_ID}/templates/${name}.hbs`;
}

/** Preload templates at "init" so the first dialog opens without a fetch. */
export function preloadTemplates(names) {
  const fn = globalThis.foundry?.applications?.handlebars?.loadTemplates ?? globalThis.loadTemplates;
  return fn ? fn(names.map(templatePath)) : Promise.resolve();
}

/** `game.i18n` helpers that fall back to a readable text when a key is missing. */
export function i18n(game = globalThis.game) {
  return {
    localize: (key) => game.i18n.localize(key),
    format: (key, data) => game.i18n.format(key, data),
    /** Localize `key`, or return `fallback` when the language file has no such key. */
    label: (key, fallback) => {
      const has = typeof game.i18n.has === "function" ? game.i18n.has(key) : game.i18n.localize(key) !== key;
      return has ? game.i18n.localize(key) : fallback;
    },
  };
}

/**
 * Read a form's named fields into a plain object: numbers stay strings (callers parse),
 * checkboxes give booleans, several checkboxes with one name give the list of checked values.
 * @param {HTMLFormElement} form
 */
export function readForm(form) {
  const out = {};
  if (!form) return out;
  const multi = new Set();
  const elements = form.elements ?? form.querySelectorAll("input, select, textarea");
  for (const el of elements) {
    if (!el.name) continue;
    if (el.type === "checkbox") {
      const same = form.querySelectorAll(`input[type=checkbox][name="${CSS.escape(el.name)}"]`);
      if (same.length > 1 || el.dataset.list !== undefined) {
        multi.add(el.name);
        out[el.name] = out[el.name] ?? [];
        if (el.checked) out[el.name].push(el.value);
      } else {
        out[el.name] = el.checked;
      }
    } else if (el.type === "radio") {
      if (el.checked) out[el.name] = el.value;
    } else if (el.tagName === "SELECT" && el.multiple) {
      out[el.name] = [...el.selectedOptions].map((o) => o.value);
    } else if (el.type !== "button" && el.type !== "submit") {
      out[el.name] = el.value;
    }
  }
  return out;
}

/**
 * Whether a wall blocks the sight between two tokens (their centres), as Foundry's sight
 * backend judges it (`CONFIG.Canvas.polygonBackends.sight.testCollision`): true when one
 * does, false when none does, null when it cannot be told here (a token not drawn on the
 * scene this browser shows, no canvas, a backend that fails).
 * @param {any} CONFIG  this client's CONFIG
 * @param {any} a  a TokenDocument
 * @param {any} b  a TokenDocument
 * @returns {boolean|null}
 */
export function sightBlocked(CONFIG, a, b) {
  const from = a?.object?.center;
  const to = b?.object?.center;
  const backend = CONFIG?.Canvas?.polygonBackends?.sight;
  if (!from || !to || typeof backend?.testCollision !== "function") return null;
  if (a.parent?.id !== b.parent?.id) return null;
  try {
    return Boolean(backend.testCollision({ x: from.x, y: from.y }, { x: to.x, y: to.y }, { type: "sight", mode: "any" }));
  } catch {
    return null;
  }
}
