/**
 * The end of a psionic round between single exchanges (`exchange.end_round`): which
 * change of the combat tracker ends a round, who takes part in it, and what a power-pool
 * controller may choose for its control at its end. Pure functions;
 * the service (service.js) calls the companion, writes back and posts the card.
 */
import { MODULE_ID } from "./consts.js";
import { participantOf } from "./updates.js";

/** The combat flag that records the last round this module ended for that combat. */
export const ROUND_ENDED_FLAG = "roundEnded";

/**
 * The round an `updateCombat` hook ends, or null when it ends none.
 *
 * A round ends when the tracker moves *forward* from a round that had begun (round ≥ 1):
 * `changed.round` is greater than the round before the update. Foundry's
 * `Combat#_onUpdate` records the state before the update in `combat.previous` before the
 * hook fires, so `combat.previous.round` is that round; starting the combat (0 → 1) ends
 * nothing, and going back (`previousRound`, `options.direction` −1, or any lower round)
 * ends nothing. When Foundry has no previous state to offer, only the tracker's own
 * advance (`nextRound`/`nextTurn`, which pass `options.direction` 1) from round 1 or later
 * counts. A jump of several rounds at once ends one round, the one the tracker left.
 * @param {{previous?:{round?:number|null}}|null} combat  the Combat document, as the hook gives it
 * @param {object} changed  the hook's differential update data
 * @param {{direction?:number}} [options]  the hook's update options
 * @returns {number|null} the round that ended
 */
export function endedRound(combat, changed, options = {}) {
  if (!changed || typeof changed !== "object" || !("round" in changed)) return null;
  const round = Number(changed.round);
  if (!Number.isInteger(round)) return null;
  const direction = Number(options?.direction);
  if (Number.isFinite(direction) && direction < 0) return null;
  const prior = combat?.previous?.round;
  if (Number.isInteger(prior)) return round > prior && prior >= 1 ? prior : null;
  return direction > 0 && round >= 2 ? round - 1 : null;
}

/**
 * The engine's default mind (revised-2e's `closed_mind`): closed, nothing pending, as the
 * companion writes it under `flags.mindscape.<system>.mind` once a mind a psionic attack
 * opened closes again. The engine fills in each member a mind leaves out from it, so a
 * mind of only its members with its values, in any order, is no mind state. Kept by hand:
 * tests/adapters/test_foundry.py checks it against the engine.
 */
export const CLOSED_MIND = Object.freeze({
  state: "closed", opened_by: null, locked_rounds: 0, last_defense: null,
  used_power: false, may_pay_to_close: false, rounds_open: 0,
});

/** Whether `value` is a plain object (not null, not a list). */
export const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isEmptyList = (value) => Array.isArray(value) && value.length === 0;
// The members of an object that hold something: a null member is one an unlinked
// token's write-back masked (Foundry cannot delete it there), which the companion reads
// as absent.
const held = (object) => Object.keys(object).filter((key) => object[key] !== null);
const own = (object, key) => (Object.hasOwn(object, key) ? object[key] : undefined);

/**
 * The profile members the companion writes back as state, each with a test of a value
 * it holds at rest: one that imports as the same combatant as no such member (an empty
 * list, an object of no members, the default closed mind or any part of it). A value of
 * another kind, one the companion would refuse included, is not at rest; rounds only on
 * conditions the profile does not hold are, as the adapters leave such keys out (a store
 * written before write-backs took an ended condition's rounds away). Kept by hand:
 * tests/adapters/test_foundry.py checks it against the engine.
 */
export const AT_REST = Object.freeze({
  mind: (value) => isObject(value) && held(value).every((key) => own(value, key) === own(CLOSED_MIND, key)),
  conditions: isEmptyList,
  condition_rounds: (value, profile) => {
    const conditions = own(profile ?? {}, "conditions") ?? [];
    return isObject(value) && Array.isArray(conditions) && held(value).every((key) => !conditions.includes(key));
  },
  lost_powers: isEmptyList,
  dedicated: isEmptyList,
  controlling: isEmptyList,
});

/**
 * Whether an actor has a Mindscape profile for `system` (`flags.mindscape.<system>`): an
 * object with a member that holds something (not null) other than state at rest
 * (`AT_REST`). A psionic attack on a mind with no profile makes the companion write one
 * holding only that mind, and the default closed mind once it closes; a profile left
 * with only that, or with emptied conditions, lost powers and controls, holds nothing the
 * companion reads, and its actor takes no part in a round's end or a rest. Anything a GM
 * sets (psionic, kind, PSPs, modes, level ...) or a member the companion does not know
 * keeps it a profile.
 */
export function hasProfile(actor, system) {
  const profile = actor?.flags?.[MODULE_ID]?.[system];
  if (!isObject(profile)) return false;
  return held(profile).some((key) => !Object.hasOwn(AT_REST, key) || !AT_REST[key](profile[key], profile));
}

/**
 * Who takes part in an end of round: each `{token, actor}` whose actor (as seen through
 * the token) has a profile for `system`, once per actor. Two tokens of one linked actor
 * share its world actor and are one combatant; unlinked tokens each have their own
 * synthetic actor and stay apart. The first token met names the combatant.
 * @param {{token:any, actor:any}[]} entries
 * @param {string} system
 * @returns {{token:any, actor:any}[]}
 */
export function roundParticipants(entries, system) {
  const seen = new Set();
  const out = [];
  for (const entry of entries ?? []) {
    const actor = entry?.token?.actor ?? entry?.actor;
    if (!actor || !hasProfile(actor, system)) continue;
    const key = participantOf(entry.token ?? null, actor).actorUuid;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ token: entry.token ?? null, actor });
  }
  return out;
}

/**
 * The combat tracker's combatants as `{token, actor}`: Foundry's `Combatant#token` (the
 * TokenDocument) and `Combatant#actor` (the token's actor, else the world actor). A
 * combatant whose token was deleted (it has a `tokenId`, but no token any more) is left
 * out: it no longer fights, and Foundry would give its base actor instead, which for an
 * unlinked token is every copy's prototype. A combatant made without a token fights as
 * its world actor.
 * @param {{combatants?:Iterable<any>|{contents:any[]}}} combat
 */
export function combatEntries(combat) {
  const list = combat?.combatants?.contents ?? [...(combat?.combatants ?? [])];
  return list
    .filter((c) => c.token || !c.tokenId)
    .map((c) => ({ token: c.token ?? null, actor: c.token?.actor ?? c.actor ?? null }));
}

/**
 * Split participants (`{token, actor}`) into those outside the current encounter and
 * those in it: a participant whose actor, as seen through its token
 * (`participantOf(...).actorUuid`), is the actor of one of the encounter's combatants
 * (`meta.combatants[cid].actorUuid`, the EncounterController's stored meta). The
 * encounter counts its own combatants' rounds down and takes their sheets again before
 * each resolve, so an end of round outside it would be counted twice.
 * @param {{token:any, actor:any}[]} participants
 * @param {{id?:string, combatants?:Object<string, {actorUuid?:string}>}|null|undefined} meta
 * @returns {{outside:{token:any, actor:any}[], inEncounter:{token:any, actor:any}[]}}
 */
export function splitByEncounter(participants, meta) {
  const held = new Set(meta?.id ? Object.values(meta.combatants ?? {}).map((c) => c?.actorUuid).filter(Boolean) : []);
  const outside = [];
  const inEncounter = [];
  for (const p of participants ?? []) (held.has(participantOf(p.token, p.actor).actorUuid) ? inEncounter : outside).push(p);
  return { outside, inEncounter };
}

/**
 * Params of `exchange.end_round`. `choices` (revised-2e: `{"<combatant id>": {close:
 * true}}`; power-pool: `{"<controller id>": {release?, keep?, cannot_perceive?}}`),
 * `puppets` (power-pool: creatures the choices are about whose own round does not end
 * here) and
 * `options` are sent only when they hold something: the daemon checks its params strictly.
 */
export function endRoundParams({ system, combatants, choices, puppets, options, dice, seed }) {
  const params = { system, combatants };
  if (choices && typeof choices === "object" && Object.keys(choices).length) params.choices = choices;
  if (Array.isArray(puppets) && puppets.length) params.puppets = puppets;
  if (options && Object.keys(options).length) params.options = options;
  if (dice) params.dice = dice;
  if (seed !== undefined && seed !== null) params.seed = seed;
  return params;
}

/**
 * Whether a revised-2e profile's mind may pay to close at this round's end (RULES.md
 * §1.5), so that the companion is asked its price: open and opened by a critical hit,
 * either this round (`rounds_open` 0: it pays once this round's end is counted and
 * starts the next round closed) or earlier with the previous end of round's word that
 * it still may (`may_pay_to_close`, which the companion sets then). Whether it can pay,
 * and for how much, is the companion's to say.
 * @param {{mind?:{state?:string, opened_by?:string|null, may_pay_to_close?:boolean, rounds_open?:number}}|null|undefined} profile
 */
export function mayPayToClose(profile) {
  const mind = profile?.mind;
  if (mind?.state !== "open" || mind.opened_by !== "critical") return false;
  return Boolean(mind.may_pay_to_close) || !(Number(mind.rounds_open) > 0);
}

/**
 * The id the companion gives a participant of a round (the `foundry.*` adapters' ids, the
 * keys of `exchange.end_round` `choices`): the actor's id, `<actor id>-<token id>` for an
 * unlinked token (its own synthetic actor).
 */
export function roundCombatantId(token, actor) {
  return token && !token.actorLink ? `${actor.id}-${token.id}` : actor.id;
}

/**
 * Whether a power-pool profile shows the creature controlling someone (`controlling`
 * non-empty): the tracker offers such a participant its control at the round's end.
 * @param {{controlling?:unknown[]}|null|undefined} profile
 */
export function controlsSomeone(profile) {
  return Array.isArray(profile?.controlling) && profile.controlling.length > 0;
}

/**
 * The control links the companion offers one controller at the round's end
 * (`exchange.round_end_choices`, power-pool `choices`: `release` lists every link;
 * `keep` the other way to keep it, a die only from a pool that has one; `cannot_perceive`
 * the links kept by an action), each with what may be chosen for it. A psionic wave's
 * creatures are one link (`targets`). A link in `ends` (kept by an action by a
 * controller that cannot act: it ends as the round ends whatever is chosen) is marked
 * `ends`: there is nothing to ask about it. `answers` are the control dialog's values for it:
 * "hold" (nothing is sent) or the `exchange.end_round` choice list the link goes in.
 * @param {{release?:object[], keep?:object[], cannot_perceive?:object[]}|null|undefined} offer
 * @returns {{targets:string[], keptBy:string, wave:string|null, keepBy:"die"|"action"|null, mayLoseSight:boolean, answers:string[], ends:boolean}[]}
 */
export function controlLinks(offer) {
  const same = (a, b) => JSON.stringify(a?.targets ?? []) === JSON.stringify(b?.targets ?? []);
  const ending = Array.isArray(offer?.ends) ? offer.ends : [];
  return (Array.isArray(offer?.release) ? offer.release : [])
    .filter((link) => Array.isArray(link?.targets) && link.targets.length)
    .map((link) => {
      const keep = (offer.keep ?? []).find((k) => same(k, link));
      const keepBy = keep?.by === "die" || keep?.by === "action" ? keep.by : null;
      const mayLoseSight = (offer.cannot_perceive ?? []).some((k) => same(k, link));
      const answers = ["hold", "release", ...(keepBy ? ["keep"] : []), ...(mayLoseSight ? ["cannot_perceive"] : [])];
      const ends = ending.some((e) => same(e, link));
      return { targets: [...link.targets], keptBy: link.kept_by, wave: link.wave ?? null, keepBy, mayLoseSight, answers, ends };
    });
}

/**
 * One controller's `exchange.end_round` choice from the answer for each of its links
 * (`controlLinks`, in order): `release` and `cannot_perceive` name the link's first
 * creature (any creature names the whole link), `keep` keeps it the other way. An
 * answer the link was not offered (a stale or forged one), or none, holds it. Null when
 * every link holds.
 * @param {ReturnType<typeof controlLinks>} links
 * @param {string[]} answers
 * @returns {{release?:string[], keep?:{target:string, by:string}[], cannot_perceive?:string[]}|null}
 */
export function controlChoice(links, answers) {
  const choice = {};
  links.forEach((link, i) => {
    const answer = answers?.[i];
    if (answer === "hold" || !link.answers.includes(answer)) return;
    const target = link.targets[0];
    (choice[answer] ??= []).push(answer === "keep" ? { target, by: link.keepBy } : target);
  });
  return Object.keys(choice).length ? choice : null;
}

/**
 * The creatures a controller's choice is about: every creature of each link it names
 * (`release`, `keep`, `cannot_perceive`; any creature names its whole link), in the
 * order named. A creature id that names no link adds nobody (the companion refuses it).
 * @param {ReturnType<typeof controlLinks>} links
 * @param {{release?:string[], keep?:{target:string}[], cannot_perceive?:string[]}|null|undefined} choice
 * @returns {string[]}
 */
export function namedBy(links, choice) {
  const ids = [
    ...[].concat(choice?.cannot_perceive ?? []),
    ...[].concat(choice?.release ?? []),
    ...[].concat(choice?.keep ?? []).map((k) => k?.target),
  ];
  return [...new Set(ids.flatMap((id) => links.find((l) => l.targets.includes(id))?.targets ?? []))];
}
