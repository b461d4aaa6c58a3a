/**
 * The module's dialogs, all `foundry.applications.api.DialogV2` with Handlebars content.
 * Each returns a promise of plain data (or null when closed) so callers stay linear.
 */
import { checkDieValues } from "./rpc.js";
import { i18n, readForm, renderTemplate } from "./foundry.js";
import { restHours } from "./rest.js";
import { codeHtml } from "./labels.js";

function DialogV2() {
  return globalThis.foundry.applications.api.DialogV2;
}

/** The dialog's root element from a DialogV2 render callback (v12 passes it, v13 passes the app). */
function rootOf(target) {
  return target?.element ?? target;
}

/**
 * The dialog application from a render callback argument, to close it from code.
 * v13 passes the application; v12 passes `dialog.element`, which for a DialogV2 is an
 * HTMLDialogElement: its own `close()` only hides the element and leaves the
 * application (and `DialogV2.wait`'s promise) open, so the application is looked up in
 * `foundry.applications.instances` by the element's id.
 */
export function appOf(target) {
  if (!target) return null;
  const ApplicationV2 = globalThis.foundry?.applications?.api?.ApplicationV2;
  if (typeof ApplicationV2 === "function" && target instanceof ApplicationV2) return target;
  const isElement = (typeof HTMLElement !== "undefined" && target instanceof HTMLElement) || typeof target.tagName === "string";
  // An application holds its element; an element does not have an `element` property.
  if (!isElement && target.element && typeof target.close === "function") return target;
  const id = rootOf(target)?.id;
  return (id && globalThis.foundry?.applications?.instances?.get?.(id)) ?? null;
}

/**
 * DialogV2's `content` for the rendered template `html`. From v13 on, Foundry passes a
 * string through `foundry.utils.cleanHTML`, which strips what it deems undesirable, and
 * uses an HTMLDivElement as it is (its API: DialogV2Configuration.content, "If string,
 * the content is cleaned ... Otherwise, the content is not cleaned"). Our content is our
 * own template, every value in it escaped by Handlebars, and its controls need their
 * `data-*`, `name` and `for` attributes: so from v13 it goes as an element. v12's
 * DialogV2 takes a string (and does not clean it).
 * @param {string} html
 * @param {number} [generation]  Foundry's major version (`game.release.generation`)
 */
export function dialogContent(html, generation = globalThis.game?.release?.generation, doc = globalThis.document) {
  if (!(Number(generation) >= 13) || !doc) return html;
  const div = doc.createElement("div");
  div.innerHTML = html;
  return div;
}

let dialogs = 0;

/** A prefix for a dialog's element ids, unique in this page. */
export function dialogUid() {
  dialogs += 1;
  return `mindscape-${dialogs}`;
}

/**
 * Show a DialogV2 and resolve to the submitted form, or null when the dialog was
 * cancelled or closed. Foundry's DialogV2#_onSubmit resolves to
 * `(await button.callback(...)) ?? button.action`, so a Cancel button answers the string
 * "cancel"; anything that is not a form object is turned into null here, so every caller's
 * `if (!form)` means "no choice made".
 */
export async function wait({ title, icon, template, context, ok, okIcon = "fas fa-check", cancel = "MINDSCAPE.Cancel", render, width = 440, extraButtons = [] }) {
  const t = i18n();
  // `uid`: the prefix of this dialog's element ids, unique in the page (several dialogs
  // may be open), so that each label names its control (`<label for>`).
  const content = dialogContent(await renderTemplate(template, { ...context, uid: dialogUid() }));
  const result = await DialogV2().wait({
    window: { title: t.localize(title), icon },
    classes: ["mindscape-dialog"],
    position: { width },
    content,
    rejectClose: false,
    buttons: [
      ...extraButtons,
      { action: "ok", label: t.localize(ok), icon: okIcon, default: true, callback: (_event, button) => readForm(button.form) },
      { action: "cancel", label: t.localize(cancel), icon: "fas fa-times", callback: () => null },
    ],
    render: render ? (event, target) => render(rootOf(target), target) : undefined,
  });
  return result && typeof result === "object" ? result : null;
}

/**
 * Pairing: paste the token, test with `companion.info`, save.
 * @param {{url:string, token:string, test:(url:string, token:string)=>Promise<string>}} opts
 *   `test` resolves to a success line or throws a typed error whose text says what to do
 */
export function pairingDialog({ url, token, test, context = {} }) {
  return wait({
    title: "MINDSCAPE.Pairing.Title",
    icon: "fas fa-plug",
    template: "pairing",
    context: { url, token, ...context, ...pairingTexts(context.origin ?? "") },
    ok: "MINDSCAPE.Pairing.Save",
    width: 520,
    render: (root) => {
      const button = root.querySelector("[data-mindscape-action=test]");
      const status = root.querySelector(".mindscape-status");
      button?.addEventListener("click", async (event) => {
        event.preventDefault();
        const form = readForm(button.form ?? root.querySelector("form") ?? root);
        status.className = "mindscape-status pending";
        status.textContent = i18n().localize("MINDSCAPE.Pairing.Testing");
        try {
          status.textContent = await test(form.url, form.token);
          status.className = "mindscape-status ok";
        } catch (error) {
          status.textContent = error.userMessage ?? String(error.message ?? error);
          status.className = "mindscape-status error";
        }
      });
    },
  });
}

/**
 * The pairing dialog's instructions as HTML, each command to type (`mindscape serve`)
 * shown as code.
 * @param {string} origin  this page's origin, for `--allow-origin`
 */
export function pairingTexts(origin, t = i18n()) {
  return {
    intro: codeHtml(t.localize("MINDSCAPE.Pairing.Intro")),
    help: {
      notRunning: codeHtml(t.localize("MINDSCAPE.Pairing.HelpNotRunning")),
      token: codeHtml(t.localize("MINDSCAPE.Pairing.HelpToken")),
      origin: codeHtml(t.format("MINDSCAPE.Pairing.HelpOrigin", { origin })),
      hosted: codeHtml(t.localize("MINDSCAPE.Pairing.HelpHosted")),
    },
  };
}

/**
 * The attack dialog: mode and the system's options; the exact odds refresh on change.
 * When the companion refuses the odds for the attacker's own sake (`error.blocksAttack`:
 * its PSPs, its mode, its multiplier), Attack is disabled with the reason shown, so that
 * no defender is asked a secret question for an attack that cannot be made; changing
 * the attack asks again. A power-pool wave's odds are those of all the targets together
 * (`view.group`), so the target chosen for the odds does not count then.
 * @param {object} context  attack-dialog.hbs context
 * @param {(form:object)=>Promise<object>} oddsFor  odds-view context for the current form
 */
export function attackDialog({ context, oddsFor }) {
  return wait({
    title: "MINDSCAPE.Attack.Title",
    icon: "fas fa-brain",
    template: "attack-dialog",
    context,
    ok: "MINDSCAPE.Attack.Go",
    okIcon: "fas fa-bolt",
    width: 480,
    render: (root) => {
      // DialogV2 wraps the content in its own <form>; the fields belong to it.
      const form = root.querySelector("[name=mode]")?.form ?? root.querySelector("form") ?? root;
      const panel = root.querySelector(".mindscape-odds");
      const attack = root.querySelector('button[data-action="ok"]');
      const target = form.elements?.namedItem?.("target") ?? null;
      let ticket = 0;
      const refresh = async () => {
        const mine = ++ticket;
        panel.classList.add("loading");
        try {
          const view = await oddsFor(readForm(form));
          if (mine !== ticket) return;
          panel.innerHTML = await renderTemplate("odds", view);
          if (target) target.disabled = Boolean(view?.group);
          if (attack) attack.disabled = false;
        } catch (error) {
          if (mine !== ticket) return;
          panel.innerHTML = "";
          const p = document.createElement("p");
          p.className = "mindscape-status error";
          p.textContent = error.userMessage ?? String(error.message ?? error);
          panel.append(p);
          if (attack) attack.disabled = Boolean(error.blocksAttack);
          if (error.blocksAttack) {
            const hint = document.createElement("p");
            hint.className = "hint mindscape-attack-blocked";
            hint.textContent = i18n().localize("MINDSCAPE.Attack.Blocked");
            panel.append(hint);
          }
        } finally {
          if (mine === ticket) panel.classList.remove("loading");
        }
      };
      root.addEventListener("change", refresh);
      refresh();
    },
  });
}

/** What a timed dialog's own deadline answers (never a form). */
const TIMED_OUT = Symbol("timed out");

/** What a timed dialog answers when a newer question replaced it (never a form). */
const REPLACED = Symbol("replaced");

/**
 * `wait` for a secret question that closes itself after `timeoutMs`, counting the seconds
 * down in its `.mindscape-countdown`. Resolves to the form, null (Cancel or closed),
 * TIMED_OUT, or REPLACED once `replaced` (a promise) settles: a newer question took its
 * place; it never waits longer than the timeout, even where the dialog cannot be
 * closed from code (at the timeout the application is closed when it can be found, else
 * its element hidden). The options' own `render` runs after the countdown is set up.
 */
async function timedWait(options, timeoutMs, replaced = null) {
  let timer = null;
  let app = null;
  let rootEl = null;
  let expire;
  const expired = new Promise((resolve) => { expire = resolve; });
  const deadline = setTimeout(() => expire(TIMED_OUT), Math.max(0, Number(timeoutMs) || 0) + 250);
  replaced?.then(() => expire(REPLACED), () => null);
  const shown = wait({
    ...options,
    render: (root, target) => {
      app = appOf(target);
      rootEl = root;
      const seconds = root?.querySelector?.(".mindscape-countdown");
      const end = Date.now() + timeoutMs;
      timer = setInterval(() => {
        const left = Math.max(0, Math.ceil((end - Date.now()) / 1000));
        if (seconds) seconds.textContent = String(left);
        if (left <= 0) {
          clearInterval(timer);
          expire(TIMED_OUT);
        }
      }, 250);
      options.render?.(root, target);
    },
  });
  const answer = await Promise.race([shown, expired]);
  clearInterval(timer);
  clearTimeout(deadline);
  if (answer === TIMED_OUT || answer === REPLACED) {
    try {
      if (app) await app.close();
      else rootEl?.close?.();
    } catch { /* already closed */ }
  }
  return answer;
}

/**
 * A secret defense choice; closes itself after `timeoutMs` and then answers `fallback`.
 * Cancel (or closing the window) is no answer: the fallback (the remembered default, or
 * no defense) is used, nothing is remembered and nobody is drawn in. power-pool: `allies`
 * are the uuids of the tokens ticked among `context.allies` (the GM's client keeps them
 * only with a mode that draws allies in).
 * @returns {Promise<{mode:string|null, sacrifice?:string, allies?:string[], remember:boolean, timedOut:boolean, cancelled?:boolean}>}
 */
export async function defenseDialog({ context, timeoutMs, fallback }) {
  const answer = await timedWait({
    title: "MINDSCAPE.Defense.Title",
    icon: "fas fa-shield-alt",
    template: "defense-dialog",
    context,
    ok: "MINDSCAPE.Defense.Raise",
    okIcon: "fas fa-shield-alt",
    width: context.allies?.length ? 480 : 440,
    render: context.allies?.length ? (root) => followAllyModes(root) : undefined,
  }, timeoutMs);
  if (answer === TIMED_OUT) return { mode: fallback ?? null, remember: false, timedOut: true };
  if (!answer) return { mode: fallback ?? null, remember: false, timedOut: false, cancelled: true };
  const allies = [].concat(answer.allies ?? []).filter(Boolean);
  return { mode: answer.mode || null, sacrifice: answer.sacrifice, allies, remember: Boolean(answer.remember), timedOut: false };
}

/**
 * power-pool: the defense dialog's allies may be picked only while a defense that draws
 * allies in is chosen (the fieldset's `data-ally-modes`); the GM's client keeps them only
 * with such a mode in any case.
 */
function followAllyModes(root) {
  const fieldset = root?.querySelector?.(".mindscape-defense-allies");
  if (!fieldset) return;
  const modes = String(fieldset.dataset.allyModes ?? "").split(",");
  const update = () => {
    const chosen = root.querySelector("input[name=mode]:checked")?.value ?? "";
    fieldset.disabled = !modes.includes(chosen);
  };
  root.addEventListener("change", update);
  update();
}

/**
 * Whether a mind a critical hit opened pays to close at this round's end (revised-2e);
 * closes itself after `timeoutMs`. Only Pay is a yes: Do not pay, closing the window and
 * the timeout are all no.
 * @returns {Promise<{close:boolean, timedOut:boolean, cancelled?:boolean}>}
 */
export async function closeDialog({ context, timeoutMs }) {
  const answer = await timedWait({
    title: "MINDSCAPE.Close.Title",
    icon: "fas fa-lock",
    template: "close-dialog",
    context,
    ok: "MINDSCAPE.Close.Pay",
    okIcon: "fas fa-lock",
    cancel: "MINDSCAPE.Close.Keep",
  }, timeoutMs);
  if (answer === TIMED_OUT) return { close: false, timedOut: true };
  if (!answer) return { close: false, timedOut: false, cancelled: true };
  return { close: true, timedOut: false };
}

/**
 * How a controller keeps or ends each of its psionic control links at this round's end
 * (power-pool); closes itself after `timeoutMs`. Each link is a group of radio buttons
 * (`link-<index>`) whose first choice, keeping it as it is, is checked: Change nothing,
 * closing the window and the timeout keep every link as it is.
 * @param {{context:{links:{index:number}[]}, timeoutMs:number}} opts
 * @returns {Promise<{answers:string[], timedOut:boolean, cancelled?:boolean}>}
 *   `answers`: the value chosen for each link in order ("hold" for none); `[]` unless confirmed
 */
export async function controlDialog({ context, timeoutMs }) {
  const answer = await timedWait({
    title: "MINDSCAPE.Control.Title",
    icon: "fas fa-link",
    template: "control-dialog",
    context,
    ok: "MINDSCAPE.Control.Confirm",
    okIcon: "fas fa-check",
    cancel: "MINDSCAPE.Control.ChangeNothing",
    width: 480,
  }, timeoutMs);
  if (answer === TIMED_OUT) return { answers: [], timedOut: true };
  if (!answer) return { answers: [], timedOut: false, cancelled: true };
  return { answers: (context.links ?? []).map((link) => answer[`link-${link.index}`] || "hold"), timedOut: false };
}

/**
 * Whether a psionic creature joins, by its own choice, the defense of an ally under
 * psionic attack (power-pool's Imagination Swarm, RULES.md §3.3); closes itself after
 * `timeoutMs`. Only Join is a yes, for the defense picked among `context.groups` (the
 * only one when there is one): Stay out, closing the window and the timeout all stay out.
 * @param {{context:{groups:{value:string}[]}, timeoutMs:number}} opts
 * @returns {Promise<{join:string|null, timedOut:boolean, cancelled?:boolean}>}
 */
export async function joinDialog({ context, timeoutMs }) {
  const answer = await timedWait({
    title: "MINDSCAPE.Join.Title",
    icon: "fas fa-users",
    template: "join-dialog",
    context,
    ok: "MINDSCAPE.Join.Join",
    okIcon: "fas fa-users",
    cancel: "MINDSCAPE.Join.StayOut",
  }, timeoutMs);
  if (answer === TIMED_OUT) return { join: null, timedOut: true };
  if (!answer) return { join: null, timedOut: false, cancelled: true };
  return { join: typeof answer.join === "string" && answer.join ? answer.join : null, timedOut: false };
}

/**
 * Physical dice: ask for exactly the dice the daemon needs.
 * @param {{purpose:string, sides:number, needed:number, purposeLabel:string}} need
 * @returns {Promise<number[]|null>}
 */
export async function diceDialog(need) {
  const t = i18n();
  const context = { ...need, slots: Array.from({ length: need.needed }, (_, i) => ({ index: i + 1 })) };
  for (;;) {
    const form = await wait({
      title: "MINDSCAPE.Dice.Title",
      icon: "fas fa-dice",
      template: "dice-prompt",
      context,
      ok: "MINDSCAPE.Dice.Use",
      okIcon: "fas fa-dice-d20",
    });
    if (!form) return null;
    const values = Object.keys(form).filter((k) => k.startsWith("die-")).sort((a, b) => parseInt(a.slice(4), 10) - parseInt(b.slice(4), 10)).map((k) => Number(form[k]));
    const problem = checkDieValues(values, need.sides, need.needed);
    if (!problem) return values;
    context.problem = t.format(problem, { sides: need.sides, needed: need.needed });
  }
}

/**
 * The psionic profile editor (fields from the system's combatant schema). Asked again
 * after a refusal (`context.previous`), the form is filled in as it was submitted.
 */
export function profileDialog({ context }) {
  const render = context.previous ? (root) => fillForm(root, context.previous) : undefined;
  return wait({ title: "MINDSCAPE.Profile.Title", icon: "fas fa-brain", template: "profile", context, ok: "MINDSCAPE.Profile.Save", width: 520, render });
}

/** House rules of the world's system. */
export function houseRulesDialog({ context }) {
  return wait({ title: "MINDSCAPE.HouseRules.Title", icon: "fas fa-scroll", template: "house-rules", context, ok: "MINDSCAPE.Save", width: 560 });
}

/**
 * One combatant's secret choice for an encounter step; closes itself after `timeoutMs`
 * (the GM then stops waiting for it) or once `replaced` settles (a newer question for
 * the same combatant took its place). The form, or null: Cancel, closed, the timeout,
 * replaced.
 * @param {{context:object, timeoutMs:number, replaced?:Promise<unknown>|null}} opts
 * @returns {Promise<object|null>}
 */
export async function encounterChoiceDialog({ context, timeoutMs, replaced = null }) {
  const render = (root) => {
    // Asked again after a refusal: the choice refused is filled in, to be put right.
    if (context.previous) fillForm(root, context.previous);
    followTarget(root);
  };
  const answer = await timedWait({ title: "MINDSCAPE.Encounter.ChoiceTitle", icon: "fas fa-user-secret", template: "encounter-choice", context, ok: "MINDSCAPE.Encounter.Declare", render }, timeoutMs, replaced);
  return answer && typeof answer === "object" ? answer : null;
}

/**
 * The GM's public action for one encounter combatant (power-pool: rest, pass, release,
 * keep, lost sight); not timed, as nobody waits for it. The form, or null.
 * @param {{context:object}} opts
 */
export function encounterActionDialog({ context }) {
  return wait({ title: "MINDSCAPE.Encounter.ActionTitle", icon: "fas fa-hand-paper", template: "encounter-action", context, ok: "MINDSCAPE.Encounter.Declare" });
}

/**
 * power-pool's choice dialog: a psionic wave's further targets are the creatures beside
 * the one chosen as its target, so that one is not offered among them: hidden and
 * unticked while it is the target (the list itself hidden when nobody else is left).
 */
export function followTarget(root) {
  const target = root?.querySelector?.("select[name=target]");
  const list = root?.querySelector?.(".mindscape-wave-targets");
  const boxes = [...(list?.querySelectorAll?.("input[name=waveTargets]") ?? [])];
  if (!target || !boxes.length) return;
  const update = () => {
    for (const box of boxes) {
      const isTarget = box.value === target.value;
      if (isTarget) box.checked = false;
      (box.closest?.("label") ?? box).hidden = isTarget;
    }
    list.hidden = boxes.every((box) => box.value === target.value);
  };
  target.addEventListener("change", update);
  update();
}

/**
 * Put `values` (a form as `readForm` read it) back into the fields under `root`: a
 * select takes a value only when it offers it, checkboxes and radios are checked by
 * their values; hidden fields keep their own (the phase the dialog was made for).
 */
export function fillForm(root, values) {
  if (!root?.querySelectorAll || !values || typeof values !== "object") return;
  for (const el of root.querySelectorAll("input, select, textarea")) {
    if (!el.name || !Object.hasOwn(values, el.name) || el.type === "hidden") continue;
    const value = values[el.name];
    if (el.type === "checkbox") el.checked = Array.isArray(value) ? value.includes(el.value) : Boolean(value);
    else if (el.type === "radio") el.checked = el.value === String(value);
    else if (el.tagName === "SELECT") {
      if ([...el.options].some((o) => o.value === String(value))) el.value = String(value);
    } else el.value = String(value ?? "");
  }
}

/**
 * A psionic rest: the whole hours of rest when the system's rest takes them (asked again,
 * with the problem, until they are whole hours in range), else a confirmation of one
 * long rest.
 * @param {{context:{askHours:boolean, min?:number, max?:number, value?:number, names:string, systemLabel:string}}} opts
 * @returns {Promise<{hours?:number}|null>}  `{hours}`, `{}` for a confirmed long rest, null when cancelled
 */
export async function restDialog({ context }) {
  const t = i18n();
  const ctx = { ...context, problem: null };
  for (;;) {
    const form = await wait({ title: "MINDSCAPE.Rest.Title", icon: "fas fa-bed", template: "rest-dialog", context: ctx, ok: "MINDSCAPE.Rest.Go", okIcon: "fas fa-bed" });
    if (!form) return null;
    if (!ctx.askHours) return {};
    const hours = restHours(form.hours, { min: ctx.min, max: ctx.max });
    if (hours !== null) return { hours };
    ctx.value = form.hours;
    ctx.problem = t.format("MINDSCAPE.Rest.HoursInvalid", { min: ctx.min, max: ctx.max });
  }
}
