// An attack the companion refuses for the attacker's own sake asks no defender (docs/FOUNDRY.md,
// "Psionic attacks"): the GM's client checks it with one `exchange.odds` call, no defense
// assumed, before any secret defense question, so that a macro's attack (which skips the
// dialog and its odds) does not make the defenders choose for nothing and learn that an
// attack was coming. A refusal about a defender is not decided by that check: the
// defenders are asked as before and the exchange's own refusal keeps its secrecy.
import { test } from "node:test";
import assert from "node:assert/strict";
import { combatantIdOfRef, combatantNameOfRef, defaultMethods, makeTable, revisedResult } from "../test-support/scenario.mjs";
import { makeApi } from "../mindscape/scripts/api.js";

const defenseDialogs = (t) => Object.values(t.clients).flatMap((c) => c.dialogs.seen.filter((s) => s.kind === "defenseDialog" || s.kind === "joinDialog"));
const resolves = (t) => t.daemon.calls.filter((c) => c.method === "exchange.resolve");

/**
 * revised-2e's check of the attacker (engine/revised_2e/exchange.py `check_attack`), as
 * `exchange.odds` and `exchange.resolve` both make it: a mind declares its attack's PSPs
 * (2 a step of mind-thrust, times the multiplier) and must hold them.
 */
function revisedAttackerCheck(params) {
  const psp = params.attacker.data.actor.flags.mindscape["revised-2e"].psp;
  const cost = 2 * (params.attack.multiplier ?? 1);
  if (psp < cost) {
    throw { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp", detail: `${combatantNameOfRef(params.attacker)} declares ${cost} PSPs of ${params.attack.mode} but holds ${psp}` } };
  }
}

test("not-enough-psp: a player's macro attack the companion refuses for its attacker asks no defender, and the player is told why", async () => {
  const t = makeTable({
    methods: defaultMethods({
      "exchange.odds": (params) => { revisedAttackerCheck(params); return { outcomes: { hit: 0.5, miss: 0.5 } }; },
      "exchange.resolve": (params) => { revisedAttackerCheck(params); return revisedResult(params); },
    }),
    dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } },
  });
  t.actors.ulcen.flags.mindscape["revised-2e"].psp = 3;
  const api = makeApi(t.clients.p1.svc);
  const outcome = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 4, range: "short" } });
  assert.equal(outcome, null);
  // Neither Bo (Fenka's) nor the GM (the goblin's) was asked for a defense.
  assert.deepEqual(defenseDialogs(t), []);
  assert.equal(resolves(t).length, 0);
  // One check a target, the attacker against it, no defense assumed.
  const checks = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.deepEqual(checks.map((c) => c.params.defender.data.token.uuid), [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]);
  for (const check of checks) {
    assert.equal(check.params.defense, null);
    assert.deepEqual(check.params.attack, { mode: "mind-thrust", multiplier: 4, range: "short" });
    // only whether it is allowed matters: the answer leaves the lists of chances out
    assert.equal(check.params.least_chance, 1);
  }
  // Ann reads the companion's own words about her own attacker; Bo reads nothing.
  assert.deepEqual(t.clients.p1.notes.error, ["The rules forbid this: Ulcen of Tyr declares 8 PSPs of mind-thrust but holds 3"]);
  assert.deepEqual(t.clients.p2.notes, { info: [], warn: [], error: [] });

  // With the PSPs for it, the same attack asks each defender, as before.
  t.actors.ulcen.flags.mindscape["revised-2e"].psp = 40;
  const made = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 4, range: "short" } });
  assert.equal(made[0].outcome, "hit");
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.deepEqual(resolves(t)[0].params.defense, { mode: "thought-shield" });
});

test("the attacker among its own targets, or a mind targeted twice, is refused before anyone is asked, in every system", async () => {
  for (const system of ["revised-2e", "combat-strength", "power-pool"]) {
    const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } } });
    await t.clients.gm.game.settings.set("mindscape", "ruleSystem", system);
    const api = makeApi(t.clients.p1.svc);
    const mode = { "revised-2e": "mind-thrust", "combat-strength": "mind-thrust", "power-pool": "mental-stab" }[system];
    const self = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid, t.tokens.ulcenToken.uuid], attack: { mode } });
    assert.equal(self, null);
    const twice = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid, t.tokens.fenkaToken.uuid], attack: { mode } });
    assert.equal(twice, null);
    // Nobody was asked, nothing went to the companion: no check, no exchange, no card.
    assert.deepEqual(defenseDialogs(t), [], system);
    assert.deepEqual(t.daemon.calls.filter((c) => c.method.startsWith("exchange.")), [], system);
    const [selfNote, twiceNote] = t.clients.p1.notes.error;
    assert.match(selfNote, /^Ulcen.* is the attacker, and a mind cannot attack itself: untarget it and attack again\. Nothing was sent\.$/, system);
    assert.match(twiceNote, /^Fenka.* is targeted twice \(two of its tokens, or its token and its actor\)/, system);
    assert.equal(t.clients.p1.notes.error.length, 2, system);
  }
});

test("a refusal about a defender's sheet is not the check's to decide: the defender is asked, and the attacker's player reads only that the mind struck stopped it", async () => {
  // Fenka's sheet is one the adapter refuses: the companion refuses odds and exchange alike.
  const refusesFenka = (params) => {
    if (params.defender.data.actor.flags.mindscape["revised-2e"].psp < 0) {
      throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/defender/data/actor/flags/mindscape/revised-2e/psp", message: "Fenka's psp must be at least 0" }] } };
    }
  };
  const t = makeTable({
    methods: defaultMethods({
      "exchange.odds": (params) => { refusesFenka(params); return { outcomes: { hit: 0.5, miss: 0.5 } }; },
      "exchange.resolve": (params) => { refusesFenka(params); throw new Error("Fenka's sheet was read"); },
    }),
    dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } },
  });
  t.tokens.fenkaToken.actor.flags.mindscape["revised-2e"].psp = -1;
  const api = makeApi(t.clients.p1.svc);
  const outcome = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(outcome, null);
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.equal(resolves(t).length, 1);
  assert.equal(t.clients.p1.notes.error.length, 1);
  assert.match(t.clients.p1.notes.error[0], /because of a mind it struck/);
  assert.doesNotMatch(t.clients.p1.notes.error.join(" "), /psp must be/);
});

test("a −32602 that names no problem, or names the attack beside a defender's sheet, is not the check's to decide: the defender is asked, and a refusal that speaks of the mind struck tells the attacker's player only that it stopped the attack", async () => {
  const problems = {
    none: [],
    both: [{ path: "/attack/multiplier", message: "4 is above the level" }, { path: "/defender/data/actor/flags/mindscape/revised-2e/psp", message: "Fenka's psp must be at least 0" }],
  };
  for (const [name, errors] of Object.entries(problems)) {
    const refuse = () => { throw { code: -32602, message: "Invalid params", data: { errors } }; };
    const t = makeTable({
      methods: defaultMethods({ "exchange.odds": refuse, "exchange.resolve": name === "none" ? (params) => revisedResult(params) : refuse }),
      dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } },
    });
    await makeApi(t.clients.p1.svc).resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
    assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1, name);
    assert.equal(resolves(t).length, 1, name);
    if (name === "both") {
      assert.equal(t.clients.p1.notes.error.length, 1);
      assert.match(t.clients.p1.notes.error[0], /because of a mind it struck/);
      assert.doesNotMatch(t.clients.p1.notes.error.join(" "), /psp must be/);
    }
  }
});

test("attack-strength-too-low: combat-strength's refusal of the attacker's strength asks no defender, and the player is told why", async () => {
  const refuse = () => { throw { code: 4001, message: "The rules forbid it", data: { rule: "attack-strength-too-low", detail: "Ulcen of Tyr has 3 attack strength points, mind-thrust needs 4" } }; };
  const t = makeTable({ methods: defaultMethods({ "exchange.odds": refuse, "exchange.resolve": refuse }), dialogs: { p2: { defenseDialog: { mode: "mind-blank" } } } });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
  for (const actor of [t.actors.ulcen, t.tokens.fenkaToken.actor]) actor.flags.mindscape["combat-strength"] = { psionic: true, attacks: ["mind-thrust"], defenses: ["mind-blank"] };
  const outcome = await makeApi(t.clients.p1.svc).resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust" } });
  assert.equal(outcome, null);
  assert.deepEqual(defenseDialogs(t), []);
  assert.equal(resolves(t).length, 0);
  assert.deepEqual(t.clients.p1.notes.error, ["The rules forbid this: Ulcen of Tyr has 3 attack strength points, mind-thrust needs 4"]);
});

// power-pool: the combatant the companion's refusals name is the attacker (engine/power_pool/exchange.py).
const POOL = "power-pool";
const pool = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab", "psionic-wave"], defenses: ["pinnacle-of-will", "imagination-swarm"], ...extra });

/**
 * power-pool's checks of an exchange in the engine's order (`build_plan`): the attacker
 * and its mode, then each target (one under control strikes its controller, which must
 * come along in `controllers`: else `controller-required`, about the target), then the
 * pool dice the attacker rolls.
 */
function poolChecks(params) {
  const profile = (ref) => ref.data.actor.flags.mindscape[POOL];
  const attackerId = combatantIdOfRef(params.attacker);
  const refuse = (rule, detail, combatant) => { throw { code: 4001, message: "The rules forbid it", data: { rule, detail, combatant } }; };
  if (!profile(params.attacker).attacks.includes(params.attack.mode)) refuse("mode-not-known", `${combatantNameOfRef(params.attacker)} does not know ${params.attack.mode}`, attackerId);
  const given = new Set((params.controllers ?? []).map(combatantIdOfRef));
  for (const target of [params.defender, ...(params.defenders ?? [])]) {
    const by = profile(target).controlled_by;
    if (by && !given.has(by)) refuse("controller-required", `${combatantNameOfRef(target)} is under the psionic control of "${by}"; give it in /controller`, combatantIdOfRef(target));
  }
  const held = profile(params.attacker).pool;
  if (params.attack.pool_dice > held) refuse("pool-dice-exceed-pool", `${combatantNameOfRef(params.attacker)} has ${held} dice in its pool, not ${params.attack.pool_dice}`, attackerId);
}

function poolTable() {
  const t = makeTable({
    methods: defaultMethods({
      "systems.describe": ({ system }) => ({
        id: system,
        modes: { attacks: [{ id: "mental-stab" }, { id: "psionic-wave", several_targets: true }], defenses: [{ id: "pinnacle-of-will" }, { id: "imagination-swarm", draws_allies: true }] },
        combatant_schema: { type: "object", properties: {} },
        house_rules: [],
      }),
      "adapters.import": ({ data }) => ({ combatant: { id: combatantIdOfRef({ data }), name: combatantNameOfRef({ data }), ...(data.actor.flags?.mindscape?.[POOL] ?? {}) }, warnings: [] }),
      "exchange.odds": (params) => { poolChecks(params); return { outcomes: { attacker: 0.4, defender: 0.6 } }; },
      "exchange.resolve": (params) => { poolChecks(params); return { system: POOL, outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }; },
    }),
    dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } }, p2: { defenseDialog: { mode: "pinnacle-of-will" } } },
  });
  t.actors.ulcen.flags.mindscape[POOL] = pool();
  t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool();
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool();
  // A thrall the goblin holds: an attack on it strikes the goblin, whose defense the GM chooses.
  const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { [POOL]: pool({ controlled_by: "goblin-tokG" }) } } });
  return { t, thrall };
}

test("pool-dice-exceed-pool: a macro attack on a creature under control, with more pool dice than the attacker holds, asks neither its controller nor anyone who might join", async () => {
  const { t, thrall } = poolTable();
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const api = makeApi(t.clients.p1.svc);
  const outcome = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [thrall.uuid], attack: { mode: "mental-stab", pool_dice: 5 } });
  assert.equal(outcome, null);
  assert.deepEqual(defenseDialogs(t), []);
  assert.equal(resolves(t).length, 0);
  // The check went as the exchange would: with the controller struck in the thrall's place.
  const [check] = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.deepEqual(check.params.controllers.map(combatantIdOfRef), ["goblin-tokG"]);
  assert.deepEqual(t.clients.p1.notes.error, ["The rules forbid this: Ulcen of Tyr has 3 dice in its pool, not 5"]);
});

test("power-pool: a mode striking one target checks each exchange with its own target and the controller struck in its place", async () => {
  const { t, thrall } = poolTable();
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const api = makeApi(t.clients.p1.svc);
  const outcome = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid, thrall.uuid], attack: { mode: "mental-stab", pool_dice: 5 } });
  assert.equal(outcome, null);
  assert.deepEqual(defenseDialogs(t), []);
  const checks = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.deepEqual(checks.map((c) => [combatantIdOfRef(c.params.defender), (c.params.controllers ?? []).map(combatantIdOfRef)]), [["fenka-tokF", []], [thrall.id, ["goblin-tokG"]]]);
  assert.deepEqual(t.clients.p1.notes.error, ["The rules forbid this: Ulcen of Tyr has 3 dice in its pool, not 5"]);
});

test("pool-dice-exceed-pool: a psionic wave is checked against all its targets at once, and one the attacker may make asks each mind struck", async () => {
  const { t } = poolTable();
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const api = makeApi(t.clients.p1.svc);
  const targets = [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid];
  assert.equal(await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets, attack: { mode: "psionic-wave", pool_dice: 4 } }), null);
  assert.deepEqual(defenseDialogs(t), []);
  const [check] = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.deepEqual([check.params.defender, ...check.params.defenders].map(combatantIdOfRef), ["fenka-tokF", "goblin-tokG"]);
  assert.match(t.clients.p1.notes.error[0], /has 3 dice in its pool, not 4/);

  const outcome = await api.resolve({ attacker: t.tokens.ulcenToken.uuid, targets, attack: { mode: "psionic-wave", pool_dice: 3 } });
  assert.equal(outcome[0].outcome, "defender");
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
});
