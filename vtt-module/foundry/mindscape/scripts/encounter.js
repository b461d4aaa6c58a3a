/**
 * Multi-exchange rounds: an encounter held by the daemon (`encounter.*`), a GM-side
 * controller that asks each owner for a secret choice through the relay, a WebSocket
 * watcher for `encounter.changed`, and the panel that shows it all.
 */
import { DEFENSE_REASKS, MODULE_ID } from "./consts.js";
import {
  AddRefusedError, DaemonFaultError, DaemonHttpError, DaemonUnreachableError, InvalidParamsError, NotFoundError, PermissionDeniedError, RefreshRefusedError, RpcError, RulesError, StaleRevisionError, UsageError,
  describeError,
} from "./errors.js";
import { attackFromForm, declineBoxes, declinedFor, defenseFromChoice, dispositionOf, knownModes, modesFromDescription, RANGES } from "./requests.js";
import { applyPlan, participantOf, planUpdates } from "./updates.js";
import { callWithPhysicalDice } from "./rpc.js";
import { houseRulesFor, setSetting, setting } from "./settings.js";
import { conditionsText, filled, idLabel } from "./labels.js";
import { namedSummary } from "./chat.js";

/** Stances of combat-strength's intent phase (RULES.md §2.3). */
/**
 * power-pool's public actions: the companion applies them when they are declared
 * (`encounter.choice_is_public`), so their answer may carry write-backs.
 */
const POOL_PUBLIC_ACTIONS = ["pass", "release", "keep", "cannot_perceive", "rest"];

/** How a notice names what was stored before its write-back. */
const STEP_WORDS = { step: "MINDSCAPE.Encounter.TheStep", undo: "MINDSCAPE.Encounter.TheUndo", action: "MINDSCAPE.Encounter.TheAction" };

/** The companion's refusal of an undo when no resolved step is left (4001 `data.rule`). */
const NOTHING_TO_UNDO = "undo-needs-a-resolved-step";

export const STANCES = ["trance", "discipline", "wave", "normal"];

/** The suffixes of a revised-2e choice form's further attacks (the engine takes at most 4). */
const FURTHER_ATTACKS = ["2", "3", "4"];

/**
 * The `choice` object of `encounter.declare` from a submitted choice form.
 * @param {string} system
 * @param {{phase?:string}} state
 * @param {object} form  fields: stance, attackMode, target, multiplier, range, pool_dice, defenseMode, sacrifice
 */
export function choiceFromForm(system, state, form) {
  if (system === "power-pool") return poolChoiceFromForm(state, form);
  const choice = {};
  if (form.stance) choice.stance = form.stance;
  // revised-2e: pay to close a mind a critical hit opened last round (the companion's
  // price, `close_offers` of the encounter's view).
  if (form.close === true) choice.close = true;
  // revised-2e: a psionicist allowed more than one attack this round (RULES.md §1.8, the
  // view's `attacks_allowed`) gives the further ones as attackMode2, target2, ...; the
  // companion then takes them all as `attacks`.
  const attacks = [""].concat(system === "revised-2e" ? FURTHER_ATTACKS : [])
    .filter((n) => form[`attackMode${n}`] && form[`target${n}`])
    .map((n) => ({ ...attackFromForm(system, n ? { mode: form[`attackMode${n}`], multiplier: form[`multiplier${n}`], range: form[`range${n}`] } : { ...form, mode: form.attackMode }), target: form[`target${n}`] }));
  if (attacks.length > 1) choice.attacks = attacks;
  else if (attacks.length) choice.attack = attacks[0];
  const defense = defenseFromChoice(system, { mode: form.defenseMode || null, sacrifice: form.sacrifice });
  if (defense) choice.defense = defense;
  return choice;
}

/**
 * power-pool's choice from the dialog (RULES.md §3, the companion's `encounter.choice`):
 * one thing at a time. A public action chosen under *Instead* (pass, rest; release,
 * keep or cannot-perceive for a creature this one controls); else, in the defense phase,
 * the defense (no mode still rolls the pool; `allies` drawn into an imagination swarm);
 * else the attack (`targets`: the further targets of a psionic wave; `keep_by`), or a
 * pass when no attack was chosen.
 */
function poolChoiceFromForm(state, form) {
  const target = form.controlTarget || null;
  if (form.action === "pass") return { pass: true };
  if (form.action === "rest") return { rest: true };
  if (form.action === "release" && target) return { release: target };
  if (form.action === "cannot_perceive" && target) return { cannot_perceive: target };
  if (form.action === "keep" && target) return { keep: { target, by: form.keepBy === "action" ? "action" : "die" } };
  const list = (value) => [].concat(value ?? []).filter(Boolean);
  if (state?.phase === "defense") {
    const defense = defenseFromChoice("power-pool", { mode: form.defenseMode || null, sacrifice: form.sacrifice }) ?? {};
    const allies = list(form.allies);
    if (allies.length) defense.allies = allies;
    return { defense };
  }
  if (!form.attackMode || !form.target) return { pass: true };
  const attack = { ...attackFromForm("power-pool", { ...form, mode: form.attackMode }), target: form.target };
  // Further targets only for a mode that strikes several (psionic-wave): the dialog
  // names those modes (`waveModes`), and any other refuses `targets`.
  const waves = String(form.waveModes ?? "").split(",");
  const more = list(form.waveTargets).filter((id) => id !== form.target);
  if (more.length && waves.includes(form.attackMode)) attack.targets = more;
  if (form.attackKeepBy === "die" || form.attackKeepBy === "action") attack.keep_by = form.attackKeepBy;
  // An effect spared only with a mode that has it as optional (`declineModes`: the
  // dialog's "mode:condition" pairs); the companion refuses any other.
  const decline = declinedFor(form.decline, form.declineModes, form.attackMode);
  if (decline.length) attack.decline = decline;
  else delete attack.decline;
  return { attack };
}

/**
 * power-pool's defense phase: the minds struck, which defend (the view's `struck`: each
 * target, or its controller in its place, the group's leader first), whether or not
 * they may still choose; from a companion without `struck`, those still to choose.
 */
function struckOf(state) {
  return state?.struck ?? state?.waiting_for ?? [];
}

/** One combatant of `encounter.get`'s view (its `combatants` as a map or a list), or null. */
function combatantView(state, id) {
  const list = state?.combatants;
  return (Array.isArray(list) ? list.find((c) => c?.id === id) : list?.[id]) ?? null;
}

/** The names of `list` (each `{ name }`: a token or combatant), each name once, for a notice. */
function namesOnce(list) {
  return [...new Set(list.map((x) => x.name))].join(", ");
}

/** The names of combatants `cids` of encounter `meta` (its name for each, else the id), each name once, for a notice. */
function namesOf(meta, cids) {
  return namesOnce(cids.map((cid) => ({ name: meta.combatants?.[cid]?.name ?? cid })));
}

/**
 * The uuids a step's updates may address combatant `entry` of an encounter's meta by: its
 * actor as `add` saw it, its token, and with a token the token's actor either way (its
 * world actor and its own synthetic one, whose id is the world actor's): `actorLink`
 * turned on or off since `add` makes the companion write to the other from the next
 * refresh on, and the meta keeps the actor `add` saw.
 */
function addressesOf(entry) {
  const id = typeof entry?.actorUuid === "string" ? entry.actorUuid.split(".").at(-1) : "";
  const out = [entry?.actorUuid, entry?.tokenUuid];
  if (entry?.tokenUuid && id) out.push(`${entry.tokenUuid}.Actor.${id}`, `Actor.${id}`);
  return [...new Set(out.filter((uuid) => typeof uuid === "string" && uuid))];
}

/**
 * Short state line of a combatant for the panel, in the system's own terms
 * (`MINDSCAPE.Encounter.Summary.<system>`, filled with the combatant's fields: "PSP
 * 38/40"); "" for a system the language file has no line for (a plugin's).
 */
export function combatantSummary(system, c = {}, label = (_k, f) => f) {
  return filled(label, `MINDSCAPE.Encounter.Summary.${system}`, c, "?") ?? "";
}

/**
 * The panel's template context from `encounter.get` and the module's map of combatants.
 * `encounter.get` may list combatants as a map or a list; both are accepted.
 */
export function encounterView(state, meta, label = (_k, f) => f) {
  if (!state) return { active: false };
  const system = meta.system;
  const waiting = new Set(state.waiting_for ?? []);
  const publicActions = system === "power-pool" && state.phase === "attack";
  const list = Array.isArray(state.combatants)
    ? state.combatants.map((c) => [c.id, c])
    : Object.entries(state.combatants ?? {});
  const combatants = list.map(([id, c]) => ({
    id,
    name: meta.combatants?.[id]?.name ?? c?.name ?? id,
    summary: combatantSummary(system, c, label),
    mind: c?.mind?.state ? idLabel(label, "Mind", c.mind.state) : null,
    mindOpen: c?.mind?.state === "open",
    conditions: conditionsText(c?.conditions, label),
    waiting: waiting.has(id),
    // power-pool's public actions (rest, pass, release, keep, lost sight) between
    // exchanges, for anyone: also one the round no longer waits for (it has attacked,
    // its pool is empty), which *Ask for choices* does not ask (`EncounterController#act`).
    act: publicActions,
    // A write-back missed this sheet: the encounter keeps its own copy (EncounterController#applyStep).
    held: Boolean(meta.held?.[id]),
  }));
  return {
    active: true,
    id: meta.id,
    name: meta.name ?? state.name ?? meta.id,
    system,
    systemLabel: label(`MINDSCAPE.System.${system}`, system),
    phase: state.phase ?? "",
    // "round 2" already says it for systems whose only phase is the round.
    phaseLabel: state.phase && state.phase !== "round" ? idLabel(label, "Phase", state.phase) : "",
    round: state.round ?? null,
    segment: state.segment ?? null,
    revision: state.revision ?? null,
    combatants,
    waitingNames: combatants.filter((c) => c.waiting).map((c) => c.name).join(", "),
    ready: waiting.size === 0 && combatants.length > 0,
  };
}

/** The exchange results inside a resolved step (one result, a list, or `{results|exchanges|steps}`). */
export function resultsOfStep(step) {
  if (!step) return [];
  if (Array.isArray(step)) return step.flatMap(resultsOfStep);
  for (const key of ["results", "exchanges", "step", "resolved"]) {
    if (step[key] && typeof step[key] === "object") return resultsOfStep(step[key]);
  }
  return step.outcome !== undefined || step.rolls ? [step] : [];
}

/**
 * The attack and defense a result names (`mode` and `defense` as ids, or as objects;
 * combat-strength names its defense `defense_mode`).
 */
export function modesOfResult(result) {
  const attack = result.attack && typeof result.attack === "object" ? result.attack : (result.mode ? { mode: result.mode } : {});
  const d = result.defense ?? result.defense_mode;
  const defense = typeof d === "string" ? { mode: d } : (d && typeof d === "object" && d.mode ? d : null);
  return { attack, defense };
}

/**
 * The notification line of a refresh: each combatant whose sheet changed, with the fields
 * the companion took again in the order it names them (`Fenka (Conditions, PSPs); Goblin
 * (Hit points)`), or "" when every sheet matched the encounter.
 * @param {{name:string, changed:string[]}[]} refreshed  `EncounterController#refresh`'s answer
 * @param {(key:string, fallback:string)=>string} label
 */
export function refreshReport(refreshed, label = (_k, f) => f) {
  return (refreshed ?? [])
    .filter((r) => r.changed?.length)
    .map((r) => `${r.name} (${r.changed.map((f) => label(`MINDSCAPE.Field.${f}`, f.replace(/_/g, " "))).join(", ")})`)
    .join("; ");
}

/**
 * The combatants a refresh left as the encounter holds them, because a write-back missed
 * their sheets (`held`), by name, or "" when there were none.
 * @param {{name:string, held?:boolean}[]} refreshed
 */
export function heldReport(refreshed) {
  return (refreshed ?? []).filter((r) => r.held).map((r) => r.name).join(", ");
}

/**
 * Who must declare again after a refresh: the names of the combatants whose declared
 * choice the companion dropped because the sheets no longer allow it (`dropped_choices`),
 * or "" when nobody's was.
 * @param {{combatantId:string, name:string, dropped?:string[]}[]} refreshed
 */
export function droppedReport(refreshed) {
  const names = new Map((refreshed ?? []).map((r) => [r.combatantId, r.name]));
  const ids = [...new Set((refreshed ?? []).flatMap((r) => r.dropped ?? []))];
  return ids.map((id) => names.get(id) ?? id).join(", ");
}

/**
 * revised-2e: the PSPs each combatant paid for the defense it raised at the start of a
 * round, before any exchange (the step's `defense-raised` and `psp-spent` "defense"
 * events), by combatant id: `{amount, mode}`. The exchanges' `before` come after it.
 * @returns {Map<string, {amount:number, mode:string|null}>}
 */
export function defensePayments(step) {
  const paid = new Map();
  const modes = new Map((step?.events ?? []).filter((e) => e?.type === "defense-raised").map((e) => [e.combatant, e.mode ?? null]));
  for (const e of step?.events ?? []) {
    if (e?.type !== "psp-spent" || e.for !== "defense" || !(Number(e.amount) > 0)) continue;
    const amount = (paid.get(e.combatant)?.amount ?? 0) + Number(e.amount);
    paid.set(e.combatant, { amount, mode: modes.get(e.combatant) ?? null });
  }
  return paid;
}

/** Every write-back update in a step's answer, wherever the daemon put it. */
export function updatesOfStep(answer) {
  const out = [...(answer?.updates ?? [])];
  for (const r of resultsOfStep(answer)) if (r !== answer) out.push(...(r.updates ?? []));
  return out;
}

/** The value at a dotted path of a document (`flags.mindscape.revised-2e.psp`), or undefined. */
function valueAt(doc, path) {
  return path.split(".").reduce((o, k) => (o === null || o === undefined ? undefined : o[k]), doc);
}

/** Whether a dotted path is Foundry's deletion of a key (`p.-=k`). */
function isDeletion(path) {
  return path.split(".").some((k) => k.startsWith("-="));
}

/** The paths an update sets (its `-=` deletions left out: they hold no value to compare). */
function setPaths(update) {
  return Object.keys(update ?? {}).filter((path) => !isDeletion(path));
}

/**
 * A write that missed a combatant's sheet, to try again: `{uuid, update, expect}`, where
 * `expect` holds what the sheet showed at those paths when the write failed (a sheet
 * changed since, by the GM's hand, is not written over). `older` is a write still waiting
 * for the same document: the newer values win (`withoutWritten`: an older entry that
 * touches a field the newer writes is dropped, as Foundry applies the keys in order and
 * an older `p.-=k` kept before a newer `p` would delete the `k` it sets), the older
 * expectations of the paths still written stay.
 */
function pendingWrite(doc, uuid, update, older = null) {
  const expect = Object.fromEntries(setPaths(update).map((path) => [path, doc ? valueAt(doc, path) ?? null : null]));
  return laterWrite(older, { uuid, update, expect });
}

/** `later`, a write of `older`'s document made after it, merged into it as `pendingWrite` says (null `older`: `later` itself). */
function laterWrite(older, later) {
  if (!older) return later;
  const update = { ...withoutWritten(older, later.update)?.update, ...later.update };
  const kept = Object.fromEntries(Object.entries(older.expect).filter(([path]) => path in update));
  return { uuid: later.uuid, update, expect: { ...later.expect, ...kept } };
}

/** A dotted path's keys, Foundry's deletion `-=key` read as the key it deletes. */
function keysOf(path) {
  return path.split(".").map((k) => k.replace(/^-=/, ""));
}

/**
 * Whether writes at dotted paths `a` and `b` touch the same field: the same path, or one
 * inside the other (`p` and `p.-=k`). The companion writes a field whole, with the
 * deletions of the keys it no longer holds, so a later write of either supersedes the
 * earlier one of both.
 *
 * This assumes every write sets a field whole: a later write inside an earlier one
 * (`m.mind.a` after `m.mind = {a, b}`) is taken to replace the earlier whole, though
 * Foundry would merge it and keep `b`. That holds because the writes compared here are
 * the adapter's write-backs of the companion's whole-field updates; a caller writing
 * part of a field would need the inner path kept instead.
 */
function overlaps(a, b) {
  const [x, y] = [keysOf(a), keysOf(b)];
  return x.slice(0, Math.min(x.length, y.length)).every((k, i) => k === y[i]);
}

/** `write` without the paths a later `update` of its document touches (`overlaps`), or null when none is left. */
function withoutWritten(write, update) {
  const later = Object.keys(update);
  const left = Object.fromEntries(Object.entries(write.update).filter(([path]) => !later.some((p) => overlaps(path, p))));
  if (!Object.keys(left).length) return null;
  const expect = Object.fromEntries(Object.entries(write.expect).filter(([path]) => path in left));
  return { ...write, update: left, expect };
}

/** The entries of `update` at paths that touch one of `paths` (`overlaps`). */
function touching(update, paths) {
  return Object.fromEntries(Object.entries(update).filter(([path]) => paths.some((p) => overlaps(path, p))));
}

/**
 * Fold what a step of an ended encounter did into `behind` (document uuid → `{cids,
 * write}`: the write the GM is to make by hand, and the combatants of that document).
 * `landed` (`{uuid, update, cids}`): a write that landed takes the fields it wrote off
 * the waiting write (`withoutWritten`); `missed` (`{cids, write}`, `pendingWrite`s): a
 * write Foundry missed waits in its place, the newer values winning (`laterWrite`). Steps
 * are folded in the order they finished; those on the same actors run in that order in
 * the exchange queue, so the later one's values are the newer.
 * @returns {{rewritten: {cids:string[], write:object}[], replaced: object[]}}  the fields
 *   landed writes took off (as they wrote them) and the older entries missed writes replaced
 */
function foldStep(behind, { landed = [], missed = [] }) {
  const rewritten = [];
  const replaced = [];
  for (const { uuid, update, cids } of landed) {
    const before = behind.get(uuid);
    if (!before) continue;
    const fields = touching(update, Object.keys(before.write.update));
    if (Object.keys(fields).length) rewritten.push({ cids, write: { uuid, update: fields } });
    const left = withoutWritten(before.write, update);
    if (left) behind.set(uuid, { ...before, write: left });
    else behind.delete(uuid);
  }
  for (const { cids, write } of missed) {
    const before = behind.get(write.uuid);
    const older = before ? touching(before.write.update, Object.keys(write.update)) : {};
    if (Object.keys(older).length) replaced.push({ uuid: write.uuid, update: older });
    behind.set(write.uuid, { cids: [...new Set([...(before?.cids ?? []), ...cids])], write: laterWrite(before?.write ?? null, write) });
  }
  return { rewritten, replaced };
}

/**
 * Whether `error`, an `encounter.add`'s, leaves it unknown whether the companion took
 * the token: the request may have reached it and the answer been lost (the connection
 * broke, something between answered instead of it, or it failed after storing the
 * add). A refusal (−32602, 4001, 4004, 4009, 5003) says it did not.
 */
function answerMayBeLost(error) {
  return error instanceof DaemonUnreachableError || error instanceof DaemonHttpError || error instanceof DaemonFaultError;
}

/** Whether `error` is the companion's refusal of a combatant as in the encounter already (−32602 at /combatant/id, the id the adapter made). */
function refusedAsIn(error) {
  return error instanceof InvalidParamsError && (error.data.errors ?? []).some((p) => p?.path === "/combatant/id");
}

/**
 * Whether `kept`, the `{adapter, data}` an encounter's log keeps of an add
 * (docs/ADAPTERS.md "What an encounter keeps of a sheet": the actor's `_id`, the token's
 * `uuid` and `actorLink`), is of the creature `sent` is (`combatantRef`): the same
 * actor, through the same unlinked token (each its own creature) or through none or a
 * linked one (one creature), as add tells creatures apart (`participantOf`).
 */
function sameCreature(kept, sent) {
  const data = kept?.data;
  const actorId = (d) => (d?.actor && typeof d.actor === "object" ? d.actor._id : d?._id);
  const ownToken = (d) => (d?.token && !d.token.actorLink ? d.token.uuid : null);
  return String(kept?.adapter).startsWith("foundry.") && actorId(data) === sent.data.actor._id && ownToken(data) === ownToken(sent.data);
}

/**
 * GM-side encounter logic. `svc` is the Mindscape service (rpc, docs, relay, dialogs).
 */
export class EncounterController {
  constructor(svc) {
    this.svc = svc;
    // power-pool: the questions whether a creature joins a defense still open, whichever
    // *Ask for choices* made them (a resolve waits for every one), and the combatants
    // they ask (not asked again while their question is open).
    this.joinQuestions = new Set();
    this.askingJoin = new Set();
    // The combatants whose choice is being asked (`askOne`): a second *Ask for choices*
    // while the question is open does not ask it again.
    this.askingChoice = new Set();
    // power-pool: the combatants asked for an attack (the attack phase asks one at a
    // time, `collectChoices`): while one is, a second *Ask for choices* asks nobody else.
    this.askingAttack = new Set();
    // power-pool: the combatants that answered Stay out to joining the defense against
    // the attack `attack` (its encounter, round, exchange and minds struck): a later ask
    // leaves them be. An attack declared again at the same minds in the same exchange
    // cannot be told apart from the first (the view keeps attacks secret): the answer stands.
    this.declinedJoin = { attack: null, ids: new Set() };
    // The encounters an End is ending (`endNow`), and the meta writes under way (a hold's,
    // `saveHeld`; a deleted token's record, `tokenDeleted`; add's last save): a hold comes
    // into an encounter before End reads it, or not at all, and each write waits for those
    // under way before it reads the meta, so none writes an older meta over another.
    this.endedIds = new Set();
    this.heldSaves = new Set();
    // Those of `endedIds` a new encounter replaced (`createNow`) rather than End: a
    // notice about one says so, not that the GM ended it (`stepCall`).
    this.replacedIds = new Set();
    // By ended encounter id (`endedRecord`): the writes the GM is to make by hand
    // (`behind`, see `foldStep`), whether End told them yet (`told`), and until then what
    // steps finishing after End started did (`steps`, in the order they finished), so
    // that no notice tells the GM to set a value older than the sheet's
    // (`tellWaitingWrites`, `tellStepAfterEnd`). Dropped once nothing can reach it
    // (`forgetEnded`).
    this.afterEnd = new Map();
    // The steps (resolves, undos, public actions) and adds under way, by the id of the
    // encounter they were asked of (`stepOf`): a set of `{ run }` each, `run` the step's
    // promise, what `tellSetElsewhere` waits for; an id is here only while one is.
    this.stepsUnderWay = new Map();
    // Whether each token Foundry deleted in this session was linked then, by token uuid
    // (`tokenDeleted`): known here at once, while the record in the encounter's meta
    // (`deletedLinked`, which lasts through a reload) is still being stored.
    this.deletedTokens = new Map();
    // The encounter's meta as this client last saw it (`seeMeta`, `encounterSet`): Foundry
    // tells a change of the setting with the new value only.
    this.seenMeta = null;
    // By encounter id, while `tellSetElsewhere` waits for its steps: what those steps
    // did (`tellStepAfterEnd`: `{landed, missed}`, as `foldStep` takes), in the order they
    // finished, newer than its holds and told with them.
    this.setElsewhereSteps = new Map();
  }

  get game() { return this.svc.game; }

  /** The current encounter's stored meta: {id, system, name, combatants: {cid: {tokenUuid, actorUuid, name, disposition, deletedLinked?}}, held?, gone?}. */
  get meta() { return setting(this.game, "encounter") ?? {}; }

  /**
   * Store the current encounter's meta. End and Create pass `told`, the id of the
   * encounter they end or replace, whose waiting writes they tell themselves: it goes
   * with the change to every client (`encounterSet`), so that no other tells them again.
   */
  async saveMeta(meta, { told = null } = {}) {
    await setSetting(this.game, "encounter", meta, told ? { mindscape: { told } } : {});
  }

  /** Note the current meta as this client sees it now (at "ready"): what a change of the setting replaces (`encounterSet`). */
  seeMeta() { this.seenMeta = structuredClone(this.meta); }

  /**
   * The world's encounter setting changed (settings.js `onChange`, on every client;
   * `options` as its writer gave them). The new meta is read from the setting, which
   * holds it by then: the value Foundry hands `onChange` need not be what `get` returns
   * (a world setting's is stored as JSON). When the encounter it held stopped being
   * the current one and the change is not an End's or a Create's of this module (which
   * mark it with that encounter's id, `saveMeta`, and tell its waiting writes in the
   * browser where they were pressed), but a macro's or a script's, nobody else tells the
   * writes Foundry missed that waited in it (`held`): the active GM's client does, once
   * (`tellSetElsewhere`). A client that saw no meta before (`seeMeta`) tells nothing,
   * nor one where End or Create is ending that encounter (`endingHere`): a macro's
   * change landing while they wait for the meta writes under way or the companion leaves
   * them telling its writes all the same (`stillOr`), so the GM is told them once.
   * The active GM's client also drops a deletion's record left on a token that is there
   * again (`clearBack`).
   * @returns {Promise<void>|null}  the telling and clearing, if any
   */
  encounterSet(options) {
    const was = this.seenMeta;
    const now = structuredClone(this.meta);
    this.seenMeta = now;
    if (!this.svc.relay?.isActiveGM) return null;
    const told = !was?.id || was.id === now.id || options?.mindscape?.told === was.id || this.endingHere(was.id)
      ? null
      : this.tellSetElsewhere(was).catch((error) => this.svc.notifyError(error));
    return Promise.all([told, this.clearBack(now)]).then(() => undefined);
  }

  /**
   * Whether End or Create, under way here (`ending`, `creating`), is ending encounter
   * `id` (`endedIds`) and so tells its waiting writes. Not once it stopped: one whose
   * store failed left the encounter current, and nothing here tells its writes then.
   */
  endingHere(id) {
    return Boolean(this.ending || this.creating) && this.endedIds.has(id);
  }

  /**
   * Drop the record of a deletion (`deletedLinked`) from the entries of `meta` whose token
   * is there again (`recordLinked`). The undo of a deletion clears it (`tokenCreated`),
   * but only in the active GM's client: one that stopped being the active GM while its
   * record of the deletion was on its way to the server stores it after the new active
   * GM's client found nothing to clear, and this client, hearing that store, clears it.
   * @returns {Promise<void>}
   */
  async clearBack(meta) {
    for (const entry of Object.values(meta.combatants ?? {})) {
      if (entry?.deletedLinked !== true || !entry.tokenUuid) continue;
      if (await this.svc.env.fromUuid(entry.tokenUuid).catch(() => null)) await this.recordLinked(entry.tokenUuid, false);
    }
  }

  /**
   * Tell the GM, in a notice that stays (`SetElsewhereBehind`), the writes Foundry missed
   * that waited in encounter `was` (its meta before the setting changed outside End and
   * Create): nothing tries them again now. A held field whose sheet no longer shows what
   * it showed when the write missed is left out (a step's retry wrote it after all, or
   * the GM did). A step of it under way here finishes first, and is folded in after them
   * as at End (`foldStep`): a field it wrote is left out (it may have written back what
   * the sheet showed when the hold's write missed, as an undo does, so the sheet alone
   * does not show it), and a write it missed is told in the same notice, its value the
   * newer, rather than in one of its own (`tellStepAfterEnd`): a second notice of the same
   * change. A write whose document
   * is gone (its token or actor deleted: no sheet to put right) is left out too. A hold
   * without a write (the companion's) was told when it was made.
   */
  async tellSetElsewhere(was) {
    const steps = [];
    this.setElsewhereSteps.set(was.id, steps);
    try {
      while (this.stepsUnderWay.has(was.id)) await Promise.allSettled([...this.stepsUnderWay.get(was.id)].map((s) => s.run));
    } finally {
      this.setElsewhereSteps.delete(was.id);
    }
    const behind = new Map();
    for (const [cid, hold] of Object.entries(was.held ?? {})) {
      const write = hold?.write;
      const doc = write ? await this.svc.env.fromUuid(write.uuid).catch(() => null) : null;
      if (!doc) continue;
      const changed = setPaths(write.update).filter((path) => JSON.stringify(valueAt(doc, path) ?? null) !== JSON.stringify(write.expect?.[path] ?? null));
      const left = changed.length ? withoutWritten(write, Object.fromEntries(changed.map((path) => [path, null]))) : write;
      if (left) foldStep(behind, { missed: [{ cids: [cid], write: left }] });
    }
    for (const step of steps) foldStep(behind, step);
    for (const uuid of behind.keys()) {
      if (!(await this.svc.env.fromUuid(uuid).catch(() => null))) behind.delete(uuid);
    }
    if (!behind.size) return;
    const told = [...behind.values()];
    this.svc.notify("warn", this.svc.t.format("MINDSCAPE.Encounter.SetElsewhereBehind", { names: namesOf(was, told.flatMap((b) => b.cids)), writes: this.writesWords(told.map((b) => b.write)) }), { permanent: true });
  }

  /**
   * The current meta while it is still encounter `copy`'s (with what was stored into it
   * since, holds among them), else `copy` as it was read: what End or Create tells of the
   * encounter it ends or replaces, also once another was set elsewhere.
   */
  stillOr(copy) { return this.meta.id === copy.id ? this.meta : copy; }

  /** Store `meta` as one of the meta writes under way (`heldSaves`), which later ones wait for. */
  async saveTracked(meta) {
    const saving = this.saveMeta(meta);
    this.heldSaves.add(saving);
    try {
      await saving;
    } finally {
      this.heldSaves.delete(saving);
    }
  }

  /** Once no meta write is under way (`heldSaves`), also one started while this waited. */
  async metaWritesLanded() {
    while (this.heldSaves.size) await Promise.allSettled([...this.heldSaves]);
  }

  /**
   * Create an encounter with the given tokens (uuids). A create asked while one is under
   * way (a double click on *Create from selected tokens*) is that one: one encounter.
   */
  create(tokenUuids, name) {
    this.creating ??= this.createNow(tokenUuids, name).finally(() => { this.creating = null; });
    return this.creating;
  }

  /**
   * `create`, once. An encounter this one replaces (the panel offers *Create* when it
   * cannot get the current one from the companion) ends here: its waiting writes are
   * told as at *End* (`tellWaitingWrites`), in words of a replaced encounter (`replacedIds`),
   * also when another was set elsewhere while the holds under way landed.
   * An End still ending the current encounter is waited for, also one pressed while the
   * companion made the new one: that encounter is End's to tell (in its own words, once),
   * and its last save must not wipe the new one.
   */
  async createNow(tokenUuids, name) {
    await this.ending?.catch(() => null);
    const system = this.svc.system;
    const made = await this.svc.rpc("encounter.create", { system, name: name ?? this.svc.t.localize("MINDSCAPE.Encounter.DefaultName"), options: houseRulesFor(this.game, system) });
    // An End pressed while the companion made it is waited for too: until it stored its
    // last save ({}), the meta read here may still be the encounter it is ending.
    await this.ending?.catch(() => null);
    // The replaced encounter ends as at End (`endNow`).
    const taken = structuredClone(this.meta);
    if (taken.id) {
      this.endedIds.add(taken.id);
      this.replacedIds.add(taken.id);
    }
    await Promise.allSettled([...this.heldSaves]);
    // With the holds stored meanwhile; when another encounter was set elsewhere
    // meanwhile, the one taken over as it was: its writes are told all the same.
    const replaced = this.stillOr(taken);
    await this.saveMeta({ id: made.id, system, name, combatants: {} }, { told: replaced.id });
    await this.tellWaitingWrites(replaced);
    // Not `add`, which would wait for this very Create.
    await this.addNow(tokenUuids);
    return made;
  }

  /**
   * Add tokens to the current encounter. A creature already in it (by its actor as seen
   * through the token: a linked actor's other token is the same creature) is not sent
   * again, which the companion would refuse; the GM is told whom, and told to select
   * tokens when none are. Nothing is stored once the encounter ended meanwhile (*End*
   * pressed while Create adds its tokens) or a new one replaced it; a token the companion
   * then refuses as it forgot the encounter (`forgotten`) ends this quietly, as End (or
   * Create) told the GM. Counted as under way (`stepOf`), so that End does not forget it
   * ended the encounter here before this hears the companion's refusal. One ended or
   * replaced elsewhere meanwhile, which nothing told this GM of, is told: the
   * tokens the companion took are named in a notice that stays (`keepAdded`), or, when
   * it refused the first it was sent as it no longer knows that encounter, the tokens
   * it did not add; the notice also names those skipped (or, after the refused one, not
   * sent) as already in that encounter, and names them on their own when every one was.
   * A token whose answer was lost, or that the companion refuses as in the encounter
   * already while the panel does not hold it, is looked for in the companion's log
   * (`addOne`): one it holds is added as if it had answered. Any other failure at a token
   * (a sheet the companion refuses, a lost connection, the token deleted since it was
   * selected) stops the tokens after it; those the companion
   * took before it are stored all the same, as at the end (`keepAdded`), before the error
   * is thrown (a refused token's, −32602 or 4001, its sheet or a full encounter, as an
   * `AddRefusedError` that names it: with several selected, the companion's words alone
   * do not say which): else they
   * would be in the companion's encounter but not in the panel, and
   * the companion would refuse to add them again. Should storing them fail too, the GM is
   * told of that and the failure is thrown all the same; but when the companion refused a
   * token as it no longer knows an encounter set elsewhere meanwhile, the
   * notice that stays also names the tokens it never got, and is all the GM is told
   * (also when it took none: its NotFound says "start a new encounter", untrue when
   * another is current). A NotFound for an encounter still the current one (its store
   * lost) is thrown as it is. A Create or End under way here (`creating`, `ending`) is waited for before the
   * encounter is read: until it stored its meta (a round trip to the server) the meta
   * read would still be the encounter it replaces or ends, and the tokens would go there.
   * So they go to the new encounter, or, after End, are refused as with no encounter.
   */
  async add(tokenUuids) {
    while (this.creating || this.ending) await Promise.allSettled([this.creating, this.ending]);
    return this.addNow(tokenUuids);
  }

  /** `add` without waiting for a Create or End under way: Create's own add (`createNow`). */
  async addNow(tokenUuids) {
    const meta = structuredClone(this.meta);
    if (!meta.id) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    return this.stepOf(meta.id, () => this.addTo(meta, tokenUuids));
  }

  /** `add`, to encounter `meta` (a copy of the current one's, as add read it). */
  async addTo(meta, tokenUuids) {
    if (!tokenUuids?.length) this.svc.notify("info", this.svc.t.localize("MINDSCAPE.Encounter.NoneSelected"));
    const adapter = await this.svc.adapterId();
    const already = [];
    const sent = [];
    let failure = null;
    // The selected tokens from the one that failed on, which the companion never took.
    let unsent = [];
    for (const [at, uuid] of (tokenUuids ?? []).entries()) {
      let token, actor, added;
      try {
        // A token deleted since it was selected fails here, after those before it were taken.
        ({ token, actor } = await this.svc.docs(uuid));
        const key = participantOf(token, actor).actorUuid;
        if (Object.values(meta.combatants ?? {}).some((c) => c?.actorUuid === key)) {
          already.push({ name: token?.name ?? actor.name, key });
          continue;
        }
        added = await this.addOne(meta, this.svc.ref(actor, token, adapter), token?.name ?? actor.name);
      } catch (error) {
        // End pressed meanwhile (or a new encounter replaced it), and the companion forgot
        // the encounter: End (or Create) told the GM, and nothing is stored (`keepAdded`).
        // Any other failure reaches the GM once the tokens taken before it are stored,
        // a token the companion refused (its sheet, a full encounter) by its name, as the
        // other notices of add.
        if (!this.forgotten(meta.id, error)) {
          failure = error instanceof InvalidParamsError || error instanceof RulesError ? AddRefusedError.of(token?.name ?? actor.name, error, this.svc.t) : error;
          unsent = tokenUuids.slice(at);
        }
        break;
      }
      this.svc.sheetWarnings(added?.warnings, { "": token?.name ?? actor.name });
      sent.push(added.combatant_id);
      // The side its token is on (disposition), for the allies a defense may draw in.
      meta.combatants[added.combatant_id] = { tokenUuid: token?.uuid ?? null, actorUuid: actor.uuid, name: token?.name ?? actor.name, disposition: dispositionOf({ token, actor }) };
    }
    // The companion no longer knows the encounter: should it have stopped being the
    // current one elsewhere, the notice names those tokens too (`keepAdded`),
    // and those of them already in it with the tokens skipped as such.
    const lost = failure instanceof NotFoundError && failure.data?.id === meta.id;
    const rest = lost ? await this.tokenNames(unsent, meta) : { unsent: [], already: [] };
    // A failure before the companion took any token leaves nothing to store: its error is
    // all there is to tell, unless the companion no longer knows an encounter that may
    // have stopped being the current one elsewhere (`keepAdded` tells which),
    // also when the refused token was deleted meanwhile: the NotFound's "start a new
    // encounter" would be untrue with another current, and the tokens skipped as already
    // in that encounter untold.
    if (failure && !sent.length && !lost) throw failure;
    let outcome = "ended";
    try {
      outcome = await this.keepAdded(meta, sent, { unsent: rest.unsent, already: [...already, ...rest.already], refused: lost });
    } catch (error) {
      // Storing them failed too: the GM is told of it, and of the failure that stopped add.
      if (!failure) throw error;
      this.svc.notifyError(error);
    }
    // The notice told what became of every token; the companion's NotFound would only
    // add "start a new encounter", untrue when another is current now.
    if (failure && !(lost && outcome === "elsewhere")) throw failure;
    // Two selected tokens of one linked actor are one creature, named once.
    if (outcome === "stored" && already.length) this.svc.notify("info", this.svc.t.format("MINDSCAPE.Encounter.AlreadyIn", { names: namesOnce(already) }));
    return meta;
  }

  /**
   * `encounter.add` of `combatant` (the ref `combatantRef` makes of the token named
   * `name`) to encounter `meta`: the companion's answer. When the add fails without
   * saying that the companion did not take the token (`answerMayBeLost`), or the
   * companion refuses it as in the encounter already while `meta` does not hold it
   * (`refusedAsIn`: an earlier add whose answer was lost, or one a macro or a script
   * made), its log says whether it holds the token's creature (`heldAs`): if so, that
   * add's answer is this one's, and the GM is told (`AddAnswerLost`, `AddFoundIn`), else
   * the failure stands. Else the GM would be stuck with a creature in the companion's
   * encounter that the panel does not show and the companion refuses to add again.
   */
  async addOne(meta, combatant, name) {
    try {
      return await this.svc.rpc("encounter.add", { id: meta.id, combatant });
    } catch (error) {
      const held = await this.heldAfter(meta, combatant, name, error);
      if (held) return held;
      throw error;
    }
  }

  /**
   * `addOne`'s look in the companion's log after `error`: the add that holds the creature
   * of `combatant` (`{combatant_id, warnings}`), or null. When the log cannot be read
   * either after an answer that may be lost, the GM is told, beside the failure, that the
   * token may have been taken and to add it again once the companion answers
   * (`AddMaybeTaken`): that add is refused as in already, and finds it so.
   */
  async heldAfter(meta, combatant, name, error) {
    const { t } = this.svc;
    const lost = answerMayBeLost(error);
    if (!lost && !refusedAsIn(error)) return null;
    let held;
    try {
      held = await this.heldAs(meta.id, combatant);
    } catch (again) {
      if (lost && answerMayBeLost(again)) this.svc.notify("warn", t.format("MINDSCAPE.Encounter.AddMaybeTaken", { name }), { permanent: true });
      return null;
    }
    if (!held || meta.combatants?.[held.combatant_id]) return null;
    // Keys written out whole, so that the language file's check finds each.
    this.svc.notify("info", t.format(lost ? "MINDSCAPE.Encounter.AddAnswerLost" : "MINDSCAPE.Encounter.AddFoundIn", { name }));
    return held;
  }

  /**
   * What the add in effect (not undone) that put the creature of `combatant` into
   * encounter `id` answered, `{combatant_id, warnings}`, the newest such add in the
   * companion's log; null when it holds no add of that creature. The log's own record
   * of what each add was given (`sameCreature`) is matched, not an id worked out here:
   * the adapter that makes the id stays the only place its rule is written.
   */
  async heldAs(id, combatant) {
    const log = await this.svc.rpc("encounter.log", { id });
    const steps = Array.isArray(log?.steps) ? log.steps : [];
    const add = steps.findLast((s) => s?.kind === "add" && s.undone_by == null && sameCreature(s.params?.combatant, combatant));
    const cid = add?.result?.combatant_id;
    return typeof cid === "string" && cid ? { combatant_id: cid, warnings: add.result.warnings ?? [] } : null;
  }

  /**
   * Store `meta`, into which `add` put the combatants `sent` (the ids the companion gave
   * the tokens it took), whether add got through all its tokens or stopped at a failure.
   * What became of it: "stored"; "ended" when End pressed here ended the encounter
   * meanwhile, or a new encounter made here replaced it (`endedIds`): the companion
   * forgot it, or will be told nothing more of it, and its meta must not come back over
   * what End or Create stored; "elsewhere" when it stopped being the current one elsewhere
   * (another GM's End or Create, a macro or a script), which nothing told this GM of:
   * the tokens the companion took went to an encounter that is no longer the current
   * one, and a notice that stays names them (`AddedElsewhereNone` when no encounter is
   * current now, `AddedElsewhereOther` when another is), and `unsent` ({ name, key }),
   * those the companion refused as it no longer knows that encounter
   * (`AddedElsewhereUnsent`); when it took none, the notice names those it did not add
   * (`NotAddedElsewhereNone`, `NotAddedElsewhereOther`: there is nothing to store).
   * Either notice also names the selected tokens whose creature is `already` in that
   * encounter (those add skipped, and after a refused token those it would have), other
   * than a creature it took in this add (`AddedElsewhereAlready`): to fight in an
   * encounter that is current, they need adding too (but for those in it already, see
   * `tellAddedElsewhere`). `refused`: the companion refused a token as it no longer
   * knows that encounter (with none of them left to name, the GM is told so all the
   * same). With nothing sent and the encounter still the current one, `meta` holds
   * nothing new and is not written again: "stored" all the same.
   */
  async keepAdded(meta, sent, { unsent = [], already = [], refused = false } = {}) {
    // Every meta write under way (a hold's, a deleted token's record) lands first, and
    // this one is waited for in turn (`heldSaves`): none writes an older meta over another.
    await this.metaWritesLanded();
    const now = this.meta;
    if (this.endedIds.has(meta.id)) return "ended";
    if (now.id !== meta.id) {
      this.tellAddedElsewhere(meta, sent, { unsent, already, refused, now });
      return "elsewhere";
    }
    if (!sent.length) return "stored";
    // What was stored meanwhile (holds, a deleted token's record) is kept.
    meta.held = now.held;
    meta.gone = now.gone;
    meta.combatants = { ...meta.combatants, ...now.combatants };
    if (meta.held === undefined) delete meta.held;
    if (meta.gone === undefined) delete meta.gone;
    await this.saveTracked(meta);
    return "stored";
  }

  /**
   * `keepAdded`'s notice that stays, for tokens added to encounter `meta` once it stopped
   * being the current one elsewhere: the combatants the companion took
   * (`sent`), else the tokens it took none of (`unsent`, { name, key }), then the tokens
   * skipped as `already` in it ({ name, key }), each name once and none of a creature
   * taken in this add. What to do depends on whether another encounter is current now
   * (`now`, its meta). With every selected creature in it already, nothing sent, those
   * are named on their own (`AlreadyElsewhereNone`, `AlreadyElsewhereOther`): the
   * "Already in the encounter" notice add gives otherwise would let the GM think them
   * in the current one. Those whose creature is in the encounter current now (the same
   * tokens added there, say by another GM) are named last (`ElsewhereInCurrent`): adding
   * them as the notice says would only tell the GM they are in already. When that is
   * every one of them, the GM has nothing to do, and is told only so, in a notice that
   * goes away (`ElsewhereAllInCurrent`): the notice that stays would tell them to add
   * each, then not to. When the companion refused the first token it was sent
   * (`refused`) and every selected token was deleted since (none taken, none left to
   * name, none skipped), the GM is told only that nothing was added and why, in a notice
   * that goes away (`NotAddedElsewhereGone`): there is nothing left to add, but Add
   * selected must not look as if it did nothing. Says nothing else when no token was
   * taken, refused or skipped.
   */
  tellAddedElsewhere(meta, sent, { unsent, already, refused = false, now }) {
    const { t } = this.svc;
    // Keys written out whole, so that the language file's check finds each.
    const pick = (none, other) => (now.id ? other : none);
    const taken = sent.map((cid) => ({ name: meta.combatants[cid]?.name ?? cid, key: meta.combatants[cid]?.actorUuid }));
    const takenKeys = new Set(taken.map((x) => x.key));
    const skipped = already.filter((a) => !takenKeys.has(a.key));
    const named = [...taken, ...unsent, ...skipped];
    const inNow = new Set(Object.values(now.combatants ?? {}).map((c) => c?.actorUuid));
    const there = named.filter((x) => x.key && inNow.has(x.key));
    if (named.length && there.length === named.length) {
      // Every one is in the encounter current now: nothing to add, nothing to take back.
      this.svc.notify("info", t.format("MINDSCAPE.Encounter.ElsewhereAllInCurrent", { names: namesOnce(named) }));
      return;
    }
    const words = [];
    if (sent.length) {
      words.push(t.format(pick("MINDSCAPE.Encounter.AddedElsewhereNone", "MINDSCAPE.Encounter.AddedElsewhereOther"), { names: namesOf(meta, sent) }));
      if (unsent.length) words.push(t.format("MINDSCAPE.Encounter.AddedElsewhereUnsent", { names: namesOnce(unsent) }));
    } else if (unsent.length) {
      words.push(t.format(pick("MINDSCAPE.Encounter.NotAddedElsewhereNone", "MINDSCAPE.Encounter.NotAddedElsewhereOther"), { names: namesOnce(unsent) }));
    } else if (skipped.length) {
      words.push(t.format(pick("MINDSCAPE.Encounter.AlreadyElsewhereNone", "MINDSCAPE.Encounter.AlreadyElsewhereOther"), { names: namesOnce(skipped) }));
    } else {
      if (refused) this.svc.notify("warn", t.localize("MINDSCAPE.Encounter.NotAddedElsewhereGone"));
      return;
    }
    if ((sent.length || unsent.length) && skipped.length) words.push(t.format("MINDSCAPE.Encounter.AddedElsewhereAlready", { names: namesOnce(skipped) }));
    if (there.length) words.push(t.format("MINDSCAPE.Encounter.ElsewhereInCurrent", { names: namesOnce(there) }));
    this.svc.notify("warn", words.join(" "), { permanent: true });
  }

  /**
   * Of the tokens `uuids` (a token's, else its actor's), those add never got to, each as
   * { name, key } (a token's name, else its actor's; its creature, the actor as seen
   * through the token, as add's own): as `unsent`, those it would still have sent to
   * encounter `meta`, one for each creature and none whose creature came earlier in
   * `uuids`; as `already`, those it would have skipped as their creature is in `meta`
   * (else a token the notice says the companion took would be named as not added too,
   * and one of a creature in that encounter since before this add would be named
   * nowhere). A document not found is left out.
   */
  async tokenNames(uuids, meta) {
    const inMeta = new Set(Object.values(meta.combatants ?? {}).map((c) => c?.actorUuid));
    const seen = new Set();
    const unsent = [];
    const already = [];
    for (const uuid of uuids) {
      const found = await this.svc.docs(uuid).catch(() => null);
      if (!found) continue;
      const key = participantOf(found.token, found.actor).actorUuid;
      const name = found.token?.name ?? found.actor.name;
      if (inMeta.has(key)) {
        already.push({ name, key });
      } else if (!seen.has(key)) {
        seen.add(key);
        unsent.push({ name, key });
      }
    }
    return { unsent, already };
  }

  /**
   * Whether `error`, from a call naming encounter `id` made under `stepOf(id)` (which
   * keeps `id` in `endedIds` until it finished), is the companion not knowing that
   * encounter (NotFound) because it ended here (End pressed) or a new one replaced it
   * here (Create), which told the GM. A NotFound for an encounter nobody here ended or
   * replaced (ended elsewhere, or the companion's store lost) is not: the GM
   * is to be told of it.
   */
  forgotten(id, error) {
    return error instanceof NotFoundError && error.data?.id === id && this.endedIds.has(id);
  }

  /**
   * Of three notices for a step of encounter `id` that is no longer the current one, the
   * key whose words are true: `ended` when End here ended it, `replaced` when a new
   * encounter made here replaced it (`createNow`), which nobody ended, and `elsewhere`
   * when neither happened here (not in `endedIds`, which keeps the id while a step asked
   * of it is under way, `stepOf`): it was ended or replaced elsewhere (in another
   * browser, or by a macro or a script, which may run in this one), and nothing here
   * knows which (`tellStepAfterEnd`). The callers write each key out whole,
   * so that the language file's check finds it.
   */
  noLongerKey(id, { ended, replaced, elsewhere }) {
    if (!this.endedIds.has(id)) return elsewhere;
    return this.replacedIds.has(id) ? replaced : ended;
  }

  /** `encounter.get` of the current encounter (null when there is none). */
  async state() {
    const meta = this.meta;
    if (!meta.id) return null;
    return this.svc.rpc("encounter.get", { id: meta.id });
  }

  /** The choice dialog's context for one combatant. */
  async choiceContext(cid, state) {
    const meta = this.meta;
    const system = meta.system;
    const label = this.svc.t.label;
    const description = await this.svc.describe(system);
    const modes = modesFromDescription(system, description);
    const me = combatantView(state, cid) ?? {};
    const named = (m) => ({ ...m, label: idLabel(label, "Mode", m.id) });
    const intent = system === "combat-strength" && state.phase === "intent";
    return {
      combatantId: cid,
      combatantName: meta.combatants?.[cid]?.name ?? cid,
      system,
      phase: state.phase ?? "",
      phaseLabel: state.phase ? idLabel(label, "Phase", state.phase) : "",
      stances: intent ? STANCES.map((s) => ({ value: s, label: label(`MINDSCAPE.Stance.${s}`, s) })) : [],
      intent,
      attacks: intent ? [] : knownModes(modes.attacks, me.attacks).map(named),
      defenses: intent ? [] : knownModes(modes.defenses, me.defenses).map(named),
      targets: this.targetsOf(cid, state),
      multipliers: system === "revised-2e" ? Array.from({ length: Math.max(1, me.level ?? 1) }, (_, i) => ({ value: i + 1 })) : [],
      // revised-2e: a row for each further attack the companion allows this round
      furtherAttacks: system === "revised-2e" && !intent
        ? FURTHER_ATTACKS.slice(0, Math.max(0, (Number(state.attacks_allowed?.[cid]) || 1) - 1)).map((n) => ({ n, label: this.svc.t.format("MINDSCAPE.Encounter.FurtherAttack", { n }) }))
        : [],
      ranges: ["revised-2e", "combat-strength"].includes(system) ? RANGES.map((r) => ({ value: r, label: label(`MINDSCAPE.Range.${r}`, r) })) : [],
      poolDice: system === "power-pool" ? Array.from({ length: Math.max(0, me.pool ?? 0) }, (_, i) => ({ value: i + 1, selected: i + 1 === me.pool })) : [],
      sacrifice: system === "power-pool",
      close: intent ? null : this.closeOffer(state.close_offers?.[cid]),
      pool: system === "power-pool" ? this.poolContext(cid, me, state, modes) : null,
    };
  }

  /**
   * Whom `cid` may attack, by name: every other combatant but a creature under its own
   * psionic control (power-pool: the companion refuses it, `target-own-puppet`; the view
   * names each one's `controlled_by`).
   * @returns {{id:string, name:string}[]}
   */
  targetsOf(cid, state) {
    return Object.entries(this.meta.combatants ?? {})
      .filter(([id]) => id !== cid && combatantView(state, id)?.controlled_by !== cid)
      .map(([id, c]) => ({ id, name: c?.name ?? id }));
  }

  /** The choice dialog's boxes sparing an effect the modes `attacks` let the attacker decline (`declineBoxes`). */
  declinable(attacks) {
    return declineBoxes(attacks, this.svc.t);
  }

  /**
   * power-pool's part of the choice dialog: the phase (attack or defense), the creatures
   * this one controls (for release, keep, cannot-perceive), the others (further targets
   * of a psionic wave, allies of an imagination swarm). Allies are offered only to the
   * mind that leads the defending group (the view's `struck[0]`): the companion refuses
   * another struck mind's (`allies-first-mind-only`). An ally is none of those already
   * in the exchange (the view's `declared`: in the defense phase the attacker and those
   * who declared a defense or joined; `struck` and `waiting_for`: the minds struck, also
   * those that cannot choose), nor one under control, a mindless one or a psionic one
   * (seed 001: the defender "may choose [to] draw allied non-psionic creatures" in; a
   * psionic creature joins only by its own choice): the companion refuses each of them.
   * It is on the chooser's side: its token's disposition (as recorded when it was added)
   * is the chooser's, when both are known.
   */
  poolContext(cid, me, state, modes) {
    const meta = this.meta;
    const viewOf = (id) => combatantView(state, id) ?? {};
    // A wave's further targets, the allies: neither this one nor a creature it controls.
    const others = this.targetsOf(cid, state);
    const inExchange = new Set([...(state.declared ?? []), ...(state.waiting_for ?? []), ...(state.struck ?? [])]);
    // A companion without `struck` cannot say who leads: every struck mind is offered.
    const leads = state.phase !== "defense" || !state.struck?.length || state.struck[0] === cid;
    return {
      defensePhase: state.phase === "defense",
      controlled: this.controlledBy(me),
      others,
      allies: !leads ? [] : others.filter((o) => {
        const view = viewOf(o.id);
        const mine = meta.combatants?.[cid]?.disposition;
        const theirs = meta.combatants?.[o.id]?.disposition;
        const sameSide = !Number.isInteger(mine) || !Number.isInteger(theirs) || mine === theirs;
        return sameSide && !inExchange.has(o.id) && !view.controlled_by && view.mindless !== true && view.psionic !== true;
      }),
      waveModes: modes.attacks.filter((m) => m.several_targets).map((m) => m.id).join(","),
      // An effect the attacker may decline (Subconscious Subversion's Fear), by the modes it knows.
      ...this.declinable(knownModes(modes.attacks, me.attacks)),
    };
  }

  /** The creatures a power-pool combatant (its view `me`) controls, by name: release, keep and lost sight name one. */
  controlledBy(me) {
    return (me.controlling ?? []).filter((link) => link?.id).map((link) => ({ id: link.id, name: this.meta.combatants?.[link.id]?.name ?? link.id }));
  }

  /**
   * What the choice dialog shows of a revised-2e `close_offers` entry (the companion's
   * price of closing a mind by paying), or null when the combatant may not pay.
   */
  closeOffer(offer) {
    if (!offer?.payable) return null;
    const label = this.svc.t.label;
    return { cost: offer.cost, psp: offer.psp, defenseLabel: label(`MINDSCAPE.Mode.${offer.defense}`, offer.defense), lastDefense: offer.basis === "last" };
  }

  /**
   * Ask every combatant still to choose: its owner secretly (through the relay), the GM
   * for NPCs; each answer is declared at once, so hidden choices never rest in Foundry.
   * The combatants are first taken again from their sheets (`refresh`, in the exchange
   * queue); when the companion refuses one, nobody is asked. The asking itself waits for
   * people and runs outside the queue. In power-pool's defense phase, whoever may join
   * the defense by its own choice is asked at the same time (`askJoins`).
   * @returns {Promise<(object|null)[]>}  the answers of the declarations of those still to choose
   */
  async collectChoices() {
    // Each choice is asked against the combatants as their sheets are now.
    this.svc.reportRefresh(await this.refresh(), { quiet: true });
    const meta = this.meta;
    let state = await this.state();
    if (!state) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    // power-pool's attack phase takes one attack at a time (the exchange is resolved
    // before anyone else may attack, RULES.md §3.2): its combatants are asked one after
    // another until one attacks. Everywhere else, everyone at once.
    if (meta.system === "power-pool" && state.phase === "attack") {
      const out = [];
      const asked = new Set();
      for (;;) {
        // An earlier ask (a macro's, say) is asking someone for an attack: asking the next
        // one too would let two attacks be chosen at once, and the later declared of them
        // be refused. That ask goes on to the others itself.
        if (this.askingAttack.size) break;
        const cid = (state.waiting_for ?? []).find((c) => !asked.has(c));
        if (!cid) break;
        asked.add(cid);
        this.askingAttack.add(cid);
        try {
          out.push(await this.askOne(cid, state));
        } finally {
          this.askingAttack.delete(cid);
        }
        state = await this.state();
        if (!state || state.phase !== "attack") break;
      }
      return out;
    }
    const asks = Promise.all((state.waiting_for ?? []).map((cid) => this.askOne(cid, state)));
    if (meta.system !== "power-pool" || state.phase !== "defense") return asks;
    // The defense phase: whoever may join a defense by its own choice is asked with the
    // minds struck; a resolve waits for those questions, and for those an earlier ask
    // left open (`resolve`).
    const joins = this.askJoins(state);
    const open = joins.catch(() => null);
    this.joinQuestions.add(open);
    open.then(() => this.joinQuestions.delete(open));
    const [out] = await Promise.all([asks, joins]);
    return out;
  }

  /**
   * power-pool's defense phase: ask whoever answers for each combatant that may join the
   * defense of a mind struck by its own choice (RULES.md §3.3, seed 001: "Psionically
   * active creatures may also use this defence mode to participate in a psionic combat
   * that is targeting an ally they can see") whether it does, all at once and beside the
   * minds struck still to choose, each within the world's defense timeout
   * (`svc.askJoin`: its owner, the GM for an NPC or when no owner is connected; the
   * attacker's side is told nothing). The minds struck are all of them (the view's
   * `struck`), also those that have chosen and those that cannot (asleep, down): a
   * friend matters most to a mind that cannot defend itself. May join: a combatant not
   * in the exchange (the view's `declared`: the attacker and those who defended or
   * joined; the minds struck), not being asked already (by this ask or an earlier one
   * still open), not having answered Stay out to this attack (`declinedJoin`; one that
   * did not answer in time is asked again), that could defend with a mode drawing allies
   * in (`joiningModeId`, from the view: psionic, knowing it, with a mind, not under
   * control, aware), whose token has the same disposition as a mind struck
   * (`svc.joinCandidates`). The view keeps the attack secret, so the question names
   * only those minds. A yes is declared as the creature's own defense, `{defense:
   * {mode}}`, while the same attack still waits for its defenses (`declareJoin`; else
   * the GM is told it came too late); no answer, Stay out or a failure is no join. Stay
   * out is declared as well (`{defense: {mode: null}}`), as secret as a yes, so that who
   * declared does not tell who joined.
   * @returns {Promise<(object|null)[]>}  the declarations' answers, null for no join
   */
  async askJoins(state) {
    const meta = this.meta;
    const struck = struckOf(state);
    if (!struck.length) return [];
    const description = await this.svc.describe(meta.system);
    const defenses = modesFromDescription(meta.system, description).defenses;
    const awareness = description?.tables?.awareness_conditions ?? [];
    const docsOf = (cid) => {
      const entry = meta.combatants?.[cid];
      return entry ? this.docsOf(entry).catch(() => null) : Promise.resolve(null);
    };
    const viewOf = (id) => combatantView(state, id);
    const attack = JSON.stringify([meta.id, state.round, state.exchange, state.struck ?? null]);
    if (this.declinedJoin.attack !== attack) this.declinedJoin = { attack, ids: new Set() };
    const declined = this.declinedJoin.ids;
    const inExchange = new Set([...(state.declared ?? []), ...struck, ...this.askingJoin, ...declined]);
    const others = Object.keys(meta.combatants ?? {}).filter((cid) => !inExchange.has(cid));
    const minds = (await Promise.all(struck.map(docsOf))).filter(Boolean);
    const creatures = (await Promise.all(others.map(async (cid) => {
      const view = viewOf(cid);
      const docs = view ? await docsOf(cid) : null;
      return docs && { docs, combatant: { ...view, id: cid } };
    }))).filter(Boolean);
    // Another ask may have started asking one of them while this one read the sheets.
    const candidates = this.svc.joinCandidates([minds], creatures, defenses, awareness).filter((c) => !this.askingJoin.has(c.id));
    for (const c of candidates) this.askingJoin.add(c.id);
    return Promise.all(candidates.map(async (c) => {
      try {
        const { group, declined: no } = await this.svc.askJoin(c.docs, { mode: c.mode, groups: c.offers });
        if (group !== null) return await this.declareJoin(c.id, c.mode, state);
        if (no) {
          declined.add(c.id);
          // Declared too: were joining the only answer the companion hears, the view's
          // `declared` would tell the attacker's side who joined.
          await this.declareJoin(c.id, null, state);
        }
        return null;
      } finally {
        this.askingJoin.delete(c.id);
      }
    }));
  }

  /**
   * Declare that `cid` joins the defense with `mode`, if the attack of `asked` (the view
   * the question was made from) still waits for its defenses when the declaration's turn
   * comes in the queue: the same round and exchange, the same minds struck (an attack
   * declared again within the exchange may strike others, or the joiner itself, and
   * then a join would be filed as its own defense), and `cid` not among them; else, or
   * when the companion refuses it, the GM is told and null is the answer. `mode` null
   * declares that `cid` stays out: too late or refused, that changes nothing in the
   * exchange, so the GM is not told, and the answer is null.
   */
  async declareJoin(cid, mode, asked) {
    const name = this.meta.combatants?.[cid]?.name ?? cid;
    const staysOut = mode === null;
    const struck = (view) => JSON.stringify(view?.struck ?? null);
    const same = (now) => now?.phase === "defense" && now.round === asked.round && now.exchange === asked.exchange
      && struck(now) === struck(asked) && !struckOf(now).includes(cid);
    try {
      const answer = await this.declare(cid, { defense: { mode } }, { when: async () => same(await this.state()) });
      if (staysOut) return null;
      if (answer === null) this.svc.notify("warn", this.svc.t.format("MINDSCAPE.Join.TooLate", { name }));
      return answer;
    } catch (error) {
      if (staysOut && (error instanceof RpcError || error instanceof UsageError)) return null;
      return this.declarationRefused(name, error);
    }
  }

  /**
   * A declaration the companion refused (or the module stopped): the GM is told whose
   * and why (`again`: and that its owner is asked again), and null is the answer; any
   * other error is thrown on.
   */
  declarationRefused(name, error, { again = false } = {}) {
    if (!(error instanceof RpcError) && !(error instanceof UsageError)) throw error;
    const key = again ? "MINDSCAPE.Encounter.DeclareRefusedAskedAgain" : "MINDSCAPE.Encounter.DeclareRefused";
    this.svc.notify("warn", this.svc.t.format(key, { name, problem: describeError(error, this.svc.t) }));
    return null;
  }

  /**
   * Ask one combatant (its owner secretly, through the relay; the GM for an NPC) and
   * declare the answer; not while an earlier ask of it is still open. A choice made for a
   * phase the encounter has left is told to the GM and the others go on. A choice the
   * rules refuse (4001: too few PSPs, a target that cannot be attacked, a defense not
   * known, …) is told to the GM, and the same owner is asked again, told why and shown
   * the choice refused (`previous`, filled into the dialog), while the encounter still
   * waits for that combatant in the same round, exchange and phase (at most
   * DEFENSE_REASKS times; a refusal after that is only told). Null when nothing was
   * declared.
   */
  async askOne(cid, state) {
    const meta = this.meta;
    const entry = meta.combatants?.[cid];
    if (!entry || this.askingChoice.has(cid)) return null;
    this.askingChoice.add(cid);
    try {
      const { actor } = await this.docsOf(entry);
      const owner = this.svc.ownerOf(actor);
      const name = entry.name ?? cid;
      const when = (view) => JSON.stringify([view?.round, view?.exchange, view?.phase]);
      let refused = null;
      let previous = null;
      // Within the world's defense timeout, as the other secret questions: the dialog
      // closes itself then, and a choice that still comes later is not declared: its
      // owner is told (the GM, for an NPC).
      const timeoutMs = this.svc.defenseTimeoutS() * 1000;
      const tooLate = (late) => {
        if (!late) return;
        if (owner) this.svc.relay.toUser(owner.id, "encounterTooLate", { name }).catch(() => null);
        else this.svc.encounterTooLateHere({ name });
      };
      for (let reasks = DEFENSE_REASKS; ; reasks--) {
        const context = { ...(await this.choiceContext(cid, state)), refused, previous, seconds: Math.round(timeoutMs / 1000), timeoutMs };
        const form = await this.svc.askWithin(owner, "chooseEncounter", (c) => this.svc.chooseEncounterHere(c), context, timeoutMs, null, { onLate: tooLate });
        if (!form || typeof form !== "object") return null;
        try {
          return await this.declareForm(cid, form);
        } catch (error) {
          const now = error instanceof RulesError && reasks > 0 ? await this.state().catch(() => null) : null;
          const again = Boolean(now) && when(now) === when(state) && (now.waiting_for ?? []).includes(cid);
          const answer = this.declarationRefused(name, error, { again });
          if (!again) return answer;
          state = now;
          previous = form;
          refused = this.svc.t.format("MINDSCAPE.Encounter.RefusedAgain", { name, problem: describeError(error, this.svc.t) });
        }
      }
    } finally {
      this.askingChoice.delete(cid);
    }
  }

  /**
   * Declare a submitted choice form against the encounter as it is now: a form made
   * for another phase than the current one (the dialog showed an attack, and meanwhile
   * an attack was declared against this combatant) is refused, not read as something
   * else.
   */
  async declareForm(cid, form) {
    const meta = this.meta;
    const state = await this.state();
    if (!state) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    if (typeof form.phase === "string" && form.phase !== String(state.phase ?? "")) {
      throw new UsageError("MINDSCAPE.Error.PhaseChanged", { name: meta.combatants?.[cid]?.name ?? cid });
    }
    return this.declare(cid, choiceFromForm(meta.system, state, form));
  }

  /**
   * Declare a combatant's choice. A public action (power-pool's pass, release, keep,
   * rest ...) changes combatants when it is declared, and the answer carries their
   * write-backs, made here as a step's are (`applyStep`: a sheet that misses it is
   * held; an answer lost after the companion may have stored it holds everyone, as
   * `stepCall` does for a step), and the GM is shown what it did (the answer's
   * `summary`). So a declaration runs in the exchange queue, keyed by
   * the encounter's actors: no refresh reads a sheet between the companion storing an
   * action and its write-back. With `when`, the choice is declared only if `when()`
   * still holds when its turn in the queue comes; else nothing is declared and the
   * answer is null.
   */
  async declare(cid, choice, { when = null } = {}) {
    const meta = this.meta;
    return this.stepOf(meta.id, async () => {
      const keys = (await this.participants()).map((p) => p.actorUuid);
      const open = meta.system === "power-pool" && POOL_PUBLIC_ACTIONS.some((key) => key in choice);
      return this.svc.exchanges.run(keys, async () => {
        if (when && !(await when())) return null;
        const call = () => this.svc.rpc("encounter.declare", { id: meta.id, combatant_id: cid, choice });
        const answer = open ? await this.stepCall("action", call, meta) : await call();
        const plan = answer?.updates?.length || answer?.updates_failed ? await this.applyStep(answer, { action: true, meta }) : [];
        // A public action changed combatants: other modules hear of it as of a step. A
        // hidden choice is not told (nothing changed yet, and it is secret).
        if (open && answer) this.announce(meta, "action", answer, plan, [], { combatant: cid });
        // What the action did, in the companion's words ("Ulcen releases Fenka.").
        if (open && typeof answer?.summary === "string" && answer.summary) this.svc.notify("info", await this.namedSummary(answer.summary));
        return answer;
      });
    });
  }

  /**
   * The GM's public action for one combatant (the panel's *Act* on its row): power-pool's
   * rest, pass (while the round still waits for it), release, keep or lost sight (of a
   * creature it controls), between exchanges. These are not secret, so the GM chooses
   * here, for any combatant: also one *Ask for choices* no longer asks (it attacked this
   * round, its pool is empty) and that still may rest or let a puppet go. A refusal is
   * told, as an asked choice's is (`declarationRefused`). Null when nothing was declared.
   */
  async act(cid) {
    const meta = this.meta;
    const entry = meta.combatants?.[cid];
    if (!entry) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    const name = entry.name ?? cid;
    const state = await this.state();
    if (!state) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    if (meta.system !== "power-pool" || state.phase !== "attack") throw new UsageError("MINDSCAPE.Encounter.NoActionNow", { name });
    const me = combatantView(state, cid) ?? {};
    const context = {
      combatantId: cid,
      combatantName: name,
      phase: state.phase,
      canPass: (state.waiting_for ?? []).includes(cid),
      controlled: this.controlledBy(me),
    };
    const form = await this.svc.env.dialogs.encounterActionDialog({ context });
    if (!form || !POOL_PUBLIC_ACTIONS.includes(form.action)) return null;
    try {
      return await this.declareForm(cid, form);
    } catch (error) {
      return this.declarationRefused(name, error);
    }
  }

  /**
   * A player's own declaration relayed to the GM: only for a combatant whose choices the
   * sender answers (`answersFor`: its actor's ownership names the sender as an owner). An
   * owner only through the default ownership ("All Players: Owner") is refused, as it is
   * not asked: the GM answers for such a combatant, which the attacker's own player
   * would otherwise declare the defense of.
   */
  async declareFor({ combatantId, form }, sender) {
    const meta = this.meta;
    const entry = meta.combatants?.[combatantId];
    if (!entry) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    const { actor } = await this.docsOf(entry);
    if (!sender?.isGM && !this.svc.answersFor(sender, actor)) throw new PermissionDeniedError({ who: actor.name });
    return this.declareForm(combatantId, form);
  }

  /**
   * `refreshNow` in the exchange queue, keyed by the encounter's actors as `resolve` is:
   * it waits for any single exchange, end of round or rest touching one of them, so that
   * it reads their sheets after those wrote back. For *Ask for choices*, the panel's
   * *Refresh from sheets* and `api.refreshEncounter`; never call it from a task already
   * in the queue on those actors (it would wait for that task, which waits for it).
   * @returns {Promise<{combatantId:string, name:string, changed:string[], revision:number|null}[]>}
   */
  async refresh({ takeHeld = false } = {}) {
    if (!this.meta.id) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    const keys = (await this.participants()).map((p) => p.actorUuid);
    return this.svc.exchanges.run(keys, () => this.refreshNow({ takeHeld }));
  }

  /**
   * Take every combatant of the encounter again from its sheet as it is now
   * (`encounter.refresh`), one after another in the order they were added, so that what
   * changed on a sheet outside the encounter (a sword blow's hit points, PSPs spent on a
   * power) is not overwritten by the next write-back; one whose linked token is gone
   * from its world actor (`docsOf`). A combatant whose token or actor is
   * gone is skipped: there is no sheet to read (a step's updates for it are written to no
   * sheet either, and `applyStep` tells the GM so). When nothing changed the
   * companion stores nothing.
   *
   * A combatant whose sheet a write-back missed (`meta.held`, see `applyStep`) would give
   * the encounter its stale sheet: the updates that failed are tried again first, and
   * when they still fail (or the companion could not make them) it keeps the encounter's
   * copy and is reported `held`, unless `takeHeld` (the GM's own *Refresh from sheets*,
   * after bringing the sheets in line), which takes it as it is and ends the hold. A
   * combatant whose token is back (Foundry's undo of its deletion) after a step was
   * written to no sheet for it (`meta.gone`) shows its sheet from before that step: it
   * is held so too, with nothing to try again.
   * @param {{takeHeld?:boolean}} [options]
   * @returns {Promise<{combatantId:string, name:string, changed:string[], dropped:string[], held?:boolean, revision:number|null}[]>}
   * @throws {RefreshRefusedError} when the companion refuses a combatant (a profile it no
   *   longer accepts, a combatant it does not know): the combatants after it are not sent
   */
  async refreshNow({ takeHeld = false } = {}) {
    const meta = this.meta;
    if (!meta.id) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    const adapter = await this.svc.adapterId();
    const seen = structuredClone(meta.held ?? {});
    // Those a step was written to no sheet for (`meta.gone`) whose token is here again.
    const gone = new Set(meta.gone ?? []);
    const back = new Set();
    const changes = new Map();
    const out = [];
    try {
      for (const [cid, entry] of Object.entries(meta.combatants ?? {})) {
        let docs;
        try {
          docs = await this.docsOf(entry);
        } catch {
          // A deleted token is no longer in the fight: it gets no write-back, nor a hold.
          if (seen[cid]) changes.set(cid, undefined);
          continue;
        }
        // A step was written to no sheet for it though its world actor is still there
        // (`docsOf`'s `tokenGone`): the companion wrote to its token's own copy (`actorLink`
        // turned off since `add`), deleted with the token. Its token is not back, and that
        // world actor (the base of the copy) is not its sheet: it is still gone.
        if (docs.tokenGone && gone.has(cid)) {
          if (seen[cid]) changes.set(cid, undefined);
          continue;
        }
        const name = docs.token?.name ?? entry.name ?? docs.actor.name;
        if (gone.has(cid)) back.add(cid);
        // Brought back (Foundry's undo of the deletion), its sheet is from before those steps:
        // held as when the companion's write-back failed (nothing to try again), not taken.
        if (gone.has(cid) && !seen[cid] && !takeHeld) {
          changes.set(cid, { write: null });
          out.push({ combatantId: cid, name, changed: [], dropped: [], held: true, revision: null });
          continue;
        }
        if (seen[cid] && !takeHeld) {
          const kept = await this.retryHeld(seen[cid], name);
          changes.set(cid, kept ?? undefined);
          if (kept) {
            out.push({ combatantId: cid, name, changed: [], dropped: [], held: true, revision: null });
            continue;
          }
        }
        let answer;
        try {
          // One whose linked token is gone is sent as that token still named it (the
          // companion names a combatant by its token, else by its actor): not renamed.
          const token = docs.tokenGone ? { uuid: entry.tokenUuid, actorLink: true, name: entry.name } : docs.token;
          answer = await this.svc.rpc("encounter.refresh", { id: meta.id, combatant_id: cid, combatant: this.svc.ref(docs.actor, token, adapter) });
        } catch (error) {
          // The companion answered no: say whose sheet. Anything else (not running) as it is.
          if (error instanceof RpcError) throw RefreshRefusedError.of(name, error, this.svc.t);
          throw error;
        }
        // The sheet is in the encounter now: whatever it missed is the GM's to judge.
        if (seen[cid]) changes.set(cid, undefined);
        this.svc.sheetWarnings(answer?.warnings, { "": name });
        out.push({ combatantId: cid, name, changed: [...(answer?.changed ?? [])], dropped: [...(answer?.dropped_choices ?? [])], revision: answer?.revision ?? null });
      }
    } finally {
      await this.saveHeld(changes, { id: meta.id, seen, gone: back.size ? (ids) => ids.filter((cid) => !back.has(cid)) : null });
    }
    return out;
  }

  /**
   * Try a held combatant's waiting write again, when its sheet still shows what it showed
   * when the write failed (or, field by field, already what is to be written: the GM put
   * that one right); a sheet changed otherwise since (by the GM's hand) is not written
   * over, and the GM is told. The hold that remains, or null when the write landed.
   */
  async retryHeld(hold, name) {
    const write = hold.write;
    if (!write) return hold;
    const doc = await this.svc.env.fromUuid(write.uuid).catch(() => null);
    const same = doc && Object.entries(write.expect).every(([path, value]) => {
      const now = JSON.stringify(valueAt(doc, path) ?? null);
      return now === JSON.stringify(value) || now === JSON.stringify(write.update[path] ?? null);
    });
    if (!same) {
      this.svc.notify("warn", this.svc.t.format("MINDSCAPE.Encounter.HeldChanged", { name }));
      return hold;
    }
    const [result] = await applyPlan([{ uuid: write.uuid, update: write.update }], this.svc.env.fromUuid);
    return result.ok ? null : hold;
  }

  /**
   * Store changes of holds (`cid` → the new hold, or undefined to end it) in the meta of
   * encounter `id` as it is now. With `seen` (the holds a refresh started from), a hold
   * made or changed meanwhile (an undo's write failing while the refresh ran) is kept as
   * it is: the refresh read that sheet before it. With `gone`, the combatants gone whose
   * step was told as written to no sheet (`meta.gone`, see `applyStep`) become
   * `gone(meta.gone)`, stored with the holds: the encounter's meta lasts through a reload
   * of the world, so one is not told again then. Nothing is stored once that encounter
   * ended (or is ending, `endNow`) or another replaced it: its holds are nobody's now.
   * @param {Map<string, object|undefined>} changes
   * @param {{id:string|undefined, seen?:object|null, gone?:((ids:string[])=>string[])|null}} options
   * @returns {Promise<boolean>}  whether encounter `id` is still the current one
   */
  async saveHeld(changes, { id, seen = null, gone = null }) {
    // Every meta write under way (another hold's, a deleted token's record, add's) lands
    // first: a record started while this waited is waited for too.
    await this.metaWritesLanded();
    const meta = this.meta;
    if (!id || meta.id !== id || this.endedIds.has(id)) return false;
    if (!changes.size && !gone) return true;
    const held = { ...(meta.held ?? {}) };
    for (const [cid, hold] of changes) {
      if (seen && JSON.stringify(held[cid]) !== JSON.stringify(seen[cid])) continue;
      if (hold === undefined) delete held[cid];
      else held[cid] = hold;
    }
    const next = { ...meta, held };
    if (!Object.keys(held).length) delete next.held;
    if (gone) next.gone = gone(meta.gone ?? []);
    if (!next.gone?.length) delete next.gone;
    if (JSON.stringify(next) === JSON.stringify(meta)) return true;
    await this.saveTracked(next);
    return true;
  }

  /**
   * The token and actor of combatant `entry` of an encounter's meta (`svc.docs`). A linked
   * token deleted (or moved to another scene, which is deleted and made again) leaves
   * its world actor, which holds its sheet: the combatant is that actor then
   * (`tokenGone`, no token), when `add` saw it as that world actor (a linked token) and
   * the token was linked when it was deleted (`tokenDeleted`). The
   * actor alone, not `svc.docs` of it, which could name an unlinked token of it, another
   * creature's copy.
   * @returns {Promise<{token:any, actor:any, tokenGone?:boolean}>}
   * @throws {UsageError} when its token or actor is gone
   */
  async docsOf(entry) {
    try {
      return await this.svc.docs(entry.tokenUuid ?? entry.actorUuid);
    } catch (error) {
      // Only a token known to have been linked when it was deleted (`tokenDeleted`): one
      // made unlinked since it was added took its own copy with it, and the world actor
      // `add` recorded is the base of unlinked copies (other creatures), never its sheet.
      // One deleted with no record (no GM's client heard of it) is gone.
      const linked = entry.tokenUuid ? this.deletedTokens.get(entry.tokenUuid) ?? entry.deletedLinked === true : false;
      const actor = linked ? await this.svc.env.fromUuid(entry.actorUuid).catch(() => null) : null;
      if (actor?.documentName === "Actor" && !actor.isToken) return { token: null, actor, tokenGone: true };
      throw error;
    }
  }

  /**
   * Foundry deleted token document `token` (hooks.js `deleteToken`): whether it was
   * linked then (`actorLink`) decides whether its world actor is still its sheet
   * (`docsOf`). Kept here for this session; with `store` (the active GM's client), also
   * on its combatant's entry in the current encounter's meta (`deletedLinked`), so it
   * lasts through a reload (`recordLinked`).
   * @returns {Promise<void>|null}  the record being stored, if any
   */
  tokenDeleted(token, { store = false } = {}) {
    const uuid = token?.uuid;
    if (!uuid) return null;
    const linked = Boolean(token.actorLink);
    this.deletedTokens.set(uuid, linked);
    return store ? this.recordLinked(uuid, linked) : null;
  }

  /**
   * Foundry made token document `token` (hooks.js `createToken`): one made again under
   * the uuid of a token deleted before (Foundry's undo of the deletion) is there again,
   * so the record of that deletion goes, here and, with `store` (the active GM's client),
   * in the current encounter's meta. Else a later deletion nobody heard of (no GM's client
   * connected) would find the old record, and its world actor would be taken as its sheet
   * though the token was made unlinked meanwhile: with no record it is gone (`docsOf`).
   * @returns {Promise<void>|null}  the record being cleared, if any
   */
  tokenCreated(token, { store = false } = {}) {
    const uuid = token?.uuid;
    if (!uuid) return null;
    this.deletedTokens.delete(uuid);
    return store ? this.recordLinked(uuid, false) : null;
  }

  /**
   * Store on the entries of the current encounter's meta whose token is `uuid` whether
   * it was `linked` when it was deleted (`deletedLinked`; false: the entry has none),
   * when one such entry exists. The save waits for the meta writes under way
   * (`heldSaves`), and those made later wait for it: none writes an older meta over
   * another, and of a deletion and the undo of it, the later one's record stays.
   * @returns {Promise<void>|null}  the record being stored, if any
   */
  recordLinked(uuid, linked) {
    const id = this.meta.id;
    if (!id || !Object.values(this.meta.combatants ?? {}).some((c) => c?.tokenUuid === uuid)) return null;
    // The records being stored now (a previous one among them), not this one itself.
    const before = [...this.heldSaves];
    const recording = (async () => {
      await Promise.allSettled(before);
      const meta = this.meta;
      if (meta.id !== id || this.endedIds.has(id)) return;
      const combatants = { ...meta.combatants };
      let changed = false;
      for (const [cid, entry] of Object.entries(combatants)) {
        if (entry?.tokenUuid !== uuid || (entry.deletedLinked === true) === linked) continue;
        const next = { ...entry };
        if (linked) next.deletedLinked = true;
        else delete next.deletedLinked;
        combatants[cid] = next;
        changed = true;
      }
      if (changed) await this.saveMeta({ ...meta, combatants });
    })().catch(() => undefined); // not stored: after a reload it is taken as gone, the safe side
    this.heldSaves.add(recording);
    recording.finally(() => this.heldSaves.delete(recording));
    return recording;
  }

  /** The participant of combatant `entry` (`docsOf`): one whose linked token is gone is still written through the token's uuid. */
  async participantOfEntry(entry) {
    const { token, actor, tokenGone } = await this.docsOf(entry);
    return tokenGone ? { ...participantOf(null, actor), tokenUuid: entry.tokenUuid, tokenGone } : participantOf(token, actor);
  }

  /** The participants of the encounter, for routing updates. */
  async participants() {
    const out = [];
    for (const entry of Object.values(this.meta.combatants ?? {})) {
      try {
        out.push(await this.participantOfEntry(entry));
      } catch { /* a deleted token no longer receives updates */ }
    }
    return out;
  }

  /**
   * The participants of encounter `meta` by combatant id (`participantOfEntry`), those
   * whose token or actor is gone left out: `applyStep` tells of them.
   */
  async participantsById(meta = this.meta) {
    const out = new Map();
    for (const [cid, entry] of Object.entries(meta.combatants ?? {})) {
      try {
        out.set(cid, await this.participantOfEntry(entry));
      } catch { /* a deleted token no longer receives updates */ }
    }
    return out;
  }

  /**
   * Write a stored step's (or undo's) updates to the sheets. The companion has stored it
   * whatever happens here, so a sheet it misses must not be taken back into the
   * encounter as it is: when the companion could not make the write-back
   * (`updates_failed`), every combatant is held; when writing a combatant's document
   * fails, that combatant is held with the write (`pendingWrite`), tried again before the
   * next automatic refresh (`refreshNow`). A later write that lands on that document
   * takes the fields it sets off the waiting write (an undo that restores them ends the
   * hold). The GM is told whose sheets are behind and why: a write-back the companion
   * could not make in a notice that stays until dismissed (the sheets stay behind until
   * the GM puts them right), a write Foundry missed in one that goes away (it is tried
   * again by itself); but one missed on a combatant the companion holds already (a
   * write-back it could not make, or an answer lost: no write to try again) in one that
   * stays, with the values to set by hand (`writesWords`), as nothing tries it again.
   * A write whose document is gone (deleted meanwhile), on any combatant, is told in a
   * notice that stays with the values nothing will write (`UpdateFailedGone`): nothing
   * can try it again, and no sheet is there to put right. A combatant the step has
   * updates for whose token or actor was gone before the write (deleted while the step was
   * under way, or before) gets none, not through another combatant either (`addressesOf`:
   * an update to the world actor of a linked token gone is not sent to an unlinked token
   * of that actor). One whose token was linked when it was deleted (`tokenDeleted`) and
   * whose world actor is there is written on that actor, its sheet (`docsOf`); one made
   * unlinked since, or deleted while no GM's client heard of it, has nowhere to go (its
   * world actor is the base of unlinked copies). A combatant so skipped is named
   * in the same notice (`UpdateSkippedGone`, or
   * `UpdateSkippedGoneToo` after `UpdateFailedGone`): there are no document or values to
   * name, so it says only that nothing was or will be written for it, this step or a
   * later one while it stays gone. Each is told once per encounter (`meta.gone`): one
   * the GM removed on purpose, which later steps still change (attacked, a condition
   * running out), is not told again at each of them, as refresh skips it without a word. That notice is
   * told here, also after End, never in End's (`tellStepAfterEnd` gets only writes to
   * documents still there).
   *
   * `meta` is the encounter the step was asked of, as it was then: an End (or a new
   * encounter) while the step ran does not keep its write-back from the sheets, and what
   * it wrote and missed then goes to what End tells to make by hand
   * (`tellStepAfterEnd`), as nothing will try it again; no hold is stored, and a
   * write-back the companion could not make is told without a copy kept or a Refresh
   * (`MINDSCAPE.Encounter.WriteBackFailedEnded`, or `WriteBackFailedReplaced` for an
   * encounter a new one replaced) and without the waiting writes End tells. One changed
   * elsewhere (`tellStepAfterEnd`) is told as no longer the current one,
   * ended or replaced, which nothing here knows (`WriteBackFailedElsewhere`).
   */
  async applyStep(answer, { undo = false, action = false, meta: asked = this.meta } = {}) {
    const what = this.svc.t.localize(STEP_WORDS[undo ? "undo" : action ? "action" : "step"]);
    // A combatant added since the step was asked is written too, while the encounter is the same.
    const writing = this.meta.id === asked.id ? this.meta : asked;
    const byId = await this.participantsById(writing);
    const updates = updatesOfStep(answer);
    // The combatants whose token or actor is gone (deleted while the step was under way),
    // each with the uuids the step may address it by (`addressesOf`) that are no present
    // combatant's own (a linked actor another combatant still fights through is written).
    // One whose linked token is gone but whose world actor is there (`tokenGone`) is written
    // on that actor; only an update addressed to the token's own copy (`actorLink` turned
    // off since) has nowhere to go.
    const present = new Set([...byId.values()].flatMap((p) => [p.actorUuid, p.tokenUuid]));
    const whole = (cid) => byId.has(cid) && !byId.get(cid).tokenGone;
    const goneOnes = Object.entries(writing.combatants ?? {}).filter(([cid]) => !whole(cid))
      .map(([cid, entry]) => [cid, addressesOf(entry).filter((uuid) => !present.has(uuid))]);
    const goneUuids = new Set(goneOnes.flatMap(([, uuids]) => uuids));
    // Their updates are written nowhere: `planUpdates` would send one addressed to a world
    // actor whose linked token is gone to an unlinked token of that actor, another combatant.
    const { plan } = planUpdates(updates.filter((u) => !goneUuids.has(u?.uuid)), [...byId.values()]);
    const report = await applyPlan(plan, this.svc.env.fromUuid);
    // The holds as they are now (a refresh may have changed them), while the encounter is the same.
    const meta = this.meta.id === asked.id ? this.meta : asked;
    // Those of them this step has updates for: nothing was written for them, and nothing can be.
    // Each is told once per encounter (`meta.gone`): one the GM removed on purpose would
    // otherwise be told again at every step that still changes it.
    const told = new Set(meta.gone ?? []);
    const skipped = goneOnes.filter(([cid, uuids]) => !told.has(cid) && updates.some((u) => uuids.includes(u?.uuid))).map(([cid]) => cid);
    // Told from now on. One whose token is back (Foundry's undo) stays until a refresh
    // finds it (`refreshNow` holds it then, and it is told again should it go again).
    const gone = (ids) => [...new Set([...ids, ...skipped])];
    // The combatants whose own actor is this document (an unlinked token's copy is its own).
    const whose = (uuid) => [...byId].filter(([, p]) => p.actorUuid === uuid).map(([cid]) => cid);
    const changes = new Map();
    const held = (cid) => (changes.has(cid) ? changes.get(cid) : meta.held?.[cid]);
    for (const r of report.filter((x) => x.ok)) {
      const written = plan.find((u) => u.uuid === r.uuid).update;
      for (const cid of whose(r.uuid)) {
        const h = held(cid);
        if (!h?.write) continue;
        const left = withoutWritten(h.write, written);
        changes.set(cid, left ? { write: left } : undefined);
      }
    }
    const failed = answer?.updates_failed;
    let replaced = "";
    if (failed) {
      const ids = Object.keys(meta.combatants ?? {});
      replaced = await this.replacedWrites(meta, Object.fromEntries(ids.map((cid) => [cid, held(cid)])));
      for (const cid of ids) changes.set(cid, { write: null });
    }
    const missed = report.filter((r) => !r.ok);
    const problems = (ms) => ms.map((m) => `${m.uuid}: ${m.error}`).join("; ");
    // This step's writes Foundry missed, on documents still there: the GM's to make by hand should the encounter have ended.
    const missedNow = [];
    // Those of them on combatants the companion holds: nothing tries them again, so the GM's to make by hand now
    // (`untried`, where the document is still there: a deleted one has no sheet to put right).
    const untried = [];
    // This step's writes whose document is gone (deleted meanwhile): nothing can try them again, held or not.
    const goneWrites = [];
    const heldIds = new Set();
    for (const m of missed) {
      const { update } = plan.find((u) => u.uuid === m.uuid);
      const doc = await this.svc.env.fromUuid(m.uuid).catch(() => null);
      if (!doc) goneWrites.push({ ...m, cids: whose(m.uuid), write: { uuid: m.uuid, update } });
      const kept = [];
      for (const cid of whose(m.uuid)) {
        const h = held(cid);
        // A hold the companion made (no write to try again) stays as it is.
        if (h && h.write === null) {
          kept.push(cid);
          heldIds.add(cid);
        } else changes.set(cid, { write: pendingWrite(doc, m.uuid, update, h?.write ?? null) });
      }
      if (doc) missedNow.push({ cids: whose(m.uuid), write: pendingWrite(doc, m.uuid, update) });
      if (doc && kept.length) untried.push({ ...m, cids: kept, write: pendingWrite(doc, m.uuid, update) });
    }
    const saved = await this.saveHeld(changes, { id: asked.id, gone });
    if (failed) {
      // Once the encounter ended there is no copy kept, nothing to refresh, and its waiting writes are End's to tell.
      const words = { what, errorId: failed.error_id ?? "?", names: namesOf(meta, Object.keys(meta.combatants ?? {})) };
      if (saved) this.svc.notify("error", this.svc.t.format("MINDSCAPE.Encounter.WriteBackFailed", words) + replaced, { permanent: true });
      else {
        const key = this.noLongerKey(asked.id, {
          ended: "MINDSCAPE.Encounter.WriteBackFailedEnded", replaced: "MINDSCAPE.Encounter.WriteBackFailedReplaced", elsewhere: "MINDSCAPE.Encounter.WriteBackFailedElsewhere",
        });
        this.svc.notify("error", this.svc.t.format(key, words), { permanent: true });
      }
    }
    if (!saved) {
      const landed = report.filter((r) => r.ok).map((r) => ({ ...plan.find((u) => u.uuid === r.uuid), cids: whose(r.uuid) }));
      this.tellStepAfterEnd(asked, { landed, missed: missedNow }, what);
    } else if (missed.length) {
      const tried = missed.filter((m) => !goneWrites.some((g) => g.uuid === m.uuid))
        .map((m) => ({ ...m, cids: whose(m.uuid).filter((cid) => !heldIds.has(cid)) })).filter((m) => m.cids.length);
      if (tried.length) {
        this.svc.notify("warn", this.svc.t.format("MINDSCAPE.Encounter.UpdateFailed", { what, names: namesOf(meta, tried.flatMap((m) => m.cids)), problems: problems(tried) }));
      }
      if (untried.length) {
        this.svc.notify("warn", this.svc.t.format("MINDSCAPE.Encounter.UpdateFailedHeld", {
          what, names: namesOf(meta, untried.flatMap((u) => u.cids)), problems: problems(untried), writes: this.writesWords(untried.map((u) => u.write)),
        }), { permanent: true });
      }
    }
    if (goneWrites.length || skipped.length) {
      // One notice for both: the writes that failed as their document went, and the combatants whose went before.
      const failedGone = goneWrites.length ? this.svc.t.format("MINDSCAPE.Encounter.UpdateFailedGone", {
        what, names: namesOf(meta, goneWrites.flatMap((g) => g.cids)), problems: problems(goneWrites), writes: this.writesWords(goneWrites.map((g) => g.write)),
      }) : "";
      const names = namesOf(meta, skipped);
      const skippedGone = !skipped.length ? ""
        : goneWrites.length ? ` ${this.svc.t.format("MINDSCAPE.Encounter.UpdateSkippedGoneToo", { names })}`
          : this.svc.t.format("MINDSCAPE.Encounter.UpdateSkippedGone", { what, names });
      this.svc.notify("warn", failedGone + skippedGone, { permanent: true });
    }
    return plan;
  }

  /**
   * Resolve the current step (force: missing choices count as none), apply, post cards.
   * The step waits in the exchange queue for any single exchange (or end of round) on one
   * of the encounter's actors, then takes every combatant again from its sheet
   * (`refreshNow`, already inside the queue) and resolves: the write-back starts from the
   * sheets as they are. When the companion refuses a sheet, nothing is resolved. Without
   * `force`, it first waits for every power-pool question still open whether a creature
   * joins a defense (`askJoins`, whichever *Ask for choices* asked it; each closes itself
   * at the world's defense timeout and its grace).
   */
  async resolve({ force = false, physical, revision = null } = {}) {
    // power-pool: a creature asked whether it joins a defense may still answer; the
    // question closes itself at the timeout. Resolve anyway does not wait.
    if (!force && this.joinQuestions.size) {
      this.svc.notify("info", this.svc.t.format("MINDSCAPE.Join.Waiting", { seconds: Math.round(this.svc.defenseTimeoutS()) }));
      // An ask made while this one waits is waited for too.
      while (this.joinQuestions.size) await Promise.all([...this.joinQuestions]);
    }
    const keys = (await this.participants()).map((p) => p.actorUuid);
    return this.svc.exchanges.run(keys, async () => {
      // The step the GM saw (`revision`, the panel's): an encounter that moved on since
      // (a double click's first resolve, another browser) is not resolved again unseen.
      if (revision !== null) await this.expectRevision(revision);
      const refreshed = await this.refreshNow();
      // A choice the sheets no longer allow was dropped: say whose (the resolve then waits
      // for them, or with force counts them as making none).
      this.svc.reportRefresh(refreshed, { quiet: true });
      // The refresh's own steps move the revision on: the resolve expects the last.
      const at = revision === null ? null : refreshed.reduce((r, x) => (Number.isInteger(x.revision) ? Math.max(r, x.revision) : r), revision);
      return this.resolveNow({ force, physical, revision: at });
    });
  }

  /**
   * Refuse to go on unless the encounter is at `revision`, as the companion answers a
   * stale one (4009, `StaleRevisionError`: the panel says the encounter changed and shows
   * it again).
   */
  async expectRevision(revision) {
    const now = await this.state();
    if (!now) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    if (now.revision !== revision) throw new StaleRevisionError({ code: 4009, message: "Stale revision", revision: now.revision ?? null });
  }

  /**
   * Resolve with the encounter's current copies; call only through `resolve`. Each
   * exchange's card names the encounter and the step's revision in its flags (an undo
   * marks it, `markUndone`). The GM is told whom a forced resolve went without, and what
   * a step without exchanges did (it posts no card): the companion's summary.
   */
  async resolveNow({ force, physical, revision = null }) {
    const meta = this.meta;
    return this.stepOf(meta.id, async () => {
      const params = { id: meta.id };
      if (force) params.force = true;
      if (revision !== null) params.revision = revision;
      const waiting = force ? (await this.state())?.waiting_for ?? [] : [];
      const call = (m, p) => this.svc.rpc(m, p);
      const usePhysical = physical ?? setting(this.game, "physicalDice");
      const answer = await this.stepCall("step", async () => (usePhysical
        ? (await callWithPhysicalDice(call, "encounter.resolve", params, (need) => this.svc.env.dialogs.diceDialog({ ...need, purposeLabel: this.svc.t.label(`MINDSCAPE.Purpose.${need.purpose}`, need.purpose) }))).result
        : call("encounter.resolve", params)), meta);
      const plan = await this.applyStep(answer, { meta });
      const idOf = (side) => side?.id ?? side?.after?.id ?? side?.before?.id;
      const name = (id) => meta.combatants?.[id]?.name ?? id;
      // Every id on a card (allies, puppets, a wave's targets) by the token's name.
      const names = new Map(Object.entries(meta.combatants ?? {}).map(([id, c]) => [id, c?.name ?? id]));
      // A defense paid at the round's start shows on the first card that shows its payer,
      // so that its PSPs read from the sheet's figure before the round.
      const unshown = defensePayments(answer);
      const results = resultsOfStep(answer);
      const messages = [];
      for (const result of results) {
        const attackerId = idOf(result.attacker);
        const entry = meta.combatants?.[attackerId];
        const speaker = entry ? await this.docsOf(entry).catch(() => null) : null;
        const paidBefore = new Map();
        for (const id of [attackerId, idOf(result.defender)]) {
          if (unshown.has(id)) paidBefore.set(id, unshown.get(id));
          unshown.delete(id);
        }
        const message = await this.svc.postCard(result, {
          attackerName: name(attackerId), defenderName: name(idOf(result.defender)), names, ...modesOfResult(result),
          paidBefore, physical: usePhysical, speakerActor: speaker?.actor, speakerToken: speaker?.token,
          card: { card: "exchange", system: result.system, outcome: result.outcome, encounter: meta.id, revision: answer?.revision ?? null },
        });
        messages.push(message);
        this.svc.env.Hooks.callAll("mindscape.resolved", { system: meta.system, result, encounter: meta.id, updates: plan, message });
      }
      // Once per step, also a step without an exchange (a round that only paid defenses).
      this.announce(meta, "step", answer, plan, messages);
      if (waiting.length) this.svc.notify("info", this.svc.t.format("MINDSCAPE.Encounter.Forced", { names: waiting.map(name).join(", ") }));
      if (!results.length && answer?.summary) this.svc.notify("info", this.svc.t.format("MINDSCAPE.Encounter.NoExchange", { summary: await this.namedSummary(answer.summary) }));
      return answer;
    });
  }

  /**
   * Undo the last step; the daemon's answer's updates (if any) restore the sheets, and
   * the step's chat cards are marked undone (`markUndone`). With no resolved step left,
   * the GM is told there is nothing to undo, and the answer is null.
   */
  async undo({ revision = null } = {}) {
    // In the exchange queue, as a resolve: never beside a refresh reading the same sheets.
    const keys = (await this.participants()).map((p) => p.actorUuid);
    return this.svc.exchanges.run(keys, async () => {
      const meta = this.meta;
      return this.stepOf(meta.id, async () => {
        // Reached first: a companion that is not running refuses this, and then nothing
        // can have been undone (see stepCall).
        await this.svc.rpc("encounter.get", { id: meta.id });
        let answer;
        try {
          // With the revision the GM saw: a double click's second undo is refused (4009), not a second step taken back.
          const params = revision === null ? { id: meta.id } : { id: meta.id, revision };
          answer = await this.stepCall("undo", () => this.svc.rpc("encounter.undo", params), meta);
        } catch (error) {
          if (!(error instanceof RulesError && error.data?.rule === NOTHING_TO_UNDO)) throw error;
          this.svc.notify("info", this.svc.t.localize("MINDSCAPE.Encounter.NothingToUndo"));
          return null;
        }
        const plan = await this.applyStep(answer, { undo: true, meta });
        await this.markUndone(answer?.undone, meta.id);
        this.announce(meta, "undo", answer, plan, [], { undone: Number.isInteger(answer?.undone) ? answer.undone : null });
        return answer;
      });
    });
  }

  /**
   * The companion's `summary` of a step or an action as the GM's notices show it: a
   * creature it quotes by its combatant id (one it was not given) by the encounter's
   * name for it, else as the table knows it (`withQuotedNames`), as the cards do.
   */
  async namedSummary(summary) {
    const names = new Map(Object.entries(this.meta.combatants ?? {}).map(([cid, entry]) => [cid, entry?.name ?? cid]));
    return namedSummary(summary, await this.svc.withQuotedNames(summary, names));
  }

  /**
   * Tell other modules and macros (`mindscape.encounterUpdated`, on this GM's browser)
   * that the encounter changed the combatants' sheets, once its write-back is applied:
   * a resolved step (`kind` "step", its cards in `messages`), an undo ("undo", `undone`:
   * the revision taken back) or a power-pool public action ("action", `combatant`: who
   * declared it). `meta` is the encounter the step was asked of: one that finishes after
   * End (or after a new encounter replaced it) is told as its own encounter's, not as
   * none or the new one's.
   */
  announce(meta, kind, answer, updates, messages, extra = {}) {
    this.svc.env.Hooks.callAll("mindscape.encounterUpdated", {
      system: meta.system, encounter: meta.id, kind, revision: answer?.revision ?? null, result: answer, updates, messages, ...extra,
    });
  }

  /**
   * Mark the chat cards of the step an undo took back (`revision`, the answer's
   * `undone`) in encounter `id`, the one the undo was asked of (ended or replaced since,
   * its cards are still its own): every client then shows them as undone (hooks.js
   * `onRenderChatMessage`). A card that cannot be marked (deleted meanwhile) does not
   * fail the undo.
   */
  async markUndone(revision, id) {
    if (!id || !Number.isInteger(revision)) return;
    const ours = (m) => m?.flags?.[MODULE_ID]?.encounter === id && m.flags[MODULE_ID].revision === revision;
    for (const message of this.game.messages?.filter?.(ours) ?? []) {
      try {
        await message.update({ [`flags.${MODULE_ID}.undone`]: true });
      } catch (error) {
        console.warn(`${MODULE_ID} | could not mark an undone step's card`, error);
      }
    }
  }

  /**
   * A resolve, undo or public action (`what`: "step", "undo", "action") whose answer may
   * be lost after the companion stored it (the connection broke, or something between
   * answered instead of it: the companion was reached just before, by the refresh or the
   * check before it). Then the sheets may lack a stored step, and the next refresh would
   * undo it: every combatant is held (as for `updates_failed`) and the GM is told, in a
   * notice that stays until dismissed, to look at the log before going on.
   *
   * `asked` is the encounter the step was asked of. Once it ended (or End is ending it,
   * or a new encounter replaced it) nothing is held (`saveHeld`): the GM is told that
   * the sheets may lack the step and that nothing will write it
   * (`MINDSCAPE.Encounter.UncertainEnded`, or `UncertainReplaced` for an encounter a new
   * one replaced), without its waiting writes, which End tells. For one changed elsewhere
   * (`tellStepAfterEnd`) the notice says only that it is no longer the
   * current one, ended or replaced, which nothing here knows (`UncertainElsewhere`).
   */
  async stepCall(what, call, asked) {
    try {
      return await call();
    } catch (error) {
      if (error instanceof DaemonUnreachableError || error instanceof DaemonHttpError) {
        // The encounter as it is now, while it is the same: a combatant added while the
        // step waited (a public action waits in the exchange queue) is held too.
        const same = this.meta.id === asked.id;
        const meta = same ? this.meta : asked;
        const ids = Object.keys(meta.combatants ?? {});
        const words = { what: this.svc.t.localize(STEP_WORDS[what]), names: namesOf(meta, ids) };
        const replaced = await this.replacedWrites(meta, same ? meta.held : null);
        if (await this.saveHeld(new Map(ids.map((cid) => [cid, { write: null }])), { id: asked.id })) {
          this.svc.notify("warn", this.svc.t.format("MINDSCAPE.Encounter.Uncertain", words) + replaced, { permanent: true });
        } else {
          const key = this.noLongerKey(asked.id, {
            ended: "MINDSCAPE.Encounter.UncertainEnded", replaced: "MINDSCAPE.Encounter.UncertainReplaced", elsewhere: "MINDSCAPE.Encounter.UncertainElsewhere",
          });
          this.svc.notify("warn", this.svc.t.format(key, words), { permanent: true });
        }
      }
      throw error;
    }
  }

  log() { return this.svc.rpc("encounter.log", { id: this.meta.id }); }

  /**
   * Forget the encounter here and in the daemon. A write Foundry missed that still waits
   * (a held combatant's `pendingWrite`) is told to the GM, in a notice that stays until
   * dismissed, with its document and fields: nothing tries it again. An end asked while
   * one is under way (a double click on *End*, whose button stays enabled) is that one,
   * so the GM is told once.
   */
  end() {
    this.ending ??= this.endNow().finally(() => { this.ending = null; });
    return this.ending;
  }

  /** `end`, once. */
  async endNow() {
    const pressed = structuredClone(this.meta);
    const id = pressed.id;
    // From now on a step that finishes tells its missed writes itself (`applyStep`); a
    // hold being stored already is waited for, so that it is told here.
    if (id) this.endedIds.add(id);
    await Promise.allSettled([...this.heldSaves]);
    // The encounter End ends, with the holds stored meanwhile; when another was set
    // elsewhere meanwhile (another GM's End or Create, a macro or a script), as it was
    // when End was pressed.
    const meta = this.stillOr(pressed);
    if (id) await this.svc.rpc("encounter.delete", { id }).catch(() => null);
    // A Create under way when End was pressed replaced the encounter meanwhile: the new
    // one stays, and that Create tells the old one's waiting writes (`createNow`). It took
    // it over (`replacedIds`) before its new meta is stored, which in Foundry is a round
    // trip to the server: the meta read here may still be the old one then.
    if (id && this.replacedIds.has(id)) return;
    // One set elsewhere meanwhile stays; End still tells what it ended, else
    // the steps finishing after End started would wait in its record, told by nobody.
    if (this.meta.id === id) await this.saveMeta({}, { told: id });
    await this.tellWaitingWrites(meta);
  }

  /**
   * Tell the GM of the writes Foundry missed that still wait in `meta`, an encounter that
   * ended (`EndedBehind`; `ReplacedBehind` for one a new encounter replaced, `createNow`,
   * which nobody ended): each waits for the next step to be tried again, which never
   * comes now, so the sheet stays behind until the GM puts it right by hand (`writesWords`: in plain words,
   * without a document deleted meanwhile). A hold without a write (the companion's
   * write-back failed, or its answer was lost) says nothing more: the GM was told of it
   * in a notice that stays. Steps that finished since End started (`tellStepAfterEnd`)
   * are newer than every hold: they are folded in after them, in the order they finished,
   * and the result is told once. A write whose document is gone by then (deleted since it
   * missed) is left out, held or a step's: there is no sheet to put right.
   */
  async tellWaitingWrites(meta) {
    if (!meta.id) return;
    const held = Object.entries(meta.held ?? {}).filter(([, hold]) => hold?.write).map(([cid, hold]) => [cid, hold.write]);
    const record = this.endedRecord(meta.id);
    // The held writes' documents in the same lookups as the steps': one deleted while
    // another is looked up is not told.
    const gone = await this.goneOf(record, held.map(([, write]) => write.uuid));
    const found = held.filter(([, write]) => !gone.has(write.uuid));
    // From here on without awaiting: a step finishing later tells what it changes itself.
    foldStep(record.behind, { missed: found.map(([cid, write]) => ({ cids: [cid], write })) });
    for (const step of record.steps) foldStep(record.behind, step);
    for (const uuid of gone) record.behind.delete(uuid);
    record.steps = [];
    record.told = true;
    const behind = [...record.behind.values()];
    // Read before `forgetEnded` drops the id from `replacedIds`.
    const key = this.replacedIds.has(meta.id) ? "MINDSCAPE.Encounter.ReplacedBehind" : "MINDSCAPE.Encounter.EndedBehind";
    this.forgetEnded(meta.id);
    if (!behind.length) return;
    this.svc.notify("warn", this.svc.t.format(key, { names: namesOf(meta, behind.flatMap((b) => b.cids)), writes: this.writesWords(behind.map((b) => b.write)) }), { permanent: true });
  }

  /**
   * Of the documents `held` (uuids of held writes) and those of the writes Foundry missed
   * that the steps in `record` (an `afterEnd` record End has not told yet) hold, the ones
   * gone now (their token or actor deleted since). A step recorded while these are
   * looked up is looked at too, so that none is left unchecked when the caller goes on
   * without awaiting. The held ones are looked up after the steps' known at the start,
   * so one deleted while a step's is looked up is found gone. (A document deleted while
   * a later one is looked up is not: that would take a lookup that does not wait, and in
   * Foundry looking up a world document does not let another event run meanwhile.)
   * @returns {Promise<Set<string>>}  their uuids
   */
  async goneOf(record, held = []) {
    const checked = new Set();
    const gone = new Set();
    for (;;) {
      const uuids = [...new Set([...record.steps.flatMap((step) => step.missed.map((m) => m.write.uuid)), ...held])].filter((uuid) => !checked.has(uuid));
      if (!uuids.length) return gone;
      for (const uuid of uuids) {
        checked.add(uuid);
        if (!(await this.svc.env.fromUuid(uuid).catch(() => null))) gone.add(uuid);
      }
    }
  }

  /**
   * Run `step`, a resolve, undo or public action asked of encounter `id` (or an `add` to
   * it), counted as under way until it finished (`stepsUnderWay`): should that encounter
   * end meanwhile, what the step writes and misses still reaches its `afterEnd` record,
   * and an add still knows it ended here (`forgotten`). Count from the moment the
   * step reads the encounter, so that End cannot drop the record before the step is seen.
   */
  async stepOf(id, step) {
    const runs = this.stepsUnderWay.get(id) ?? new Set();
    this.stepsUnderWay.set(id, runs);
    const under = { run: null };
    runs.add(under);
    try {
      under.run = step();
      return await under.run;
    } finally {
      runs.delete(under);
      if (!runs.size) {
        this.stepsUnderWay.delete(id);
        this.forgetEnded(id);
      }
    }
  }

  /**
   * Forget encounter `id` as ended (its `afterEnd` record, `endedIds`, `replacedIds`) once
   * End (or the new encounter that replaced it) told what to make by hand and no step
   * asked of it is under way: no step can reach it any more, and its id is not reused.
   * Every step that writes back is counted (`resolveNow`, `undo` and `declare` run in
   * `stepOf`); one that were not and came after all would be told at once, as of an
   * encounter changed elsewhere (`tellStepAfterEnd`), never kept silent in a
   * record nobody tells.
   */
  forgetEnded(id) {
    if (!this.afterEnd.get(id)?.told || this.stepsUnderWay.has(id)) return;
    this.afterEnd.delete(id);
    this.endedIds.delete(id);
    this.replacedIds.delete(id);
  }

  /** What is to be made by hand after encounter `id` ended (`afterEnd`). */
  endedRecord(id) {
    if (!this.afterEnd.has(id)) this.afterEnd.set(id, { told: false, steps: [], behind: new Map() });
    return this.afterEnd.get(id);
  }

  /**
   * A step (`what`) of encounter `meta` finished after End started (or after a new
   * encounter replaced it): its writes that `landed` and that Foundry `missed`
   * (`foldStep`). Before End has told what to make by hand, this is only recorded (End
   * tells it with the rest). After, the GM is told what changes, in notices that stay: a
   * field End told that this step wrote after all needs no hand now
   * (`MINDSCAPE.Encounter.EndedWritten`: else the GM, following End's notice, would set
   * the older value over it); a write it missed is to be made by hand, as End's are
   * (`EndedBehind`), saying which values told before it replaces (`EndedReplaced`). For
   * an encounter a new one replaced (`createNow`), which nobody ended, the same is told
   * in its own words (`ReplacedWritten`, `ReplacedBehind`, `ReplacedNewer`).
   *
   * An encounter neither ended nor replaced here (not in `endedIds`, which keeps the id
   * while a step asked of it is under way, `stepOf`) ended or was replaced elsewhere:
   * another GM's, which became the one that talks to the companion, or a macro or a
   * script (in this browser too) set another current encounter. Nothing here knows
   * which, and no End here tells its writes, so the writes this step missed are told at once, in words that say only that
   * (`ElsewhereBehind`); no notice here told any of its fields before, so none is
   * corrected (a notice in the browser that ended it is not known here). But a macro's
   * change, in the active GM's client, waits for this step to tell the encounter's
   * holds (`tellSetElsewhere`): it takes the step and tells its missed writes with them,
   * in one notice, as made outside End and Create.
   */
  tellStepAfterEnd(meta, step, what) {
    const t = this.svc.t;
    if (!meta.id || !this.endedIds.has(meta.id)) {
      // A change of the setting outside End and Create that waits for this step tells
      // what it did with the encounter's holds, in one notice (`tellSetElsewhere`).
      const waiting = this.setElsewhereSteps.get(meta.id);
      if (waiting) {
        waiting.push(step);
        return;
      }
      if (!step.missed.length) return;
      const words = { what, names: namesOf(meta, step.missed.flatMap((m) => m.cids)), writes: this.writesWords(step.missed.map((m) => m.write)) };
      this.svc.notify("warn", t.format("MINDSCAPE.Encounter.ElsewhereBehind", words), { permanent: true });
      return;
    }
    // An encounter ended (or ending) here is told by End, with the rest, until End told it.
    const record = this.endedRecord(meta.id);
    if (!record.told) {
      record.steps.push(step);
      return;
    }
    const { rewritten, replaced } = foldStep(record.behind, step);
    // Keys written out whole, so that the language file's check finds each.
    const keys = this.replacedIds.has(meta.id)
      ? { written: "MINDSCAPE.Encounter.ReplacedWritten", behind: "MINDSCAPE.Encounter.ReplacedBehind", newer: "MINDSCAPE.Encounter.ReplacedNewer" }
      : { written: "MINDSCAPE.Encounter.EndedWritten", behind: "MINDSCAPE.Encounter.EndedBehind", newer: "MINDSCAPE.Encounter.EndedReplaced" };
    if (rewritten.length) {
      const words = { what, names: namesOf(meta, rewritten.flatMap((r) => r.cids)), writes: this.writesWords(rewritten.map((r) => r.write)) };
      this.svc.notify("warn", t.format(keys.written, words), { permanent: true });
    }
    if (!step.missed.length) return;
    const behind = t.format(keys.behind, { names: namesOf(meta, step.missed.flatMap((m) => m.cids)), writes: this.writesWords(step.missed.map((m) => m.write)) });
    const instead = replaced.length ? ` ${t.format(keys.newer, { writes: this.writesWords(replaced) })}` : "";
    this.svc.notify("warn", behind + instead, { permanent: true });
  }

  /**
   * The sentence the notice of a hold the companion made (`{write: null}`: nothing is
   * tried again, the GM brings the sheets in line) adds for the writes Foundry missed
   * that such holds replace in `held` (combatant id → hold): their values would be
   * known nowhere else, so the GM is told them with what to put right; "" when none wait.
   */
  async replacedWrites(meta, held) {
    const found = await this.presentWrites(held);
    if (!found.length) return "";
    return ` ${this.svc.t.format("MINDSCAPE.Encounter.WaitingReplaced", { names: namesOf(meta, found.map(([cid]) => cid)), writes: this.writesWords(found.map(([, w]) => w)) })}`;
  }

  /**
   * The writes Foundry missed that wait in `held` (combatant id → hold), as
   * `[combatant id, write]`: a write whose document is gone (its token or actor deleted
   * meanwhile) is left out, there is no sheet to put right.
   * @returns {Promise<[string, {uuid:string, update:object}][]>}
   */
  async presentWrites(held) {
    const out = [];
    for (const [cid, hold] of Object.entries(held ?? {})) {
      const write = hold?.write;
      if (write && (await this.svc.env.fromUuid(write.uuid).catch(() => null))) out.push([cid, write]);
    }
    return out;
  }

  /**
   * `writes` (`{uuid, update}`) as the GM makes them by hand: each document, then each
   * field and its value, or "remove <field>" for Foundry's deletion (`-=key`), which is
   * no value to set; a document told once.
   */
  writesWords(writes) {
    const lines = new Set();
    for (const write of writes) {
      const fields = Object.entries(write.update).map(([path, value]) => (isDeletion(path)
        ? this.svc.t.format("MINDSCAPE.Encounter.WriteRemove", { path: keysOf(path).join(".") })
        : `${path} = ${JSON.stringify(value)}`));
      lines.add(`${write.uuid}: ${fields.join(", ")}`);
    }
    return [...lines].join("; ");
  }
}

/**
 * Watches one encounter over the daemon's WebSocket: authenticate with the first message,
 * `encounter.watch`, then call `onChange` for each `encounter.changed` notification.
 * Reconnects with a growing delay while `close()` was not called. The notice of the
 * encounter's deletion (`deleted: true`) closes the watcher instead: there is nothing
 * left to fetch, and asking the companion for it would only be refused.
 */
export class EncounterWatcher {
  constructor({ url, token, id, onChange, WebSocketImpl = globalThis.WebSocket, retryMs = 2000 }) {
    this.wsUrl = `${String(url).replace(/\/+$/, "").replace(/^http/, "ws")}/ws`;
    Object.assign(this, { token, id, onChange, WebSocketImpl, retryMs, closed: false, socket: null, nextId: 1 });
  }

  open() {
    if (this.closed || !this.WebSocketImpl) return;
    const ws = new this.WebSocketImpl(this.wsUrl);
    this.socket = ws;
    ws.onopen = () => {
      this.retry = this.retryMs;
      ws.send(JSON.stringify({ jsonrpc: "2.0", method: "auth", params: { token: this.token }, id: this.nextId++ }));
      ws.send(JSON.stringify({ jsonrpc: "2.0", method: "encounter.watch", params: { id: this.id }, id: this.nextId++ }));
    };
    ws.onmessage = (event) => {
      let msg;
      try { msg = JSON.parse(event.data); } catch { return; }
      if (this.closed || msg?.method !== "encounter.changed" || msg.params?.id !== this.id) return;
      if (msg.params.deleted) this.close();
      else this.onChange(msg.params);
    };
    ws.onclose = () => {
      if (this.closed) return;
      this.retry = Math.min((this.retry ?? this.retryMs) * 2, 30000);
      setTimeout(() => this.open(), this.retry);
    };
  }

  close() {
    this.closed = true;
    this.socket?.close();
  }
}

/**
 * The encounter panel class, made at runtime from Foundry's ApplicationV2 (v12+).
 * @param {any} foundry  the `foundry` global
 * @param {import("./service.js").Mindscape} svc
 */
export function makeEncounterPanel(foundry, svc) {
  const { ApplicationV2, HandlebarsApplicationMixin } = foundry.applications.api;
  return class EncounterPanel extends HandlebarsApplicationMixin(ApplicationV2) {
    static DEFAULT_OPTIONS = {
      id: `${MODULE_ID}-encounter`,
      classes: [MODULE_ID, "mindscape-encounter"],
      window: { title: "MINDSCAPE.Encounter.Title", icon: "fas fa-brain", resizable: true },
      position: { width: 460, height: "auto" },
      actions: {
        create: EncounterPanel.#run("create", (c) => c.create(selectedTokenUuids(svc.game))),
        add: EncounterPanel.#run("add", (c) => c.add(selectedTokenUuids(svc.game))),
        ask: EncounterPanel.#run("ask", (c) => c.collectChoices()),
        act: EncounterPanel.#run("act", (c, _panel, target) => c.act(target?.dataset?.combatant)),
        refresh: EncounterPanel.#run("refresh", async (c) => svc.reportRefresh(await c.refresh({ takeHeld: true }))),
        resolve: EncounterPanel.#run("resolve", (c, panel) => c.resolve({ revision: panel.shownRevision })),
        force: EncounterPanel.#run("force", (c, panel) => c.resolve({ force: true, revision: panel.shownRevision })),
        undo: EncounterPanel.#run("undo", (c, panel) => c.undo({ revision: panel.shownRevision })),
        log: EncounterPanel.#toggleLog,
        end: EncounterPanel.#end,
      },
    };

    static PARTS = { body: { template: `modules/${MODULE_ID}/templates/encounter.hbs` } };

    /**
     * A button's action, run once at a time: ApplicationV2 runs an action's handler on
     * every click, so while it runs its button is disabled and another click of it is
     * ignored (a double click on *Undo step* took back two steps, on *Create* made two
     * encounters). Step actions name the revision the panel shows (`revision`), which
     * the companion refuses once the encounter moved on (4009: the GM is told the
     * encounter changed, and the panel shows it again). (`shownRevision` and
     * `runningActions` are the panel's own, named apart from ApplicationV2's.)
     * @param {string} name
     * @param {(controller:EncounterController, panel:any, target:HTMLElement) => Promise<unknown>} fn
     */
    static #run(name, fn) {
      return async function action(_event, target) {
        this.runningActions ??= new Set();
        if (this.runningActions.has(name)) return undefined;
        this.runningActions.add(name);
        const button = target && "disabled" in target ? target : null;
        if (button) button.disabled = true;
        try {
          await fn(svc.encounters, this, target);
        } catch (error) {
          svc.notifyError(error);
        } finally {
          this.runningActions.delete(name);
          if (button) button.disabled = false;
        }
        return redraw(this);
      };
    }

    /**
     * End the encounter: stop watching it first, so that the companion's notice of its
     * deletion does not redraw the panel with an encounter it no longer knows; the log
     * shown was that encounter's.
     */
    static async #end() {
      this.watch(null);
      this.showLog = false;
      try {
        await svc.encounters.end();
      } catch (error) {
        svc.notifyError(error);
      }
      return redraw(this);
    }

    /** *Log* shows the log, and pressed again hides it. */
    static async #toggleLog() {
      this.showLog = !this.showLog;
      return redraw(this);
    }

    async _prepareContext() {
      let view;
      try {
        view = encounterView(await svc.encounters.state(), svc.encounters.meta, svc.t.label);
      } catch (error) {
        svc.notifyError(error);
        view = { active: false };
      }
      // The revision shown: what *Resolve* and *Undo step* expect the encounter to be at.
      this.shownRevision = view.active && Number.isInteger(view.revision) ? view.revision : null;
      const log = this.showLog && view.active ? await this.logEntries() : [];
      // A panel drawn again while an action runs (the companion's notice of a change) keeps its button disabled.
      const busy = Object.fromEntries([...(this.runningActions ?? [])].map((name) => [name, true]));
      return { ...view, log, showLog: Boolean(this.showLog && view.active), busy };
    }

    /**
     * The log's lines, fetched at every render while it is shown: a step resolved or
     * undone meanwhile (the panel renders on each `encounter.changed`) shows at once.
     * When the companion cannot give it, the GM is told and the log is hidden.
     */
    async logEntries() {
      try {
        const log = await svc.encounters.log();
        const entries = Array.isArray(log) ? log : (log?.steps ?? log?.entries ?? []);
        return entries.map((e, i) => ({ n: e.revision ?? i + 1, text: logLine(e, svc.t.label) }));
      } catch (error) {
        svc.notifyError(error);
        this.showLog = false;
        return [];
      }
    }

    _onRender() {
      this.watch(svc.encounters.meta.id ?? null);
    }

    /** Watch encounter `id` (the current one), or nothing when `id` is null. */
    watch(id) {
      if (id && this.watcher?.id === id) return;
      this.watcher?.close();
      this.watcher = null;
      if (!id) return;
      this.watcher = new EncounterWatcher({
        url: setting(svc.game, "daemonUrl"), token: setting(svc.game, "daemonToken"), id,
        onChange: () => redraw(this), WebSocketImpl: svc.env?.WebSocket ?? globalThis.WebSocket,
      });
      this.watcher.open();
    }

    async close(options) {
      this.watch(null);
      return super.close(options);
    }
  };
}

/**
 * Draw the panel `app` again, unless it was closed meanwhile (an action still running,
 * a change the watcher heard): Foundry v12's ApplicationV2#render prepares the context,
 * asking the companion for the encounter, before it finds a closed window is not drawn,
 * and a failure of that would be told for a window no longer open. (`rendered` is
 * ApplicationV2's; a class without it is drawn.)
 */
function redraw(app) {
  return app.rendered === false ? app : app.render();
}

/** One line of the encounter log: the step's kind and its exchanges' summaries. */
export function logLine(entry, label = (_k, f) => f) {
  const summaries = resultsOfStep(entry.result ?? entry).map((r) => r.summary).filter(Boolean);
  const kind = label(`MINDSCAPE.Encounter.Step.${entry.kind}`, entry.kind ?? "");
  const undone = entry.undone_by ? ` (${label("MINDSCAPE.Encounter.Undone", "undone")})` : "";
  return `#${entry.revision ?? "?"} ${kind}${undone}${summaries.length ? ": " + summaries.join(" ") : ""}`;
}

/** The uuids of the tokens this user has selected on the canvas. */
export function selectedTokenUuids(game) {
  return (globalThis.canvas?.tokens?.controlled ?? []).map((t) => t.document.uuid);
}
