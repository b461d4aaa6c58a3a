// The dialogs against a DialogV2 that answers as Foundry's does: DialogV2#_onSubmit
// resolves `wait` to `(await button.callback(...)) ?? button.action`, so a Cancel button
// whose callback returns null answers the string "cancel". v12 hands the render callback
// `dialog.element` (a <dialog>, whose own close() does not close the application); v13
// hands the application.
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { makeI18n } from "../test-support/fakes.mjs";
import * as dialogs from "../mindscape/scripts/dialogs.js";

/** A DialogV2 stand-in: `press` picks the button ("ok", "cancel") or null to leave it open. */
function installDialogV2({ press = "cancel", form = null, generation = 13 } = {}) {
  const instances = new Map();
  const opened = [];
  class FakeDialogElement {
    constructor(id) { this.id = id; this.tagName = "DIALOG"; this.open = true; }
    close() { this.open = false; } // native <dialog>.close(): hides, closes no application
    querySelector() { return stub(); }
    addEventListener() {}
  }
  // Just enough of an element for the dialogs' render callbacks.
  const stub = () => ({ classList: { add() {}, remove() {} }, innerHTML: "", textContent: "", form: null, elements: [], append() {}, addEventListener() {}, querySelector: () => null });
  class DialogV2 {
    static wait({ buttons, render }) {
      return new Promise((resolve) => {
        const id = `dialog-${opened.length + 1}`;
        const app = {
          id, element: new FakeDialogElement(id), closed: false,
          async close() { app.closed = true; instances.delete(id); resolve(null); },
        };
        instances.set(id, app);
        opened.push(app);
        render?.({}, generation >= 13 ? app : app.element);
        if (!press) return;
        const button = buttons.find((b) => b.action === press);
        Promise.resolve(button?.callback?.({}, { form }, app.element)).then((r) => { app.closed = true; resolve(r ?? button?.action); });
      });
    }
  }
  globalThis.foundry = { applications: { instances, api: { DialogV2 }, handlebars: { renderTemplate: async () => "" } } };
  return { instances, opened };
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
