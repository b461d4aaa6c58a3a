// An encounter's secret choice is a timed question like a defense (docs/FOUNDRY.md,
// "Encounters"): its dialog closes itself at the world's defense timeout, the GM waits
// that long and the grace, a choice that still comes after is not declared and its
// owner is told so, and a second Ask for choices replaces a question still open on a
// player's screen instead of stacking a second dialog.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";
import { makeI18n, tick } from "../test-support/fakes.mjs";
import * as dialogs from "../mindscape/scripts/dialogs.js";

const CHOICE = { phase: "round", attackMode: "ego-whip", target: "fenka-tokF", multiplier: "1", range: "short", defenseMode: "" };

/**
 * An encounter of Ulcen and Fenka whose choices the GM has asked for, waiting 100 ms (a
 * stand-in for the world's timeout, with no grace): Fenka's player answers at once,
 * Ulcen's 300 ms after being asked, with what `late(question)` gives.
 */
async function askedWithOneLate(late) {
  const { methods, enc } = encounterMethods();
  const t = makeTable({ methods, dialogs: {
    p1: { encounterChoiceDialog: async (arg) => { const answer = late(arg); await new Promise((r) => setTimeout(r, 300)); return answer; } },
    p2: { encounterChoiceDialog: { phase: "round", attackMode: "", defenseMode: "mind-blank" } },
  } });
  const gm = t.clients.gm.svc;
  gm.defenseTimeoutS = () => 0.1;
  gm.defenseGraceMs = 0;
  await gm.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  await gm.encounters.collectChoices();
  return { t, enc };
}

test("a choice made after the GM stopped waiting is not declared, and its owner is told", async () => {
  let asked = null;
  const { t, enc } = await askedWithOneLate((arg) => { asked = arg; return CHOICE; });
  // The question carries its deadline, as the other timed questions do.
  assert.equal(asked.timeoutMs, 100);
  assert.equal(asked.context.timeoutMs, 100);
  assert.equal(asked.context.seconds, 0);
  await new Promise((r) => setTimeout(r, 500));
  await tick(20);
  assert.ok(!enc.choices.has("ulcen"), "the late choice was not declared");
  assert.ok(enc.choices.has("fenka-tokF"), "the choice in time was");
  assert.deepEqual(t.clients.p1.notes.warn, ["Your choice for Ulcen of Tyr came after the GM stopped waiting for it, so it was not declared. The GM may ask again."]);
  assert.deepEqual(t.clients.p2.notes.warn, []);
});

test("a question that closes after the GM stopped waiting without a choice made tells its owner nothing", async () => {
  const { t, enc } = await askedWithOneLate(() => null);
  await new Promise((r) => setTimeout(r, 500));
  await tick(20);
  assert.ok(!enc.choices.has("ulcen"));
  assert.deepEqual(t.clients.p1.notes.warn, []);
});

/** A DialogV2 stand-in that opens every dialog and leaves it open until closed. */
function openDialogs() {
  const instances = new Map();
  const opened = [];
  class DialogV2 {
    static wait({ render }) {
      return new Promise((resolve) => {
        const id = `dialog-${opened.length + 1}`;
        const app = { id, closed: false, element: { id }, async close() { app.closed = true; instances.delete(id); resolve(null); } };
        instances.set(id, app);
        opened.push(app);
        render?.({}, app);
      });
    }
  }
  globalThis.game = { i18n: makeI18n() };
  globalThis.foundry = { applications: { instances, api: { DialogV2 }, handlebars: { renderTemplate: async () => "" } } };
  return opened;
}

test("the choice dialog closes itself at the timeout and answers no choice", async () => {
  const opened = openDialogs();
  const started = Date.now();
  const answer = await Promise.race([dialogs.encounterChoiceDialog({ context: {}, timeoutMs: 200 }), new Promise((r) => setTimeout(() => r("STILL OPEN"), 3000))]);
  assert.equal(answer, null);
  assert.ok(Date.now() - started < 2000);
  assert.equal(opened[0].closed, true);
});

test("a second question for the same combatant replaces the first on the player's screen: one dialog open", async () => {
  const opened = openDialogs();
  const t = makeTable();
  const svc = t.clients.p1.svc;
  svc.env.dialogs = dialogs;
  const first = svc.chooseEncounterHere({ combatantId: "ulcen", timeoutMs: 5000 });
  await tick();
  const second = svc.chooseEncounterHere({ combatantId: "ulcen", timeoutMs: 5000 });
  assert.equal(await first, null);
  assert.equal(opened[0].closed, true);
  assert.equal(opened[1].closed, false);
  // Another combatant's question stays beside it.
  const other = svc.chooseEncounterHere({ combatantId: "fenka-tokF", timeoutMs: 5000 });
  await tick();
  assert.equal(opened[1].closed, false);
  await opened[1].close();
  await opened[2].close();
  assert.equal(await second, null);
  assert.equal(await other, null);
});

test("a third question for the same combatant replaces the second too, once the first has closed: one dialog open", async () => {
  const t = makeTable();
  const svc = t.clients.p1.svc;
  const open = new Set();
  svc.env.dialogs = { ...svc.env.dialogs, encounterChoiceDialog: ({ context, replaced }) => { open.add(context.n); return replaced.then(() => { open.delete(context.n); return null; }); } };
  for (const n of [1, 2, 3]) {
    svc.chooseEncounterHere({ combatantId: "ulcen", n });
    await tick();
  }
  assert.deepEqual([...open], [3]);
});

test("an Ask for choices while the questions of an earlier one are still open asks nobody again: one question on each owner's screen, each choice declared once", async () => {
  const { methods } = encounterMethods();
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  const t = makeTable({ methods, dialogs: {
    p1: { encounterChoiceDialog: async () => { await answered; return CHOICE; } },
    p2: { encounterChoiceDialog: async () => { await answered; return { phase: "round", attackMode: "", defenseMode: "mind-blank" }; } },
  } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  const questions = () => [t.clients.p1, t.clients.p2].map((c) => c.dialogs.seen.filter((s) => s.kind === "encounterChoiceDialog").length);
  const first = ctl.collectChoices();
  while (questions().some((n) => n === 0)) await tick(1);
  // Asked again (a macro, say) while both questions are open: nobody is asked, nothing declared.
  assert.deepEqual(await ctl.collectChoices(), [null, null]);
  answer();
  assert.equal((await first).filter(Boolean).length, 2);
  assert.deepEqual(questions(), [1, 1]);
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "encounter.declare").map((c) => c.params.combatant_id).sort(), ["fenka-tokF", "ulcen"]);
});
