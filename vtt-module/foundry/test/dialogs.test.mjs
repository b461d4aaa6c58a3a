// The dialogs against a DialogV2 that answers as Foundry's does: DialogV2#_onSubmit
// resolves `wait` to `(await button.callback(...)) ?? button.action`, so a Cancel button
// whose callback returns null answers the string "cancel". v12 hands the render callback
// `dialog.element` (a <dialog>, whose own close() does not close the application); v13
// hands the application.
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { makeI18n } from "../test-support/fakes.mjs";
import * as dialogs from "../mindscape/scripts/dialogs.js";

/**
 * A DialogV2 stand-in: `press` picks the button ("ok", "cancel"), "close" closes the window
 * (rejecting as Foundry does unless `rejectClose` is false), null leaves it open. `rendered`
 * holds the context of each template rendered.
 */
function installDialogV2({ press = "cancel", form = null, generation = 13 } = {}) {
  const instances = new Map();
  const opened = [];
  const rendered = [];
  class FakeDialogElement {
    constructor(id) { this.id = id; this.tagName = "DIALOG"; this.open = true; }
    close() { this.open = false; } // native <dialog>.close(): hides, closes no application
    querySelector() { return stub(); }
    addEventListener() {}
  }
  // Just enough of an element for the dialogs' render callbacks.
  const stub = () => ({ classList: { add() {}, remove() {} }, innerHTML: "", textContent: "", form: null, elements: [], append() {}, addEventListener() {}, querySelector: () => null });
  class DialogV2 {
    static wait({ buttons, render, rejectClose = true }) {
      return new Promise((resolve, reject) => {
        const id = `dialog-${opened.length + 1}`;
        const app = {
          id, element: new FakeDialogElement(id), closed: false, buttons,
          async close() { app.closed = true; instances.delete(id); if (rejectClose) reject(new Error("Dialog was dismissed without pressing a button.")); else resolve(null); },
        };
        instances.set(id, app);
        opened.push(app);
        render?.({}, generation >= 13 ? app : app.element);
        if (!press) return;
        if (press === "close") return void app.close();
        const button = buttons.find((b) => b.action === press);
        Promise.resolve(button?.callback?.({}, { form }, app.element)).then((r) => { app.closed = true; resolve(r ?? button?.action); });
      });
    }
  }
  const renderTemplate = async (_path, context) => { rendered.push(context); return ""; };
  globalThis.foundry = { applications: { instances, api: { DialogV2 }, handlebars: { renderTemplate } } };
  return { instances, opened, rendered };
}

beforeEach(() => {
  globalThis.game = { i18n: makeI18n() };
  globalThis.CSS = globalThis.CSS ?? { escape: (s) => s };
});

test("Cancel answers null in every dialog that returns a form (Foundry resolves it to \"cancel\")", async () => {
  installDialogV2({ press: "cancel" });
  assert.equal(await dialogs.pairingDialog({ url: "http://127.0.0.1:39393", token: "tok", test: async () => "" }), null);
  assert.equal(await dialogs.attackDialog({ context: {}, oddsFor: async () => ({}) }).catch(() => "render failed"), null);
  assert.equal(await dialogs.profileDialog({ context: {} }), null);
  assert.equal(await dialogs.houseRulesDialog({ context: {} }), null);
  assert.equal(await dialogs.encounterChoiceDialog({ context: {} }), null);
  assert.equal(await dialogs.diceDialog({ purpose: "attack", sides: 20, needed: 1 }), null);
});

test("a non-object result (any button's action string) is no form either", async () => {
  installDialogV2({ press: "ok" });
  // readForm of a missing form gives {}: a form object, passed through.
  assert.deepEqual(await dialogs.profileDialog({ context: {} }), {});
  installDialogV2({ press: "cancel" });
  assert.equal(await dialogs.wait({ title: "x", template: "profile", context: {}, ok: "MINDSCAPE.Save" }), null);
});

test("Cancel in the defense dialog is no answer: the remembered default, nothing remembered", async () => {
  installDialogV2({ press: "cancel" });
  const answer = await dialogs.defenseDialog({ context: {}, timeoutMs: 5000, fallback: "mind-blank" });
  assert.deepEqual(answer, { mode: "mind-blank", remember: false, timedOut: false, cancelled: true });
  const none = await dialogs.defenseDialog({ context: {}, timeoutMs: 5000, fallback: null });
  assert.equal(none.mode, null);
});

for (const generation of [12, 13]) {
  test(`v${generation}: the defense dialog closes its application at the timeout and answers the default`, async () => {
    const { opened } = installDialogV2({ press: null, generation });
    const started = Date.now();
    const answer = await Promise.race([
      dialogs.defenseDialog({ context: {}, timeoutMs: 300, fallback: "mind-blank" }),
      new Promise((r) => setTimeout(() => r("STILL PENDING"), 3000)),
    ]);
    assert.deepEqual(answer, { mode: "mind-blank", remember: false, timedOut: true });
    assert.ok(Date.now() - started < 2000);
    // The application itself was closed, not just its <dialog> element hidden.
    assert.equal(opened[0].closed, true);
  });
}

test("appOf finds the application from v12's <dialog> element and from v13's application", () => {
  const { instances } = installDialogV2();
  const app = { id: "dialog-9", element: { id: "dialog-9", tagName: "DIALOG", close() {} }, close() {} };
  instances.set("dialog-9", app);
  assert.equal(dialogs.appOf(app.element), app);
  assert.equal(dialogs.appOf(app), app);
  assert.equal(dialogs.appOf({ id: "unknown", tagName: "DIALOG", close() {} }), null);
});

test("the defense dialog answers at the timeout even when its window never renders", async () => {
  globalThis.foundry = { applications: { instances: new Map(), api: { DialogV2: { wait: () => new Promise(() => {}) } }, handlebars: { renderTemplate: async () => "" } } };
  const answer = await dialogs.defenseDialog({ context: {}, timeoutMs: 100, fallback: null });
  assert.deepEqual(answer, { mode: null, remember: false, timedOut: true });
});

test("the close dialog: Pay answers yes; Cancel (Do not pay) or closing the window answers no", async () => {
  installDialogV2({ press: "ok" });
  assert.deepEqual(await dialogs.closeDialog({ context: {}, timeoutMs: 5000 }), { close: true, timedOut: false });
  installDialogV2({ press: "cancel" });
  assert.deepEqual(await dialogs.closeDialog({ context: {}, timeoutMs: 5000 }), { close: false, timedOut: false, cancelled: true });
});

for (const generation of [12, 13]) {
  test(`v${generation}: the close dialog closes its application at the timeout and answers no`, async () => {
    const { opened } = installDialogV2({ press: null, generation });
    const answer = await Promise.race([
      dialogs.closeDialog({ context: {}, timeoutMs: 300 }),
      new Promise((r) => setTimeout(() => r("STILL PENDING"), 3000)),
    ]);
    assert.deepEqual(answer, { close: false, timedOut: true });
    assert.equal(opened[0].closed, true);
  });
}

test("the attack dialog disables Attack while the odds are refused for the attacker's own sake, and follows a wave's odds of all targets", async () => {
  const made = [];
  globalThis.document = { createElement: (tag) => { const el = { tag, className: "", textContent: "" }; made.push(el); return el; } };
  const ok = { disabled: false };
  const target = { disabled: false };
  const panel = { classList: { add() {}, remove() {} }, innerHTML: "", shown: [], append(el) { this.shown.push(el); } };
  const form = { elements: Object.assign([], { namedItem: (name) => (name === "target" ? target : null) }) };
  const listeners = [];
  const root = {
    querySelector: (selector) => ({ "[name=mode]": { form }, ".mindscape-odds": panel, 'button[data-action="ok"]': ok })[selector] ?? null,
    addEventListener: (_type, fn) => listeners.push(fn),
  };
  globalThis.foundry = { applications: { instances: new Map(), api: { DialogV2: { wait: ({ render }) => { render({}, { element: root }); return new Promise(() => {}); } } }, handlebars: { renderTemplate: async () => "<table></table>" } } };
  const answers = [
    Promise.reject(Object.assign(new Error("refused"), { userMessage: "The rules forbid this (not-enough-psp): Ulcen needs 8 PSPs", blocksAttack: true })),
    Promise.resolve({ outcomes: [], group: "Fenka, Goblin" }),
    Promise.reject(Object.assign(new Error("hidden"), { userMessage: "No odds for this choice", blocksAttack: false })),
  ];
  answers[0].catch(() => {});
  answers[2].catch(() => {});
  dialogs.attackDialog({ context: {}, oddsFor: () => answers.shift() });
  const settle = () => new Promise((resolve) => setTimeout(resolve, 10));
  await settle();
  assert.equal(ok.disabled, true);
  assert.deepEqual(panel.shown.map((el) => [el.className, el.textContent]), [
    ["mindscape-status error", "The rules forbid this (not-enough-psp): Ulcen needs 8 PSPs"],
    ["hint mindscape-attack-blocked", "Attack stays unavailable until the attack is changed: the companion refuses it for the attacker's own sake, whatever the defender does."],
  ]);
  // Changed, the attack gets its odds again: a psionic wave's, of every target at once.
  listeners[0]();
  await settle();
  assert.equal(ok.disabled, false);
  assert.equal(target.disabled, true);
  // A refusal that is not the attacker's (a mind struck, hidden or not) leaves Attack alone.
  panel.shown = [];
  listeners[0]();
  await settle();
  assert.equal(ok.disabled, false);
  assert.deepEqual(panel.shown.map((el) => el.className), ["mindscape-status error"]);
  delete globalThis.document;
});

test("a dialog's content goes to v13's DialogV2 as an element, which Foundry does not clean, and to v12's as the string", () => {
  const doc = { createElement: (tag) => ({ tagName: tag.toUpperCase(), innerHTML: "" }) };
  const html = '<select name="mode" data-mindscape-mode="1"></select>';
  assert.equal(dialogs.dialogContent(html, 12, doc), html);
  const element = dialogs.dialogContent(html, 13, doc);
  assert.deepEqual([element.tagName, element.innerHTML], ["DIV", html]);
  assert.equal(dialogs.dialogContent(html, 14, doc).innerHTML, html);
  // Without a document (or a release) there is nothing to build an element with.
  assert.equal(dialogs.dialogContent(html, 13, undefined), html);
  assert.equal(dialogs.dialogContent(html, undefined, doc), html);
});

/** A submitted form as readForm reads it: `fields` are {name, type, value, checked, list}. */
function fakeForm(fields) {
  const elements = fields.map(({ list, ...f }) => ({ type: "text", tagName: "INPUT", dataset: list ? { list: "" } : {}, ...f }));
  return {
    elements,
    querySelectorAll: (selector) => elements.filter((el) => el.type === "checkbox" && selector.includes(`name="${el.name}"`)),
  };
}

test("closing a dialog's window answers null, as Cancel does: the dialog never asks Foundry to reject", async () => {
  installDialogV2({ press: "close" });
  assert.equal(await dialogs.profileDialog({ context: {} }), null);
  assert.deepEqual(await dialogs.closeDialog({ context: {}, timeoutMs: 5000 }), { close: false, timedOut: false, cancelled: true });
});

test("the confirming button is the default one (Enter submits the choice), Cancel is not", async () => {
  const { opened } = installDialogV2({ press: "cancel" });
  await dialogs.houseRulesDialog({ context: {} });
  assert.deepEqual(opened[0].buttons.map((b) => [b.action, Boolean(b.default)]), [["ok", true], ["cancel", false]]);
});

test("each dialog's template gets its own id prefix, so that two open dialogs never share an element id", async () => {
  const { rendered } = installDialogV2({ press: "cancel" });
  await dialogs.profileDialog({ context: { name: "Ulcen" } });
  await dialogs.profileDialog({ context: { name: "Fenka" } });
  assert.deepEqual(rendered.map((c) => c.name), ["Ulcen", "Fenka"]);
  assert.match(rendered[0].uid, /^mindscape-\d+$/);
  assert.notEqual(rendered[0].uid, rendered[1].uid);
});

test("the defense dialog's answer: no mode ticked is no defense, allies are the ticked uuids, remember only when ticked", async () => {
  installDialogV2({ press: "ok", form: fakeForm([
    { name: "mode", type: "radio", value: "imagination-swarm", checked: false },
    { name: "allies", type: "checkbox", value: "Actor.skum", checked: true, list: true },
    { name: "allies", type: "checkbox", value: "Actor.spawn", checked: false, list: true },
    { name: "remember", type: "checkbox", value: "on", checked: false },
  ]) });
  assert.deepEqual(await dialogs.defenseDialog({ context: {}, timeoutMs: 5000, fallback: "mind-blank" }),
    { mode: null, sacrifice: undefined, allies: ["Actor.skum"], remember: false, timedOut: false });
  installDialogV2({ press: "ok", form: fakeForm([
    { name: "mode", type: "radio", value: "mind-blank", checked: true },
    { name: "remember", type: "checkbox", value: "on", checked: true },
  ]) });
  assert.deepEqual(await dialogs.defenseDialog({ context: {}, timeoutMs: 5000, fallback: null }),
    { mode: "mind-blank", sacrifice: undefined, allies: [], remember: true, timedOut: false });
});

test("the control dialog: Confirm answers each link's choice in order, a link with none holds; the timeout answers nothing", async () => {
  const links = [{ index: 0 }, { index: 1 }, { index: 2 }];
  installDialogV2({ press: "ok", form: fakeForm([
    { name: "link-0", type: "radio", value: "release", checked: true },
    { name: "link-2", type: "radio", value: "keep", checked: true },
  ]) });
  assert.deepEqual(await dialogs.controlDialog({ context: { links }, timeoutMs: 5000 }), { answers: ["release", "hold", "keep"], timedOut: false });
  installDialogV2({ press: "cancel" });
  assert.deepEqual(await dialogs.controlDialog({ context: { links }, timeoutMs: 5000 }), { answers: [], timedOut: false, cancelled: true });
  installDialogV2({ press: null });
  assert.deepEqual(await dialogs.controlDialog({ context: { links }, timeoutMs: 100 }), { answers: [], timedOut: true });
});

test("the join dialog: Join answers the defense picked, none picked stays out; the timeout stays out", async () => {
  installDialogV2({ press: "ok", form: fakeForm([{ name: "join", type: "radio", value: "1", checked: true }]) });
  assert.deepEqual(await dialogs.joinDialog({ context: {}, timeoutMs: 5000 }), { join: "1", timedOut: false });
  installDialogV2({ press: "ok", form: fakeForm([{ name: "join", type: "hidden", value: "" }]) });
  assert.deepEqual(await dialogs.joinDialog({ context: {}, timeoutMs: 5000 }), { join: null, timedOut: false });
  installDialogV2({ press: null });
  assert.deepEqual(await dialogs.joinDialog({ context: {}, timeoutMs: 100 }), { join: null, timedOut: true });
});

test("the dice dialog offers a field per die numbered from 1, answers the dice in their order past nine, and asks again with the problem", async () => {
  const values = [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6];
  const { rendered } = installDialogV2({ press: "ok", form: fakeForm(values.map((v, i) => ({ name: `die-${i + 1}`, type: "number", value: String(v) }))) });
  assert.deepEqual(await dialogs.diceDialog({ purpose: "damage", sides: 6, needed: 12 }), values);
  assert.deepEqual(rendered[0].slots.map((s) => s.index), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  // A die out of range: asked again, the problem shown; Cancel then answers no dice.
  let asked = 0;
  const { rendered: again } = installDialogV2({ press: "ok", form: fakeForm([{ name: "die-1", type: "number", value: "9" }]) });
  const wait = globalThis.foundry.applications.api.DialogV2.wait;
  globalThis.foundry.applications.api.DialogV2.wait = (options) => (++asked === 1 ? wait(options) : Promise.resolve("cancel"));
  assert.equal(await dialogs.diceDialog({ purpose: "attack", sides: 6, needed: 1 }), null);
  assert.equal(asked, 2);
  assert.equal(again.length, 2);
  assert.equal(again[0].problem, undefined);
  assert.ok(again[1].problem, "the second asking shows the problem");
});

/**
 * A DialogV2 that renders `root` (as v13's application holding it) and then answers
 * `answer`, or never when `answer` is "never"; `view` renders a template's context.
 */
function installRendering(root, { answer = null, view = () => "" } = {}) {
  const wait = ({ render }) => {
    render?.({}, { element: root });
    return answer === "never" ? new Promise(() => {}) : Promise.resolve(answer);
  };
  globalThis.foundry = { applications: { instances: new Map(), api: { DialogV2: { wait } }, handlebars: { renderTemplate: async (_path, context) => view(context) } } };
}

/** A field under a fake root: what fillForm reads and sets. */
const field = (name, type, value, more = {}) => ({ name, type, value, checked: false, tagName: type === "select" ? "SELECT" : "INPUT", ...more });

test("a form asked again is filled in as submitted: radios and checkboxes by value, a select only with a value it offers, hidden and missing fields kept", () => {
  const fields = {
    modeA: field("mode", "radio", "mind-blank"), modeB: field("mode", "radio", "thought-shield"),
    allyX: field("allies", "checkbox", "Actor.x", { checked: true }), allyY: field("allies", "checkbox", "Actor.y"),
    physical: field("physical", "checkbox", "on"),
    target: field("target", "select", "t1", { options: [{ value: "t1" }, { value: "t2" }] }),
    focus: field("focus", "select", "f1", { options: [{ value: "f1" }, { value: "f2" }] }),
    psp: field("psp", "number", "4"),
    phase: field("phase", "hidden", "defense"),
    note: field("note", "text", "as typed"),
  };
  const root = { querySelectorAll: () => Object.values(fields) };
  dialogs.fillForm(root, { mode: "thought-shield", allies: ["Actor.y"], physical: true, target: "gone", focus: "f2", psp: null, phase: "attack" });
  assert.deepEqual(Object.entries(fields).map(([key, el]) => [key, el.type === "radio" || el.type === "checkbox" ? el.checked : el.value]), [
    ["modeA", false], ["modeB", true], ["allyX", false], ["allyY", true], ["physical", true],
    ["target", "t1"], ["focus", "f2"], ["psp", ""], ["phase", "defense"], ["note", "as typed"],
  ]);
  // Nothing to fill in: nothing changes.
  dialogs.fillForm(root, null);
  assert.equal(fields.note.value, "as typed");
});

test("the profile and encounter choice dialogs asked again after a refusal show the refused form filled in", async () => {
  const name = field("name", "text", "");
  const root = { querySelectorAll: () => [name], querySelector: () => null };
  installRendering(root);
  await dialogs.profileDialog({ context: { previous: { name: "Ulcen of Tyr" } } });
  assert.equal(name.value, "Ulcen of Tyr");
  name.value = "";
  await dialogs.encounterChoiceDialog({ context: { previous: { name: "Fenka" } }, timeoutMs: 5000 });
  assert.equal(name.value, "Fenka");
});

test("power-pool defense: the allies may be picked only while a defense that draws them in is chosen, whichever of several", async () => {
  const listeners = [];
  const fieldset = { dataset: { allyModes: "imagination-swarm,mass-domination" }, disabled: false };
  let chosen = null;
  const root = {
    querySelector: (selector) => ({ ".mindscape-defense-allies": fieldset, "input[name=mode]:checked": chosen })[selector] ?? null,
    addEventListener: (type, fn) => listeners.push(fn),
  };
  installRendering(root, { answer: "never" });
  const answer = dialogs.defenseDialog({ context: { allies: [{ uuid: "Actor.skum", name: "Skum" }] }, timeoutMs: 50, fallback: null });
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(fieldset.disabled, true, "no defense chosen yet");
  for (const [value, disabled] of [["mass-domination", false], ["thought-shield", true], ["imagination-swarm", false]]) {
    chosen = { value };
    for (const fn of listeners) fn();
    assert.equal(fieldset.disabled, disabled, value);
  }
  assert.equal((await answer).timedOut, true);
});

test("v12: a timed dialog whose application cannot be found is still taken off the screen at the timeout", async () => {
  const element = { id: "dialog-lost", tagName: "DIALOG", open: true, close() { this.open = false; }, querySelector: () => null };
  installRendering(element, { answer: "never" });
  globalThis.foundry.applications.api.DialogV2.wait = ({ render }) => { render({}, element); return new Promise(() => {}); };
  assert.deepEqual(await dialogs.closeDialog({ context: {}, timeoutMs: 50 }), { close: false, timedOut: true });
  assert.equal(element.open, false);
});

test("a timed dialog counts its seconds down to 0", async () => {
  const shown = [];
  const seconds = { set textContent(text) { shown.push(text); } };
  const root = { querySelector: (selector) => (selector === ".mindscape-countdown" ? seconds : null) };
  installRendering(root, { answer: "never" });
  assert.deepEqual(await dialogs.joinDialog({ context: {}, timeoutMs: 600 }), { join: null, timedOut: true });
  assert.equal(shown[0], "1");
  assert.equal(shown.at(-1), "0");
});

test("the attack dialog shows the odds of the attack as it is now: an older answer arriving late is dropped and leaves it loading", async () => {
  globalThis.document = { createElement: () => ({ className: "", textContent: "" }) };
  const loading = new Set();
  const panel = { classList: { add: (c) => loading.add(c), remove: (c) => loading.delete(c) }, innerHTML: "", append() {} };
  const listeners = [];
  const root = {
    querySelector: (selector) => ({ ".mindscape-odds": panel })[selector] ?? null,
    querySelectorAll: () => [],
    addEventListener: (_type, fn) => listeners.push(fn),
  };
  installRendering(root, { answer: "never", view: (view) => `<p>${view.mode}</p>` });
  const pending = [];
  dialogs.attackDialog({ context: {}, oddsFor: () => new Promise((resolve, reject) => pending.push({ resolve, reject })) });
  const settle = () => new Promise((resolve) => setTimeout(resolve, 10));
  await settle();
  listeners[0]();
  await settle();
  assert.equal(pending.length, 2);
  pending[0].resolve({ mode: "ego-whip" });
  await settle();
  assert.equal(panel.innerHTML, "");
  assert.equal(loading.has("loading"), true, "still waiting for the attack as it is now");
  pending[1].resolve({ mode: "mind-thrust" });
  await settle();
  assert.equal(panel.innerHTML, "<p>mind-thrust</p>");
  assert.equal(loading.has("loading"), false);
  delete globalThis.document;
});
