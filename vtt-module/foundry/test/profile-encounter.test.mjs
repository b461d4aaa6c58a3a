// The psionic profile editor (flags.mindscape.<system>, validated by adapters.import) and
// encounter rounds (encounter.* with secret choices through the GM relay).
import { test } from "node:test";
import assert from "node:assert/strict";
import { actorDataWithProfile, profileFields, profileFromForm, profileProblems } from "../mindscape/scripts/profile.js";
import { InvalidParamsError, UsageError } from "../mindscape/scripts/errors.js";
import { choiceFromForm, encounterView, logLine, resultsOfStep, selectedTokenUuids, updatesOfStep, EncounterWatcher } from "../mindscape/scripts/encounter.js";
import { defaultMethods, encounterMethods, makeTable, renderModuleTemplate, revisedResult } from "../test-support/scenario.mjs";
import { makeI18n, tick } from "../test-support/fakes.mjs";

const i18n = makeI18n();
/** `svc.t.label` over the module's language file. */
const enLabel = (k, f) => (i18n.has(k) ? i18n.localize(k) : f);

const schema = {
  type: "object",
  properties: {
    id: { type: "string" }, name: { type: "string" },
    kind: { enum: ["psionicist", "wild-talent", "nonpsionic"] },
    level: { type: "integer", minimum: 0 },
    psp: { type: "integer", minimum: 0 },
    attacks: { type: "array", items: { enum: ["ego-whip", "mind-thrust"] } },
    mindless: { type: "boolean" },
    mind: { type: "object" },
  },
};

test("profile fields follow the combatant schema; objects go to the advanced JSON", () => {
  const { fields, advanced } = profileFields(schema, { psp: 12, attacks: ["ego-whip"], mind: { state: "open" }, custom: 1 });
  assert.deepEqual(fields.map((f) => [f.key, f.kind]), [["kind", "select"], ["level", "number"], ["psp", "number"], ["attacks", "multi"], ["mindless", "checkbox"]]);
  assert.equal(fields.find((f) => f.key === "psp").value, 12);
  assert.deepEqual(fields.find((f) => f.key === "attacks").options.map((o) => o.checked), [true, false]);
  assert.deepEqual(JSON.parse(advanced), { mind: { state: "open" }, custom: 1 });
});

test("the profile's choices read by their labels: conditions as conditions, modes as modes, a kind by its name; a plugin's id as words", () => {
  const withConditions = { ...schema, properties: { ...schema.properties, conditions: { type: "array", items: { enum: ["stunned", "asleep", "mind-frozen"] } } } };
  const { fields } = profileFields(withConditions, { conditions: ["asleep"] }, enLabel);
  const labels = (key) => fields.find((f) => f.key === key).options.map((o) => o.label);
  assert.deepEqual(labels("conditions"), ["Stunned", "Asleep", "mind frozen"]);
  assert.deepEqual(labels("attacks"), ["Ego whip", "Mind thrust"]);
  assert.deepEqual(labels("kind"), ["—", "Psionicist", "Wild talent", "Non-psionic"]);
  // The values sent stay the companion's ids.
  assert.deepEqual(fields.find((f) => f.key === "kind").options.map((o) => o.value), ["", "psionicist", "wild-talent", "nonpsionic"]);
});

test("a submitted profile keeps only filled fields, as numbers where the schema says so", () => {
  const { fields } = profileFields(schema, {});
  const profile = profileFromForm(fields, { kind: "psionicist", level: "4", psp: "", attacks: ["mind-thrust"], mindless: false, advanced: '{"mind": {"state": "closed"}}' });
  assert.deepEqual(profile, { kind: "psionicist", level: 4, attacks: ["mind-thrust"], mindless: false, mind: { state: "closed" } });
  assert.throws(() => profileFromForm(fields, { advanced: "{not json" }), /AdvancedJson/);
  assert.deepEqual(actorDataWithProfile({ flags: { mindscape: { other: 1 } } }, "mindscape", "revised-2e", { psp: 3 }), { flags: { mindscape: { other: 1, "revised-2e": { psp: 3 } } } });
});

test("each field is what its schema says: its title or its name in words, its description as hint, bounds, step and default; a null choice is not offered", () => {
  const described = {
    type: "object",
    properties: {
      rounds_open: { type: "integer", minimum: 0, maximum: 9, default: 0, description: "Rounds the mind has been open" },
      strength: { type: "number", title: "Strength" },
      ready: { type: "boolean", default: true },
      size: { type: ["integer", "null"], enum: [1, 2, null] },
      weight: { type: "number", enum: [0.5, 1.5] },
      note: { type: "string" },
      mind: { type: "object" },
      vague: {},
    },
  };
  const { fields, advanced } = profileFields(described, {});
  const by = Object.fromEntries(fields.map((f) => [f.key, f]));
  assert.deepEqual(fields.map((f) => f.key), ["rounds_open", "strength", "ready", "size", "weight", "note"]);
  assert.deepEqual([by.rounds_open.label, by.rounds_open.hint, by.rounds_open.min, by.rounds_open.max, by.rounds_open.step, by.rounds_open.placeholder], ["rounds open", "Rounds the mind has been open", 0, 9, 1, 0]);
  assert.deepEqual([by.strength.label, by.strength.hint, by.strength.min, by.strength.max, by.strength.step, by.strength.placeholder], ["Strength", "", "", "", "any", ""]);
  assert.equal(by.ready.checked, true, "unset, a checkbox shows its default");
  assert.deepEqual(by.size.options.map((o) => o.value), ["", "1", "2"]);
  assert.deepEqual([by.size.numeric, by.weight.numeric], [true, true]);
  // Nothing stored for an object field, nor a sheet-only field: no advanced JSON.
  assert.equal(advanced, "");
  assert.equal(profileFields(described, { hp: 7 }).advanced, "");
  // Back from the form: a numeric choice is a number, one value ticked is a list, an empty text is left out.
  const withAttacks = { ...described, properties: { ...described.properties, attacks: { type: "array", items: { enum: ["ego-whip", "mind-thrust"] } } } };
  const spec = profileFields(withAttacks, {}).fields;
  assert.deepEqual(profileFromForm(spec, { size: "2", weight: "1.5", note: "", attacks: "ego-whip", advanced: "  \n " }), { size: 2, weight: 1.5, attacks: ["ego-whip"] });
  assert.throws(() => profileFromForm(spec, { advanced: "[1, 2]" }), /AdvancedJson/);
  // The actor's data checked with the new profile is a copy: the actor's own is untouched.
  const actorData = { flags: { mindscape: { "revised-2e": { psp: 1 } } } };
  actorDataWithProfile(actorData, "mindscape", "revised-2e", { psp: 3 });
  assert.deepEqual(actorData, { flags: { mindscape: { "revised-2e": { psp: 1 } } } });
});

test("a refused profile's problems: a JSON pointer's escapes are read, a sheet path is the sheet's whatever its names, and only the advanced JSON's own error is the form's", () => {
  const spec = { system: "revised-2e", fields: [] };
  const words = { label: (k, f) => ({ "MINDSCAPE.Profile.Advanced": "Advanced (JSON)", "MINDSCAPE.Profile.Sheet": "The sheet" })[k] ?? f, message: (e) => e.key };
  const refused = (...errors) => new InvalidParamsError({ code: -32602, message: "Invalid params", errors });
  assert.deepEqual(profileProblems(refused(
    { path: "/data/actor/flags/mindscape/revised-2e/a~1b~0c/x", message: "must be a number" },
    { path: "/data/actor/system/combatant/level", message: "must be a whole number" },
  ), spec, words, "mindscape"), [
    { key: "advanced", label: "Advanced (JSON) › a/b~c", message: "must be a number" },
    { key: null, label: "The sheet", message: "must be a whole number (/data/actor/system/combatant/level)" },
  ]);
  assert.equal(profileProblems(new UsageError("MINDSCAPE.Error.NoDocument", { uuid: "Actor.x" }), spec, words, "mindscape"), null);
});

test("a player's profile is validated by the daemon's adapter before the GM saves it to flags.mindscape.<system>", async () => {
  const t = makeTable({ dialogs: { p1: { profileDialog: { kind: "psionicist", psp: "33", attacks: ["ego-whip"] } } } });
  // The world's house rules decide what a combatant may be (H-2E-MODE-LIMITS): they go along.
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-MODE-LIMITS": false } });
  const saved = await t.clients.p1.svc.configureActor(t.actors.ulcen.uuid);
  assert.deepEqual(saved.profile, { kind: "psionicist", psp: 33, attacks: ["ego-whip"] });
  const check = t.daemon.calls.filter((c) => c.method === "adapters.import").pop();
  assert.deepEqual(check.params.options, { "H-2E-MODE-LIMITS": false });
  assert.deepEqual(check.params.data.actor.flags.mindscape["revised-2e"], { kind: "psionicist", psp: 33, attacks: ["ego-whip"] });
  assert.deepEqual(t.actors.ulcen.flags.mindscape["revised-2e"], { kind: "psionicist", psp: 33, attacks: ["ego-whip"] });
});

test("what the daemon's adapter warns about a saved profile is shown to the player who saved it, with the profile's name said saved", async () => {
  const methods = defaultMethods({ "adapters.import": (params) => ({ combatant: { id: "ulcen", name: params.data.actor.name }, warnings: ["psp_max assumed from psp"] }) });
  const t = makeTable({ methods, dialogs: { p1: { profileDialog: { kind: "psionicist", psp: "33" } } } });
  const saved = await t.clients.p1.svc.configureActor(t.actors.ulcen.uuid);
  assert.deepEqual(saved.warnings, ["psp_max assumed from psp"]);
  assert.deepEqual(t.clients.p1.notes.warn, ["psp_max assumed from psp"]);
  assert.equal(t.clients.p1.notes.info.length, 1);
  assert.match(t.clients.p1.notes.info[0], /Ulcen of Tyr/);
});

test("a saved profile is on the sheet by the time saving it answers", async () => {
  const t = makeTable({ dialogs: { p1: { profileDialog: { kind: "psionicist", psp: "33" } } } });
  const actor = t.actors.ulcen;
  const update = actor.update.bind(actor);
  actor.update = async (data) => { await tick(5); return update(data); };
  await t.clients.p1.svc.configureActor(actor.uuid);
  assert.deepEqual(actor.flags.mindscape["revised-2e"], { kind: "psionicist", psp: 33 });
});

test("the profile editor opened on a world actor edits that actor, not one of its unlinked tokens", async () => {
  const t = makeTable({ dialogs: { gm: { profileDialog: { psp: "18" } } } });
  const tokenActor = t.tokens.goblinToken.actor;
  const before = structuredClone(tokenActor.flags);
  const saved = await t.clients.gm.svc.configureActor(t.actors.goblin.uuid);
  assert.deepEqual(saved.profile, { psp: 18 });
  assert.deepEqual(t.actors.goblin.flags.mindscape["revised-2e"], { psp: 18 });
  assert.deepEqual(tokenActor.flags, before);
  assert.equal(tokenActor.updates.length, 0);
  // The token's own sheet still edits that one copy. Its actor is the base actor with
  // the token's delta over it (foundryvtt#8400): a field cleared is written as null,
  // which the adapters read as absent, not deleted (the base actor's would show again).
  const old = structuredClone(tokenActor.flags.mindscape["revised-2e"]);
  const one = await t.clients.gm.svc.configureActor(tokenActor.uuid);
  assert.deepEqual(one.profile, { psp: 18 });
  const cleared = Object.keys(old).filter((key) => key !== "psp");
  assert.ok(cleared.length > 0, JSON.stringify(old));
  assert.deepEqual(tokenActor.updates, [{ "flags.mindscape.revised-2e": { psp: 18, ...Object.fromEntries(cleared.map((key) => [key, null])) } }]);
});

test("an unlinked token's profile saved with a condition ended writes its key in condition_rounds as null, not left to outlive the condition", async () => {
  // Foundry merges an object into the stored one key by key: condition_rounds {} written
  // over {stunned: 1} kept the stun's rounds, and the companion refuses rounds on a
  // condition the creature does not have ("\"stunned\" is not among the conditions").
  const t = makeTable({ dialogs: { gm: { profileDialog: { psp: "18", advanced: '{"condition_rounds": {"dazed": 2}, "conditions": ["dazed"], "mind": {"state": "closed"}}' } } } });
  const tokenActor = t.tokens.goblinToken.actor;
  Object.assign(tokenActor.flags.mindscape["revised-2e"], { conditions: ["stunned", "dazed"], condition_rounds: { stunned: 1, dazed: 1, gone: null }, mind: { state: "closed", rounds_open: 0 } });
  const saved = await t.clients.gm.svc.configureActor(tokenActor.uuid);
  assert.deepEqual(saved.profile.condition_rounds, { dazed: 2 });
  const [update] = tokenActor.updates;
  assert.deepEqual(update["flags.mindscape.revised-2e"].condition_rounds, { dazed: 2, stunned: null });
  assert.deepEqual(update["flags.mindscape.revised-2e"].mind, { state: "closed", rounds_open: null });
  assert.deepEqual(tokenActor.flags.mindscape["revised-2e"].condition_rounds, { stunned: null, dazed: 2, gone: null });
  assert.deepEqual(tokenActor.flags.mindscape["revised-2e"].conditions, ["dazed"]);
});

test("a profile the companion refuses is not saved, and the form opens again with what was typed and the problem beside its field", async () => {
  const t = makeTable({
    methods: defaultMethods({ "adapters.import": () => { throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/data/actor/flags/mindscape/revised-2e/psp", message: "must be at least 0, got -1" }] } }; } }),
    dialogs: { gm: { profileDialog: [{ kind: "psionicist", psp: "-1", attacks: ["ego-whip"], advanced: "" }, null] } },
  });
  const before = structuredClone(t.actors.goblin.flags);
  assert.equal(await t.clients.gm.svc.configureActor(t.actors.goblin.uuid), null);
  assert.deepEqual(t.actors.goblin.flags, before);
  const [first, again] = t.clients.gm.dialogs.seen.filter((s) => s.kind === "profileDialog").map((s) => s.arg.context);
  assert.equal(first.problems, undefined);
  // Asked again with the values typed, the field named in the form's own words, and no
  // notification instead (the problem is in the form).
  assert.deepEqual(again.previous, { kind: "psionicist", psp: "-1", attacks: ["ego-whip"], advanced: "" });
  assert.deepEqual(again.problems, [{ key: "psp", label: "PSPs", message: "must be at least 0, got -1" }]);
  assert.deepEqual(again.fields.filter((f) => f.invalid).map((f) => f.key), ["psp"]);
  assert.deepEqual(t.clients.gm.notes.error, []);
  const html = renderModuleTemplate("profile", again);
  assert.match(html, /This profile was not saved: correct what is marked and save again\./);
  assert.match(html, /<li><strong>PSPs<\/strong>: must be at least 0, got -1<\/li>/);
  assert.match(html, /<div class="form-group mindscape-invalid" title="[^"]*">\s*<label for="[^"]*-psp">PSPs<\/label>/);
});

test("advanced JSON that does not parse is shown in the form, kept as typed, and a corrected form is saved", async () => {
  const t = makeTable({ dialogs: { gm: { profileDialog: [{ psp: "18", advanced: "{ not json" }, { psp: "18", advanced: '{"mindless": false}' }] } } });
  const saved = await t.clients.gm.svc.configureActor(t.actors.goblin.uuid);
  assert.deepEqual(saved.profile, { psp: 18, mindless: false });
  const again = t.clients.gm.dialogs.seen.filter((s) => s.kind === "profileDialog")[1].arg.context;
  assert.equal(again.advanced, "{ not json");
  assert.equal(again.advancedInvalid, true);
  assert.deepEqual(again.problems.map((p) => [p.key, p.label]), [["advanced", "Advanced (JSON)"]]);
  assert.match(again.problems[0].message, /^The advanced profile is not a JSON object \(/);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("a refused profile's problems in the form's words: a typed field, a key of the advanced JSON, a derived field, the sheet; other errors are not the form's", () => {
  const spec = { system: "revised-2e", fields: [{ key: "level", label: "Level" }] };
  const words = { label: (k, f) => ({ "MINDSCAPE.Field.mthac0": "MTHAC0", "MINDSCAPE.Profile.Advanced": "Advanced (JSON)", "MINDSCAPE.Profile.Sheet": "The sheet" })[k] ?? f, message: (e) => e.key };
  const refused = (...errors) => new InvalidParamsError({ code: -32602, message: "Invalid params", errors });
  assert.deepEqual(profileProblems(refused(
    { path: "/data/actor/flags/mindscape/revised-2e/level", message: "must be at least 0, got -7" },
    { path: "/data/actor/flags/mindscape/revised-2e/mind/state", message: "must be one of closed, open" },
    { path: "/combatant/mthac0", message: "must be at most 20" },
    { path: "/data/actor/system/abilities/int/value", message: "must be a whole number" },
  ), spec, words, "mindscape"), [
    { key: "level", label: "Level", message: "must be at least 0, got -7" },
    { key: "advanced", label: "Advanced (JSON) › mind", message: "must be one of closed, open" },
    { key: null, label: "MTHAC0", message: "must be at most 20" },
    { key: null, label: "The sheet", message: "must be a whole number (/data/actor/system/abilities/int/value)" },
  ]);
  // A house rule refused, the companion not answering: nothing in the form mends them.
  assert.equal(profileProblems(refused({ path: "/options/H-2E-X", message: "unknown" }), spec, words, "mindscape"), null);
  assert.equal(profileProblems(new Error("down"), spec, words, "mindscape"), null);
});

test("encounter choices: stance in combat-strength's intent phase, attack with target, defense", () => {
  assert.deepEqual(choiceFromForm("combat-strength", { phase: "intent" }, { stance: "trance" }), { stance: "trance" });
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "ego-whip", target: "fenka", multiplier: "2", range: "medium", defenseMode: "mind-blank" }),
    { attack: { mode: "ego-whip", multiplier: 2, range: "medium", target: "fenka" }, defense: { mode: "mind-blank" } });
  // revised-2e's further attacks of a round (RULES.md §1.8): all of them as `attacks`;
  // one left at No attack is no attack.
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "ego-whip", target: "fenka", multiplier: "2", range: "medium", attackMode2: "mind-thrust", target2: "ulcen", multiplier2: "3", range2: "long" }),
    { attacks: [{ mode: "ego-whip", multiplier: 2, range: "medium", target: "fenka" }, { mode: "mind-thrust", multiplier: 3, range: "long", target: "ulcen" }] });
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "ego-whip", target: "fenka", attackMode2: "", target2: "ulcen" }),
    { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" } });
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "", target: "fenka", attackMode2: "mind-thrust", target2: "ulcen" }),
    { attack: { mode: "mind-thrust", multiplier: 1, range: "short", target: "ulcen" } });
  // Another system's form has no further attacks.
  assert.deepEqual(choiceFromForm("combat-strength", {}, { attackMode: "ego-whip", target: "b", range: "short", attackMode2: "mind-thrust", target2: "c" }),
    { attack: { mode: "ego-whip", range: "short", target: "b" } });
  assert.deepEqual(choiceFromForm("power-pool", { phase: "defense" }, { attackMode: "", defenseMode: "pinnacle-of-will", sacrifice: "2" }), { defense: { mode: "pinnacle-of-will", sacrifice: 2 } });
  // No mode still rolls the pool: a spell sacrificed with it goes along, not dropped.
  assert.deepEqual(choiceFromForm("power-pool", { phase: "defense" }, { attackMode: "", defenseMode: "", sacrifice: "2" }), { defense: { sacrifice: 2 } });
  assert.deepEqual(choiceFromForm("power-pool", { phase: "defense" }, { attackMode: "", defenseMode: "", sacrifice: "0" }), { defense: {} });
});

test("revised-2e: the choice dialog has a row for each further attack the companion allows this round", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  // The view's attacks_allowed (RULES.md §1.8: levels 7-12 three per two rounds, 13+ two).
  const two = await ctl.choiceContext("ulcen", { combatants: {}, attacks_allowed: { ulcen: 2, "fenka-tokF": 1 } });
  assert.deepEqual(two.furtherAttacks, [{ n: "2", label: "Attack 2 this round (allowed by level)" }]);
  assert.deepEqual((await ctl.choiceContext("fenka-tokF", { combatants: {}, attacks_allowed: { ulcen: 2, "fenka-tokF": 1 } })).furtherAttacks, []);
  assert.deepEqual((await ctl.choiceContext("ulcen", { combatants: {} })).furtherAttacks, [], "a companion that does not say: one attack");
  const html = renderModuleTemplate("encounter-choice", { ...two, uid: "u" });
  for (const name of ["attackMode2", "target2", "multiplier2", "range2"]) assert.match(html, new RegExp(`name="${name}"`), name);
});

test("the choice dialog names the combatant as the encounter does and the phase; revised-2e offers a multiplier per level, at least one; combat-strength's intent phase offers stances and its segments the ranges", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  const revised = await ctl.choiceContext("ulcen", { phase: "round", combatants: { ulcen: { level: 3 } } });
  assert.equal(revised.combatantName, "Ulcen of Tyr");
  assert.equal(revised.phaseLabel, "Round");
  assert.deepEqual(revised.multipliers, [{ value: 1 }, { value: 2 }, { value: 3 }]);
  assert.deepEqual((await ctl.choiceContext("ulcen", { phase: "round", combatants: { ulcen: { level: 0 } } })).multipliers, [{ value: 1 }]);
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Bout");
  const intent = await ctl.choiceContext("ulcen", { phase: "intent", combatants: {} });
  assert.deepEqual(intent.stances.map((s) => s.value), ["trance", "discipline", "wave", "normal"]);
  assert.deepEqual([intent.attacks, intent.defenses, intent.multipliers], [[], [], []]);
  const segment = await ctl.choiceContext("ulcen", { phase: "segment", combatants: {} });
  assert.deepEqual([segment.intent, segment.stances], [false, []]);
  assert.deepEqual(segment.ranges.map((r) => r.value), ["short", "medium", "long"]);
});

test("power-pool: the encounter's choice dialog offers to spare an effect only the modes the chooser knows may decline", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  const subversion = { id: "subconscious-subversion", on_success: [{ condition: "frightened", optional: true }] };
  assert.deepEqual(ctl.declinable([{ id: "mental-stab" }, subversion]), {
    declinable: [{ value: "frightened", label: "If it wins, spare the target the Frightened effect (Subconscious subversion: the attacker may choose)" }],
    declineModes: "subconscious-subversion:frightened",
  });
  assert.deepEqual(ctl.declinable([{ id: "mental-stab" }]), { declinable: [], declineModes: "" });
  const html = renderModuleTemplate("encounter-choice", { combatantName: "A", attacks: [subversion], targets: [], defenses: [], poolDice: [], pool: { defensePhase: false, controlled: [], others: [], waveModes: "", ...ctl.declinable([subversion]) }, uid: "u" });
  assert.match(html, /name="declineModes" value="subconscious-subversion:frightened"/);
  assert.match(html, /<input type="checkbox" name="decline" value="frightened" data-list> If it wins, spare the target the Frightened effect/);
});

test("power-pool choices: one thing at a time, by phase; no attack is a pass; public actions instead", () => {
  const attack = { phase: "attack" };
  const defense = { phase: "defense" };
  // Attack phase: the attack (a wave's further targets, how control is kept), else a pass.
  assert.deepEqual(choiceFromForm("power-pool", attack, { attackMode: "psionic-wave", target: "b", waveTargets: ["c", "b", "d"], waveModes: "psionic-wave", attackKeepBy: "die", pool_dice: "3", defenseMode: "blank-mind" }),
    { attack: { mode: "psionic-wave", pool_dice: 3, target: "b", targets: ["c", "d"], keep_by: "die" } });
  // Further targets go only with a mode that strikes several.
  assert.deepEqual(choiceFromForm("power-pool", attack, { attackMode: "mental-stab", target: "b", waveTargets: ["c"], waveModes: "psionic-wave", attackKeepBy: "" }), { attack: { mode: "mental-stab", target: "b" } });
  assert.deepEqual(choiceFromForm("power-pool", attack, { attackMode: "", target: "b" }), { pass: true });
  // An effect spared goes only with a mode that may decline it (the dialog's pairs).
  const spare = { target: "b", decline: ["frightened"], declineModes: "subconscious-subversion:frightened" };
  assert.deepEqual(choiceFromForm("power-pool", attack, { ...spare, attackMode: "subconscious-subversion" }), { attack: { mode: "subconscious-subversion", target: "b", decline: ["frightened"] } });
  assert.deepEqual(choiceFromForm("power-pool", attack, { ...spare, attackMode: "mental-stab" }), { attack: { mode: "mental-stab", target: "b" } });
  // Defense phase: the defense (no mode still rolls the pool; allies of a swarm).
  assert.deepEqual(choiceFromForm("power-pool", defense, { attackMode: "mental-stab", target: "b", defenseMode: "" }), { defense: {} });
  assert.deepEqual(choiceFromForm("power-pool", defense, { defenseMode: "imagination-swarm", allies: ["guard", "seer"] }), { defense: { mode: "imagination-swarm", allies: ["guard", "seer"] } });
  // Instead: the public actions, in either phase.
  assert.deepEqual(choiceFromForm("power-pool", attack, { action: "pass", attackMode: "mental-stab", target: "b" }), { pass: true });
  assert.deepEqual(choiceFromForm("power-pool", defense, { action: "rest" }), { rest: true });
  assert.deepEqual(choiceFromForm("power-pool", attack, { action: "release", controlTarget: "thrall" }), { release: "thrall" });
  assert.deepEqual(choiceFromForm("power-pool", attack, { action: "cannot_perceive", controlTarget: "thrall" }), { cannot_perceive: "thrall" });
  assert.deepEqual(choiceFromForm("power-pool", attack, { action: "keep", controlTarget: "thrall", keepBy: "action" }), { keep: { target: "thrall", by: "action" } });
  assert.deepEqual(choiceFromForm("power-pool", attack, { action: "keep", controlTarget: "thrall" }), { keep: { target: "thrall", by: "die" } });
});

test("power-pool choices: release, keep or lost sight with no creature named is no action; an attack kept by action; empty boxes name nobody", () => {
  const attack = { phase: "attack" };
  // No creature picked: the form is read as it is without the action (here: no attack, a pass).
  for (const action of ["release", "keep", "cannot_perceive"]) {
    assert.deepEqual(choiceFromForm("power-pool", attack, { action, controlTarget: "" }), { pass: true }, action);
  }
  assert.deepEqual(choiceFromForm("power-pool", attack, { attackMode: "mental-stab", target: "b", attackKeepBy: "action" }), { attack: { mode: "mental-stab", target: "b", keep_by: "action" } });
  // A box left empty in the form is no further target and no ally.
  assert.deepEqual(choiceFromForm("power-pool", attack, { attackMode: "psionic-wave", target: "b", waveTargets: ["", "c"], waveModes: "psionic-wave" }), { attack: { mode: "psionic-wave", target: "b", targets: ["c"] } });
  assert.deepEqual(choiceFromForm("power-pool", { phase: "defense" }, { defenseMode: "imagination-swarm", allies: ["", "guard"] }), { defense: { mode: "imagination-swarm", allies: ["guard"] } });
});

test("the panel names the encounter and its combatants as the GM named them, shows each mind (an open one marked) and each held sheet; a round's phase is not named twice", () => {
  const view = encounterView(
    { name: "enc-7", phase: "round", round: 2, revision: 4, waiting_for: [], combatants: [
      { id: "a", name: "a-sheet", psp: 5, mind: { state: "open" } },
      { id: "b", name: "Bo's sheet", psp: 7, psp_max: 9, mind: { state: "closed" } },
      { id: "c", psp: 1, psp_max: 2 },
    ] },
    { id: "e1", name: "Vault", system: "revised-2e", combatants: { a: { name: "Ann" } }, held: { b: { write: null } } },
    enLabel,
  );
  assert.equal(view.name, "Vault");
  assert.deepEqual(view.combatants.map((c) => [c.name, c.summary, c.mind, c.mindOpen, c.held]), [
    ["Ann", "PSP 5/?", "Open", true, false],
    ["Bo's sheet", "PSP 7/9", "Closed", false, true],
    ["c", "PSP 1/2", null, false, false],
  ]);
  assert.equal(view.phaseLabel, "", "round 2 says it already");
  assert.equal(view.round, 2);
  assert.equal(view.ready, true);
  // Without a name of its own the encounter is called as the companion calls it; with nobody in it, it is not ready.
  const empty = encounterView({ name: "enc-7", phase: "round", waiting_for: [], combatants: {} }, { id: "e1", system: "revised-2e" }, enLabel);
  assert.equal(empty.name, "enc-7");
  assert.equal(empty.ready, false);
});

test("the panel shows phase, each combatant's state and who must still choose", () => {
  const view = encounterView(
    { phase: "segment", round: 1, segment: 3, revision: 7, waiting_for: ["b"], combatants: { a: { attack_strength: 50, defense_strength: 40 }, b: { attack_strength: 10, defense_strength: 0, conditions: ["dazed"] } } },
    { id: "e1", system: "combat-strength", combatants: { a: { name: "Ann" }, b: { name: "Bo" } } },
    enLabel,
  );
  // Figures and conditions through en.json (MINDSCAPE.Encounter.Summary, MINDSCAPE.Condition).
  assert.deepEqual(view.combatants.map((c) => [c.name, c.summary, c.conditions, c.waiting]), [["Ann", "Attack 50 / Defense 40", "", false], ["Bo", "Attack 10 / Defense 0", "Dazed", true]]);
  assert.equal(view.phaseLabel, "Segment");
  assert.equal(view.waitingNames, "Bo");
  assert.equal(view.ready, false);
  assert.equal(view.segment, 3);
});

test("a resolved step's exchange results and updates are found in list or single form", () => {
  const r1 = { outcome: "hit", rolls: [], updates: [{ uuid: "Actor.a", update: { x: 1 } }] };
  const r2 = { outcome: "miss", rolls: [] };
  assert.deepEqual(resultsOfStep({ results: [r1, r2], revision: 3 }), [r1, r2]);
  assert.deepEqual(resultsOfStep(r1), [r1]);
  assert.deepEqual(updatesOfStep({ results: [r1, r2], updates: [{ uuid: "Actor.b", update: {} }] }).map((u) => u.uuid), ["Actor.b", "Actor.a"]);
});

test("a step's exchanges are found under exchanges too, a result with rolls and no outcome is one, a field that is no object is not looked into, and a single result's updates count once", () => {
  const r1 = { outcome: "hit", rolls: [], updates: [{ uuid: "Actor.a", update: { x: 1 } }] };
  const r2 = { rolls: [{ die: 20, value: 4 }] };
  const r3 = { outcome: "miss", rolls: [], step: 2, resolved: true };
  assert.deepEqual(resultsOfStep({ exchanges: [r1, r2] }), [r1, r2]);
  assert.deepEqual(resultsOfStep(r3), [r3]);
  assert.deepEqual(updatesOfStep(r1), r1.updates);
});

/**
 * A one-round encounter as the daemon keeps it, far enough for these tests: each
 * combatant added waits until it declares; `refuse(choice)` gives a 4001 to throw for a
 * choice the rules refuse, or nothing. `declared` records every declaration sent.
 */
function roundEncounter({ refuse = () => null, ...overrides } = {}) {
  const declared = [];
  const encounter = { combatants: {}, waiting: [] };
  const methods = defaultMethods({
    "encounter.create": () => ({ id: "enc1", revision: 0 }),
    "encounter.add": ({ combatant }) => { const id = combatant.data.actor._id; encounter.combatants[id] = { psp: 10 }; encounter.waiting.push(id); return { combatant_id: id, revision: 1 }; },
    "encounter.get": () => ({ phase: "round", round: 1, waiting_for: [...encounter.waiting], combatants: encounter.combatants, revision: 2 }),
    "encounter.declare": ({ combatant_id, choice }) => {
      declared.push([combatant_id, choice]);
      const refusal = refuse(choice);
      if (refusal) throw refusal;
      encounter.waiting = encounter.waiting.filter((w) => w !== combatant_id);
      return { revision: 3, waiting_for: encounter.waiting };
    },
    ...overrides,
  });
  return { declared, encounter, methods };
}

test("a round: create, secret choices from owners through the relay (the GM for NPCs), resolve, undo", async () => {
  const { declared, methods } = roundEncounter({
    "encounter.resolve": () => ({ revision: 4, results: [{ ...revisedResult({ attacker: { data: { actor: { _id: "ulcen", name: "Ulcen", flags: { mindscape: { "revised-2e": { psp: 40 } } } }, token: { uuid: "Scene.scene1.Token.tokU", actorLink: true } } }, defender: { data: { actor: { _id: "fenka", name: "Fenka", flags: { mindscape: { "revised-2e": { psp: 30 } } } }, token: { uuid: "Scene.scene1.Token.tokF", actorLink: false } } }, attack: { mode: "ego-whip" } }) }] }),
    "encounter.undo": () => ({ revision: 5, updates: [{ uuid: "Actor.ulcen", update: { "flags.mindscape.revised-2e.psp": 40 } }] }),
    "encounter.log": () => [{ summary: "step 1" }],
  });
  const t = makeTable({
    methods,
    dialogs: {
      p1: { encounterChoiceDialog: { attackMode: "ego-whip", target: "fenka", multiplier: "1", range: "short", defenseMode: "" } },
      p2: { encounterChoiceDialog: { attackMode: "", defenseMode: "mind-blank" } },
      gm: { encounterChoiceDialog: { attackMode: "", defenseMode: "" } },
    },
  });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], "Test");
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka", "goblin"]);
  await ctl.collectChoices();
  // Owners answer in parallel, so declarations arrive in any order.
  declared.sort((a, b) => ["ulcen", "fenka", "goblin"].indexOf(a[0]) - ["ulcen", "fenka", "goblin"].indexOf(b[0]));
  assert.deepEqual(declared, [
    ["ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" } }],
    ["fenka", { defense: { mode: "mind-blank" } }],
    ["goblin", {}],
  ]);
  // Each owner was asked on their own client; the GM answered for the NPC only.
  assert.equal(t.clients.p1.dialogs.seen.length, 1);
  assert.equal(t.clients.p2.dialogs.seen.length, 1);
  assert.equal(t.clients.gm.dialogs.seen.length, 1);
  await ctl.resolve();
  assert.equal(t.actors.ulcen.flags.mindscape["revised-2e"].psp, 32);
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape["revised-2e"].psp, 19);
  assert.equal(t.clients.gm.ChatMessage.created.length, 1);
  assert.ok(t.clients.gm.Hooks.called.some((h) => h.name === "mindscape.resolved" && h.args[0].encounter === "enc1"));
  await ctl.undo();
  assert.equal(t.actors.ulcen.flags.mindscape["revised-2e"].psp, 40);
  assert.deepEqual(await ctl.log(), [{ summary: "step 1" }]);
});

test("a choice the rules refuse is told to the GM and its owner is asked again, told why, while the encounter waits for it; at most twice", async () => {
  const { declared, encounter, methods } = roundEncounter({
    refuse: (choice) => (choice.attack?.multiplier > 2
      ? { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp", detail: "Ulcen needs 16 PSPs but holds 10" } } : null),
  });
  const form = (multiplier) => ({ attackMode: "ego-whip", target: "fenka", multiplier, range: "short", defenseMode: "" });
  const t = makeTable({ methods, dialogs: { p1: { encounterChoiceDialog: [form("4"), form("2")] } } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Test");
  await ctl.askOne("ulcen", await ctl.state());
  assert.deepEqual(declared.map(([, c]) => c.attack.multiplier), [4, 2]);
  const asked = t.clients.p1.dialogs.seen.map((x) => x.arg.context);
  assert.equal(asked.length, 2);
  assert.equal(asked[0].refused, null);
  assert.equal(asked[0].previous, null);
  assert.deepEqual(asked[1].previous, form("4"), "the choice refused, to fill in");
  assert.match(asked[1].refused, /^The companion did not record the choice of Ulcen of Tyr: The rules forbid this: Ulcen needs 16 PSPs but holds 10\. Choose again\.$/);
  assert.match(t.clients.gm.notes.warn[0], /Ulcen of Tyr's choice was not recorded: The rules forbid this: Ulcen needs 16 PSPs/);
  assert.deepEqual(encounter.waiting, ["fenka"]);

  // Refused every time: asked twice more, then the GM is told and nothing is recorded.
  declared.length = 0;
  encounter.waiting = ["ulcen", "fenka"];
  t.clients.p1.dialogs.seen.length = 0;
  const stubborn = t.clients.p1.svc.env.dialogs;
  stubborn.encounterChoiceDialog = async (arg) => { t.clients.p1.dialogs.seen.push({ kind: "encounterChoiceDialog", arg }); return form("4"); };
  assert.equal(await ctl.askOne("ulcen", await ctl.state()), null);
  assert.equal(declared.length, 3);
  assert.equal(t.clients.p1.dialogs.seen.length, 3);
  assert.deepEqual(encounter.waiting, ["ulcen", "fenka"]);
  assert.match(t.clients.gm.notes.warn.at(-2), /Its owner is asked again\.$/);
  assert.doesNotMatch(t.clients.gm.notes.warn.at(-1), /asked again/);

  // The encounter moved on (another round) when the refusal came: nobody is asked again.
  declared.length = 0;
  t.clients.p1.dialogs.seen.length = 0;
  const state = await ctl.state();
  const get = methods["encounter.get"];
  methods["encounter.get"] = () => ({ ...get(), round: 2 });
  assert.equal(await ctl.askOne("ulcen", state), null);
  assert.equal(t.clients.p1.dialogs.seen.length, 1);
  assert.doesNotMatch(t.clients.gm.notes.warn.at(-1), /asked again/);
  methods["encounter.get"] = get;

  // A second ask while the question is open does not ask again.
  let answer;
  stubborn.encounterChoiceDialog = (arg) => { t.clients.p1.dialogs.seen.push({ kind: "encounterChoiceDialog", arg }); return new Promise((r) => { answer = r; }); };
  t.clients.p1.dialogs.seen.length = 0;
  const first = ctl.askOne("ulcen", await ctl.state());
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(await ctl.askOne("ulcen", await ctl.state()), null);
  assert.equal(t.clients.p1.dialogs.seen.length, 1);
  answer(form("2"));
  await first;
  assert.deepEqual(encounter.waiting, ["fenka"]);
});

test("a refused choice is asked again against the encounter as it is then; not once the encounter left that phase or no longer waits for the combatant, nor after a refusal other than the rules'", async () => {
  const rules = { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp", detail: "Ulcen needs 16 PSPs but holds 10" } };
  const refusals = [];
  let after = () => {};
  const { encounter, methods } = roundEncounter({ refuse: () => { const r = refusals.shift() ?? null; if (r) after(); return r; } });
  const form = { attackMode: "ego-whip", target: "fenka", multiplier: "1", range: "short", defenseMode: "" };
  const t = makeTable({ methods, dialogs: { p1: { encounterChoiceDialog: () => form } } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Test");
  const seen = t.clients.p1.dialogs.seen;
  let phase = "round";
  const get = methods["encounter.get"];
  methods["encounter.get"] = () => structuredClone({ ...get(), phase });
  // Ulcen rose a level meanwhile: the dialog asked again offers its multipliers.
  refusals.push(rules);
  after = () => { encounter.combatants.ulcen = { ...encounter.combatants.ulcen, level: 3 }; };
  await ctl.askOne("ulcen", await ctl.state());
  assert.deepEqual(seen.map((x) => x.arg.context.multipliers.length), [1, 3]);
  const cases = [
    ["another phase", () => { phase = "segment"; }, rules],
    ["not waited for", () => { encounter.waiting = encounter.waiting.filter((w) => w !== "ulcen"); }, rules],
    ["not the rules", () => {}, { code: 4004, message: "Not found", data: { id: "ulcen" } }],
  ];
  for (const [why, change, refusal] of cases) {
    phase = "round";
    encounter.waiting = ["ulcen", "fenka"];
    seen.length = 0;
    refusals.push(refusal);
    after = change;
    assert.equal(await ctl.askOne("ulcen", await ctl.state()), null, why);
    assert.equal(seen.length, 1, why);
    assert.doesNotMatch(t.clients.gm.notes.warn.at(-1), /asked again/, why);
  }
});

test("an answer to the choice question that is no form declares nothing", async () => {
  const { declared, methods } = roundEncounter();
  const t = makeTable({ methods, dialogs: { p1: { encounterChoiceDialog: "yes" } } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Test");
  assert.equal(await ctl.askOne("ulcen", await ctl.state()), null);
  assert.deepEqual(declared, []);
});

test("revised-2e: a mind a critical hit opened last round is offered closing at the companion's price, and a tick declares close", async () => {
  const declared = [];
  const offer = { cost: 10, defense: "mental-barrier", basis: "last", psp: 30, payable: true, reason: null };
  const methods = defaultMethods({
    "encounter.create": () => ({ id: "enc1", revision: 0 }),
    "encounter.add": ({ combatant }) => ({ combatant_id: combatant.data.actor._id, revision: 1 }),
    "encounter.refresh": ({ combatant_id }) => ({ combatant_id, revision: 2, changed: [], dropped_choices: [], warnings: [] }),
    "encounter.get": () => ({
      phase: "round", round: 2, revision: 2, waiting_for: ["ulcen", "fenka"],
      combatants: { ulcen: { psp: 40 }, fenka: { psp: 30, mind: { state: "open", opened_by: "critical", may_pay_to_close: true } } },
      // The engine's view (RULES.md §1.5): Fenka may pay twice her mental barrier; Ulcen
      // has a mind that cannot pay (too few PSPs), which is not offered either.
      close_offers: { fenka: offer, ulcen: { ...offer, psp: 9, payable: false, reason: "psp" } },
    }),
    "encounter.declare": ({ combatant_id, choice }) => { declared.push([combatant_id, choice]); return { revision: 3, waiting_for: [] }; },
  });
  const t = makeTable({
    methods,
    dialogs: {
      p1: { encounterChoiceDialog: { attackMode: "", defenseMode: "" } },
      p2: { encounterChoiceDialog: { close: true, attackMode: "", defenseMode: "" } },
    },
  });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Test");
  await ctl.collectChoices();
  const contextOf = (client) => client.dialogs.seen.find((s) => s.kind === "encounterChoiceDialog").arg.context;
  assert.deepEqual(contextOf(t.clients.p2).close, { cost: 10, psp: 30, defenseLabel: "Mental barrier", lastDefense: true });
  assert.equal(contextOf(t.clients.p1).close, null);
  declared.sort();
  assert.deepEqual(declared, [["fenka", { close: true }], ["ulcen", {}]]);
  assert.deepEqual(choiceFromForm("revised-2e", {}, { close: false, defenseMode: "" }), {});
});

test("the watcher authenticates with its first message, watches the encounter, and reports changes", () => {
  const sockets = [];
  class FakeWS { constructor(url) { this.url = url; this.sent = []; sockets.push(this); } send(m) { this.sent.push(JSON.parse(m)); } close() { this.closed = true; } }
  const changes = [];
  const w = new EncounterWatcher({ url: "http://127.0.0.1:39393/", token: "tok", id: "enc1", onChange: (p) => changes.push(p), WebSocketImpl: FakeWS });
  w.open();
  const ws = sockets[0];
  assert.equal(ws.url, "ws://127.0.0.1:39393/ws");
  ws.onopen();
  assert.deepEqual(ws.sent[0], { jsonrpc: "2.0", method: "auth", params: { token: "tok" }, id: 1 });
  assert.deepEqual(ws.sent[1], { jsonrpc: "2.0", method: "encounter.watch", params: { id: "enc1" }, id: 2 });
  ws.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "encounter.changed", params: { id: "enc1", revision: 4 } }) });
  ws.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "encounter.changed", params: { id: "other", revision: 1 } }) });
  ws.onmessage({ data: "not json" });
  assert.deepEqual(changes, [{ id: "enc1", revision: 4 }]);
  w.close();
  assert.equal(ws.closed, true);
});

test("a watcher whose connection drops connects again, waiting twice as long each time up to 30 s and the base again once connected, and never once closed", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const sockets = [];
  class FakeWS { constructor(url) { this.url = url; this.sent = []; sockets.push(this); } send(m) { this.sent.push(m); } close() { this.closed = true; } }
  const watcher = (retryMs) => new EncounterWatcher({ url: "http://127.0.0.1:39393", token: "tok", id: "enc1", onChange: () => {}, WebSocketImpl: FakeWS, retryMs });
  const w = watcher(1000);
  w.open();
  sockets[0].onclose();
  t.mock.timers.tick(1999);
  assert.equal(sockets.length, 1);
  t.mock.timers.tick(1);
  assert.equal(sockets.length, 2);
  sockets[1].onclose();
  t.mock.timers.tick(3999);
  assert.equal(sockets.length, 2);
  t.mock.timers.tick(1);
  assert.equal(sockets.length, 3);
  // Connected again: the next drop waits the base delay's double again.
  sockets[2].onopen();
  sockets[2].onclose();
  t.mock.timers.tick(2000);
  assert.equal(sockets.length, 4);
  w.close();
  sockets[3].onclose();
  t.mock.timers.tick(60000);
  assert.equal(sockets.length, 4, "closed: no new connection");
  // A drop just before the close: its timer opens nothing.
  const v = watcher(1000);
  v.open();
  sockets[4].onclose();
  v.close();
  t.mock.timers.tick(60000);
  assert.equal(sockets.length, 5);
  // The wait is at most 30 s.
  const u = watcher(20000);
  u.open();
  sockets[5].onclose();
  t.mock.timers.tick(30000);
  assert.equal(sockets.length, 7);
  u.close();
});

test("a log entry that carries its exchanges itself is told with their summaries; the tokens to add are those selected on the canvas, by their own uuids", () => {
  assert.equal(logLine({ revision: 2, kind: "resolve", results: [{ outcome: "hit", rolls: [], summary: "Ann hits." }] }, enLabel), "#2 resolved: Ann hits.");
  const canvas = globalThis.canvas;
  globalThis.canvas = { tokens: { controlled: [{ document: { uuid: "Scene.s1.Token.t1", actor: { uuid: "Scene.s1.Token.t1.Actor.a" } } }] } };
  try {
    assert.deepEqual(selectedTokenUuids(), ["Scene.s1.Token.t1"]);
  } finally {
    globalThis.canvas = canvas;
  }
});

test("the encounter panel (ApplicationV2) shows the daemon's state and its buttons drive the controller", async () => {
  const { makeEncounterPanel } = await import("../mindscape/scripts/encounter.js");
  class ApplicationV2 {
    constructor() { this.options = structuredClone({ ...this.constructor.DEFAULT_OPTIONS, actions: {} }); this.options.actions = { ...this.constructor.DEFAULT_OPTIONS.actions }; this.renders = 0; }
    async render() { this.renders++; this.context = await this._prepareContext(); this._onRender?.(); return this; }
    async close() { this.closed = true; }
  }
  const fakeFoundry = { applications: { api: { ApplicationV2, HandlebarsApplicationMixin: (Base) => class extends Base {} } } };
  const calls = [];
  // Never a real WebSocket (Node 22+ has one): the panel's watcher takes the env's.
  const sockets = [];
  class FakeWS { constructor(url) { this.url = url; sockets.push(this); } send() {} close() { this.closed = true; } }
  const svc = {
    env: { WebSocket: FakeWS },
    game: { settings: { get: (_ns, key) => (key === "daemonUrl" ? "http://127.0.0.1:9" : "tok") } }, t: { label: enLabel },
    notifyError: (e) => calls.push(["error", e.message]),
    encounters: {
      meta: { id: "enc1", system: "revised-2e", name: "Vault", combatants: { a: { name: "Ann" } } },
      state: async () => ({ phase: "round", round: 2, waiting_for: [], combatants: { a: { psp: 5, psp_max: 10 } }, revision: 9 }),
      collectChoices: async () => calls.push(["ask"]),
      resolve: async (o) => calls.push(["resolve", o ?? {}]),
      undo: async (o) => calls.push(["undo", o]),
      log: async () => { calls.push(["log"]); return { steps: [{ revision: 3, kind: "resolve", result: { results: [{ outcome: "hit", rolls: [], summary: "Ann hits." }] } }] }; },
    },
  };
  const Panel = makeEncounterPanel(fakeFoundry, svc);
  assert.equal(Panel.PARTS.body.template, "modules/mindscape/templates/encounter.hbs");
  const panel = new Panel();
  await panel.render();
  assert.equal(panel.context.name, "Vault");
  assert.deepEqual(panel.context.combatants.map((c) => [c.name, c.summary]), [["Ann", "PSP 5/10"]]);
  assert.equal(panel.context.ready, true);
  await panel.options.actions.ask.call(panel);
  await panel.options.actions.resolve.call(panel);
  await panel.options.actions.force.call(panel);
  await panel.options.actions.undo.call(panel);
  await panel.options.actions.log.call(panel);
  // Resolve and Undo name the revision the panel shows.
  assert.deepEqual(calls, [["ask"], ["resolve", { revision: 9 }], ["resolve", { force: true, revision: 9 }], ["undo", { revision: 9 }], ["log"]]);
  assert.deepEqual(panel.context.log, [{ n: 3, text: "#3 resolved: Ann hits." }]);
  assert.equal(panel.context.showLog, true);
  // While shown, every render (a step resolved or undone: encounter.changed) fetches it again.
  await panel.render();
  assert.equal(calls.filter(([c]) => c === "log").length, 2);
  // Log pressed again hides it, and it is no longer fetched.
  await panel.options.actions.log.call(panel);
  assert.equal(panel.context.showLog, false);
  assert.deepEqual(panel.context.log, []);
  await panel.render();
  assert.equal(calls.filter(([c]) => c === "log").length, 2);
  assert.deepEqual(sockets.map((ws) => ws.url), ["ws://127.0.0.1:9/ws"]);
  await panel.close();
  assert.equal(sockets[0].closed, true);
});

test("a panel closed while its action runs is not drawn again: the companion is not asked for a window no longer open (Foundry v12 prepares before it checks)", async () => {
  const { makeEncounterPanel } = await import("../mindscape/scripts/encounter.js");
  // v12's ApplicationV2#render: the context first, then `if (!options.force)` for a closed window.
  class ApplicationV2 {
    constructor() { this.options = { ...this.constructor.DEFAULT_OPTIONS, actions: { ...this.constructor.DEFAULT_OPTIONS.actions } }; this.open = false; }
    get rendered() { return this.open; }
    async render(options = {}) { this.context = await this._prepareContext(); if (!this.open && !options.force) return this; this.open = true; this._onRender?.(); return this; }
    async close() { this.open = false; }
  }
  const fakeFoundry = { applications: { api: { ApplicationV2, HandlebarsApplicationMixin: (Base) => class extends Base {} } } };
  class FakeWS { send() {} close() {} }
  let release;
  let closed = false;
  const asked = [];
  const errors = [];
  const svc = {
    env: { WebSocket: FakeWS },
    game: { settings: { get: (_ns, key) => (key === "daemonUrl" ? "http://127.0.0.1:9" : "tok") } }, t: { label: (_k, f) => f },
    notifyError: (e) => errors.push(e.message),
    encounters: {
      meta: { id: "enc1", system: "revised-2e", name: "Vault", combatants: { a: { name: "Ann" } } },
      state: async () => { asked.push("state"); if (closed) throw new Error("the companion is away"); return { phase: "round", round: 1, waiting_for: [], combatants: { a: {} }, revision: 2 }; },
      resolve: () => new Promise((resolve) => { release = resolve; }),
    },
  };
  const Panel = makeEncounterPanel(fakeFoundry, svc);
  const panel = new Panel();
  await panel.render({ force: true });
  asked.length = 0;
  const running = panel.options.actions.resolve.call(panel);
  await new Promise((r) => setTimeout(r, 5));
  await panel.close();
  closed = true;
  release();
  await running;
  assert.deepEqual(asked, [], "nothing asked for the closed panel");
  assert.deepEqual(errors, []);
});

test("End stops watching the encounter before deleting it: its deletion notice asks nothing of the companion and shows no error", async () => {
  const { makeEncounterPanel } = await import("../mindscape/scripts/encounter.js");
  class ApplicationV2 {
    constructor() { this.options = { ...this.constructor.DEFAULT_OPTIONS, actions: { ...this.constructor.DEFAULT_OPTIONS.actions } }; }
    async render() { this.context = await this._prepareContext(); this._onRender?.(); return this; }
    async close() { this.closed = true; }
  }
  const fakeFoundry = { applications: { api: { ApplicationV2, HandlebarsApplicationMixin: (Base) => class extends Base {} } } };
  const sockets = [];
  class FakeWS { constructor(url) { this.url = url; sockets.push(this); } send() {} close() { this.closed = true; } }
  // The companion's notice reaches every socket still watching, as `encounter.delete` is
  // stored and before its answer arrives (the module forgets the encounter only then).
  const notify = (params) => {
    for (const ws of sockets) if (!ws.closed) ws.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "encounter.changed", params }) });
  };
  const errors = [];
  const asked = [];
  const encounters = {
    meta: { id: "enc1", system: "revised-2e", name: "Vault", combatants: { a: { name: "Ann" } } },
    state: async () => {
      asked.push(encounters.meta.id ?? null);
      if (!encounters.meta.id) return null;
      if (encounters.deleted) throw new Error(`The companion does not know "${encounters.meta.id}"`);
      return { phase: "round", round: 1, waiting_for: [], combatants: { a: { psp: 5, psp_max: 10 } }, revision: 3 };
    },
    log: async () => ({ steps: [{ revision: 1, kind: "add" }] }),
    end: async () => {
      encounters.deleted = true;
      notify({ id: "enc1", revision: null, deleted: true });
      await new Promise((resolve) => setTimeout(resolve, 5));
      encounters.meta = {};
    },
  };
  const svc = {
    env: { WebSocket: FakeWS },
    game: { settings: { get: (_ns, key) => (key === "daemonUrl" ? "http://127.0.0.1:9" : "tok") } }, t: { label: (_k, f) => f },
    notifyError: (e) => errors.push(e.message), encounters,
  };
  const Panel = makeEncounterPanel(fakeFoundry, svc);
  const panel = new Panel();
  await panel.render();
  await panel.options.actions.log.call(panel);
  assert.equal(sockets.length, 1);
  asked.length = 0;
  await panel.options.actions.end.call(panel);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(errors, []);
  assert.equal(sockets[0].closed, true);
  assert.deepEqual(asked, [null], "the panel asks only after the encounter is forgotten");
  assert.equal(panel.context.active, false);
  assert.equal(panel.context.showLog, false, "the ended encounter's log is not shown");
  assert.equal(sockets.length, 1, "nothing is watched any more");
});

test("a watcher told its encounter was deleted closes itself and does not ask for it again", () => {
  const sockets = [];
  class FakeWS { constructor(url) { this.url = url; sockets.push(this); } send() {} close() { this.closed = true; } }
  const changes = [];
  const w = new EncounterWatcher({ url: "http://127.0.0.1:39393", token: "tok", id: "enc1", onChange: (p) => changes.push(p), WebSocketImpl: FakeWS });
  w.open();
  sockets[0].onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "encounter.changed", params: { id: "enc1", revision: null, deleted: true } }) });
  assert.deepEqual(changes, []);
  assert.equal(sockets[0].closed, true);
  // A notice still in flight after the close is not acted on either.
  sockets[0].onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "encounter.changed", params: { id: "enc1", revision: 9 } }) });
  assert.deepEqual(changes, []);
});

test("a GM's client records whether its browser is paired, on start and when pairing changes", async () => {
  const t = makeTable({ dialogs: { gm: { pairingDialog: { url: "http://127.0.0.1:39393", token: "" } } } });
  await t.clients.gm.svc.announcePairing();
  assert.equal(t.gm.getFlag("mindscape", "paired"), true);
  await t.clients.p1.svc.announcePairing();
  assert.equal(t.p1.getFlag("mindscape", "paired"), undefined);
  // Unpairing (an empty token) clears the flag for every client.
  await t.clients.gm.svc.openPairing();
  assert.equal(t.clients.p1.game.users.get("gm0000").getFlag("mindscape", "paired"), false);
});

test("an unlinked token's profile editor does not show the fields its profile cleared (null): none in the advanced JSON, and the kind at \"—\"", async () => {
  const t = makeTable({ dialogs: { gm: { profileDialog: null } } });
  const tokenActor = t.tokens.goblinToken.actor;
  // What a save that cleared them wrote over the base actor (foundryvtt#8400).
  Object.assign(tokenActor.flags.mindscape["revised-2e"], { kind: null, defenses: null, mind: null });
  assert.equal(await t.clients.gm.svc.configureActor(tokenActor.uuid), null);
  const { context } = t.clients.gm.dialogs.seen.find((s) => s.kind === "profileDialog").arg;
  const kind = context.fields.find((f) => f.key === "kind");
  assert.deepEqual(kind.options.filter((o) => o.selected).map((o) => o.label), ["—"]);
  assert.equal(context.fields.find((f) => f.key === "psp").value, 20);
  // The keys the form has no field for: only those still set.
  assert.deepEqual(JSON.parse(context.advanced), { psp_max: 20 });
  assert.doesNotMatch(renderModuleTemplate("profile", context), /null/);
});

test("revised-2e: a psionicist allowed 4 attacks this round gets rows for attacks 2, 3 and 4, and all of them are sent", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  const four = await ctl.choiceContext("ulcen", { combatants: {}, attacks_allowed: { ulcen: 4, "fenka-tokF": 1 } });
  assert.deepEqual(four.furtherAttacks.map((a) => a.n), ["2", "3", "4"]);
  const html = renderModuleTemplate("encounter-choice", { ...four, uid: "u" });
  for (const n of ["2", "3", "4"]) assert.match(html, new RegExp(`name="attackMode${n}"`), n);
  const form = { attackMode: "ego-whip", target: "fenka", multiplier: "1", range: "short" };
  for (const n of ["2", "3", "4"]) Object.assign(form, { [`attackMode${n}`]: "mind-thrust", [`target${n}`]: `t${n}`, [`multiplier${n}`]: n, [`range${n}`]: "long" });
  assert.deepEqual(choiceFromForm("revised-2e", {}, form), {
    attacks: [
      { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" },
      { mode: "mind-thrust", multiplier: 2, range: "long", target: "t2" },
      { mode: "mind-thrust", multiplier: 3, range: "long", target: "t3" },
      { mode: "mind-thrust", multiplier: 4, range: "long", target: "t4" },
    ],
  });
});

test("revised-2e: a further attack with a mode but no target is left out of the choice", () => {
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "ego-whip", target: "fenka", attackMode2: "mind-thrust", target2: "" }),
    { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" } });
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "ego-whip", target: "fenka", attackMode2: "mind-thrust", attackMode3: "ego-whip", target3: "ulcen" }),
    { attacks: [{ mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" }, { mode: "ego-whip", multiplier: 1, range: "short", target: "ulcen" }] });
  // Nor the first attack without its target.
  assert.deepEqual(choiceFromForm("revised-2e", {}, { attackMode: "ego-whip", target: "", defenseMode: "mind-blank" }), { defense: { mode: "mind-blank" } });
});

test("a profile the companion fails to check for another cause is not saved: the user is told why, and the form does not open again", async () => {
  const methods = defaultMethods({ "adapters.import": () => { throw { code: -32603, message: "Internal error" }; } });
  const t = makeTable({ methods, dialogs: { p1: { profileDialog: [{ kind: "psionicist", psp: "33" }] } } });
  const before = structuredClone(t.actors.ulcen.flags.mindscape["revised-2e"]);
  assert.equal(await t.clients.p1.svc.configureActor(t.actors.ulcen.uuid), null);
  assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "profileDialog").length, 1);
  assert.equal(t.clients.p1.notes.error.length, 1);
  assert.match(t.clients.p1.notes.error[0], /^The companion failed unexpectedly/);
  assert.deepEqual(t.actors.ulcen.flags.mindscape["revised-2e"], before);
});

test("a GM's client writes its paired flag only when it changes", async () => {
  const t = makeTable();
  const user = t.clients.gm.game.user;
  const writes = [];
  const setFlag = user.setFlag.bind(user);
  user.setFlag = async (...args) => { writes.push(args); return setFlag(...args); };
  await t.clients.gm.svc.announcePairing();
  await t.clients.gm.svc.announcePairing();
  assert.deepEqual(writes, [["mindscape", "paired", true]]);
});
