// power-pool psionic control in single attacks (RULES.md §3.2-3.4) over the fakes: an
// attack on a creature under control strikes its controller, whose owner is asked for
// the defense; the controller and every creature a participant controls go with the
// request, and their sheets take the companion's write-back; a psionic wave at several
// targets is one exchange against all of them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encounterMethods, makeTable, renderModuleTemplate } from "../test-support/scenario.mjs";
import { DaemonUnreachableError } from "../mindscape/scripts/errors.js";
import { makeApi } from "../mindscape/scripts/api.js";
import { POOL, pool, poolMethods, poolTable, refId } from "../test-support/pool-table.mjs";

test("the attack dialog offers to spare the target Subconscious Subversion's Fear; ticked, the attack declines it, but only with that mode", async () => {
  // Seed 001: on a successful Subversion "the attacker may choose to frighten" (the
  // companion's describe: an optional effect, spared by attack.decline).
  for (const [mode, decline] of [["subconscious-subversion", ["frightened"]], ["mental-stab", undefined]]) {
    const seen = [];
    const { t, calls } = await poolTable({
      dialogs: { p1: { attackDialog: (arg) => { seen.push(arg.context); return { mode, decline: ["frightened"], physical: false }; } }, p2: { defenseDialog: { mode: "pinnacle-of-will" } } },
      control: (table) => { table.actors.ulcen.flags.mindscape[POOL].attacks = ["mental-stab", "subconscious-subversion"]; },
    });
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
    assert.deepEqual(seen[0].declinable, [{ value: "frightened", label: "If it wins, spare the target the Frightened effect (Subconscious subversion: the attacker may choose)" }]);
    assert.equal(calls.length, 1, mode);
    assert.deepEqual(calls[0].attack.decline, decline, mode);
  }
});

test("the attack dialog offers from one die to the attacker's whole current pool, the whole pool picked (seed 001: each side rolls all or a declared part of its pool)", async () => {
  const seen = [];
  const { t } = await poolTable({
    dialogs: { p1: { attackDialog: (arg) => { seen.push(arg.context); return null; } } },
    // Three hit dice, two of them in the pool now.
    control: (table) => { table.actors.ulcen.flags.mindscape[POOL].pool = 2; },
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  assert.deepEqual(seen[0].poolDice, [{ value: 1, selected: false }, { value: 2, selected: true }]);
  assert.match(renderModuleTemplate("attack-dialog", seen[0]), /name="pool_dice">\s*<option value="1">1<\/option><option value="2" selected>2<\/option>\s*<\/select>/);
});

test("an attack on a creature under control strikes its controller: the controller's owner chooses, and controller and puppets go with the request", async () => {
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } }, gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
    // The goblin holds Fenka (kept by a die) and the thrall (by an action).
    control: (table) => {
      table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "goblin-tokG";
      table.tokens.fenkaToken.actor.flags.mindscape[POOL].pool = 0;
      table.tokens.goblinToken.actor.flags.mindscape[POOL].controlling = [{ id: "fenka-tokF", kept_by: "die" }, { id: "thrall", kept_by: "action" }];
    },
    // The companion's answer (engine/power_pool): the defender is the goblin struck.
    resolve: (params) => ({
      system: POOL, winner: "attacker", outcome: "attacker", summary: "Ulcen overwhelms the goblin.",
      attacker: { id: "ulcen", before: { id: "ulcen", name: "Ulcen of Tyr", pool: 3 }, after: { id: "ulcen", name: "Ulcen of Tyr", pool: 3 } },
      defender: { id: "goblin-tokG", before: { id: "goblin-tokG", name: "Goblin", pool: 3 }, after: { id: "goblin-tokG", name: "Goblin", pool: 0 } },
      others: [{ id: "fenka-tokF", before: { id: "fenka-tokF", name: "Fenka", pool: 0 }, after: { id: "fenka-tokF", name: "Fenka", pool: 0 } }],
      rolls: [{ purpose: "attack", sides: 8, value: 8, by: "ulcen", follows: null }, { purpose: "defense", sides: 8, value: 1, by: "goblin-tokG", follows: null }],
      events: [{ type: "control-ended", combatant: "fenka-tokF", controller: "goblin-tokG", reason: "controller-overcome" }],
      effects: [{ effect: "controlled", combatant: "goblin-tokG", controller: "ulcen" }],
      redirected: [{ from: "fenka-tokF", to: "goblin-tokG" }],
      updates: [
        { uuid: `${params.controllers[0].data.token.uuid}.Actor.goblin`, update: { "flags.mindscape.power-pool.controlled_by": "ulcen", "flags.mindscape.power-pool.controlling": [] } },
        { uuid: `${params.defender.data.token.uuid}.Actor.fenka`, update: { "flags.mindscape.power-pool.controlled_by": null } },
        { uuid: "Actor.thrall", update: { "flags.mindscape.power-pool.controlled_by": null } },
      ],
    }),
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  // The goblin is the GM's: the GM chose, not Fenka's owner, and was told why.
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);
  const asked = t.clients.gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.equal(asked.defenderName, "Goblin");
  assert.equal(asked.aimedAt, "Fenka");
  const [params] = calls;
  assert.equal(refId(params.defender), "fenka-tokF");
  assert.deepEqual(params.controllers.map(refId), ["goblin-tokG"]);
  assert.deepEqual(params.puppets.map(refId), ["thrall"]);
  assert.deepEqual(params.defense, { mode: "pinnacle-of-will" });
  // The write-back reached the controller, the target and the puppet.
  assert.equal(t.tokens.goblinToken.actor.flags.mindscape[POOL].controlled_by, "ulcen");
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by, null);
  assert.equal(t.world.docs.get("Actor.thrall").flags.mindscape[POOL].controlled_by, null);
  assert.deepEqual(t.clients.gm.notes.warn, []);
  // The card: aimed at Fenka, but what happened, happened to the goblin, named as such.
  const card = t.clients.gm.ChatMessage.created.at(-1).data.content;
  assert.match(card, /<h3>Ulcen of Tyr <i class="fas fa-arrow-right"><\/i> Fenka<\/h3>/);
  assert.match(card, /<th>Goblin<\/th><td>Pool<\/td><td>3 <i class="fas fa-long-arrow-alt-right"><\/i> <strong>0<\/strong>/);
  assert.match(card, /Goblin: under Ulcen of Tyr(&#x27;|&#39;|')s control/);
  assert.match(card, /Defense<\/span> d8: <strong>1<\/strong> <span class="by">\(Goblin\)/);
  assert.match(card, /<li data-event="control-ended">Fenka is free of Goblin&#x27;s control<\/li>/);
  assert.doesNotMatch(card, /<th>Fenka<\/th>|\(Fenka\)|Fenka: under/);
});

test("the odds against a creature under control are the odds against its controller", async () => {
  const { t } = await poolTable({
    control: (table) => { table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "goblin-tokG"; },
  });
  await t.clients.gm.svc.odds({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
  const odds = t.daemon.calls.find((c) => c.method === "exchange.odds");
  assert.deepEqual(odds.params.controllers.map(refId), ["goblin-tokG"]);
});

test("a player's odds for a defense against their own creature under the control of one they do not own are assumed for that controller, and say so naming it", async () => {
  const { t } = await poolTable({
    control: (table) => { table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "goblin-tokG"; },
  });
  // Ann, who attacks with Ulcen, owns Fenka too; nobody owns the goblin that controls her.
  t.tokens.fenkaToken.actor.ownership.pl0001 = 3;
  const ann = t.clients.gm.game.users.get(t.p1.id);
  const view = await t.clients.gm.svc.odds({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: t.tokens.fenkaToken.uuid, attack: { mode: "mental-stab" }, assumeDefense: "pinnacle-of-will" }, ann);
  const odds = t.daemon.calls.filter((c) => c.method === "exchange.odds").pop();
  assert.deepEqual(odds.params.assume_known, ["/controllers/0"]);
  assert.match(view.assumed, /^As if Goblin knows Pinnacle of will:/);
});

test("a psionic wave's odds are those of its one exchange against every target together; another mode's, of the target chosen", async () => {
  const { t } = await poolTable({
    control: (table) => { table.tokens.goblinToken.actor.flags.mindscape[POOL].controlled_by = "fenka-tokF"; },
  });
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  const targetUuids = [fenkaToken.uuid, goblinToken.uuid];
  const view = await t.clients.gm.svc.odds({ attackerUuid: ulcenToken.uuid, targetUuid: goblinToken.uuid, targetUuids, attack: { mode: "psionic-wave" } }, t.clients.gm.game.user);
  const wave = t.daemon.calls.filter((c) => c.method === "exchange.odds").pop().params;
  assert.deepEqual([refId(wave.defender), wave.defenders.map(refId)], ["fenka-tokF", ["goblin-tokG"]]);
  // The goblin is Fenka's puppet: Fenka, a target herself, is its controller.
  assert.deepEqual(wave.controllers.map(refId), ["fenka-tokF"]);
  assert.equal(view.group, "Fenka, Goblin");
  assert.match(renderModuleTemplate("odds", view), /Against Fenka, Goblin together: a psionic wave strikes every target in one exchange\./);
  const stab = await t.clients.gm.svc.odds({ attackerUuid: ulcenToken.uuid, targetUuid: goblinToken.uuid, targetUuids, attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
  const one = t.daemon.calls.filter((c) => c.method === "exchange.odds").pop().params;
  assert.equal(refId(one.defender), "goblin-tokG");
  assert.equal(one.defenders, undefined);
  assert.equal(stab.group, undefined);

  // A macro's odds (api.odds) are the dialog's: `targets` for a wave's group, else the
  // user's targets; a mode that strikes one takes the first of them.
  const api = makeApi(t.clients.gm.svc);
  const macroWave = await api.odds({ attacker: ulcenToken, targets: [fenkaToken, goblinToken], attack: { mode: "psionic-wave" } });
  assert.equal(macroWave.group, "Fenka, Goblin");
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "exchange.odds").pop().params.defenders.map(refId), ["goblin-tokG"]);
  t.clients.gm.game.user.targets = new Set([goblinToken.object ?? goblinToken, fenkaToken.object ?? fenkaToken]);
  const targeted = await api.odds({ attacker: ulcenToken, attack: { mode: "mental-stab" } });
  assert.equal(targeted.group, undefined);
  assert.equal(refId(t.daemon.calls.filter((c) => c.method === "exchange.odds").pop().params.defender), "goblin-tokG");
  assert.equal(await api.odds({ attacker: ulcenToken, targets: [], attack: { mode: "mental-stab" } }), null);
  assert.equal((await api.odds({ attacker: ulcenToken, target: fenkaToken, targets: [goblinToken], attack: { mode: "psionic-wave" } })).group, undefined);
  // A wave's odds are against all its targets: one targeted twice, or the attacker, is refused before the companion is asked.
  const asked = t.daemon.calls.length;
  assert.equal(await api.odds({ attacker: ulcenToken, targets: [fenkaToken, fenkaToken], attack: { mode: "psionic-wave" } }), null);
  assert.equal(await api.odds({ attacker: ulcenToken, targets: [fenkaToken, ulcenToken], attack: { mode: "psionic-wave" } }), null);
  assert.equal(t.daemon.calls.length, asked);
  assert.match(t.clients.gm.notes.error.at(-2), /Fenka.* is targeted twice/);
  assert.match(t.clients.gm.notes.error.at(-1), /Ulcen.* is the attacker, and a mind cannot attack itself/);
});

test("a controller that is neither in the world nor on the scene stops the attack before anything is resolved, saying whose control", async () => {
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } } },
    control: (table) => { table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "nobody"; },
  });
  await assert.rejects(
    t.clients.gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, t.clients.gm.game.user),
    (error) => error.key === "MINDSCAPE.Error.ControllerMissing" && error.data.id === "nobody" && error.data.name === "Fenka",
  );
  assert.equal(calls.length, 0);
});

test("a psionic wave at several targets is one exchange: each struck mind chooses its defense, the others go as defenders and defenses", async () => {
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "psionic-wave", physical: false } }, p2: { defenseDialog: { mode: "pinnacle-of-will" } }, gm: { defenseDialog: { mode: null } } },
    resolve: (params) => ({ system: POOL, winner: "defender", outcome: "defender", summary: "The wave breaks.", rolls: [], events: [], updates: [
      { uuid: "Actor.ulcen", update: { "flags.mindscape.power-pool.pool": 2 } }] }),
  });
  const outcome = await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid] });
  assert.equal(outcome.length, 1, "one exchange for the whole wave");
  assert.equal(calls.length, 1);
  const [params] = calls;
  assert.equal(refId(params.defender), "fenka-tokF");
  assert.deepEqual(params.defenders.map(refId), ["goblin-tokG"]);
  assert.deepEqual(params.defense, { mode: "pinnacle-of-will" });
  assert.deepEqual(params.defenses, { "goblin-tokG": {} });
  assert.equal(t.actors.ulcen.flags.mindscape[POOL].pool, 2);
  // The card's header names every target of the wave.
  assert.match(t.clients.gm.ChatMessage.created[0].data.content, /Fenka, Goblin/);
  // Both were asked, each secretly by its own owner.
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
});

test("a psionic wave at two creatures under one controller strikes that controller once: it is asked once, and is no further defense of its own wave", async () => {
  const { t, calls, thrall } = await poolTable({
    dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
    control: (table) => {
      table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "goblin-tokG";
      table.tokens.goblinToken.actor.flags.mindscape[POOL].controlling = [{ id: "fenka-tokF", kept_by: "die" }, { id: "thrall-tokT", kept_by: "action" }];
    },
  });
  const thrallToken = t.world.token({ id: "tokT", name: "Thrall", actor: thrall, actorLink: false });
  const outcome = await t.clients.gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, thrallToken.uuid], attack: { mode: "psionic-wave" } }, t.clients.gm.game.user);
  assert.equal(outcome.length, 1);
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  const [params] = calls;
  assert.deepEqual(params.controllers.map(refId), ["goblin-tokG"]);
  assert.deepEqual(params.defense, { mode: "pinnacle-of-will" });
  assert.equal(params.defenses, undefined);
});

test("a mode that strikes one target makes one exchange per target, and other systems send no control at all", async () => {
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } } },
    control: (table) => { table.tokens.goblinToken.actor.flags.mindscape[POOL].controlling = [{ id: "thrall", kept_by: "action" }]; },
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid] });
  assert.equal(calls.length, 2);
  assert.ok(calls.every((p) => !p.defenders && !p.controllers && !p.defenses));
  // The thrall is under the goblin's control: it goes along in the goblin's exchange only.
  assert.deepEqual(calls.map((p) => (p.puppets ?? []).map(refId)), [[], ["thrall"]]);
  const plain = makeTable({ dialogs: { p1: { attackDialog: { mode: "mind-thrust", multiplier: "1", range: "short", physical: false } } } });
  await plain.clients.p1.svc.startAttack({ attackerUuid: plain.tokens.ulcenToken.uuid, targetUuids: [plain.tokens.fenkaToken.uuid] });
  const resolve = plain.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.ok(!("controllers" in resolve.params) && !("puppets" in resolve.params));
});

// ------------------------------------------------------- power-pool encounters

// A power-pool encounter of Ulcen, Fenka and the goblin over the fake encounter, whose
// declare answers `declared(params)` (a public action's write-backs); `view` stands for
// encounter.get when given.
async function poolEncounter(declared, { view, dialogs, before } = {}) {
  const { methods } = encounterMethods({ "encounter.declare": (params) => declared(params), ...(view ? { "encounter.get": () => view() } : {}) });
  const t = makeTable({ methods, dialogs });
  before?.(t);
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const gm = t.clients.gm.svc;
  await gm.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], "Pit");
  return { t, gm, ctl: gm.encounters };
}

test("a public action declared in an encounter is written to the sheets at once; one the companion could not write holds everyone", async () => {
  const sent = [];
  const { t, ctl } = await poolEncounter((params) => {
    sent.push(params);
    if (params.choice.rest) return { revision: 9, waiting_for: [], updates: [], updates_failed: { error_id: "e-9" } };
    return { revision: 8, waiting_for: [], summary: 'Ulcen of Tyr releases Fenka. "goblin-tokG" stays under control; "ghost" was not given.', events: [{ type: "control-ended", combatant: "fenka-tokF" }], updates: [
      { uuid: t.tokens.fenkaToken.actor.uuid, update: { "flags.mindscape.power-pool.controlled_by": null } },
      { uuid: "Actor.ulcen", update: { "flags.mindscape.power-pool.controlling": [] } },
    ] };
  });
  t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool({ controlled_by: "ulcen" });
  const answer = await ctl.declareFor({ combatantId: "ulcen", form: { action: "release", controlTarget: "fenka-tokF" } }, t.clients.gm.game.user);
  assert.equal(answer.revision, 8);
  assert.deepEqual(sent[0].choice, { release: "fenka-tokF" });
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by, null);
  assert.deepEqual(t.actors.ulcen.flags.mindscape[POOL].controlling, []);
  assert.equal(ctl.meta.held, undefined);
  // The GM is shown what the action did, in the companion's words.
  // A creature it names by its id in quotes reads as the encounter names it; an id of
  // nobody at the table stays quoted.
  assert.equal(t.clients.gm.notes.info.at(-1), 'Ulcen of Tyr releases Fenka. Goblin stays under control; "ghost" was not given.');
  // The companion stored the rest but could not write it: every combatant is held.
  await ctl.declareFor({ combatantId: "goblin-tokG", form: { action: "rest" } }, t.clients.gm.game.user);
  assert.deepEqual(Object.keys(ctl.meta.held).sort(), ["fenka-tokF", "goblin-tokG", "ulcen"]);
  assert.match(t.clients.gm.notes.error.at(-1), /the action/);
});

test("the encounter's choice dialog offers power-pool's actions: the creatures this one controls, the others for a wave or a swarm", async () => {
  const { t, ctl } = await poolEncounter(() => ({ revision: 5, waiting_for: [], updates: [] }));
  const state = { phase: "attack", combatants: { ulcen: { controlling: [{ id: "fenka-tokF", kept_by: "die" }] }, "fenka-tokF": { controlled_by: "ulcen" }, "goblin-tokG": {} } };
  const context = await ctl.choiceContext("ulcen", state);
  // Fenka is under Ulcen's own control: the companion refuses it as a target
  // (target-own-puppet), so it is offered neither as the target nor as a wave's.
  assert.deepEqual(context.targets, [{ id: "goblin-tokG", name: "Goblin" }]);
  assert.deepEqual(context.pool, {
    defensePhase: false,
    controlled: [{ id: "fenka-tokF", name: "Fenka" }],
    others: [{ id: "goblin-tokG", name: "Goblin" }],
    // The goblin's token is hostile where Ulcen's is friendly: no ally to draw in.
    allies: [],
    // The fake companion's modes strike one target each.
    waveModes: "",
    // Ulcen knows no mode with an effect it may decline.
    declinable: [],
    declineModes: "",
  });
  // Another's puppet may be attacked (the attack strikes its controller).
  assert.deepEqual((await ctl.choiceContext("goblin-tokG", state)).targets.map((x) => x.id), ["ulcen", "fenka-tokF"]);
  assert.equal((await ctl.choiceContext("goblin-tokG", { ...state, phase: "defense" })).pool.defensePhase, true);
  assert.equal(t.clients.gm.notes.warn.length, 0);
});

test("the choice dialog reads a view that lists its combatants: a creature under the chooser's control is no target", async () => {
  const { ctl } = await poolEncounter(() => ({ revision: 5, waiting_for: [], updates: [] }));
  const state = { phase: "attack", combatants: [{ id: "ulcen", controlling: [{ id: "fenka-tokF" }] }, { id: "fenka-tokF", controlled_by: "ulcen" }, { id: "goblin-tokG" }] };
  const context = await ctl.choiceContext("ulcen", state);
  assert.deepEqual(context.targets.map((x) => x.id), ["goblin-tokG"]);
  assert.deepEqual(context.pool.controlled, [{ id: "fenka-tokF", name: "Fenka" }]);
});

test("a controller that is a world actor is that actor, never one of its unlinked copies on the scene", async () => {
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } } },
    control: (table) => {
      table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "goblin";
      table.actors.goblin.flags.mindscape[POOL] = pool({ controlling: [{ id: "fenka-tokF", kept_by: "die" }] });
    },
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  const [params] = calls;
  assert.deepEqual(params.controllers.map(refId), ["goblin"]);
  assert.equal(params.controllers[0].data.token, null);
});

test("an attack whose controller holds a creature that is nowhere in the world goes on without it, and the GM is told its sheet will not follow", async () => {
  const { t, calls } = await poolTable({
    dialogs: { gm: { defenseDialog: { mode: "pinnacle-of-will" } } },
    control: (table) => { table.tokens.goblinToken.actor.flags.mindscape[POOL].controlling = [{ id: "ghost", kept_by: "action" }]; },
  });
  const gm = t.clients.gm;
  const outcome = await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  assert.equal(outcome.length, 1);
  assert.equal(calls[0].puppets, undefined);
  assert.deepEqual(gm.notes.warn, ["Creatures under psionic control here are not on this scene or in this world (ghost): if that control ends, their sheets will not show it."]);
});

test("an attack on the attacker's own puppet asks nobody: the companion refuses it by its rule", async () => {
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } } },
    control: (table) => { table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "ulcen"; },
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].defense, null);
  assert.equal(calls[0].controllers, undefined);
});

test("nobody on the scene is asked to join the defense of the attacker's own puppet, in a single attack or a wave", async () => {
  const { t } = await poolTable({
    dialogs: { gm: { defenseDialog: { mode: null }, joinDialog: { join: "0", timedOut: false } } },
    control: (table) => { table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "ulcen"; },
  });
  // The Seer (psionic, knows the swarm) is on Fenka's side (friendly), not the goblin's.
  addCreatures(t);
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: { mode: "psionic-wave" } }, gm.game.user);
  assert.equal(gm.dialogs.seen.filter((s) => s.kind === "joinDialog").length, 0);
});

test("a psionic creature whose side is unknown is not asked to join the defense of a mind whose side is unknown too", async () => {
  const { t } = await poolTable({ dialogs: { gm: { joinDialog: { join: "0", timedOut: false } }, p2: { defenseDialog: { mode: null } } } });
  addCreatures(t);
  for (const token of [t.tokens.fenkaToken, t.world.tokens.find((x) => x.name === "Seer")]) token.disposition = null;
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  assert.equal(gm.dialogs.seen.filter((s) => s.kind === "joinDialog").length, 0);
});

test("in a world read through foundry.generic, a psionic creature whose profile the mapping reads from its sheet, not the module's flags, is asked to join", async () => {
  const base = poolMethods(() => ({ system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }));
  // The mapping reads the Mystic's profile from its system data.
  const mapped = (params) => {
    const psionics = params.data.actor.system?.psionics;
    return psionics ? { combatant: { id: refId(params), name: params.data.actor.name, ...psionics }, warnings: [] } : base["adapters.import"](params);
  };
  const t = makeTable({ methods: { ...base, "adapters.import": mapped }, dialogs: { gm: { joinDialog: { join: null, timedOut: false } }, p2: { defenseDialog: { mode: null } } } });
  t.clients.gm.game.system.id = "pf2e";
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  for (const actor of [t.actors.ulcen, t.tokens.fenkaToken.actor, t.tokens.goblinToken.actor]) actor.flags.mindscape[POOL] = pool();
  const mystic = t.world.actor({ id: "mystic", name: "Mystic", type: "npc", disposition: 1, system: { psionics: pool({ defenses: ["imagination-swarm"] }) } });
  t.world.token({ id: "tokM", name: "Mystic", actor: mystic, actorLink: true });
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  assert.deepEqual(gm.dialogs.seen.filter((s) => s.kind === "joinDialog").map((s) => s.arg.context.name), ["Mystic"]);
});

test("each exchange of a multi-target attack reads control again in its turn: one an earlier exchange changed is not resolved", async () => {
  // The first exchange wins Fenka for Ulcen; the goblin's exchange, read in its turn,
  // finds Ulcen controlling Fenka: a puppet to send along.
  let n = 0;
  const { t, calls } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } } },
    resolve: (params) => {
      n += 1;
      const updates = n === 1 ? [
        { uuid: "Actor.ulcen", update: { "flags.mindscape.power-pool.controlling": [{ id: "fenka-tokF", kept_by: "action" }] } },
        { uuid: `${params.defender.data.token.uuid}.Actor.fenka`, update: { "flags.mindscape.power-pool.controlled_by": "ulcen" } },
      ] : [];
      return { system: POOL, winner: "attacker", outcome: "attacker", summary: "Won.", rolls: [], events: [], updates };
    },
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid] });
  assert.equal(calls.length, 2);
  assert.deepEqual((calls[0].puppets ?? []).map(refId), []);
  assert.deepEqual(calls[1].puppets.map(refId), ["fenka-tokF"], "the puppet won in the first exchange goes along in the second");

  // The goblin's controller (Fenka, who chose its defense) loses it in the first exchange.
  const { t: t2, calls: calls2 } = await poolTable({
    dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } } },
    control: (table) => { table.tokens.goblinToken.actor.flags.mindscape[POOL].controlled_by = "fenka-tokF"; table.tokens.fenkaToken.actor.flags.mindscape[POOL].controlling = [{ id: "goblin-tokG", kept_by: "die" }]; },
    resolve: (params) => ({ system: POOL, winner: "attacker", outcome: "attacker", summary: "Won.", rolls: [], events: [], updates: [
      // Fenka falls under Ulcen's control, and lets the goblin go.
      { uuid: `${params.defender.data.token.uuid}.Actor.fenka`, update: { "flags.mindscape.power-pool.controlled_by": "ulcen", "flags.mindscape.power-pool.controlling": [] } },
      { uuid: `${params.puppets[0].data.token.uuid}.Actor.goblin`, update: { "flags.mindscape.power-pool.controlled_by": null } },
    ] }),
  });
  await assert.rejects(
    t2.clients.gm.svc.attack({ attackerUuid: t2.tokens.ulcenToken.uuid, targetUuids: [t2.tokens.fenkaToken.uuid, t2.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, t2.clients.gm.game.user),
    (error) => error.key === "MINDSCAPE.Error.ControlChanged" && error.data.name === "Goblin",
  );
  assert.equal(calls2.length, 1, "the goblin's exchange was not resolved: Fenka, who chose its defense, no longer controls it");
});

test("power-pool's attack phase asks one combatant at a time until one attacks; a refused choice is told and asked again, and the others go on", async () => {
  // The attack phase as the companion keeps it: a pass leaves the waiting list, an attack
  // starts the defense phase; a rest is refused.
  const view = { phase: "attack", waiting_for: ["ulcen", "fenka-tokF", "goblin-tokG"], combatants: { ulcen: {}, "fenka-tokF": {}, "goblin-tokG": {} }, revision: 3 };
  const sent = [];
  const { t, ctl } = await poolEncounter(({ combatant_id, choice }) => {
    sent.push([combatant_id, Object.keys(choice)[0]]);
    if (choice.rest) throw { code: 4001, message: "The rules forbid it", data: { rule: "exchange-pending", detail: "rest waits" } };
    view.waiting_for = view.waiting_for.filter((c) => c !== combatant_id);
    if (choice.attack) Object.assign(view, { phase: "defense", waiting_for: [choice.attack.target] });
    return { revision: 4, waiting_for: view.waiting_for, updates: [] };
  }, {
    view: () => structuredClone(view),
    dialogs: {
      p1: { encounterChoiceDialog: [{ action: "rest", phase: "attack" }, { action: "pass", phase: "attack" }] },
      p2: { encounterChoiceDialog: { attackMode: "mental-stab", target: "goblin-tokG", phase: "attack" } },
      gm: { encounterChoiceDialog: { action: "pass", phase: "attack" } },
    },
  });
  await ctl.collectChoices();
  assert.deepEqual(sent, [["ulcen", "rest"], ["ulcen", "pass"], ["fenka-tokF", "attack"]], "asked in turn; after the attack nobody else is asked to attack");
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "encounterChoiceDialog").length, 0);
  assert.match(t.clients.gm.notes.warn.at(-1), /^Ulcen of Tyr's choice was not recorded: /);
  assert.match(t.clients.p1.dialogs.seen.at(-1).arg.context.refused, /rest waits\. Choose again\.$/);
});

test("power-pool's attack phase: a second Ask for choices while a combatant is asked for its attack asks nobody else; the first goes on alone", async () => {
  // A macro may call the service twice (the panel disables its button). Before, the second
  // skipped Ulcen, being asked, and asked Fenka, who attacked, and Ulcen's attack came
  // after the phase had changed.
  const view = { phase: "attack", waiting_for: ["ulcen", "fenka-tokF", "goblin-tokG"], combatants: { ulcen: {}, "fenka-tokF": {}, "goblin-tokG": {} }, revision: 3 };
  const sent = [];
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  const { t, ctl } = await poolEncounter(({ combatant_id, choice }) => {
    sent.push([combatant_id, Object.keys(choice)[0]]);
    view.waiting_for = view.waiting_for.filter((c) => c !== combatant_id);
    if (choice.attack) Object.assign(view, { phase: "defense", waiting_for: [choice.attack.target] });
    return { revision: 4, waiting_for: view.waiting_for, updates: [] };
  }, {
    view: () => structuredClone(view),
    dialogs: {
      p1: { encounterChoiceDialog: async () => { await answered; return { attackMode: "mental-stab", target: "goblin-tokG", phase: "attack" }; } },
      p2: { encounterChoiceDialog: { attackMode: "mental-stab", target: "ulcen", phase: "attack" } },
      gm: { encounterChoiceDialog: { action: "pass", phase: "attack" } },
    },
  });
  const questions = (c) => c.dialogs.seen.filter((s) => s.kind === "encounterChoiceDialog").length;
  const first = ctl.collectChoices();
  while (questions(t.clients.p1) === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.deepEqual(await ctl.collectChoices(), []);
  assert.equal(questions(t.clients.p2) + questions(t.clients.gm), 0, "nobody else was asked while Ulcen's question was open");
  answer();
  await first;
  assert.deepEqual(sent, [["ulcen", "attack"]]);
  assert.deepEqual(t.clients.gm.notes.warn, []);
});

test("a choice made for a phase the encounter has left is refused, not read as another choice", async () => {
  const view = { phase: "defense", waiting_for: ["goblin-tokG"], combatants: { ulcen: {}, "fenka-tokF": {}, "goblin-tokG": {} }, revision: 5 };
  const sent = [];
  const { t, ctl } = await poolEncounter((params) => { sent.push(params); return { revision: 6, waiting_for: [], updates: [] }; }, { view: () => structuredClone(view) });
  await assert.rejects(
    ctl.declareFor({ combatantId: "goblin-tokG", form: { attackMode: "mental-stab", target: "ulcen", phase: "attack" } }, t.clients.gm.game.user),
    (error) => error.key === "MINDSCAPE.Error.PhaseChanged" && error.data.name === "Goblin",
  );
  assert.equal(sent.length, 0);
  await ctl.declareFor({ combatantId: "goblin-tokG", form: { defenseMode: "", phase: "defense" } }, t.clients.gm.game.user);
  assert.deepEqual(sent[0].choice, { defense: {} });
});

test("Ask for choices: a choice answered for a phase the encounter has left is told to the GM and the others go on; a companion that stops answering stops the asking", async () => {
  const view = { phase: "defense", waiting_for: ["goblin-tokG"], combatants: { ulcen: {}, "fenka-tokF": {}, "goblin-tokG": {} }, revision: 5 };
  const sent = [];
  const { t, ctl } = await poolEncounter((params) => { sent.push(params); return { revision: 6, waiting_for: [], updates: [] }; }, {
    view: () => structuredClone(view),
    dialogs: { gm: { encounterChoiceDialog: { attackMode: "mental-stab", target: "ulcen", phase: "attack" } } },
  });
  assert.deepEqual(await ctl.collectChoices(), [null]);
  assert.equal(sent.length, 0);
  assert.match(t.clients.gm.notes.warn.at(-1), /Goblin/);
  const rpc = ctl.svc.rpc.bind(ctl.svc);
  ctl.svc.rpc = async (method, params) => {
    if (method === "encounter.declare") throw new DaemonUnreachableError({ url: "http://127.0.0.1:39393" });
    return rpc(method, params);
  };
  view.phase = "attack";
  await assert.rejects(ctl.collectChoices(), DaemonUnreachableError);
});

test("a declaration relayed for a combatant not in the encounter is refused as there being none, and nothing is sent", async () => {
  const sent = [];
  const { t, ctl } = await poolEncounter((params) => { sent.push(params); return { revision: 6, waiting_for: [], updates: [] }; });
  await assert.rejects(ctl.declareFor({ combatantId: "ghost", form: { action: "rest" } }, t.clients.gm.game.user), (error) => error.key === "MINDSCAPE.Error.NoEncounter");
  assert.equal(sent.length, 0);
});

test("a public action whose answer is lost after the companion was reached holds everyone; a secret choice's holds nobody", async () => {
  const { t, ctl } = await poolEncounter(() => ({ revision: 5, waiting_for: [], updates: [] }));
  const rpc = ctl.svc.rpc.bind(ctl.svc);
  ctl.svc.rpc = async (method, params) => {
    if (method === "encounter.declare") throw new DaemonUnreachableError({ url: "http://127.0.0.1:39393" });
    return rpc(method, params);
  };
  await assert.rejects(ctl.declare("ulcen", { attack: { mode: "mental-stab", target: "goblin-tokG" } }));
  assert.equal(ctl.meta.held, undefined);
  await assert.rejects(ctl.declare("ulcen", { release: "fenka-tokF" }));
  assert.deepEqual(Object.keys(ctl.meta.held).sort(), ["fenka-tokF", "goblin-tokG", "ulcen"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /the action/);
});

test("a public action whose answer is lost holds a combatant added while it waited in the exchange queue too: the companion may have stored it for all of them", async () => {
  const { t, ctl } = await poolEncounter(() => ({ revision: 5, waiting_for: [], updates: [] }));
  const gm = t.clients.gm.svc;
  // Goblin is out of the encounter at first.
  await ctl.saveMeta({ ...ctl.meta, combatants: Object.fromEntries(Object.entries(ctl.meta.combatants).filter(([cid]) => cid !== "goblin-tokG")) });
  const rpc = gm.rpc.bind(gm);
  gm.rpc = async (method, params) => {
    if (method === "encounter.declare") throw new DaemonUnreachableError({ url: "http://127.0.0.1:39393" });
    if (method === "encounter.add") return { combatant_id: "goblin-tokG" };
    return rpc(method, params);
  };
  // A step on the same actors holds the exchange queue while the GM declares and adds.
  let release;
  const busy = gm.exchanges.run([t.tokens.ulcenToken.actor.uuid, t.tokens.fenkaToken.actor.uuid], () => new Promise((r) => { release = r; }));
  const declaring = assert.rejects(ctl.declare("ulcen", { release: "fenka-tokF" }), DaemonUnreachableError);
  await ctl.add([t.tokens.goblinToken.uuid]);
  release();
  await busy;
  await declaring;
  assert.deepEqual(Object.keys(ctl.meta.held).sort(), ["fenka-tokF", "goblin-tokG", "ulcen"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /The encounter keeps its own copy of Ulcen of Tyr, Fenka, Goblin:/);
});

// ------------------------------------------------------- allies of an imagination swarm

// Creatures on the scene besides the three (RULES.md §3.3, seed 001: "The defender may
// choose [to] draw allied non-psionic creatures into the psionic combat"; "Psionically
// active creatures may also use this defence mode to participate": they join by their
// own choice, never drafted). Ulcen and Fenka are friendly tokens, the goblin hostile.
// Friendly: Porter (no power-pool profile: a non-psionic hireling, linked, two tokens),
// a hidden Lookout, the Seer (psionic, knows the swarm), the Sage (psionic), a Statue
// (mindless), a Bondsman under the goblin's control, and a sheet the companion cannot
// read. Hostile: a Wolf and a hidden Scout. Neutral: a Bystander.
function addCreatures(t) {
  const w = t.world;
  const place = (id, name, flags, { linked = true, hidden = false, copies = 1, disposition = 1 } = {}) => {
    const actor = w.actor({ id, name, type: "npc", disposition, flags: { mindscape: flags } });
    const tokens = Array.from({ length: copies }, (_, i) => w.token({ id: `tok${name}${i || ""}`, name, actor, actorLink: linked }));
    for (const token of tokens) token.hidden = hidden;
    return tokens[0];
  };
  const porter = place("porter", "Porter", {}, { copies: 2 });
  place("lookout", "Lookout", {}, { hidden: true });
  place("seer", "Seer", { [POOL]: pool({ hit_dice: 2, die: 6, pool: 2, defenses: ["imagination-swarm"] }) }, { linked: false });
  place("sage", "Sage", { [POOL]: pool({ defenses: ["pinnacle-of-will"] }) });
  place("statue", "Statue", { [POOL]: { hit_dice: 4, die: 8, mindless: true } });
  place("bondsman", "Bondsman", { [POOL]: { hit_dice: 1, die: 6, pool: 0, controlled_by: "goblin-tokG" } });
  place("golem", "Golem", { unreadable: true });
  const wolf = place("wolf", "Wolf", {}, { disposition: -1 });
  const scout = place("scout", "Scout", {}, { hidden: true, disposition: -1 });
  place("bystander", "Bystander", {}, { disposition: 0 });
  return { porter, wolf, scout };
}

// What the companion answers when the group loses: every member falls under the
// attacker's control, the non-psionic ally is dazed.
const swarmLost = (params) => ({
  system: POOL, winner: "attacker", outcome: "attacker", summary: "Ulcen wins: Fenka and Porter fall under its psionic control.", events: [],
  rolls: [{ purpose: "defense", sides: 4, value: 3, by: "porter", follows: null }],
  attack: { mode: "mental-stab", dice: 3, sides: 12, keep_by: params.attack.keep_by ?? "action" },
  defense: { mode: "imagination-swarm", members: [
    { id: "fenka-tokF", role: "defender", mode: "imagination-swarm", dice: 3, sides: 8, rolled: 12, rolls: true },
    { id: "porter", role: "ally", mode: null, dice: 1, sides: 4, rolled: 3, rolls: true },
  ] },
  others: [
    { id: "porter", before: { id: "porter", name: "Porter", conditions: [] }, after: { id: "porter", name: "Porter", conditions: ["dazed"] } },
  ],
  updates: [
    { uuid: "Actor.porter", update: { "flags.mindscape.power-pool.conditions": ["dazed"], "flags.mindscape.power-pool.controlled_by": "ulcen" } },
  ],
});

test("a struck mind that knows Imagination Swarm draws in its non-psionic allies from the scene: they go as allies, are written back, and the card says how each defended", async () => {
  let offered = null;
  const { t, calls } = await poolTable({
    dialogs: {
      p1: { attackDialog: { mode: "mental-stab", keep_by: "die", physical: false } },
      // Bo ticks Porter, and a forged answer adds the Seer (psionic), the Wolf (hostile),
      // the Sage, twice Porter and a stranger.
      p2: { defenseDialog: (arg) => {
        offered = arg.context;
        const uuid = (name) => arg.context.allies.find((a) => a.name === name)?.uuid;
        return { mode: "imagination-swarm", allies: [uuid("Porter"), "Scene.scene1.Token.tokSeer", "Scene.scene1.Token.tokWolf", "Scene.scene1.Token.tokSage", uuid("Porter"), "Actor.nobody"], timedOut: false };
      } },
    },
    resolve: swarmLost,
  });
  t.tokens.fenkaToken.actor.flags.mindscape[POOL].defenses = ["pinnacle-of-will", "imagination-swarm"];
  const { porter } = addCreatures(t);
  const gm = t.clients.gm;
  const keys = [];
  const run = gm.svc.exchanges.run.bind(gm.svc.exchanges);
  gm.svc.exchanges.run = (k, task) => { keys.push(k); return run(k, task); };
  const resolved = [];
  gm.Hooks.on("mindscape.resolved", (payload) => resolved.push(payload));

  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  // The attack dialog asked how control is kept if it wins (RULES.md §3.4).
  assert.equal(t.clients.p1.dialogs.seen.find((s) => s.kind === "attackDialog").arg.context.keepBy, true);
  // Offered: the non-psionic creatures on Fenka's side (friendly tokens) that may join,
  // each once, by name. Not the attacker nor the target; not the Seer or the Sage
  // (psionic: they join by their own choice), one under control, a mindless one, a
  // sheet the companion cannot read; not the Wolf, the Scout or the Bystander (hostile
  // or neutral tokens); not the Lookout (hidden: Bo is a player).
  assert.deepEqual(offered.allies, [{ uuid: porter.uuid, name: "Porter" }]);
  assert.equal(offered.allyModes, "imagination-swarm");
  const [params] = calls;
  assert.deepEqual(params.attack, { mode: "mental-stab", keep_by: "die" });
  assert.deepEqual(params.defense, { mode: "imagination-swarm" });
  assert.deepEqual(params.allies.map(refId), ["porter"], "only those offered, each once");
  assert.equal(params.defenses, undefined);
  assert.equal(params.puppets, undefined);
  // The ally is written back as the defender is: Porter's world actor.
  assert.deepEqual(porter.actor.flags.mindscape[POOL], { conditions: ["dazed"], controlled_by: "ulcen" });
  assert.deepEqual(gm.notes.warn, []);
  // The exchange waits for any other touching the ally.
  assert.ok(keys.some((k) => k.includes("Actor.porter")), JSON.stringify(keys));
  const card = gm.ChatMessage.created.at(-1).data.content;
  assert.match(card, /Allies: <span class="ally">Porter \(drawn in, dazed, 1d4\)<\/span><\/p>/);
  assert.match(card, /<th>Porter<\/th><td>Conditions<\/td><td>— <i class="fas fa-long-arrow-alt-right"><\/i> <strong>Dazed<\/strong>/);
  assert.deepEqual(resolved[0].allies, [porter.actor]);
});

test("a struck mind's allies are those on its own side: the controller struck in a puppet's place draws in its allies, a world actor by its prototype token, an unknown side nobody", async () => {
  const { t, calls } = await poolTable({
    dialogs: {
      p1: { attackDialog: { mode: "mental-stab", physical: false } },
      gm: { defenseDialog: (arg) => ({ mode: "imagination-swarm", allies: arg.context.allies.map((a) => a.uuid), timedOut: false }) },
    },
  });
  addCreatures(t);
  // Fenka (friendly) is under the goblin's control: the goblin (hostile) is struck and
  // is offered the hostile creatures, the GM seeing the hidden Scout.
  t.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "goblin-tokG";
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ defenses: ["imagination-swarm"], controlling: [{ id: "fenka-tokF", kept_by: "action" }] });
  const gm = t.clients.gm;
  const attack = () => gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  const lastOffer = () => gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").at(-1).arg.context;
  await attack();
  assert.equal(lastOffer().defenderName, "Goblin");
  assert.deepEqual(lastOffer().allies.map((a) => a.name), ["Scout", "Wolf"]);
  assert.deepEqual(calls.at(-1).allies.map(refId), ["scout", "wolf"]);
  // A controller that is a world actor without a token on the scene: the side its
  // tokens are placed with (a neutral overseer draws in the Bystander).
  const overseer = t.world.actor({ id: "overseer", name: "Overseer", type: "npc", disposition: 0, flags: { mindscape: { [POOL]: pool({ defenses: ["imagination-swarm"], controlling: [{ id: "fenka-tokF", kept_by: "action" }] }) } } });
  t.tokens.fenkaToken.actor.flags.mindscape[POOL].controlled_by = "overseer";
  await attack();
  assert.equal(lastOffer().defenderName, "Overseer");
  assert.deepEqual(lastOffer().allies.map((a) => a.name), ["Bystander"]);
  // Nobody can tell its side: nobody is offered, not even a creature whose side is unknown too.
  overseer.prototypeToken = {};
  t.world.tokens.find((x) => x.name === "Bystander").disposition = null;
  await attack();
  assert.deepEqual(lastOffer().allies, []);
  assert.equal(calls.at(-1).allies, undefined);
});

test("a mind struck by a world actor with no token anywhere is offered the allies on its own scene; a token whose actor is gone is passed over", async () => {
  const { t } = await poolTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  addCreatures(t);
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ defenses: ["imagination-swarm"] });
  const hermit = t.world.actor({ id: "hermit", name: "Hermit", type: "npc", flags: { mindscape: { [POOL]: pool() } } });
  const gone = t.world.actor({ id: "gone", name: "Gone", type: "npc" });
  t.world.token({ id: "tokGone", name: "Gone", actor: gone, actorLink: true, disposition: -1 }).actor = null;
  const gm = t.clients.gm;
  const outcome = await gm.svc.attack({ attackerUuid: hermit.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  assert.equal(outcome.length, 1);
  const offer = gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.deepEqual(offer.allies.map((a) => a.name), ["Scout", "Wolf"]);
});

test("nobody is drawn in without a mode that draws allies or without an answer; a mind that does not know the swarm is offered none and the scene is not read", async () => {
  const answers = [{ mode: "pinnacle-of-will", allies: ["Scene.scene1.Token.tokPorter"], timedOut: false }, { mode: "imagination-swarm", timedOut: true }];
  const { t, calls } = await poolTable({ dialogs: { p2: { defenseDialog: answers } } });
  t.tokens.fenkaToken.actor.flags.mindscape[POOL].defenses = ["pinnacle-of-will", "imagination-swarm"];
  addCreatures(t);
  const gm = t.clients.gm.svc;
  for (let i = 0; i < 2; i++) await gm.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
  assert.deepEqual(calls.map((p) => p.allies), [undefined, undefined]);
  // The goblin (the GM's) knows no swarm: no list, and no sheet of the scene read for one.
  t.daemon.calls.length = 0;
  await gm.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, t.clients.gm.game.user);
  assert.deepEqual(t.clients.gm.dialogs.seen.at(-1).arg.context.allies, []);
  const read = t.daemon.calls.filter((c) => c.method === "adapters.import").map((c) => c.params.data.actor.name);
  assert.ok(!read.includes("Porter"), read.join(", "));
});

test("in a psionic wave only the mind struck first draws allies; the GM choosing for an NPC sees hidden tokens; an ally's sheet that cannot be written is told to the GM in a notice that stays until dismissed", async () => {
  const { t, calls } = await poolTable({
    dialogs: {
      gm: { defenseDialog: (arg) => ({ mode: "imagination-swarm", allies: arg.context.allies.map((a) => a.uuid), timedOut: false }) },
      p2: { defenseDialog: { mode: "imagination-swarm", allies: ["Scene.scene1.Token.tokPorter"], timedOut: false } },
    },
    resolve: (params) => ({ system: POOL, winner: "defender", outcome: "defender", summary: "The wave breaks.", rolls: [], events: [], others: [], updates: [
      { uuid: "Actor.scout", update: { "flags.mindscape.power-pool.conditions": ["dazed"] } },
      { uuid: "Actor.wolf", update: { "flags.mindscape.power-pool.conditions": ["dazed"] } },
    ] }),
  });
  for (const token of [t.tokens.fenkaToken, t.tokens.goblinToken]) token.actor.flags.mindscape[POOL].defenses = ["imagination-swarm"];
  const { wolf, scout } = addCreatures(t);
  wolf.actor.update = async () => { throw new Error("the sheet is locked"); };
  await t.clients.gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid, t.tokens.fenkaToken.uuid], attack: { mode: "psionic-wave" } }, t.clients.gm.game.user);
  const gmAsked = t.clients.gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.deepEqual(gmAsked.allies.map((a) => a.name), ["Scout", "Wolf"]);
  assert.deepEqual(t.clients.p2.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context.allies, [], "Fenka is struck second");
  const [params] = calls;
  assert.deepEqual(params.allies.map(refId), ["scout", "wolf"]);
  assert.deepEqual(params.defenses, { "fenka-tokF": { mode: "imagination-swarm" } });
  assert.deepEqual(scout.actor.flags.mindscape[POOL].conditions, ["dazed"]);
  assert.match(t.clients.gm.notes.warn.join("\n"), /Some sheets could not be updated: Actor\.wolf: the sheet is locked/);
  // Nothing tries that write again: the notice stays until the GM dismisses it.
  assert.deepEqual(t.clients.gm.notes.given.filter((n) => n.text.startsWith("Some sheets")).map((n) => n.options), [{ permanent: true }]);
});

test("power-pool's defense phase offers as allies only non-psionic creatures not in the exchange: not the attacker, those struck, those who joined, nor the chooser", async () => {
  // The goblin is on Fenka's side here (its token friendly, as hers is).
  const { ctl } = await poolEncounter(() => ({ revision: 5, waiting_for: [], updates: [] }), { before: (t) => { t.tokens.goblinToken.disposition = 1; } });
  // Ulcen attacked Fenka; Fenka is still to defend.
  const state = { phase: "defense", declared: ["ulcen"], waiting_for: ["fenka-tokF"], combatants: { ulcen: {}, "fenka-tokF": {}, "goblin-tokG": {} } };
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", state)).pool.allies, [{ id: "goblin-tokG", name: "Goblin" }]);
  // The goblin joined the defense meanwhile: nobody is left to draw in.
  const joined = { ...state, declared: ["goblin-tokG", "ulcen"] };
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", joined)).pool.allies, []);
  // Seed 001: the defender "may choose [to] draw allied non-psionic creatures" in; a
  // psionic one joins by its own choice (its own defense), and a mindless one has no
  // mind to draw: the companion refuses both, so neither is offered.
  for (const goblin of [{ psionic: true }, { psionic: false, mindless: true }]) {
    const view = { ...state, combatants: { ...state.combatants, "goblin-tokG": goblin } };
    assert.deepEqual((await ctl.choiceContext("fenka-tokF", view)).pool.allies, [], JSON.stringify(goblin));
  }
  const mundane = { ...state, combatants: { ...state.combatants, "goblin-tokG": { psionic: false, mindless: false } } };
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", mundane)).pool.allies, [{ id: "goblin-tokG", name: "Goblin" }]);
  // "allied" creatures only: one on the other side (its token's disposition, recorded when
  // it was added) is not offered.
  const meta = structuredClone(ctl.meta);
  meta.combatants["goblin-tokG"].disposition = -1;
  await ctl.saveMeta(meta);
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", mundane)).pool.allies, []);
});

test("power-pool's defense phase: a creature under another's control is no ally to draw in, and one whose side is not known may be", async () => {
  const { ctl } = await poolEncounter(() => ({ revision: 5, waiting_for: [], updates: [] }), { before: (t) => { t.tokens.goblinToken.disposition = 1; } });
  const state = { phase: "defense", declared: ["ulcen"], waiting_for: ["fenka-tokF"], combatants: { ulcen: {}, "fenka-tokF": {}, "goblin-tokG": { psionic: false, controlled_by: "ulcen" } } };
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", state)).pool.allies, []);
  const free = { ...state, combatants: { ...state.combatants, "goblin-tokG": { psionic: false } } };
  const meta = structuredClone(ctl.meta);
  delete meta.combatants["goblin-tokG"].disposition;
  await ctl.saveMeta(meta);
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", free)).pool.allies, [{ id: "goblin-tokG", name: "Goblin" }]);
});

test("power-pool's choice dialog: the pool's dice to roll up to the whole pool, the whole pool picked; an effect spared only with a mode the chooser knows; a control link without a creature is not offered", async () => {
  const { methods } = encounterMethods({ "systems.describe": poolMethods()["systems.describe"] });
  const t = makeTable({ methods });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Pit");
  const state = (ulcen) => ({ phase: "attack", combatants: { ulcen, "fenka-tokF": {} } });
  const context = await ctl.choiceContext("ulcen", state({ pool: 3, attacks: ["mental-stab"], controlling: [{ kept_by: "die" }, { id: "fenka-tokF" }] }));
  assert.deepEqual(context.poolDice, [{ value: 1, selected: false }, { value: 2, selected: false }, { value: 3, selected: true }]);
  assert.deepEqual([context.pool.declinable, context.pool.declineModes], [[], ""]);
  assert.deepEqual(context.pool.controlled, [{ id: "fenka-tokF", name: "Fenka" }]);
  const knows = await ctl.choiceContext("ulcen", state({ pool: 3, attacks: ["subconscious-subversion"] }));
  assert.equal(knows.pool.declineModes, "subconscious-subversion:frightened");
});

test("the panel's Act on a combatant's row: the GM declares its public action, also for one the round no longer waits for; only between exchanges, and a refusal is told", async () => {
  // Ulcen has attacked this round (not waited for) and holds Fenka; the goblin still may attack.
  const view = { phase: "attack", waiting_for: ["goblin-tokG"], acted: ["ulcen"], combatants: { ulcen: { pool: 0, controlling: [{ id: "fenka-tokF", kept_by: "action" }] }, "fenka-tokF": { controlled_by: "ulcen" }, "goblin-tokG": { pool: 3 } }, revision: 7 };
  const sent = [];
  const { t, ctl } = await poolEncounter((params) => {
    sent.push([params.combatant_id, params.choice]);
    if (params.choice.keep) throw { code: 4001, message: "The rules forbid it", data: { rule: "controller-cannot-act", detail: "Ulcen of Tyr is asleep and cannot act" } };
    return { revision: 8, waiting_for: view.waiting_for, summary: "Ulcen of Tyr takes a long rest.", updates: [] };
  }, {
    view: () => structuredClone(view),
    dialogs: { gm: { encounterActionDialog: [{ action: "rest", phase: "attack" }, null, { action: "keep", controlTarget: "fenka-tokF", keepBy: "die", phase: "attack" }, { action: "pass", phase: "attack" }] } },
  });
  const panel = await openPoolPanel(t.clients.gm.svc);
  // Every row has Act in the attack phase, also Ulcen's, which Ask for choices skips.
  assert.deepEqual(panel.context.combatants.map((c) => [c.id, c.waiting, c.act]), [["ulcen", false, true], ["fenka-tokF", false, true], ["goblin-tokG", true, true]]);
  const html = renderModuleTemplate("encounter", panel.context);
  assert.match(html, /<button type="button" class="mindscape-act" data-action="act" data-combatant="ulcen" data-tooltip="A public action for Ulcen of Tyr: a long rest, a pass, or what becomes of a creature it controls"/);

  // A rest, asked of the GM with what Ulcen may do: no pass (it attacked), its puppet.
  await panel.options.actions.act.call(panel, {}, { dataset: { combatant: "ulcen" } });
  const asked = t.clients.gm.dialogs.seen.filter((s) => s.kind === "encounterActionDialog").map((s) => s.arg.context);
  assert.deepEqual(asked[0], { combatantId: "ulcen", combatantName: "Ulcen of Tyr", phase: "attack", canPass: false, controlled: [{ id: "fenka-tokF", name: "Fenka" }] });
  assert.deepEqual(sent, [["ulcen", { rest: true }]]);
  assert.equal(t.clients.gm.notes.info.at(-1), "Ulcen of Tyr takes a long rest.");
  // Cancelled: nothing declared.
  await panel.options.actions.act.call(panel, {}, { dataset: { combatant: "ulcen" } });
  assert.equal(sent.length, 1);
  // Refused by the rules: the GM is told why, nothing else happens.
  await panel.options.actions.act.call(panel, {}, { dataset: { combatant: "ulcen" } });
  assert.deepEqual(sent.at(-1), ["ulcen", { keep: { target: "fenka-tokF", by: "die" } }]);
  assert.match(t.clients.gm.notes.warn.at(-1), /^Ulcen of Tyr's choice was not recorded: .*asleep and cannot act/);
  // The goblin, still waited for, may pass from here.
  await panel.options.actions.act.call(panel, {}, { dataset: { combatant: "goblin-tokG" } });
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "encounterActionDialog").at(-1).arg.context.canPass, true);
  assert.deepEqual(sent.at(-1), ["goblin-tokG", { pass: true }]);

  // An attack declared: the defense phase has no Act, and the controller refuses one begun earlier.
  Object.assign(view, { phase: "defense", waiting_for: ["fenka-tokF"] });
  await panel.render();
  assert.deepEqual(panel.context.combatants.map((c) => c.act), [false, false, false]);
  assert.doesNotMatch(renderModuleTemplate("encounter", panel.context), /data-action="act"/);
  await assert.rejects(ctl.act("ulcen"), (error) => error.key === "MINDSCAPE.Encounter.NoActionNow" && error.data.name === "Ulcen of Tyr");
  assert.equal(sent.length, 3, "nothing declared");
});

test("the panel offers Act only in power-pool: no other system has public actions", async () => {
  const { encounterView } = await import("../mindscape/scripts/encounter.js");
  const state = { phase: "attack", waiting_for: [], combatants: { a: {} } };
  assert.equal(encounterView(state, { system: "power-pool", combatants: {} }).combatants[0].act, true);
  for (const system of ["revised-2e", "combat-strength"]) {
    assert.equal(encounterView({ ...state, phase: "round" }, { system, combatants: {} }).combatants[0].act, false, system);
  }
});

// The encounter panel over the fake Foundry of `svc`'s table.
async function openPoolPanel(svc) {
  const { makeEncounterPanel } = await import("../mindscape/scripts/encounter.js");
  class ApplicationV2 {
    constructor() { this.options = { ...this.constructor.DEFAULT_OPTIONS, actions: { ...this.constructor.DEFAULT_OPTIONS.actions } }; }
    async render() { this.context = await this._prepareContext(); return this; }
  }
  const Panel = makeEncounterPanel({ applications: { api: { ApplicationV2, HandlebarsApplicationMixin: (Base) => class extends Base {} } } }, svc);
  const panel = new Panel();
  await panel.render();
  return panel;
}

test("a power-pool defender that knows no defense mode but has spells memorised is asked, to sacrifice them; one without spells is not", async () => {
  for (const [spells, asked] of [[[3, 1], true], [[], false]]) {
    const { t, calls } = await poolTable({
      dialogs: { p1: { attackDialog: { mode: "mental-stab", physical: false } }, gm: { defenseDialog: (arg) => ({ mode: "", sacrifice: "3", seen: arg.context }) } },
      // The goblin, a shaman (seed 001: a defending spellcaster may sacrifice spells), knows no psionic defense.
      control: (table) => { Object.assign(table.tokens.goblinToken.actor.flags.mindscape[POOL], { defenses: [], spell_levels: spells }); },
    });
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid] });
    const dialogs = t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog");
    assert.equal(dialogs.length, asked ? 1 : 0, `spells ${spells}`);
    assert.equal(calls.length, 1);
    if (asked) {
      assert.deepEqual(dialogs[0].arg.context.defenses, []);
      assert.equal(dialogs[0].arg.context.sacrifice, true);
      assert.deepEqual(calls[0].defense, { sacrifice: 3 });
    } else {
      assert.equal(calls[0].defense, null);
    }
  }
});

test("with \"spare the Fear\" ticked and the mode then switched to one without that effect, the odds request carries no decline", async () => {
  const form = { mode: "mental-stab", decline: ["frightened"] };
  const { t } = await poolTable({
    dialogs: { p1: { attackForm: form, attackDialog: null } },
    control: (table) => { table.actors.ulcen.flags.mindscape[POOL].attacks = ["mental-stab", "subconscious-subversion"]; },
  });
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  const odds = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.equal(odds.length, 1, JSON.stringify([t.clients.p1.notes, t.clients.gm.notes, t.daemon.calls.map((c) => c.method)]));
  assert.equal(odds[0].params.attack.mode, "mental-stab");
  assert.equal("decline" in odds[0].params.attack, false, JSON.stringify(odds[0].params.attack));
  assert.deepEqual(t.clients.p1.notes.error, []);
});

test("the panel's Act: a form with no or an unknown action declares nothing; Act on a combatant no longer in the encounter sends nothing and the GM is told", async () => {
  const view = { phase: "attack", waiting_for: ["goblin-tokG"], acted: [], combatants: { ulcen: { pool: 3 }, "fenka-tokF": { pool: 3 }, "goblin-tokG": { pool: 3 } }, revision: 7 };
  const sent = [];
  const { t, ctl } = await poolEncounter((params) => { sent.push([params.combatant_id, params.choice]); return { revision: 8, waiting_for: [], updates: [] }; }, {
    view: () => structuredClone(view),
    dialogs: { gm: { encounterActionDialog: [{ phase: "attack" }, { action: "", phase: "attack" }, { action: "attack", attackMode: "mental-stab", target: "ulcen", phase: "attack" }, { action: "fly", phase: "attack" }] } },
  });
  const panel = await openPoolPanel(t.clients.gm.svc);
  for (let i = 0; i < 4; i++) await panel.options.actions.act.call(panel, {}, { dataset: { combatant: "goblin-tokG" } });
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "encounterActionDialog").length, 4);
  assert.deepEqual(sent, [], "nothing declared: not a pass, not an attack");
  assert.deepEqual(t.clients.gm.notes.error, []);
  // A combatant the encounter no longer has: no dialog, nothing sent, the GM told.
  const dialogsBefore = t.clients.gm.dialogs.seen.length;
  await assert.rejects(ctl.act("ghost"), (error) => error.key === "MINDSCAPE.Error.NoEncounter");
  await panel.options.actions.act.call(panel, {}, { dataset: { combatant: "ghost" } });
  assert.equal(t.clients.gm.dialogs.seen.length, dialogsBefore);
  assert.deepEqual(sent, []);
  assert.deepEqual(t.clients.gm.notes.error, ["There is no encounter running. Create one from the encounter panel with the tokens selected."]);
});
