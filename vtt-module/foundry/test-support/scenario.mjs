/**
 * A table of three clients (GM, two players) around one world, each running the real
 * Mindscape service over the fakes, with a scripted fake daemon on the GM's side.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { compile } from "./handlebars-lite.mjs";
import {
  FakeServer, FakeUser, FakeWorld, MODULE_DIR, fakeDaemon, makeClient, makeI18n, makeUsers,
} from "./fakes.mjs";
import { Mindscape } from "../mindscape/scripts/service.js";
import { EncounterController } from "../mindscape/scripts/encounter.js";
import { registerSettings } from "../mindscape/scripts/settings.js";

const i18n = makeI18n();
const compiled = new Map();

/** Render a module template with handlebars-lite and Foundry's `localize` helper. */
export function renderModuleTemplate(name, context) {
  if (!compiled.has(name)) {
    const src = readFileSync(path.join(MODULE_DIR, "templates", `${name}.hbs`), "utf8");
    compiled.set(name, compile(src, {
      localize: (key, options) => (options?.hash && Object.keys(options.hash).length ? i18n.format(key, options.hash) : i18n.localize(key)),
    }));
  }
  return compiled.get(name)(context);
}

/** The uuid the adapter addresses for a combatant ref (what `foundry.*` adapters return). */
export function actorUuidOfRef(ref) {
  const t = ref.data.token;
  return t && !t.actorLink ? `${t.uuid}.Actor.${ref.data.actor._id}` : `Actor.${ref.data.actor._id}`;
}

/**
 * A revised-2e result as the daemon answers it, computed from the given psp figures; its
 * damage by default its damage dice's (6 + 5: no bonus a step, as mind thrust's).
 */
export function revisedResult(params, { hit = true, spent = 8, damage = 11, rolls } = {}) {
  const profile = (ref) => ref.data.actor.flags?.mindscape?.["revised-2e"] ?? {};
  const a = profile(params.attacker);
  const d = profile(params.defender);
  const aAfter = Math.max(0, (a.psp ?? 0) - (hit ? spent : spent / 2));
  const dAfter = Math.max(0, (d.psp ?? 0) - (hit ? damage : 0));
  return {
    system: "revised-2e",
    outcome: hit ? "hit" : "miss",
    attacker: { before: { id: "a", psp: a.psp }, after: { id: "a", psp: aAfter } },
    defender: { before: { id: "d", psp: d.psp }, after: { id: "d", psp: dAfter } },
    rolls: rolls ?? [
      { purpose: "attack", sides: 20, value: 17, by: "a", follows: null },
      { purpose: "damage", sides: 6, value: 6, by: "a", follows: null },
      { purpose: "damage", sides: 6, value: 5, by: "a", follows: null },
    ],
    events: [{ type: "psp-spent", combatant: "a", amount: spent }],
    summary: `${combatantNameOfRef(params.attacker)} lashes out with a ${params.attack.mode}.`,
    hit, critical: false, needed: 12, roll: { natural: 17, modified: 20 }, psp_spent: spent, damage: hit ? damage : 0, mind_opened: false, save: null,
    updates: [
      { uuid: actorUuidOfRef(params.attacker), update: { "flags.mindscape.revised-2e.psp": aAfter } },
      { uuid: actorUuidOfRef(params.defender), update: { "flags.mindscape.revised-2e.psp": dAfter } },
    ],
  };
}

/** The name the `foundry.*` adapters give a ref's combatant: its token's, else its actor's (docs/ADAPTERS.md). */
export function combatantNameOfRef(ref) {
  return ref.data.token?.name?.trim() ? ref.data.token.name : ref.data.actor.name;
}

/** What an encounter keeps of a ref's sheet (docs/ADAPTERS.md "What an encounter keeps of a sheet"): enough of it for the tests, the actor's `_id` and `name` and the token's `uuid`, `actorLink` and `name`. */
export function keptOfRef(ref) {
  const { _id, name } = ref.data.actor;
  const token = ref.data.token ? { uuid: ref.data.token.uuid, actorLink: ref.data.token.actorLink, ...(ref.data.token.name ? { name: ref.data.token.name } : {}) } : null;
  return { adapter: ref.adapter, data: { actor: { _id, name }, token } };
}

/** The combatant id the `foundry.*` adapters give a ref: the actor's id, `<actor id>-<token id>` for an unlinked token. */
export function combatantIdOfRef(ref) {
  const t = ref.data.token;
  return t && !t.actorLink ? `${ref.data.actor._id}-${t.uuid.split(".Token.")[1]}` : ref.data.actor._id;
}

/**
 * `exchange.end_round` for revised-2e as the daemon answers it (API.md), over the
 * profiles in the refs: each condition without rounds left ends (`condition-ended`), the
 * others count down. A mind a critical hit opened (RULES.md §1.5) is announced at the
 * end of its first round (`mind-may-close {cost}`, `may_pay_to_close` set), where
 * `choices[id].close` pays `closeCost` PSPs to close it once the countdown is done; at
 * the next round's end, still unpaid, it may pay before the countdown (either way 4001
 * `cannot-act` when stunned, dazed or confused then; `cannot-close` when the PSPs do not
 * suffice, leaving at least 1 under H-2E-CLOSE-LAST-PSP), and without that choice it is
 * locked open 1d4+1 rounds (`open-duration`, `mind-locked {rounds}`). Any other open mind
 * gets a Wisdom check (d20 ≤ wis closes it), and `choices[id].close` pays 1 PSP to close
 * one (4001 `cannot-close` for a closed mind). Dice come from `dice` when supplied (4002
 * when they run out), else a 8 for the check and a 1 for the duration. Updates are
 * addressed as the adapters address them, with the same dotted paths.
 */
export function roundEndResult(params) {
  const P = "flags.mindscape.revised-2e";
  const supplied = params.dice ? structuredClone(params.dice) : null;
  const ids = params.combatants.map(combatantIdOfRef);
  for (const id of Object.keys(params.choices ?? {})) {
    if (!ids.includes(id)) throw { code: -32602, message: "Invalid params", data: { errors: [{ path: `/choices/${id}`, message: `no combatant ${id} in this round` }] } };
  }
  const combatants = [];
  const events = [];
  const rolls = [];
  const updates = [];
  const said = [];
  params.combatants.forEach((ref, i) => {
    const id = ids[i];
    const name = combatantNameOfRef(ref);
    const profile = ref.data.actor.flags?.mindscape?.["revised-2e"] ?? {};
    const before = { id, name, psp: profile.psp ?? 0, conditions: [...(profile.conditions ?? [])], condition_rounds: { ...(profile.condition_rounds ?? {}) }, mind: { state: profile.mind?.state ?? "closed" } };
    const after = structuredClone(before);
    const update = {};
    const ended = [];
    for (const c of before.conditions) {
      const left = before.condition_rounds[c];
      if (left === undefined || left <= 0) {
        ended.push(c);
        delete after.condition_rounds[c];
        events.push({ type: "condition-ended", combatant: id, condition: c });
        said.push(`${name} is no longer ${c}`);
      } else after.condition_rounds[c] = left - 1;
    }
    after.conditions = before.conditions.filter((c) => !ended.includes(c));
    if (ended.length) update[`${P}.conditions`] = after.conditions;
    if (JSON.stringify(after.condition_rounds) !== JSON.stringify(before.condition_rounds)) update[`${P}.condition_rounds`] = after.condition_rounds;
    for (const c of ended) update[endedKey(ref, `${P}.condition_rounds`, c)] = null;
    const choice = params.choices?.[id];
    const mind = { state: "closed", opened_by: null, locked_rounds: 0, last_defense: null, may_pay_to_close: false, rounds_open: 0, ...(profile.mind ?? {}) };
    const critical = mind.state === "open" && mind.opened_by === "critical";
    const firstRound = critical && !mind.may_pay_to_close && mind.rounds_open === 0;
    const refuse = (rule, detail) => { throw { code: 4001, message: "The rules forbid it", data: { rule, detail } }; };
    const die = (purpose, sides, otherwise) => {
      let roll = otherwise;
      if (supplied) {
        const left = supplied[purpose] ?? [];
        if (!left.length) throw { code: 4002, message: "Dice needed", data: { purpose, sides, needed: 1 } };
        roll = left.shift();
        supplied[purpose] = left;
      }
      rolls.push({ purpose, sides, value: roll, by: id, follows: null });
      return roll;
    };
    if (choice?.close && critical) {
      // the first round's end pays once its countdown is done: a stun of that round no longer stops it
      const stopped = (firstRound ? after : before).conditions.filter((c) => ["stunned", "dazed", "confused"].includes(c));
      if (stopped.length) refuse("cannot-act", `${name} cannot close its mind (${stopped.join(", ")})`);
      const cost = mind.may_pay_to_close || firstRound ? closeCost({ mind, defenses: profile.defenses }, params.options) : null;
      const keepOne = params.options?.["H-2E-CLOSE-LAST-PSP"] ?? true;
      if (cost === null || cost > before.psp || (cost === before.psp && keepOne)) refuse("cannot-close", `${name} cannot pay to close its mind this round`);
      after.psp = before.psp - cost;
      after.mind = { ...mind, state: "closed", opened_by: null, may_pay_to_close: false, rounds_open: 0, locked_rounds: 0 };
      if (firstRound) events.push({ type: "mind-may-close", combatant: id, cost });
      events.push({ type: "psp-spent", combatant: id, amount: cost, for: "close" }, { type: "mind-closed", combatant: id, how: "paid" });
      said.push(`${name} pays ${cost} PSPs and closes its mind`);
      update[`${P}.psp`] = after.psp;
      update[`${P}.mind`] = after.mind;
    } else if (critical && mind.rounds_open === 0) {
      const cost = closeCost({ mind, defenses: profile.defenses }, params.options);
      after.mind = { ...mind, may_pay_to_close: true, rounds_open: 1 };
      events.push({ type: "mind-may-close", combatant: id, cost });
      said.push(`${name} may pay to close its mind at the end of the next round`);
      update[`${P}.mind`] = after.mind;
    } else if (critical && mind.may_pay_to_close) {
      const rounds = die("open-duration", 4, 1) + 1;
      after.mind = { ...mind, may_pay_to_close: false, locked_rounds: rounds, rounds_open: mind.rounds_open + 1 };
      events.push({ type: "mind-locked", combatant: id, rounds });
      said.push(`${name}'s mind is locked open for ${rounds} rounds`);
      update[`${P}.mind`] = after.mind;
    } else if (choice?.close) {
      if (before.mind.state !== "open") refuse("cannot-close", `${name} cannot pay to close its mind this round`);
      after.psp = before.psp - 1;
      after.mind.state = "closed";
      events.push({ type: "psp-spent", combatant: id, amount: 1, for: "close" }, { type: "mind-closed", combatant: id, how: "paid" });
      said.push(`${name} pays to close its mind`);
      update[`${P}.psp`] = after.psp;
      update[`${P}.mind`] = after.mind;
    } else if (before.mind.state === "open") {
      const roll = die("wisdom-check", 20, 8);
      const target = profile.wis ?? 12;
      const success = roll <= target;
      events.push({ type: "wisdom-check", combatant: id, target, roll, success });
      if (success) {
        after.mind.state = "closed";
        events.push({ type: "mind-closed", combatant: id, how: "wisdom-check" });
        said.push(`${name}'s mind closes (Wisdom check ${target}, rolled ${roll})`);
        update[`${P}.mind`] = after.mind;
      }
    }
    combatants.push({ id, before, after });
    if (Object.keys(update).length) updates.push({ uuid: actorUuidOfRef(ref), update });
  });
  const unused = Object.fromEntries(Object.entries(supplied ?? {}).filter(([, v]) => v.length));
  return {
    system: params.system, combatants, events, rolls,
    summary: said.length ? `End of the round: ${said.join(". ")}.` : "End of the round: nothing changes.",
    unused_dice: unused, updates,
  };
}

/** The most rounds of a rest in which an open mind's checks are rolled (engine: MAX_REST_MIND_ROUNDS). */
export const REST_MIND_ROUNDS_CAP = 100;

/** What the fake companion's own dice roll when no `dice` are supplied (any `seed`). */
const REST_DEFAULT_DICE = { "open-duration": 1, "wisdom-check": 8, save: 10 };

/**
 * `exchange.round_end_choices` for revised-2e as the daemon answers it (API.md), over the
 * profiles in the refs: a mind a critical hit opened this round (`rounds_open` 0), or
 * earlier and told at the last round's end it may still pay (`may_pay_to_close`), is
 * offered `close: {cost, defense, basis, psp, payable, reason}` (RULES.md §1.5, the
 * house rules H-2E-NO-LAST-DEF and H-2E-CLOSE-LAST-PSP; `cannot-act` when stunned, dazed
 * or confused when it would pay: for this round's mind, after the round's countdown);
 * everyone else has `choices: {}`.
 */
export function roundEndChoicesResult(params) {
  const combatants = params.combatants.map((ref) => {
    const id = combatantIdOfRef(ref);
    const name = combatantNameOfRef(ref);
    const profile = ref.data.actor.flags?.mindscape?.["revised-2e"] ?? {};
    const mind = profile.mind ?? {};
    const firstRound = !mind.may_pay_to_close && !(mind.rounds_open > 0);
    if (!(mind.state === "open" && mind.opened_by === "critical" && (mind.may_pay_to_close || firstRound))) return { id, name, choices: {} };
    const psp = profile.psp ?? profile.psp_max ?? 0;
    const known = (profile.defenses ?? []).filter((d) => d in REVISED_DEFENSE_COST);
    const cost = closeCost({ mind, defenses: known }, params.options);
    const cheapest = [...known].sort((a, b) => REVISED_DEFENSE_COST[a] - REVISED_DEFENSE_COST[b])[0];
    const defense = mind.last_defense ?? (cost === null ? null : cheapest);
    const basis = mind.last_defense ? "last" : defense ? "cheapest" : null;
    let reason = null;
    if (cost === null) reason = known.length ? "no-last-defense" : "no-defense";
    else if (cost > psp) reason = "psp";
    else if (cost === psp && (params.options?.["H-2E-CLOSE-LAST-PSP"] ?? true)) reason = "last-psp";
    const lasting = (c) => !firstRound || (profile.condition_rounds?.[c] ?? 0) > 0;
    if ((profile.conditions ?? []).some((c) => ["stunned", "dazed", "confused"].includes(c) && lasting(c))) reason = "cannot-act";
    return { id, name, choices: { close: { cost, defense, basis, psp, payable: reason === null, reason } } };
  });
  const offered = combatants.filter((c) => c.choices.close);
  const summary = offered.map((c) => `${c.name} ${c.choices.close.payable ? "may" : "may not"} pay to close its mind.`).join(" ");
  return { system: "revised-2e", combatants, summary: summary || "Nobody has anything to choose at the end of this round." };
}

/**
 * A power-pool controller's control links, as the engine groups its `controlling`
 * entries: a psionic wave's creatures (one `wave` label) are one link, the others one
 * each, in the order of their first entry.
 */
function poolLinks(profile) {
  const links = [];
  for (const entry of profile.controlling ?? []) {
    const wave = entry.wave ?? null;
    const same = wave ? links.find((l) => l.wave === wave) : null;
    if (same) same.targets.push(entry.id);
    else links.push({ targets: [entry.id], kept_by: entry.kept_by, wave });
  }
  return links;
}

/**
 * `exchange.round_end_choices` for power-pool as the daemon answers it (API.md), over the
 * profiles in the refs: a controller (`controlling` non-empty) may release every link,
 * keep it the other way (by dice only from a pool that has one for each creature of the
 * link; none for a controller that cannot act) and lose sight of a link kept by an
 * action (RULES.md §3.4); everyone else has `choices: {}`. The summary is
 * shorter than the engine's.
 */
export function poolRoundEndChoicesResult(params) {
  const combatants = params.combatants.map((ref) => {
    const id = combatantIdOfRef(ref);
    const name = combatantNameOfRef(ref);
    const profile = ref.data.actor.flags?.mindscape?.["power-pool"] ?? {};
    const links = poolLinks(profile);
    if (!links.length) return { id, name, choices: {} };
    const other = (l) => (l.kept_by === "die" ? "action" : (profile.pool ?? 0) >= l.targets.length ? "die" : null);
    const unable = poolCannotAct(profile);
    const choices = {
      release: links,
      // One that cannot act changes how it keeps nothing (the engine's check_may_keep),
      // and its links kept by an action end as the round ends.
      keep: unable ? [] : links.filter(other).map((l) => ({ ...l, by: other(l) })),
      cannot_perceive: links.filter((l) => l.kept_by === "action"),
    };
    if (unable) choices.ends = links.filter((l) => l.kept_by === "action");
    return { id, name, choices };
  });
  const controllers = combatants.filter((c) => c.choices.release);
  const summary = controllers.map((c) => `${c.name} controls ${c.choices.release.length === 1 ? "one link" : `${c.choices.release.length} links`}.`).join(" ");
  return { system: "power-pool", combatants, summary: summary || "Nobody has anything to choose at the end of this round." };
}

/** A −32602 answer with one problem at `path`. */
function invalidParams(path, message) {
  return { code: -32602, message: "Invalid params", data: { errors: [{ path, message }] } };
}

/**
 * The creatures of a power-pool end of round or rest as the daemon takes them: the
 * combatants' ids (`ids`), each combatant's and puppet's ref by id (`given`; a puppet
 * among the combatants or given twice is −32602 at `/puppets/<i>/id`, `which` saying
 * what the combatants do there), a copy of each profile to change (`now`), each one's
 * name (`nameOf`: a creature not given by its id in quotes, as the engine's), and the
 * `events` and summary sentences (`said`) so far.
 */
function poolCreatures(params, which) {
  const ids = params.combatants.map(combatantIdOfRef);
  const given = new Map(params.combatants.map((ref, i) => [ids[i], ref]));
  (params.puppets ?? []).forEach((ref, i) => {
    const id = combatantIdOfRef(ref);
    if (given.has(id)) throw invalidParams(`/puppets/${i}/id`, `id "${id}" is given already: a creature ${which} here is not among the puppets, and each puppet is given once`);
    given.set(id, ref);
  });
  const now = new Map([...given].map(([id, ref]) => [id, structuredClone(ref.data.actor.flags?.mindscape?.["power-pool"] ?? {})]));
  const nameOf = (id) => (given.has(id) ? combatantNameOfRef(given.get(id)) : `"${id}"`);
  return { ids, given, now, nameOf, events: [], said: [] };
}

/**
 * A creature whose control by `cid` ends, as the engine's `release_links` sets it free:
 * given and under that control, it loses `controlled_by` and a possession; not given,
 * the summary says its sheet still shows the control.
 */
function setFree({ now, nameOf, said }, id, cid) {
  const p = now.get(id);
  if (!p) said.push(`${nameOf(id)} was not given: its sheet still shows it under ${nameOf(cid)}'s control until it is changed.`);
  else if (p.controlled_by === cid) {
    p.controlled_by = null;
    p.conditions = (p.conditions ?? []).filter((x) => x !== "possessed");
    // As the engine: a mind without psionics had no power pool to expend (H-PP-NO-POOL).
    const psionic = p.psionic ?? ((p.attacks ?? []).length + (p.defenses ?? []).length > 0);
    if (!psionic && p.hit_dice !== undefined) p.pool = p.hit_dice;
  }
}

/** Why a power-pool controller cannot act (the engine's `cannot_act_conditions`; the fake reads no hit points), or undefined. */
const poolCannotAct = (c) => ["stunned", "asleep", "unconscious"].find((x) => (c.conditions ?? []).includes(x));

/**
 * Every link controller `cid` keeps by an action ends (the engine's
 * `release_kept_by_action`, `control-ended` with `reason`), its creatures set free
 * (`setFree`); links kept by a die hold. The summary's sentence: "<controller> <doing>
 * its control of <creatures>: the control ends."
 */
function endKeptByAction(state, cid, reason, doing) {
  const c = state.now.get(cid);
  const held = (c.controlling ?? []).filter((e) => e.kept_by === "action").map((e) => e.id);
  if (!held.length) return;
  state.said.push(`${state.nameOf(cid)} ${doing} its control of ${held.map(state.nameOf).join(" and ")}: the control ends.`);
  c.controlling = (c.controlling ?? []).filter((e) => e.kept_by !== "action").map((e) => ({ id: e.id, kept_by: e.kept_by, wave: e.wave ?? null }));
  for (const id of held) {
    state.events.push({ type: "control-ended", combatant: id, controller: cid, reason });
    setFree(state, id, cid);
  }
}

/**
 * The key a write-back clears `key` of the object at `path` with, as the companion's
 * Foundry adapters do (adapters/foundry.py `deletions`): `<path>.-=<key>`, but for an
 * unlinked token (`actorLink: false`) `<path>.<key>` set to null, since deleting it from
 * the token's delta would let its base actor's value show through again.
 */
function endedKey(ref, path, key) {
  return ref?.data?.token?.actorLink === false ? `${path}.${key}` : `${path}.-=${key}`;
}

/**
 * The daemon's answer once `poolCreatures`' profiles have changed: every combatant
 * `{id, before, after}` in the order given, each creature that changed written back as
 * the adapters address it (only the fields that changed; a timed condition that ended
 * also as `condition_rounds.-=<name>`, `endedKey`), the puppets that changed in `others`, and the
 * summary "<title>: <sentences>" (with none, "what still lasts counts down." when a
 * combatant changed, else "nothing changes.").
 */
function poolAnswer({ ids, given, now, events, said }, title) {
  const P = "flags.mindscape.power-pool";
  const sheet = (id) => given.get(id).data.actor.flags?.mindscape?.["power-pool"] ?? {};
  const norm = (v, f) => {
    if (f === "controlling") return (v ?? []).map((e) => ({ id: e.id, kept_by: e.kept_by, wave: e.wave ?? null }));
    return v ?? { controlled_by: null, condition_rounds: {} }[f] ?? [];
  };
  const changed = (id) => {
    const before = sheet(id);
    const after = now.get(id);
    const update = {};
    for (const f of ["pool", "dedicated", "controlling", "conditions", "condition_rounds", "controlled_by"]) {
      if (!(f in after)) continue;
      if (JSON.stringify(norm(before[f], f)) !== JSON.stringify(norm(after[f], f))) update[`${P}.${f}`] = after[f];
    }
    if (`${P}.condition_rounds` in update) {
      for (const c of Object.keys(before.condition_rounds ?? {})) if (!(c in after.condition_rounds)) update[endedKey(given.get(id), `${P}.condition_rounds`, c)] = null;
    }
    return update;
  };
  const entry = (id) => {
    const name = combatantNameOfRef(given.get(id));
    return { id, before: { id, name, ...sheet(id) }, after: { id, name, ...now.get(id) } };
  };
  const updates = [];
  const others = [];
  for (const [id, ref] of given) {
    const update = changed(id);
    if (!Object.keys(update).length) continue;
    updates.push({ uuid: actorUuidOfRef(ref), update });
    if (!ids.includes(id)) others.push(entry(id));
  }
  const combatants = ids.map(entry);
  const result = { system: "power-pool", combatants, events, rolls: [], summary: summaryOf(title, said, combatants), unused_dice: {}, updates };
  if (others.length) result.others = others;
  return result;
}

/** The engine's summary of an end of round or a rest: "<title>: <sentences>", or what it says without any. */
function summaryOf(title, said, combatants) {
  const counted = combatants.some((c) => JSON.stringify(c.before) !== JSON.stringify(c.after));
  return `${title}: ${said.length ? said.join(" ") : counted ? "what still lasts counts down." : "nothing changes."}`;
}

/**
 * `exchange.end_round` for power-pool as the daemon answers it (API.md), for psionic
 * control only (no timed conditions): each controller's choice `{release?, keep?,
 * cannot_perceive?}` is done as the engine does it, the links lost from sight (only
 * those kept by an action end), then those released, then those kept the other way
 * (`control-kept` with the link's `targets` and the `pool` left), each list in order;
 * any creature of a link names the whole link, each link once (−32602 at the second:
 * the path of a `keep` entry ends in `/target`); a creature it does not control is 4001
 * `not-controlling`, a die it does not have 4001 `no-die-to-dedicate`, a switch by a
 * controller that cannot act 4001 `controller-cannot-act` (each naming the
 * controller in `combatant`, and its choice at the end of the detail). A link kept by a
 * die gives the die back when it ends or is kept by an action. A creature set free that
 * is given (`combatants`, or `puppets`, answered in `others`) and under that control
 * loses `controlled_by` and a possession; one not given is only named (`setFree`). Then
 * a controller that cannot act (asleep, unconscious, stunned) loses its links kept by
 * an action (`controller-cannot-act`). Updates as the adapters address them.
 */
export function poolRoundEndResult(params) {
  const refuse = (rule, detail, combatant) => ({ code: 4001, message: "The rules forbid it", data: { rule, detail, combatant } });
  const state = poolCreatures(params, "whose round ends");
  const { ids, now, nameOf, events, said } = state;
  for (const id of Object.keys(params.choices ?? {})) {
    if (!ids.includes(id)) throw invalidParams(`/choices/${id}`, `no combatant has the id "${id}"`);
  }
  for (const [cid, choice] of Object.entries(params.choices ?? {})) {
    const c = now.get(cid);
    const C = nameOf(cid);
    let links = poolLinks(c);
    const linkOf = (id) => links.find((l) => l.targets.includes(id));
    // As the engine checks a choice: every creature one it controls, each link named once.
    const named = new Map();
    const problems = [];
    for (const list of ["cannot_perceive", "release", "keep"]) {
      (choice[list] ?? []).forEach((item, i) => {
        const id = list === "keep" ? item.target : item;
        const where = `/choices/${cid}/${list}/${i}${list === "keep" ? "/target" : ""}`;
        const link = linkOf(id);
        if (!link) throw refuse("not-controlling", `${C} does not control "${id}" (${where})`, cid);
        if (named.has(link)) problems.push({ path: where, message: `"${id}" is held by the control ${named.get(link)} already chooses for (a psionic wave's creatures share one): one choice each` });
        else named.set(link, where);
      });
    }
    if (problems.length) throw { code: -32602, message: "Invalid params", data: { errors: problems } };
    const unable = poolCannotAct(c);
    if (unable && (choice.keep ?? []).length) {
      throw refuse("controller-cannot-act", `${C} is ${unable} and cannot act: it cannot change how it keeps its control (one kept by an action ends as the round ends) (/choices/${cid})`, cid);
    }
    const key = (l) => l.wave ?? l.targets[0];
    // A link kept by dice holds one for each of its creatures (a psionic wave: several).
    const giveBack = (l) => {
      const kept = (c.dedicated ?? []).filter((d) => !(d.purpose === "control" && d.target === key(l)));
      c.pool = (c.pool ?? 0) + (c.dedicated ?? []).length - kept.length;
      c.dedicated = kept;
    };
    const end = (link, reason) => {
      if (link.kept_by === "die") giveBack(link);
      links = links.filter((l) => l !== link);
      for (const id of link.targets) {
        events.push({ type: "control-ended", combatant: id, controller: cid, reason });
        said.push(reason === "released" ? `${C} releases ${nameOf(id)}.` : `${C} loses sight of ${nameOf(id)}: the control ends.`);
        setFree(state, id, cid);
      }
    };
    // In the engine's order: lost sight, released, then kept the other way, each list in turn.
    for (const id of choice.cannot_perceive ?? []) {
      const link = linkOf(id);
      if (link.kept_by === "action") end(link, "not-perceived");
      else said.push(`${C} cannot perceive ${nameOf(id)}, but keeps control of it by a die, which needs no sight.`);
    }
    for (const id of choice.release ?? []) end(linkOf(id), "released");
    for (const { target, by } of choice.keep ?? []) {
      const link = linkOf(target);
      if (link.kept_by === by) continue;
      if (by === "die") {
        const held = link.targets.length;
        const why = held > 1 ? `has ${(c.pool ?? 0) === 1 ? "1 die" : `${c.pool ?? 0} dice`} in its pool, too few to keep control of ${held} creatures by a die each` : "has no die in its pool to keep control with";
        if ((c.pool ?? 0) < held) throw refuse("no-die-to-dedicate", `${C} ${why} (/choices/${cid})`, cid);
        c.pool -= held;
        c.dedicated = [...(c.dedicated ?? []), ...link.targets.map(() => ({ purpose: "control", target: key(link) }))];
      } else giveBack(link);
      link.kept_by = by;
      events.push({ type: "control-kept", combatant: target, controller: cid, by, pool: c.pool, targets: [...link.targets] });
      const one = link.targets.length === 1;
      said.push(`${C} keeps control of ${link.targets.map(nameOf).join(" and ")} by ${by === "die" ? `${one ? "a die" : "a die each"} from its pool from now on (${c.pool} left)` : `an action each round from now on; ${one ? "the die returns" : "the dice return"} (${c.pool} in the pool)`}.`);
    }
    c.controlling = links.flatMap((l) => l.targets.map((id) => ({ id, kept_by: l.kept_by, wave: l.wave })));
  }
  // Then, as the engine: a controller that cannot act (asleep, unconscious, stunned; the
  // fake reads no hit points) spends no action, so its links kept by an action end.
  for (const cid of ids) {
    const why = poolCannotAct(now.get(cid));
    if (why) endKeptByAction(state, cid, "controller-cannot-act", `is ${why} and cannot spend the action that keeps`);
  }
  return poolAnswer(state, "End of the round");
}

/**
 * `combatants.rest` for power-pool as the daemon answers it (API.md): one long rest, no
 * `hours` (−32602), no dice. As the rest begins, each resting controller's control kept
 * by an action ends (seed 001: "Powers can't be maintained when a creature rests";
 * `control-ended`, reason `rest`), its creatures set free where given (among the
 * combatants, where they then rest free, or in `puppets`, answered in `others`) or
 * named in the summary (`endKeptByAction`); a link kept by a die holds. Then each
 * combatant rests: maintained powers end (`powers-ended`), the pool comes back to the
 * Hit Dice less the dice kept for control (`pool-regained`; H-PP-RECOVERY `all`, the
 * fake's only rule), but not for a creature under control, and every timed condition
 * ends (`condition-ended`).
 */
function poolRestResult(params) {
  if ("hours" in params) throw invalidParams("", 'unexpected member(s) ["hours"]: not allowed here');
  const state = poolCreatures(params, "that rests");
  const { ids, now, nameOf, events, said } = state;
  for (const cid of ids) endKeptByAction(state, cid, "rest", "rests and spends no action to keep");
  for (const id of ids) {
    const c = now.get(id);
    const name = nameOf(id);
    const control = (c.dedicated ?? []).filter((d) => d.purpose === "control");
    const powers = (c.dedicated ?? []).length - control.length;
    if (powers) {
      c.dedicated = control;
      events.push({ type: "powers-ended", combatant: id, dice: powers, reason: "rest" });
      said.push(`${name}'s maintained powers end.`);
    }
    const pool = c.controlled_by ? c.pool ?? 0 : (c.hit_dice ?? c.pool ?? 0) - control.length;
    if (pool !== (c.pool ?? 0)) {
      const amount = pool - (c.pool ?? 0);
      c.pool = pool;
      events.push({ type: "pool-regained", combatant: id, amount });
      said.push(`${name} regains ${amount === 1 ? "1 die" : `${amount} dice`} (${pool} in the pool).`);
    }
    for (const condition of Object.keys(c.condition_rounds ?? {})) {
      c.conditions = (c.conditions ?? []).filter((x) => x !== condition);
      delete c.condition_rounds[condition];
      events.push({ type: "condition-ended", combatant: id, condition });
      said.push(conditionEnded(name, condition));
    }
  }
  return poolAnswer(state, "After the rest");
}

/** revised-2e's PSPs a round for each defense mode (the engine's tables.json). */
const REVISED_DEFENSE_COST = { "intellect-fortress": 4, "mental-barrier": 5, "mind-blank": 3, "thought-shield": 2, "tower-of-iron-will": 6 };

/**
 * PSPs to close a mind a critical hit opened (RULES.md §1.5): 2 × its last defense's
 * cost; with none, 2 × its cheapest known defense under H-2E-NO-LAST-DEF (on by
 * default); else null.
 */
function closeCost(c, options) {
  const last = c.mind.last_defense;
  if (last) return 2 * REVISED_DEFENSE_COST[last];
  const known = (c.defenses ?? []).map((d) => REVISED_DEFENSE_COST[d]).filter((n) => n !== undefined);
  return (options?.["H-2E-NO-LAST-DEF"] ?? true) && known.length ? 2 * Math.min(...known) : null;
}

/** The engine's line for a condition that ended. */
function conditionEnded(name, condition) {
  return condition === "initiative-penalty" ? `${name}'s initiative penalty ends.` : `${name} is no longer ${condition}.`;
}

/**
 * One revised-2e round of an open mind and of the timed conditions, as the engine's
 * `end_of_round` takes it (RULES.md §1.5), changing `c` in place: a mind opened at 0 PSPs
 * (or after a critical hit's round to pay, `mind-may-close {cost}`, has gone) is locked
 * 1d4+1 rounds (`open-duration`, `mind-locked {rounds}`), those rounds pass, and as the
 * last of them ends and each round after, a Wisdom check d20 ≤ wis − 3 (`wisdom-check`)
 * closes it (`mind-closed {how}`);
 * a nonpsionic mind opened by an attack saves from its second round, d20 ≥
 * save_paralyzation (+4 after a power was used on it; `save`, `mind-save`). Then each
 * condition with no rounds left ends (`condition-ended`), the others lose a round.
 */
function restMindRound(c, roll, events, options) {
  const mind = c.mind;
  if (mind.state === "open") {
    const openedBy = mind.opened_by ?? (c.kind === "nonpsionic" ? "attack" : null);
    const first = mind.rounds_open === 0;
    const close = (how) => {
      c.mind = { state: "closed", opened_by: null, locked_rounds: 0, last_defense: mind.last_defense ?? null, used_power: false, may_pay_to_close: false, rounds_open: 0 };
      events.push({ type: "mind-closed", combatant: c.id, how });
    };
    if (openedBy === "attack") {
      if (!first) {
        const target = (c.save_paralyzation ?? 14) + (mind.used_power ? 4 : 0);
        const r = roll("save", 20, c.id);
        events.push({ type: "mind-save", combatant: c.id, target, roll: r, success: r >= target });
        if (r >= target) close("save");
      }
    } else if (openedBy === "critical" && first) {
      mind.may_pay_to_close = true;
      events.push({ type: "mind-may-close", combatant: c.id, cost: closeCost(c, options) });
    } else if ((openedBy === "zero-psp" && first) || mind.may_pay_to_close) {
      mind.may_pay_to_close = false;
      mind.locked_rounds = roll("open-duration", 4, c.id) + 1;
      events.push({ type: "mind-locked", combatant: c.id, rounds: mind.locked_rounds });
    } else if (mind.locked_rounds > 1) {
      mind.locked_rounds -= 1;
    } else {
      mind.locked_rounds = 0;
      const target = (c.wis ?? 10) - 3;
      const r = roll("wisdom-check", 20, c.id);
      events.push({ type: "wisdom-check", combatant: c.id, target, roll: r, success: r <= target });
      if (r <= target) close("wisdom-check");
    }
    if (c.mind.state === "open") c.mind.rounds_open += 1;
  }
  for (const condition of [...c.conditions]) {
    const left = c.condition_rounds[condition] ?? 0;
    if (left <= 0) {
      c.conditions = c.conditions.filter((x) => x !== condition);
      delete c.condition_rounds[condition];
      events.push({ type: "condition-ended", combatant: c.id, condition });
    } else c.condition_rounds[condition] = left - 1;
  }
}

/**
 * `combatants.rest` as the daemon answers it (API.md), over the profiles in the refs.
 * revised-2e needs `hours` (1–1000): ceil(psp_max / 8) PSPs an hour, never above the
 * maximum (`psp-regained {amount, hours}`); an open mind goes through its rounds
 * (`restMindRound`, a round is a minute) until it closes, for at most the rest's rounds
 * and `REST_MIND_ROUNDS_CAP` (`mind-checks-capped {rounds}` when the cap stops it); then
 * conditions run out as the remaining rounds pass (`condition-ended` for one with fewer
 * rounds left than passed; one without rounds counted lasts its round, as at a round's
 * end), the others count down without an event. Dice come from `dice` (by purpose, in
 * order; 4002 `{purpose, sides, needed: 1}` when one runs out, the rest listed in `unused_dice`) or
 * else from the fake's own (`REST_DEFAULT_DICE`, whatever the `seed`); every die is in
 * `rolls`. power-pool is `poolRestResult`. combat-strength has no rest (−32602 at
 * /system). Updates use the adapters' addresses and dotted paths (the whole `mind` when
 * it changed), only for combatants that changed; the summary's lines are the engine's.
 */
export function restResult(params) {
  const { system } = params;
  if (system === "power-pool") return poolRestResult(params);
  if (system === "combat-strength") throw invalidParams("/system", "system combat-strength has no rule for resting (systems.list: rest false)");
  if (!Number.isInteger(params.hours)) throw invalidParams("", "'hours' is a required property");
  if (params.hours < 1 || params.hours > 1000) throw invalidParams("/hours", `${params.hours} is not within 1..1000`);
  const supplied = params.dice ? structuredClone(params.dice) : null;
  const rolls = [];
  const roll = (purpose, sides, by) => {
    let value = REST_DEFAULT_DICE[purpose];
    if (supplied) {
      const left = supplied[purpose] ?? [];
      if (!left.length) throw { code: 4002, message: "Dice needed", data: { purpose, sides, needed: 1 } };
      value = left.shift();
      supplied[purpose] = left;
    }
    rolls.push({ purpose, sides, value, by, follows: null });
    return value;
  };
  const P = `flags.mindscape.${system}`;
  const combatants = [];
  const events = [];
  const updates = [];
  const said = [];
  params.combatants.forEach((ref) => {
    const id = combatantIdOfRef(ref);
    const name = combatantNameOfRef(ref);
    const profile = ref.data.actor.flags?.mindscape?.[system] ?? {};
    const before = { id, name, ...structuredClone(profile), conditions: [...(profile.conditions ?? [])], condition_rounds: { ...(profile.condition_rounds ?? {}) } };
    before.mind = { state: "closed", opened_by: null, locked_rounds: 0, last_defense: null, used_power: false, may_pay_to_close: false, rounds_open: 0, ...(profile.mind ?? {}) };
    const after = structuredClone(before);
    const update = {};
    const mine = [];
    const max = before.psp_max ?? before.psp ?? 0;
    const psp = Math.min(max, (before.psp ?? 0) + Math.ceil(max / 8) * params.hours);
    if (psp > (before.psp ?? 0)) {
      after.psp = psp;
      update[`${P}.psp`] = psp;
      mine.push({ type: "psp-regained", combatant: id, amount: psp - (before.psp ?? 0), hours: params.hours });
    }
    const rounds = params.hours * 60;
    let mindRounds = 0;
    while (after.mind.state === "open" && mindRounds < Math.min(rounds, REST_MIND_ROUNDS_CAP)) {
      restMindRound(after, roll, mine, params.options);
      mindRounds++;
    }
    if (after.mind.state === "open" && mindRounds === REST_MIND_ROUNDS_CAP && mindRounds < rounds) {
      mine.push({ type: "mind-checks-capped", combatant: id, rounds: mindRounds });
    }
    const passed = rounds - mindRounds;
    for (const c of [...after.conditions]) {
      const left = after.condition_rounds[c] ?? 0; // none counted: it lasts its round
      if (left + 1 - passed > 0) {
        if (c in after.condition_rounds) after.condition_rounds[c] = left - passed;
      } else {
        after.conditions = after.conditions.filter((x) => x !== c);
        delete after.condition_rounds[c];
        mine.push({ type: "condition-ended", combatant: id, condition: c });
      }
    }
    if (JSON.stringify(after.mind) !== JSON.stringify(before.mind)) update[`${P}.mind`] = after.mind;
    const ended = before.conditions.filter((c) => !after.conditions.includes(c));
    if (ended.length) update[`${P}.conditions`] = after.conditions;
    if (JSON.stringify(after.condition_rounds) !== JSON.stringify(before.condition_rounds)) update[`${P}.condition_rounds`] = after.condition_rounds;
    for (const c of ended) update[endedKey(ref, `${P}.condition_rounds`, c)] = null;
    const checks = mine.filter((e) => e.type === "wisdom-check" || e.type === "mind-save");
    for (const e of mine) {
      if (e.type === "psp-regained") said.push(`${name} regains ${e.amount} PSP${e.amount === 1 ? "" : "s"} (${after.psp} of ${after.psp_max ?? after.psp}).`);
      else if (e.type === "condition-ended") said.push(conditionEnded(name, e.condition));
      else if (e.type === "mind-closed") {
        const last = checks.at(-1);
        const how = last ? ` (${last.type === "mind-save" ? "save" : "Wisdom check"} ${last.target}, rolled ${last.roll}, after ${checks.length} ${checks.length === 1 ? "try" : "tries"})` : "";
        said.push(`${name}'s mind closes during the rest${how}.`);
      }
    }
    if (before.mind.state === "open" && after.mind.state === "open") {
      said.push(mine.some((e) => e.type === "mind-checks-capped")
        ? `${name}'s mind is still open after the rest: ${REST_MIND_ROUNDS_CAP} rounds of checks are the most a rest rolls; end rounds to go on.`
        : `${name}'s mind is still open after the rest.`);
    }
    events.push(...mine);
    combatants.push({ id, before, after });
    if (Object.keys(update).length) updates.push({ uuid: actorUuidOfRef(ref), update });
  });
  const unused = Object.fromEntries(Object.entries(supplied ?? {}).filter(([, v]) => v.length));
  return { system, combatants, events, rolls, summary: summaryOf("After the rest", said, combatants), unused_dice: unused, updates };
}

/**
 * Each system's `dice_purposes` as `systems.describe` gives them, cut to the purpose and
 * whether the rules add its dice up (`summed`); the browser tests check these against the
 * real companion's (e2e.test.mjs).
 */
export const DICE_PURPOSES = Object.fromEntries(Object.entries({
  "revised-2e": [["damage", "effect-duration", "lost-power", "hp-damage", "open-duration"], ["attack", "save", "wisdom-check", "mac-base", "mac-modifier", "initiative"]],
  "combat-strength": [["damage", "condition-duration"], ["implosion", "save", "wave-effect"]],
  "power-pool": [["attack", "defense"], ["save"]],
}).map(([system, [summed, alone]]) => [system, [...summed.map((purpose) => ({ purpose, summed: true })), ...alone.map((purpose) => ({ purpose, summed: false }))]]));

/** Each system's `rest_schema` as `systems.describe` gives it (combat-strength: none). */
export const REST_SCHEMAS = {
  "revised-2e": { type: "object", required: ["combatants", "hours"], additionalProperties: false, properties: { combatants: { type: "array", minItems: 1, maxItems: 64, items: { type: "object" } }, options: { type: "object" }, hours: { type: "integer", minimum: 1, maximum: 1000 } } },
  "power-pool": { type: "object", required: ["combatants"], additionalProperties: false, properties: { combatants: { type: "array", minItems: 1, maxItems: 64, items: { type: "object" } }, options: { type: "object" }, puppets: { type: "array", maxItems: 64, items: { type: "object" } } } },
};

/**
 * `adapters.import` of a power-pool sheet as the daemon reads it, for the tests that need
 * the control it shows (`defaultMethods` reads the revised-2e profile): the combatant's
 * id and name, and its power-pool profile as it stands.
 */
export function poolImport({ data }) {
  return { combatant: { id: combatantIdOfRef({ data }), name: combatantNameOfRef({ data }), ...(data.actor.flags?.mindscape?.["power-pool"] ?? {}) }, warnings: [] };
}

/** Default fake daemon methods for a revised-2e world. */
export function defaultMethods(overrides = {}) {
  return {
    "companion.info": () => ({ name: "mindscape", version: "0.1.0", api_version: 1, systems: ["revised-2e", "combat-strength", "power-pool"], adapters: [], plugins: [] }),
    "adapters.list": () => [{ id: "foundry.dnd5e", vtt: "foundry", system: null }, { id: "foundry.generic", vtt: "foundry", system: null }],
    "systems.describe": ({ system }) => ({
      id: system,
      modes: { attacks: [{ id: "mind-thrust", cost: 2 }, { id: "ego-whip", cost: 4 }], defenses: [{ id: "thought-shield", cost: 2 }, { id: "mind-blank", cost: 3 }] },
      combatant_schema: { type: "object", properties: { psp: { type: "integer", minimum: 0 }, kind: { enum: ["psionicist", "wild-talent", "nonpsionic"] }, attacks: { type: "array", items: { enum: ["mind-thrust", "ego-whip"] } } } },
      house_rules: [{ id: "H-2E-CRIT-MODS", text: "the roll is the modified roll", default: true }],
      dice_purposes: DICE_PURPOSES[system] ?? [],
      ...(REST_SCHEMAS[system] ? { rest_schema: REST_SCHEMAS[system] } : {}),
    }),
    "adapters.import": ({ data }) => ({ combatant: { name: combatantNameOfRef({ data }), level: 4, ...(data.actor.flags?.mindscape?.["revised-2e"] ?? {}) }, warnings: [] }),
    "exchange.odds": () => ({ outcomes: { hit: 0.55, miss: 0.45 }, critical: 0.1, mind_opened: 0.05, damage: { mean: 6.2, distribution: [[0, 0.45], [4, 0.3], [8, 0.25]], truncated_mass: 0 } }),
    "exchange.resolve": (params) => revisedResult(params),
    "exchange.end_round": (params) => (params.system === "power-pool" ? poolRoundEndResult(params) : roundEndResult(params)),
    "exchange.round_end_choices": (params) => (params.system === "power-pool" ? poolRoundEndChoicesResult(params) : roundEndChoicesResult(params)),
    "combatants.rest": (params) => restResult(params),
    // An encounter whose sheets did not change since they were added: nothing to take again.
    "encounter.refresh": ({ combatant_id }) => ({ combatant_id, revision: 1, changed: [], dropped_choices: [], warnings: [] }),
    ...overrides,
  };
}

/**
 * A revised-2e encounter as the daemon keeps it (API.md, encounter.*), over
 * `defaultMethods`: `encounter.add` stores the encounter's own copy of the combatant read
 * from the sheet; `encounter.refresh` takes it again from the sheet sent, names the
 * fields that changed and stores a step (the revision grows) only when one did;
 * `encounter.delete` forgets the encounter (`enc` keeps its last state); an unknown (or
 * deleted) encounter or combatant is 4004, a sheet the adapter refuses (here a negative
 * psp) −32602 with the path where it was read; `encounter.resolve` resolves the declared
 * attacks from the encounter's copies, not from the sheets, as `revisedResult` does, and
 * answers their write-backs, refused (4009) when it names a revision the encounter is no
 * longer at. `enc` is the encounter's state, for tests to look at.
 */
export function encounterMethods(overrides = {}) {
  const enc = { id: null, revision: 0, round: 1, combatants: new Map(), choices: new Map(), adds: [] };
  let made = 0;
  const profileOf = (ref) => structuredClone(ref.data.actor.flags?.mindscape?.["revised-2e"] ?? {});
  const notFound = (id) => ({ code: 4004, message: "Not found", data: { id } });
  const known = (id) => { if (!enc.id || id !== enc.id) throw notFound(id); };
  // API.md: every write may name the revision it expects; a stale one is 4009.
  const stale = (revision) => { if (revision !== undefined && revision !== enc.revision) throw { code: 4009, message: "Stale revision", data: { revision: enc.revision } }; };
  const waiting = () => [...enc.combatants.keys()].filter((c) => !enc.choices.has(c));
  const withProfile = (c) => ({ ...c.ref, data: { ...c.ref.data, actor: { ...c.ref.data.actor, flags: { ...c.ref.data.actor.flags, mindscape: { "revised-2e": c.profile } } } } });
  const methods = defaultMethods({
    // A fresh id each time, as the companion gives: "enc1", then "enc2" for a new encounter that replaces it.
    "encounter.create": ({ system, name }) => { enc.id = `enc${++made}`; enc.adds = []; return { id: enc.id, revision: 0, system, name }; },
    "encounter.add": ({ id, combatant }) => {
      known(id);
      const cid = combatantIdOfRef(combatant);
      // As the engines refuse a second add of one creature to an encounter (revised_2e/encounter.py).
      if (enc.adds.some((a) => a.result.combatant_id === cid)) throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/combatant/id", message: `"${cid}" is already in the encounter` }] } };
      enc.combatants.set(cid, { ref: structuredClone(combatant), name: combatantNameOfRef(combatant), profile: profileOf(combatant) });
      enc.revision++;
      enc.adds.push({ revision: enc.revision, kind: "add", params: { combatant: keptOfRef(combatant) }, rolls: [], result: { combatant_id: cid, warnings: [] }, undone_by: null });
      return { combatant_id: cid, revision: enc.revision, warnings: [], updates: [] };
    },
    // Its add steps only, each with what the companion keeps of the sheet (API.md).
    "encounter.log": ({ id }) => {
      known(id);
      return { id, revision: enc.revision, steps: structuredClone(enc.adds) };
    },
    // The companion forgets it: every later call naming it (an `encounter.add` that was
    // still to come, say) is 4004, as it is for an id it never made. `enc` keeps what it
    // held then, for tests to look at.
    "encounter.delete": ({ id }) => {
      known(id);
      enc.id = null;
      return { id, deleted: true };
    },
    "encounter.get": ({ id }) => {
      known(id);
      return { phase: "round", round: enc.round, revision: enc.revision, waiting_for: waiting(), combatants: Object.fromEntries([...enc.combatants].map(([cid, c]) => [cid, { name: c.name, ...c.profile }])) };
    },
    "encounter.declare": ({ id, combatant_id, choice }) => {
      known(id);
      if (!enc.combatants.has(combatant_id)) throw notFound(combatant_id);
      enc.choices.set(combatant_id, choice);
      enc.revision++;
      return { revision: enc.revision, waiting_for: waiting() };
    },
    "encounter.refresh": ({ id, combatant_id, combatant }) => {
      known(id);
      const c = enc.combatants.get(combatant_id);
      if (!c) throw notFound(combatant_id);
      const profile = profileOf(combatant);
      if (typeof profile.psp === "number" && profile.psp < 0) {
        throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/combatant/data/actor/flags/mindscape/revised-2e/psp", message: `must be at least 0, got ${profile.psp}` }] } };
      }
      const fields = new Set([...Object.keys(c.profile), ...Object.keys(profile)]);
      const changed = [...fields].filter((f) => JSON.stringify(c.profile[f]) !== JSON.stringify(profile[f])).sort();
      // As the engine checks every declared choice again: an attack in a mode the sheet
      // no longer knows is dropped, and its combatant is waited for again.
      const mode = enc.choices.get(combatant_id)?.attack?.mode;
      const dropped = mode && Array.isArray(profile.attacks) && !profile.attacks.includes(mode) ? [combatant_id] : [];
      if (changed.length) {
        Object.assign(c, { ref: structuredClone(combatant), profile });
        dropped.forEach((cid) => enc.choices.delete(cid));
        enc.revision++;
      }
      return { combatant_id, revision: enc.revision, changed, dropped_choices: dropped, warnings: [] };
    },
    "encounter.resolve": ({ id, revision }) => {
      known(id);
      stale(revision);
      const results = [];
      for (const [cid, choice] of enc.choices) {
        if (!choice.attack) continue;
        const a = enc.combatants.get(cid);
        const d = enc.combatants.get(choice.attack.target);
        const r = revisedResult({ attacker: withProfile(a), defender: withProfile(d), attack: choice.attack });
        r.attacker.id = cid;
        r.defender.id = choice.attack.target;
        a.profile.psp = r.attacker.after.psp;
        d.profile.psp = r.defender.after.psp;
        results.push(r);
      }
      enc.choices.clear();
      enc.round++;
      enc.revision++;
      return { revision: enc.revision, results, updates: [] };
    },
    ...overrides,
  });
  return { methods, enc };
}

/** Scripted dialogs: each kind answers from a queue (of answers or functions) or a function, and records its context. */
export function scriptedDialogs(script = {}) {
  const seen = [];
  const answer = async (kind, arg) => {
    seen.push({ kind, arg });
    const a = script[kind];
    if (typeof a === "function") return a(arg);
    if (Array.isArray(a)) {
      const next = a.shift();
      return typeof next === "function" ? next(arg) : next ?? null;
    }
    return a ?? null;
  };
  return {
    seen,
    attackDialog: async (arg) => {
      // As the dialog opens: its odds for the mode it selects first (the first offered),
      // with the fields it shows for the system (attack-dialog.hbs).
      const context = arg.context ?? {};
      const offered = context.attacks ?? [];
      const first = (offered.find((m) => m.selected) ?? offered[0])?.id ?? "mind-thrust";
      const form = { mode: first };
      if (!arg.context || context.multipliers?.length) form.multiplier = "4";
      if (!arg.context || context.ranges?.length) form.range = "short";
      if (arg.oddsFor) arg.odds = await arg.oddsFor(script.attackForm ?? form);
      return answer("attackDialog", arg);
    },
    defenseDialog: (arg) => answer("defenseDialog", arg),
    diceDialog: (arg) => answer("diceDialog", arg),
    profileDialog: (arg) => answer("profileDialog", arg),
    houseRulesDialog: (arg) => answer("houseRulesDialog", arg),
    encounterChoiceDialog: (arg) => answer("encounterChoiceDialog", arg),
    encounterActionDialog: (arg) => answer("encounterActionDialog", arg),
    closeDialog: (arg) => answer("closeDialog", arg),
    controlDialog: (arg) => answer("controlDialog", arg),
    joinDialog: (arg) => answer("joinDialog", arg),
    restDialog: (arg) => answer("restDialog", arg),
    pairingDialog: (arg) => answer("pairingDialog", arg),
  };
}

/**
 * Build the table. Ulcen (owned by p1, linked), Fenka (owned by p2, unlinked token),
 * a Goblin NPC (unlinked token, nobody owns it).
 */
export function makeTable({ generation = 12, passQuerySender = false, userQueryEvent = true, methods = defaultMethods(), dialogs = {}, token = "secret-token" } = {}) {
  const server = new FakeServer({ passQuerySender, userQueryEvent });
  const world = new FakeWorld();
  const gm = new FakeUser({ id: "gm0000", name: "Gamemaster", isGM: true });
  const p1 = new FakeUser({ id: "pl0001", name: "Ann" });
  const p2 = new FakeUser({ id: "pl0002", name: "Bo" });
  const users = makeUsers([gm, p1, p2]);
  const worldSettings = new Map();
  // revised-2e: a psionic mind knows only the modes its profile lists (COMBATANTS.md).
  const modes = { attacks: ["mind-thrust", "ego-whip"], defenses: ["thought-shield", "mind-blank"] };
  // The players' characters are placed friendly, the goblin hostile (token disposition).
  const ulcen = world.actor({ id: "ulcen", name: "Ulcen of Tyr", disposition: 1, ownership: { pl0001: 3 }, flags: { mindscape: { "revised-2e": { kind: "psionicist", psp: 40, psp_max: 40, ...modes } } } });
  const fenka = world.actor({ id: "fenka", name: "Fenka", disposition: 1, ownership: { pl0002: 3 }, flags: { mindscape: { "revised-2e": { kind: "psionicist", psp: 30, psp_max: 40, ...modes } } } });
  const goblin = world.actor({ id: "goblin", name: "Goblin", type: "npc", flags: { mindscape: { "revised-2e": { psp: 20, psp_max: 20, ...modes } } } });
  const ulcenToken = world.token({ id: "tokU", name: "Ulcen of Tyr", actor: ulcen, actorLink: true });
  const fenkaToken = world.token({ id: "tokF", name: "Fenka", actor: fenka, actorLink: false });
  const goblinToken = world.token({ id: "tokG", name: "Goblin", actor: goblin, actorLink: false });
  const daemon = fakeDaemon(methods, { token });
  const clients = {};
  for (const user of [gm, p1, p2]) {
    const c = makeClient({ server, world, users, user, generation, worldSettings });
    registerSettings(c.game, undefined, { encounter: (_value, options) => c.svc.encounters.encounterSet(options) });
    c.dialogs = scriptedDialogs(dialogs[user.id === gm.id ? "gm" : user.id === p1.id ? "p1" : "p2"] ?? {});
    c.svc = new Mindscape({
      game: c.game, ui: c.ui, CONFIG: c.CONFIG, Hooks: c.Hooks, ChatMessage: c.ChatMessage, Roll: c.Roll,
      fromUuid: c.fromUuid, render: async (n, ctx) => renderModuleTemplate(n, ctx), dialogs: c.dialogs,
      fetch: user.isGM ? daemon.fetch : async () => { throw new Error("a player's client must never call the daemon"); },
    });
    c.svc.encounters = new EncounterController(c.svc);
    c.svc.env.encounters = c.svc.encounters;
    c.svc.encounters.seeMeta();
    c.svc.relay.register();
    clients[user.id === gm.id ? "gm" : user.id === p1.id ? "p1" : "p2"] = c;
  }
  world.game = clients.gm.game;
  clients.gm.game.settings.values.set("mindscape.daemonToken", token);
  return { server, world, users, gm, p1, p2, clients, daemon, actors: { ulcen, fenka, goblin }, tokens: { ulcenToken, fenkaToken, goblinToken } };
}

/**
 * A fake companion's method that fails otherwise (−32603) once called more than a few
 * times: a module that resent a refused call forever fails its test at once, where it
 * would hang the run (its calls never wait for a timer, so no timeout could fire). The
 * tests of these refusals have a timeout too (`RESENDS`), for a resend that waits for one.
 */
export function patient(method) {
  let calls = 0;
  return (params) => {
    calls += 1;
    if (calls > 5) throw { code: -32603, message: "Internal error", data: { detail: "resent too often" } };
    return method(params);
  };
}
export const RESENDS = { timeout: 10000 };
