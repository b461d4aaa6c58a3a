/**
 * Chat cards: a pure context builder (what the card says) and a small poster that renders
 * the template, rebuilds the daemon's dice as Rolls and creates the message in the chosen
 * roll mode.
 */
import { CHAT_ROLL_MODES, MODULE_ID } from "./consts.js";
import { rollDataFromDaemon, summedPurposes } from "./rolls.js";
import { conditionsText, fill, filled, idLabel, spaced } from "./labels.js";

/** Per-system result fields shown as facts on the card, in this order (API.md). */
export const FACT_FIELDS = {
  "revised-2e": ["needed", "roll", "psp_spent", "damage", "critical", "mind_opened", "save"],
  "combat-strength": ["table", "bonus_dice", "damage", "attack_cost"],
  "power-pool": ["attack_total", "defense_total", "winner", "controlled", "effects"],
};

function show(value, yesNo) {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean") return yesNo(value);
  if (Array.isArray(value)) return value.length ? value.map((v) => show(v, yesNo)).join(", ") : null;
  if (typeof value === "object") {
    if ("natural" in value && "modified" in value) return `${value.natural} → ${value.modified}`;
    if ("target" in value && "roll" in value) return `${value.roll} / ${value.target}${value.success === undefined ? "" : ` (${yesNo(value.success)})`}`;
    if ("type" in value) return String(value.type);
    return Object.entries(value).map(([k, v]) => `${k} ${v}`).join(", ");
  }
  return String(value);
}

/**
 * power-pool's `effects` (`[{effect, combatant, controller?, amount?, ...}]`) in words,
 * each creature by the table's name, a condition by its label: "Aboleth: under Zanna's
 * control; Randal: Possessed". Null when there are none.
 */
function effectsText(effects, nameOf, L) {
  if (!Array.isArray(effects) || !effects.length) return null;
  return effects.map((e) => {
    // Every effect but control and damage is a condition the creature now has.
    const data = { name: nameOf(e?.combatant), controller: nameOf(e?.controller), amount: e?.amount, effect: idLabel(L, "Condition", e?.effect ?? "") };
    const key = e?.effect === "controlled" || e?.effect === "damage" ? e.effect : "other";
    const fallback = { controlled: "{name}: under {controller}'s control", damage: "{name}: {amount} damage", other: "{name}: {effect}" }[key];
    return fill(L(`MINDSCAPE.Effect.${key}`, fallback), data) + (e?.instead_of_control ? ` ${L("MINDSCAPE.Effect.InsteadOfControl", "(instead of control)")}` : "");
  }).join("; ");
}

/**
 * Numbers and mind state that changed between a combatant's before and after; the mind's
 * state and the conditions by their labels (`label`: `svc.t.label`; without it, the ids
 * as words).
 * @returns {{field:string, before:any, after:any}[]}
 */
export function changesOf(side, label = (_k, fallback) => fallback) {
  const before = side?.before ?? {};
  const after = side?.after ?? {};
  const mind = (state) => (state ? idLabel(label, "Mind", state) : "—");
  const conditions = (list) => conditionsText(list, label) || "—";
  const out = [];
  for (const field of Object.keys(after)) {
    const b = before[field];
    const a = after[field];
    if (typeof a === "number" && a !== b) out.push({ field, before: b ?? "—", after: a });
    else if (field === "mind" && a?.state && a.state !== b?.state) out.push({ field: "mind", before: mind(b?.state), after: mind(a.state) });
    else if (field === "conditions" && Array.isArray(a) && JSON.stringify(a) !== JSON.stringify(b ?? [])) {
      out.push({ field, before: conditions(b), after: conditions(a) });
    }
  }
  return out;
}

/**
 * What an event's values say in its sentence: the creatures it names (`combatant`,
 * `target`, `controller`, a Blank Mind's `against`, power-pool's `targets`) by their
 * names, its modes, conditions and stances by their labels (combat-strength's
 * `condition` event names its condition `id`), a roll's `success` as `result`.
 */
const EVENT_VALUE_GROUPS = { mode: "Mode", defense: "Mode", condition: "Condition", id: "Condition", stance: "Stance" };

/**
 * An event as one sentence of the card (`MINDSCAPE.Event.<type>`: "Aboleth raises Mind
 * blank", "Zanna loses pool dice: 1"). The card's summary tells the story and its table what
 * changed; the events list the steps in between, for the GM who wants them, without the
 * companion's raw fields. An event a plugin system adds reads as its name and whom it is
 * about ("Aboleth: mind frozen").
 * @param {{type:string, combatant?:string|null}} event
 * @param {(id:any)=>any} nameOf  a creature's name by its combatant id
 * @param {(key:string, fallback:string)=>string} label
 */
export function eventText(event, nameOf, label) {
  const data = {};
  for (const [key, value] of Object.entries(event)) {
    if (EVENT_VALUE_GROUPS[key] && typeof value === "string") data[key] = idLabel(label, EVENT_VALUE_GROUPS[key], value);
    else if (Array.isArray(value)) data[key] = value.map(nameOf).join(", ");
    else data[key] = nameOf(value);
  }
  data.name = nameOf(event.combatant) ?? "";
  if (typeof event.success === "boolean") data.result = label(event.success ? "MINDSCAPE.Card.Succeeds" : "MINDSCAPE.Card.Fails", event.success ? "succeeds" : "fails");
  const text = filled(label, `MINDSCAPE.Event.${event.type}`, data, "?");
  if (text !== null) return text;
  const kind = spaced(event.type);
  return data.name ? fill(label("MINDSCAPE.Card.EventOf", "{name}: {event}"), { name: data.name, event: kind }) : kind;
}

/**
 * A combatant id the companion quotes in a summary: a creature it was not given
 * (engine/power_pool/control.py `name_of`: `Goblin releases "fenka-tokF".`) is named by
 * its id in quotes, the adapters' id (`roundCombatantId`: an actor's id, `<actor id>-<token id>`).
 */
const QUOTED_ID = /"([A-Za-z0-9_-]{1,64})"/g;

/** The combatant ids `summary` names in quotes (`namedSummary`), each once. */
export function quotedIds(summary) {
  return [...new Set([...String(summary ?? "").matchAll(QUOTED_ID)].map((m) => m[1]))];
}

/**
 * The companion's summary in the table's words: each combatant id it quotes (a creature
 * it was not given) by the name `names` has for it, the quotes dropped; an id `names`
 * lacks (nobody at the table is that creature) stays as the companion wrote it.
 * @param {string|null|undefined} summary
 * @param {Map<string,string>} names  the table's name of each combatant id
 * @returns {string}
 */
export function namedSummary(summary, names) {
  return String(summary ?? "").replace(QUOTED_ID, (whole, id) => (names?.has(id) ? names.get(id) : whole));
}

/**
 * Everything the chat card template shows, from one exchange result: the outcome, the
 * system's figures, what changed for each combatant (power-pool's `others` too: a
 * wave's further targets, allies, creatures set free), the allies drawn into the
 * defense and how each defended (power-pool `defense.members` of role "ally"), the dice.
 *
 * The header names what was aimed at (`attackerName` → `defenderName`: in power-pool a
 * puppet whose controller the attack struck instead, a wave's targets joined); every
 * creature the card names by its id (what changed, effects, dice, events, allies, an id
 * the summary quotes: `namedSummary`) is named as the table knows that creature, from
 * `names`. An id `names` lacks is named by
 * the header for the attacker, and for the defender only when the header names it alone
 * (no mind struck in its place, no wave); else by the companion's own name for it.
 * @param {object} result  `exchange.resolve`'s result
 * @param {{attackerName:string, defenderName:string, attack:object, defense:object|null,
 *          names?:Map<string,string>, localize:(key:string, fallback:string)=>string,
 *          physical?:boolean, paidBefore?:Map<string,{amount:number, mode:string|null}>}} info
 *   `names`: the table's name of each combatant id the companion may give (the token's
 *   name), every creature sent with the exchange. `paidBefore`: revised-2e, the PSPs a
 *   side (by id) paid for its defense at the start of an encounter's round, before its
 *   `before` (encounter.js `defensePayments`), shown as the first of its changes
 */
export function chatCardContext(result, info) {
  const L = info.localize;
  const yesNo = (b) => L(b ? "MINDSCAPE.Yes" : "MINDSCAPE.No", b ? "yes" : "no");
  const system = result.system;
  const modeLabel = (id) => (id ? L(`MINDSCAPE.Mode.${id}`, id.replace(/-/g, " ")) : L("MINDSCAPE.NoDefense", "no defense"));
  const sideChanges = (side, name) => [...paidRows(side, name), ...changesOf(side, L).map((c) => ({
    ...c, name, label: L(`MINDSCAPE.Field.${c.field}`, c.field.replace(/_/g, " ")),
  }))];
  // The defense's PSPs, from the figure before it was paid to the exchange's `before`.
  function paidRows(side, name) {
    const paid = info.paidBefore?.get(side?.id ?? side?.before?.id);
    const psp = side?.before?.psp;
    if (!paid || typeof psp !== "number") return [];
    const label = fill(L("MINDSCAPE.Card.DefensePaid", "PSPs for {mode}, raised at the round's start"), { mode: modeLabel(paid.mode) });
    return [{ field: "psp", name, label, before: psp + paid.amount, after: psp }];
  }
  // Combatant ids (actor ids, generated ids) read as the names the table knows.
  const names = new Map(info.names ?? []);
  const idOf = (side) => side?.id ?? side?.after?.id ?? side?.before?.id;
  // power-pool: the mind struck is not what was aimed at when it controls the target
  // (`redirected`), and a wave's header names all its targets.
  const struckInstead = (result.redirected ?? []).some((r) => r?.to === idOf(result.defender));
  const wave = (result.defense?.members ?? []).some((m) => m?.role === "wave-target");
  const headerNames = [[result.attacker, info.attackerName], [result.defender, struckInstead || wave ? null : info.defenderName]];
  for (const [side, header] of headerNames) {
    const id = idOf(side);
    if (id && !names.has(id) && header) names.set(id, header);
  }
  for (const side of [result.attacker, result.defender, ...(result.others ?? [])]) {
    const id = idOf(side);
    const own = side?.after?.name ?? side?.before?.name ?? side?.name;
    if (id && !names.has(id) && own) names.set(id, own);
  }
  const nameOf = (v) => (typeof v === "string" && names.has(v) ? names.get(v) : v);
  const sideName = (side, header) => nameOf(idOf(side)) ?? header;
  const facts = [];
  for (const field of FACT_FIELDS[system] ?? []) {
    const value = field === "effects" ? effectsText(result.effects, nameOf, L) : factValue(field, result[field], yesNo, L);
    if (value !== null && value !== "") facts.push({ field, label: L(`MINDSCAPE.Field.${field}`, field.replace(/_/g, " ")), value });
  }
  const changes = [
    ...sideChanges(result.attacker, sideName(result.attacker, info.attackerName)),
    ...sideChanges(result.defender, sideName(result.defender, info.defenderName)),
    ...(result.others ?? []).flatMap((o) => sideChanges(o, nameOf(idOf(o)))),
  ];
  // power-pool: who the struck mind drew into its defense, and how each defended: a
  // psionic ally with its mode, a non-psionic one drawn in (and dazed) with its die.
  const allies = (result.defense?.members ?? []).filter((m) => m?.role === "ally").map((m) => {
    const dice = m.rolls === false ? L("MINDSCAPE.Card.RollsNothing", "rolls nothing") : `${m.dice}d${m.sides}`;
    return {
      name: nameOf(m.id),
      how: m.mode
        ? fill(L("MINDSCAPE.Card.AllyDefends", "{mode}, {dice}"), { mode: modeLabel(m.mode), dice })
        : fill(L("MINDSCAPE.Card.AllyDrawnIn", "drawn in, {dice}"), { dice }),
    };
  });
  return {
    system,
    systemLabel: L(`MINDSCAPE.System.${system}`, system),
    outcome: result.outcome,
    outcomeLabel: L(`MINDSCAPE.Outcome.${result.outcome}`, String(result.outcome)),
    good: ["hit", "attacker", "success"].includes(result.outcome),
    attackerName: info.attackerName,
    defenderName: info.defenderName,
    attackLabel: modeLabel(info.attack?.mode),
    defenseLabel: modeLabel(info.defense?.mode ?? null),
    allies,
    summary: namedSummary(result.summary, names),
    facts,
    changes,
    hasChanges: changes.length > 0,
    dice: (result.rolls ?? []).map((r) => ({ ...r, by: nameOf(r.by), purposeLabel: L(`MINDSCAPE.Purpose.${r.purpose}`, r.purpose) })),
    events: (result.events ?? []).map((e) => ({ type: e.type, text: eventText(e, nameOf, L) })),
    unusedDice: unusedDiceText(result.unused_dice, L),
    physical: Boolean(info.physical),
  };
}

/**
 * The typed dice a result did not need (`unused_dice`, by purpose), each purpose by its
 * label (`MINDSCAPE.Purpose.<id>`, a plugin's purpose as its id): "Wisdom check: 12;
 * Open-mind duration: 3"; "" for none.
 */
export function unusedDiceText(unused, L) {
  return Object.entries(unused ?? {}).filter(([, v]) => (Array.isArray(v) ? v.length : v))
    .map(([p, v]) => `${L(`MINDSCAPE.Purpose.${p}`, p)}: ${[].concat(v).join(", ")}`).join("; ");
}

/** A fact's value on the card: an id (power-pool's `winner`, combat-strength's `table`) by its label (`MINDSCAPE.Value.<field>.<id>`). */
function factValue(field, value, yesNo, L) {
  return typeof value === "string" ? idLabel(L, `Value.${field}`, value) : show(value, yesNo);
}

/**
 * Everything the end-of-round card shows, from `exchange.end_round`'s result; a rest's
 * card (`combatants.rest`, the same shape of answer) uses it with its own `title` and icon.
 * @param {object} result  `exchange.end_round`'s (or `combatants.rest`'s) result
 * @param {{names:Map<string,string>, round?:number|null, title?:string, icon?:string, cardClass?:string,
 *          localize:(key:string, fallback:string)=>string, physical?:boolean}} info
 *   `names`: the table's name of each combatant id (the token's name), puppets' included;
 *   the summary's quoted ids read by it too (`namedSummary`)
 */
export function roundCardContext(result, info) {
  const L = info.localize;
  const nameOf = (id) => (typeof id === "string" && info.names?.has(id) ? info.names.get(id) : id);
  const changes = [];
  // power-pool: `others` are the creatures a controller set free whose own round did not end (or that did not rest).
  for (const side of [...(result.combatants ?? []), ...(result.others ?? [])]) {
    const name = nameOf(side?.id ?? side?.after?.id);
    for (const c of changesOf(side, L)) changes.push({ ...c, name, label: L(`MINDSCAPE.Field.${c.field}`, c.field.replace(/_/g, " ")) });
  }
  const round = Number.isInteger(info.round) ? info.round : null;
  return {
    system: result.system,
    systemLabel: L(`MINDSCAPE.System.${result.system}`, result.system),
    round,
    title: info.title ?? null,
    icon: info.icon ?? "fa-hourglass-end",
    cardClass: info.cardClass ?? null,
    summary: namedSummary(result.summary, info.names),
    changes,
    hasChanges: changes.length > 0,
    dice: (result.rolls ?? []).map((r) => ({ ...r, by: nameOf(r.by), purposeLabel: L(`MINDSCAPE.Purpose.${r.purpose}`, r.purpose) })),
    events: (result.events ?? []).map((e) => ({ type: e.type, text: eventText(e, nameOf, L) })),
    unusedDice: unusedDiceText(result.unused_dice, L),
    physical: Boolean(info.physical),
  };
}

/**
 * The roll mode a card uses: the world's setting, or for "default" the chat roll mode of
 * the user who started the attack. The GM's client posts every card, so a player's mode
 * travels with the request (`requesterRollMode`); one that is not a known chat roll mode
 * (an old or forged client) counts as not sent, and the GM's own mode is used.
 * @param {string} setting  the world's "Roll mode of the chat cards"
 * @param {string} coreRollMode  the posting (GM's) client's `core.rollMode`
 * @param {string|null} [requesterRollMode]  the requesting player's `core.rollMode`
 */
export function effectiveRollMode(setting, coreRollMode, requesterRollMode = null) {
  if (setting && setting !== "default") return setting;
  if (CHAT_ROLL_MODES.includes(requesterRollMode)) return requesterRollMode;
  return coreRollMode || "publicroll";
}

/**
 * How the rules count a result's dice, for its Foundry rolls (rolls.js
 * `rollDataFromDaemon`): the purposes whose dice are added up (`summed`, rolls.js
 * `summedPurposes` of the system's `description`, its `systems.describe` answer: each
 * other die is a roll of its own), and what the rules add to
 * those dice without another die, by purpose, so that a roll's total is the card's
 * figure (`rollDataForGroup`), with the label of those points: combat-strength's damage is its table value plus its penetrating bonus
 * dice (engine/combat_strength, `execute`), the points being the damage less the bonus
 * dice's totals (`bonus_rolls`); revised-2e's damage is its dice plus the mode's bonus
 * for each step of the multiplier (engine/revised_2e/exchange.py: ego whip +1, id
 * insinuation +2, psychic crush +3, psionic blast +4 a step), the points being the
 * damage less its damage dice, as the result gives both.
 * @param {object} result  an exchange's result
 * @param {(key:string, fallback:string)=>string} L
 * @param {object|null} [description]  `systems.describe` of `result.system`
 * @returns {{summed:Set<string>, addedTo:Record<string, number>, labels:{penetration:string, added:string}}}
 */
export function rollAdditions(result, L = (_k, f) => f, description = null) {
  const addedTo = {};
  let added = L("MINDSCAPE.Roll.TableValue", "table value");
  const sum = (values) => values.reduce((total, v) => total + Number(v), 0);
  const bonus = result?.bonus_rolls;
  if (result?.system === "combat-strength" && Array.isArray(bonus) && typeof result.damage === "number") {
    addedTo.damage = result.damage - sum(bonus);
  }
  const damageDice = (result?.rolls ?? []).filter((r) => r?.purpose === "damage").map((r) => r.value);
  if (result?.system === "revised-2e" && damageDice.length && typeof result.damage === "number") {
    addedTo.damage = result.damage - sum(damageDice);
    added = L("MINDSCAPE.Roll.DamageBonus", "damage bonus");
  }
  return { summed: summedPurposes(description), addedTo, labels: { penetration: L("MINDSCAPE.Roll.Penetration", "penetration"), added } };
}

/**
 * The speaker of a card, as Foundry's `ChatMessage.getSpeaker` builds it from a token
 * (`#getSpeakerFromToken`: its scene, its id, its actor's id, the alias or its name),
 * else from an actor (no token, no scene), else the alias alone. Built here rather than by
 * `getSpeaker`, which, given no token or actor (a round's end, a rest, an encounter
 * card whose attacker left the scene), falls back to the posting GM's controlled token
 * or assigned character, and, given a world actor, to one of its tokens on the scene the
 * GM views: the card would speak as a creature that has nothing to do with it.
 * @param {{token?:any, actor?:any, alias?:string|null}} who
 * @returns {{scene:string|null, actor:string|null, token:string|null, alias:string}}
 */
export function cardSpeaker({ token = null, actor = null, alias = null } = {}) {
  if (token) return { scene: token.parent?.id ?? null, token: token.id ?? null, actor: token.actor?.id ?? actor?.id ?? null, alias: alias || token.name || actor?.name || "" };
  return { scene: null, actor: actor?.id ?? null, token: null, alias: alias || actor?.name || "" };
}

/**
 * Who reads a card its roller asked for from another client (a player's attack, an
 * assistant GM's end of round or rest), as message data: the requester is the message's
 * `author`, and `whisper` and `blind` are set for that roller, as Foundry sets them for a
 * roll the roller posts itself (`ChatMessage.applyRollMode`): self, the requester alone;
 * private, the GMs (the author reads a private roll's content, `isContentVisible`);
 * blind, the GMs, blind (the author of a blind roll sees only that it was rolled, as in
 * Foundry); public, everyone. Null without a requester (the posting client's own card).
 *
 * `author` is the field in v12 and v13 alike (common/documents/chat-message.mjs: v12's
 * schema 12.324 already names it `author`, and `user` is the deprecated alias both
 * migrate), and a GM may create a message authored by any user (`#canCreate`).
 *
 * `options.rollMode` is passed only where the posting (GM's) client re-applying it in
 * `ChatMessage#_preCreate` leaves this data as it is: never for self, which it would
 * whisper to the GM (`[game.user.id]`). Public needs it in v12, whose `_preCreate`
 * otherwise applies the posting client's own mode to a roll whispered to nobody.
 *
 * A blind card without dice keeps the posting GM as its author: Foundry shows a whisper
 * without rolls in full to its author, so a requester-authored one would not be blind.
 * @param {string} rollMode  the card's roll mode (`effectiveRollMode`)
 * @param {{requesterId?:string|null, gmIds:string[], hasRolls:boolean}} who
 * @returns {{data:{author?:string, whisper:string[], blind:boolean}, options:{rollMode?:string}}|null}
 */
export function cardAudience(rollMode, { requesterId = null, gmIds = [], hasRolls = true } = {}) {
  if (!requesterId) return null;
  const mode = CHAT_ROLL_MODES.includes(rollMode) ? rollMode : "publicroll";
  const whisper = { publicroll: [], selfroll: [requesterId], gmroll: [...gmIds], blindroll: [...gmIds] }[mode];
  const blind = mode === "blindroll";
  const data = { whisper, blind };
  if (!(blind && !hasRolls)) data.author = requesterId;
  return { data, options: mode === "selfroll" ? {} : { rollMode: mode } };
}

/**
 * A card's HTML that Foundry's text enrichment leaves as it is. Foundry enriches a chat
 * message's content when it shows it (v12 `ChatMessage#getHTML`, v13 `renderHTML`:
 * `TextEditor.enrichHTML`), matching its patterns (`[[1d20]]` inline rolls, `@UUID[…]`
 * links, a system's `[[/save …]]` or `&Reference[…]`) in the text of each text node, so
 * a name a player chose (the token's, on the header, in the companion's summary, in the
 * events) would roll dice or link documents on the card. An entity (`&#91;`) would not
 * do: the content is parsed before the patterns run. Each `[` of the text, outside the
 * tags, gets a text node of its own (`<span>[</span>`), which no such pattern matches
 * across; it reads the same.
 * @param {string} html
 */
export function unenriched(html) {
  return String(html).split(/(<[^>]*>)/).map((part) => (part.startsWith("<") ? part : part.replace(/\[/g, "<span>[</span>"))).join("");
}

/**
 * Render and post a chat card for one result. Dependencies are passed in so tests can
 * give fakes: `renderTemplate`, `Roll` (with fromData), `ChatMessage` (with create
 * and applyRollMode); `speaker` is the card's (`cardSpeaker`). `card` is the message's `flags.mindscape` (an
 * exchange's card by default).
 *
 * Foundry applies `options.rollMode` in `ChatMessage#_preCreate` only to roll messages,
 * so a card without dice would ignore a blind or GM-only mode. The static
 * `ChatMessage.applyRollMode(chatData, rollMode)` (v12 and v13) sets `whisper` and
 * `blind` on the data itself, for every card; the option is still passed for rolls.
 * Both read the posting client's user (`game.user.id` for self), so a card posted for a
 * roller on another client (`requesterId`, with `gmIds`, the world's GMs) is addressed
 * by `cardAudience` instead.
 * `localize` (a label function) names the terms the rules add to the dice (`rollAdditions`);
 * `description`, the system's `systems.describe` answer, says which purposes' dice are
 * added up into one roll (without it, each die is a roll of its own).
 * @returns {Promise<any>} the created message
 */
export async function postChatCard({ result, context, rollMode, speaker, renderTemplate, Roll, ChatMessage, template, localizePurpose, localize, card, requesterId = null, gmIds = [], description = null }) {
  const content = unenriched(await renderTemplate(template, context));
  const rolls = rollDataFromDaemon(result.rolls ?? [], (purpose) => localizePurpose(purpose), rollAdditions(result, localize, description)).map((data) => Roll.fromData(data));
  const data = {
    speaker,
    content,
    rolls,
    sound: rolls.length ? globalThis.CONFIG?.sounds?.dice : undefined,
    flags: { [MODULE_ID]: card ?? { card: "exchange", system: result.system, outcome: result.outcome } },
  };
  const audience = cardAudience(rollMode, { requesterId, gmIds, hasRolls: rolls.length > 0 });
  if (audience) return ChatMessage.create({ ...data, ...audience.data }, audience.options);
  if (typeof ChatMessage.applyRollMode === "function") ChatMessage.applyRollMode(data, rollMode);
  return ChatMessage.create(data, { rollMode });
}
