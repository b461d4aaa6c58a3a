// Cancel, end to end through the service: the real dialogs.js over a DialogV2 that
// presses Cancel and answers as Foundry's does (`callback() ?? action`, i.e. "cancel").
// Each caller must then change nothing, or read it as "no choice made".
import { test } from "node:test";
import assert from "node:assert/strict";
import * as realDialogs from "../mindscape/scripts/dialogs.js";
import { makeTable, renderModuleTemplate, defaultMethods } from "../test-support/scenario.mjs";
import { installGlobals } from "../test-support/fakes.mjs";

/** A table whose GM client (and players) use the real dialogs, every one answered with Cancel. */
function cancellingTable(options = {}) {
  const t = makeTable(options);
  const pressed = [];
  class DialogV2 {
    static async wait({ buttons, window }) {
      pressed.push(window?.title);
      const cancel = buttons.find((b) => b.action === "cancel");
      return (await cancel?.callback?.({}, { form: null }, null)) ?? cancel?.action;
    }
  }
  installGlobals(t.clients.gm);
  globalThis.foundry = {
    applications: {
      instances: new Map(),
      api: { DialogV2 },
      handlebars: { renderTemplate: async (path, ctx) => renderModuleTemplate(path.replace(/^.*\/templates\/|\.hbs$/g, ""), ctx) },
    },
  };
  for (const c of Object.values(t.clients)) c.svc.env.dialogs = realDialogs;
  return { t, pressed };
}

test("Cancel in the attack dialog sends no attack", async () => {
  const { t, pressed } = cancellingTable();
  const out = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid] });
  assert.equal(out, null);
  assert.equal(pressed.length, 1);
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "exchange.resolve"), []);
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("Cancel in the profile editor saves nothing", async () => {
  const { t } = cancellingTable();
  const before = structuredClone(t.actors.ulcen.flags);
  assert.equal(await t.clients.gm.svc.configureActor(t.actors.ulcen.uuid), null);
  assert.deepEqual(t.actors.ulcen.flags, before);
  assert.deepEqual(t.actors.ulcen.updates, []);
});

test("Cancel in the house rules keeps the world's house rules", async () => {
  const { t } = cancellingTable();
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-CRIT-MODS": false } });
  assert.equal(await t.clients.gm.svc.openHouseRules(), null);
  assert.deepEqual(t.clients.gm.game.settings.get("mindscape", "houseRules"), { "revised-2e": { "H-2E-CRIT-MODS": false } });
});

test("Cancel in the house rules tells nothing: no error, no notice", async () => {
  const { t } = cancellingTable();
  assert.equal(await t.clients.gm.svc.openHouseRules(), null);
  assert.deepEqual(t.clients.gm.notes, { info: [], warn: [], error: [] });
});

test("pairing again asks the companion anew what its systems and adapters are", async () => {
  const t = makeTable({ dialogs: { gm: { pairingDialog: { url: "http://127.0.0.1:39393", token: "secret-token" } } } });
  const gm = t.clients.gm.svc;
  await gm.describe("revised-2e");
  await gm.adapterId();
  const count = (method) => t.daemon.calls.filter((c) => c.method === method).length;
  const before = [count("systems.describe"), count("adapters.list")];
  await gm.openPairing();
  await gm.describe("revised-2e");
  await gm.adapterId();
  assert.deepEqual([count("systems.describe"), count("adapters.list")], [before[0] + 1, before[1] + 1]);
});

test("Save in the house rules says what was saved: the rules switched from the defaults, or that all are at them", async () => {
  const t = makeTable({ dialogs: { gm: { houseRulesDialog: [{ "H-2E-CRIT-MODS": false }, { "H-2E-CRIT-MODS": true }] } } });
  assert.deepEqual(await t.clients.gm.svc.openHouseRules(), { "H-2E-CRIT-MODS": false });
  assert.deepEqual(await t.clients.gm.svc.openHouseRules(), {});
  assert.deepEqual(t.clients.gm.notes.info, [
    "House rules of AD&D 2e revised psionics (MTHAC0/MAC) saved; changed from its defaults: H-2E-CRIT-MODS.",
    "House rules of AD&D 2e revised psionics (MTHAC0/MAC) saved: all at their defaults.",
  ]);
});

test("a house rule whose value is a number is saved as that number from its list, its default as no change, and the companion is sent the number", async () => {
  // As power-pool's H-PP-BLANK-SAVE: a d20 target from 2 to 20, 15 unless switched; the
  // companion refuses a value of another type than its default's ("12" for 12).
  const describe = defaultMethods()["systems.describe"];
  const rule = { id: "H-PP-BLANK-SAVE", text: "the save's target", default: 15, choices: Array.from({ length: 19 }, (_, i) => i + 2) };
  const methods = defaultMethods({ "systems.describe": (params) => ({ ...describe(params), house_rules: [rule] }) });
  // The form gives a select's value as text.
  const t = makeTable({ methods, dialogs: { gm: { houseRulesDialog: [{ "H-PP-BLANK-SAVE": "12" }, { "H-PP-BLANK-SAVE": "15" }, null] } } });
  const gm = t.clients.gm;
  assert.deepEqual(await gm.svc.openHouseRules(), { "H-PP-BLANK-SAVE": 12 });
  assert.deepEqual(gm.game.settings.get("mindscape", "houseRules"), { "revised-2e": { "H-PP-BLANK-SAVE": 12 } });
  await gm.svc.odds({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.goblinToken.uuid, attack: { mode: "mind-thrust", multiplier: 1, range: "short" } }, gm.game.user);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.odds").params.options, { "H-PP-BLANK-SAVE": 12 });
  // Its default picked again is no change; the dialog opens on it.
  assert.deepEqual(await gm.svc.openHouseRules(), {});
  assert.deepEqual(gm.game.settings.get("mindscape", "houseRules"), { "revised-2e": {} });
  await gm.svc.openHouseRules();
  const opened = gm.dialogs.seen.filter((s) => s.kind === "houseRulesDialog").map((s) => s.arg.context.rules[0]);
  assert.deepEqual(opened.map((r) => [r.value, r.choices.find((c) => c.selected).value]), [[15, "15"], [12, "12"], [15, "15"]]);
  assert.deepEqual(gm.notes.info, [
    "House rules of AD&D 2e revised psionics (MTHAC0/MAC) saved; changed from its defaults: H-PP-BLANK-SAVE.",
    "House rules of AD&D 2e revised psionics (MTHAC0/MAC) saved: all at their defaults.",
  ]);
});

test("the house rules dialog opens on the world's saved choices", async () => {
  const t = makeTable({ dialogs: { gm: { houseRulesDialog: [{ "H-2E-CRIT-MODS": false }, null] } } });
  await t.clients.gm.svc.openHouseRules();
  assert.equal(await t.clients.gm.svc.openHouseRules(), null);
  const opened = t.clients.gm.dialogs.seen.filter((s) => s.kind === "houseRulesDialog");
  const rule = (i) => opened[i].arg.context.rules.find((r) => r.id === "H-2E-CRIT-MODS");
  assert.deepEqual([rule(0).value, rule(0).checked], [true, true]);
  assert.deepEqual([rule(1).value, rule(1).checked], [false, false]);
});

test("saving one system's house rules keeps the other systems'", async () => {
  const t = makeTable({ dialogs: { gm: { houseRulesDialog: { "H-2E-CRIT-MODS": false } } } });
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "power-pool": { "SOME-RULE": true } });
  await t.clients.gm.svc.openHouseRules();
  assert.deepEqual(t.clients.gm.game.settings.get("mindscape", "houseRules"), { "power-pool": { "SOME-RULE": true }, "revised-2e": { "H-2E-CRIT-MODS": false } });
});

test("Test the connection with no token says to paste one, not to open the dialog it is in", async () => {
  const t = makeTable({ dialogs: { gm: { pairingDialog: async ({ test: check }) => {
    const error = await check("http://127.0.0.1:39393", "  ").catch((e) => e);
    t.tested = error.userMessage;
    return null;
  } } } });
  await t.clients.gm.svc.openPairing();
  assert.equal(t.tested, "Paste the companion's token in Token first: run mindscape token on the GM's computer and copy what it prints.");
  assert.equal(t.daemon.calls.length, 0);
});

test("Cancel in the pairing dialog keeps the address and the token", async () => {
  const { t } = cancellingTable();
  assert.equal(await t.clients.gm.svc.openPairing(), null);
  assert.equal(t.clients.gm.game.settings.get("mindscape", "daemonToken"), "secret-token");
  assert.equal(t.clients.gm.game.settings.get("mindscape", "daemonUrl"), "http://127.0.0.1:39393");
});

test("Cancel in a physical dice prompt cancels the exchange: nothing resolved, written or posted", async () => {
  const methods = defaultMethods({
    "exchange.resolve": (params) => {
      if (!params.dice?.attack?.length) throw { code: 4002, message: "dice needed", data: { purpose: "attack", sides: 20, needed: 1 } };
      throw new Error("must not resolve");
    },
  });
  const { t } = cancellingTable({ methods });
  const out = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust" }, physical: true });
  assert.equal(out, null);
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  assert.equal(t.actors.ulcen.flags.mindscape["revised-2e"].psp, 40);
  // A cancel is not an error the user must be told about.
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("Cancel in an encounter choice declares nothing for that combatant", async () => {
  const declared = [];
  const methods = defaultMethods({
    "encounter.create": () => ({ id: "enc1", revision: 0 }),
    "encounter.add": ({ combatant }) => ({ combatant_id: combatant.data.actor._id, revision: 1 }),
    "encounter.get": () => ({ phase: "round", round: 1, waiting_for: ["goblin"], combatants: { goblin: { psp: 20, defenses: ["mind-blank"] } }, revision: 2 }),
    "encounter.declare": (p) => { declared.push(p); return { revision: 3 }; },
  });
  const { t } = cancellingTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.goblinToken.uuid], "Test");
  const answers = await ctl.collectChoices();
  assert.deepEqual(answers, [null]);
  assert.deepEqual(declared, []);
});

test("Cancel in the defense dialog keeps the remembered default and remembers nothing new", async () => {
  const { t } = cancellingTable();
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
  const updatesBefore = t.tokens.goblinToken.actor.updates.length;
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.deepEqual(resolve.params.defense, { mode: "mind-blank" });
  // The only later update is the exchange's own write-back (psp), not a new default.
  const later = t.tokens.goblinToken.actor.updates.slice(updatesBefore);
  assert.ok(later.every((u) => !Object.keys(u).some((k) => k.includes("defaultDefense"))), JSON.stringify(later));
});

test("Cancel in the defense dialog with no remembered default raises no defense", async () => {
  const { t } = cancellingTable();
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.equal(resolve.params.defense, null);
  assert.equal(t.tokens.goblinToken.actor.flags.mindscape.defaultDefense, undefined);
});

test("the GM's Cancel in a dice prompt of a player's attack stops it, and the player is told the GM cancelled it", async () => {
  const { revisedResult } = await import("../test-support/scenario.mjs");
  // The companion asks for the attack's d20 (4002) until it is given.
  const resolve = (params) => {
    if (!params.dice?.attack?.length) throw { code: 4002, message: "Dice needed", data: { purpose: "attack", sides: 20, needed: 1 } };
    return revisedResult(params);
  };
  const t = makeTable({ methods: defaultMethods({ "exchange.resolve": resolve }), dialogs: { gm: { defenseDialog: { mode: null }, diceDialog: null } } });
  const out = await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" }, physical: true });
  assert.equal(out, null);
  assert.equal(t.clients.gm.dialogs.seen.filter((x) => x.kind === "diceDialog").length, 1);
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  assert.deepEqual(t.clients.p1.notes.error, [t.clients.p1.svc.t.localize("MINDSCAPE.Error.DiceCancelledByGM")]);
  // The GM chose it: the GM's own browser stays quiet, as for the GM's own attack.
  assert.deepEqual(t.clients.gm.notes.error, []);
  assert.equal(await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" }, physical: true }), null);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

for (const [what, start] of [
  ["an end of round", (svc, tokenUuids) => svc.startEndRound({ tokenUuids, physical: true })],
  ["a rest", (svc, tokenUuids) => svc.startRest({ tokenUuids, hours: 8, dialog: false, physical: true })],
]) {
  test(`the active GM's Cancel in a dice prompt of ${what} an assistant GM asked for stops it, and the assistant is told the GM cancelled it`, async () => {
    const t = makeTable({ dialogs: { gm: { diceDialog: null } } });
    // Ann becomes a second GM; gm0000 stays the one that talks to the companion.
    Object.getPrototypeOf(t.clients.p1.game.user).isGM = true;
    // The goblin's mind is open: its Wisdom check is a die the GM types.
    await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.mind": { state: "open" } });
    assert.equal(await start(t.clients.p1.svc, [t.tokens.goblinToken.uuid]), null);
    assert.equal(t.clients.gm.dialogs.seen.filter((x) => x.kind === "diceDialog").length, 1);
    assert.equal(t.clients.gm.ChatMessage.created.length, 0);
    assert.deepEqual(t.clients.p1.notes.error, [t.clients.p1.svc.t.localize("MINDSCAPE.Error.DiceCancelledByGM")]);
    assert.deepEqual(t.clients.gm.notes.error, []);
  });
}
