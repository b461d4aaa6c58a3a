// The encounter panel's buttons run once per press, whatever the mouse does: ApplicationV2
// runs an action's handler on every click, so a double click on Undo step took back two
// steps, on Resolve anyway resolved a second round nobody chose for, on Create from
// selected tokens made two encounters. Now an action's button is disabled and a second
// click ignored while it runs, a create asked while one runs is that one, and Resolve
// and Undo name the revision the panel shows (API.md: a stale one is 4009), so a step
// the GM did not see is never taken (docs/FOUNDRY.md, "Encounters").
import { test } from "node:test";
import assert from "node:assert/strict";
import { makeEncounterPanel } from "../mindscape/scripts/encounter.js";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";

/** Foundry's ApplicationV2 as far as the panel needs it: its actions, its render. */
class ApplicationV2 {
  constructor() { this.options = { ...this.constructor.DEFAULT_OPTIONS, actions: { ...this.constructor.DEFAULT_OPTIONS.actions } }; }
  async render() { this.context = await this._prepareContext(); this._onRender?.(); return this; }
  async close() { this.closed = true; }
}
const FOUNDRY = { applications: { api: { ApplicationV2, HandlebarsApplicationMixin: (Base) => class extends Base {} } } };
class FakeWS { send() {} close() {} }

/** A table with an encounter of Ulcen and Fenka, and the GM's panel drawn. */
async function panelTable(overrides = {}) {
  const { methods, enc } = encounterMethods(overrides);
  const t = makeTable({ methods });
  const svc = t.clients.gm.svc;
  svc.env.WebSocket = FakeWS;
  await svc.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
  const panel = new (makeEncounterPanel(FOUNDRY, svc))();
  await panel.render();
  /** Press the panel's button `action` (its element a stand-in with `disabled`). */
  const button = (action) => ({ dataset: { action }, disabled: false });
  const press = (action, target = button(action)) => panel.options.actions[action].call(panel, { type: "click" }, target);
  return { t, svc, enc, panel, press, button, calls: (method) => t.daemon.calls.filter((c) => c.method === method) };
}

test("a double click on Undo step takes back one step, naming the revision the panel showed", async () => {
  let undone = 0;
  const { enc, panel, press, button, calls } = await panelTable({
    "encounter.undo": ({ revision }) => {
      if (revision !== undefined && revision !== enc.revision) throw { code: 4009, message: "Stale revision", data: { revision: enc.revision } };
      enc.revision++;
      undone++;
      return { revision: enc.revision, undone: enc.revision - 2, updates: [] };
    },
  });
  const shown = panel.shownRevision;
  assert.equal(shown, enc.revision);
  const target = button("undo");
  const first = press("undo", target);
  assert.equal(target.disabled, true, "the button is disabled while its action runs");
  assert.equal(panel.context.busy?.undo, undefined);
  await Promise.all([first, press("undo", target)]);
  assert.equal(undone, 1);
  assert.deepEqual(calls("encounter.undo").map((c) => c.params.revision), [shown]);
  assert.equal(target.disabled, false);
  // Pressed again on a panel that shows an older revision: the companion refuses it (4009), nothing is undone, the GM is told.
  panel.shownRevision = shown;
  await press("undo");
  assert.equal(undone, 1);
});

test("a double click on Resolve anyway resolves one round; a resolve of a revision the encounter left is refused and the GM told", async () => {
  const { t, svc, enc, panel, press, calls } = await panelTable();
  const ctl = svc.encounters;
  await ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
  await panel.render();
  const round = enc.round;
  await Promise.all([press("force"), press("force")]);
  assert.equal(enc.round, round + 1, "one round went by");
  assert.equal(calls("encounter.resolve").length, 1);
  assert.equal(calls("encounter.resolve")[0].params.revision, panel.shownRevision - 1, "the revision shown (refreshing changed nothing)");
  // The panel showed revision 3 and the encounter moved on: nothing is resolved.
  panel.shownRevision = 3;
  await press("force");
  assert.equal(calls("encounter.resolve").length, 1);
  assert.equal(enc.round, round + 1);
  assert.match(t.clients.gm.notes.error.at(-1), /^The encounter changed meanwhile \(now at revision \d+\)\. The panel has been refreshed; try again\.$/);
  assert.equal(panel.shownRevision, enc.revision, "and the panel shows it again");
});

test("the refresh before a resolve moves the revision on by its own steps: the resolve expects the last of them", async () => {
  const { t, svc, enc, calls } = await panelTable();
  const shown = enc.revision;
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 33 });
  await svc.encounters.resolve({ force: true, revision: shown });
  assert.equal(calls("encounter.resolve")[0].params.revision, shown + 1);
});

test("a double click on Create from selected tokens makes one encounter", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  const tokens = [t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid];
  const [a, b] = await Promise.all([ctl.create(tokens, "Duel"), ctl.create(tokens, "Duel")]);
  assert.equal(a, b);
  assert.equal(t.daemon.calls.filter((c) => c.method === "encounter.create").length, 1);
  assert.equal(t.daemon.calls.filter((c) => c.method === "encounter.add").length, 2);
  // Later, pressed again, it creates another as before.
  await ctl.create(tokens, "Duel 2");
  assert.equal(t.daemon.calls.filter((c) => c.method === "encounter.create").length, 2);
});
