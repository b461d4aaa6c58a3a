// power-pool: a psionic creature joins, by its own choice, the defense of an ally under
// psionic attack (RULES.md §3.3, seed 001 Imagination Swarm: "Psionically active creatures
// may also use this defence mode to participate in a psionic combat that is targeting an
// ally they can see"). Over the fakes: who is asked (eligibility, the ally's side by
// token disposition), by whom (the owner, the GM for an NPC), what no answer means, and
// what goes to the companion: in a single attack the creature in `allies` with its own
// defense in `defenses`, in an encounter its own `{defense: {mode}}` declared.
import { test } from "node:test";
import assert from "node:assert/strict";
import { joiningModeId } from "../mindscape/scripts/requests.js";
import { sightBlocked } from "../mindscape/scripts/foundry.js";
import { combatantIdOfRef, defaultMethods, encounterMethods, makeTable, poolImport } from "../test-support/scenario.mjs";

const POOL = "power-pool";
const SWARM = "imagination-swarm";

// The companion's power-pool modes and tables as far as these tests need them.
const DEFENSES = [{ id: "pinnacle-of-will" }, { id: "cognitive-labyrinth", defends_while_unaware: true }, { id: SWARM, draws_allies: true }];
const AWARE = ["unaware", "surprised", "stunned", "asleep", "unconscious"];
const describe = ({ system }) => ({
  id: system,
  modes: { attacks: [{ id: "mental-stab" }, { id: "psionic-wave", several_targets: true }], defenses: DEFENSES },
  tables: { awareness_conditions: AWARE },
  combatant_schema: { type: "object", properties: {} },
  house_rules: [],
});

const pool = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab", "psionic-wave"], defenses: ["pinnacle-of-will"], ...extra });

test("who may join a defense by its own choice: psionic, knowing a mode that draws allies in, with a mind, free, and able to defend with it", () => {
  const may = (c) => joiningModeId(c, DEFENSES, AWARE);
  assert.equal(may(pool({ defenses: [SWARM] })), SWARM);
  assert.equal(may(pool()), null, "it does not know the swarm");
  assert.equal(may({ hit_dice: 3, die: 8, psionic: true }), null, "a profile without a list knows no mode (power-pool)");
  assert.equal(may(pool({ psionic: false, defenses: [SWARM] })), null, "not psionic: the defender may draw it in instead");
  assert.equal(may(pool({ defenses: [SWARM], mindless: true })), null);
  assert.equal(may(pool({ defenses: [SWARM], controlled_by: "goblin" })), null);
  assert.equal(may(pool({ defenses: [SWARM], conditions: ["asleep"] })), null, "unaware: only cognitive-labyrinth would defend");
  assert.equal(may(pool({ defenses: [SWARM], hp: 0 })), null, "down");
  assert.equal(may(pool({ defenses: [SWARM], conditions: ["dazed"], hp: 3 })), SWARM, "dazed is not unaware");
  assert.equal(may(null), null, "a sheet the companion could not read");
  assert.equal(joiningModeId(pool({ defenses: [SWARM] }), [{ id: SWARM }], AWARE), null, "a companion whose modes draw nobody in");
});

// ------------------------------------------------------- single attacks

// Ulcen (Ann's, friendly) attacks; Fenka (Bo's, friendly) and the goblin (the GM's NPC,
// hostile) are the possible targets. Around them on the scene, each its own actor:
// `spec` of each creature `{name, profile, disposition, linked, hidden, owner}`.
async function attackTable({ resolve, dialogs = {}, creatures = [] } = {}) {
  const calls = [];
  const methods = defaultMethods({
    "systems.describe": describe,
    "adapters.import": poolImport,
    "exchange.resolve": (params) => { calls.push(params); return resolve ? resolve(params) : { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }; },
  });
  const t = makeTable({ methods, dialogs });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  t.actors.ulcen.flags.mindscape[POOL] = pool();
  t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool();
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool();
  const placed = {};
  for (const c of creatures) {
    const id = c.name.toLowerCase().replace(/\W/g, "");
    const ownership = c.owner ? { [t[c.owner].id]: 3 } : {};
    const actor = t.world.actor({ id, name: c.name, type: "npc", disposition: c.disposition ?? -1, ownership, flags: { mindscape: c.profile ? { [POOL]: c.profile } : {} } });
    const token = t.world.token({ id: `tok${id}`, name: c.name, actor, actorLink: c.linked ?? true });
    token.hidden = Boolean(c.hidden);
    placed[c.name] = token;
  }
  return { t, calls, placed };
}

const seer = (extra = {}) => pool({ hit_dice: 2, die: 6, pool: 2, defenses: [SWARM], ...extra });
const refIds = (refs) => (refs ?? []).map(combatantIdOfRef);
const asked = (client) => client.dialogs.seen.filter((s) => s.kind === "joinDialog").map((s) => s.arg.context);

test("sight between two tokens is Foundry's sight backend's answer, and unknown without drawn tokens, across scenes, or when the backend fails", () => {
  const token = (x, scene = "s1") => ({ parent: { id: scene }, object: { center: { x, y: 0 } } });
  const CONFIG = { Canvas: { polygonBackends: { sight: { testCollision: (a, b) => a.x < 5 && b.x > 5 } } } };
  assert.equal(sightBlocked(CONFIG, token(0), token(10)), true);
  assert.equal(sightBlocked(CONFIG, token(6), token(10)), false);
  assert.equal(sightBlocked(CONFIG, token(0), token(10, "s2")), null);
  assert.equal(sightBlocked(CONFIG, { parent: { id: "s1" }, object: {} }, token(10)), null);
  assert.equal(sightBlocked({}, token(0), token(10)), null);
  const failing = { Canvas: { polygonBackends: { sight: { testCollision: () => { throw new Error("no canvas"); } } } } };
  assert.equal(sightBlocked(failing, token(0), token(10)), null);
});

test("a creature behind a wall that blocks sight to the mind struck is not asked to join; where sight cannot be told (no token drawn), disposition decides", async () => {
  const { t, calls, placed } = await attackTable({
    dialogs: { gm: { joinDialog: { join: "0", timedOut: false } } },
    creatures: [
      { name: "Seer Behind", profile: seer() },
      { name: "Seer Near", profile: seer() },
      { name: "Seer Elsewhere", profile: seer() },
    ],
  });
  const gm = t.clients.gm;
  // The tokens drawn on the GM's canvas, and one wall at x = 500 that blocks sight.
  const at = (token, x) => { token.center = { x, y: 100 }; };
  at(t.tokens.goblinToken, 100);
  at(placed["Seer Near"], 300);
  at(placed["Seer Behind"], 900);
  const tested = [];
  gm.CONFIG.Canvas = { polygonBackends: { sight: { testCollision: (a, b, options) => {
    tested.push(options);
    return (a.x - 500) * (b.x - 500) < 0;
  } } } };
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  assert.deepEqual(asked(gm).map((q) => q.name).sort(), ["Seer Elsewhere", "Seer Near"]);
  // Sight was tested, from the mind struck to each seer drawn on its scene, as Foundry's sight does.
  assert.deepEqual(tested, [{ type: "sight", mode: "any" }, { type: "sight", mode: "any" }]);
  assert.deepEqual(refIds(calls[0].allies).sort(), ["seerelsewhere", "seernear"]);
});

test("a single attack asks each psionic creature on the struck mind's side that may join, in parallel with the defense; a yes goes in allies with its own defense", async () => {
  const { t, calls, placed } = await attackTable({
    dialogs: { gm: { joinDialog: { join: "0", timedOut: false } } },
    creatures: [
      { name: "Hobgoblin Seer", profile: seer(), linked: false },
      { name: "Kobold Mystic", profile: pool() },
      { name: "Wolf" },
      { name: "Imp", profile: seer({ controlled_by: "ulcen" }) },
      { name: "Shaman", profile: seer({ conditions: ["asleep"] }) },
      { name: "Corpse", profile: seer({ hp: 0 }) },
      { name: "Golem", profile: seer({ mindless: true }) },
      { name: "Fenka's Friend", profile: seer(), disposition: 1 },
      { name: "Onlooker", profile: seer(), disposition: 0 },
    ],
    resolve: (params) => ({
      system: POOL, winner: "defender", outcome: "defender", summary: "The goblin and the seer rebuff Ulcen.", rolls: [], events: [],
      defense: { mode: "pinnacle-of-will", members: [
        { id: "goblin-tokG", role: "defender", mode: "pinnacle-of-will", dice: 3, sides: 10, rolled: 14, rolls: true },
        { id: refIds(params.allies)[0], role: "ally", mode: SWARM, dice: 2, sides: 6, rolled: 7, rolls: true },
      ] },
      updates: [{ uuid: `${params.allies[0].data.token.uuid}.Actor.hobgoblinseer`, update: { "flags.mindscape.power-pool.conditions": [] } }],
    }),
  });
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  // Only the seer: the mystic knows no swarm, the wolf is not psionic, the imp is under
  // control, the shaman asleep, the corpse down, the golem mindless; the friend and the
  // onlooker are not on the goblin's side. The NPC is the GM's to answer.
  const [question] = asked(gm);
  assert.equal(asked(gm).length, 1);
  assert.equal(question.name, "Hobgoblin Seer");
  assert.equal(question.attackerName, "Ulcen of Tyr");
  assert.equal(question.attackLabel, "Mental stab");
  assert.equal(question.modeLabel, "Imagination swarm");
  assert.deepEqual(question.groups, [{ value: "0", names: "Goblin", checked: true }]);
  assert.equal(question.several, false);
  // The attacker's side is asked nothing.
  assert.deepEqual([...asked(t.clients.p1), ...asked(t.clients.p2)], []);
  const [params] = calls;
  const seerId = `hobgoblinseer-tokhobgoblinseer`;
  assert.deepEqual(refIds(params.allies), [seerId]);
  assert.deepEqual(params.defenses, { [seerId]: { mode: SWARM } });
  // A creature without a power-pool profile is not read for this (the goblin draws nobody in).
  const read = t.daemon.calls.filter((c) => c.method === "adapters.import").map((c) => c.params.data.actor.name);
  assert.ok(!read.includes("Wolf"), read.join(", "));
  // Written back like any ally, to the seer's own token; named on the card with its mode.
  assert.deepEqual(placed["Hobgoblin Seer"].actor.flags.mindscape[POOL].conditions, []);
  const card = gm.ChatMessage.created.at(-1).data.content;
  assert.match(card, /Allies: <span class="ally">Hobgoblin Seer \(Imagination swarm, 2d6\)<\/span>/);
  assert.deepEqual(gm.notes.warn, []);
});

test("the question whether a creature joins closes itself on the player's client at the world's defense timeout", async () => {
  const { t } = await attackTable({
    dialogs: { p2: { joinDialog: { join: null, timedOut: false } } },
    creatures: [{ name: "Turncoat", profile: seer(), owner: "p2" }],
  });
  await t.clients.gm.game.settings.set("mindscape", "defenseTimeout", 20);
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  const [question] = t.clients.p2.dialogs.seen.filter((s) => s.kind === "joinDialog");
  assert.equal(question.arg.timeoutMs, 20000);
});

test("a creature a player owns is asked on that player's client; one whose struck ally is hidden from players is not asked", async () => {
  const { t, calls } = await attackTable({
    dialogs: { p2: { joinDialog: { join: "0", timedOut: false } } },
    creatures: [{ name: "Turncoat", profile: seer(), owner: "p2" }],
  });
  const gm = t.clients.gm;
  const attack = () => gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  await attack();
  assert.deepEqual(asked(gm), []);
  assert.deepEqual(asked(t.clients.p2).map((q) => q.groups[0].names), ["Goblin"]);
  assert.deepEqual(refIds(calls[0].allies), ["turncoat"]);
  // Bo's client does not see the hidden goblin: it is not told of it, so not asked.
  t.tokens.goblinToken.hidden = true;
  await attack();
  assert.equal(asked(t.clients.p2).length, 1);
  assert.equal(calls[1].allies, undefined);
  assert.equal(calls[1].defenses, undefined);
  // Bo away: the GM answers for the creature, and sees the hidden goblin.
  t.p2.active = false;
  await attack();
  assert.deepEqual(asked(gm).map((q) => q.groups[0].names), ["Goblin"]);
});

test("no answer in time, Stay out, a closed dialog or an answer not offered is no join; nobody eligible means nobody asked", async () => {
  // The GM's dialog never answers (closed where it cannot be), then Stay out, then a forged answer.
  const answers = [new Promise(() => {}), { join: null, cancelled: true }, { join: "3" }];
  const { t, calls } = await attackTable({
    dialogs: { gm: { joinDialog: () => answers.shift() } },
    creatures: [{ name: "Hobgoblin Seer", profile: seer() }],
  });
  const gm = t.clients.gm;
  await gm.game.settings.set("mindscape", "defenseTimeout", 0);
  gm.svc.defenseGraceMs = 20;
  for (let i = 0; i < 3; i++) {
    await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  }
  assert.equal(asked(gm).length, 3);
  assert.deepEqual(calls.map((p) => [p.allies, p.defenses]), [[undefined, undefined], [undefined, undefined], [undefined, undefined]]);
  // Fenka (friendly) is struck: the hostile seer is not her ally, and nobody is asked.
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  assert.equal(asked(gm).length, 3);
  assert.equal(calls.length, 4);
});

test("in a psionic wave a creature joins the one group, led by the mind struck first, even when its ally is struck second", async () => {
  const { t, calls } = await attackTable({
    dialogs: { gm: { joinDialog: { join: "0" } }, p2: { defenseDialog: { mode: "pinnacle-of-will" } } },
    creatures: [{ name: "Hobgoblin Seer", profile: seer() }],
  });
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: { mode: "psionic-wave" } }, gm.game.user);
  assert.deepEqual(asked(gm).map((q) => q.groups), [[{ value: "0", names: "Goblin", checked: true }]]);
  assert.equal(calls.length, 1);
  const [params] = calls;
  assert.equal(combatantIdOfRef(params.defender), "fenka-tokF");
  assert.deepEqual(refIds(params.allies), ["hobgoblinseer"]);
  assert.deepEqual(params.defenses, { "goblin-tokG": {}, hobgoblinseer: { mode: SWARM } });
});

test("at several targets one at a time, a creature allied to more than one is asked once and joins the defense it picks", async () => {
  const { t, calls } = await attackTable({
    dialogs: { gm: { joinDialog: { join: "1" } } },
    creatures: [{ name: "Orc", profile: pool() }, { name: "Hobgoblin Seer", profile: seer() }],
  });
  const gm = t.clients.gm;
  const orc = t.world.docs.get("Scene.scene1.Token.tokorc");
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid, orc.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  const questions = asked(gm);
  assert.equal(questions.length, 1);
  assert.equal(questions[0].several, true);
  assert.deepEqual(questions[0].groups.map((g) => g.names), ["Goblin", "Orc"]);
  assert.equal(calls.length, 2);
  assert.equal(calls[0].allies, undefined);
  assert.deepEqual(refIds(calls[1].allies), ["hobgoblinseer"]);
  assert.deepEqual(calls[1].defenses, { hobgoblinseer: { mode: SWARM } });
});

test("a joiner and the non-psionic allies the struck mind draws in go together, each once, and a joiner's puppets go along", async () => {
  const { t, calls } = await attackTable({
    dialogs: {
      gm: {
        joinDialog: { join: "0" },
        defenseDialog: (arg) => ({ mode: SWARM, allies: arg.context.allies.map((a) => a.uuid), timedOut: false }),
      },
    },
    creatures: [
      { name: "Hobgoblin Seer", profile: seer({ controlling: [{ id: "thrall", kept_by: "action" }] }) },
      { name: "Skum", profile: { psionic: false, hit_dice: 2, die: 8 } },
      { name: "Thrall", profile: seer({ controlled_by: "hobgoblinseer" }), disposition: 1 },
    ],
  });
  t.tokens.goblinToken.actor.flags.mindscape[POOL].defenses = [SWARM];
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  const drawing = gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.deepEqual(drawing.allies.map((a) => a.name), ["Skum"], "the psionic seer is never offered to be drawn in");
  const [params] = calls;
  assert.deepEqual(refIds(params.allies), ["skum", "hobgoblinseer"]);
  assert.deepEqual(params.defenses, { hobgoblinseer: { mode: SWARM } });
  assert.deepEqual(refIds(params.puppets), ["thrall"]);
  // The scene is read once for both lists: the thrall, in neither, was read once.
  const read = t.daemon.calls.filter((c) => c.method === "adapters.import").map((c) => c.params.data.actor.name);
  assert.equal(read.filter((n) => n === "Thrall").length, 1, read.join(", "));
});

// ------------------------------------------------------- encounters

// A power-pool encounter of Ulcen, Fenka, the goblin and `creatures` (each placed as in
// `attackTable`), whose view is `view` (encounter.get) and whose declare and resolve are
// recorded in `sent`.
async function encounterTable({ view, creatures = [], dialogs = {}, refuse = () => null }) {
  const sent = [];
  const { methods } = encounterMethods({
    "systems.describe": describe,
    "encounter.get": () => structuredClone(view),
    "encounter.declare": (params) => {
      const refused = refuse(params);
      if (refused) throw refused;
      sent.push(["declare", params.combatant_id, params.choice]);
      return { revision: 9, waiting_for: [], updates: [] };
    },
    "encounter.resolve": () => { sent.push(["resolve"]); return { revision: 10, results: [], updates: [] }; },
  });
  const t = makeTable({ methods, dialogs });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const uuids = [t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid];
  for (const c of creatures) {
    const id = c.name.toLowerCase().replace(/\W/g, "");
    const ownership = c.owner ? { [t[c.owner].id]: 3 } : {};
    const actor = t.world.actor({ id, name: c.name, type: "npc", disposition: c.disposition ?? -1, ownership, flags: { mindscape: {} } });
    uuids.push(t.world.token({ id: `tok${id}`, name: c.name, actor, actorLink: true }).uuid);
  }
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create(uuids, "Pit");
  return { t, ctl, sent };
}

// The goblin attacked Fenka; she is still to defend. Ulcen (Ann's) and the Seer (an NPC)
// are on her side and know the swarm; the Kobold knows it but is the goblin's ally.
const defensePhase = (combatants = {}) => ({
  phase: "defense", round: 1, exchange: 0, declared: ["goblin-tokG"], waiting_for: ["fenka-tokF"], struck: ["fenka-tokF"], revision: 5,
  combatants: { ulcen: seer(), "fenka-tokF": pool(), "goblin-tokG": pool(), seer: seer(), kobold: seer(), ...combatants },
});
const ENCOUNTER_CREATURES = [{ name: "Seer", disposition: 1 }, { name: "Kobold" }];

test("Ask for choices in an encounter's defense phase asks, with the struck mind, each combatant on its side that may join; a yes is declared as its own defense", async () => {
  const { t, ctl, sent } = await encounterTable({
    view: defensePhase(),
    creatures: ENCOUNTER_CREATURES,
    dialogs: {
      p1: { joinDialog: { join: "0", timedOut: false } },
      p2: { encounterChoiceDialog: { defenseMode: "pinnacle-of-will", phase: "defense" } },
      gm: { joinDialog: { join: null, timedOut: true } },
    },
  });
  await ctl.collectChoices();
  // Ulcen's owner and the GM (for the Seer) were asked; the view keeps the attack
  // secret, so the question names only the mind struck.
  const [ann] = asked(t.clients.p1);
  assert.equal(ann.name, "Ulcen of Tyr");
  assert.equal(ann.attackerName, null);
  assert.deepEqual(ann.groups, [{ value: "0", names: "Fenka", checked: true }]);
  assert.deepEqual(asked(t.clients.gm).map((q) => q.name), ["Seer"]);
  assert.deepEqual(asked(t.clients.p2), []);
  // Fenka's defense and Ulcen's join are declared; the Seer gave no answer in time.
  assert.deepEqual(sent.filter(([kind]) => kind === "declare").map(([, cid, choice]) => [cid, choice]).sort(), [
    ["fenka-tokF", { defense: { mode: "pinnacle-of-will" } }],
    ["ulcen", { defense: { mode: SWARM } }],
  ]);
  assert.deepEqual(t.clients.gm.notes.warn, []);
});

test("an encounter asks nobody to join who is in the exchange already, under control, mindless, unaware or ignorant of the swarm, or when nobody is struck", async () => {
  const { t, ctl } = await encounterTable({
    view: defensePhase({ ulcen: seer({ controlled_by: "goblin-tokG" }), seer: seer({ conditions: ["stunned"] }) }),
    creatures: [...ENCOUNTER_CREATURES, { name: "Statue", disposition: 1 }, { name: "Sage", disposition: 1 }, { name: "Helper", disposition: 1 }],
  });
  const view = defensePhase({ ulcen: seer({ controlled_by: "goblin-tokG" }), seer: seer({ conditions: ["stunned"] }), statue: seer({ mindless: true }), sage: pool(), helper: seer() });
  // The Helper joined already (it is among those who declared).
  view.declared = ["goblin-tokG", "helper"];
  await ctl.askJoins(view);
  assert.deepEqual([...asked(t.clients.gm), ...asked(t.clients.p1)], []);
  // The attack phase: nobody is struck, nobody is asked.
  const idle = { ...defensePhase(), phase: "attack", waiting_for: ["goblin-tokG"], struck: [], declared: [] };
  assert.deepEqual(await ctl.askJoins(idle), []);
  assert.deepEqual([...asked(t.clients.gm), ...asked(t.clients.p1)], []);
});

test("the defense of a struck mind that cannot choose (asleep) or has chosen is still joined: the view's struck names it, waiting_for does not", async () => {
  // Fenka is asleep: she rolls nothing and is not waited for, yet she is struck.
  const asleep = { ...defensePhase({ "fenka-tokF": pool({ conditions: ["asleep"] }) }), waiting_for: [] };
  const { t, ctl, sent } = await encounterTable({
    view: asleep,
    creatures: ENCOUNTER_CREATURES,
    dialogs: { p1: { joinDialog: { join: "0" } }, gm: { joinDialog: { join: null } } },
  });
  await ctl.collectChoices();
  assert.deepEqual(asked(t.clients.p1).map((q) => [q.name, q.groups.map((g) => g.names)]), [["Ulcen of Tyr", ["Fenka"]]]);
  assert.deepEqual(asked(t.clients.gm).map((q) => q.name), ["Seer"]);
  assert.deepEqual(asked(t.clients.p2), [], "Fenka has nothing to choose");
  // The Seer's Stay out is declared too (as secret as a yes), so that who declared does
  // not tell the attacker's side who joined.
  assert.deepEqual(sent.map(([kind, cid, choice]) => [kind, cid, choice]).sort(), [
    ["declare", "seer", { defense: { mode: null } }], ["declare", "ulcen", { defense: { mode: SWARM } }]]);
  // Fenka declared her defense already: a later ask still offers to join it (not to
  // the Seer, whose owner said Stay out to this attack).
  const chosen = { ...defensePhase(), waiting_for: [], declared: ["fenka-tokF", "goblin-tokG"] };
  assert.equal((await ctl.askJoins(chosen)).length, 1);
  assert.equal(asked(t.clients.p1).length, 2);
  assert.equal(asked(t.clients.gm).length, 1);
});

test("a creature that said Stay out is not asked again about the same attack; one that did not answer in time is, and a new attack asks everyone", async () => {
  const { t, ctl } = await encounterTable({
    view: defensePhase(),
    creatures: ENCOUNTER_CREATURES,
    // Ann closes the question (Stay out); the GM lets the Seer's run out.
    dialogs: { p1: { joinDialog: { join: null, timedOut: false, cancelled: true } }, gm: { joinDialog: { join: null, timedOut: true } } },
  });
  await ctl.askJoins(defensePhase());
  await ctl.askJoins(defensePhase());
  assert.equal(asked(t.clients.p1).length, 1, "Ulcen said Stay out");
  assert.equal(asked(t.clients.gm).length, 2, "the Seer gave no answer in time");
  // The next exchange's attack: asked again.
  await ctl.askJoins({ ...defensePhase(), exchange: defensePhase().exchange + 1 });
  assert.equal(asked(t.clients.p1).length, 2);
  // Another encounter with the same tokens starts at round 1, exchange 0 again: asked again.
  await ctl.askJoins({ ...defensePhase(), exchange: defensePhase().exchange + 1 });
  assert.equal(asked(t.clients.p1).length, 2, "said Stay out to that attack");
  await t.clients.gm.game.settings.set("mindscape", "encounter", { ...ctl.meta, id: "enc-next" });
  await ctl.askJoins(defensePhase());
  assert.equal(asked(t.clients.p1).length, 3);
});

test("a Stay out the companion refuses, or one that comes after the attack was resolved, is not told to the GM: it changes nothing", async () => {
  const view = defensePhase();
  const dialogs = { p1: { joinDialog: { join: null } }, gm: { joinDialog: { join: null } } };
  const { t, ctl, sent } = await encounterTable({
    view,
    creatures: ENCOUNTER_CREATURES,
    dialogs,
    refuse: ({ combatant_id }) => combatant_id === "ulcen" && { code: 4001, message: "The rules forbid it", data: { rule: "not-defending", detail: "Ulcen is not struck" } },
  });
  await ctl.askJoins(view);
  assert.deepEqual(sent, [["declare", "seer", { defense: { mode: null } }]]);
  assert.deepEqual(t.clients.gm.notes.warn, []);
  // The exchange was resolved before the answers came: nothing is declared.
  const late = await encounterTable({ view: { ...view, phase: "attack", exchange: 1, struck: [] }, creatures: ENCOUNTER_CREATURES, dialogs });
  await late.ctl.askJoins(view);
  assert.equal(asked(late.t.clients.gm).length, 1);
  assert.deepEqual(late.sent, []);
  assert.deepEqual(late.t.clients.gm.notes.warn, []);
});

test("a player is not asked about a struck mind without a token on the scene (a world actor); the GM is", async () => {
  const { t, ctl } = await encounterTable({
    view: defensePhase(),
    creatures: ENCOUNTER_CREATURES,
    dialogs: { p1: { joinDialog: { join: "0" } }, gm: { joinDialog: { join: null } } },
  });
  // The warlock, on Fenka's side, is an actor of the world with no token placed.
  const warlock = t.world.actor({ id: "warlock", name: "Warlock", type: "npc", disposition: 1, flags: { mindscape: {} } });
  await ctl.add([warlock.uuid]);
  assert.equal(ctl.meta.combatants.warlock.tokenUuid, null);
  const view = { ...defensePhase({ warlock: pool() }), waiting_for: ["warlock"], struck: ["warlock"] };
  await ctl.askJoins(view);
  assert.deepEqual(asked(t.clients.p1), [], "Ann cannot see the warlock");
  assert.deepEqual(asked(t.clients.gm).map((q) => [q.name, q.groups.map((g) => g.names)]), [["Seer", ["Warlock"]]]);
});

/**
 * An encounter in its defense phase (`view`) whose Seer (the GM's) is asked to join and
 * answers only when the test calls `held.reply(answer)`; Fenka (Bo's) declares no defense
 * at once. `held.asked()` waits until the Seer's question is open and something was
 * declared; `held.reply = null` before asking again.
 */
async function heldJoin(view = defensePhase(), dialogs = {}) {
  const held = { reply: null };
  const table = await encounterTable({
    view,
    creatures: ENCOUNTER_CREATURES,
    dialogs: {
      gm: { joinDialog: () => new Promise((resolve) => { held.reply = resolve; }) },
      p2: { encounterChoiceDialog: { defenseMode: "", phase: "defense" } },
      ...dialogs,
    },
  });
  held.asked = async () => { while (!held.reply || !table.sent.length) await new Promise((r) => setTimeout(r, 5)); };
  return { ...table, held };
}

test("a resolve waits for the join questions still open, Resolve anyway does not, and a yes after the exchange was resolved is not declared", async () => {
  const view = defensePhase();
  const { t, ctl, sent, held } = await heldJoin(view);
  const asking = ctl.collectChoices();
  await held.asked();
  const resolving = ctl.resolve();
  await new Promise((r) => setTimeout(r, 20));
  assert.ok(!sent.some(([kind]) => kind === "resolve"), "the resolve waits for the Seer");
  assert.match(t.clients.gm.notes.info.at(-1), /Waiting for the answers whether others join the defense/);
  held.reply({ join: "0" });
  await Promise.all([asking, resolving]);
  assert.deepEqual(sent.map(([kind, cid]) => [kind, cid ?? null]).slice(-2), [["declare", "seer"], ["resolve", null]]);

  // Resolve anyway goes on at once; the Seer's late yes finds the exchange resolved.
  sent.length = 0;
  held.reply = null;
  const again = ctl.collectChoices();
  await held.asked();
  await ctl.resolve({ force: true });
  view.exchange = 1;
  view.phase = "attack";
  held.reply({ join: "0" });
  await again;
  assert.deepEqual(sent.filter(([kind]) => kind === "declare").map(([, cid]) => cid), ["fenka-tokF"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /^Seer chose to join the defense too late \(that attack was resolved, or declared again, meanwhile\): it did not join\.$/);
});

test("a second Ask for choices neither asks again a creature whose join question is open nor lets Resolve go on before it is answered", async () => {
  const { t, ctl, sent, held } = await heldJoin();
  const first = ctl.collectChoices();
  await held.asked();
  // Fenka is asked again (her dialog answers at once); the Seer's question is open.
  await ctl.collectChoices();
  assert.equal(asked(t.clients.gm).length, 1, "the Seer is not asked twice");
  const resolving = ctl.resolve();
  await new Promise((r) => setTimeout(r, 20));
  assert.ok(!sent.some(([kind]) => kind === "resolve"), "the resolve waits for the Seer's open question");
  held.reply({ join: "0" });
  await Promise.all([first, resolving]);
  assert.deepEqual(sent.map(([kind, cid]) => [kind, cid ?? null]).slice(-2), [["declare", "seer"], ["resolve", null]]);
  assert.equal(ctl.joinQuestions.size, 0);
});

test("a yes that comes when the encounter is in another round or exchange, or past the defense phase, is not declared: the attack it answered is over", async () => {
  for (const change of [{ round: 2 }, { exchange: 1 }, { phase: "attack" }]) {
    const view = defensePhase();
    const { t, ctl, sent, held } = await heldJoin(view);
    const asking = ctl.collectChoices();
    await held.asked();
    Object.assign(view, change);
    held.reply({ join: "0" });
    await asking;
    assert.deepEqual(sent.filter(([kind]) => kind === "declare").map(([, cid]) => cid), ["fenka-tokF"], JSON.stringify(change));
    assert.match(t.clients.gm.notes.warn.at(-1), /^Seer chose to join the defense too late/);
  }
});

test("from a companion that does not name the minds struck, a yes is not declared once the attack strikes the joiner itself", async () => {
  const view = defensePhase();
  delete view.struck;
  const { t, ctl, sent, held } = await heldJoin(view, { p1: { joinDialog: { join: null, timedOut: true } } });
  const asking = ctl.collectChoices();
  await held.asked();
  Object.assign(view, { waiting_for: ["seer"], declared: ["goblin-tokG"] });
  held.reply({ join: "0" });
  await asking;
  assert.deepEqual(sent.filter(([kind]) => kind === "declare").map(([, cid]) => cid), ["fenka-tokF"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /^Seer chose to join the defense too late/);
});

test("a yes is not declared against another attack declared within the same exchange: one striking others, or the joiner itself", async () => {
  for (const struck of [["ulcen"], ["seer"]]) {
    const view = defensePhase();
    // Ulcen lets its question run out (a Stay out would be declared, whenever it came).
    const { t, ctl, sent, held } = await heldJoin(view, { p1: { joinDialog: { join: null, timedOut: true } } });
    const asking = ctl.collectChoices();
    await held.asked();
    // The attack was declared again (the goblin's first was dropped by a refresh):
    // the same round, exchange and phase, other minds struck.
    Object.assign(view, { struck, waiting_for: struck, declared: ["goblin-tokG"] });
    held.reply({ join: "0" });
    await asking;
    assert.deepEqual(sent.filter(([kind]) => kind === "declare").map(([, cid]) => cid), ["fenka-tokF"], struck.join());
    assert.match(t.clients.gm.notes.warn.at(-1), /^Seer chose to join the defense too late \(that attack was resolved, or declared again, meanwhile\): it did not join\.$/);
  }
});

test("Draw in is offered only to the mind struck first (the companion refuses another's allies), and never a struck mind that cannot choose", async () => {
  const { ctl } = await encounterTable({
    view: defensePhase(),
    creatures: [{ name: "Wolf", disposition: 1 }, { name: "Hound", disposition: 1 }],
  });
  const beast = (extra = {}) => ({ psionic: false, hit_dice: 2, die: 8, pool: 0, ...extra });
  // A wave struck Fenka first, then Ulcen and the hound (asleep: it cannot choose).
  const wave = {
    ...defensePhase({ wolf: beast(), hound: beast({ conditions: ["asleep"] }) }),
    waiting_for: ["fenka-tokF", "ulcen"], struck: ["fenka-tokF", "ulcen", "hound"],
  };
  const drawIn = async (cid) => (await ctl.choiceContext(cid, wave)).pool.allies.map((a) => a.name);
  assert.deepEqual(await drawIn("fenka-tokF"), ["Wolf"]);
  assert.deepEqual(await drawIn("ulcen"), []);
  // A single target leads its own defense.
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", defensePhase({ wolf: beast(), hound: beast() }))).pool.allies.map((a) => a.name), ["Wolf", "Hound"]);
});

test("a creature the attacker's own player co-owns is asked to join the defense against that attack on its other owner's client", async () => {
  const { t, calls, placed } = await attackTable({
    dialogs: { p1: { joinDialog: { join: null, timedOut: false } }, p2: { joinDialog: { join: "0", timedOut: false } } },
    creatures: [{ name: "Turncoat", profile: seer(), owner: "p1" }],
  });
  // Ann (p1, Ulcen's player, first among the users) and Bo (p2) both own the Turncoat.
  placed.Turncoat.actor.ownership[t.p2.id] = 3;
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, t.p1);
  assert.deepEqual(asked(t.clients.p1), [], "the attacker's player chose whether to join the defense against its own attack");
  assert.deepEqual(asked(t.clients.p2).map((q) => q.groups[0].names), ["Goblin"]);
  assert.deepEqual(refIds(calls[0].allies), ["turncoat"]);
});
