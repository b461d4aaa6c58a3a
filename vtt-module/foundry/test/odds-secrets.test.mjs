// The attack dialog's odds tell a player nothing the attack itself would not (docs/FOUNDRY.md,
// "Psionic attacks"). Odds for an assumed defense against a mind the player may not see
// are computed as if that mind knew the defense and could pay for it, for every defense
// alike, and say so: which defenses it knows, and its PSPs for them, never decide
// between odds and a refusal. A refusal of the odds that still speaks of the mind the
// attack would strike (its sheet, its state) reaches such a player only as a neutral
// sentence, with none of the companion's detail crossing the relay; the GM and that
// mind's owner read the true odds, or the companion's refusal, whole. A refusal for the
// attacker's own sake is marked, so that the dialog disables Attack rather than send the
// defender a secret question for an attack that cannot be made.
import { test } from "node:test";
import assert from "node:assert/strict";
import { combatantIdOfRef, defaultMethods, makeTable } from "../test-support/scenario.mjs";

const ATTACK = { mode: "mind-thrust", multiplier: "1", range: "short" };
const HIDDEN = "MINDSCAPE.Error.OddsHiddenByTheStruck";

/** revised-2e's defense costs (systems.describe), and the profile the companion reads of a combatant: a sheet's flags or a combatant object. */
const COST = { "thought-shield": 2, "mind-blank": 3 };
const profileOf = (c) => (c.adapter ? c.data.actor.flags?.mindscape?.["revised-2e"] ?? {} : c);
const nameOf = (c) => (c.adapter ? c.data.token?.name ?? c.data.actor.name : c.name);

/**
 * `exchange.odds` as the engine checks a defense (engine/revised_2e/exchange.py
 * `check_defense`); with `assume_known` naming the defender, as if it knew the defense and
 * could pay (engine/revised_2e/system.py `knowing`: the companion's tests check that).
 */
const revisedOdds = (params) => {
  const d = profileOf(params.defender);
  const mode = params.defense?.mode;
  if (params.assume_known?.includes("/defender")) return { outcomes: { hit: 0.55, miss: 0.45 }, damage: { mean: 1, distribution: [[0, 0.45], [2, 0.55]], truncated_mass: 0 } };
  if (mode && !(d.defenses ?? []).includes(mode)) throw { code: 4001, message: "The rules forbid it", data: { rule: "defense-not-known", detail: `${nameOf(params.defender)} does not know ${mode}` } };
  if (mode && (d.psp ?? 0) < COST[mode]) throw { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp-for-defense", detail: `${nameOf(params.defender)} needs ${COST[mode]} PSPs for ${mode} but holds ${d.psp}` } };
  return { outcomes: { hit: 0.55, miss: 0.45 }, damage: { mean: 1, distribution: [[0, 0.45], [2, 0.55]], truncated_mass: 0 } };
};
const describe = ({ system }) => ({ id: system, modes: { attacks: [{ id: "mind-thrust", cost: 2 }], defenses: [{ id: "thought-shield", cost: 2 }, { id: "mind-blank", cost: 3 }, { id: "tower-of-iron-will", cost: 6 }] }, house_rules: [] });
/** adapters.import as the companion gives it: the combatant's id and name, and its profile. */
const importing = ({ data }) => ({ combatant: { id: combatantIdOfRef({ data }), name: data.token?.name ?? data.actor.name, level: 4, ...(data.actor.flags?.mindscape?.["revised-2e"] ?? {}) }, warnings: [] });

/** A player's odds through the relay: the value, or the error as it reached that client. */
const oddsOf = (client, payload) => client.svc.relay.toGM("odds", payload).then((value) => ({ value }), (error) => ({ error }));

test("revised-2e: a player's odds against a mind they do not own are the same for a defense it knows and one it does not (as if it knew and could pay, said so); the GM and its owner read the truth", async () => {
  const t = makeTable({ methods: defaultMethods({ "exchange.odds": revisedOdds, "systems.describe": describe, "adapters.import": importing }) });
  // Fenka (Bo's) knows thought shield and mind blank, and holds 1 PSP: she can pay for neither.
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 1 });
  const ask = (assumeDefense, targetUuid = t.tokens.fenkaToken.uuid) => ({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuid, attack: ATTACK, assumeDefense });
  // Ann (Ulcen's) does not own Fenka: odds for each defense alike, known or not, affordable or not.
  const seen = {};
  for (const mode of ["thought-shield", "mind-blank", "tower-of-iron-will"]) seen[mode] = await oddsOf(t.clients.p1, ask(mode));
  for (const [mode, { value, error }] of Object.entries(seen)) {
    assert.equal(error, undefined, `${mode}: ${error?.key}`);
    assert.deepEqual(value.outcomes.map((o) => o.name), ["hit", "miss"], mode);
    assert.match(value.assumed, /^As if Fenka knows .+ and can pay for it: which defenses Fenka knows, and what it can pay, only its owner and the GM see\.$/, mode);
  }
  assert.match(seen["tower-of-iron-will"].value.assumed, /knows Tower of iron will/i);
  // What was sent for her: her sheet as it is, and the companion asked to assume she
  // knows the defense and can pay for it.
  const sent = t.daemon.calls.filter((c) => c.method === "exchange.odds").at(-1).params;
  assert.deepEqual([sent.defender.adapter, sent.defender.data.actor.flags.mindscape["revised-2e"].psp, sent.defense, sent.assume_known], ["foundry.dnd5e", 1, { mode: "tower-of-iron-will" }, ["/defender"]]);
  // A chance that would read 0.00% stays out of the answer.
  assert.equal(sent.least_chance, 0.00005);
  // Without an assumed defense the odds are her sheet's, with no such line, and nothing
  // is assumed.
  const { value } = await oddsOf(t.clients.p1, ask(null));
  assert.equal(value.assumed, undefined);
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.odds").at(-1).params.assume_known, undefined);
  // The GM reads the companion's own words.
  const gm = await oddsOf(t.clients.gm, ask("mind-blank"));
  assert.equal(gm.error.name, "RulesError");
  assert.match(gm.error.data.detail, /Fenka needs 3 PSPs for mind-blank but holds 1/);
  // So does the owner of the mind struck: Ann, once she owns the goblin.
  const mine = await oddsOf(t.clients.p1, { ...ask("tower-of-iron-will"), targetUuid: t.tokens.goblinToken.uuid });
  assert.ok(mine.value.assumed, "Ann does not own the goblin");
  t.actors.goblin.ownership.pl0001 = 3;
  const owned = await oddsOf(t.clients.p1, { ...ask("tower-of-iron-will"), targetUuid: t.tokens.goblinToken.uuid });
  assert.equal(owned.error.name, "RulesError");
  assert.match(owned.error.data.detail, /Goblin does not know tower-of-iron-will/);
  assert.equal(owned.error.data.attackRefused, undefined);
});

test("an empty assumeDefense (a macro's blank field) assumes no defense: the odds are the sheet's, nothing refused or assumed", async () => {
  const t = makeTable({ methods: defaultMethods({ "exchange.odds": revisedOdds, "systems.describe": describe, "adapters.import": importing }) });
  const { value, error } = await oddsOf(t.clients.p1, { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: ATTACK, assumeDefense: "" });
  assert.equal(error, undefined);
  assert.equal(value.assumed, undefined);
  const sent = t.daemon.calls.filter((c) => c.method === "exchange.odds").at(-1).params;
  assert.deepEqual([sent.defense ?? null, sent.assume_known], [null, undefined]);
});

test("a defense described as costing 0 PSPs is assumed only known, not paid for, in a player's odds against a mind they do not own", async () => {
  const free = (params) => ({ ...describe(params), modes: { attacks: [{ id: "mind-thrust", cost: 2 }], defenses: [{ id: "mind-blank", cost: 0 }] } });
  const t = makeTable({ methods: defaultMethods({ "exchange.odds": revisedOdds, "systems.describe": free, "adapters.import": importing }) });
  const { value } = await oddsOf(t.clients.p1, { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: ATTACK, assumeDefense: "mind-blank" });
  assert.match(value.assumed, /^As if Fenka knows Mind blank: which defenses Fenka knows only its owner and the GM see\.$/);
});

test("a rule system that describes no defense mode leaves an assumed defense named by text to the companion, and still refuses one that is no text", async () => {
  const plugin = ({ system }) => ({ id: system, modes: { attacks: [{ id: "mind-poke" }] }, house_rules: [] });
  const t = makeTable({ methods: defaultMethods({ "systems.describe": plugin, "exchange.odds": () => ({ outcomes: { hit: 0.5, miss: 0.5 } }) }) });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "my-plugin");
  const ask = { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.goblinToken.uuid, attack: { mode: "mind-poke" } };
  const gm = t.clients.gm.game.user;
  await t.clients.gm.svc.odds({ ...ask, assumeDefense: "mind-hedge" }, gm);
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "exchange.odds").at(-1).params.defense, { mode: "mind-hedge" });
  const error = await t.clients.gm.svc.odds({ ...ask, assumeDefense: 5 }, gm).then(() => null, (e) => e);
  assert.equal(error?.key, "MINDSCAPE.Error.BadAssumedDefense");
});

test("a refusal about the mind struck that no assumed defense mends (its sheet) still reaches a player who does not own it only as a neutral sentence", async () => {
  const sheet = () => { throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/defender/psp", message: "Fenka holds -2 PSPs" }] } }; };
  const t = makeTable({ methods: defaultMethods({ "exchange.odds": sheet, "systems.describe": describe, "adapters.import": () => { throw { code: -32602, message: "Invalid params", data: { errors: [] } }; } }) });
  const { error } = await oddsOf(t.clients.p1, { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: ATTACK, assumeDefense: "mind-blank" });
  assert.equal(error.key, HIDDEN);
  assert.deepEqual(error.data, {});
  assert.doesNotMatch(JSON.stringify(error), /PSP|holds/);
  assert.match(t.clients.p1.svc.t.localize(error.key), /^No odds for this choice: the companion refused it because of the mind it would strike/);
});

test("a refusal about the attacker reaches the player whole and disables Attack: no defender is asked", async () => {
  const t = makeTable({
    methods: defaultMethods({ "exchange.odds": () => { throw { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp", detail: "Ulcen of Tyr needs 8 PSPs for mind-thrust x4 but holds 2" } }; } }),
  });
  const { error } = await oddsOf(t.clients.p1, { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: { ...ATTACK, multiplier: "4" }, assumeDefense: "mind-blank" });
  assert.equal(error.name, "RulesError");
  assert.equal(error.data.detail, "Ulcen of Tyr needs 8 PSPs for mind-thrust x4 but holds 2");
  assert.equal(error.data.attackRefused, true);
  // The dialog's odds say it, in the player's words, and that Attack is blocked.
  let shown = null;
  t.clients.p1.svc.env.dialogs.attackDialog = async ({ oddsFor }) => {
    shown = await oddsFor({ ...ATTACK, multiplier: "4" }).then(() => null, (e) => e);
    return null;
  };
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  assert.equal(shown.blocksAttack, true);
  assert.match(shown.userMessage, /The rules forbid this: Ulcen of Tyr needs 8 PSPs/);
  assert.equal(t.clients.p2.dialogs.seen.length, 0);
});

test("power-pool: a player's odds against a mind they do not own are the same for a defense it knows and one it does not; the attacker's own pool is the player's to read", async () => {
  const odds = (params) => {
    const about = (ref) => (ref.adapter ? combatantIdOfRef(ref) : ref.id);
    const defender = params.defender.adapter ? params.defender.data.actor.flags?.mindscape?.["power-pool"] ?? {} : params.defender;
    if (params.attack.pool_dice > 3) throw { code: 4001, message: "The rules forbid it", data: { rule: "pool-dice-exceed-pool", detail: "Ulcen of Tyr has 3 dice to roll, not 5", combatant: about(params.attacker) } };
    const mode = params.defense?.mode;
    const assumed = params.assume_known?.includes("/defender");
    if (mode && !assumed && !(defender.defenses ?? []).includes(mode)) throw { code: 4001, message: "The rules forbid it", data: { rule: "mode-not-known", detail: `Fenka does not know ${mode} (knows ${JSON.stringify(defender.defenses)})`, combatant: about(params.defender) } };
    return { outcomes: { attacker: 0.4, defender: 0.6 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 } };
  };
  // power-pool's own modes (the default fake describes revised-2e's in every system).
  const pool = ({ system }) => ({ id: system, modes: { attacks: [{ id: "mental-stab" }], defenses: [{ id: "pinnacle-of-will" }, { id: "imagination-swarm" }, { id: "blank-mind" }] }, house_rules: [] });
  const t = makeTable({ methods: defaultMethods({ "systems.describe": pool, "exchange.odds": odds, "adapters.import": ({ data }) => ({ combatant: { id: combatantIdOfRef({ data }), name: data.actor.name, ...(data.actor.flags?.mindscape?.["power-pool"] ?? {}) }, warnings: [] }) }) });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "power-pool");
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.power-pool": { psionic: true, hit_dice: 3, die: 8, pool: 3, defenses: ["pinnacle-of-will", "imagination-swarm"] } });
  const ask = { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: { mode: "mental-stab", pool_dice: "3" }, assumeDefense: "blank-mind" };
  const unknown = await oddsOf(t.clients.p1, ask);
  const known = await oddsOf(t.clients.p1, { ...ask, assumeDefense: "pinnacle-of-will" });
  assert.deepEqual([unknown.error, known.error], [undefined, undefined]);
  assert.deepEqual(unknown.value.outcomes, known.value.outcomes);
  // power-pool's defenses cost nothing (systems.describe gives them no cost): the odds
  // assume only that the mind knows it.
  for (const { value } of [unknown, known]) assert.match(value.assumed, /^As if Fenka knows .+: which defenses Fenka knows only its owner and the GM see\.$/);
  assert.doesNotMatch(JSON.stringify(unknown), /pinnacle|knows \[/);
  // Bo, who owns Fenka, reads the truth.
  const own = await oddsOf(t.clients.p2, { ...ask, attackerUuid: t.tokens.ulcenToken.uuid });
  assert.equal(own.error?.name ?? null, "PermissionDeniedError", "Bo may not attack with Ulcen");
  const gm = await oddsOf(t.clients.gm, ask);
  assert.equal(gm.error.data.rule, "mode-not-known");
  const mine = await oddsOf(t.clients.p1, { ...ask, attack: { mode: "mental-stab", pool_dice: "5" } });
  assert.equal(mine.error.data.rule, "pool-dice-exceed-pool");
  assert.equal(mine.error.data.attackRefused, true);
});
