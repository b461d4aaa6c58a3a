// A summary names a creature the companion was not given by its combatant id in quotes
// (engine/power_pool/control.py `name_of`: `Goblin releases "fenka-tokF".`). The card
// shows it as the table knows that creature: the token on the scene, or the actor in the
// world, whose combatant id it is (the id the Foundry adapters give, `roundCombatantId`);
// a quoted id nobody at the table matches stays as the companion wrote it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultMethods, makeTable, revisedResult } from "../test-support/scenario.mjs";
import { makeApi } from "../mindscape/scripts/api.js";
import { namedSummary, quotedIds } from "../mindscape/scripts/chat.js";

/** A table with the goblin's second copy on the scene: the token Skum, whose actor is named Goblin. */
function tableSaying(summary) {
  const said = (result) => ({ ...result, summary });
  const t = makeTable({
    methods: defaultMethods({
      "exchange.end_round": (params) => ({
        system: params.system,
        combatants: [{ id: "ulcen", before: { psp: 40 }, after: { psp: 40 } }],
        events: [{ type: "control-ended", combatant: "goblin-tokS" }],
        rolls: [],
        summary,
        unused_dice: {},
        updates: [],
      }),
      "exchange.resolve": (params) => said(revisedResult(params)),
    }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  const skum = t.world.token({ id: "tokS", name: "Skum", actor: t.actors.goblin, actorLink: false });
  // A world actor on no scene, and a linked token named otherwise than its actor.
  t.world.actor({ id: "ox", name: "Ox", type: "npc" });
  const bessie = t.world.actor({ id: "cow", name: "Cow", type: "npc" });
  t.world.token({ id: "tokB", name: "Bessie", actor: bessie, actorLink: true });
  return { t, skum };
}

const SUMMARY = 'Goblin releases "goblin-tokS", "ox" and "cow". "goblin-tokS" was not given: its sheet still shows it under Goblin\'s control until it is changed. "ghost" was not given either.';

test("a round's card names each creature the summary quotes by its token on the scene, else its actor in the world; an id of nobody stays quoted", async () => {
  const { t } = tableSaying(SUMMARY);
  await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.ulcenToken.uuid] });
  const [card] = t.clients.gm.ChatMessage.created;
  assert.match(card.data.content, /Goblin releases Skum, Ox and Bessie\. Skum was not given: its sheet still shows it under Goblin&#x27;s control until it is changed\. &quot;ghost&quot; was not given either\./);
  assert.doesNotMatch(card.data.content, /goblin-tokS/);
});

test("an exchange's card names a creature its summary quotes by the token on the scene whose combatant id it is", async () => {
  const { t } = tableSaying('Ulcen of Tyr strikes. "goblin-tokS", "goblin-tokX" and "goblin-tokS-2" were not given.');
  await makeApi(t.clients.gm.svc).resolve({ attacker: t.tokens.ulcenToken.uuid, targets: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  const [card] = t.clients.gm.ChatMessage.created;
  // tokX is no token of the goblin's, and Skum's id is "goblin-tokS" exactly: the others name nobody, and stay.
  assert.match(card.data.content, /Ulcen of Tyr strikes\. Skum, &quot;goblin-tokX&quot; and &quot;goblin-tokS-2&quot; were not given\./);
});

test("namedSummary: a quoted id the table names reads as its name; other quoted words stay", () => {
  assert.deepEqual(quotedIds('"a-b" and "a-b", "c"; "two words"'), ["a-b", "c"]);
  const names = new Map([["a-b", "Skum"]]);
  assert.equal(namedSummary('Ix releases "a-b". "c" was not given. "two words"', names), 'Ix releases Skum. "c" was not given. "two words"');
  assert.equal(namedSummary(null, names), "");
});
