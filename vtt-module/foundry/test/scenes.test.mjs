// Creatures are found on the world's scenes, whatever scene the GM's client shows.
// Foundry's Actor#getActiveTokens answers only the tokens on the scene the canvas shows,
// and none without a canvas (client/documents/actor.mjs), so a GM looking at another
// scene, or playing without the canvas, must not lose the creatures of the scene played.
import { test } from "node:test";
import assert from "node:assert/strict";
import { combatantIdOfRef, defaultMethods, makeTable, poolImport } from "../test-support/scenario.mjs";

const POOL = "power-pool";

// The companion's power-pool as far as these tests need it: the modes (psionic-wave
// attacks several targets), and an import that reads the profile in the flags with the
// id the foundry.* adapters give.
const poolMethods = (resolve) => defaultMethods({
  "systems.describe": ({ system }) => ({
    id: system,
    modes: {
      attacks: [{ id: "mental-stab" }, { id: "psionic-wave", several_targets: true }],
      defenses: [{ id: "pinnacle-of-will" }, { id: "blank-mind" }, { id: "imagination-swarm", draws_allies: true }],
    },
    combatant_schema: { type: "object", properties: {} },
    house_rules: [],
  }),
  "adapters.import": ({ data }) => {
    if (data.actor.flags?.mindscape?.unreadable) throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/data/actor", message: "not a sheet this adapter reads" }] } };
    return { combatant: { id: combatantIdOfRef({ data }), name: data.actor.name, ...(data.actor.flags?.mindscape?.[POOL] ?? {}) }, warnings: [] };
  },
  "exchange.odds": () => ({ outcomes: { attacker: 0.4, defender: 0.6 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 } }),
  "exchange.resolve": resolve,
});

const pool = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab", "psionic-wave"], defenses: ["pinnacle-of-will"], ...extra });

// Ulcen (Ann's) attacks; Fenka (Bo's, an unlinked token) and the goblin are the targets.
// `control`: who controls whom, as the flags hold it.
async function poolTable({ resolve, dialogs = {}, control = () => {} } = {}) {
  const calls = [];
  const t = makeTable({
    methods: poolMethods((params) => { calls.push(params); return resolve ? resolve(params) : { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }; }),
    dialogs,
  });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const set = (actor, profile) => { actor.flags.mindscape[POOL] = pool(profile); };
  set(t.actors.ulcen, {});
  set(t.tokens.fenkaToken.actor, {});
  set(t.tokens.goblinToken.actor, {});
  const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { [POOL]: pool({ pool: 0, controlled_by: "goblin-tokG" }) } } });
  control(t, thrall);
  return { t, calls, thrall };
}

const refId = (ref) => combatantIdOfRef(ref);

const VIEWS = [
  { name: "the GM views another scene", canvas: { ready: true, sceneId: "elsewhere", controlled: [] } },
  { name: "the GM plays without the canvas", canvas: { ready: false, controlled: [] } },
];

test("the stand-in's getActiveTokens is Foundry's: the tokens on the scene shown only, none without a canvas", () => {
  const t = makeTable();
  assert.deepEqual(t.actors.fenka.getActiveTokens(false, true).map((d) => d.id), ["tokF"]);
  t.world.addScene("elsewhere");
  for (const { canvas } of VIEWS) {
    t.world.canvas = canvas;
    assert.deepEqual(t.actors.fenka.getActiveTokens(false, true), []);
    assert.deepEqual(t.tokens.fenkaToken.actor.getActiveTokens(false, true), []);
  }
});

for (const { name, canvas } of VIEWS) {
  test(`power-pool, ${name}: an attack on a creature whose controller is an unlinked token strikes that controller, and the puppets go along`, async () => {
    const calls = [];
    const t = makeTable({
      methods: poolMethods((params) => { calls.push(params); return { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }; }),
      dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
    });
    await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
    t.actors.ulcen.flags.mindscape[POOL] = pool();
    t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool({ pool: 0, controlled_by: "goblin-tokG" });
    t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }, { id: "thrall-tokT", kept_by: "action" }] });
    const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { [POOL]: pool({ pool: 0, controlled_by: "goblin-tokG" }) } } });
    t.world.token({ id: "tokT", name: "Thrall", actor: thrall, actorLink: false });
    t.world.addScene("elsewhere");
    t.world.canvas = canvas;
    const outcome = await t.clients.gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
    assert.equal(outcome[0].outcome, "defender", JSON.stringify(t.clients.gm.notes));
    const [params] = calls;
    assert.deepEqual(params.controllers.map(refId), ["goblin-tokG"]);
    assert.deepEqual(params.puppets.map(refId), ["thrall-tokT"]);
    assert.deepEqual(t.clients.gm.notes.warn, []);
  });

  test(`${name}: a world actor named by its uuid fights through its token on the active scene`, async () => {
    const t = makeTable();
    t.world.addScene("elsewhere");
    t.world.canvas = canvas;
    const fenka = await t.clients.gm.svc.docs("Actor.fenka");
    assert.equal(fenka.token, t.tokens.fenkaToken);
    assert.equal(fenka.actor, t.tokens.fenkaToken.actor);
    const ulcen = await t.clients.gm.svc.docs("Actor.ulcen", { worldActor: true });
    assert.equal(ulcen.token, t.tokens.ulcenToken);
  });

  test(`power-pool, ${name}: the end of a round takes along an unlinked puppet held by an action`, async () => {
    const t = makeTable({ methods: defaultMethods({ "adapters.import": poolImport }) });
    await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
    const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { [POOL]: pool({ pool: 0, controlled_by: "goblin-tokG" }) } } });
    t.world.token({ id: "tokT", name: "Thrall", actor: thrall, actorLink: false });
    t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "thrall-tokT", kept_by: "action" }] });
    t.world.addScene("elsewhere");
    t.world.canvas = canvas;
    const seen = [];
    t.clients.gm.Hooks.on("mindscape.roundEnded", (payload) => seen.push(payload));
    await t.clients.gm.svc.startEndRound({ tokenUuids: [t.tokens.goblinToken.uuid] });
    assert.deepEqual(t.clients.gm.notes.error, []);
    const sent = t.daemon.calls.find((c) => c.method === "exchange.end_round").params;
    assert.deepEqual((sent.puppets ?? []).map(refId), ["thrall-tokT"]);
    assert.deepEqual(t.clients.gm.notes.warn, []);
  });
}

test("a token id found on two scenes (a duplicated scene) is the one on the attack's own scene, not on the active one", async () => {
  const calls = [];
  const t = makeTable({
    methods: poolMethods((params) => { calls.push(params); return { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }; }),
    dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
  });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  t.actors.ulcen.flags.mindscape[POOL] = pool();
  t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool({ pool: 0, controlled_by: "goblin-tokG" });
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }] });
  // A copy of the scene keeps its tokens' ids; it is the active scene, and the GM views it.
  const copy = t.world.token({ id: "tokG", sceneId: "copy", name: "Goblin", actor: t.actors.goblin, actorLink: false });
  copy.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }] });
  t.world.activeSceneId = "copy";
  t.world.canvas = { ready: true, sceneId: "copy", controlled: [] };
  await t.clients.gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
  assert.equal(calls[0].controllers[0].data.token.uuid, t.tokens.goblinToken.uuid);
});
