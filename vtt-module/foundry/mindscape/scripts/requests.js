/**
 * Pure request building: which adapter reads this world's actors, how a token becomes a
 * combatant reference, what the attack and defense objects of each rule system look like,
 * and how the daemon's descriptions and odds become something a dialog can show.
 */
import { idLabel } from "./labels.js";

/** Foundry system id -> the daemon adapter that reads its actors. */
export const ADAPTER_BY_FOUNDRY_SYSTEM = {
  dnd5e: "foundry.dnd5e",
  ose: "foundry.ose",
  ars: "foundry.ars",
  "acks2-arsbase": "foundry.ars",
};

/** Mode ids per rule system (RULES.md §1.2, §2.2, §3.3), used when the daemon's description has none. */
export const FALLBACK_MODES = {
  "revised-2e": {
    attacks: ["ego-whip", "id-insinuation", "mind-thrust", "psionic-blast", "psychic-crush"],
    defenses: ["intellect-fortress", "mental-barrier", "mind-blank", "thought-shield", "tower-of-iron-will"],
  },
  "combat-strength": {
    attacks: ["psionic-wave", "mind-thrust", "ego-whip", "id-insinuation", "psychic-implosion"],
    defenses: ["mind-blank", "shield-thoughts", "mental-barrier", "intellect-fortress", "tower-of-iron-will"],
  },
  "power-pool": {
    attacks: ["mental-stab", "personality-invasion", "psionic-wave", "subconscious-subversion", "synaptic-overload"],
    defenses: ["barrier-mantra", "blank-mind", "cognitive-labyrinth", "imagination-swarm", "pinnacle-of-will"],
  },
};

/** Range bands of the systems that have them. */
export const RANGES = ["short", "medium", "long"];

/** power-pool: how a controller keeps the control an attack wins (`attack.keep_by`). */
export const KEEP_BY = ["die", "action"];

/**
 * The adapter for a Foundry game system: a known one, else the first daemon adapter for
 * Foundry named after the system, else `foundry.generic`.
 * @param {string} foundrySystemId  `game.system.id`
 * @param {{id:string, vtt?:string}[]} [adapters]  from `adapters.list`, when known
 */
export function adapterFor(foundrySystemId, adapters = []) {
  const known = ADAPTER_BY_FOUNDRY_SYSTEM[foundrySystemId];
  const ids = adapters.map((a) => a.id);
  if (known && (ids.length === 0 || ids.includes(known))) return known;
  const named = `foundry.${foundrySystemId}`;
  if (ids.includes(named)) return named;
  return "foundry.generic";
}

/** What of a class item any Foundry adapter reads (adapters/foundry.py `class_item_paths`, ARS's `class_item`). */
const CLASS_ITEM_PATHS = ["_id", "name", "type", "system.levels", "system.hitDice", "system.hd", "system.identifier", "system.advancement", "system.ranks"];

/** Copy `path` (dotted) of `from` into `to`, when `from` holds it. */
function copyPath(from, to, path) {
  const parts = path.split(".");
  let source = from;
  for (const part of parts) {
    if (source === null || typeof source !== "object" || Array.isArray(source) || !Object.hasOwn(source, part)) return;
    source = source[part];
  }
  let target = to;
  for (const part of parts.slice(0, -1)) target = target[part] ??= {};
  target[parts.at(-1)] = source;
}

/** Every dotted path a generic mapping (adapters/data/mapping.schema.json) reads, `|max` aside. */
function mappedPaths(mapping) {
  const fieldSets = [mapping?.fields, ...Object.values(mapping?.systems ?? {})];
  return fieldSets.flatMap((fields) => Object.values(fields ?? {}))
    .map((source) => (typeof source === "string" ? source : source?.path))
    .filter((path) => typeof path === "string")
    .map((path) => path.replace(/\|max$/, ""));
}

/**
 * The actor data sent to the companion: what its adapters may read, not the whole of
 * `actor.toObject()`, which is mostly items (spell and feature texts: 100 to 160 KB for
 * a dnd5e character) and other modules' flags. A round's end or a rest of a dozen such
 * actors would pass the companion's 1 MiB a request. Kept: the id, name, type and game
 * system, the whole `system` data, the psionic state (`flags.mindscape`), the class
 * items with only what is read of them (a level, a hit die), and for `foundry.generic`
 * every path its mapping names (the whole `items` when one is under it). The companion
 * trims what it stores further (docs/ADAPTERS.md, "What an encounter keeps of a sheet").
 */
export function sentActor(raw, adapter, mapping = null) {
  if (!raw || typeof raw !== "object") return raw;
  const out = {};
  for (const path of ["_id", "name", "type", "_stats.systemId", "system", "flags.mindscape"]) copyPath(raw, out, path);
  // (what is under `system` or `flags.mindscape` went whole already)
  const mapped = adapter === "foundry.generic" ? mappedPaths(mapping).filter((path) => !/^(system|flags\.mindscape)(\.|$)/.test(path)) : [];
  for (const path of mapped) copyPath(raw, out, path);
  if (mapped.some((path) => path === "items" || path.startsWith("items."))) out.items = raw.items;
  else if (Array.isArray(raw.items)) {
    out.items = raw.items.filter((item) => item?.type === "class").map((item) => {
      const kept = {};
      for (const path of CLASS_ITEM_PATHS) copyPath(item, kept, path);
      return kept;
    });
  }
  return out;
}

/**
 * Where the adapters read ability scores: dnd5e's and ARS's `abilities`, OSE's `scores`
 * (adapters/foundry.py `sheet_paths`).
 */
const SCORE_PATHS = ["abilities", "scores"].flatMap((group) => ["int", "wis", "con"].map((key) => `${group}.${key}.value`));

/**
 * `sent` (from `actor.toObject()`, the stored source data) with each ability score it
 * holds as the sheet shows it: Foundry applies Active Effects to the prepared
 * `actor.system` only, so a Headband of Intellect's 19 (or an ARS effect) would
 * otherwise reach the companion as the stored 9, which sets revised-2e's MAC, Int bonus
 * and Wisdom check. Nothing else is taken from the prepared data (what is written back
 * must be what is stored), and no score is added that the source lacks.
 */
export function withShownScores(sent, actor) {
  const system = sent?.system;
  for (const path of SCORE_PATHS) {
    const keys = path.split(".");
    const holder = keys.slice(0, -1).reduce((at, key) => (at && typeof at === "object" ? at[key] : undefined), system);
    const shown = keys.reduce((at, key) => (at && typeof at === "object" ? at[key] : undefined), actor?.system);
    if (holder && typeof holder === "object" && Object.hasOwn(holder, "value") && Number.isFinite(shown)) holder.value = shown;
  }
  return sent;
}

/**
 * A combatant given to the daemon as raw Foundry data: the actor seen through the token
 * used (an unlinked token's synthetic actor), plus the token's uuid and link so the
 * adapter can address its write-back to the right document, and the token's name, which
 * names the combatant: the companion's summaries then name each creature as the card's
 * header and the table do ("Skum", not its base actor "Aboleth"; docs/ADAPTERS.md).
 * @param {{toObject:()=>object}} actor
 * @param {{uuid:string, actorLink:boolean, name?:string}|null} tokenDocument
 * @param {string} adapter
 * @param {object|null} [mapping]  the world's mapping for `foundry.generic`
 */
export function combatantRef(actor, tokenDocument, adapter, mapping = null) {
  const data = {
    actor: withShownScores(sentActor(actor.toObject(), adapter, mapping), actor),
    token: tokenDocument ? { uuid: tokenDocument.uuid, actorLink: Boolean(tokenDocument.actorLink) } : null,
  };
  if (data.token && typeof tokenDocument.name === "string" && tokenDocument.name.trim()) data.token.name = tokenDocument.name;
  // foundry.generic reads the sheet through the world's mapping file (docs/ADAPTERS.md).
  if (adapter === "foundry.generic" && mapping) data.mapping = mapping;
  return { adapter, data };
}

/** A value as a refusal quotes it: its JSON, "nothing" for undefined. */
export function quoted(value) {
  if (value === undefined) return "nothing";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The fields of each built-in system's attack, as `attackFromForm` reads them. */
const ATTACK_FIELDS = { "revised-2e": ["mode", "multiplier", "range"], "combat-strength": ["mode", "range"], "power-pool": ["mode", "pool_dice", "keep_by", "decline"] };
/** What the attack dialog's form sends beside them (the target of its odds, the defense assumed, physical dice). */
const DIALOG_FIELDS = ["target", "assumeDefense", "physical"];

/**
 * What is wrong with an attack as a macro (or any client) sends it, before it is turned
 * into the companion's attack object: `attackFromForm` reads the dialog's fields and
 * would quietly take a range it does not know as "short" or an unreadable multiplier as
 * 1, which from a macro resolves another attack than the one asked. The dialog never
 * sends such values. Answers the first problem, `{field, rule, got}` (`rule`: the
 * MINDSCAPE.Error.AttackRule key), or null.
 * @param {string} system
 * @param {unknown} attack
 * @returns {{field:string, rule:string, got:string}|null}
 */
export function attackProblem(system, attack) {
  const problem = (field, got) => ({ field: `attack.${field}`, rule: `MINDSCAPE.Error.AttackRule.${field}`, got: quoted(got) });
  if (!attack || typeof attack !== "object" || Array.isArray(attack)) return { field: "attack", rule: "MINDSCAPE.Error.AttackRule.attack", got: quoted(attack) };
  // A field the system's attack has not (a typo such as `multipler`, another system's
  // field) would be dropped and another attack made than the one asked.
  const fields = ATTACK_FIELDS[system];
  const stray = fields && Object.keys(attack).find((k) => !fields.includes(k) && !DIALOG_FIELDS.includes(k));
  if (stray) return { field: `attack.${stray}`, rule: "MINDSCAPE.Error.AttackRule.unknown", got: quoted(attack[stray]), data: { fields: fields.join(", ") } };
  if (typeof attack.mode !== "string" || !attack.mode.trim()) return problem("mode", attack.mode);
  const given = (k) => attack[k] !== undefined && attack[k] !== null && attack[k] !== "";
  const wholeAtLeastOne = (v) => /^\s*\d+\s*$/.test(String(v)) && Number(v) >= 1;
  if (system === "revised-2e" && given("multiplier") && !wholeAtLeastOne(attack.multiplier)) return problem("multiplier", attack.multiplier);
  if ((system === "revised-2e" || system === "combat-strength") && given("range") && !RANGES.includes(attack.range)) return problem("range", attack.range);
  if (system === "power-pool" && given("pool_dice") && !wholeAtLeastOne(attack.pool_dice)) return problem("pool_dice", attack.pool_dice);
  if (system === "power-pool" && given("keep_by") && !KEEP_BY.includes(attack.keep_by)) return problem("keep_by", attack.keep_by);
  if (system === "power-pool" && given("decline") && !(Array.isArray(attack.decline) && attack.decline.every((c) => typeof c === "string" && c))) return problem("decline", attack.decline);
  return null;
}

/**
 * The effects of attack mode `mode` (a `systems.describe` entry's `on_success`) the
 * attacker may decline (`optional`: power-pool's Subconscious Subversion may frighten).
 * @param {{on_success?:{condition?:string, optional?:boolean}[]}|undefined} mode
 * @returns {string[]}
 */
export function declinableOf(mode) {
  return (Array.isArray(mode?.on_success) ? mode.on_success : [])
    .filter((e) => e?.optional === true && typeof e.condition === "string").map((e) => e.condition);
}

/**
 * A choice form's boxes sparing an effect the modes `attacks` let the attacker decline
 * (`declinableOf`), each labelled with the modes it goes with (`t`: the service's
 * `label` and `format`), and `declineModes`, the "mode:condition" pairs they hold for
 * (what `declinedFor` keeps).
 * @returns {{declinable:{value:string, label:string}[], declineModes:string}}
 */
export function declineBoxes(attacks, t) {
  const pairs = declinePairs(attacks);
  return {
    declinable: [...new Set(pairs.map((p) => p.condition))].map((condition) => ({
      value: condition,
      label: t.format("MINDSCAPE.Attack.Decline", {
        condition: idLabel(t.label, "Condition", condition),
        modes: pairs.filter((p) => p.condition === condition).map((p) => idLabel(t.label, "Mode", p.mode)).join(", "),
      }),
    })),
    declineModes: pairs.map(pairKey).join(","),
  };
}

/** Each effect a mode of `attacks` lets the attacker decline, as `{mode, condition}`. */
function declinePairs(attacks) {
  return (attacks ?? []).flatMap((m) => declinableOf(m).map((condition) => ({ mode: m.id, condition })));
}

/** A pair of `declinePairs` as `declinedFor` reads it: "mode:condition". */
const pairKey = (p) => `${p.mode}:${p.condition}`;

/**
 * The effects of `decline` (the ticked boxes) that attack mode `mode` may decline by the
 * pairs `declineModes` ("mode:condition", `declineBoxes`): the companion refuses
 * declining an effect the mode has not, and a box stays ticked when the mode is changed
 * after it.
 * @returns {string[]}
 */
export function declinedFor(decline, declineModes, mode) {
  const may = Array.isArray(declineModes) ? declineModes : String(declineModes ?? "").split(",");
  return [].concat(decline ?? []).filter((c) => may.includes(`${mode}:${c}`));
}

/**
 * `form` (the attack dialog's) with `decline` kept to what its chosen mode may decline
 * (`declinedFor`, by the modes `attacks`), and left out when that is nothing.
 */
export function withDeclined(form, attacks) {
  const { decline, ...rest } = form ?? {};
  const kept = declinedFor(decline, declinePairs(attacks).map(pairKey), rest.mode);
  return kept.length ? { ...rest, decline: kept } : rest;
}

/**
 * The attack object of `exchange.resolve` for a rule system, from the dialog's fields.
 * Only the fields that system reads are sent: the daemon's schema rejects the others.
 * @param {string} system
 * @param {{mode:string, multiplier?:any, range?:string, pool_dice?:any}} form
 */
export function attackFromForm(system, form) {
  const attack = { mode: String(form.mode) };
  if (system === "revised-2e") {
    attack.multiplier = Math.max(1, parseInt(form.multiplier ?? 1, 10) || 1);
    attack.range = RANGES.includes(form.range) ? form.range : "short";
  } else if (system === "combat-strength") {
    attack.range = RANGES.includes(form.range) ? form.range : "short";
  } else if (system === "power-pool") {
    const n = parseInt(form.pool_dice, 10);
    if (Number.isInteger(n) && n > 0) attack.pool_dice = n;
    // How control is kept if the attack wins (RULES.md §3.4); left out, the companion's
    // default (an action each round).
    if (KEEP_BY.includes(form.keep_by)) attack.keep_by = form.keep_by;
    // Effects the attacker chose not to use (seed 001: Subversion "may" frighten).
    const decline = [].concat(form.decline ?? []).filter((c) => typeof c === "string" && c);
    if (decline.length) attack.decline = decline;
  } else {
    for (const [k, v] of Object.entries(form)) if (k !== "mode" && v !== "" && v != null) attack[k] = v;
  }
  return attack;
}

/**
 * The defense object for a rule system, or null for "no defense". A power-pool mind
 * with no mode still rolls its pool and may sacrifice a spell (seed 001): a sacrifice
 * chosen with no mode goes as a defense without a mode.
 * @param {string} system
 * @param {{mode?:string|null, sacrifice?:any, paid?:boolean}|null} choice
 */
export function defenseFromChoice(system, choice) {
  if (!choice) return null;
  const defense = choice.mode ? { mode: String(choice.mode) } : {};
  if (system === "power-pool") {
    const s = parseInt(choice.sacrifice, 10);
    if (Number.isInteger(s) && s > 0) defense.sacrifice = s;
  }
  if (!defense.mode && !defense.sacrifice) return null;
  if (system === "revised-2e" && choice.paid) defense.paid = true;
  return defense;
}

/**
 * Params of `exchange.resolve` (and, without dice and seed, of `exchange.odds`).
 */
export function exchangeParams({ system, attacker, defender, attack, defense, options, dice, seed }) {
  const params = { system, attacker, defender, attack, defense: defense ?? null };
  if (options && Object.keys(options).length) params.options = options;
  if (dice) params.dice = dice;
  if (seed !== undefined && seed !== null) params.seed = seed;
  return params;
}

/** `exchange.odds` takes the same params without dice or seed. */
export function oddsParams(params) {
  const { dice: _dice, seed: _seed, ...rest } = params;
  return rest;
}

function modeEntry(m) {
  if (typeof m === "string") return { id: m };
  if (m && typeof m === "object" && typeof m.id === "string") return { ...m };
  return null;
}

/**
 * Attack and defense modes from `systems.describe`, whatever list/map shape it uses:
 * `{attacks:[...], defenses:[...]}`, `{attack:{id:{...}}, defense:{...}}`, or a list of
 * `{id, kind|type: "attack"|"defense"}`. Falls back to the fixed mode ids.
 * @returns {{attacks:{id:string, cost?:number}[], defenses:{id:string, cost?:number}[]}}
 */
export function modesFromDescription(system, description) {
  const modes = description?.modes;
  const pick = (value) => {
    if (Array.isArray(value)) return value.map(modeEntry).filter(Boolean);
    if (value && typeof value === "object") {
      return Object.entries(value).map(([id, v]) => ({ ...(typeof v === "object" && v ? v : { cost: v }), id }));
    }
    return null;
  };
  let attacks = null;
  let defenses = null;
  if (Array.isArray(modes)) {
    const kindOf = (m) => m.kind ?? m.type ?? m.role;
    attacks = modes.filter((m) => /attack/.test(kindOf(m) ?? "")).map(modeEntry);
    defenses = modes.filter((m) => /defen/.test(kindOf(m) ?? "")).map(modeEntry);
  } else if (modes && typeof modes === "object") {
    attacks = pick(modes.attacks ?? modes.attack);
    defenses = pick(modes.defenses ?? modes.defense);
  }
  const fallback = FALLBACK_MODES[system] ?? { attacks: [], defenses: [] };
  return {
    attacks: attacks?.length ? attacks : fallback.attacks.map((id) => ({ id })),
    defenses: defenses?.length ? defenses : fallback.defenses.map((id) => ({ id })),
  };
}

/**
 * Keep the modes a combatant knows. `known` is a list of mode ids (an empty list: none
 * known) or null when nobody can tell, and then every mode is offered and the daemon's
 * rules decide (4001 names the rule).
 * @param {{id:string}[]} modes
 * @param {string[]|null|undefined} known
 */
export function knownModes(modes, known) {
  if (!Array.isArray(known)) return modes;
  const set = new Set(known);
  return modes.filter((m) => set.has(m.id));
}

/** Whether a combatant (as `adapters.import` answers it, defaults not filled) has a psionic mind. */
export function isPsionic(system, c = {}) {
  if (system === "revised-2e") {
    // COMBATANTS.md: kind is "nonpsionic" when absent and psp_max is 0 or absent.
    const kind = c.kind || (Number(c.psp_max) > 0 ? "psionicist" : "nonpsionic");
    return kind !== "nonpsionic";
  }
  if (system === "combat-strength") {
    if (typeof c.psionic === "boolean") return c.psionic;
    const asMax = Number(c.attack_strength_max ?? c.attack_strength ?? 0);
    const dsMax = Number(c.defense_strength_max ?? c.defense_strength ?? 0);
    return asMax > 0 || dsMax > 0;
  }
  if (system === "power-pool") {
    if (typeof c.psionic === "boolean") return c.psionic;
    return Boolean(c.attacks?.length || c.defenses?.length);
  }
  return c.psionic !== false && c.kind !== "nonpsionic";
}

/**
 * The ids of the modes (`field`: "attacks" or "defenses") a combatant knows, following
 * the daemon's rule for its system when the list is absent (COMBATANTS.md): none in
 * `revised-2e` and `power-pool`, all of them for a psionic `combat-strength` creature;
 * none for a non-psionic mind in every system. Null when it cannot be told (a plugin
 * system without a list): then every mode is offered and the daemon decides.
 * @param {string} system
 * @param {object|null} combatant  `adapters.import`'s combatant
 * @param {"attacks"|"defenses"} field
 * @returns {string[]|null}
 */
export function knownModeIds(system, combatant, field) {
  if (!combatant || typeof combatant !== "object") return null;
  if (!isPsionic(system, combatant)) return [];
  const list = combatant[field];
  if (Array.isArray(list)) return list;
  if (system === "revised-2e" || system === "power-pool") return [];
  return null;
}

/**
 * `exchange.odds`' `assume_known` for the minds among `hidden` (documents, as `targets`
 * and `controllers` hold them): the JSON Pointers of their places in the params
 * `oddsRequest` builds: the first target is the defender, a psionic wave's others are
 * `defenders`, and power-pool's controllers struck in their puppets' place are
 * `controllers`. The companion then answers as if each of them knew the defense assumed
 * and could pay for it.
 * @param {object[]} targets
 * @param {object[]} controllers
 * @param {object[]} hidden
 * @returns {string[]}
 */
export function assumedPlaces(targets, controllers, hidden) {
  return [
    ...targets.map((d, i) => (hidden.includes(d) ? (i === 0 ? "/defender" : `/defenders/${i - 1}`) : null)),
    ...controllers.map((d, i) => (hidden.includes(d) ? `/controllers/${i}` : null)),
  ].filter((place) => place !== null);
}

/**
 * What the attack dialog lets the attacker set, from the attacker's combatant.
 * @returns {{multiplier:boolean, maxMultiplier:number, range:boolean, poolDice:boolean, maxPool:number, keepBy:boolean}}
 */
export function attackFieldsFor(system, combatant = {}) {
  return {
    multiplier: system === "revised-2e",
    maxMultiplier: Math.max(1, Number(combatant.level) || 1),
    range: system === "revised-2e" || system === "combat-strength",
    poolDice: system === "power-pool",
    // as the engine defaults a pool: the Hit Dice less the dice dedicated
    maxPool: Math.max(0, Number(combatant.pool ?? (Number(combatant.hit_dice) || 0) - (Array.isArray(combatant.dedicated) ? combatant.dedicated.length : 0)) || 0),
    keepBy: system === "power-pool",
  };
}

/**
 * power-pool: the ids of the defense modes that draw allies into a group defense
 * (`draws_allies` in `systems.describe`: imagination-swarm).
 * @param {{id:string, draws_allies?:boolean}[]} defenses  `modesFromDescription(...).defenses`
 */
export function allyDrawingModeIds(defenses) {
  return (defenses ?? []).filter((m) => m.draws_allies === true).map((m) => m.id);
}

/**
 * power-pool: whether a creature may be drawn into a group defense as an ally (RULES.md
 * §3.3, seed 001: the defender "may choose [to] draw allied non-psionic creatures into
 * the psionic combat"), as `adapters.import` reads it: a non-psionic one (a psionic
 * creature joins by its own choice, with its own defense (`joiningModeId`), never
 * drafted: the companion refuses it, `ally-psionic`) with a mind (`ally-mindless`) that
 * is not under psionic control (`ally-controlled`). It adds a die and is dazed. Whether
 * it is the defender's ally is the table's to say (`dispositionOf`).
 * @param {object|null} combatant  `adapters.import`'s combatant, null when it could not be read
 */
export function mayJoinAsAlly(combatant) {
  if (!combatant || typeof combatant !== "object") return false;
  if (combatant.mindless === true || combatant.controlled_by) return false;
  return !isPsionic("power-pool", combatant);
}

/**
 * power-pool: the mode with which a creature may join, by its own choice, the defense of
 * an ally under psionic attack (RULES.md §3.3, seed 001: "Psionically active creatures
 * may also use this defence mode to participate in a psionic combat that is targeting an
 * ally they can see"), or null: a mode that draws allies in (`draws_allies`:
 * imagination-swarm) that it knows (`knownModeIds`: a profile without a list knows
 * none), and it is psionic, has a mind (`ally-mindless`), is not under psionic control
 * (`ally-controlled`) and can defend with that mode: unaware (`awareness`, the
 * companion's `tables.awareness_conditions`) or down (0 hit points or fewer), only a mode
 * that works while unaware would do (`defender-unaware`). The companion refuses each of
 * the others. Whether the one attacked is its ally is the table's to say (`dispositionOf`).
 * @param {object|null} combatant  `adapters.import`'s combatant, or the encounter view's
 * @param {{id:string, draws_allies?:boolean, defends_while_unaware?:boolean}[]} defenses
 *   `modesFromDescription(...).defenses`
 * @param {string[]} [awareness]
 * @returns {string|null}
 */
export function joiningModeId(combatant, defenses, awareness = []) {
  if (!combatant || typeof combatant !== "object") return null;
  if (combatant.mindless === true || combatant.controlled_by) return null;
  const known = new Set(knownModeIds("power-pool", combatant, "defenses") ?? []);
  const down = typeof combatant.hp === "number" && combatant.hp <= 0;
  const unaware = down || (combatant.conditions ?? []).some((c) => awareness.includes(c));
  const mode = (defenses ?? []).find((m) => m.draws_allies === true && known.has(m.id) && (!unaware || m.defends_while_unaware === true));
  return mode?.id ?? null;
}

/**
 * Which side a creature is on at the table: its token's `disposition` (Foundry's
 * `CONST.TOKEN_DISPOSITIONS`: -2 secret, -1 hostile, 0 neutral, 1 friendly), or for a
 * world actor without a token on the scene, the one its tokens are placed with (the
 * actor's `prototypeToken.disposition`). Null when neither says.
 * @param {{token:any, actor:any}} docs
 * @returns {number|null}
 */
export function dispositionOf({ token, actor }) {
  const d = token ? token.disposition : actor?.prototypeToken?.disposition;
  return Number.isInteger(d) ? d : null;
}

/** Chance fields the systems name beside `outcomes` (API.md: critical, mind opened, control). */
const CHANCES = new Set(["critical", "mind_opened", "save_rolled", "control", "controlled", "crushed", "mind_crushed", "stunned"]);
/** Fields of `exchange.odds` that are not chances. */
const NOT_CHANCES = new Set(["outcomes", "damage", "system", "needed", "modifier", "defense_psp", "psp_spent", "needed_distribution", "target_open", "effect", "warnings", "bonus_dice", "attack_cost", "left_out"]);

/**
 * `exchange.odds`' `least_chance` for the odds shown: a chance that would read 0.00% here
 * (`pct`) is left out of the answer (combat-strength's penetrating damage has hundreds of
 * values, 120 KB and more of answer, nearly all of them such chances; its view reads the
 * damage from `damage.dealt`, which still counts them).
 */
export const ODDS_LEAST_CHANCE = 0.00005;

const pct = (p) => `${(Math.round(Number(p) * 10000) / 100).toFixed(2)}%`;

/**
 * Turn `exchange.odds` into rows a template shows: each outcome with its exact chance,
 * the expected damage, and the system's own extra chances (critical, mind opened, ...).
 * combat-strength has its own summary (`strengthOddsView`): its `outcomes` are damage values.
 * @param {object} odds
 * @param {(key:string, fallback:string)=>string} label  localize an outcome/chance name
 * @param {string} [system]  the rule system that answered
 */
export function oddsView(odds, label = (_k, f) => f, system = null) {
  if (system === "combat-strength") return strengthOddsView(odds, label);
  const outcomes = Object.entries(odds?.outcomes ?? {})
    .map(([name, p]) => ({ name, label: label(`MINDSCAPE.Outcome.${name}`, name), p: Number(p), percent: pct(p) }));
  const extras = [];
  for (const [name, value] of Object.entries(odds ?? {})) {
    if (NOT_CHANCES.has(name)) continue;
    // Whole numbers 0 and 1 are counts or flags (a modifier of 0, a PSP cost of 1) unless
    // the name is a known chance; any other number in [0, 1] is a probability.
    const isChance = typeof value === "number" && value >= 0 && value <= 1 && (!Number.isInteger(value) || CHANCES.has(name));
    if (isChance) {
      extras.push({ name, label: label(`MINDSCAPE.Chance.${name}`, name.replace(/_/g, " ")), p: value, percent: pct(value) });
    }
  }
  // A distribution that never deals damage (power-pool's every mode but Synaptic
  // Overload, any attack on a mind it cannot hurt) says nothing: no line for it.
  const damage = dealsDamage(odds?.damage) ? odds.damage : null;
  // The greatest damage: the companion's `dealt.most`, which counts what least_chance left
  // out of the distribution (a plugin's odds may have no `dealt`: the distribution's).
  const listed = Array.isArray(damage?.distribution) ? damage.distribution.map(([v]) => Number(v)) : [];
  const damageView = damage ? {
    mean: round2(damage.mean),
    max: damage.dealt && typeof damage.dealt === "object" ? Number(damage.dealt.most) : listed.length ? Math.max(...listed) : 0,
    truncated: Number(damage.truncated_mass ?? 0) > 0,
  } : null;
  return { outcomes, extras, damage: damageView };
}

const round2 = (n) => Math.round(Number(n ?? 0) * 100) / 100;

/**
 * Whether an odds' `damage` (`{mean, distribution: [[value, p]], truncated_mass, dealt}`)
 * may deal any: the companion's `dealt` (null when it never does), else a value above 0
 * with a chance, a mean above 0, or a mass cut off at the cap.
 */
function dealsDamage(damage) {
  if (!damage || typeof damage !== "object") return false;
  if (damage.dealt !== undefined) return damage.dealt !== null || Number(damage.truncated_mass) > 0;
  const some = (damage.distribution ?? []).some(([v, p]) => Number(v) > 0 && Number(p) > 0);
  return some || Number(damage.mean) > 0 || Number(damage.truncated_mass) > 0;
}

/**
 * combat-strength's odds in a few lines (engine/combat_strength/README.md, "Odds"): its
 * `outcomes` are the damage values, thousands of them once penetrating dice can chain, so
 * the rows are its mutually exclusive results (`outcome`: damage, crushed, condition,
 * saved, no effect), then each condition it may leave (`conditions`), then the chance
 * the defense strength falls to 0 (`defense_zero`); the damage is summed up in one line
 * from the companion's `damage.dealt` (`dealtView`).
 * @param {object} odds  `exchange.odds`' answer for combat-strength
 * @param {(key:string, fallback:string)=>string} label
 */
export function strengthOddsView(odds, label = (_k, f) => f) {
  const row = (prefix, name, p) => ({ name, label: label(`MINDSCAPE.${prefix}.${name}`, name.replace(/[-_]/g, " ")), p: Number(p), percent: pct(p) });
  const outcomes = Object.entries(odds?.outcome ?? {}).filter(([, p]) => Number(p) > 0).map(([name, p]) => row("Outcome", name, p));
  const conditions = Object.entries(odds?.conditions ?? {}).filter(([, p]) => Number(p) > 0).map(([name, p]) => row("Condition", name, p));
  const zero = Number(odds?.defense_zero ?? 0);
  const extras = zero > 0 ? [row("Chance", "defense_zero", zero)] : [];
  return { outcomes, conditions, extras, damage: null, spread: dealtView(odds?.damage?.dealt) };
}

/**
 * What the companion's `damage.dealt` (docs/API.md: `{chance, mean, p10, median, p90,
 * least, most}` of the damage when some is dealt, or null when none ever is) says in the
 * odds' damage line: its chance, mean and median, and the values between which it falls
 * 8 times in 10 (`fixed` when it can deal only one value).
 * @returns {{chance:string, mean:number, median:number, low:number, high:number, fixed:boolean}|null}
 */
export function dealtView(dealt) {
  if (!dealt || typeof dealt !== "object") return null;
  return {
    chance: pct(dealt.chance), mean: round2(dealt.mean), median: Number(dealt.median),
    low: Number(dealt.p10), high: Number(dealt.p90), fixed: Number(dealt.least) === Number(dealt.most),
  };
}
