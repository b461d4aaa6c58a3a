// The attack dialog's odds tell a player nothing the attack itself would not (docs/FOUNDRY.md,
// "Psionic attacks"): a refusal of the odds that speaks of the mind the attack would
// strike (its defense, PSPs, sheet) reaches a player who may not see that mind only as a
// neutral sentence, with none of the companion's detail crossing the relay; the GM and
// that mind's owner read it whole. A refusal for the attacker's own sake is marked, so
// that the dialog disables Attack rather than send the defender a secret question for
// an attack that cannot be made.
import { test } from "node:test";
import assert from "node:assert/strict";
import { combatantIdOfRef, defaultMethods, makeTable } from "../test-support/scenario.mjs";

const ATTACK = { mode: "mind-thrust", multiplier: "1", range: "short" };
const HIDDEN = "MINDSCAPE.Error.OddsHiddenByTheStruck";

/** What `exchange.odds` answers when the assumed defense costs more PSPs than the defender holds (revised-2e). */
const refusesDefense = (params) => {
  if (params.defense?.mode === "mind-blank") {
    throw { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp-for-defense", detail: `${params.defender.data.token?.name} needs 3 PSPs for mind-blank but holds 1` } };
  }
  return { outcomes: { hit: 0.55, miss: 0.45 }, damage: { mean: 1, distribution: [[0, 0.45], [2, 0.55]], truncated_mass: 0 } };
};

/** A player's odds through the relay: the value, or the error as it reached that client. */
const oddsOf = (client, payload) => client.svc.relay.toGM("odds", payload).then((value) => ({ value }), (error) => ({ error }));

test("revised-2e: a player is not told the PSPs of a mind they do not own when its defense is refused for the odds; the GM and its owner are", async () => {
  const t = makeTable({ methods: defaultMethods({ "exchange.odds": refusesDefense }) });
  const ask = { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: ATTACK, assumeDefense: "mind-blank" };
  // Ann (Ulcen's) does not own Bo's Fenka: a neutral sentence, and nothing else crosses.
  const { error } = await oddsOf(t.clients.p1, ask);
  assert.equal(error.key, HIDDEN);
  assert.deepEqual(error.data, {});
  assert.doesNotMatch(JSON.stringify(error), /PSP|holds|mind-blank/);
  assert.match(t.clients.p1.svc.t.localize(error.key), /^No odds for this choice: the companion refused it because of the mind it would strike/);
  // Without an assumed defense the odds are shown as usual.
  const { value } = await oddsOf(t.clients.p1, { ...ask, assumeDefense: null });
  assert.deepEqual(value.outcomes.map((o) => o.name), ["hit", "miss"]);
  // The GM reads the companion's own words.
  const gm = await oddsOf(t.clients.gm, ask);
  assert.equal(gm.error.name, "RulesError");
  assert.match(gm.error.data.detail, /Fenka needs 3 PSPs for mind-blank but holds 1/);
  // So does the owner of the mind struck: Ann, once she owns the goblin too.
  t.actors.goblin.ownership.pl0001 = 3;
  const own = await oddsOf(t.clients.p1, { ...ask, targetUuid: t.tokens.goblinToken.uuid });
  assert.equal(own.error.name, "RulesError");
  assert.match(own.error.data.detail, /Goblin needs 3 PSPs/);
  assert.equal(own.error.data.attackRefused, undefined);
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

test("power-pool: the defense list of a mind a player does not own stays secret; the attacker's own pool is the player's to read", async () => {
  const odds = (params) => {
    const about = (ref) => combatantIdOfRef(ref);
    if (params.attack.pool_dice > 3) throw { code: 4001, message: "The rules forbid it", data: { rule: "pool-dice-exceed-pool", detail: "Ulcen of Tyr has 3 dice to roll, not 5", combatant: about(params.attacker) } };
    if (params.defense?.mode === "blank-mind") throw { code: 4001, message: "The rules forbid it", data: { rule: "mode-not-known", detail: "Fenka does not know blank-mind (knows ['pinnacle-of-will', 'imagination-swarm'])", combatant: about(params.defender) } };
    return { outcomes: { attacker: 0.4, defender: 0.6 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 } };
  };
  // power-pool's own modes (the default fake describes revised-2e's in every system).
  const describe = ({ system }) => ({ id: system, modes: { attacks: [{ id: "mental-stab" }], defenses: [{ id: "pinnacle-of-will" }, { id: "imagination-swarm" }, { id: "blank-mind" }] }, house_rules: [] });
  const t = makeTable({ methods: defaultMethods({ "systems.describe": describe, "exchange.odds": odds, "adapters.import": ({ data }) => ({ combatant: { id: combatantIdOfRef({ data }), ...(data.actor.flags?.mindscape?.["power-pool"] ?? {}) }, warnings: [] }) }) });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "power-pool");
  const ask = { attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: { mode: "mental-stab", pool_dice: "3" }, assumeDefense: "blank-mind" };
  const hidden = await oddsOf(t.clients.p1, ask);
  assert.equal(hidden.error.key, HIDDEN);
  assert.doesNotMatch(JSON.stringify(hidden.error), /pinnacle|knows/);
  const mine = await oddsOf(t.clients.p1, { ...ask, attack: { mode: "mental-stab", pool_dice: "5" } });
  assert.equal(mine.error.data.rule, "pool-dice-exceed-pool");
  assert.equal(mine.error.data.attackRefused, true);
});
