// power-pool psionic control at the end of a round the combat tracker ends (RULES.md
// §3.4): "Control is kept by dedicating a die from the controller's pool (lasts until
// released) or by an action each round (the controller must perceive the target)"; a
// Psionic Wave's targets are one link, released together. Before `exchange.end_round`
// the GM's client asks the companion what each controller may choose
// (`exchange.round_end_choices`), asks whoever answers for the controller (its owner
// through the relay, the GM for an NPC) and sends the answers as `choices`; creatures
// set free that are not in the round go as `puppets` and take the write-back (API.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { RESENDS, combatantIdOfRef, defaultMethods, makeTable, patient, poolImport, poolRoundEndResult } from "../test-support/scenario.mjs";
import { tick } from "../test-support/fakes.mjs";
import { registerUiHooks } from "../mindscape/scripts/hooks.js";
import { makeApi } from "../mindscape/scripts/api.js";
import { controlChoice, controlLinks, controlsSomeone, namedBy } from "../mindscape/scripts/rounds.js";

const POOL = "power-pool";
const pp = (actor) => actor.flags.mindscape[POOL];
const endRounds = (t) => t.daemon.calls.filter((c) => c.method === "exchange.end_round");
const offered = (t) => t.daemon.calls.filter((c) => c.method === "exchange.round_end_choices");
const asked = (client) => client.dialogs.seen.filter((s) => s.kind === "controlDialog");
const refIds = (refs) => (refs ?? []).map(combatantIdOfRef);

/**
 * A power-pool table: Ulcen (Ann's), Fenka (Bo's, an unlinked token) and the goblin (an
 * NPC's unlinked token) in a combat, every client with the UI hooks; the thrall and the
 * ox are world actors that are not in the combat. `control(t)` sets who controls whom.
 */
async function poolTracker({ methods = defaultMethods(), dialogs = {}, control = () => {}, generation = 12 } = {}) {
  const t = makeTable({ methods, dialogs, generation, passQuerySender: generation >= 13 });
  for (const c of Object.values(t.clients)) registerUiHooks(c.Hooks, c.svc);
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const profile = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab"], defenses: ["pinnacle-of-will"], ...extra });
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  for (const actor of [t.actors.ulcen, fenkaToken.actor, goblinToken.actor]) actor.flags.mindscape[POOL] = profile();
  const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { [POOL]: profile({ pool: 0 }) } } });
  const ox = t.world.actor({ id: "ox", name: "Ox", type: "npc", flags: { mindscape: { [POOL]: profile({ pool: 0 }) } } });
  const combat = t.world.combat({ id: "cmb1", server: t.server, combatants: [ulcenToken, fenkaToken, goblinToken].map((token, i) => ({ id: `c${i}`, token })) });
  const table = { ...t, combat, thrall, ox, profile };
  control(table);
  return table;
}

/** `controller` holds `links` ([{ids, by, wave?}]) of creatures whose profiles say so; a die each link kept by one. */
function holds(controller, controllerId, links, creatures) {
  const p = pp(controller);
  p.controlling = links.flatMap((l) => l.ids.map((id) => ({ id, kept_by: l.by, ...(l.wave ? { wave: l.wave } : {}) })));
  p.dedicated = links.filter((l) => l.by === "die").map((l) => ({ purpose: "control", target: l.wave ?? l.ids[0] }));
  for (const l of links) for (const id of l.ids) if (creatures[id]) pp(creatures[id]).controlled_by = controllerId;
}

/** Wait for every end of round the clients' `updateCombat` handlers started. */
async function settled(t) {
  await Promise.all(Object.values(t.clients).flatMap((c) => c.Hooks.called.filter((h) => h.name === "updateCombat").flatMap((h) => h.results)));
}

async function nextRound(t) {
  if (t.combat.round === 0) await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
}

/** The goblin holds Fenka by an action, and the thrall and a creature nobody can find ("ghost") as one wave by a die. */
const goblinHolds = (t) => holds(t.tokens.goblinToken.actor, "goblin-tokG", [
  { ids: ["fenka-tokF"], by: "action" },
  { ids: ["thrall", "ghost"], by: "die", wave: "w1" },
], { "fenka-tokF": t.tokens.fenkaToken.actor, thrall: t.thrall });

// ------------------------------------------------------------------ pure: links and choices

test("a link's choices follow the companion's offer; an answer it was not offered holds the link", () => {
  const zed = { targets: ["zed"], kept_by: "action", wave: null };
  const wave = { targets: ["ay", "bo"], kept_by: "die", wave: "w" };
  const links = controlLinks({ release: [zed, wave], keep: [{ ...zed, by: "die" }, { ...wave, by: "action" }], cannot_perceive: [zed] });
  assert.deepEqual(links.map((l) => [l.targets, l.keepBy, l.mayLoseSight, l.answers]), [
    [["zed"], "die", true, ["hold", "release", "keep", "cannot_perceive"]],
    [["ay", "bo"], "action", false, ["hold", "release", "keep"]],
  ]);
  // A pool without a die: the link kept by an action is not offered a die.
  assert.deepEqual(controlLinks({ release: [zed], keep: [], cannot_perceive: [zed] })[0].answers, ["hold", "release", "cannot_perceive"]);
  // A controller that cannot act: its link kept by an action ends as the round ends
  // (`ends`: nobody is asked about it); the wave it keeps by dice may still be released.
  const unable = controlLinks({ release: [zed, wave], keep: [], cannot_perceive: [zed], ends: [zed] });
  assert.deepEqual(unable.map((l) => [l.targets, l.ends, l.answers]), [
    [["zed"], true, ["hold", "release", "cannot_perceive"]], [["ay", "bo"], false, ["hold", "release"]]]);
  assert.deepEqual(links.map((l) => l.ends), [false, false]);
  assert.deepEqual(controlChoice(links, ["keep", "release"]), { keep: [{ target: "zed", by: "die" }], release: ["ay"] });
  assert.deepEqual(controlChoice(links, ["cannot_perceive", "hold"]), { cannot_perceive: ["zed"] });
  assert.equal(controlChoice(links, ["hold", "cannot_perceive"]), null, "a wave kept by a die cannot be lost from sight");
  assert.equal(controlChoice(links, []), null);
  assert.equal(controlChoice(links, ["steal", { release: true }]), null);
  // Any creature names its whole link: the creatures a choice is about.
  assert.deepEqual(namedBy(links, { release: ["bo"] }), ["ay", "bo"]);
  assert.deepEqual(namedBy(links, { cannot_perceive: ["zed", "ay"] }), ["zed", "ay", "bo"]);
  assert.deepEqual(namedBy(links, { release: ["kara"], keep: [{ target: "zed", by: "die" }] }), ["zed"]);
  assert.deepEqual(namedBy(links, null), []);
  // A creature named twice, or two of one link, are each named once.
  assert.deepEqual(namedBy(links, { release: ["ay", "bo"], cannot_perceive: ["zed"], keep: [{ target: "zed", by: "die" }] }), ["zed", "ay", "bo"]);
});

test("a link is its creatures all together: one without creatures is no link, a keep offered for other creatures or in an unknown way is none, and a wave is named", () => {
  const wave = { targets: ["ay", "bo"], kept_by: "die", wave: "w" };
  const other = { targets: ["ay", "cy"], kept_by: "die", wave: "v" };
  const links = controlLinks({ release: [{ targets: [], kept_by: "die" }, wave], keep: [{ ...other, by: "die" }], cannot_perceive: [other], ends: [other] });
  assert.deepEqual(links.map((l) => [l.targets, l.wave, l.keepBy, l.mayLoseSight, l.ends, l.answers]), [[["ay", "bo"], "w", null, false, false, ["hold", "release"]]]);
  assert.deepEqual(controlLinks({ release: [wave], keep: [{ ...wave, by: "charm" }] })[0].answers, ["hold", "release"]);
  assert.equal(controlLinks({ release: [{ targets: ["zed"], kept_by: "action" }] })[0].wave, null);
});

test("only a creature that controls someone is offered its control at the round's end", () => {
  assert.equal(controlsSomeone({ controlling: [{ target: "zed" }] }), true);
  assert.equal(controlsSomeone({ controlling: [] }), false);
  assert.equal(controlsSomeone({}), false);
  assert.equal(controlsSomeone(null), false);
});

// ------------------------------------------------------------------ the question

test("the question lists each link by its creatures' names with how it is kept; the choices are the companion's", async () => {
  const t = await poolTracker({ control: goblinHolds });
  await nextRound(t);
  // Only the controller is sent to the companion for its offer, with the world's house rules.
  assert.deepEqual(offered(t).map((c) => refIds(c.params.combatants)), [["goblin-tokG"]]);
  const [question] = asked(t.clients.gm);
  assert.equal(asked(t.clients.gm).length, 1, "the goblin is an NPC: the GM answers");
  const { context, timeoutMs } = question.arg;
  assert.equal(context.name, "Goblin");
  assert.deepEqual([context.seconds, timeoutMs], [30, 30000]);
  assert.deepEqual(context.links.map((l) => [l.names, l.together, l.choices.map((c) => c.value), l.choices.filter((c) => c.checked).map((c) => c.value)]), [
    ["Fenka", false, ["hold", "release", "keep", "cannot_perceive"], ["hold"]],
    // The thrall is found in the world; a creature found nowhere is shown by its id.
    ["Thrall, ghost", true, ["hold", "release", "keep"], ["hold"]],
  ]);
  assert.deepEqual(context.links.map((l) => l.kept), [
    "Goblin holds it by an action each round, and must perceive it.",
    "Goblin holds it by a die from its pool (a psionic wave: one for each creature), until released; no action, no sight needed.",
  ]);
  assert.deepEqual(context.links.map((l) => l.choices.find((c) => c.value === "keep").label), [
    "Keep it by a die from the pool instead (a psionic wave: one for each creature; no action needed)",
    "Keep it by an action each round instead (its dice return to the pool)",
  ]);
  // Nothing chosen (the dialog closed): every link holds, and the round still ends.
  assert.equal(endRounds(t).length, 1);
  assert.equal(endRounds(t)[0].params.choices, undefined);
  assert.equal(endRounds(t)[0].params.puppets, undefined);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
});

test("a round without a controller asks the companion for no offer", async () => {
  const t = await poolTracker();
  await nextRound(t);
  assert.equal(offered(t).length, 0);
  assert.equal(endRounds(t).length, 1);
});

test("the control question names the controller and its creatures by their tokens, and labels every answer", async () => {
  const t = await poolTracker({ control: (table) => {
    table.world.token({ id: "tokG2", name: "Goblin 2", actor: table.actors.goblin, actorLink: false });
    holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["fenka-tokF"], by: "action" }, { ids: ["goblin-tokG2"], by: "action" }], { "fenka-tokF": table.tokens.fenkaToken.actor });
  } });
  t.tokens.goblinToken.name = "Goblin chief";
  t.tokens.fenkaToken.name = "Fenka in the mask";
  await nextRound(t);
  const { context } = asked(t.clients.gm)[0].arg;
  assert.equal(context.name, "Goblin chief");
  assert.deepEqual(context.links.map((l) => l.names), ["Fenka in the mask", "Goblin 2"]);
  assert.deepEqual(context.links[0].choices.map((c) => [c.value, c.label]), [
    ["hold", "Keep it as it is"],
    ["release", "Release it"],
    ["keep", "Keep it by a die from the pool instead (a psionic wave: one for each creature; no action needed)"],
    ["cannot_perceive", "Lost sight of it: the control ends"],
  ]);
});

test("api.endRound asks the companion for the links of only the controllers whose choices name a creature", async () => {
  const t = await poolTracker({ control: (table) => holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall", "ox"], by: "die", wave: "w1" }], { thrall: table.thrall, ox: table.ox }) });
  await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.ulcenToken, t.tokens.goblinToken], choices: { "goblin-tokG": { release: ["ox"] } } });
  assert.deepEqual(offered(t).map((c) => refIds(c.params.combatants)), [["goblin-tokG"]]);
  assert.deepEqual(refIds(endRounds(t)[0].params.puppets), ["thrall", "ox"]);
});

test("a world read through a generic mapping sends every participant for the control offer: the companion says who controls whom", async () => {
  const t = await poolTracker({ control: goblinHolds });
  t.clients.gm.svc.adaptersCache = [];
  t.clients.gm.game.system.id = "pf2e";
  await nextRound(t);
  assert.deepEqual(offered(t).map((c) => refIds(c.params.combatants)), [["ulcen", "fenka-tokF", "goblin-tokG"]]);
});

test("api.endRound: control choices that name no creature ask the companion for no links", async () => {
  const t = await poolTracker({ control: goblinHolds });
  await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.goblinToken], choices: { "goblin-tokG": {} } });
  assert.equal(offered(t).length, 0);
  assert.equal(endRounds(t).length, 1);
});

test("a pool without a die is not offered to keep by a die; only controllers are asked", async () => {
  const t = await poolTracker({ control: (table) => {
    goblinHolds(table);
    pp(table.tokens.goblinToken.actor).pool = 0;
  } });
  await nextRound(t);
  assert.deepEqual(asked(t.clients.gm)[0].arg.context.links.map((l) => l.choices.map((c) => c.value)), [["hold", "release", "cannot_perceive"], ["hold", "release", "keep"]]);
  assert.equal(asked(t.clients.p1).length + asked(t.clients.p2).length, 0);
});

for (const generation of [12, 13]) {
  test(`v${generation}: a player's controller is asked on the owner's client through the relay; the GM answers for an NPC`, async () => {
    const t = await poolTracker({
      generation,
      control: (table) => {
        holds(table.tokens.fenkaToken.actor, "fenka-tokF", [{ ids: ["goblin-tokG"], by: "action" }], { "goblin-tokG": table.tokens.goblinToken.actor });
        holds(table.actors.ulcen, "ulcen", [{ ids: ["thrall"], by: "die" }], { thrall: table.thrall });
      },
      dialogs: {
        p2: { controlDialog: { answers: ["keep"], timedOut: false } },
        p1: { controlDialog: { answers: ["hold"], timedOut: false } },
      },
    });
    await nextRound(t);
    assert.equal(asked(t.clients.p2).length, 1);
    assert.equal(asked(t.clients.p1).length, 1);
    assert.equal(asked(t.clients.gm).length, 0);
    assert.equal(asked(t.clients.p2)[0].arg.context.links[0].names, "Goblin");
    if (generation >= 13) assert.ok(t.server.log.some((l) => l.query === "mindscape.chooseControl" && l.toUserId === "pl0002"));
    else assert.ok(t.server.log.some((l) => l.message?.type === "request" && l.message.name === "chooseControl" && l.message.to === "pl0002"));
    // Fenka keeps the goblin by a die from now on; Ulcen keeps the thrall as it is.
    assert.deepEqual(endRounds(t)[0].params.choices, { "fenka-tokF": { keep: [{ target: "goblin-tokG", by: "die" }] } });
    assert.deepEqual(pp(t.tokens.fenkaToken.actor).controlling, [{ id: "goblin-tokG", kept_by: "die", wave: null }]);
    assert.equal(pp(t.tokens.fenkaToken.actor).pool, 2);
    assert.deepEqual([t.clients.gm.notes.warn, t.clients.gm.notes.error], [[], []]);
  });
}

test("with the owner not connected the GM answers for the controller; every controller is asked at once", async () => {
  let open = 0;
  let most = 0;
  const slow = async () => { open++; most = Math.max(most, open); await tick(20); open--; return { answers: ["release"], timedOut: false }; };
  const t = await poolTracker({
    control: (table) => {
      holds(table.actors.ulcen, "ulcen", [{ ids: ["thrall"], by: "die" }], { thrall: table.thrall });
      holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["ox"], by: "action" }], { ox: table.ox });
    },
    dialogs: { gm: { controlDialog: slow } },
  });
  t.p1.active = false;
  await nextRound(t);
  assert.equal(asked(t.clients.gm).length, 2);
  assert.equal(asked(t.clients.p1).length, 0);
  assert.equal(most, 2);
  assert.deepEqual(endRounds(t)[0].params.choices, { ulcen: { release: ["thrall"] }, "goblin-tokG": { release: ["ox"] } });
});

test("no answer in time, a closed dialog or a failure keeps every link as it is, and the round still ends", async () => {
  const answers = [{ answers: [], timedOut: true }, { answers: [], timedOut: false, cancelled: true }, null, () => { throw new Error("the dialog broke"); }];
  for (const answer of answers) {
    const t = await poolTracker({ control: goblinHolds, dialogs: { gm: { controlDialog: answer } } });
    await nextRound(t);
    assert.equal(asked(t.clients.gm).length, 1);
    assert.equal(endRounds(t).length, 1);
    assert.equal(endRounds(t)[0].params.choices, undefined, String(answer));
    assert.equal(pp(t.tokens.fenkaToken.actor).controlled_by, "goblin-tokG");
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
  }
  // An owner who never answers cannot hold the round: after the world's timeout every link holds.
  const t = await poolTracker({
    control: (table) => holds(table.tokens.fenkaToken.actor, "fenka-tokF", [{ ids: ["goblin-tokG"], by: "action" }], { "goblin-tokG": table.tokens.goblinToken.actor }),
    dialogs: { p2: { controlDialog: () => new Promise(() => {}) } },
  });
  await t.clients.gm.game.settings.set("mindscape", "defenseTimeout", 0);
  t.clients.gm.svc.defenseGraceMs = 20;
  await nextRound(t);
  assert.equal(asked(t.clients.p2).length, 1);
  assert.equal(endRounds(t).length, 1);
  assert.equal(endRounds(t)[0].params.choices, undefined);
});

test("an answer the link was not offered (stale or forged) holds it", async () => {
  const t = await poolTracker({
    control: (table) => { goblinHolds(table); pp(table.tokens.goblinToken.actor).pool = 0; },
    dialogs: { gm: { controlDialog: { answers: ["keep", "cannot_perceive"], timedOut: false } } },
  });
  await nextRound(t);
  assert.equal(endRounds(t)[0].params.choices, undefined);
});

test("when the companion cannot say what control may do, the GM is told why, nobody is asked and every link holds", async () => {
  const t = await poolTracker({
    control: goblinHolds,
    methods: defaultMethods({ "exchange.round_end_choices": () => { throw { code: -32601, message: "Method not found" }; } }),
  });
  await nextRound(t);
  assert.equal(asked(t.clients.gm).length, 0);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /^The companion could not say how control may be kept or ended, so nobody was asked and every control holds: /);
  assert.equal(endRounds(t).length, 1);
  assert.equal(endRounds(t)[0].params.choices, undefined);
});

// ------------------------------------------------------------------ the creatures set free

test("a creature released that is not in the round goes as a puppet and its sheet is freed; one in the round is answered there", async () => {
  const t = await poolTracker({ control: goblinHolds, dialogs: { gm: { controlDialog: { answers: ["cannot_perceive", "release"], timedOut: false } } } });
  await nextRound(t);
  const [call] = endRounds(t);
  // The wave is named by its first creature; Fenka, lost from sight, is one of the round.
  assert.deepEqual(call.params.choices, { "goblin-tokG": { cannot_perceive: ["fenka-tokF"], release: ["thrall"] } });
  assert.deepEqual(refIds(call.params.combatants), ["ulcen", "fenka-tokF", "goblin-tokG"]);
  // The thrall is found in the world; "ghost" nowhere, so the companion only names it.
  assert.deepEqual(refIds(call.params.puppets), ["thrall"]);
  assert.equal(call.params.puppets[0].data.token, null);
  // Both sheets show the end of the control, and the goblin has its die back.
  assert.equal(pp(t.thrall).controlled_by, null);
  assert.equal(pp(t.tokens.fenkaToken.actor).controlled_by, null);
  assert.deepEqual([pp(t.tokens.goblinToken.actor).controlling, pp(t.tokens.goblinToken.actor).pool, pp(t.tokens.goblinToken.actor).dedicated], [[], 4, []]);
  assert.equal(t.actors.fenka.updates.length, 0, "Fenka's base actor is not written");
  // The card, from the summary, names them; the hook tells who was sent and what was chosen.
  const [card] = t.clients.gm.ChatMessage.created;
  assert.match(card.data.content, /Goblin releases Thrall\. Goblin releases &quot;ghost&quot;\. &quot;ghost&quot; was not given/);
  // Each event as a sentence (en.json MINDSCAPE.Event): the summary above says why.
  assert.match(card.data.content, /<li data-event="control-ended">Thrall is free of Goblin&#x27;s control<\/li>/);
  const payload = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0];
  assert.deepEqual(payload.puppets.map((a) => a.uuid), ["Actor.thrall"]);
  assert.deepEqual(payload.choices, call.params.choices);
  assert.deepEqual(payload.result.others.map((o) => o.id), ["thrall"]);
  assert.ok(payload.updates.some((u) => u.uuid === "Actor.thrall" && u.update["flags.mindscape.power-pool.controlled_by"] === null));
  assert.deepEqual(t.clients.gm.notes.warn, []);
});

test("a creature kept the other way goes along, so the summary names it, but its sheet is not written; a write to a puppet that fails warns the GM", async () => {
  const t = await poolTracker({
    control: (table) => holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall"], by: "die" }, { ids: ["ox"], by: "action" }], { thrall: table.thrall, ox: table.ox }),
    dialogs: { gm: { controlDialog: { answers: ["keep", "release"], timedOut: false } } },
  });
  t.ox.update = async () => { throw new Error("the ox's sheet is locked"); };
  await nextRound(t);
  assert.deepEqual(endRounds(t)[0].params.choices, { "goblin-tokG": { keep: [{ target: "thrall", by: "action" }], release: ["ox"] } });
  assert.deepEqual(refIds(endRounds(t)[0].params.puppets), ["ox", "thrall"]);
  assert.equal(pp(t.thrall).controlled_by, "goblin-tokG");
  assert.equal(t.thrall.updates.length, 0);
  assert.match(t.clients.gm.ChatMessage.created[0].data.content, /Goblin keeps control of Thrall by an action/);
  assert.deepEqual(pp(t.tokens.goblinToken.actor).controlling, [{ id: "thrall", kept_by: "action", wave: null }]);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /Actor\.ox: the ox's sheet is locked/);
});

// ------------------------------------------------------------------ control kept by an action, without a choice

// A controller that cannot act (asleep, unconscious, stunned, at 0 hit points or fewer)
// spends no action and loses its links kept by an action at the round's end, whatever it
// chose (API.md: `controller-cannot-act`). The module cannot know who can act (the hit
// points are read by the adapter), so the creatures any participant holds by an action
// go along whenever the round ends, read as the companion reads the sheets.

/** The goblin, asleep, holds the thrall (a world actor), Fenka (in the round) and "ghost" (nowhere) by an action, the ox by a die. */
const goblinAsleep = (t) => {
  holds(t.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall"], by: "action" }, { ids: ["fenka-tokF"], by: "action" }, { ids: ["ghost"], by: "action" }, { ids: ["ox"], by: "die" }],
    { thrall: t.thrall, "fenka-tokF": t.tokens.fenkaToken.actor, ox: t.ox });
  pp(t.tokens.goblinToken.actor).conditions = ["asleep"];
};
const reading = (extra = {}) => defaultMethods({ "adapters.import": poolImport, ...extra });
const read = (t) => t.daemon.calls.filter((c) => c.method === "adapters.import").map((c) => c.params.data.actor.name);

test("a controller asleep at the round's end loses what it holds by an action: those creatures go as puppets though nobody chose, and their sheets are freed", async () => {
  const t = await poolTracker({ methods: reading(), control: goblinAsleep });
  await nextRound(t);
  const [call] = endRounds(t);
  // Asked about the ox alone, with no other way to keep it: the links kept by an action
  // end whatever is chosen (the companion's `ends`).
  assert.deepEqual(asked(t.clients.gm).map((q) => q.arg.context.links.map((l) => [l.names, l.choices.map((c) => c.value)])),
    [[["Ox", ["hold", "release"]]]]);
  // The GM's dialog closed: nothing chosen, but the thrall goes along (Fenka is in the
  // round; the ox is kept by a die; "ghost" is found nowhere).
  assert.equal(call.params.choices, undefined);
  assert.deepEqual(refIds(call.params.puppets), ["thrall"]);
  assert.equal(call.params.puppets[0].data.token, null);
  // Only the controller's sheet was read for it.
  assert.deepEqual(read(t), ["Goblin"]);
  assert.equal(pp(t.thrall).controlled_by, null);
  assert.equal(pp(t.tokens.fenkaToken.actor).controlled_by, null);
  assert.equal(pp(t.ox).controlled_by, "goblin-tokG");
  assert.deepEqual(pp(t.tokens.goblinToken.actor).controlling, [{ id: "ox", kept_by: "die", wave: null }]);
  assert.equal(t.thrall.updates.length, 1);
  // The card names them; "ghost" is named by its id, as the summary says, without a warning every round.
  const [card] = t.clients.gm.ChatMessage.created;
  assert.match(card.data.content, /Goblin is asleep and cannot spend the action that keeps its control of Thrall and Fenka and &quot;ghost&quot;: the control ends\. &quot;ghost&quot; was not given/);
  assert.match(card.data.content, /<li data-event="control-ended">Thrall is free of Goblin&#x27;s control<\/li>/);
  const payload = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0];
  assert.deepEqual(payload.puppets, [t.thrall]);
  assert.deepEqual(payload.result.others.map((o) => o.id), ["thrall"]);
  assert.ok(payload.updates.some((u) => u.uuid === "Actor.thrall" && u.update["flags.mindscape.power-pool.controlled_by"] === null));
  assert.deepEqual([t.clients.gm.notes.warn, t.clients.gm.notes.error], [[], []]);
});

test("a creature held by an action goes along once, after those the choices name, and still goes when the choices are refused", async () => {
  const methods = reading({ "exchange.end_round": (params) => {
    if (params.choices) throw { code: 4001, message: "The rules forbid it", data: { rule: "not-controlling", detail: "Goblin does not control \"ox\"" } };
    return poolRoundEndResult(params);
  } });
  // Awake, the goblin holds the thrall and Fenka by an action and the ox by a die; the GM releases the ox and the thrall.
  const t = await poolTracker({
    methods,
    control: (table) => holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["ox"], by: "die" }, { ids: ["thrall"], by: "action" }, { ids: ["fenka-tokF"], by: "action" }], { ox: table.ox, thrall: table.thrall, "fenka-tokF": table.tokens.fenkaToken.actor }),
    dialogs: { gm: { controlDialog: { answers: ["release", "release", "hold"], timedOut: false } } },
  });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => [c.params.choices ?? null, refIds(c.params.puppets)]), [
    [{ "goblin-tokG": { release: ["ox", "thrall"] } }, ["ox", "thrall"]],
    [null, ["thrall"]],
  ]);
  // Refused, the round ended with every control held; the goblin is awake, so the thrall stays held.
  assert.equal(pp(t.thrall).controlled_by, "goblin-tokG");
  assert.equal(t.thrall.updates.length, 0);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
});

test("api.endRound without choices: a controller that cannot act loses what it holds by an action, and those creatures' sheets are freed", async () => {
  const t = await poolTracker({ methods: reading(), control: goblinAsleep });
  const done = await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.goblinToken] });
  assert.equal(offered(t).length, 0, "nobody is asked");
  // Fenka is not among the tokens here: she goes along too, as her token's own actor.
  assert.deepEqual(refIds(endRounds(t)[0].params.puppets), ["thrall", "fenka-tokF"]);
  assert.equal(pp(t.thrall).controlled_by, null);
  assert.equal(pp(t.tokens.fenkaToken.actor).controlled_by, null);
  assert.equal(t.actors.fenka.updates.length, 0, "Fenka's base actor is not written");
  assert.deepEqual(done.updates.map((u) => u.uuid), [t.tokens.goblinToken.actor.uuid, "Actor.thrall", t.tokens.fenkaToken.actor.uuid]);
});

// ------------------------------------------------------------------ the companion refuses

const refusals = [
  ["4001 not-controlling", () => ({ code: 4001, message: "The rules forbid it", data: { rule: "not-controlling", detail: "Goblin does not control \"thrall\" (/choices/goblin-tokG/release/0)" } }), /\(not-controlling: Goblin does not control "thrall" \(\/choices\/goblin-tokG\/release\/0\)\)/],
  ["−32602 at /choices", () => ({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/choices/goblin-tokG/keep/0/target", message: "one choice each" }] } }), /\(\/choices\/goblin-tokG\/keep\/0\/target: one choice each\)/],
];
for (const [what, error, reason] of refusals) {
  test(`a ${what} for the control choices: the round is ended again without them and the GM told who and why`, async () => {
    const methods = defaultMethods({ "exchange.end_round": (params) => { if (params.choices) throw error(); return poolRoundEndResult(params); } });
    const t = await poolTracker({ methods, control: goblinHolds, dialogs: { gm: { controlDialog: { answers: ["hold", "release"], timedOut: false } } } });
    await nextRound(t);
    assert.deepEqual(endRounds(t).map((c) => [c.params.choices ?? null, refIds(c.params.puppets)]), [[{ "goblin-tokG": { release: ["thrall"] } }, ["thrall"]], [null, []]]);
    assert.equal(t.clients.gm.notes.warn.length, 1);
    assert.match(t.clients.gm.notes.warn[0], /^The companion refused the control choices of Goblin /);
    assert.match(t.clients.gm.notes.warn[0], reason);
    assert.match(t.clients.gm.notes.warn[0], /so the round ended with every control held as it was\.$/);
    assert.deepEqual(t.clients.gm.notes.error, []);
    assert.equal(pp(t.thrall).controlled_by, "goblin-tokG");
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
    assert.equal(t.clients.gm.Hooks.called.filter((h) => h.name === "mindscape.roundEnded").length, 1);
  });
}

// The companion names whose choice it refused (4001: the controller's id in `combatant`;
// from a companion without it, "(/choices/<id>)" at the end of the detail, or
// "(/choices/<id>/release/0)"; −32602: each problem's path): the round is ended once more
// without only that controller's choice, the others' kept with their puppets, and the GM
// is told whose and why.
const refusedGoblin = [
  ["4001 naming the controller by its id only", () => ({ code: 4001, message: "The rules forbid it", data: { rule: "no-die-to-dedicate", detail: "Goblin has no die in its pool to keep control with", combatant: "goblin-tokG" } }), /\(no-die-to-dedicate: Goblin has no die in its pool to keep control with\)/],
  ["4001 naming the controller", () => ({ code: 4001, message: "The rules forbid it", data: { rule: "no-die-to-dedicate", detail: "Goblin has no die in its pool to keep control with (/choices/goblin-tokG)" } }), /\(no-die-to-dedicate: Goblin has no die in its pool to keep control with \(\/choices\/goblin-tokG\)\)/],
  ["4001 of a controller that cannot act", () => ({ code: 4001, message: "The rules forbid it", data: { rule: "controller-cannot-act", detail: "Goblin is unconscious and cannot act: it cannot change how it keeps its control (one kept by an action ends as the round ends) (/choices/goblin-tokG)", combatant: "goblin-tokG" } }), /\(controller-cannot-act: Goblin is unconscious and cannot act/],
  ["4001 naming a creature of its choice", () => ({ code: 4001, message: "The rules forbid it", data: { rule: "not-controlling", detail: "Goblin does not control \"ox\" (/choices/goblin-tokG/release/0)" } }), /\(not-controlling: Goblin does not control "ox" \(\/choices\/goblin-tokG\/release\/0\)\)/],
  ["−32602 at its choice", () => ({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/choices/goblin-tokG/release/0", message: "one choice each" }] } }), /\(\/choices\/goblin-tokG\/release\/0: one choice each\)/],
];
const twoControllers = (table) => {
  holds(table.actors.ulcen, "ulcen", [{ ids: ["thrall"], by: "die" }], { thrall: table.thrall });
  holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["ox"], by: "action" }], { ox: table.ox });
};
for (const [what, error, reason] of refusedGoblin) {
  test(`a ${what}: the round is ended without that controller's choice only, the others' kept with their puppets, and the GM told whose and why`, async () => {
    const methods = defaultMethods({ "exchange.end_round": (params) => { if (params.choices?.["goblin-tokG"]) throw error(); return poolRoundEndResult(params); } });
    const t = await poolTracker({ methods, control: twoControllers, dialogs: { gm: { controlDialog: { answers: ["release"], timedOut: false } } } });
    t.p1.active = false;
    await nextRound(t);
    assert.deepEqual(endRounds(t).map((c) => [c.params.choices ?? null, refIds(c.params.puppets)]), [
      [{ ulcen: { release: ["thrall"] }, "goblin-tokG": { release: ["ox"] } }, ["thrall", "ox"]],
      [{ ulcen: { release: ["thrall"] } }, ["thrall"]],
    ]);
    // Ulcen's release happened; the goblin's control holds.
    assert.equal(pp(t.thrall).controlled_by, null);
    assert.deepEqual(pp(t.actors.ulcen).controlling, []);
    assert.equal(pp(t.ox).controlled_by, "goblin-tokG");
    assert.equal(t.clients.gm.notes.warn.length, 1);
    assert.match(t.clients.gm.notes.warn[0], /^The companion refused the control choices of Goblin /);
    assert.match(t.clients.gm.notes.warn[0], reason);
    assert.match(t.clients.gm.notes.warn[0], /so the round ended with the control of Goblin held as it was; the choices of Ulcen of Tyr were kept\.$/);
    assert.deepEqual(t.clients.gm.notes.error, []);
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
    const ended = t.clients.gm.Hooks.called.filter((h) => h.name === "mindscape.roundEnded");
    assert.equal(ended.length, 1);
    assert.deepEqual(ended[0].args[0].choices, { ulcen: { release: ["thrall"] } });
  });
}

test("the round ended without the refused controller's choice is refused too (or names nobody): it ends without any choices, as before", async () => {
  const cases = [
    // The others' choices are refused as well.
    [() => ({ code: 4001, message: "The rules forbid it", data: { rule: "no-die-to-dedicate", detail: "Goblin has no die in its pool to keep control with (/choices/goblin-tokG)" } }),
      (params) => params.choices?.ulcen && { code: 4001, message: "The rules forbid it", data: { rule: "not-controlling", detail: "Ulcen of Tyr does not control \"thrall\" (/choices/ulcen/release/0)" } }, 3,
      /^The companion refused the control choices of Ulcen of Tyr, Goblin \(no-die-to-dedicate: .*\(\/choices\/goblin-tokG\); not-controlling: .*\(\/choices\/ulcen\/release\/0\)\), so the round ended with every control held as it was\.$/],
    // A refusal that names no controller (all the choices at once, or a puppet's problem
    // beside a choice's): nobody's choice is kept.
    [() => ({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/choices", message: "too many" }] } }), () => null, 2,
      /^The companion refused the control choices of Ulcen of Tyr, Goblin \(\/choices: too many\), so the round ended with every control held as it was\.$/],
    [() => ({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/choices/goblin-tokG/release/0", message: "one choice each" }, { path: "/puppets/1/data/actor", message: "not a sheet" }] } }), () => null, 2,
      /^The companion refused the control choices of Ulcen of Tyr, Goblin \(\/choices\/goblin-tokG\/release\/0: one choice each; \/puppets\/1\/data\/actor: not a sheet\), so the round ended with every control held as it was\.$/],
  ];
  for (const [first, second, calls, warning] of cases) {
    const methods = defaultMethods({ "exchange.end_round": (params) => {
      if (params.choices?.["goblin-tokG"]) throw first();
      const again = params.choices && second(params);
      if (again) throw again;
      return poolRoundEndResult(params);
    } });
    const t = await poolTracker({ methods, control: twoControllers, dialogs: { gm: { controlDialog: { answers: ["release"], timedOut: false } } } });
    t.p1.active = false;
    await nextRound(t);
    assert.equal(endRounds(t).length, calls);
    assert.equal(endRounds(t).at(-1).params.choices, undefined);
    assert.equal(endRounds(t).at(-1).params.puppets, undefined);
    assert.equal(pp(t.thrall).controlled_by, "ulcen");
    assert.equal(pp(t.ox).controlled_by, "goblin-tokG");
    assert.deepEqual(t.clients.gm.notes.warn.length, 1);
    assert.match(t.clients.gm.notes.warn[0], warning);
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
  }
});

test("a sheet changed while the controller chose (its last die spent): the companion refuses, the round still ends", async () => {
  const t = await poolTracker({
    control: (table) => holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["ox"], by: "action" }], { ox: table.ox }),
    dialogs: { gm: { controlDialog: async () => {
      // Meanwhile the goblin's last dice went into a power.
      await t.tokens.goblinToken.actor.update({ "flags.mindscape.power-pool.pool": 0 });
      return { answers: ["keep"], timedOut: false };
    } } },
  });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => c.params.choices ?? null), [{ "goblin-tokG": { keep: [{ target: "ox", by: "die" }] } }, null]);
  assert.match(t.clients.gm.notes.warn[0], /refused the control choices of Goblin \(no-die-to-dedicate: Goblin has no die in its pool to keep control with \(\/choices\/goblin-tokG\)\)/);
  assert.deepEqual(pp(t.tokens.goblinToken.actor).controlling, [{ id: "ox", kept_by: "action" }]);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
});

// A creature under control whose sheet the companion refuses (−32602 at
// `/puppets/<i>…`: a profile mended by hand, say) is left out, so that one broken sheet
// never keeps a round from ending; its control ends all the same, and the GM is told
// whose sheet and why.
const sleepsHoldingTwo = (t) => {
  holds(t.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall"], by: "action" }, { ids: ["ox"], by: "action" }], { thrall: t.thrall, ox: t.ox });
  pp(t.tokens.goblinToken.actor).conditions = ["asleep"];
};

/** Refuses the sheets of the puppets `names` names: the first only (as the engine's own checks do), or `all` at once. */
const refusingSheetsOf = (names, { all = false, answer = poolRoundEndResult } = {}) => reading({ "exchange.end_round": patient((params) => {
  const errors = (params.puppets ?? []).flatMap((ref, i) => (names.includes(ref.data.actor.name)
    ? [{ path: `/puppets/${i}/data/actor/flags/mindscape/power-pool/hit_dice`, message: "-2 is less than the minimum of 0" }] : []));
  if (errors.length) throw { code: -32602, message: "Invalid params", data: { errors: all ? errors : errors.slice(0, 1) } };
  return answer(params);
}) });

test("a creature under control whose sheet the companion refuses is left out: the round still ends, the others' sheets are freed, and the GM is told whose and why", RESENDS, async () => {
  const t = await poolTracker({ methods: refusingSheetsOf(["Thrall"]), control: sleepsHoldingTwo });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => refIds(c.params.puppets)), [["thrall", "ox"], ["ox"]]);
  assert.equal(pp(t.ox).controlled_by, null);
  assert.equal(pp(t.thrall).controlled_by, "goblin-tokG", "the refused sheet is not written");
  assert.deepEqual(pp(t.tokens.goblinToken.actor).controlling, []);
  assert.deepEqual(t.clients.gm.notes.warn, ["The companion refused the sheets of creatures under psionic control that went along (Thrall "
    + "(/data/actor/flags/mindscape/power-pool/hit_dice: -2 is less than the minimum of 0)), so they were left out: if that control ends, "
    + "their sheets will not show it. Mend their psionic profiles (sheet header › Psionic profile)."]);
  assert.deepEqual(t.clients.gm.notes.error, []);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
  const payload = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0];
  assert.deepEqual(payload.puppets, [t.ox]);
});

test("every refused sheet of a creature under control is left out in turn, down to none", RESENDS, async () => {
  const t = await poolTracker({ methods: refusingSheetsOf(["Thrall", "Ox"]), control: sleepsHoldingTwo });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => refIds(c.params.puppets)), [["thrall", "ox"], ["ox"], []]);
  assert.equal(endRounds(t)[2].params.puppets, undefined);
  assert.deepEqual(t.clients.gm.notes.warn.map((w) => /\((\w+) \(/.exec(w)[1]), ["Thrall", "Ox"]);
  assert.deepEqual([pp(t.thrall).controlled_by, pp(t.ox).controlled_by], ["goblin-tokG", "goblin-tokG"]);
  assert.deepEqual(pp(t.tokens.goblinToken.actor).controlling, []);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
});

test("a refusal naming a puppet's sheet and a participant's is not spared: the round's end fails as before", RESENDS, async () => {
  const methods = reading({ "exchange.end_round": patient(() => { throw { code: -32602, message: "Invalid params", data: { errors: [
    { path: "/puppets/0/data/actor", message: "not a sheet" }, { path: "/combatants/2/data/actor", message: "not a sheet" }] } }; }) });
  const t = await poolTracker({ methods, control: sleepsHoldingTwo });
  await nextRound(t);
  assert.equal(endRounds(t).length, 1);
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined);
});

test("one refusal naming several creatures' sheets leaves them all out at once: one call more, one warning naming each", RESENDS, async () => {
  const t = await poolTracker({ methods: refusingSheetsOf(["Thrall", "Ox"], { all: true }), control: sleepsHoldingTwo });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => refIds(c.params.puppets)), [["thrall", "ox"], []]);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /\(Thrall \(\/data\/actor\/flags\/mindscape\/power-pool\/hit_dice: -2 is less than the minimum of 0\), Ox \(\/data\/actor\/flags\/mindscape\/power-pool\/hit_dice: -2 is less than the minimum of 0\)\), so they were left out/);
  assert.deepEqual(t.clients.gm.notes.error, []);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
});

test("a creature's sheet refused for two problems is told with both, one at the creature itself as /", RESENDS, async () => {
  const methods = reading({ "exchange.end_round": patient((params) => {
    const i = (params.puppets ?? []).findIndex((ref) => ref.data.actor.name === "Thrall");
    if (i >= 0) throw { code: -32602, message: "Invalid params", data: { errors: [{ path: `/puppets/${i}`, message: "not a sheet" }, { path: `/puppets/${i}/data/actor/name`, message: "too long" }] } };
    return poolRoundEndResult(params);
  }) });
  const t = await poolTracker({ methods, control: sleepsHoldingTwo });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => refIds(c.params.puppets)), [["thrall", "ox"], ["ox"]]);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /\(Thrall \(\/: not a sheet; \/data\/actor\/name: too long\)\), so they were left out/);
});

test("a −32602 that names no problem (errors [], or none given) is no refusal of puppets' sheets: one call, and the GM sees the error", RESENDS, async () => {
  for (const data of [{ errors: [] }, {}, undefined]) {
    const methods = reading({ "exchange.end_round": patient(() => { throw { code: -32602, message: "Invalid params", ...(data ? { data } : {}) }; }) });
    const t = await poolTracker({ methods, control: sleepsHoldingTwo });
    await nextRound(t);
    assert.equal(endRounds(t).length, 1, JSON.stringify(data));
    assert.deepEqual(t.clients.gm.notes.warn, []);
    assert.equal(t.clients.gm.notes.error.length, 1);
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined);
  }
});

test("a problem at /puppets/<n> when only n creatures went along is no puppet of ours: the companion's error is shown, nothing is left out", RESENDS, async () => {
  const methods = reading({ "exchange.end_round": patient((params) => {
    throw { code: -32602, message: "Invalid params", data: { errors: [{ path: `/puppets/${params.puppets.length}/data/actor`, message: "not a sheet" }] } };
  }) });
  const t = await poolTracker({ methods, control: sleepsHoldingTwo });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => refIds(c.params.puppets)), [["thrall", "ox"]]);
  assert.deepEqual(t.clients.gm.notes.warn, []);
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.match(t.clients.gm.notes.error[0], /\/puppets\/2\/data\/actor: not a sheet/);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined);
});

test("after a creature is left out, the companion's warnings and write-back are about those sent: /puppets/0 is the creature sent first", RESENDS, async () => {
  // The thrall (sent first) is refused; the ox goes alone, at /puppets/0.
  const answer = (params) => ({
    ...poolRoundEndResult(params),
    warnings: ["/puppets/0: no psionic profile; treated as non-psionic"],
    // An answer that also wrote the creature left out is not taken for it.
    updates: [...poolRoundEndResult(params).updates, { uuid: "Actor.thrall", update: { "flags.mindscape.power-pool.controlled_by": null } }],
  });
  const t = await poolTracker({ methods: refusingSheetsOf(["Thrall"], { answer }), control: sleepsHoldingTwo });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => refIds(c.params.puppets)), [["thrall", "ox"], ["ox"]]);
  assert.equal(t.clients.gm.notes.warn.length, 2);
  assert.match(t.clients.gm.notes.warn[1], /Ox: no psionic profile; treated as non-psionic/);
  assert.doesNotMatch(t.clients.gm.notes.warn[1], /Thrall/);
  assert.equal(pp(t.ox).controlled_by, null);
  assert.equal(pp(t.thrall).controlled_by, "goblin-tokG", "the sheet left out is not written");
  assert.equal(t.thrall.updates.length, 0);
});

test("at most 64 creatures under control go along, those the choices name first", async () => {
  const t = await poolTracker({ methods: reading() });
  const many = Array.from({ length: 70 }, (_, i) => t.world.actor({ id: `m${i}`, name: `Mote ${i}`, type: "npc", flags: { mindscape: { [POOL]: t.profile({ pool: 0 }) } } }));
  holds(t.tokens.goblinToken.actor, "goblin-tokG", many.map((a) => ({ ids: [a.id], by: "action" })), Object.fromEntries(many.map((a) => [a.id, a])));
  pp(t.tokens.goblinToken.actor).conditions = ["asleep"];
  await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.goblinToken], choices: { "goblin-tokG": { release: ["m69"] } } });
  const [call] = endRounds(t);
  assert.equal(call.params.puppets.length, 64);
  assert.deepEqual(refIds(call.params.puppets).slice(0, 2), ["m69", "m0"]);
});

test("any other refusal still fails the round's end: the GM sees the error and the round is not recorded", async () => {
  const methods = defaultMethods({ "exchange.end_round": () => { throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/combatants/2/data/actor", message: "not a sheet" }] } }; } });
  const t = await poolTracker({ methods, control: goblinHolds, dialogs: { gm: { controlDialog: { answers: ["release"], timedOut: false } } } });
  await nextRound(t);
  assert.equal(endRounds(t).length, 1);
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined);
});

// ------------------------------------------------------------------ the macro API

test("api.endRound: a macro's control choices are sent as given, nobody is asked, and the creatures they free go as puppets", async () => {
  const t = await poolTracker({ control: (table) => holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall", "ox"], by: "die", wave: "w1" }], { thrall: table.thrall, ox: table.ox }) });
  const api = makeApi(t.clients.gm.svc);
  const done = await api.endRound({ tokenUuids: [t.tokens.goblinToken], choices: { "goblin-tokG": { release: ["ox"] } } });
  assert.equal(asked(t.clients.gm).length, 0);
  const [call] = endRounds(t);
  assert.deepEqual(call.params.choices, { "goblin-tokG": { release: ["ox"] } });
  // Naming the ox releases the whole wave: both sheets are freed.
  assert.deepEqual(refIds(call.params.puppets), ["thrall", "ox"]);
  assert.equal(pp(t.thrall).controlled_by, null);
  assert.equal(pp(t.ox).controlled_by, null);
  assert.ok(done.updates.some((u) => u.uuid === "Actor.ox"));
  const payload = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0];
  assert.deepEqual(payload.puppets.map((a) => a.name), ["Thrall", "Ox"]);
  // A creature kept the other way goes along too (unchanged); without choices the
  // companion is not asked for links and nobody goes along.
  holds(t.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall"], by: "die" }], { thrall: t.thrall });
  await api.endRound({ tokenUuids: [t.tokens.goblinToken], choices: { "goblin-tokG": { keep: [{ target: "thrall", by: "action" }] } } });
  assert.deepEqual(refIds(endRounds(t)[1].params.puppets), ["thrall"]);
  assert.deepEqual(pp(t.tokens.goblinToken.actor).controlling, [{ id: "thrall", kept_by: "action", wave: null }]);
  const before = offered(t).length;
  await api.endRound({ tokenUuids: [t.tokens.goblinToken] });
  assert.equal(offered(t).length, before);
  assert.equal(endRounds(t)[2].params.puppets, undefined);
});

test("api.endRound: a control choice the companion refuses is shown to the GM and changes nothing", async () => {
  const t = await poolTracker({ control: goblinHolds });
  const done = await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.goblinToken], choices: { "goblin-tokG": { release: ["ox"] } } });
  assert.equal(done, null);
  // The companion's words, without its rule's id (that goes to the GM's console).
  assert.equal(t.clients.gm.notes.error[0], 'The rules forbid this: Goblin does not control "ox" (/choices/goblin-tokG/release/0)');
  assert.equal(t.tokens.goblinToken.actor.updates.length, 0);
});

test("a controller whose links all end as the round ends (it cannot act) gets no control dialog, and the round ends without waiting for it", async () => {
  // Ulcen (Ann's) and the goblin (the GM's), both asleep, hold creatures by an action only.
  const t = await poolTracker({ methods: reading(), control: (table) => {
    holds(table.actors.ulcen, "ulcen", [{ ids: ["ox"], by: "action" }], { ox: table.ox });
    pp(table.actors.ulcen).conditions = ["asleep"];
    holds(table.tokens.goblinToken.actor, "goblin-tokG", [{ ids: ["thrall"], by: "action" }], { thrall: table.thrall });
    pp(table.tokens.goblinToken.actor).conditions = ["asleep"];
  } });
  await nextRound(t);
  assert.equal(offered(t).length, 1, "the companion was asked what control may do");
  for (const client of Object.values(t.clients)) assert.deepEqual(asked(client), [], client.user.name);
  const [call] = endRounds(t);
  assert.equal(call.params.choices, undefined);
  assert.deepEqual(refIds(call.params.puppets).sort(), ["ox", "thrall"]);
  assert.equal(pp(t.ox).controlled_by, null);
  assert.equal(pp(t.thrall).controlled_by, null);
  assert.deepEqual([t.clients.gm.notes.warn, t.clients.gm.notes.error], [[], []]);
});
