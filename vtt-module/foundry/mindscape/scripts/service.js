/**
 * The module's behaviour, wired to Foundry through an `env` of its globals so that tests
 * can hand in fakes. Requests from any client go through the relay to the active GM's
 * client, which alone holds the daemon token and calls the daemon.
 */
import { DEFENSE_GRACE_MS, DEFENSE_REASKS, DEFENSE_TIMEOUT_MS, MAX_PUPPETS, MODULE_ID, PAIRED_FLAG, RELAY_MARGIN_MS, relayTimeoutMs } from "./consts.js";
import { DaemonClient, callWithPhysicalDice, checkDaemonUrl } from "./rpc.js";
import { Relay } from "./relay.js";
import {
  CancelledError, InvalidParamsError, MindscapeError, NotPairedError, OtherGMError, PermissionDeniedError, PlayersMayNotAttackError, RulesError,
  UsageError, describeError,
} from "./errors.js";
import {
  adapterFor, allyDrawingModeIds, attackFieldsFor, attackFromForm, attackProblem, combatantRef, declineBoxes, defenseFromChoice,
  ODDS_LEAST_CHANCE, assumedPlaces, dispositionOf, exchangeParams, joiningModeId, knownModeIds, knownModes, mayJoinAsAlly, modesFromDescription, oddsParams, oddsView,
  RANGES, withDeclined,
} from "./requests.js";
import { applyPlan, participantOf, planUpdates } from "./updates.js";
import { cardSpeaker, chatCardContext, effectiveRollMode, postChatCard, quotedIds, roundCardContext } from "./chat.js";
import { houseRuleValue, houseRulesFor, setSetting, setting } from "./settings.js";
import { KeyedQueue } from "./queue.js";
import { sightBlocked } from "./foundry.js";
import { actorDataWithProfile, profileAgainContext, profileFields, profileFromForm, profileProblems } from "./profile.js";
import {
  ROUND_ENDED_FLAG, combatEntries, controlChoice, controlLinks, controlsSomeone, endRoundParams, hasProfile,
  isObject, mayPayToClose, namedBy, roundCombatantId, roundParticipants, splitByEncounter,
} from "./rounds.js";
import { DEFAULT_REST_HOURS, restHours, restParams, restSpec } from "./rest.js";
import { droppedReport, heldReport, refreshReport } from "./encounter.js";
import { codeHtml, htmlText, idLabel, plainText } from "./labels.js";

/**
 * The id of the user who asked this client for something from another client (the roller
 * whose card this client posts), or null for this client's own request.
 */
function requesterOf(sender, game) {
  return sender?.id && sender.id !== game.user?.id ? sender.id : null;
}

/** The ids of the scenes the tokens of `docs` (`{token, actor}`) are on, each once. */
function sceneIdsOf(docs) {
  return [...new Set(docs.map((d) => d?.token?.parent?.id).filter(Boolean))];
}

/**
 * Whether a notice Foundry gave (`notify`'s answer) may still be on screen. Foundry v13
 * says (`Notifications#has`). Foundry v12 answers the notice's id, and keeps the notice
 * in its `queue` until there is room to show it, then its element (`data-id`) in
 * `active` until it is dismissed. Where neither can be asked, or an element shown is of
 * a shape unknown here, it may.
 */
function stillShown(notifications, notice) {
  try {
    if (typeof notifications?.has === "function" && notice?.id > 0) return Boolean(notifications.has(notice));
    const id = typeof notice === "number" ? notice : notice?.id;
    if (!(id > 0) || !Array.isArray(notifications?.queue) || !Array.isArray(notifications?.active)) return true;
    // An element shown that cannot say its id (no jQuery `data`) may be this notice.
    return notifications.queue.some((n) => n?.id === id) || notifications.active.some((li) => typeof li?.data !== "function" || Number(li.data("id")) === id);
  } catch {
    return true;
  }
}

/** The least time between two notices to the GM of one player's failed attacks (`mayNoticeFrom`). */
const NOTICE_GAP_MS = 5000;

/** The ids of the scenes token uuids (`Scene.<id>.Token.<id>`, a synthetic actor's too) name, each once. */
export function sceneIdsOfUuids(uuids) {
  return [...new Set(uuids.map((uuid) => /^Scene\.([^.]+)\.Token\./.exec(typeof uuid === "string" ? uuid : "")?.[1]).filter(Boolean))];
}

/** The uuid of the actor a token or actor document pair writes to (`participantOf`). */
function actorUuidOf(docs) {
  return participantOf(docs.token, docs.actor).actorUuid;
}

/**
 * @typedef {object} Env
 * @property {any} game
 * @property {any} ui
 * @property {any} CONFIG
 * @property {any} Hooks
 * @property {any} ChatMessage
 * @property {any} Roll
 * @property {(uuid:string)=>Promise<any>} fromUuid
 * @property {(name:string, ctx:object)=>Promise<string>} render  renders templates/<name>.hbs
 * @property {object} dialogs  dialogs.js (or fakes)
 * @property {typeof fetch} [fetch]
 * @property {typeof WebSocket} [WebSocket]  the encounter watcher's (Foundry: the browser's)
 */

/** Foundry's OWNER ownership level (CONST.DOCUMENT_OWNERSHIP_LEVELS.OWNER, v12 and v13). */
const OWNER_LEVEL = 3;

export class Mindscape {
  /** @param {Env} env */
  constructor(env) {
    this.env = env;
    this.describeCache = new Map();
    this.adaptersCache = null;
    // GM: exchanges that touch one actor are resolved and written back one after another.
    this.exchanges = new KeyedQueue();
    // GM: the last round this client ended for each combat (id -> round), beside the
    // combat's own flag, so that a round is not ended twice while the flag is written.
    this.roundsEnded = new Map();
    // GM: the sheet warnings already shown this session (`sheetWarnings`).
    this.warned = new Set();
    // The notices given to stay until dismissed, by kind and words (`notify`).
    this.standing = new Map();
    // The player's dialog closes itself at the timeout; the GM waits this much longer for
    // the answer to travel back before using the default itself.
    this.defenseGraceMs = DEFENSE_GRACE_MS;
    // A relayed attack includes the defenders' choice: wait at least that long for it.
    this.relay = new Relay({ game: env.game, CONFIG: env.CONFIG, handlers: this.handlers(), timeoutMs: () => relayTimeoutMs(this.defenseTimeoutS()) });
  }

  /** The world's "Seconds to choose a defense" (the default before settings exist). */
  defenseTimeoutS() {
    try {
      const s = Number(setting(this.game, "defenseTimeout"));
      return Number.isFinite(s) && s >= 0 ? s : DEFENSE_TIMEOUT_MS / 1000;
    } catch {
      return DEFENSE_TIMEOUT_MS / 1000;
    }
  }

  get game() { return this.env.game; }

  /** Translation helpers for labels with a readable fallback. */
  get t() {
    const i = this.game.i18n;
    return {
      localize: (k) => i.localize(k),
      format: (k, d) => i.format(k, d),
      label: (k, fallback) => ((typeof i.has === "function" ? i.has(k) : i.localize(k) !== k) ? i.localize(k) : fallback),
    };
  }

  /** The world's rule system id. */
  get system() { return setting(this.game, "ruleSystem"); }

  // ---------------------------------------------------------------- daemon (GM only)

  /** A daemon client from this client's settings. Only the active GM calls this. */
  client(overrides = {}) {
    return new DaemonClient({
      url: overrides.url ?? setting(this.game, "daemonUrl"),
      token: overrides.token ?? setting(this.game, "daemonToken"),
      fetch: this.env.fetch,
    });
  }

  /**
   * Call the daemon from the active GM's client. A refusal by the rules is told to the
   * user in the companion's words only; the rule's id (`not-enough-psp`) goes to this
   * (the GM's) console, for whoever looks into it.
   */
  rpc(method, params) {
    if (!this.relay.isActiveGM) {
      // A GM whose browser is not the paired one is told where the companion is reached.
      if (this.game.user?.isGM && this.relay.activeGM) throw new OtherGMError({ name: this.relay.activeGM.name });
      throw new PermissionDeniedError({ who: method });
    }
    return this.client().call(method, params).catch((error) => {
      if (error instanceof RulesError) console.info(`${MODULE_ID} | ${method} refused by the rule ${error.data.rule}: ${error.data.detail}`);
      throw error;
    });
  }

  async describe(system = this.system) {
    if (!this.describeCache.has(system)) this.describeCache.set(system, await this.rpc("systems.describe", { system }));
    return this.describeCache.get(system);
  }

  /**
   * `systems.describe` of the system of a result to post, for which of its dice the rules
   * add up (chat.js `rollAdditions`); null when the companion cannot say (the card then
   * shows each die as a roll of its own rather than not being posted).
   */
  async cardDescription(system) {
    if (typeof system !== "string") return null;
    try {
      return await this.describe(system);
    } catch (error) {
      console.warn(`${MODULE_ID} | systems.describe ${system} failed; each die is shown alone`, error);
      return null;
    }
  }

  /** The daemon adapter for this world's game system. Only a successful `adapters.list` is cached. */
  async adapterId() {
    let adapters = this.adaptersCache;
    if (!adapters) {
      try {
        adapters = await this.rpc("adapters.list");
        if (Array.isArray(adapters)) this.adaptersCache = adapters;
      } catch {
        // Not cached: the next call asks again (the companion may be up by then).
        adapters = [];
      }
    }
    return adapterFor(this.game.system?.id, (Array.isArray(adapters) ? adapters : []).filter((a) => !a.vtt || a.vtt === "foundry"));
  }

  /** A combatant reference for the daemon (with the world's mapping for foundry.generic). */
  ref(actor, token, adapter) {
    return combatantRef(actor, token, adapter, adapter === "foundry.generic" ? setting(this.game, "genericMapping") : null);
  }

  // ---------------------------------------------------------------- documents

  /**
   * The world's scenes in the order a creature is looked for on them: the scenes `near`
   * (ids: those of the request's or the round's own tokens) first, then the active scene,
   * then every other. Never the scene this GM's client happens to show: Foundry's
   * `Actor#getActiveTokens` reads only that one, and none without a canvas
   * (client/documents/actor.mjs), so a GM looking at another scene, or playing without
   * the canvas, would lose the creatures of the scene being played.
   * @param {(string|null|undefined)[]} [near]
   */
  scenesFrom(near = []) {
    const scenes = this.game.scenes;
    if (!scenes) return [];
    const all = scenes.contents ?? [...scenes];
    const out = [];
    for (const id of [...near, scenes.active?.id, ...all.map((scene) => scene.id)]) {
      const scene = id ? scenes.get(id) : null;
      if (scene && !out.includes(scene)) out.push(scene);
    }
    return out;
  }

  /** A world actor's token documents on the first scene (`scenesFrom(near)`) that holds any, linked or not. */
  tokensOfActor(actor, near = []) {
    for (const scene of this.scenesFrom(near)) {
      const tokens = (scene.tokens?.contents ?? [...(scene.tokens ?? [])]).filter((t) => t.actorId === actor.id);
      if (tokens.length) return tokens;
    }
    return [];
  }

  /**
   * The token document and actor behind a uuid of a token or an actor. A world actor
   * fights through its token (a linked one first) on the first scene that has one
   * (`tokensOfActor`: the scenes `near` first); with `worldActor`, a world actor stays
   * itself (the profile editor edits every copy), and only a linked token, which shares
   * that actor, is named.
   * @param {string} uuid
   * @param {{worldActor?:boolean, near?:(string|null)[]}} [options]
   * @returns {Promise<{token:any, actor:any}>}
   */
  async docs(uuid, { worldActor = false, near = [] } = {}) {
    if (typeof uuid !== "string" || !uuid) throw new UsageError("MINDSCAPE.Error.NoDocument", { uuid: String(uuid ?? "") });
    // Foundry's fromUuid throws on some malformed uuids rather than answering null.
    const doc = await Promise.resolve().then(() => this.env.fromUuid(uuid)).catch(() => null);
    if (!doc) throw new UsageError("MINDSCAPE.Error.NoDocument", { uuid });
    if (doc.documentName === "Token") return { token: doc, actor: doc.actor };
    if (doc.documentName === "Actor") {
      if (doc.isToken) return { token: doc.token, actor: doc };
      // Unlinked tokens (each with its own synthetic actor) included.
      const tokens = this.tokensOfActor(doc, near);
      const linked = tokens.find((t) => t.actorLink) ?? null;
      if (worldActor) return { token: linked, actor: doc };
      const token = linked ?? tokens[0] ?? null;
      return { token, actor: token?.actor ?? doc };
    }
    throw new UsageError("MINDSCAPE.Error.NoDocument", { uuid });
  }

  /** Whether `user` may act for `actor` (the GM always; owners when the world allows). */
  mayAttackWith(user, actor) {
    if (user?.isGM) return true;
    if (!setting(this.game, "playersMayAttack")) return false;
    return Boolean(actor?.testUserPermission?.(user, "OWNER"));
  }

  /**
   * Refuse `user` acting for `actor` when it may not (`mayAttackWith`): an owner because
   * the world's "Players may start attacks" is off, anyone else because it does not own
   * the actor.
   * @throws {PermissionDeniedError}
   */
  checkMayAttackWith(user, actor) {
    if (this.mayAttackWith(user, actor)) return;
    if (actor?.testUserPermission?.(user, "OWNER")) throw new PlayersMayNotAttackError({ who: actor.name });
    throw new PermissionDeniedError({ who: actor?.name });
  }

  /**
   * The active player who answers an actor's secret questions (its defense, an encounter
   * choice, closing, control, joining), or null when the GM does (NPCs): a player the
   * actor's ownership names as an owner (OWNER, level 3), the one whose character it is
   * first. An owner only through the actor's default ownership ("All Players: Owner") is
   * not asked: that is every player, the attacker's own among them, who would then learn
   * (and choose) the defense against its own attack; the GM answers for such an actor,
   * as the Roll20 Mod script does for a character controlled by "all".
   *
   * `attackingPlayer` (the id of the player who asked for an attack, for the questions
   * tied to it: a defense, joining one): that player is asked only when no other player
   * answers for the actor, or it would choose the defense against its own attack. As the
   * actor's only owner it is still asked: it knows both sides anyway. An actor whose
   * default ownership is OWNER has every player for an owner, so then the GM answers,
   * as for such an actor that names no player.
   */
  ownerOf(actor, { attackingPlayer = null } = {}) {
    const players = (this.game.users?.contents ?? [...(this.game.users ?? [])])
      .filter((u) => u.active && this.answersFor(u, actor));
    const others = players.filter((u) => u.id !== attackingPlayer);
    if (!others.length && players.length && Number(actor?.ownership?.default) >= OWNER_LEVEL) return null;
    const asked = others.length ? others : players;
    return asked.find((u) => u.character?.id === actor.id) ?? asked[0] ?? null;
  }

  /**
   * Whether the player `user` answers for `actor` (`ownerOf` picks among them): the
   * actor's ownership names it as an owner (OWNER, level 3), not only its default
   * ownership. An unlinked token's actor holds its base actor's ownership (with any the
   * token's own delta sets over it). The GM answers for every other actor, and declares
   * for it: a player's own declaration is taken only for an actor it answers for
   * (encounter.js `declareFor`), or any player, the attacker's own among them, could
   * declare the defense of an actor all players own.
   */
  answersFor(user, actor) {
    return Boolean(user) && !user.isGM && Number(actor?.ownership?.[user.id]) >= OWNER_LEVEL;
  }

  /** The ids of the world's GMs, as Foundry whispers a private or blind roll to them. */
  gmIds() {
    return (this.game.users?.contents ?? [...(this.game.users ?? [])]).filter((u) => u.isGM).map((u) => u.id);
  }

  // ---------------------------------------------------------------- relay handlers

  /** Requests the active GM answers, and questions the GM asks players. */
  handlers() {
    // A request whose dice the GM types (physical dice): Cancel in the GM's prompt stops
    // it. The GM chose that, quietly; whoever asked from another browser is told.
    const typed = (fn) => async (p, c) => {
      try {
        return await fn(p, c);
      } catch (error) {
        if (error instanceof CancelledError && requesterOf(c.sender, this.game)) throw new UsageError("MINDSCAPE.Error.DiceCancelledByGM");
        throw error;
      }
    };
    return {
      prepare: { runsOn: "gm", fn: (p, c) => this.prepare(p, c.sender) },
      odds: { runsOn: "gm", fn: (p, c) => this.odds(p, c.sender) },
      attack: { runsOn: "gm", fn: typed((p, c) => this.attackAsked(p, c.sender)) },
      profileForm: { runsOn: "gm", fn: (p, c) => this.profileForm(p, c.sender) },
      saveProfile: { runsOn: "gm", fn: (p, c) => this.saveProfile(p, c.sender) },
      endRound: { runsOn: "gm", fn: typed((p, c) => this.endRoundFor(p, c.sender)) },
      prepareRest: { runsOn: "gm", fn: (p, c) => this.prepareRest(p, c.sender) },
      rest: { runsOn: "gm", fn: typed((p, c) => this.restFor(p, c.sender)) },
      refreshEncounter: { runsOn: "gm", fn: (p, c) => this.refreshEncounterFor(p, c.sender) },
      describeHouseRules: { runsOn: "gm", fn: (p, c) => this.houseRulesFor(c.sender) },
      encounterDeclare: { runsOn: "gm", fn: (p, c) => this.env.encounters?.declareFor(p, c.sender) },
      chooseDefense: { runsOn: "player", fn: (p) => this.chooseDefenseHere(p) },
      chooseEncounter: { runsOn: "player", fn: (p) => this.chooseEncounterHere(p) },
      encounterTooLate: { runsOn: "player", fn: (p) => this.encounterTooLateHere(p) },
      chooseClose: { runsOn: "player", fn: (p) => this.chooseCloseHere(p) },
      chooseControl: { runsOn: "player", fn: (p) => this.chooseControlHere(p) },
      chooseJoin: { runsOn: "player", fn: (p) => this.chooseJoinHere(p) },
      joinLeftOut: { runsOn: "player", fn: (p) => this.joinLeftOutHere(p) },
    };
  }

  /** GM: what the attack dialog needs (modes the attacker knows, its options, the targets). */
  async prepare({ attackerUuid, targetUuids }, sender) {
    const near = sceneIdsOfUuids([attackerUuid, ...(targetUuids ?? [])]);
    const { actor, token } = await this.docs(attackerUuid, { near });
    this.checkMayAttackWith(sender, actor);
    if (!targetUuids?.length) throw new UsageError("MINDSCAPE.Error.NoTarget");
    const system = this.system;
    const adapter = await this.adapterId();
    const [description, imported] = await Promise.all([
      this.describe(system),
      this.rpc("adapters.import", { adapter, system, data: this.ref(actor, token, adapter).data, options: houseRulesFor(this.game, system) }),
    ]);
    const combatant = imported?.combatant ?? {};
    const modes = modesFromDescription(system, description);
    const targets = [];
    for (const uuid of targetUuids) {
      const d = await this.docs(uuid, { near });
      targets.push({ uuid, name: d.token?.name ?? d.actor.name });
    }
    const attacks = knownModes(modes.attacks, imported ? knownModeIds(system, combatant, "attacks") : null);
    if (!attacks.length) throw new UsageError("MINDSCAPE.Error.NoAttackModes", { name: token?.name ?? actor.name });
    return {
      system,
      attackerUuid,
      attackerName: token?.name ?? actor.name,
      attacks,
      defenses: modes.defenses,
      fields: attackFieldsFor(system, combatant),
      targets,
      warnings: imported?.warnings ?? [],
    };
  }

  /**
   * GM: exact odds of the attack against one target (`targetUuid`), assuming a defense.
   * power-pool: a mode that strikes several targets (a psionic wave) is one exchange
   * against all of them (`targetUuids`), so its odds are the group's. A refusal that
   * speaks of a mind struck reaches only those who may see that mind (`oddsRefusal`).
   * `targetUuids` left out or null is no list, as for `prepare` and `attack`.
   */
  async odds({ attackerUuid, targetUuid, targetUuids, attack, assumeDefense }, sender) {
    targetUuids ??= [];
    const near = sceneIdsOfUuids([attackerUuid, targetUuid, ...targetUuids]);
    const a = await this.docs(attackerUuid, { near });
    this.checkMayAttackWith(sender, a.actor);
    if (!targetUuid && !targetUuids.length) throw new UsageError("MINDSCAPE.Error.NoTarget");
    const system = this.system;
    const attackObj = this.checkedAttack(system, attack);
    const group = targetUuids.length > 1 && await this.strikesSeveral(system, attackObj.mode);
    const targets = await Promise.all((group ? targetUuids : [targetUuid ?? targetUuids[0]]).map((uuid) => this.docs(uuid, { near })));
    this.checkTargets(a, targets);
    // power-pool: the odds against a puppet are the odds against its controller.
    const around = system === "power-pool" ? await this.controlAround(a, targets) : null;
    const controllers = around?.controllers ?? [];
    let defense = null;
    if (assumeDefense !== null && assumeDefense !== undefined && assumeDefense !== "") {
      // The defense assumed is the caller's own argument: a wrong one is refused naming it,
      // not sent, where the companion's refusal would read as the struck mind's secret.
      const defenses = modesFromDescription(system, await this.describe(system)).defenses ?? [];
      const known = defenses.map((m) => m.id);
      if (typeof assumeDefense !== "string" || (known.length && !known.includes(assumeDefense))) {
        throw new UsageError("MINDSCAPE.Error.BadAssumedDefense", { got: JSON.stringify(assumeDefense) ?? String(assumeDefense), known: known.join(", ") });
      }
      // A defense that costs nothing (combat-strength's, power-pool's) has nothing to pay.
      defense = { mode: assumeDefense, costs: Number(defenses.find((m) => m.id === assumeDefense)?.cost) > 0 };
    }
    const struck = [...targets, ...controllers];
    const params = await this.oddsRequest(a, targets, attackObj, defense ? { mode: defense.mode } : null, controllers);
    // Odds for a defense show, or not, whether the mind struck knows it and can pay for it:
    // to a user who may not see every mind struck, they are the odds as if each such mind
    // knew it and could pay (the companion's `assume_known`), for every defense alike,
    // and say so.
    const hidden = defense ? struck.filter((d) => !this.maySee(sender, d)) : [];
    if (hidden.length) params.assume_known = assumedPlaces(targets, controllers, hidden);
    params.least_chance = ODDS_LEAST_CHANCE;
    let odds;
    try {
      odds = await this.rpc("exchange.odds", params);
    } catch (error) {
      throw this.oddsRefusal(error, { attacker: a, struck, sender });
    }
    const view = oddsView(odds, this.t.label, system);
    if (group) view.group = targets.map((d) => d.token?.name ?? d.actor.name).join(", ");
    if (hidden.length) {
      const mind = around?.struck[0] ?? targets[0];
      view.assumed = this.t.format(defense.costs ? "MINDSCAPE.Odds.Assumed" : "MINDSCAPE.Odds.AssumedKnown", { name: mind.token?.name ?? mind.actor.name, mode: idLabel(this.t.label, "Mode", defense.mode) });
    }
    return view;
  }

  /** Whether `user` may see the secrets of the mind `docs` (its defenses, PSPs, sheet): the GM and its owners. */
  maySee(user, docs) {
    return Boolean(user?.isGM || docs.actor?.testUserPermission?.(user, "OWNER"));
  }

  /**
   * The params of `exchange.odds` for `attacker` against `targets`, built as the
   * exchange's own (`resolveNow`): the first target is the defender, assuming the defense
   * `defenseChoice` (null: none); a psionic wave's others go as `defenders`, and
   * (power-pool) the `controllers` struck in their puppets' place (`controlAround`) go along.
   * @param {{token:any, actor:any}} attacker
   * @param {{token:any, actor:any}[]} targets
   * @param {object} attack  the companion's attack object (`checkedAttack`)
   * @param {{mode:string}|null} defenseChoice
   * @param {{token:any, actor:any}[]} [controllers]
   */
  async oddsRequest(attacker, targets, attack, defenseChoice, controllers = []) {
    const system = this.system;
    const adapter = await this.adapterId();
    const ref = (d) => this.ref(d.actor, d.token, adapter);
    const params = exchangeParams({
      system,
      attacker: ref(attacker),
      defender: ref(targets[0]),
      attack,
      defense: defenseFromChoice(system, defenseChoice),
      options: houseRulesFor(this.game, system),
    });
    if (targets.length > 1) params.defenders = targets.slice(1).map(ref);
    if (controllers.length) params.controllers = controllers.map(ref);
    return oddsParams(params);
  }

  /**
   * GM: fail the attack of `attacker` on `targets` when the companion refuses it for the
   * attacker's own sake (`refusesTheAttacker`: too few PSPs, a multiplier above its level,
   * a mode it does not know, a mind that cannot attack, pool dice beyond its pool), before
   * any defender is asked. The defenders choose in secret, on their owners' clients:
   * asked for an attack that cannot be made, they would choose for nothing and learn that
   * an attack was coming. The attack dialog's odds keep a player from sending such an
   * attack, but a macro's attack skips the dialog, and Attack may be clicked before the
   * odds came back. So the attack is checked by one `exchange.odds` call for each
   * exchange it will make (`checkEachExchange`), with no defense assumed: the companion
   * checks it as `exchange.resolve` does, and refuses it before computing anything.
   * Allowed, the call computes exact odds, at the cost the dialog's odds have for the
   * same attack (a psionic wave's against all its targets at once, combat-strength's
   * damage distribution): small at a table's sizes, once per exchange. Only whether it
   * is allowed matters, so it asks with `least_chance` 1: the answer leaves every chance
   * below certainty out of its lists, whatever the system (a plugin's may be long).
   * Any other refusal (one about a defender, its sheet or its defense, which may be
   * secret) or failure is not decided here: the exchange's own call meets it, as before,
   * with its own secrecy. The check itself shows nothing to anyone.
   * @param {{token:any, actor:any}} attacker
   * @param {{token:any, actor:any}[]} targets  the exchange's target; a psionic wave's every target
   * @param {object} attack  the companion's attack object (`checkedAttack`)
   * @param {{token:any, actor:any}[]} [controllers]  power-pool: the controllers struck instead
   * @throws the companion's refusal, when it is for the attacker's own sake
   */
  async checkTheAttacker(attacker, targets, attack, controllers = []) {
    try {
      const params = await this.oddsRequest(attacker, targets, attack, null, controllers);
      await this.rpc("exchange.odds", { ...params, least_chance: 1 });
    } catch (error) {
      if (refusesTheAttacker(error, roundCombatantId(attacker.token, attacker.actor))) throw error;
    }
  }

  /**
   * GM: refuse the attacker among its own targets, or a mind targeted twice (two tokens
   * of one linked actor, or its token and its actor), before anyone is asked: no system
   * lets a mind attack itself, and an attack strikes each mind once. The companion would
   * refuse both only once the first exchange was made (combat-strength, power-pool: an id
   * used twice), after the defenders were asked.
   * @throws {UsageError} MINDSCAPE.Error.TargetIsAttacker, MINDSCAPE.Error.TargetTwice
   */
  checkTargets(attacker, targets) {
    const idOf = (d) => roundCombatantId(d.token, d.actor);
    const attackerId = idOf(attacker);
    const seen = new Set();
    for (const target of targets) {
      const id = idOf(target);
      const name = target.token?.name ?? target.actor.name;
      if (id === attackerId) throw new UsageError("MINDSCAPE.Error.TargetIsAttacker", { name });
      if (seen.has(id)) throw new UsageError("MINDSCAPE.Error.TargetTwice", { name });
      seen.add(id);
    }
  }

  /**
   * GM: `checkTheAttacker` for each exchange of an attack at once, `checks` one
   * `{targets, controllers}` each, in the order of the targets. Each exchange is checked,
   * not only the first: a refusal that depends on the target (the attacker among its own
   * targets) is found before anyone is asked. The first refusal in that order is thrown.
   */
  async checkEachExchange(attacker, checks, attack) {
    const settled = await Promise.allSettled(checks.map(({ targets, controllers = [] }) => this.checkTheAttacker(attacker, targets, attack, controllers)));
    const refused = settled.find((s) => s.status === "rejected");
    if (refused) throw refused.reason;
  }

  /**
   * The companion's attack object from what a client sent, refused with the field and
   * its rule when a macro sent what the dialog never does (requests.js `attackProblem`).
   * @throws {UsageError} MINDSCAPE.Error.BadAttack
   */
  checkedAttack(system, attack) {
    const problem = attackProblem(system, attack);
    if (problem) throw new UsageError("MINDSCAPE.Error.BadAttack", { field: problem.field, rule: problem.data ? this.t.format(problem.rule, problem.data) : this.t.localize(problem.rule), got: problem.got });
    return attackFromForm(system, attack);
  }

  /** Whether attack `mode` of `system` strikes several targets in one exchange (power-pool's psionic wave). */
  async strikesSeveral(system, mode) {
    if (system !== "power-pool") return false;
    const modes = modesFromDescription(system, await this.describe(system));
    return Boolean(modes.attacks.find((m) => m.id === mode)?.several_targets);
  }

  /**
   * GM: what the attack dialog of `sender` is told of the companion's refusal of the odds.
   * One that speaks of a mind struck (its defense, its PSPs, its sheet: `speaksOfTheStruck`)
   * may tell that mind's secrets, so a player who may not see every mind struck (owns
   * it) is told only that the odds cannot be shown, as an attack refused that way tells
   * only that the minds struck stopped it. Any other refusal goes as it is, marked
   * (`attackRefused`) when it is about the attacker or its attack, which no defense mends.
   */
  oddsRefusal(error, { attacker, struck, sender }) {
    const attackerId = roundCombatantId(attacker.token, attacker.actor);
    if (speaksOfTheStruck(error, attackerId) && !struck.every((d) => this.maySee(sender, d))) return new UsageError("MINDSCAPE.Error.OddsHiddenByTheStruck");
    if (refusesTheAttacker(error, attackerId) && error?.data) error.data.attackRefused = true;
    return error;
  }

  /**
   * GM: run an attack on every target in turn. Each defender's owner is asked secretly
   * (the GM for NPCs); each exchange is resolved with the actors' current data, so the
   * attacker's PSPs spent on the first target count for the next. `rollMode` is the
   * requesting user's own chat roll mode, used for the cards when the world's setting
   * is "default"; the GM's own attack uses the GM's mode at the time the card is posted.
   */
  async attack({ attackerUuid, targetUuids, attack, physical, rollMode }, sender) {
    const near = sceneIdsOfUuids([attackerUuid, ...(targetUuids ?? [])]);
    const first = await this.docs(attackerUuid, { near });
    this.checkMayAttackWith(sender, first.actor);
    if (!targetUuids?.length) throw new UsageError("MINDSCAPE.Error.NoTarget");
    const system = this.system;
    const attackObj = this.checkedAttack(system, attack);
    const defenders = await Promise.all(targetUuids.map((uuid) => this.docs(uuid, { near })));
    this.checkTargets(first, defenders);
    // Whom the defenders' questions name: a hidden token is "an unseen mind" to players (`askedName`).
    const requesterId = requesterOf(sender, this.game);
    // `player`: who asked for the attack, not asked a defense against it while another
    // player answers for the defender (`ownerOf`).
    const attackerName = { name: first.token?.name ?? first.actor.name, hidden: Boolean(first.token?.hidden), player: requesterId };
    const requesterRollMode = requesterId ? rollMode ?? null : null;
    const common = { attacker: first, attack: attackObj, physical, requesterRollMode, requesterId };
    if (system === "power-pool") return this.poolAttack(common, defenders, attackerName);
    await this.checkEachExchange(first, defenders.map((d) => ({ targets: [d] })), attackObj);
    // Ask every defender at once: they choose in parallel, secretly.
    const defenses = await Promise.all(defenders.map((d) => this.askDefense(d, attackerName, attackObj)));
    const reasks = { left: DEFENSE_REASKS };
    const outcomes = [];
    for (let i = 0; i < defenders.length; i++) {
      const exchange = (defenseChoice) => ({ ...common, defender: defenders[i], defenseChoice });
      // The one defender's choice: a refusal of DEFENSE_RULES is about it.
      const again = async (error) => {
        const refused = defenseRefusal(error, [null]);
        if (!refused) return null;
        return exchange(await this.askDefense(defenders[i], attackerName, attackObj, null, null, this.tellDefenseRefused(defenders[i], refused)));
      };
      outcomes.push(await this.resolveChoosing(exchange(defenses[i]), again, reasks));
    }
    return outcomes;
  }

  /**
   * GM: `attack` as a client asks for it through the relay. The GM runs the table, so an
   * attack a player asked for that fails is shown here too, unless the player was refused
   * an actor it does not own (the player's client shows what it is told). A failure that speaks of a mind the attack struck (a companion
   * refusal of a defense, or naming a combatant other than the attacker, or params
   * refused outside the attacker's own) may tell of that mind's secrets, its PSPs or its
   * defense: the player is told only that the minds it struck stopped the attack and
   * that the GM has the reason.
   */
  async attackAsked(payload, sender) {
    try {
      return await this.attack(payload, sender);
    } catch (error) {
      if (!sender || sender.id === this.game.user?.id) throw error;
      // A player's own overreach (an actor it does not own) is the player's to hear of:
      // shown here it would read as if the GM may not. The GM hears of a player's failed
      // attacks once every few seconds at most: a player's client asking in a loop would
      // otherwise fill the GM's screen (the player is told each time).
      if (!(error instanceof PermissionDeniedError) && this.mayNoticeFrom(sender)) this.notifyError(error);
      const first = await this.docs(payload.attackerUuid).catch(() => null);
      const attackerId = first ? roundCombatantId(first.token, first.actor) : null;
      if (speaksOfTheStruck(error, attackerId)) throw new UsageError("MINDSCAPE.Error.StoppedByTheStruck");
      throw error;
    }
  }

  /**
   * Whether the GM may be shown a notice of `sender`'s failed request now: one every
   * NOTICE_GAP_MS per player.
   */
  mayNoticeFrom(sender) {
    this.noticedFrom ??= new Set();
    if (this.noticedFrom.has(sender.id)) return false;
    this.noticedFrom.add(sender.id);
    // (unref: a Node test run does not wait for it)
    setTimeout(() => this.noticedFrom.delete(sender.id), NOTICE_GAP_MS)?.unref?.();
    return true;
  }

  /**
   * GM: a power-pool attack (RULES.md §3.2-3.4). An attack on a creature under psionic
   * control strikes its controller (seed 001), whose owner chooses the defense and who
   * goes with the request (`controllers`); every creature a participant controls goes
   * along (`puppets`), so that its sheet follows when that control ends. A mode that
   * attacks several targets (psionic-wave) makes one exchange against all of them
   * (`defenders`), each struck creature choosing its own defense (`defenses`); any other
   * mode makes one exchange per target, as in the other systems.
   *
   * The mind struck may draw its non-psionic allies into its defense (imagination-swarm,
   * RULES.md §3.3): whoever chooses its defense picks them among the creatures on the
   * scene that may join (`allyCandidates`), and they go as `allies`, with the creatures
   * they control as puppets. In a wave only the mind struck first draws allies in: its
   * defense leads the group, as in an encounter.
   *
   * A psionic creature on the scene that is a struck mind's ally may join that defense
   * by its own choice, with its own Imagination Swarm (seed 001: "Psionically active
   * creatures may also use this defence mode to participate in a psionic combat that is
   * targeting an ally they can see"): whoever answers for it is asked while the minds
   * struck choose (`poolJoiners`), and one that joins goes as an ally with its own
   * defense (`defenses[<its id>]`). In a wave it joins the group, led by the mind struck
   * first.
   */
  async poolAttack(common, defenders, attackerName) {
    const system = this.system;
    const mode = modesFromDescription(system, await this.describe(system)).attacks.find((m) => m.id === common.attack.mode);
    const around = await this.controlAround(common.attacker, defenders);
    // A wave is one exchange against all its targets; any other mode's exchanges strike
    // a target each, or its controller in its place.
    const wave = Boolean(mode?.several_targets) && defenders.length > 1;
    const checks = wave
      ? [{ targets: defenders, controllers: around.controllers }]
      : defenders.map((d, i) => ({ targets: [d], controllers: around.struck[i] === d ? [] : [around.struck[i]] }));
    await this.checkEachExchange(common.attacker, checks, common.attack);
    const aimedAt = (i) => (around.struck[i] === defenders[i] ? null : defenders[i].token?.name ?? defenders[i].actor.name);
    // The scene is read once for the whole attack: each creature at most once, whether
    // for the allies a mind may draw in or for those that may join by their own choice.
    const taken = [common.attacker, ...defenders, ...around.struck];
    const readings = new Map();
    const read = (docs) => {
      const key = actorUuidOf(docs);
      if (!readings.has(key)) readings.set(key, this.importedOf(docs));
      return readings.get(key);
    };
    // Only when a mind asked may draw allies in; each mind is offered its own allies.
    let creatures = null;
    const allies = async (struck) => this.allyCandidates(struck, await (creatures ??= this.sceneCreatures(taken, { read })));
    // An attack on the attacker's own puppet: nobody is asked, the companion refuses it.
    // Asked again (`refused`), a mind is not offered the allies the companion refused (`leftOut`).
    const ask = (i, drawsAllies, refused = null, leftOut = new Map()) => {
      if (around.ownPuppet[i]) return Promise.resolve(null);
      const offered = async (struck) => (await allies(struck)).filter((c) => !leftOut.has(actorUuidOf(c.docs)));
      return this.askDefense(around.struck[i], attackerName, common.attack, aimedAt(i), drawsAllies ? offered : null, refused);
    };
    const asked = around.struck.map(actorUuidOf);
    // The allies a choice drew in and those who joined, but those the companion refused
    // (`leftOut`, their actors' uuids), read for what they control (their puppets go along).
    const alliesOf = async (choice, joined, leftOut) => {
      const drawn = [...(choice?.allies ?? []), ...joined.map((j) => j.docs)].filter((d) => !leftOut.has(actorUuidOf(d)));
      for (const ally of drawn) await around.read(ally);
      return drawn;
    };
    const joinedDefenses = (joined) => joined.map((j) => [j.id, { mode: j.mode }]);
    // The puppets read here only queue the exchange: its turn reads control again
    // (`controlNow`) and tells the GM then of a puppet that is not here, once.
    const quiet = { tell: false };
    if (wave) {
      // One group: each struck creature once, in the order of the targets.
      const first = around.struckIds.map((id, i) => around.struckIds.indexOf(id) === i);
      const minds = around.struck.filter((_d, i) => first[i] && !around.ownPuppet[i]);
      const [choices, [joined]] = await Promise.all([
        Promise.all(defenders.map((_d, i) => (first[i] ? ask(i, i === 0) : null))),
        this.poolJoiners({ taken, groups: [minds], attackerName, attack: common.attack, read }),
      ]);
      const leftOut = new Map();
      const exchange = async () => {
        const members = around.struckIds.map((id, i) => [id, choices[i]]).filter((_m, i) => first[i]);
        const drawn = await alliesOf(choices[0], joined, leftOut);
        const group = {
          targets: defenders,
          asked,
          defenders: defenders.slice(1),
          controllers: around.controllers,
          allies: drawn,
          puppets: await around.puppetsOf([common.attacker, ...defenders, ...around.controllers, ...drawn], quiet),
          defenses: [...members.slice(1), ...joinedDefenses(joined.filter((j) => !leftOut.has(actorUuidOf(j.docs))))],
        };
        return { ...common, defender: defenders[0], defenseChoice: members[0][1], group, leftOut };
      };
      // The mind the companion names chooses again; the others' choices stand.
      const choosers = around.struckIds.map((id, i) => (first[i] && !around.ownPuppet[i] ? id : undefined));
      const again = async (error) => {
        const refused = defenseRefusal(error, choosers.filter(Boolean));
        if (!refused) return null;
        const i = choosers.indexOf(refused.id);
        choices[i] = await ask(i, i === 0, this.tellDefenseRefused(around.struck[i], refused), leftOut);
        return exchange();
      };
      return [await this.resolveChoosing(await exchange(), again, { left: DEFENSE_REASKS })];
    }
    const minds = around.struck.map((d, i) => (around.ownPuppet[i] ? [] : [d]));
    const [defenses, joiners] = await Promise.all([
      Promise.all(defenders.map((_d, i) => ask(i, true))),
      this.poolJoiners({ taken, groups: minds, attackerName, attack: common.attack, read }),
    ]);
    const reasks = { left: DEFENSE_REASKS };
    const outcomes = [];
    for (let i = 0; i < defenders.length; i++) {
      const controllers = around.struck[i] === defenders[i] ? [] : [around.struck[i]];
      const leftOut = new Map();
      const exchange = async (choice) => {
        const drawn = await alliesOf(choice, joiners[i], leftOut);
        const puppets = await around.puppetsOf([common.attacker, defenders[i], ...controllers, ...drawn], quiet);
        const joined = joinedDefenses(joiners[i].filter((j) => !leftOut.has(actorUuidOf(j.docs))));
        const group = { targets: [defenders[i]], asked: [asked[i]], defenders: [], controllers, allies: drawn, puppets, defenses: joined };
        return { ...common, defender: defenders[i], defenseChoice: choice, group, leftOut };
      };
      // The mind struck chooses again when the companion names it (not the attacker's own puppet).
      const again = async (error) => {
        const refused = around.ownPuppet[i] ? null : defenseRefusal(error, [around.struckIds[i]]);
        if (!refused) return null;
        return exchange(await ask(i, true, this.tellDefenseRefused(around.struck[i], refused), leftOut));
      };
      outcomes.push(await this.resolveChoosing(await exchange(defenses[i]), again, reasks));
    }
    return outcomes;
  }

  /**
   * power-pool, a single attack: ask the psionic creatures on the scene that may join a
   * defense by their own choice (RULES.md §3.3) whether they do, each once and all at
   * once (`askJoin`, in parallel with the minds struck). `groups` are the defenses of the
   * attack's exchanges (one per exchange: a wave's is one, led by the mind struck first),
   * each given as the minds struck in it that choose; a creature is asked about those
   * where one of them is its ally (`joinCandidates`). Only the scene's creatures with a
   * power-pool profile are read for it (every one in a world read through a mapping,
   * which may keep the profile anywhere). Who joins each group, by group:
   * `[[{docs, id, mode}]]`; nobody is asked when nobody may join.
   * @param {{taken:{token:any, actor:any}[], groups:{token:any, actor:any}[][], attackerName:{name:string, hidden?:boolean, player?:string|null},
   *          attack:{mode:string}, read?:(docs:{token:any, actor:any})=>Promise<object|null>}} request
   *   `taken`: the attacker, the targets and the minds struck, who never join
   */
  async poolJoiners({ taken, groups, attackerName, attack, read }) {
    const joined = groups.map(() => []);
    if (!groups.some((g) => g.length)) return joined;
    const description = await this.describe("power-pool");
    const defenses = modesFromDescription("power-pool", description).defenses;
    if (!allyDrawingModeIds(defenses).length) return joined;
    const generic = (await this.adapterId()) === "foundry.generic";
    const creatures = await this.sceneCreatures(taken, { read, only: (docs) => generic || hasProfile(docs.actor, "power-pool") });
    const candidates = this.joinCandidates(groups, creatures, defenses, description?.tables?.awareness_conditions ?? []);
    if (!candidates.length) return joined;
    const attackLabel = this.t.label(`MINDSCAPE.Mode.${attack.mode}`, attack.mode);
    const answers = await Promise.all(candidates.map((c) => this.askJoin(c.docs, { mode: c.mode, groups: c.offers, attackerName, attackLabel })));
    candidates.forEach((c, i) => {
      if (answers[i].group !== null) joined[c.offers[answers[i].group].group].push({ docs: c.docs, id: c.id, mode: c.mode });
    });
    return joined;
  }

  /**
   * power-pool: who among `creatures` (`sceneCreatures`) may join, by its own choice, a
   * defense of `groups` (each the minds struck in one exchange): one that could defend
   * with a mode drawing allies in (`joiningModeId`: psionic, knowing it, with a mind, not
   * under control, able to defend with it) whose token has the same disposition as a
   * mind struck in that group (`dispositionOf`; none when the mind's side is unknown)
   * and can see it: no wall blocks the sight between their tokens (`sightBlocked`; when
   * that cannot be told here, as for a token not on the scene shown, the GM's answer
   * for the creature decides).
   * As `[{docs, id, mode, offers}]`, `offers` being the groups it may join with the
   * allies struck there (`{group, minds:[{name, hidden}]}`; `hidden` for players: a mind
   * without a visible token on the scene, its token hidden or none there, a world actor).
   * @param {{token:any, actor:any}[][]} groups
   * @param {{docs:{token:any, actor:any}, combatant:object|null}[]} creatures
   * @param {{id:string, draws_allies?:boolean, defends_while_unaware?:boolean}[]} defenses
   * @param {string[]} awareness  the companion's `tables.awareness_conditions`
   */
  joinCandidates(groups, creatures, defenses, awareness) {
    const out = [];
    for (const { docs, combatant } of creatures) {
      const mode = joiningModeId(combatant, defenses, awareness);
      const side = dispositionOf(docs);
      if (!mode || side === null) continue;
      const offers = groups
        .map((minds, group) => ({
          group,
          minds: minds.filter((m) => dispositionOf(m) === side && sightBlocked(this.env.CONFIG, docs.token, m.token) !== true)
            .map((m) => ({ name: m.token?.name ?? m.actor.name, hidden: !m.token || Boolean(m.token.hidden) })),
        }))
        .filter((o) => o.minds.length);
      if (offers.length) out.push({ docs, id: combatant.id ?? roundCombatantId(docs.token, docs.actor), mode, offers });
    }
    return out;
  }

  /**
   * GM: ask whoever answers for a psionic creature (its owner on their own client, the GM
   * for an NPC or when no owner is connected) whether it joins, by its own choice, the
   * defense of an ally under psionic attack with `mode` (RULES.md §3.3), within the
   * world's defense timeout. `groups` are the defenses it may join, each named by the
   * allies struck there; a player is not told of a mind they cannot see (`hidden`: its
   * token hidden, or no token on the scene), and is not asked about a defense with none
   * left (nor at all when none is left). `attackerName` and `attackLabel` say who
   * attacks and how, when the asker may say it (a single attack; an encounter's view
   * keeps the attack secret). `group`: the index in `groups` of the defense it joins, or
   * null: Stay out, a closed dialog, no answer in time, an answer it was not offered, or
   * a failure; `declined`: it answered Stay out (or closed the question), which an
   * encounter does not ask again (no answer in time may be asked again).
   * @param {{token:any, actor:any}} docs
   * @param {{mode:string, groups:{minds:{name:string, hidden?:boolean}[]}[], attackerName?:{name:string, hidden?:boolean}|string|null, attackLabel?:string|null}} question
   *   `attackerName`: a hidden attacker's token is named to a player as an unseen mind (`askedName`);
   *   its `player`, who asked for the attack, is not asked while another player answers for the creature (`ownerOf`)
   * @returns {Promise<{group:number|null, declined:boolean}>}
   */
  async askJoin(docs, { mode, groups, attackerName = null, attackLabel = null }) {
    const owner = this.ownerOf(docs.actor, { attackingPlayer: attackerName?.player ?? null });
    const offered = groups
      .map((g, i) => ({ value: String(i), names: g.minds.filter((m) => !(owner && m.hidden)).map((m) => m.name).join(", ") }))
      .filter((g) => g.names);
    if (!offered.length) return { group: null, declined: false };
    const timeoutMs = this.defenseTimeoutS() * 1000;
    const context = {
      name: docs.token?.name ?? docs.actor.name,
      attackerName: attackerName === null ? null : this.askedName(attackerName, owner),
      attackLabel,
      allies: offered.map((g) => g.names).join(", "),
      modeLabel: this.t.label(`MINDSCAPE.Mode.${mode}`, mode),
      groups: offered.map((g, i) => ({ ...g, checked: i === 0 })),
      several: offered.length > 1,
      seconds: Math.round(timeoutMs / 1000),
      timeoutMs,
    };
    const answer = await this.askWithin(owner, "chooseJoin", (c) => this.chooseJoinHere(c), context, timeoutMs);
    const picked = offered.find((g) => g.value === answer?.join);
    if (picked) return { group: Number(picked.value), declined: false };
    return { group: null, declined: Boolean(answer && !answer.timedOut && (answer.cancelled || answer.join === null)) };
  }

  /**
   * GM: ask `owner` on their own client through the relay (`handler`), or, without an
   * owner, here (`here`, with `askedHere` in its context: the question then tells the
   * GM that the players do not see it), never waiting longer than `timeoutMs` and the
   * grace: the answer, or `fallback` when none came in time or the asking failed. With
   * `onLate`, an answer that comes after that (but within the relay's margin) is handed
   * to it, so that whoever answered can be told it came too late.
   */
  async askWithin(owner, handler, here, context, timeoutMs, fallback = null, { onLate = null } = {}) {
    const wait = timeoutMs + this.defenseGraceMs;
    try {
      const asking = owner ? this.relay.toUser(owner.id, handler, context, onLate ? wait + RELAY_MARGIN_MS : wait) : here({ ...context, askedHere: true });
      const answer = await withDeadline(asking, wait, LATE);
      if (answer !== LATE) return answer;
      if (onLate) asking.then((late) => onLate(late), () => null);
      return fallback;
    } catch {
      return fallback;
    }
  }

  /**
   * Any client: show one encounter combatant's secret choice, closing the question still
   * open for that combatant here (a second *Ask for choices* replaces it, never stacks a
   * second dialog), and answer the GM.
   */
  chooseEncounterHere(context) {
    const key = context?.combatantId ?? "";
    this.choosing ??= new Map();
    this.choosing.get(key)?.();
    let replace;
    const replaced = new Promise((resolve) => { replace = resolve; });
    this.choosing.set(key, replace);
    return Promise.resolve(this.env.dialogs.encounterChoiceDialog({ context, timeoutMs: context?.timeoutMs, replaced }))
      .finally(() => { if (this.choosing.get(key) === replace) this.choosing.delete(key); });
  }

  /** A player's client: say that its encounter choice for `name` came after the GM stopped waiting. */
  encounterTooLateHere({ name }) {
    this.notify("warn", this.t.format("MINDSCAPE.Encounter.ChoiceTooLate", { name }));
    return true;
  }

  /** Any client: show the question whether a psionic creature joins a defense, and answer the GM. */
  chooseJoinHere(context) {
    return this.env.dialogs.joinDialog({ context, timeoutMs: context.timeoutMs });
  }

  /** A player's client: say that the creature they joined to a defense was left out (`resolveExchange`). */
  joinLeftOutHere({ name, defender, rule, detail }) {
    this.notify("warn", this.t.format("MINDSCAPE.Join.LeftOut", { name, defender, rule, detail }));
    return true;
  }

  /**
   * power-pool: the creatures on the scene that might be drawn into an imagination swarm
   * or join one (RULES.md §3.3), as `[{docs, combatant}]`: every token on the scene of
   * the attack (the attacker's token's, else a target's) whose actor, as seen through the
   * token, is none of `taken` (the attacker, the targets, the minds struck in their
   * place), each once (two tokens of a linked actor are one creature), with `only`
   * those it keeps, as the companion reads it for the world's system (`read`, by default
   * `adapters.import` as for an attack; null when it cannot).
   * @param {{token:any, actor:any}[]} taken
   * @param {{only?:(docs:{token:any, actor:any})=>boolean, read?:(docs:{token:any, actor:any})=>Promise<object|null>}} [options]
   */
  async sceneCreatures(taken, { only = null, read = (docs) => this.importedOf(docs) } = {}) {
    const keys = new Set(taken.map(actorUuidOf));
    const scene = taken.map((d) => d.token?.parent).find((p) => p?.tokens) ?? null;
    const tokens = scene ? scene.tokens.contents ?? [...scene.tokens] : [];
    const creatures = [];
    for (const token of tokens) {
      if (!token?.actor) continue;
      const docs = { token, actor: token.actor };
      const key = actorUuidOf(docs);
      if (keys.has(key)) continue;
      keys.add(key);
      if (!only || only(docs)) creatures.push(docs);
    }
    const combatants = await Promise.all(creatures.map((docs) => read(docs)));
    return creatures.map((docs, i) => ({ docs, combatant: combatants[i] }));
  }

  /**
   * power-pool: the creatures `struck` may draw into an imagination swarm, as
   * `[{uuid, name, hidden, docs}]` by the token's name: among `creatures`
   * (`sceneCreatures`), those that may join (`mayJoinAsAlly`: non-psionic, with a mind,
   * not under psionic control; a psionic creature joins by its own choice, when asked
   * itself: `poolJoiners`) and are its allies at the table: the same disposition
   * as the struck mind's token (`dispositionOf`; a world actor without a token on the
   * scene, its prototype token's). None when the struck mind's side is unknown.
   * @param {{token:any, actor:any}} struck
   * @param {{docs:{token:any, actor:any}, combatant:object|null}[]} creatures
   */
  allyCandidates(struck, creatures) {
    const side = dispositionOf(struck);
    if (side === null) return [];
    return creatures
      .filter(({ docs, combatant }) => mayJoinAsAlly(combatant) && dispositionOf(docs) === side)
      .map(({ docs }) => ({ uuid: docs.token.uuid, name: docs.token.name ?? docs.actor.name, hidden: Boolean(docs.token.hidden), docs }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * power-pool, in an exchange's turn in the queue (`resolveExchange`): the control
   * around it read again from the sheets as they are now, since an earlier exchange may
   * have won or ended control. A target now struck through another mind than the one
   * asked for the defense stops the exchange (that mind did not choose); otherwise the
   * controllers and puppets are the current ones. The GM is told of a puppet that is not
   * here unless its id is in `told` (those told already in this exchange: a try again
   * after a refusal reads control once more), which gets the ids told.
   * @param {Set<string>} [told]
   */
  async controlNow(attacker, group, told = new Set()) {
    const around = await this.controlAround(attacker, group.targets);
    const changed = around.struck.findIndex((d, i) => actorUuidOf(d) !== group.asked[i]);
    if (changed >= 0) {
      const t = group.targets[changed];
      throw new UsageError("MINDSCAPE.Error.ControlChanged", { name: t.token?.name ?? t.actor.name });
    }
    const controllers = around.controllers;
    const allies = group.allies ?? [];
    for (const ally of allies) await around.read(ally);
    const puppets = await around.puppetsOf([attacker, ...group.targets, ...controllers, ...allies], { told });
    return { ...group, controllers, allies, puppets };
  }

  /** What the companion reads of an actor for the world's system (`adapters.import`), or null. */
  async importedOf(docs) {
    const system = this.system;
    const adapter = await this.adapterId();
    try {
      const imported = await this.rpc("adapters.import", { adapter, system, data: this.ref(docs.actor, docs.token, adapter).data, options: houseRulesFor(this.game, system) });
      return imported?.combatant ?? null;
    } catch {
      return null;
    }
  }

  /**
   * The token and actor of a combatant id the companion gave (`roundCombatantId`: the
   * actor's id, `<actor id>-<token id>` for an unlinked token), or null when it is not
   * in this world. The token is found by its id on the world's scenes, those `near`
   * (the exchange's or round's own) first (`scenesFrom`), whichever scene the GM views.
   * @param {string} cid
   * @param {(string|null)[]} [near]  scene ids
   */
  async docsOfCombatant(cid, near = []) {
    const [actorId, tokenId] = String(cid).split("-");
    const actor = await this.env.fromUuid(`Actor.${actorId}`).catch(() => null);
    if (!actor) return null;
    // A world actor is itself (with its linked token, if any), never one of its copies.
    if (!tokenId) return this.docs(actor.uuid, { worldActor: true, near });
    for (const scene of this.scenesFrom(near)) {
      const token = scene.tokens?.get?.(tokenId);
      if (token && token.actorId === actorId && !token.actorLink) return { token, actor: token.actor };
    }
    return null;
  }

  /**
   * `names` (combatant id → the table's name) and the names of the combatant ids that
   * `summary` quotes and `names` lacks: the companion names a creature it was not given
   * by its id in quotes (chat.js `namedSummary`), which the card shows as the table knows
   * that creature, its token on the scene or else its actor in the world
   * (`docsOfCombatant`). An id this client finds nobody for is left out, and stays quoted.
   * @param {string|null|undefined} summary
   * @param {Map<string,string>|undefined} names
   * @returns {Promise<Map<string,string>>}
   */
  async withQuotedNames(summary, names) {
    const out = new Map(names ?? []);
    for (const id of quotedIds(summary)) {
      if (out.has(id)) continue;
      // Foundry's fromUuid throws on some malformed uuids rather than answering null.
      const docs = await Promise.resolve().then(() => this.docsOfCombatant(id)).catch(() => null);
      // "a-b-c" reads as actor a's token b: only the creature whose id it is, exactly.
      if (docs && roundCombatantId(docs.token, docs.actor) === id) out.set(id, docs.token?.name ?? docs.actor.name);
    }
    return out;
  }

  /**
   * power-pool control around an attack, as the companion reads the sheets: for each
   * target, who is struck (its controller when it is under control; `struckIds`, their
   * combatant ids) and the controllers among them; `puppetsOf(participants)` gives the
   * creatures those participants control that are not among them, once `read(docs)` has
   * read each further participant (an ally). A controller that is not here stops the
   * attack (the companion could not resolve it); a puppet that is not here is left out,
   * and the GM is told its sheet will not follow (not with `puppetsOf(participants,
   * {tell: false})`, nor of an id in `puppetsOf(participants, {told})`, a set of the ids
   * told already, which gets those told).
   */
  async controlAround(attacker, targets) {
    const near = sceneIdsOf([attacker, ...targets]);
    const byId = new Map();
    // What each participant controls (combatant ids), by its documents.
    const links = new Map();
    const read = async (docs) => {
      const c = await this.importedOf(docs);
      if (c?.id) byId.set(c.id, docs);
      links.set(docs, (c?.controlling ?? []).map((link) => link?.id).filter(Boolean));
      return c;
    };
    await read(attacker);
    const targetCombatants = [];
    for (const target of targets) targetCombatants.push(await read(target));
    const struck = [];
    const struckIds = [];
    const ownPuppet = [];
    const controllers = [];
    for (const [i, c] of targetCombatants.entries()) {
      const cid = c?.controlled_by;
      ownPuppet.push(Boolean(cid) && byId.get(cid) === attacker);
      if (!cid || ownPuppet[i]) { struck.push(targets[i]); struckIds.push(c?.id ?? null); continue; }
      let docs = byId.get(cid);
      if (!docs) {
        docs = await this.docsOfCombatant(cid, near);
        if (!docs) throw new UsageError("MINDSCAPE.Error.ControllerMissing", { name: targets[i].token?.name ?? targets[i].actor.name, id: cid });
        byId.set(cid, docs);
        await read(docs);
      }
      // The companion finds a controller among `controllers` only (also one that is a target).
      if (!controllers.includes(docs)) controllers.push(docs);
      struck.push(docs);
      struckIds.push(cid);
    }
    const found = new Map();
    const puppetsOf = async (participants, { tell = true, told = new Set() } = {}) => {
      const puppets = [];
      const missing = [];
      for (const pid of new Set(participants.flatMap((d) => links.get(d) ?? []))) {
        const own = byId.get(pid);
        if (own && participants.includes(own)) continue;
        if (!found.has(pid)) found.set(pid, own ?? await this.docsOfCombatant(pid, near));
        const docs = found.get(pid);
        if (docs) puppets.push(docs); else missing.push(pid);
      }
      if (!tell) return puppets;
      this.tellPuppetsMissing(missing.filter((id) => !told.has(id)));
      for (const id of missing) told.add(id);
      return puppets;
    };
    return { struck, struckIds, ownPuppet, controllers, puppetsOf, read };
  }

  /**
   * GM: ask the defender's owner (or the GM) for a defense, with a timeout and a
   * remembered default; `attackerName.player`, the player who asked for the attack, is
   * not asked while another player answers for the defender (`ownerOf`). Only the
   * defenses the defender knows are offered (the daemon's rule for its system,
   * requests.js `knownModeIds`); a defender that knows none (a non-psionic mind) is not
   * asked and raises none, except a power-pool spellcaster (spells memorised), which may
   * still sacrifice them. Only a defense it knows is remembered as its default, once the
   * exchange is resolved (the answer's `keepAsDefault`, called by `keepDefaults`).
   *
   * power-pool: with `allies` (a function giving a defender's `allyCandidates`), a
   * defender that knows a mode drawing allies in (imagination-swarm) is offered the
   * creatures it may draw in (a player is not shown hidden tokens); the answer's
   * `allies` are the documents of those picked, kept only with such a mode, and only
   * among those offered. Without an answer (a timeout, Cancel) nobody is drawn in, and
   * allies are never remembered.
   *
   * `refused` (the companion refused the defense chosen before, `tellDefenseRefused`): the
   * defender is asked again and told why; nothing is preselected, without an answer no
   * defense is raised, and the answer is not remembered.
   * @returns {Promise<{mode:string|null, sacrifice?:any, allies:{token:any, actor:any}[], timedOut?:boolean, cancelled?:boolean, refused?:boolean, notAsked?:boolean, keepAsDefault?:(()=>Promise<any>)|null}>}
   */
  async askDefense(defender, attackerName, attack, aimedAt = null, allies = null, refused = null) {
    const system = this.system;
    const actor = defender.actor;
    // Asked again, the defense refused may be the default: nothing is preselected, and
    // without an answer no defense is raised.
    const stored = refused ? null : actor.getFlag?.(MODULE_ID, `defaultDefense.${system}`) ?? actor.flags?.[MODULE_ID]?.defaultDefense?.[system] ?? null;
    const description = await this.describe(system);
    const modes = modesFromDescription(system, description).defenses;
    const imported = await this.importedOf(defender);
    const known = knownModeIds(system, imported, "defenses");
    const offered = knownModes(modes, known);
    const offeredIds = new Set(offered.map((m) => m.id));
    // A remembered default the defender cannot use is no default.
    const remembered = stored && offeredIds.has(stored) ? stored : null;
    // power-pool: a spellcaster knowing no defense mode still chooses whether it
    // sacrifices spells (seed 001), so it is asked; anyone else without a mode is not.
    const spells = system === "power-pool" && Array.isArray(imported?.spell_levels) && imported.spell_levels.length > 0;
    if (offered.length === 0 && !spells) return { mode: null, allies: [], timedOut: false, notAsked: true };
    const owner = this.ownerOf(actor, { attackingPlayer: attackerName?.player ?? null });
    const drawing = new Set(allies ? allyDrawingModeIds(offered) : []);
    // A player sees only the tokens the scene shows players.
    const candidates = drawing.size ? (await allies(defender)).filter((c) => !(owner && c.hidden)) : [];
    const timeoutMs = this.defenseTimeoutS() * 1000;
    const context = {
      system,
      attackerName: this.askedName(attackerName, owner),
      defenderName: defender.token?.name ?? actor.name,
      // revised-2e (and combat-strength) raise defenses without knowing the attack
      // (RULES.md §1.4); in power-pool the defender answers a declared attack.
      attackLabel: system === "power-pool" ? this.t.label(`MINDSCAPE.Mode.${attack.mode}`, attack.mode) : null,
      // power-pool: the attack was aimed at this creature's puppet, and strikes it instead.
      aimedAt,
      defenses: offered.map((m) => ({ id: m.id, label: this.t.label(`MINDSCAPE.Mode.${m.id}`, m.id), cost: m.cost, selected: m.id === remembered })),
      noneSelected: !remembered,
      sacrifice: system === "power-pool",
      // power-pool: the creatures it may draw in with a mode that draws allies (`allyModes`).
      allies: candidates.map((c) => ({ uuid: c.uuid, name: c.name })),
      allyModes: [...drawing].join(","),
      allyModeLabels: [...drawing].map((id) => this.t.label(`MINDSCAPE.Mode.${id}`, id)).join(", "),
      // Asked again: why the companion refused the defense chosen before.
      refused,
      seconds: Math.round(timeoutMs / 1000),
      timeoutMs,
      fallback: remembered,
      // What happens without an answer: its last defense raised again, or none.
      fallbackLabel: remembered ? idLabel(this.t.label, "Mode", remembered) : null,
    };
    const fallback = { mode: remembered, timedOut: true };
    // Whoever is asked, the attack never waits longer than the timeout and the grace.
    const asked = await this.askWithin(owner, "chooseDefense", (c) => this.chooseDefenseHere(c), context, timeoutMs, fallback);
    // Only what the dialog answers is taken from a relayed answer: anything else a
    // player's client puts there (a revised-2e `paid`, which would raise the defense
    // for nothing) is dropped.
    let answer = asked && typeof asked === "object" ? defenseAnswer(asked) : fallback;
    // A defense the defender does not know (a stale or forged answer) counts as none.
    if (answer.mode && !offeredIds.has(answer.mode)) answer = { ...answer, mode: null, refused: true };
    // The choice becomes this actor's default for the next time it is attacked, but only
    // once its exchange is resolved (`keepDefaults`): an actor's flags reach every client
    // that has the actor, so written now they would tell the defense to the attacker's
    // player before the exchange is resolved.
    const mode = answer.mode ?? null;
    const keep = !refused && !answer.timedOut && !answer.cancelled && !answer.refused && mode !== remembered;
    // (read again then: the write-back may have replaced an unlinked token's actor)
    const keepAsDefault = keep ? async () => (await this.current(defender)).actor?.update?.({ [`flags.${MODULE_ID}.defaultDefense.${system}`]: mode }) : null;
    // Only those offered, each once, and only with a mode that draws allies in.
    const picked = drawing.has(answer.mode) ? new Set([].concat(answer.allies ?? [])) : new Set();
    return { ...answer, allies: candidates.filter((c) => picked.has(c.uuid)).map((c) => c.docs), keepAsDefault };
  }

  /**
   * The attacker's name as a question names it: to a player (`owner`), an attacker whose
   * token the scene hides (`{name, hidden}`) is "an unseen mind"; the GM, answering for
   * an NPC, reads its name.
   * @param {string|{name:string, hidden?:boolean}} who
   */
  askedName(who, owner) {
    if (typeof who === "string") return who;
    return owner && who?.hidden ? this.t.localize("MINDSCAPE.UnseenMind") : who?.name ?? "";
  }

  /** Any client: show the secret defense dialog and answer the GM. */
  chooseDefenseHere(context) {
    return this.env.dialogs.defenseDialog({ context, timeoutMs: context.timeoutMs, fallback: context.fallback });
  }

  /**
   * GM: one exchange through the daemon, its updates applied, its card posted and the
   * `mindscape.resolved` hook fired.
   *
   * The daemon's updates are absolute values computed from the actors' data as sent, so
   * the whole exchange runs in `this.exchanges`, keyed by the uuids of the two actors as
   * seen through their tokens (the documents written back): an exchange that shares an
   * actor with one queued earlier waits for it, then reads the actors again and sends
   * their data as the earlier write-back left it. Exchanges between other actors run side
   * by side. The defenders' choices are collected before (attack), outside the queue.
   *
   * power-pool: when the companion refuses the exchange because of one ally (a 4001
   * whose `combatant` is that ally's id: `ally-psionic`, `ally-mindless`, a joiner now
   * asleep, …), nothing was written, and the exchange is resolved once more without that
   * ally (nor its defense, nor the puppets only it brought along), with any physical dice
   * already typed; the GM is told who was left out and why, and so is the owner of a
   * creature that joined by its own choice, once the exchange is resolved
   * (`tellLeftOut`). A refusal about anyone else, without a `combatant`, or of that
   * second try fails the exchange as before (one of the defender's own choice is chosen
   * again: `resolveChoosing`, whose next try leaves out the allies in `leftOut`).
   * @param {{attacker:{token:any, actor:any}, defender:{token:any, actor:any}, leftOut?:Map<string, object>}} exchange
   *   the documents at the time the attack was made; read again when its turn comes.
   *   `leftOut`: the allies left out, by actor uuid, filled here
   * @param {Set<string>} [missingTold]  the ids of puppets found nowhere that the GM was
   *   told of already in this exchange (`controlNow`), filled here: each is told once
   */
  resolveExchange({ attacker, defender, group = null, leftOut = new Map(), ...rest }, missingTold = new Set()) {
    const others = group ? [...group.defenders, ...group.controllers, ...(group.allies ?? []), ...group.puppets] : [];
    const keys = [attacker, defender, ...others].map((d) => participantOf(d.token, d.actor).actorUuid);
    return this.exchanges.run(keys, async () => {
      const [a, d] = [await this.current(attacker), await this.current(defender)];
      let now = null;
      if (group) {
        const targets = await Promise.all(group.targets.map((x) => this.current(x)));
        const allies = await Promise.all((group.allies ?? []).map((x) => this.current(x)));
        // The first target is the defender; a wave's others go as defenders.
        now = await this.controlNow(a, { ...group, targets, defenders: targets.slice(1), allies }, missingTold);
      }
      const typed = {};
      let refused;
      try {
        return this.tellLeftOut(leftOut, await this.resolveNow({ attacker: a, defender: d, group: now, typed, ...rest }));
      } catch (error) {
        refused = allyRefused(error, now);
        if (!refused) throw error;
      }
      const { docs, joined } = refused;
      const told = { name: docs.token?.name ?? docs.actor.name, defender: d.token?.name ?? d.actor.name, rule: refused.rule, detail: refused.detail };
      leftOut.set(actorUuidOf(docs), { told, owner: joined ? this.ownerOf(docs.actor, { attackingPlayer: rest.requesterId ?? null }) : null });
      const without = await this.controlNow(a, {
        ...now,
        allies: now.allies.filter((x) => x !== docs),
        defenses: (now.defenses ?? []).filter(([id]) => id !== refused.id),
      }, missingTold);
      const dice = Object.keys(typed).length ? structuredClone(typed) : undefined;
      return this.tellLeftOut(leftOut, await this.resolveNow({ attacker: a, defender: d, group: without, dice, ...rest }));
    });
  }

  /**
   * Once the exchange is resolved, the GM (and the owner of a creature that joined by its
   * own choice) learns of each ally left out of it (`leftOut`, by actor uuid: `{told,
   * owner, said}`), once; a refusal that fails the attack tells nobody. Gives `done`.
   */
  tellLeftOut(leftOut, done) {
    for (const left of leftOut.values()) {
      if (left.said) continue;
      left.said = true;
      this.notify("warn", this.t.format("MINDSCAPE.Attack.AllyLeftOut", left.told));
      // Told, not asked: the exchange does not wait for the player's client.
      if (left.owner) this.relay.toUser(left.owner.id, "joinLeftOut", left.told).catch(() => null);
    }
    return done;
  }

  /**
   * GM: `resolveExchange(exchange)`; when the companion refuses it for a defending mind's
   * own choice, `again(error)` gives the exchange with that mind's new choice (it is asked
   * again, told why), or null when the refusal is about anything else. Nothing was
   * written, so the attack does not fail for a defense it cannot use: its defender
   * chooses again. `reasks.left` counts the questions asked again that the attack has
   * left, shared by its exchanges (DEFENSE_REASKS at first, which the player's wait for
   * the attack allows for, consts.js `relayTimeoutMs`); a refusal after the last fails
   * the attack as before. No die is asked twice: the companion refuses a choice before
   * it needs dice.
   */
  async resolveChoosing(exchange, again, reasks) {
    // The GM hears of a puppet found nowhere once for the exchange, however often it is tried.
    const missingTold = new Set();
    for (;;) {
      let done;
      try {
        done = await this.resolveExchange(exchange, missingTold);
      } catch (error) {
        const next = reasks.left > 0 ? await again(error) : null;
        if (!next) throw error;
        reasks.left -= 1;
        exchange = next;
        continue;
      }
      await this.keepDefaults(exchange);
      return done;
    }
  }

  /**
   * GM: once `exchange` is resolved, remember the defense each mind struck chose in it as
   * that actor's default (`askDefense`'s `keepAsDefault`): the mind struck's and, in a
   * power-pool group, the other minds'. Not before: the flag would tell every client.
   * A default that cannot be written (the token deleted meanwhile, the update refused)
   * is only a convenience lost: the exchange stands, resolved and written back.
   */
  async keepDefaults(exchange) {
    const choices = [exchange.defenseChoice, ...(exchange.group?.defenses ?? []).map(([, choice]) => choice)];
    for (const choice of choices) {
      await Promise.resolve().then(() => choice?.keepAsDefault?.())
        .catch((error) => console.warn(`${MODULE_ID} | a defense could not be kept as the default`, error));
    }
  }

  /**
   * GM: warn the GM of a defense the companion refused (`defenseRefusal`) and give what
   * the one asked again is told: the companion's own words (the chooser's resources,
   * which its owner and the GM may know; the attacker is told nothing).
   */
  tellDefenseRefused(docs, { rule, detail }) {
    // The companion may start with where in the request it looked ("/defense/sacrifice: …").
    const told = { name: docs.token?.name ?? docs.actor.name, rule, detail: String(detail).replace(/^\/[^\s:]*: /, "") };
    this.notify("warn", this.t.format("MINDSCAPE.Defense.RefusedGM", told));
    return this.t.format("MINDSCAPE.Defense.Refused", told);
  }

  /** The token and actor of `docs` as they are now (an update may have replaced the synthetic actor). */
  async current(docs) {
    if (docs.token?.uuid) return this.docs(docs.token.uuid);
    // A world actor that fought as itself (no token found) stays itself.
    return docs.actor?.uuid ? { token: null, actor: (await this.docs(docs.actor.uuid, { worldActor: true })).actor } : docs;
  }

  /**
   * GM: resolve one exchange with the given documents' data; call only through
   * `resolveExchange`. `dice` start the physical dice (those typed for a call refused
   * before), and every die typed is added to `typed` (`callDice`).
   */
  async resolveNow({ attacker, defender, attack, defenseChoice, physical, requesterRollMode, requesterId = null, group = null, dice, typed = null }) {
    const system = this.system;
    const adapter = await this.adapterId();
    const defense = defenseFromChoice(system, defenseChoice);
    const ref = (d) => this.ref(d.actor, d.token, adapter);
    const usePhysical = physical ?? setting(this.game, "physicalDice");
    const params = exchangeParams({
      system,
      attacker: ref(attacker),
      defender: ref(defender),
      attack,
      defense,
      options: houseRulesFor(this.game, system),
      dice: usePhysical ? dice : undefined,
    });
    const nameOf = (d) => d.token?.name ?? d.actor.name;
    const whoAt = { "/attacker": nameOf(attacker), "/defender": nameOf(defender) };
    const everyone = [attacker, defender];
    // power-pool: the other targets of a wave, the controllers struck, the allies drawn
    // into an imagination swarm, the puppets.
    for (const key of ["defenders", "controllers", "allies", "puppets"]) {
      const list = group?.[key] ?? [];
      if (!list.length) continue;
      params[key] = list.map(ref);
      list.forEach((d, i) => { whoAt[`/${key}/${i}`] = nameOf(d); });
      everyone.push(...list);
    }
    if (group?.defenses?.length) {
      params.defenses = Object.fromEntries(group.defenses.map(([id, choice]) => [id, defenseFromChoice(system, choice) ?? {}]));
    }
    const result = await this.callDice("exchange.resolve", params, usePhysical, typed);
    const plan = await this.writeBack(result.updates, everyone.map((d) => participantOf(d.token, d.actor)));
    // The card's header names what was aimed at: the targets, a puppet whose controller
    // was struck instead. Every id the companion gives (the mind struck, a wave's other
    // targets, controllers, allies, puppets) is named by its own token.
    const attackerName = nameOf(attacker);
    const defenderName = [defender, ...(group?.defenders ?? [])].map(nameOf).join(", ");
    this.sheetWarnings(result.warnings, whoAt);
    const names = new Map(everyone.map((d) => [roundCombatantId(d.token, d.actor), nameOf(d)]));
    const message = await this.postCard(result, { attackerName, defenderName, attack, defense, names, physical: usePhysical, speakerActor: attacker.actor, speakerToken: attacker.token, requesterRollMode, requesterId });
    const allies = (group?.allies ?? []).map((d) => d.actor);
    const payload = { system, result, attacker: attacker.actor, defender: defender.actor, allies, attack, defense, updates: plan, message };
    this.env.Hooks.callAll("mindscape.resolved", payload);
    const messageId = message?.id ?? null;
    // A blind card shows its roller only that it was rolled: the answer to the roller's
    // client (and its macro) tells no more, neither the summary nor the write-back.
    if (requesterId && this.cardRollMode(requesterRollMode) === "blindroll") return { messageId };
    return { outcome: result.outcome, summary: result.summary, messageId, updates: plan };
  }

  /** The roll mode of a card this client posts (chat.js `effectiveRollMode`), for the requester's chat mode when one asked. */
  cardRollMode(requesterRollMode = null) {
    return effectiveRollMode(setting(this.game, "rollMode"), this.game.settings.get("core", "rollMode"), requesterRollMode);
  }

  /**
   * GM: call a dice-using method, with the physical-dice prompts when `physical` (the
   * companion says which dice it still needs, rpc.js `callWithPhysicalDice`). Each die
   * typed is also added to `typed` (by purpose), when given, so that a call the
   * companion refuses after the dice were typed can be made again without asking them twice.
   */
  async callDice(method, params, physical, typed = null) {
    const call = (m, p) => this.rpc(m, p);
    if (!physical) return call(method, params);
    const prompt = async (need) => {
      const values = await this.env.dialogs.diceDialog({ ...need, purposeLabel: this.t.label(`MINDSCAPE.Purpose.${need.purpose}`, need.purpose) });
      if (values && typed) typed[need.purpose] = [...(typed[need.purpose] ?? []), ...values.map(Number)];
      return values;
    };
    return (await callWithPhysicalDice(call, method, params, prompt)).result;
  }

  /**
   * GM: apply the companion's write-back to the participants' documents only (updates.js),
   * warn the GM about sheets that could not be updated, and return the plan applied.
   * @param {{uuid:string, update:object}[]|undefined} updates
   * @param {import("./updates.js").Participant[]} participants
   */
  async writeBack(updates, participants) {
    const { plan, refused } = planUpdates(updates ?? [], participants);
    const applied = await applyPlan(plan, this.env.fromUuid);
    if (refused.length) console.warn(`${MODULE_ID} | refused updates outside the exchange or round`, refused);
    const failed = applied.filter((r) => !r.ok);
    // Nothing holds or tries such a write again: the sheets stay wrong until the GM mends them.
    if (failed.length) this.notify("warn", this.t.format("MINDSCAPE.Error.UpdateFailed", { list: failed.map((f) => `${f.uuid}: ${f.error}`).join("; ") }), { permanent: true });
    return plan;
  }

  /**
   * Post the chat card of one result in the world's roll mode; for "default", in the
   * requesting player's chat mode (`info.requesterRollMode`) or else this client's. A
   * card a player asked for (`info.requesterId`) is that player's message, addressed for
   * that player (chat.js `cardAudience`), not for this GM.
   */
  async postCard(result, info) {
    const names = await this.withQuotedNames(result.summary, info.names);
    const context = chatCardContext(result, { ...info, names, localize: this.t.label });
    const rollMode = this.cardRollMode(info.requesterRollMode);
    const speaker = cardSpeaker({ token: info.speakerToken, actor: info.speakerActor, alias: info.speakerToken || info.speakerActor ? null : info.attackerName });
    return postChatCard({
      result, context, rollMode, speaker, card: info.card, requesterId: info.requesterId ?? null, gmIds: this.gmIds(),
      renderTemplate: (_name, ctx) => this.env.render("chat-card", ctx),
      description: await this.cardDescription(result.system),
      template: "chat-card",
      Roll: this.env.Roll,
      ChatMessage: this.env.ChatMessage,
      localizePurpose: (p) => this.t.label(`MINDSCAPE.Purpose.${p}`, p),
      localize: this.t.label,
    });
  }

  // ---------------------------------------------------------------- end of a round (GM)

  /**
   * GM: the combat tracker left `round` (hooks.js, rounds.js `endedRound`): end the
   * psionic round of its combatants that have a profile for the world's system, except
   * those in the current encounter, which counts their rounds itself. Only the
   * client that talks to the companion does it, only while the world's "End psionic
   * rounds with the combat tracker" is on, and once per round of a combat: the round
   * ended is recorded in the combat's `flags.mindscape.roundEnded`, so going back a round
   * and forward again does not count a stun down twice (a round whose end failed is not
   * recorded, and going back and forward again retries it). Whoever has something to
   * choose at the round's end is asked first (`askRoundEnd`): in revised-2e a mind a
   * critical hit opened, whether it pays to close; in power-pool a controller, how it
   * keeps or ends its psionic control. Never rejects:
   * a failure (the companion not running, a refused profile) is shown to the GM.
   * @returns {Promise<{summary:string, updates:object[], messageId:string|null}|null>}
   *   null when no round was ended
   */
  async endCombatRound(combat, round) {
    const id = combat?.id ?? combat?.uuid ?? null;
    try {
      if (!this.relay.isActiveGM || !setting(this.game, "endRoundWithTracker")) return null;
      const flagged = Number(combat.getFlag?.(MODULE_ID, ROUND_ENDED_FLAG) ?? combat.flags?.[MODULE_ID]?.[ROUND_ENDED_FLAG]);
      const done = Math.max(Number.isInteger(flagged) ? flagged : 0, this.roundsEnded.get(id) ?? 0);
      if (round <= done) return null;
      const participants = splitByEncounter(roundParticipants(combatEntries(combat), this.system), this.encounterMeta()).outside;
      if (!participants.length) return null;
      this.roundsEnded.set(id, round);
      let outcome;
      try {
        outcome = await this.endRound({ participants, round, combat, ask: true });
      } catch (error) {
        if (this.roundsEnded.get(id) === round) this.roundsEnded.set(id, done);
        throw error;
      }
      await combat.setFlag?.(MODULE_ID, ROUND_ENDED_FLAG, round);
      return outcome;
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }

  /**
   * GM: end the psionic round for chosen tokens (the macro API, relayed). Only a GM may:
   * ending rounds counts stuns and dazes down. Tokens of the current encounter's
   * combatants are left out, as the tracker leaves them out, and named in `leftOut`.
   * @param {{tokenUuids:string[], choices?:object, physical?:boolean, rollMode?:string}} request
   * @returns {Promise<{summary:string, updates:object[], messageId:string|null, leftOut:string[]}>}
   */
  async endRoundFor({ tokenUuids, choices, physical, rollMode }, sender) {
    if (!sender?.isGM) throw new UsageError("MINDSCAPE.Error.EndRoundGMOnly");
    const system = this.system;
    const near = sceneIdsOfUuids([].concat(tokenUuids ?? []));
    const docs = await Promise.all([].concat(tokenUuids ?? []).map((uuid) => this.docs(uuid, { near })));
    const psionic = roundParticipants(docs, system);
    if (!psionic.length) throw new UsageError("MINDSCAPE.Error.NoRoundCombatants", { system: this.t.label(`MINDSCAPE.System.${system}`, system) });
    const { outside: participants, inEncounter } = splitByEncounter(psionic, this.encounterMeta());
    const leftOut = inEncounter.map((p) => p.token?.name ?? p.actor.name);
    if (!participants.length) throw new UsageError("MINDSCAPE.Error.RoundCombatantsInEncounter", { names: leftOut.join(", ") });
    const requesterId = requesterOf(sender, this.game);
    const requesterRollMode = requesterId ? rollMode ?? null : null;
    const done = await this.endRound({ participants, choices, physical, requesterRollMode, requesterId });
    if (!done) throw new UsageError("MINDSCAPE.Error.TokensGone");
    return { ...done, leftOut };
  }

  /** The current encounter's stored meta (encounter.js `EncounterController#meta`), `{}` when there is none. */
  encounterMeta() {
    return setting(this.game, "encounter") ?? {};
  }

  /**
   * GM: end the round for `participants` (`{token, actor}`, one per actor) in the exchange
   * queue, keyed by their actors as exchanges are: the end of a round never interleaves
   * with an exchange touching one of them, and reads their documents again when its turn
   * comes (an earlier write-back may have changed them). Those deleted meanwhile are left
   * out; when none is left, nothing is called and the answer is null.
   *
   * With `ask` (the combat tracker's rounds), those with something to choose are asked
   * first (`askRoundEnd`), holding the queue meanwhile: what they are offered is what
   * the sheets hold when the round ends, and an exchange on one of them waits for the
   * round it belongs after. Their answers go to the companion as `choices`
   * (`endRoundChoosing`). Explicit `choices` (the macro API) are sent as given. Either
   * way, in power-pool the creatures the choices are about that are not participants go
   * along as `puppets` when the module finds their sheets (`puppetsNamed`), and so do
   * those a participant holds by an action (`endRoundNow`), so that one set free has its
   * sheet written.
   */
  endRound({ participants, ask = false, choices, ...rest }) {
    const keys = participants.map((p) => participantOf(p.token, p.actor).actorUuid);
    return this.exchanges.run(keys, async () => {
      const now = await this.rereadAll(participants);
      if (!now.length) return null;
      if (!ask) {
        const puppets = await this.puppetsOfChoices(now, choices);
        return this.endRoundNow({ participants: now, choices, puppets, ...rest });
      }
      const asked = await this.askRoundEnd(now);
      // The questions took time: take the sheets again, and drop the choice of a token deleted meanwhile.
      const after = await this.rereadAll(now);
      if (!after.length) return null;
      const ids = new Set(after.map((p) => roundCombatantId(p.token, p.actor)));
      const kept = Object.fromEntries(Object.entries(asked.choices).filter(([id]) => ids.has(id)));
      const puppets = await this.puppetsNamed(after, kept, asked.links);
      return this.endRoundChoosing({ ...rest, participants: after, choices: kept, puppets, links: asked.links });
    });
  }

  /**
   * GM: what the participants chose for the end of this round, by the world's system:
   * revised-2e's minds that may pay to close (`askToClose`), power-pool's controllers
   * (`askControl`, which also gives each controller's links, for `puppetsNamed`).
   * @returns {Promise<{choices:object, links:Map<string, ReturnType<typeof controlLinks>>}>}
   */
  async askRoundEnd(participants) {
    if (this.system === "power-pool") return this.askControl(participants);
    return { choices: await this.askToClose(participants), links: new Map() };
  }

  /**
   * GM: `endRoundNow` with the choices the tracker asked for. The companion refuses the
   * whole call when a choice is not allowed (nothing happened for anyone): 4001
   * `cannot-close`, or `cannot-act` for a stunned mind (revised-2e); `not-controlling` or
   * `no-die-to-dedicate` (power-pool: a sheet changed since the offer); or −32602 at
   * `/choices/…` (a puppet's sheet refused alone is left out by `endRoundNow`, not
   * here; beside a choice's problem it is one of these). When the refusal names whose choices they were
   * (`choiceRefusal`: the 4001's `combatant`, else its text or the −32602's paths), the
   * round is ended once more without only those, keeping the others' (and the puppets
   * those name); when it does not, or that is refused too, the
   * round is ended without any choices or puppets. Either way with any physical dice
   * already typed, and the GM is told who and why: a choice never leaves the round
   * un-ended.
   * @param {{participants:{token:any, actor:any}[], choices:object, puppets?:{token:any, actor:any}[],
   *          links?:Map<string, ReturnType<typeof controlLinks>>}} request
   *   `links`: each controller's links (power-pool, for the puppets of the choices kept)
   */
  async endRoundChoosing({ participants, choices, puppets = [], links = new Map(), ...rest }) {
    if (!Object.keys(choices).length) return this.endRoundNow({ participants, ...rest });
    const typed = {};
    const retry = () => ({ typed, dice: Object.keys(typed).length ? structuredClone(typed) : undefined });
    const namesOf = (ids) => participants.filter((p) => ids.includes(roundCombatantId(p.token, p.actor))).map((p) => p.token?.name ?? p.actor.name).join(", ");
    const pool = this.system === "power-pool";
    let refusal;
    try {
      return await this.endRoundNow({ participants, choices, puppets, typed, ...rest });
    } catch (error) {
      refusal = choiceRefusal(error, choices);
      if (!refusal) throw error;
    }
    const others = Object.keys(choices).filter((id) => !refusal.whose.includes(id));
    if (refusal.whose.length && others.length) {
      const kept = Object.fromEntries(others.map((id) => [id, choices[id]]));
      try {
        const done = await this.endRoundNow({ participants, choices: kept, puppets: await this.puppetsNamed(participants, kept, links), ...retry(), ...rest });
        const key = pool ? "MINDSCAPE.Control.RefusedOne" : "MINDSCAPE.Close.RefusedOne";
        this.notify("warn", this.t.format(key, { names: namesOf(refusal.whose), kept: namesOf(others), ...refusal }));
        return done;
      } catch (error) {
        const again = choiceRefusal(error, kept);
        if (!again) throw error;
        refusal = { ...refusal, detail: `${refusal.detail}; ${again.detail}`, reason: `${refusal.reason}; ${again.reason}` };
      }
    }
    const key = pool ? "MINDSCAPE.Control.Refused" : "MINDSCAPE.Close.Refused";
    this.notify("warn", this.t.format(key, { names: namesOf(Object.keys(choices)), ...refusal }));
    return this.endRoundNow({ participants, ...retry(), ...rest });
  }

  /**
   * GM: ask whoever answers for each participant whose mind may pay to close this round
   * (rounds.js `mayPayToClose`; revised-2e only) whether it pays: its owner on their own
   * client, the GM for an NPC or when no owner is connected, all at once, each within the
   * world's defense timeout. The price and whether it may pay are the companion's
   * (`exchange.round_end_choices`, from the sheets as they are and the world's house
   * rules); a mind that cannot pay is not asked, and the GM is told which and why. When
   * the companion cannot say (a sheet it refuses, the connection), nobody is asked and
   * the end of the round itself reports the problem. A timeout, a closed dialog or a
   * failure is "does not pay".
   * @param {{token:any, actor:any}[]} participants  as they are now
   * @returns {Promise<Object<string, {close:true}>>}  `exchange.end_round` choices
   */
  async askToClose(participants) {
    const system = this.system;
    if (system !== "revised-2e") return {};
    // A world read through a generic mapping may keep the mind anywhere: the companion
    // then decides for everyone; else only the minds the profile shows in the window.
    const generic = (await this.adapterId()) === "foundry.generic";
    const candidates = generic ? participants : participants.filter((p) => mayPayToClose(p.actor.flags?.[MODULE_ID]?.[system]));
    if (!candidates.length) return {};
    const offers = await this.closeOffers(candidates);
    const unable = offers.filter((o) => !o.offer.payable);
    if (unable.length) {
      const key = { psp: "TooFewPsp", "last-psp": "LastPsp", "no-last-defense": "NoLastDefense", "no-defense": "NoDefense", "cannot-act": "CannotAct" };
      const list = unable.map((o) => this.t.format(`MINDSCAPE.Close.${key[o.offer.reason] ?? "NoDefense"}`, { name: o.name, cost: o.offer.cost, psp: o.offer.psp })).join("; ");
      this.notify("info", this.t.format("MINDSCAPE.Close.NotAsked", { list }));
    }
    const answers = await Promise.all(offers.filter((o) => o.offer.payable).map(async (o) => [o.id, await this.askClose(o.p, o.name, o.offer)]));
    return Object.fromEntries(answers.filter(([, pays]) => pays).map(([id]) => [id, { close: true }]));
  }

  /**
   * The companion's offer to each of `candidates` to close its mind by paying
   * (`exchange.round_end_choices` `close`: `{cost, defense, basis, psp, payable, reason}`),
   * as `[{p, id, name, offer}]`, leaving out those it offers nothing. When it cannot
   * answer (a companion without the method, a sheet it refuses, the connection), the GM
   * is told why and `[]` is the answer: nobody is asked, and the round ends without
   * anyone paying.
   */
  async closeOffers(candidates) {
    let offers;
    try {
      offers = await this.roundEndOffers(candidates);
    } catch (error) {
      this.notify("warn", this.t.format("MINDSCAPE.Close.Unpriced", { problem: describeError(error, this.t) }));
      return [];
    }
    return candidates
      .map((p) => ({ p, id: roundCombatantId(p.token, p.actor), name: p.token?.name ?? p.actor.name }))
      .map((o) => ({ ...o, offer: offers.get(o.id)?.close }))
      .filter((o) => o.offer);
  }

  /**
   * What the companion offers each of `candidates` at the end of this round
   * (`exchange.round_end_choices`, from the sheets as they are and the world's house
   * rules): each one's `choices` by combatant id. Its warnings about the sheets are shown
   * to the GM. Rejects when the companion cannot answer.
   * @returns {Promise<Map<string, object>>}
   */
  async roundEndOffers(candidates) {
    const system = this.system;
    const adapter = await this.adapterId();
    const answer = await this.rpc("exchange.round_end_choices", {
      system,
      combatants: candidates.map((p) => this.ref(p.actor, p.token, adapter)),
      options: houseRulesFor(this.game, system),
    });
    this.sheetWarnings(answer?.warnings, Mindscape.combatantPaths(candidates));
    return new Map((answer?.combatants ?? []).map((c) => [c.id, c.choices ?? {}]));
  }

  /** GM: ask one participant's owner (or the GM) whether it pays `offer.cost` to close; true for a yes only. */
  async askClose(p, name, offer) {
    const timeoutMs = this.defenseTimeoutS() * 1000;
    const context = {
      name,
      cost: offer.cost,
      psp: offer.psp,
      defenseLabel: this.t.label(`MINDSCAPE.Mode.${offer.defense}`, offer.defense),
      lastDefense: offer.basis === "last",
      seconds: Math.round(timeoutMs / 1000),
      timeoutMs,
    };
    const answer = await this.askWithin(this.ownerOf(p.actor), "chooseClose", (c) => this.chooseCloseHere(c), context, timeoutMs);
    return answer?.close === true;
  }

  /** Any client: show the close question and answer the GM. */
  chooseCloseHere(context) {
    return this.env.dialogs.closeDialog({ context, timeoutMs: context.timeoutMs });
  }

  /**
   * GM: ask whoever answers for each participant that controls creatures (power-pool,
   * RULES.md §3.4: control is kept by a die dedicated from the pool, or by an action each
   * round while the controller perceives the creature) how it keeps or ends that control
   * at this round's end: its owner on their own client, the GM for an NPC or when no
   * owner is connected, all at once, each within the world's defense timeout. Each
   * link and what may be chosen for it are the companion's (`exchange.round_end_choices`);
   * the participants asked about are those whose profile shows them controlling someone
   * (in a world read through a generic mapping, every participant: the companion says
   * who). Keeping a link as it is is the default: a timeout, a closed dialog or a failure
   * hold every link. When the companion cannot say, the GM is told why, nobody is asked
   * and every link holds.
   * @param {{token:any, actor:any}[]} participants  as they are now
   * @returns {Promise<{choices:object, links:Map<string, ReturnType<typeof controlLinks>>}>}
   *   `exchange.end_round` choices, and each controller's links (for `puppetsNamed`)
   */
  async askControl(participants) {
    const none = { choices: {}, links: new Map() };
    const candidates = await this.controllersAmong(participants);
    if (!candidates.length) return none;
    let offers;
    try {
      offers = await this.roundEndOffers(candidates);
    } catch (error) {
      this.notify("warn", this.t.format("MINDSCAPE.Control.Unoffered", { problem: describeError(error, this.t) }));
      return none;
    }
    const controllers = candidates
      .map((p) => ({ p, id: roundCombatantId(p.token, p.actor), name: p.token?.name ?? p.actor.name }))
      .map((c) => ({ ...c, links: controlLinks(offers.get(c.id)) }))
      .filter((c) => c.links.length);
    if (!controllers.length) return none;
    // A link that ends as the round ends whatever is chosen (a controller that cannot
    // act keeps it by an action) is not asked about; one with nothing else asks nobody.
    const asked = controllers.map((c) => ({ ...c, links: c.links.filter((l) => !l.ends) })).filter((c) => c.links.length);
    const names = await this.creatureNames(asked.flatMap((c) => c.links.flatMap((l) => l.targets)), participants);
    const answers = await Promise.all(asked.map((c) => this.askControlOf(c, names)));
    const choices = {};
    asked.forEach((c, i) => {
      const choice = controlChoice(c.links, answers[i]);
      if (choice) choices[c.id] = choice;
    });
    return { choices, links: new Map(controllers.map((c) => [c.id, c.links])) };
  }

  /**
   * The table's name of each creature id the companion gave (`roundCombatantId`): a
   * participant's, else the token or actor the id names on the scene or in the world
   * (`docsOfCombatant`, as single attacks find controllers and puppets), else the id.
   * @returns {Promise<Map<string, string>>}
   */
  async creatureNames(ids, participants) {
    const names = new Map(participants.map((p) => [roundCombatantId(p.token, p.actor), p.token?.name ?? p.actor.name]));
    for (const id of new Set(ids)) {
      if (names.has(id)) continue;
      const docs = await this.docsOfCombatant(id, sceneIdsOf(participants)).catch(() => null);
      names.set(id, docs ? docs.token?.name ?? docs.actor.name : id);
    }
    return names;
  }

  /**
   * GM: ask one controller's owner (or the GM) what becomes of each of its links; the
   * answer for each link in order ("hold", "release", "keep", "cannot_perceive"), `[]`
   * (every link holds) without an answer in time, a closed dialog or a failure.
   */
  async askControlOf({ p, name, links }, names) {
    const timeoutMs = this.defenseTimeoutS() * 1000;
    const label = (value, link) => {
      if (value === "keep") return this.t.localize(link.keepBy === "die" ? "MINDSCAPE.Control.KeepByDie" : "MINDSCAPE.Control.KeepByAction");
      return this.t.localize({ hold: "MINDSCAPE.Control.Hold", release: "MINDSCAPE.Control.Release", cannot_perceive: "MINDSCAPE.Control.LostSight" }[value]);
    };
    const context = {
      name,
      links: links.map((link, index) => ({
        index,
        names: link.targets.map((id) => names.get(id) ?? id).join(", "),
        kept: this.t.format(link.keptBy === "die" ? "MINDSCAPE.Control.KeptByDie" : "MINDSCAPE.Control.KeptByAction", { name }),
        together: link.targets.length > 1,
        choices: link.answers.map((value) => ({ value, label: label(value, link), checked: value === "hold" })),
      })),
      seconds: Math.round(timeoutMs / 1000),
      timeoutMs,
    };
    const answer = await this.askWithin(this.ownerOf(p.actor), "chooseControl", (c) => this.chooseControlHere(c), context, timeoutMs);
    return Array.isArray(answer?.answers) ? answer.answers : [];
  }

  /** Any client: show the control question and answer the GM. */
  chooseControlHere(context) {
    return this.env.dialogs.controlDialog({ context, timeoutMs: context.timeoutMs });
  }

  /**
   * power-pool: whom of `participants` to read for their control (the round's end, a
   * rest): those whose profile shows them controlling someone (`controlling` not empty);
   * in a world read through a generic mapping, which may keep the profile anywhere,
   * every one (the companion says who controls whom).
   * @param {{token:any, actor:any}[]} participants
   */
  async controllersAmong(participants) {
    if ((await this.adapterId()) === "foundry.generic") return participants;
    return participants.filter((p) => controlsSomeone(p.actor.flags?.[MODULE_ID]?.["power-pool"]));
  }

  /**
   * power-pool: the creatures `choices` are about (`namedBy`: every creature of a link
   * released, kept the other way or lost from sight) that are not among the
   * participants, to send as `puppets` (`creaturesBeside`). The companion writes back
   * those it sets free, so that their sheets show the end of the control, and names them
   * all in its summary; one the module cannot find is left out, and the summary gives its
   * id and says its sheet was not changed. `[]` in other systems.
   * @param {{token:any, actor:any}[]} participants
   * @param {object|undefined} choices  `exchange.end_round` choices by controller id
   * @param {Map<string, ReturnType<typeof controlLinks>>} links  each controller's links
   */
  async puppetsNamed(participants, choices, links) {
    if (this.system !== "power-pool" || !choices || typeof choices !== "object") return [];
    const ids = Object.entries(choices).flatMap(([cid, choice]) => namedBy(links.get(cid) ?? [], choice));
    return (await this.creaturesBeside(participants, ids)).puppets;
  }

  /**
   * power-pool: `puppets` and, after them, the creatures `participants` control by an
   * action (each controller's `controlling` as the companion reads its sheet,
   * `importedOf`; `controllersAmong`) that are neither participants nor among `puppets`
   * (`creaturesBeside`). Such control ends without anyone choosing it: when its
   * controller rests (seed 001: "Powers can't be maintained when a creature rests") or
   * cannot act at the round's end (`controller-cannot-act`); sent along, the creature set
   * free has its own sheet freed. `missing`: the ids the module finds nowhere. Other
   * systems: `puppets` alone.
   * @param {{token:any, actor:any}[]} participants
   * @param {{token:any, actor:any}[]} [puppets]
   * @returns {Promise<{puppets:{token:any, actor:any}[], missing:string[]}>}
   */
  async withHeldByAction(participants, puppets = []) {
    if (this.system !== "power-pool") return { puppets, missing: [] };
    const read = await Promise.all((await this.controllersAmong(participants)).map((p) => this.importedOf(p)));
    const ids = read.flatMap((c) => (c?.controlling ?? []).filter((link) => link?.kept_by === "action").map((link) => link.id));
    const held = await this.creaturesBeside([...participants, ...puppets], ids.filter(Boolean));
    return { puppets: [...puppets, ...held.puppets], missing: held.missing };
  }

  /**
   * The documents of the creatures `ids` (combatant ids the companion gave,
   * `roundCombatantId`) that are not among `participants`, as `{token, actor}` to send as
   * `puppets`: a world actor, or an unlinked token of its actor on the scene
   * (`docsOfCombatant`), each document once. `missing`: the ids found in neither.
   * @param {{token:any, actor:any}[]} participants
   * @param {string[]} ids
   * @returns {Promise<{puppets:{token:any, actor:any}[], missing:string[]}>}
   */
  async creaturesBeside(participants, ids) {
    const seen = new Set(participants.map((p) => roundCombatantId(p.token, p.actor)));
    const taken = new Set(participants.map((p) => participantOf(p.token, p.actor).actorUuid));
    const puppets = [];
    const missing = [];
    for (const id of ids) {
      if (seen.has(id)) continue;
      seen.add(id);
      const docs = await this.docsOfCombatant(id, sceneIdsOf(participants)).catch(() => null);
      if (!docs) { missing.push(id); continue; }
      const key = participantOf(docs.token, docs.actor).actorUuid;
      if (taken.has(key)) continue;
      taken.add(key);
      puppets.push(docs);
    }
    return { puppets, missing };
  }

  /**
   * power-pool: `call(sent)` with at most MAX_PUPPETS of `puppets` (those first in the
   * list), and, while the companion refuses it for puppets' sheets alone
   * (`refusedPuppets`: −32602 with every problem at `/puppets/<i>…`), once more without
   * those: a broken sheet of a creature under control must not keep a round from ending
   * or a controller from resting. Each call leaves out at least one more, so it ends.
   * The companion checks every sheet before it rolls or asks for a die, so a refused call
   * rolled nothing. The control over one left out ends all the same when the rules end
   * it, and the summary then says its sheet still shows it; the GM is told whose sheets
   * were refused and why. Answers the result and the puppets sent with it.
   * @param {{token:any, actor:any}[]} puppets
   * @param {(sent:{token:any, actor:any}[]) => Promise<object>} call
   */
  async sparingPuppets(puppets, call) {
    let sent = puppets.slice(0, MAX_PUPPETS);
    for (;;) {
      try {
        return { result: await call(sent), puppets: sent };
      } catch (error) {
        const refused = refusedPuppets(error, sent.length);
        if (!refused) throw error;
        const list = [...refused].map(([i, problems]) => `${sent[i].token?.name ?? sent[i].actor.name} (${problems.join("; ")})`);
        this.notify("warn", this.t.format("MINDSCAPE.Warning.PuppetsRefused", { list: list.join(", ") }));
        sent = sent.filter((_, i) => !refused.has(i));
      }
    }
  }

  /** Warn the GM that the sheets of creatures under control found nowhere (`missing`, their ids) will not show the end of it. */
  tellPuppetsMissing(missing) {
    if (missing.length) this.notify("warn", this.t.format("MINDSCAPE.Warning.PuppetsMissing", { ids: missing.join(", ") }));
  }

  /**
   * power-pool, for explicit choices (the macro API): the puppets they are about
   * (`puppetsNamed`), each controller's links read from the companion
   * (`exchange.round_end_choices`, only when a choice names a creature). Rejects when the
   * companion cannot say, as the end of the round would.
   */
  async puppetsOfChoices(participants, choices) {
    if (this.system !== "power-pool" || !choices || typeof choices !== "object") return [];
    const choosing = participants.filter((p) => {
      const choice = choices[roundCombatantId(p.token, p.actor)];
      return [].concat(choice?.release ?? [], choice?.keep ?? [], choice?.cannot_perceive ?? []).length > 0;
    });
    if (!choosing.length) return [];
    const offers = await this.roundEndOffers(choosing);
    const links = new Map([...offers].map(([id, offer]) => [id, controlLinks(offer)]));
    return this.puppetsNamed(participants, choices, links);
  }

  /**
   * A participant's token and actor read again: through its token, or a world actor
   * without one as itself (never as one of its unlinked tokens). Null when that document
   * was deleted.
   * @param {{token:any, actor:any}} p
   */
  async reread(p) {
    const uuid = p.token ? p.token.uuid : p.actor.uuid;
    if (!(await this.env.fromUuid(uuid))) return null;
    return p.token ? this.docs(uuid) : { token: null, actor: (await this.docs(uuid, { worldActor: true })).actor };
  }

  /** The participants read again (`reread`), without those deleted meanwhile, in their order. */
  async rereadAll(participants) {
    return (await Promise.all(participants.map((p) => this.reread(p)))).filter(Boolean);
  }

  /**
   * GM: show the GM what the companion's adapter warned about the sheets it read (a field
   * it had to assume, an attribute it could not read), each line once per session: a
   * sheet read at every round's end would otherwise repeat it every round. A warning
   * comes as "<where the combatant was sent>: <text>" ("/combatants/0: ...",
   * "/attacker: ..."), or bare from `encounter.add` and `encounter.refresh`; `whoAt` gives
   * the name to show for each of those places ("" for a bare one).
   * @param {string[]|undefined} warnings
   * @param {Object<string, string>} whoAt
   */
  sheetWarnings(warnings, whoAt) {
    const lines = [];
    // Lines with changing numbers ("…PSPs, 40") are new each time: keep the memory small.
    if (this.warned.size > 500) this.warned.clear();
    for (const warning of warnings ?? []) {
      const text = String(warning);
      const placed = /^(\/[^:\s]*): (.*)$/s.exec(text);
      const name = whoAt[placed ? placed[1] : ""];
      const line = name ? `${name}: ${placed ? placed[2] : text}` : text;
      if (this.warned.has(line)) continue;
      this.warned.add(line);
      lines.push(line);
    }
    // One notice per answer, however many sheets it warns about.
    if (lines.length) this.notify("warn", this.t.format("MINDSCAPE.SheetWarning", { line: lines.join("; ") }));
  }

  /** `sheetWarnings`' names of a list of participants sent as `combatants`, and of those sent as `puppets`. */
  static combatantPaths(participants, puppets = []) {
    const at = (list, key) => list.map((p, i) => [`/${key}/${i}`, p.token?.name ?? p.actor.name]);
    return Object.fromEntries([...at(participants, "combatants"), ...at(puppets, "puppets")]);
  }

  /**
   * The table's name (the token's name, else the actor's) of each combatant id of a
   * result that answers every combatant in the order sent (`exchange.end_round`,
   * `combatants.rest`), and of each of the `puppets` sent (power-pool), by its id.
   * @returns {Map<string, string>}
   */
  namesOf(result, participants, puppets = []) {
    const names = new Map();
    (result.combatants ?? []).forEach((c, i) => {
      const p = participants[i];
      if (c?.id && p) names.set(c.id, p.token?.name ?? p.actor.name);
    });
    for (const p of puppets) names.set(roundCombatantId(p.token, p.actor), p.token?.name ?? p.actor.name);
    return names;
  }

  /**
   * GM: `exchange.end_round` for the participants' current data; call only through
   * `endRound`. `puppets` (power-pool: creatures the choices are about whose own round
   * does not end here) go along, and so do the creatures a participant holds by an
   * action (`withHeldByAction`: a controller that cannot act loses them at the round's
   * end, whatever it chose; one the module cannot find is named by the summary, without
   * a warning each round; one whose sheet the companion refuses is left out,
   * `sparingPuppets`); those set free are written back like the participants, answered
   * in the result's `others`. The write-back goes to those tokens' actors only; a card
   * is posted only when something happened (the result has events), never for a round where nothing
   * changes (a countdown alone is written back without a card). Fires
   * `mindscape.roundEnded` after every call that succeeded.
   * `dice` start the physical dice (those typed for a call refused before), and every die
   * typed is added to `typed` (`callDice`).
   * @param {{participants:{token:any, actor:any}[], puppets?:{token:any, actor:any}[],
   *          choices?:object, physical?:boolean, requesterRollMode?:string|null, requesterId?:string|null,
   *          round?:number|null, combat?:any, dice?:object, typed?:object}} request
   */
  async endRoundNow({ participants, puppets: named = [], choices, physical, requesterRollMode = null, requesterId = null, round = null, combat = null, dice, typed = null }) {
    const system = this.system;
    const adapter = await this.adapterId();
    const { puppets: going } = await this.withHeldByAction(participants, named);
    const usePhysical = physical ?? setting(this.game, "physicalDice");
    const ref = (p) => this.ref(p.actor, p.token, adapter);
    let params;
    const { result, puppets } = await this.sparingPuppets(going, (sent) => {
      params = endRoundParams({
        system,
        combatants: participants.map(ref),
        choices,
        puppets: sent.map(ref),
        options: houseRulesFor(this.game, system),
        dice: usePhysical ? dice : undefined,
      });
      return this.callDice("exchange.end_round", params, usePhysical, typed);
    });
    const plan = await this.writeBack(result.updates, [...participants, ...puppets].map((p) => participantOf(p.token, p.actor)));
    this.sheetWarnings(result.warnings, Mindscape.combatantPaths(participants, puppets));
    let message = null;
    if (result.events?.length) {
      message = await this.postRoundCard(result, { names: this.namesOf(result, participants, puppets), round, physical: usePhysical, requesterRollMode, requesterId });
    }
    const payload = {
      system, result, round, combat, actors: participants.map((p) => p.actor), puppets: puppets.map((p) => p.actor),
      choices: params.choices ?? null, updates: plan, message,
    };
    this.env.Hooks.callAll("mindscape.roundEnded", payload);
    return { summary: result.summary, updates: plan, messageId: message?.id ?? null };
  }

  /**
   * Post the end-of-round card (or, with `info.title` and `info.card`, a rest's card in
   * the same template), in the roll mode an exchange's card would use.
   */
  async postRoundCard(result, info) {
    const names = await this.withQuotedNames(result.summary, info.names);
    const context = roundCardContext(result, { ...info, names, localize: this.t.label });
    const rollMode = this.cardRollMode(info.requesterRollMode);
    const alias = info.title ?? this.t.localize("MINDSCAPE.RoundEnd.Title");
    return postChatCard({
      result, context, rollMode, requesterId: info.requesterId ?? null, gmIds: this.gmIds(),
      speaker: cardSpeaker({ alias }),
      renderTemplate: (_name, ctx) => this.env.render("round-card", ctx),
      description: await this.cardDescription(result.system),
      template: "round-card",
      Roll: this.env.Roll,
      ChatMessage: this.env.ChatMessage,
      localizePurpose: (p) => this.t.label(`MINDSCAPE.Purpose.${p}`, p),
      localize: this.t.label,
      card: info.card ?? { card: "round-end", system: result.system, round: info.round ?? null },
    });
  }

  // ---------------------------------------------------------------- rest (GM)

  /**
   * GM: who rests and what the world's system asks of a rest. Only a GM may rest actors
   * (a rest gives PSPs and pool dice back). Uuids of tokens rest the actor as seen through
   * the token (an unlinked token's own actor); a world actor's uuid (its sheet) rests that
   * actor. Actors are taken once, and only those with a profile for the system. Actors
   * of the current encounter's combatants are left out, as an end of round leaves them
   * out (the encounter keeps its own copy of them), and named in `leftOut`.
   * @param {string[]} tokenUuids
   */
  async restPlan(tokenUuids, sender) {
    if (!sender?.isGM) throw new UsageError("MINDSCAPE.Error.RestGMOnly");
    const system = this.system;
    const systemLabel = this.t.label(`MINDSCAPE.System.${system}`, system);
    const spec = restSpec(await this.describe(system));
    if (!spec) throw new UsageError("MINDSCAPE.Error.NoRest", { system: systemLabel });
    const near = sceneIdsOfUuids([].concat(tokenUuids ?? []));
    const docs = await Promise.all([].concat(tokenUuids ?? []).map((uuid) => this.docs(uuid, { worldActor: true, near })));
    const psionic = roundParticipants(docs, system);
    if (!psionic.length) throw new UsageError("MINDSCAPE.Error.NoRestCombatants", { system: systemLabel });
    const { outside: participants, inEncounter } = splitByEncounter(psionic, this.encounterMeta());
    const leftOut = inEncounter.map((p) => p.token?.name ?? p.actor.name);
    if (!participants.length) throw new UsageError("MINDSCAPE.Error.RestCombatantsInEncounter", { names: leftOut.join(", ") });
    return { system, systemLabel, spec, participants, leftOut };
  }

  /** GM: what the rest dialog shows: the system, who rests, and the hours it takes (null: one long rest). */
  async prepareRest({ tokenUuids }, sender) {
    const { system, systemLabel, spec, participants, leftOut } = await this.restPlan(tokenUuids, sender);
    return { system, systemLabel, hours: spec.hours, names: participants.map((p) => p.token?.name ?? p.actor.name), leftOut };
  }

  /**
   * GM: rest chosen tokens' actors (relayed from any GM's client). `hours` are required,
   * as whole hours in the system's range, when the system's rest takes them, and refused
   * when it does not, before the companion is called. Answers the rest's outcome and
   * `leftOut`, the names of the encounter's actors left out (`restPlan`).
   * @param {{tokenUuids:string[], hours?:number|null, physical?:boolean, rollMode?:string}} request
   */
  async restFor({ tokenUuids, hours, physical, rollMode }, sender) {
    const { systemLabel, spec, participants, leftOut } = await this.restPlan(tokenUuids, sender);
    let chosen = null;
    if (spec.hours) {
      chosen = restHours(hours, spec.hours);
      if (chosen === null) throw new UsageError("MINDSCAPE.Error.RestHours", { ...spec.hours, system: systemLabel });
    } else if (hours !== undefined && hours !== null) {
      throw new UsageError("MINDSCAPE.Error.RestNoHours", { system: systemLabel });
    }
    const requesterId = requesterOf(sender, this.game);
    const requesterRollMode = requesterId ? rollMode ?? null : null;
    const done = await this.rest({ participants, hours: chosen, physical, requesterRollMode, requesterId });
    if (!done) throw new UsageError("MINDSCAPE.Error.TokensGone");
    return { ...done, leftOut };
  }

  /**
   * GM: the rest of `participants` in the exchange queue, keyed by their actors: it never
   * interleaves with an exchange or end of round touching one of them, and reads their
   * sheets again when its turn comes. Those deleted meanwhile are left out; when none is
   * left, nothing is called and the answer is null.
   */
  rest({ participants, ...rest }) {
    const keys = participants.map((p) => participantOf(p.token, p.actor).actorUuid);
    return this.exchanges.run(keys, async () => {
      const now = await this.rereadAll(participants);
      return now.length ? this.restNow({ participants: now, ...rest }) : null;
    });
  }

  /**
   * GM: `combatants.rest` for the participants' current data; call only through `rest`.
   * A revised-2e open mind goes through its rounds during the rest, so the rest may roll
   * dice: physical ones are asked for as at the end of a round (`physical`, else the
   * setting). In power-pool a resting controller keeps no control by an action (seed
   * 001: "Powers can't be maintained when a creature rests"): the creatures it holds so
   * that do not rest with it go along as `puppets` (`withHeldByAction`; one whose sheet
   * the companion refuses is left out, `sparingPuppets`), and the GM is warned about any
   * the module cannot find. The write-back goes to those actors and
   * puppets only; a card is posted only when something happened (the result has events:
   * PSPs or pool dice regained, powers, control or conditions ended, a mind locked,
   * checked or closed), with its dice; a countdown of conditions alone is written back
   * without one. Fires `mindscape.rested` after every call that succeeded.
   * @param {{participants:{token:any, actor:any}[], hours:number|null, physical?:boolean,
   *          requesterRollMode?:string|null, requesterId?:string|null}} request
   */
  async restNow({ participants, hours, physical, requesterRollMode = null, requesterId = null }) {
    const system = this.system;
    const adapter = await this.adapterId();
    const { puppets: going, missing } = await this.withHeldByAction(participants);
    this.tellPuppetsMissing(missing);
    const ref = (p) => this.ref(p.actor, p.token, adapter);
    const usePhysical = physical ?? setting(this.game, "physicalDice");
    const { result, puppets } = await this.sparingPuppets(going, (sent) => this.callDice("combatants.rest", restParams({
      system,
      combatants: participants.map(ref),
      puppets: sent.map(ref),
      options: houseRulesFor(this.game, system),
      hours,
    }), usePhysical));
    const plan = await this.writeBack(result.updates, [...participants, ...puppets].map((p) => participantOf(p.token, p.actor)));
    this.sheetWarnings(result.warnings, Mindscape.combatantPaths(participants, puppets));
    let message = null;
    if (result.events?.length) {
      message = await this.postRoundCard(result, {
        names: this.namesOf(result, participants, puppets),
        physical: usePhysical,
        title: this.t.localize("MINDSCAPE.Rest.Title"),
        icon: "fa-bed",
        cardClass: "mindscape-rest-card",
        card: { card: "rest", system: result.system, hours: hours ?? null },
        requesterRollMode,
        requesterId,
      });
    }
    this.env.Hooks.callAll("mindscape.rested", { system, result, actors: participants.map((p) => p.actor), puppets: puppets.map((p) => p.actor), updates: plan, message });
    return { summary: result.summary, updates: plan, messageId: message?.id ?? null };
  }

  // ---------------------------------------------------------------- encounter refresh (GM)

  /** GM: take the encounter's combatants again from their sheets (the macro API, relayed). */
  async refreshEncounterFor(_request, sender) {
    if (!sender?.isGM) throw new UsageError("MINDSCAPE.Error.RefreshGMOnly");
    if (!this.env.encounters) throw new UsageError("MINDSCAPE.Error.NoEncounter");
    // The GM asked for it: sheets a write-back missed are taken as they are now too.
    return this.env.encounters.refresh({ takeHeld: true });
  }

  /**
   * Tell this user which combatants a refresh took again from their sheets, and which
   * fields (that every sheet matched, when nothing else is to be told; `quiet`: neither,
   * for the refresh a step does by itself), whose declared choice was dropped, and whose
   * sheet was left out because a write-back missed it.
   */
  reportRefresh(refreshed, { quiet = false } = {}) {
    const list = refreshReport(refreshed, this.t.label);
    const again = droppedReport(refreshed);
    const held = heldReport(refreshed);
    if (list && !quiet) this.notify("info", this.t.format("MINDSCAPE.Encounter.Refreshed", { list }));
    // Asked for and nothing to report: say so, or the button seems to do nothing.
    if (!list && !again && !held && !quiet) this.notify("info", this.t.localize("MINDSCAPE.Encounter.NothingChanged"));
    if (again) this.notify("warn", this.t.format("MINDSCAPE.Encounter.DeclareAgain", { list: again }));
    if (held) this.notify("warn", this.t.format("MINDSCAPE.Encounter.KeptHeld", { list: held }));
    return refreshed;
  }

  // ---------------------------------------------------------------- profile editor

  /** GM: the profile form of an actor for the world's system. */
  async profileForm({ actorUuid }, sender) {
    const { actor } = await this.docs(actorUuid, { worldActor: true });
    if (!sender?.isGM && !actor.testUserPermission?.(sender, "OWNER")) throw new PermissionDeniedError({ who: actor.name });
    const system = this.system;
    const description = await this.describe(system);
    // (a field an unlinked token's profile cleared is null: `profileUpdates`)
    const stored = actor.flags?.[MODULE_ID]?.[system] ?? {};
    const profile = Object.fromEntries(Object.entries(stored).filter(([, value]) => value !== null));
    const { fields, advanced } = profileFields(description?.combatant_schema ?? {}, profile, this.t.label);
    return { actorUuid, actorName: actor.name, system, systemLabel: this.t.label(`MINDSCAPE.System.${system}`, system), fields, advanced };
  }

  /** GM: validate a profile with the daemon's adapter, then store it in the actor's flags. */
  async saveProfile({ actorUuid, form }, sender) {
    const spec = await this.profileForm({ actorUuid }, sender);
    const profile = profileFromForm(spec.fields, form);
    const { actor, token } = await this.docs(actorUuid, { worldActor: true });
    const adapter = await this.adapterId();
    const ref = this.ref(actor, token, adapter);
    ref.data.actor = actorDataWithProfile(ref.data.actor, MODULE_ID, spec.system, profile);
    const imported = await this.rpc("adapters.import", { adapter, system: spec.system, data: ref.data, options: houseRulesFor(this.game, spec.system) });
    for (const update of profileUpdates(actor, spec.system, profile)) await actor.update(update);
    return { profile, combatant: imported?.combatant ?? null, warnings: imported?.warnings ?? [] };
  }

  // ---------------------------------------------------------------- entry points (any client)

  /**
   * Show this user a notice (`kind`: "info", "warn" or "error") of plain text. Foundry v12
   * reads a notice as HTML (v13 cleans it as untrusted input), and what a notice says
   * comes from players (actor and token names) and the companion (its summaries and
   * reasons, which name them too): the whole text is escaped as an element's content
   * (`htmlText`), which the language file's texts, without markup, allow. Every notice
   * of the module goes through here.
   *
   * A notice that would stay until dismissed (`options.permanent`) with the words of one
   * that still stays is given as one that goes away by itself: the same error at every
   * round's end, or the same sheet refused in each exchange of an attack, would otherwise
   * stack up, and Foundry shows only a few notices at once (v12 three, v13 five), the
   * rest waiting behind those that stay. Foundry v13 says whether the first still shows
   * (`has`); v12 by its `queue` and `active` lists (`stillShown`).
   */
  notify(kind, text, options) {
    const notifications = this.env.ui?.notifications;
    const key = `${kind}\n${text}`;
    const repeated = Boolean(options?.permanent) && this.standing.has(key) && stillShown(notifications, this.standing.get(key));
    const given = notifications?.[kind]?.(htmlText(text), repeated ? { ...options, permanent: false } : options);
    if (options?.permanent && !repeated) {
      // Words with changing numbers are new each time: keep the memory small.
      if (this.standing.size > 500) this.standing.clear();
      this.standing.set(key, given);
    }
    return given;
  }

  /**
   * Show an error to this user, in words that say how to fix it. One of the GM's own link
   * to its companion that only the GM can mend (not paired, not answering, token or page
   * refused, an address it cannot be called at) stays until dismissed: nothing reaches
   * the companion until it is mended.
   */
  notifyError(error) {
    if (error instanceof CancelledError) return;
    const text = describeError(error, this.t);
    this.notify("error", text, { permanent: error instanceof MindscapeError && /Unreachable|Auth|Forbidden|BadDaemonUrl|NotPaired/.test(error.name) });
    if (!(error instanceof MindscapeError)) console.error(error);
  }

  /**
   * Start a psionic attack from this client: the attack dialog (with live odds), then the
   * GM's client resolves it.
   * @param {{attackerUuid:string, targetUuids?:string[], attack?:object}} args
   *   with `attack` given (macro use), the dialog is skipped
   */
  async startAttack({ attackerUuid, targetUuids, attack, physical }) {
    try {
      const targets = targetUuids ?? [...(this.game.user?.targets ?? [])].map((t) => t.document?.uuid ?? t.uuid);
      if (!targets.length) throw new UsageError("MINDSCAPE.Error.NoTarget");
      // The GM's client posts the cards; the world's "default" roll mode means this user's
      // chat roll mode, so it travels with the request (read when the attack is sent).
      if (attack) return await this.relay.toGM("attack", { attackerUuid, targetUuids: targets, attack, physical, rollMode: this.game.settings.get("core", "rollMode") });
      const prep = await this.relay.toGM("prepare", { attackerUuid, targetUuids: targets });
      const context = this.attackDialogContext(prep);
      const form = await this.env.dialogs.attackDialog({
        context,
        oddsFor: (f) => this.relay.toGM("odds", { attackerUuid, targetUuid: f.target || targets[0], targetUuids: targets, attack: withDeclined(f, context.attacks), assumeDefense: f.assumeDefense || null })
          .catch((error) => {
            error.userMessage = describeError(error, this.t);
            // Refused for the attacker's own sake (the GM's `oddsRefusal`): no defense mends it.
            error.blocksAttack = Boolean(error.data?.attackRefused);
            throw error;
          }),
      });
      if (!form) return null;
      return await this.relay.toGM("attack", { attackerUuid, targetUuids: targets, attack: withDeclined(form, context.attacks), physical: Boolean(form.physical), rollMode: this.game.settings.get("core", "rollMode") });
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }

  /** The attack dialog's template context from `prepare`'s answer. */
  attackDialogContext(prep) {
    const label = this.t.label;
    const f = prep.fields;
    return {
      ...prep,
      attacks: prep.attacks.map((m, i) => ({ ...m, label: label(`MINDSCAPE.Mode.${m.id}`, m.id.replace(/-/g, " ")), selected: i === 0 })),
      defenses: prep.defenses.map((m) => ({ ...m, label: label(`MINDSCAPE.Mode.${m.id}`, m.id.replace(/-/g, " ")) })),
      targetNames: prep.targets.map((t) => t.name).join(", "),
      multipliers: f.multiplier ? Array.from({ length: f.maxMultiplier }, (_, i) => ({ value: i + 1, selected: i === 0 })) : [],
      ranges: f.range ? RANGES.map((r, i) => ({ value: r, label: label(`MINDSCAPE.Range.${r}`, r), selected: i === 0 })) : [],
      poolDice: f.poolDice ? Array.from({ length: f.maxPool }, (_, i) => ({ value: i + 1, selected: i === f.maxPool - 1 })) : [],
      keepBy: Boolean(f.keepBy),
      // power-pool: an effect a mode lets the attacker decline (Subversion's Fear)
      declinable: declineBoxes(prep.attacks, this.t).declinable,
      physical: Boolean(setting(this.game, "physicalDice")),
      systemLabel: label(`MINDSCAPE.System.${prep.system}`, prep.system),
    };
  }

  /**
   * End the psionic round for chosen tokens from this client (the macro API). A player's
   * client is refused here already; a GM's request goes to the client that talks to the
   * companion, which checks again who asked.
   * @param {{tokenUuids:string[], choices?:object, physical?:boolean}} request
   */
  async startEndRound({ tokenUuids, choices, physical }) {
    try {
      if (!this.game.user?.isGM) throw new UsageError("MINDSCAPE.Error.EndRoundGMOnly");
      const done = await this.relay.toGM("endRound", { tokenUuids, choices, physical, rollMode: this.game.settings.get("core", "rollMode") });
      if (done?.leftOut?.length) this.notify("info", this.t.format("MINDSCAPE.RoundEnd.LeftOut", { names: done.leftOut.join(", ") }));
      return done;
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }

  /**
   * Rest chosen tokens (or actors) from this client: the sheet header and the macro API.
   * A player's client is refused here already; a GM's request goes to the client that
   * talks to the companion, which checks again who asked. Unless `hours` are given (or
   * `dialog` is false), a dialog asks the hours (a system whose rest takes them) or
   * confirms one long rest. The current encounter's actors are left out, and named to
   * the user. Never rejects: failures are shown to the user.
   * @param {{tokenUuids:string[], hours?:number|null, dialog?:boolean, physical?:boolean}} request
   * @returns {Promise<{summary:string, updates:object[], messageId:string|null}|null>}
   */
  async startRest({ tokenUuids, hours = null, dialog, physical }) {
    try {
      if (!this.game.user?.isGM) throw new UsageError("MINDSCAPE.Error.RestGMOnly");
      let chosen = hours;
      if (dialog ?? (chosen === null || chosen === undefined)) {
        const prep = await this.relay.toGM("prepareRest", { tokenUuids });
        const form = await this.env.dialogs.restDialog({ context: this.restDialogContext(prep, chosen) });
        if (!form) return null;
        chosen = prep.hours ? form.hours : null;
      }
      const { leftOut = [], ...done } = await this.relay.toGM("rest", { tokenUuids, hours: chosen, physical, rollMode: this.game.settings.get("core", "rollMode") });
      if (leftOut.length) this.notify("info", this.t.format("MINDSCAPE.Rest.LeftOut", { names: leftOut.join(", ") }));
      return done;
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }

  /** The rest dialog's template context from `prepareRest`'s answer. */
  restDialogContext(prep, hours = null) {
    const range = prep.hours;
    const first = range ? Math.min(range.max, Math.max(range.min, Number.isInteger(hours) ? hours : DEFAULT_REST_HOURS)) : null;
    // "does Zanna", "do Zanna, Ulcen": the sentence follows how many rest.
    return { ...prep, names: prep.names.join(", "), several: prep.names.length > 1, askHours: Boolean(range), min: range?.min ?? null, max: range?.max ?? null, value: first };
  }

  /**
   * Take the encounter's combatants again from their sheets, from this client (the
   * macro API): GM only, through the client that talks to the companion. Reports which
   * combatants changed which fields. Never rejects.
   * @returns {Promise<{combatantId:string, name:string, changed:string[], revision:number|null}[]|null>}
   */
  async startRefreshEncounter() {
    try {
      if (!this.game.user?.isGM) throw new UsageError("MINDSCAPE.Error.RefreshGMOnly");
      return this.reportRefresh(await this.relay.toGM("refreshEncounter", {}));
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }

  /**
   * Open the profile editor for an actor (any owner; the GM validates and saves). A
   * profile the companion refuses (or advanced JSON that does not parse) is not lost: the
   * form opens again with what was typed and the problems beside the fields they concern
   * (profile.js `profileProblems`), until it is saved or cancelled.
   */
  async configureActor(actorUuid) {
    try {
      const spec = await this.relay.toGM("profileForm", { actorUuid });
      let context = spec;
      for (;;) {
        const form = await this.env.dialogs.profileDialog({ context });
        if (!form) return null;
        let saved;
        try {
          saved = await this.relay.toGM("saveProfile", { actorUuid, form });
        } catch (error) {
          const problems = profileProblems(error, spec, { label: this.t.label, message: (e) => describeError(e, this.t) }, MODULE_ID);
          if (!problems) throw error;
          context = profileAgainContext(spec, form, problems);
          continue;
        }
        this.notify("info", this.t.format("MINDSCAPE.Profile.Saved", { name: spec.actorName }));
        for (const w of saved.warnings ?? []) this.notify("warn", w);
        return saved;
      }
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }

  /**
   * GM: tell every client whether this browser is paired (a boolean user flag), so that
   * requests go to a connected GM whose browser holds the token. Written only on change.
   */
  async announcePairing() {
    const user = this.game.user;
    if (!user?.isGM || typeof user.setFlag !== "function") return;
    const paired = Boolean(setting(this.game, "daemonToken"));
    if (Boolean(user.getFlag?.(MODULE_ID, PAIRED_FLAG)) !== paired) await user.setFlag(MODULE_ID, PAIRED_FLAG, paired);
  }

  /** GM: the pairing dialog; saves URL and token to this client's settings. */
  async openPairing() {
    const url = setting(this.game, "daemonUrl");
    const token = setting(this.game, "daemonToken");
    const test = async (u, tk) => {
      try {
        const info = await this.client({ url: u, token: tk }).info();
        return this.t.format("MINDSCAPE.Pairing.Ok", { name: info?.name ?? "mindscape", version: info?.version ?? "?", systems: (info?.systems ?? []).join(", ") });
      } catch (error) {
        // No token yet: the notice would send the GM to this very dialog.
        error.userMessage = error instanceof NotPairedError ? plainText(this.t.localize("MINDSCAPE.Pairing.NoToken")) : describeError(error, this.t);
        throw error;
      }
    };
    const origin = globalThis.location?.origin ?? "";
    let typed = { url, token };
    let form;
    let address;
    // An address the module cannot call is not saved (nor the token with it): the GM is
    // told why and the dialog opens again with what was typed.
    for (;;) {
      form = await this.env.dialogs.pairingDialog({ ...typed, test, context: { origin, hosted: /^https:/.test(origin) } });
      if (!form) return null;
      try {
        address = checkDaemonUrl(form.url ?? url);
        break;
      } catch (error) {
        this.notifyError(error);
        typed = { url: String(form.url ?? ""), token: String(form.token ?? "") };
      }
    }
    await setSetting(this.game, "daemonUrl", address);
    await setSetting(this.game, "daemonToken", String(form.token ?? "").trim());
    this.describeCache.clear();
    this.adaptersCache = null;
    await this.announcePairing();
    return form;
  }

  /**
   * Whether this browser may show the encounter panel, which calls the companion
   * directly: only the one that talks to it. Another GM is told whose browser does
   * (`OtherGMError`) rather than shown a panel the companion refuses.
   */
  mayShowEncounter() {
    if (this.relay.isActiveGM) return true;
    const gm = this.relay.activeGM;
    this.notifyError(this.game.user?.isGM && gm ? new OtherGMError({ name: gm.name }) : new UsageError("MINDSCAPE.Error.EncounterGMOnly"));
    return false;
  }

  /**
   * GM, through the relay: the house rules of the world's system (`systems.describe`'s
   * `house_rules`), for any GM's House rules menu: an assistant GM's browser, which does
   * not talk to the companion, asks the one that does.
   */
  async houseRulesFor(sender) {
    if (!sender?.isGM) throw new UsageError("MINDSCAPE.Error.HouseRulesGMOnly");
    return (await this.describe(this.system))?.house_rules ?? [];
  }

  /** GM: edit the world's house rules for its system (`systems.describe` lists them). */
  async openHouseRules() {
    try {
      const system = this.system;
      const houseRules = await this.relay.toGM("describeHouseRules", {});
      const current = houseRulesFor(this.game, system);
      const rules = (houseRules ?? []).map((r) => {
        const value = r.id in current ? current[r.id] : r.default;
        const isBoolean = typeof r.default === "boolean";
        const choices = !isBoolean && Array.isArray(r.choices) && r.choices.length ? r.choices.map((c) => ({ value: String(c), selected: String(c) === String(value) })) : null;
        return { ...r, value, checked: value === true, isBoolean, choices };
      });
      const form = await this.env.dialogs.houseRulesDialog({ context: { system, systemLabel: this.t.label(`MINDSCAPE.System.${system}`, system), rules } });
      if (!form) return null;
      const chosen = {};
      for (const r of rules) {
        const v = houseRuleValue(r, form[r.id]);
        if (v !== r.default) chosen[r.id] = v;
      }
      const all = { ...(setting(this.game, "houseRules") ?? {}), [system]: chosen };
      await setSetting(this.game, "houseRules", all);
      const changed = Object.keys(chosen).join(", ");
      const systemLabel = this.t.label(`MINDSCAPE.System.${system}`, system);
      this.notify("info", changed
        ? this.t.format("MINDSCAPE.HouseRules.Saved", { system: systemLabel, list: changed })
        : this.t.format("MINDSCAPE.HouseRules.SavedDefaults", { system: systemLabel }));
      return chosen;
    } catch (error) {
      this.notifyError(error);
      return null;
    }
  }
}

/**
 * The rules a defending mind's own choice may break, which another choice mends (4001
 * `data.rule`): revised-2e's and combat-strength's, whose one defender they are about
 * (a defense not known, too few PSPs for it, a mind that cannot act); power-pool's
 * (CHOOSER_RULES), about the mind the companion names (`combatant`): a mode it does not
 * know, one that does not work while it is unaware, pool dice beyond its pool, a spell
 * it has not memorised. The attacker's own refusals (pool-dice-exceed-pool and
 * mode-not-known also name attackers) are not mended by a defense.
 */
const DEFENSE_RULES = new Set(["defense-not-known", "nonpsionic-cannot-defend", "defender-cannot-act", "not-enough-psp-for-defense",
  "defense-mode-not-known", "defense-shield-thoughts-only"]);
const CHOOSER_RULES = new Set(["mode-not-known", "defender-unaware", "pool-dice-exceed-pool", "spell-not-memorised"]);

/**
 * The refusals that name the mind struck but tell only what everyone at the table sees:
 * combat-strength's `target-dead` (the creature lies dead; the detail says so and no more).
 */
const PUBLIC_TARGET_RULES = new Set(["target-dead"]);

/**
 * Whether a failed attack's `error` speaks of the minds it struck rather than of the
 * attacker (combatant id `attackerId`): a 4001 of a defense's rules, or naming another
 * combatant, unless it is one of PUBLIC_TARGET_RULES; a −32602 with a problem outside the
 * attacker and its attack.
 */
function speaksOfTheStruck(error, attackerId) {
  if (error instanceof RulesError) {
    const { rule = "", combatant } = error.data ?? {};
    if (PUBLIC_TARGET_RULES.has(rule)) return false;
    return DEFENSE_RULES.has(rule) || (typeof combatant === "string" && combatant !== attackerId);
  }
  if (error instanceof InvalidParamsError) {
    const paths = (error.data?.errors ?? []).map((e) => String(e?.path ?? ""));
    return paths.some((path) => !/^\/(attacker|attack)(\/|$)/.test(path));
  }
  return false;
}

/**
 * The rules that refuse an attack for the attacker's own sake, whatever the defender does,
 * in the systems whose refusals name nobody: revised-2e's (engine/revised_2e/exchange.py:
 * a mind that cannot attack, a mode it does not know, a multiplier above its level, a
 * range beyond the mode, too few PSPs) and combat-strength's (exchange.py: the same, in
 * attack strength). power-pool's refusals name the attacker (`combatant`).
 */
const ATTACKER_RULES = new Set(["nonpsionic-cannot-attack", "target-is-attacker", "attacker-cannot-act", "attack-not-known",
  "multiplier-above-level", "range-beyond-mode", "not-enough-psp",
  "target-is-self", "attacker-incapacitated", "attack-mode-not-known", "attack-strength-too-low"]);

/**
 * Whether `error` refuses an attack for the attacker (combatant id `attackerId`) or its
 * attack, which no defense mends: a 4001 naming the attacker, or of ATTACKER_RULES when
 * it names nobody; a −32602 whose every problem is in the attacker or its attack.
 */
function refusesTheAttacker(error, attackerId) {
  if (error instanceof RulesError) {
    const { rule = "", combatant } = error.data ?? {};
    return typeof combatant === "string" ? combatant === attackerId : ATTACKER_RULES.has(rule);
  }
  if (error instanceof InvalidParamsError) {
    const paths = (error.data?.errors ?? []).map((e) => String(e?.path ?? ""));
    return paths.length > 0 && paths.every((path) => /^\/(attacker|attack)(\/|$)/.test(path));
  }
  return false;
}

/**
 * The members of a defense question's answer the GM's client takes (the defense
 * dialog's, `dialogs.defenseDialog`): the mode, the spell sacrificed, the allies picked,
 * and whether it timed out or was cancelled.
 */
export function defenseAnswer(answer) {
  const out = { mode: typeof answer.mode === "string" && answer.mode ? answer.mode : null };
  if (answer.sacrifice !== undefined) out.sacrifice = answer.sacrifice;
  if (answer.allies !== undefined) out.allies = answer.allies;
  for (const key of ["timedOut", "cancelled"]) if (answer[key] === true) out[key] = true;
  return out;
}

/**
 * The updates, in order, that store `profile` as `actor`'s whole profile of `system`,
 * so that a cleared field does not linger: the old profile deleted ("-="), then the new
 * one written. An unlinked token's actor is its base actor's data with the token's delta
 * over it, and a key deleted from the delta lets the base actor's show through again
 * (foundryvtt#8400): there each field cleared is written as null instead, in one update,
 * which the companion's adapters read as absent. So is each key an object field lost
 * (`condition_rounds` without a condition that ended): Foundry merges an object into the
 * stored one key by key, and a key left there would outlive its condition.
 */
export function profileUpdates(actor, system, profile) {
  const path = `flags.${MODULE_ID}.${system}`;
  if (!actor.isToken) return [{ [`flags.${MODULE_ID}.-=${system}`]: null }, { [path]: profile }];
  const current = actor.flags?.[MODULE_ID]?.[system] ?? {};
  const nulled = (now, old) => Object.fromEntries(Object.keys(old).filter((key) => !(key in now) && old[key] !== null).map((key) => [key, null]));
  const written = { ...profile, ...nulled(profile, current) };
  for (const [key, value] of Object.entries(profile)) {
    if (isObject(value) && isObject(current[key])) written[key] = { ...value, ...nulled(value, current[key]) };
  }
  return [{ [path]: written }];
}

/**
 * Whose defense the companion refused (`resolveChoosing`): `{id, rule, detail}`, `id`
 * one of `choosers` (the combatant ids of the minds that chose; `[null]` for the one
 * defender of revised-2e and combat-strength, whose refusals name nobody), or null.
 */
function defenseRefusal(error, choosers) {
  if (!(error instanceof RulesError)) return null;
  const { rule = "", detail = "", combatant } = error.data ?? {};
  const about = typeof combatant === "string" ? combatant : null;
  if (DEFENSE_RULES.has(rule) && choosers.length === 1 && (about === null || about === choosers[0])) return { id: choosers[0], rule, detail };
  if (CHOOSER_RULES.has(rule) && about !== null && choosers.includes(about)) return { id: about, rule, detail };
  return null;
}

/**
 * The rules a choice at the end of a round may break (4001 `data.rule`): revised-2e's
 * closing, power-pool's control (`controller-cannot-act`: a keep from a controller that
 * fell asleep, say, while its owner chose).
 */
const CHOICE_RULES = new Set(["cannot-close", "cannot-act", "not-controlling", "no-die-to-dedicate", "controller-cannot-act"]);

/**
 * power-pool: the ally of `group` (`resolveExchange`) a refusal of `exchange.resolve` is
 * about, as `{docs, id, joined, rule, detail}` (`joined`: it came by its own choice, with
 * its own defense), or null: not a 4001, no `combatant`, or one that names no ally (the
 * attacker, a mind struck, a controller, a puppet).
 */
function allyRefused(error, group) {
  const id = error instanceof RulesError ? error.data?.combatant : undefined;
  if (!group?.allies?.length || typeof id !== "string") return null;
  const docs = group.allies.find((d) => roundCombatantId(d.token, d.actor) === id);
  if (!docs) return null;
  const joined = (group.defenses ?? []).some(([who]) => who === id);
  return { docs, id, joined, rule: error.data.rule ?? "", detail: error.data.detail ?? "" };
}

/**
 * Whether the companion refused an `exchange.end_round` for its choices (or the puppets
 * they free) rather than for the combatants: a 4001 of a choice's rule, or a −32602 whose
 * every problem is at `/choices/…` or `/puppets/…`. `{rule, detail, reason, whose}` to
 * tell the GM, or null for any other error. `whose`: the ids among `choices`' keys whose
 * choices were refused, when the refusal names them all (a 4001's `combatant`, the
 * controller whose choice it was; from a companion that does not give it, a detail that
 * ends with "(/choices/<id>)" or names "(/choices/<id>/release/0)"; every −32602 problem
 * at "/choices/<id>/…"); else `[]` (a puppet's problem beside a choice's, a refusal
 * that names nobody). A puppet's problem alone never comes here (`sparingPuppets`).
 */
function choiceRefusal(error, choices = {}) {
  const ids = Object.keys(choices);
  if (error instanceof RulesError && CHOICE_RULES.has(error.data?.rule)) {
    const detail = error.data.detail ?? "";
    const about = error.data.combatant;
    const whose = ids.includes(about) ? [about]
      : ids.filter((id) => detail.includes(`(/choices/${id})`) || detail.includes(`(/choices/${id}/`));
    return { rule: error.data.rule, detail, reason: `${error.data.rule}: ${detail}`, whose };
  }
  if (error instanceof InvalidParamsError) {
    const problems = error.data?.errors ?? [];
    const paths = problems.map((e) => String(e?.path ?? ""));
    if (problems.length && paths.every((p) => /^\/(choices|puppets)(\/|$)/.test(p))) {
      const detail = problems.map((e) => `${e.path}: ${e.message}`).join("; ");
      const owner = (p) => ids.find((id) => p === `/choices/${id}` || p.startsWith(`/choices/${id}/`));
      const whose = paths.every(owner) ? [...new Set(paths.map(owner))] : [];
      return { rule: "invalid-params", detail, reason: detail, whose };
    }
  }
  return null;
}

/**
 * Whether the companion refused a call for the sheets of `puppets` alone (a −32602 whose
 * every problem is at `/puppets/<i>` or below, `i` one of the `count` sent): the problems
 * of each puppet refused by its index (each problem's path below the puppet, then its
 * message), or null for any other error.
 * @returns {Map<number, string[]>|null}
 */
function refusedPuppets(error, count) {
  if (!(error instanceof InvalidParamsError)) return null;
  const problems = error.data?.errors ?? [];
  const refused = new Map();
  for (const problem of problems) {
    const at = /^\/puppets\/(\d+)(\/.*)?$/.exec(String(problem?.path ?? ""));
    if (!at || Number(at[1]) >= count) return null;
    const i = Number(at[1]);
    refused.set(i, [...(refused.get(i) ?? []), `${at[2] ?? "/"}: ${problem.message}`]);
  }
  return refused.size ? refused : null;
}

/** What `withDeadline` answers in `askWithin` when the answer did not come in time. */
const LATE = Symbol("late");

/** `promise`'s value, or `fallback` when it has not settled after `ms`. */
function withDeadline(promise, ms, fallback) {
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve(fallback), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
