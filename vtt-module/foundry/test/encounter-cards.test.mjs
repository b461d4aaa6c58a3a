// The cards of an encounter step say what the step did with the figures of the sheets:
// the defense each exchange met, as the companion names it in each system's result
// (combat-strength's `defense_mode`), and in revised-2e the PSPs a defense cost when it
// was raised at the start of the round, before the exchanges (their `before` comes after
// it: engine/revised_2e/encounter.py "the target's defense was paid when raised").
import { test } from "node:test";
import assert from "node:assert/strict";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";
import { defensePayments, modesOfResult } from "../mindscape/scripts/encounter.js";
import { chatCardContext } from "../mindscape/scripts/chat.js";

/** A revised-2e exchange of an encounter round as the companion answers it (only the fields the card reads). */
const exchange = (attacker, defender, [dBefore, dAfter], defense = "mind-blank") => ({
  system: "revised-2e", outcome: "hit", summary: `${attacker} hits ${defender}.`, rolls: [], events: [], mode: "ego-whip", defense, defense_psp: 0,
  attacker: { id: attacker, before: { id: attacker, psp: 40 }, after: { id: attacker, psp: 36 } },
  defender: { id: defender, before: { id: defender, psp: dBefore }, after: { id: defender, psp: dAfter } },
});

/** Round 1: Fenka raises Mind blank (3 PSPs, 30 → 27), then Ulcen's and the goblin's ego whips strike her. */
const ROUND = {
  round: 1,
  results: [exchange("ulcen", "fenka-tokF", [27, 23]), exchange("goblin-tokG", "fenka-tokF", [23, 20])],
  events: [
    { type: "defense-raised", combatant: "fenka-tokF", mode: "mind-blank", paid_before: false },
    { type: "psp-spent", combatant: "fenka-tokF", amount: 3, for: "defense" },
    { type: "psp-spent", combatant: "ulcen", amount: 4, for: "attack" },
  ],
  summary: "Round 1: Fenka raises mind blank. …",
  rolls: [],
  updates: [],
};

test("revised-2e: the PSPs of a defense raised at the round's start show once, on the first card of its payer, from the sheet's figure", async () => {
  assert.deepEqual([...defensePayments(ROUND)], [["fenka-tokF", { amount: 3, mode: "mind-blank" }]]);
  const { methods } = encounterMethods({ "encounter.resolve": () => structuredClone({ ...ROUND, revision: 9 }) });
  const t = makeTable({ methods });
  const gm = t.clients.gm.svc;
  await gm.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], "Vault");
  await gm.encounters.resolve({ force: true });
  const cards = t.clients.gm.ChatMessage.created.map((m) => m.data.content.replace(/\s+/g, " "));
  assert.equal(cards.length, 2);
  const rows = (html) => [...html.matchAll(/<tr><th>([^<]*)<\/th><td>([^<]*)<\/td><td>(\S+) <i[^>]*><\/i> <strong>([^<]*)<\/strong><\/td><\/tr>/g)].map((m) => m.slice(1).join(" | "));
  // The sheet went 30 → 23 in this exchange's share: 3 for the defense, then 4 for the hit.
  assert.deepEqual(rows(cards[0]).filter((r) => r.startsWith("Fenka")), [
    "Fenka | PSPs for Mind blank, raised at the round&#x27;s start | 30 | 27",
    "Fenka | PSPs | 27 | 23",
  ]);
  // The second card starts where the first left her, without paying for the defense again.
  assert.deepEqual(rows(cards[1]).filter((r) => r.startsWith("Fenka")), ["Fenka | PSPs | 23 | 20"]);
});

test("revised-2e: the PSPs paid for a defense are added up over the round's payments, and a payment of nothing is none", () => {
  const step = { events: [
    { type: "defense-raised", combatant: "fenka-tokF", mode: "mind-blank" },
    { type: "psp-spent", combatant: "fenka-tokF", amount: 3, for: "defense" },
    { type: "psp-spent", combatant: "fenka-tokF", amount: 2, for: "defense" },
    { type: "psp-spent", combatant: "ulcen", amount: 0, for: "defense" },
  ] };
  assert.deepEqual([...defensePayments(step)], [["fenka-tokF", { amount: 5, mode: "mind-blank" }]]);
});

test("a step with exchanges posts their cards and tells nothing more, though the companion sums it up", async () => {
  const { methods } = encounterMethods({ "encounter.resolve": () => structuredClone({ ...ROUND, revision: 9 }) });
  const t = makeTable({ methods });
  const gm = t.clients.gm.svc;
  await gm.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], "Vault");
  await gm.encounters.resolve({ force: true });
  const cards = t.clients.gm.ChatMessage.created.map((m) => m.data.content);
  assert.equal(cards.length, 2);
  assert.ok(!t.clients.gm.notes.info.some((n) => n.startsWith("No exchange")), t.clients.gm.notes.info.join("\n"));
});

test("combat-strength: an encounter card names the defense the result carries as defense_mode", () => {
  // A segment's exchange as the companion answers it (engine/combat_strength/exchange.py fields).
  const result = { system: "combat-strength", outcome: "damage", mode: "psionic-wave", defense_mode: "mind-blank", range: "short", table: "combat", bonus_dice: 4, bonus_rolls: [5, 5, 5, 5], damage: 23, attack_cost: 20, summary: "Zanna attacks Aboleth with Psionic Wave against Mind Blank (band 01-25): 3 + 4d6 (5 + 5 + 5 + 5) = 23 damage.", rolls: [], events: [], attacker: { id: "z" }, defender: { id: "a" } };
  const modes = modesOfResult(result);
  assert.deepEqual(modes, { attack: { mode: "psionic-wave" }, defense: { mode: "mind-blank" } });
  const card = chatCardContext(result, { attackerName: "Zanna", defenderName: "Aboleth", ...modes, localize: (_k, f) => f });
  assert.equal(card.defenseLabel, "mind blank");
  // No defense named: none.
  assert.equal(modesOfResult({ ...result, defense_mode: null }).defense, null);
  // A defense object that names no mode is none either.
  assert.equal(modesOfResult({ ...result, defense_mode: { psp: 0 } }).defense, null);
});
