// Creatures are found on the world's scenes, whatever scene the GM's client shows.
// Foundry's Actor#getActiveTokens answers only the tokens on the scene the canvas shows,
// and none without a canvas (client/documents/actor.mjs), so a GM looking at another
// scene, or playing without the canvas, must not lose the creatures of the scene played.
import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultMethods, makeTable, poolImport } from "../test-support/scenario.mjs";
import { POOL, pool, poolTable, refId } from "../test-support/pool-table.mjs";

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
    const { t, calls, thrall } = await poolTable({
      dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
      control: (table) => {
        table.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool({ pool: 0, controlled_by: "goblin-tokG" });
        table.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }, { id: "thrall-tokT", kept_by: "action" }] });
      },
    });
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
  const { t, calls } = await poolTable({
    dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
    control: (table) => {
      table.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool({ pool: 0, controlled_by: "goblin-tokG" });
      table.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }] });
    },
  });
  // A copy of the scene keeps its tokens' ids; it is the active scene, and the GM views it.
  const copy = t.world.token({ id: "tokG", sceneId: "copy", name: "Goblin", actor: t.actors.goblin, actorLink: false });
  copy.actor.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }] });
  t.world.activeSceneId = "copy";
  t.world.canvas = { ready: true, sceneId: "copy", controlled: [] };
  await t.clients.gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
  assert.equal(calls[0].controllers[0].data.token.uuid, t.tokens.goblinToken.uuid);
});

test("an attacker named by its world actor's uuid fights through its token on its targets' scene, before the active scene's", async () => {
  const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: "mind-blank" } } } });
  t.world.token({ id: "tokU2", sceneId: "copy", name: "Ulcen (copy)", actor: t.actors.ulcen, actorLink: true });
  t.world.activeSceneId = "copy";
  t.world.canvas = { ready: true, sceneId: "copy", controlled: [] };
  const ask = { attackerUuid: t.actors.ulcen.uuid, targetUuids: [t.tokens.fenkaToken.uuid] };
  const attack = { mode: "mind-thrust", multiplier: 1, range: "short" };
  const gm = t.clients.gm.game.user;
  assert.equal((await t.clients.gm.svc.prepare(ask, gm)).attackerName, "Ulcen of Tyr");
  await t.clients.gm.svc.odds({ ...ask, targetUuid: t.tokens.fenkaToken.uuid, attack }, gm);
  await t.clients.gm.svc.startAttack({ ...ask, attack });
  for (const method of ["exchange.odds", "exchange.resolve"]) {
    const sent = t.daemon.calls.filter((c) => c.method === method).at(-1);
    assert.equal(sent.params.attacker.data.token.uuid, t.tokens.ulcenToken.uuid, method);
  }
});

test("a world actor named by its uuid whose tokens are all on a scene other than the active one fights through its token there", async () => {
  const t = makeTable();
  t.world.token({ id: "tokO", sceneId: "copy", name: "Other", actor: t.actors.goblin, actorLink: false });
  t.world.activeSceneId = "copy";
  const ulcen = await t.clients.gm.svc.docs(t.actors.ulcen.uuid);
  assert.equal(ulcen.token, t.tokens.ulcenToken);
});

test("a combatant id of an unlinked token (<actor id>-<token id>) names that token only while it is unlinked and holds that actor", async () => {
  const t = makeTable();
  const svc = t.clients.gm.svc;
  assert.equal((await svc.docsOfCombatant("goblin-tokG")).token, t.tokens.goblinToken);
  assert.equal(await svc.docsOfCombatant("fenka-tokG"), null);
  t.tokens.goblinToken.actorLink = true;
  assert.equal(await svc.docsOfCombatant("goblin-tokG"), null);
});
