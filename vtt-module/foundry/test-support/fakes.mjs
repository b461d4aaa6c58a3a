/**
 * Small fakes of Foundry's client globals, shaped after the v12/v13 API the module uses:
 * users with roles and ownership, actors and token documents (linked and unlinked, with
 * dotted-path updates), a Combat with combatants and the tracker's round changes,
 * settings with scopes, i18n from the module's own en.json, Hooks, ChatMessage,
 * Roll.fromData, fromUuid, and a server that relays the module socket (with the sender's
 * id, as Foundry's server does) and v13 user queries between clients.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { recordRequest } from "../../test-support/record.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const MODULE_DIR = path.resolve(HERE, "../mindscape");
export const EN = JSON.parse(readFileSync(path.join(MODULE_DIR, "lang/en.json"), "utf8"));

function getPath(obj, key) {
  return key.split(".").reduce((o, k) => (o === undefined || o === null ? undefined : o[k]), obj);
}

/**
 * Apply `{dotted.path: value}` to an object as Foundry's `Document#update` does: the
 * changes are expanded (`expandObject`, keys in order, so `"a.-=k"` after `"a"` lands
 * inside a's value) and merged in (`mergeObject(…, {performDeletions: true})`): objects
 * merge key by key, `-=key` deletes, arrays and other values replace.
 */
export function applyDotted(target, changes) {
  mergeDeleting(target, expandDotted(changes));
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function expandDotted(changes) {
  const out = {};
  for (const [key, value] of Object.entries(changes)) {
    const parts = key.split(".");
    let obj = out;
    for (const p of parts.slice(0, -1)) {
      if (!isPlainObject(obj[p])) obj[p] = {};
      obj = obj[p];
    }
    obj[parts[parts.length - 1]] = isPlainObject(value) ? expandDotted(value) : structuredClone(value);
  }
  return out;
}

function mergeDeleting(target, changes) {
  for (const [key, value] of Object.entries(changes)) {
    if (key.startsWith("-=")) delete target[key.slice(2)];
    else if (isPlainObject(value)) {
      if (!isPlainObject(target[key])) target[key] = {};
      mergeDeleting(target[key], value);
    } else target[key] = value;
  }
  return target;
}

/** i18n over the module's language file, with Foundry's `{name}` formatting. */
export function makeI18n() {
  const localize = (key) => {
    const v = getPath(EN, key);
    return typeof v === "string" ? v : key;
  };
  return {
    localize,
    has: (key) => typeof getPath(EN, key) === "string",
    format: (key, data = {}) => localize(key).replace(/{[^}]+}/g, (k) => String(data[k.slice(1, -1)])),
  };
}

/**
 * Hooks as Foundry's: `callAll` runs every handler and ignores what they return. The
 * returned values are kept in `called[].results` only so tests can wait for work a
 * handler started (Foundry does not wait for it either).
 */
export class FakeHooks {
  constructor() { this.events = new Map(); this.called = []; }
  on(name, fn) { if (!this.events.has(name)) this.events.set(name, []); this.events.get(name).push(fn); return fn; }
  once(name, fn) { return this.on(name, fn); }
  callAll(name, ...args) {
    const entry = { name, args, results: [] };
    this.called.push(entry);
    for (const fn of this.events.get(name) ?? []) entry.results.push(fn(...args));
    return true;
  }
  call(name, ...args) { return this.callAll(name, ...args); }
}

export class FakeUser {
  constructor({ id, name, isGM = false, active = true }) {
    Object.assign(this, { id, name, isGM, active, character: null });
    this.targets = new Set();
    this.flags = {};
    /** Permissions the GM took from this user (`{QUERY_USER: false}`); every other is the default. */
    this.permissions = {};
  }
  /**
   * As `User#hasPermission`: a GM has every permission; a player the ones its role grants,
   * by default QUERY_USER (common/constants.mjs USER_PERMISSIONS.QUERY_USER, defaultRole
   * PLAYER), unless the GM took it away.
   */
  hasPermission(permission) { return this.isGM || this.permissions[permission] !== false; }
  getFlag(scope, key) { return getPath(this.flags[scope] ?? {}, key); }
  /** Shared by every client's view of this user, as a user document's flags are. */
  async setFlag(scope, key, value) { (this.flags[scope] ??= {})[key] = value; return this; }
}

export class FakeActor {
  /** `disposition`: the prototype token's (Foundry's default, hostile, unless given). */
  constructor({ id, name, type = "character", system = {}, flags = {}, ownership = {}, uuid, world, disposition = -1 }) {
    Object.assign(this, { id, name, type, system, flags, ownership, world, documentName: "Actor" });
    this.prototypeToken = { disposition };
    this.uuid = uuid ?? `Actor.${id}`;
    this.updates = [];
    this.isToken = false;
    this.token = null;
  }
  toObject() { return structuredClone({ _id: this.id, name: this.name, type: this.type, system: this.system, flags: this.flags, ownership: this.ownership }); }
  testUserPermission(user, level) { return user.isGM || (level === "OWNER" && this.ownership[user.id] === 3) || this.ownership.default === 3; }
  get isOwner() { const u = this.world?.game?.user; return u ? this.testUserPermission(u, "OWNER") : false; }
  getFlag(scope, key) { return getPath(this.flags?.[scope] ?? {}, key); }
  async update(changes) {
    this.updates.push(structuredClone(changes));
    const data = { system: this.system, flags: this.flags, name: this.name };
    applyDotted(data, changes);
    this.system = data.system; this.flags = data.flags; this.name = data.name;
    return this;
  }
  /**
   * As Foundry's `Actor#getActiveTokens(linked, document)` (client/documents/actor.mjs,
   * v12 and v13): `[]` when the canvas is not ready, else only the tokens on the scene the
   * canvas shows (`canvas.scene`: here `world.canvas`, the GM's client's view), a
   * synthetic actor's own token only when it is there; placeables unless `document`.
   */
  getActiveTokens(linked = false, document = false) {
    const canvas = this.world?.canvas;
    if (!canvas?.ready) return [];
    const shown = this.isToken ? [this.token] : (this.world?.tokensOf(this) ?? []).filter((t) => !linked || t.actorLink);
    return shown.filter((t) => t.sceneId === canvas.sceneId && this.world.docs.has(t.uuid)).map((t) => (document ? t : t.object));
  }
}

export class FakeTokenDocument {
  /**
   * An unlinked token gets its own synthetic actor, a copy of the base actor that keeps
   * the base actor's name, as Foundry's does (the token's own name is the token's). Its
   * `disposition` is the actor's prototype token's unless given, as when Foundry places one.
   */
  constructor({ id, sceneId = "scene1", name, actor, actorLink, world, disposition }) {
    Object.assign(this, { id, name, actorLink, baseActor: actor, actorId: actor.id, world, sceneId, documentName: "Token" });
    this.disposition = disposition ?? actor.prototypeToken?.disposition ?? -1;
    this.uuid = `Scene.${sceneId}.Token.${id}`;
    if (actorLink) {
      this.actor = actor;
    } else {
      this.actor = new FakeActor({ id: actor.id, name: actor.name, type: actor.type, system: structuredClone(actor.system), flags: structuredClone(actor.flags), ownership: actor.ownership, uuid: `${this.uuid}.Actor.${actor.id}`, world, disposition: actor.prototypeToken?.disposition });
      this.actor.isToken = true;
      this.actor.token = this;
    }
  }
  /** The placeable drawn on the canvas; with `center` ({x, y}) when a test places it. */
  get object() { return { document: this, actor: this.actor, id: this.id, ...(this.center ? { center: this.center } : {}) }; }
  /** The Scene it is on (Foundry's `TokenDocument#parent`), with the tokens still there. */
  get parent() { return this.world.scene(this.sceneId); }
}

/** A combatant of the tracker: Foundry's `Combatant#token` and `Combatant#actor` getters. */
export class FakeCombatant {
  constructor({ id, token = null, actor = null, world }) {
    Object.assign(this, { id, world, documentName: "Combatant", tokenDocument: token });
    this.tokenId = token?.id ?? null;
    this.actorId = token?.actorId ?? actor?.id ?? null;
    this.sceneId = token ? token.uuid.split(".")[1] : null;
  }
  /** The TokenDocument on its scene, null when it is gone. */
  get token() { return this.tokenDocument && this.world.docs.has(this.tokenDocument.uuid) ? this.tokenDocument : null; }
  /** The token's actor (an unlinked token's synthetic one), else the world actor. */
  get actor() { return this.token?.actor ?? this.world.docs.get(`Actor.${this.actorId}`) ?? null; }
}

/**
 * A Combat as far as the module reads it, after Foundry's client Combat (v12/v13):
 * `round`, `turn`, `combatants` (a collection with `contents`), flags, and
 * `previous`/`current`, which `Combat#_onUpdate` sets (the state before the update in
 * `previous`) before the `updateCombat` hook fires. `update` keeps only the values that
 * changed (the server's diff), then fires `updateCombat(combat, changed, options,
 * userId)` on every connected client, the one that updated included. The tracker's
 * buttons: `startCombat` (round 1, no direction), `nextRound` (direction 1),
 * `previousRound` (direction -1), `nextTurn` (wraps to the next round with direction 1).
 */
export class FakeCombat {
  constructor({ id, world, server, combatants = [], round = 0, turn = null }) {
    Object.assign(this, { id, world, server, round, turn, flags: {}, documentName: "Combat" });
    this.uuid = `Combat.${id}`;
    const list = combatants.map((c, i) => new FakeCombatant({ id: c.id ?? `cbt${i}`, token: c.token ?? null, actor: c.actor ?? null, world }));
    this.combatants = { contents: list, get size() { return list.length; }, [Symbol.iterator]: () => list[Symbol.iterator]() };
    this.current = this.#state();
    this.previous = undefined;
  }
  #state() { return { round: this.round, turn: this.turn, tokenId: null, combatantId: null }; }
  getFlag(scope, key) { return getPath(this.flags?.[scope] ?? {}, key); }
  setFlag(scope, key, value) { return this.update({ [`flags.${scope}.${key}`]: value }); }
  async update(changes, options = {}) {
    const before = structuredClone({ round: this.round, turn: this.turn, flags: this.flags });
    const data = structuredClone(before);
    applyDotted(data, changes);
    const changed = {};
    for (const key of ["round", "turn"]) if (data[key] !== before[key]) changed[key] = data[key];
    if (JSON.stringify(data.flags) !== JSON.stringify(before.flags)) changed.flags = expandDotted(changes).flags;
    if (!Object.keys(changed).length) return this;
    const prior = this.#state();
    Object.assign(this, { round: data.round, turn: data.turn, flags: data.flags });
    if ("round" in changed || "turn" in changed) {
      this.previous = prior;
      this.current = this.#state();
    }
    const userId = this.world.game?.user?.id ?? null;
    for (const c of this.server?.clients ?? []) c.Hooks.callAll("updateCombat", this, structuredClone(changed), { diff: true, ...options }, userId);
    return this;
  }
  startCombat() { return this.update({ round: 1, turn: 0 }); }
  nextRound() { return this.update({ round: this.round + 1, turn: 0 }, { direction: 1, worldTime: { delta: 6 } }); }
  previousRound() { return this.update({ round: Math.max(this.round - 1, 0), turn: 0 }, { direction: -1, worldTime: { delta: -6 } }); }
  nextTurn() {
    const last = this.combatants.size - 1;
    if ((this.turn ?? 0) >= last) return this.nextRound();
    return this.update({ turn: (this.turn ?? 0) + 1 }, { direction: 1, worldTime: { delta: 0 } });
  }
}

/**
 * The world: documents by uuid, and what `fromUuid` resolves; its scenes (`game.scenes`:
 * every scene a token was placed on, or `addScene`), the active one (`activeSceneId`),
 * and `canvas`, what the GM's client (`game`) shows: `{ready, sceneId, controlled}`
 * (`ready: false` for a GM playing without the canvas; `controlled`, the tokens it
 * selected, as `canvas.tokens.controlled`).
 */
export class FakeWorld {
  constructor() {
    this.docs = new Map(); this.tokens = []; this.game = null;
    this.sceneIds = ["scene1"]; this.activeSceneId = "scene1"; this.scenesById = new Map();
    this.canvas = { ready: true, sceneId: "scene1", controlled: [] };
  }
  addScene(id) { if (!this.sceneIds.includes(id)) this.sceneIds.push(id); return this.scene(id); }
  /** A combat whose updates reach every client the server connects. */
  combat(spec) { return new FakeCombat({ ...spec, world: this }); }
  actor(spec) { const a = new FakeActor({ ...spec, world: this }); this.docs.set(a.uuid, a); return a; }
  token(spec) {
    const t = new FakeTokenDocument({ ...spec, world: this });
    this.addScene(t.sceneId);
    this.docs.set(t.uuid, t);
    this.docs.set(t.actor.uuid, t.actor);
    this.tokens.push(t);
    return t;
  }
  tokensOf(actor) { return this.tokens.filter((t) => t.baseActor === actor); }
  /**
   * A Scene as far as the module reads it: its id and its TokenDocuments (those not
   * deleted), `tokens.get(id)` as Foundry's embedded collection; one object per scene,
   * as Foundry's documents are.
   */
  scene(id) {
    if (!this.scenesById.has(id)) {
      const list = () => this.tokens.filter((t) => t.sceneId === id && this.docs.has(t.uuid));
      this.scenesById.set(id, {
        id, uuid: `Scene.${id}`, documentName: "Scene",
        get active() { return this.world.activeSceneId === id; },
        world: this,
        tokens: { get contents() { return list(); }, get: (tid) => list().find((t) => t.id === tid), filter: (fn) => list().filter(fn), [Symbol.iterator]: () => list()[Symbol.iterator]() },
      });
    }
    return this.scenesById.get(id);
  }
  /** `game.scenes`: every scene of the world, `get(id)`, `active`. */
  get scenes() {
    const world = this;
    const list = () => world.sceneIds.map((id) => world.scene(id));
    return {
      get: (id) => (world.sceneIds.includes(id) ? world.scene(id) : undefined),
      get contents() { return list(); },
      get active() { return world.sceneIds.includes(world.activeSceneId) ? world.scene(world.activeSceneId) : null; },
      filter: (fn) => list().filter(fn),
      find: (fn) => list().find(fn),
      [Symbol.iterator]: () => list()[Symbol.iterator](),
    };
  }
  fromUuid = async (uuid) => this.docs.get(uuid) ?? null;
}

/**
 * One server: delivers socket messages to other clients with the sender id, and runs user
 * queries as Foundry v13 does. The target client's core listener of the `userQuery` socket
 * event calls the query handler with `{timeout}` only; the module's own listeners of that
 * event get the sender's id from the server, in the same dispatch, with the same data
 * object. `passQuerySender`: a core that also names the sender in the handler's options;
 * `userQueryEvent: false`: one whose event modules cannot read (nothing names the sender).
 */
export class FakeServer {
  constructor({ passQuerySender = false, userQueryEvent = true } = {}) {
    this.clients = []; this.passQuerySender = passQuerySender; this.userQueryEvent = userQueryEvent; this.log = []; this.queries = 0;
  }
  connect(client) { this.clients.push(client); }
  emit(fromUserId, channel, message) {
    this.log.push({ fromUserId, channel, message: structuredClone(message) });
    for (const c of this.clients) {
      if (c.user.id === fromUserId) continue;
      // JSON round trip: what crosses the wire is data only.
      const copy = JSON.parse(JSON.stringify(message));
      setTimeout(() => { for (const fn of c.listeners.get(channel) ?? []) fn(copy, fromUserId); }, 0);
    }
  }
  /**
   * The receiving side of `User#query` as Foundry v13's (client/documents/collections/
   * users.mjs `#handleUserQuery`): a client with no handler for the query throws
   * "Received invalid User query" and never acknowledges, so the query never settles
   * here (`unanswered` counts them); a handler that throws is acknowledged as rejected
   * and `User#query` throws a plain Error with its message. `rejectQueries` (a reason):
   * every query is answered rejected, as a core or server failure would.
   */
  async query(fromUserId, toUserId, name, data, options) {
    const c = this.clients.find((x) => x.user.id === toUserId);
    const handler = c?.CONFIG.queries?.[name];
    this.log.push({ query: name, fromUserId, toUserId });
    if (this.rejectQueries) throw new Error(this.rejectQueries);
    if (!handler) {
      this.unanswered = (this.unanswered ?? 0) + 1;
      return new Promise(() => {});
    }
    // JSON round trip: what crosses the wire is data only; one object for every listener.
    const queryData = JSON.parse(JSON.stringify(data));
    const queryOptions = { timeout: options?.timeout };
    const queryId = `q${++this.queries}`;
    const opts = this.passQuerySender ? { ...queryOptions, user: c.game.users.get(fromUserId) } : { ...queryOptions };
    // The core's listener first (registered when the game starts), then the module's.
    let result;
    try { result = handler(queryData, opts); } catch (error) { result = Promise.reject(error); }
    if (this.userQueryEvent) {
      for (const fn of c.listeners.get("userQuery") ?? []) fn(fromUserId, queryId, name, queryData, queryOptions, () => {});
    }
    let value;
    try {
      value = await result;
    } catch (error) {
      throw new Error(error?.message ?? String(error));
    }
    return JSON.parse(JSON.stringify(value ?? null));
  }
}

/** The users collection Foundry exposes as `game.users`. */
export function makeUsers(list) {
  const byId = new Map(list.map((u) => [u.id, u]));
  return {
    get: (id) => byId.get(id),
    contents: list,
    [Symbol.iterator]: () => list[Symbol.iterator](),
    filter: (fn) => list.filter(fn),
    find: (fn) => list.find(fn),
    get activeGM() { return list.filter((u) => u.isGM && u.active).sort((a, b) => a.id.localeCompare(b.id))[0] ?? null; },
  };
}

/** Foundry's ApplicationV2 as far as a settings menu's type needs it: a class to extend. */
export class FakeApplicationV2 {
  constructor(options = {}) { this.options = options; }
  render() { return this; }
}

/** Settings with registration records (scope, config, default) and values per client. */
/** The clients' settings by the world settings they share: each hears a world setting's change. */
const SHARING = new WeakMap();

/**
 * Settings as one client has them. A world setting's change calls its `onChange` on every
 * client that shares the world settings, as Foundry's Setting document does (v12 and v13
 * `_onCreate`/`_onUpdate`: `onChange(value, options, userId)`, with the options the writer
 * gave `set`), only when the value changed; here before `set` returns, on every client.
 */
export class FakeSettings {
  /**
   * @param {Map} shared  the world settings this client shares with the others
   * @param {{user?:{isGM:boolean, name?:string}, notifyError?:(message:string)=>void}} [options]
   *   `user`: the client's user; a world setting it may not modify is refused (`set`),
   *   shown with `notifyError` (the client's `ui.notifications.error`)
   */
  constructor(shared, { user = null, notifyError = null } = {}) {
    this.registered = new Map(); this.menus = new Map(); this.values = new Map(); this.shared = shared; this.user = user; this.notifyError = notifyError;
    if (shared) {
      if (!SHARING.has(shared)) SHARING.set(shared, new Set());
      SHARING.get(shared).add(this);
    }
  }
  register(ns, key, spec) { this.registered.set(`${ns}.${key}`, spec); }
  registerMenu(ns, key, spec) {
    // As Foundry v12 and v13 do: a menu type must be a FormApplication or ApplicationV2 subclass.
    if (!(spec.type?.prototype instanceof FakeApplicationV2)) {
      throw new Error("You must provide a menu type that is a FormApplication or ApplicationV2 instance or subclass");
    }
    this.menus.set(`${ns}.${key}`, spec);
  }
  get(ns, key) {
    const id = `${ns}.${key}`;
    if (id === "core.rollMode") return this.values.get(id) ?? "publicroll";
    const spec = this.registered.get(id);
    if (!spec) throw new Error(`setting ${id} is not registered`);
    const store = spec.scope === "world" ? this.shared : this.values;
    return store.has(id) ? structuredClone(store.get(id)) : structuredClone(spec.default);
  }
  /**
   * A world setting is a Setting document: only a user with SETTINGS_MODIFY may create or
   * update it (BaseSetting's create/update permission; by default the assistant GM and
   * the GM roles), so a player's client is refused before anything changes, as Foundry's
   * `Document#update` refuses a user who may not modify the document. The refusal comes
   * back as the server's error: Foundry's `SocketInterface` shows it
   * (`ui.notifications.error`) and then rejects the promise, so a caller's `catch` cannot
   * keep the player from seeing it. (A player given SETTINGS_MODIFY is not modelled.)
   */
  async set(ns, key, value, options = {}) {
    const id = `${ns}.${key}`;
    const spec = this.registered.get(id);
    const world = spec?.scope === "world";
    if (world && this.user && !this.user.isGM) {
      const message = `User ${this.user.name ?? this.user.id} lacks permission to update Setting [${id}]`;
      this.notifyError?.(message);
      throw new Error(message);
    }
    const store = world ? this.shared : this.values;
    const changed = JSON.stringify(store.get(id)) !== JSON.stringify(value);
    store.set(id, structuredClone(value));
    if (world && changed) {
      for (const client of SHARING.get(this.shared) ?? []) client.registered.get(id)?.onChange?.(structuredClone(value), options);
    }
    return value;
  }
}

export class FakeRoll {
  constructor(data) { this.data = data; this.total = data.total; this.formula = data.formula; }
  static fromData(data) { FakeRoll.made.push(data); return new FakeRoll(data); }
  toJSON() { return this.data; }
}
FakeRoll.made = [];

/**
 * ChatMessage as Foundry's client document behaves for the client that posts it (`game`:
 * its user, its users, its `core.rollMode`, its release), after
 * client/documents/chat-message.mjs and common/documents/chat-message.mjs of v12 and v13:
 * - `applyRollMode(chatData, rollMode)` reads the posting client's user: self whispers to
 *   `[game.user.id]`, private and blind to the GMs (v13: unless a whisper is already
 *   set), public to nobody; `blind` for blind alone.
 * - `create(data, options)`: `author` is `game.user.id` unless given (`user` is migrated to
 *   `author`, deprecated since v12: recorded in `deprecations`); a player may not author
 *   for another user (BaseChatMessage `#canCreate`, "You cannot impersonate a different
 *   user"), a GM may. Then `_preCreate` on a message with rolls: v13 applies
 *   `options.rollMode` when given; v12 applies it, or the posting client's own
 *   `core.rollMode` when no whisper is set.
 * - a message's `visibleTo(userId)` and `contentVisibleTo(userId)` are Foundry's
 *   `visible` and `isContentVisible` read by that user; `seenBy(userId)` says what that
 *   user's chat log shows: "hidden", "private" (a roll "<author> rolled privately"),
 *   or "content".
 * - `getSpeaker({scene, actor, token, alias})`: a token's, an actor's (its active token on
 *   the scene shown, else the actor), else the posting client's controlled token
 *   (`world.canvas.controlled`), else its user's character, else the user.
 */
export function makeChatMessage({ game = null, world = null, gmIds = ["gm0000"], selfId = "gm0000", generation = 12 } = {}) {
  // Without a client's game (unit tests of the poster): a GM list and a posting user.
  const g = game ?? {
    user: { id: selfId, isGM: gmIds.includes(selfId), character: null },
    users: { filter: (fn) => gmIds.map((id) => ({ id, isGM: true })).filter(fn), get: (id) => ({ id, isGM: gmIds.includes(id) }) },
    settings: { get: () => "publicroll" },
    release: { generation },
  };
  const gen = () => Number(g.release?.generation ?? 12);
  const isGM = (id) => Boolean(g.users.get(id)?.isGM);
  const ChatMessage = {
    created: [],
    deprecations: [],
    async create(data, options = {}) {
      const stored = { ...data, rolls: data.rolls ?? [], ...(data.whisper ? { whisper: [...data.whisper] } : {}) };
      if ("user" in stored) {
        ChatMessage.deprecations.push("ChatMessage#user is deprecated in favor of ChatMessage#author");
        stored.author ??= stored.user;
        delete stored.user;
      }
      stored.author ??= g.user.id;
      stored.whisper ??= [];
      stored.blind ??= false;
      if (!g.user.isGM && stored.author !== g.user.id) throw new Error("You cannot impersonate a different user");
      // ChatMessage#_preCreate, for messages with rolls only.
      if (stored.rolls.length) {
        if (gen() >= 13) { if (options.rollMode) ChatMessage.applyRollMode(stored, options.rollMode); }
        else if (options.rollMode || !(stored.whisper.length > 0)) ChatMessage.applyRollMode(stored, options.rollMode || "roll");
      }
      // As a ChatMessage document: its flags, and `update` with dotted paths (recorded).
      const m = {
        id: `msg${ChatMessage.created.length + 1}`, data: stored, options, updates: [],
        get flags() { return stored.flags; },
        get author() { return stored.author; },
        async update(changes) { this.updates.push(changes); applyDotted(stored, changes); return this; },
        visibleTo(userId) {
          if (!stored.whisper.length || stored.rolls.length) return true;
          return stored.author === userId || stored.whisper.includes(userId);
        },
        contentVisibleTo(userId) {
          if (!stored.rolls.length) return this.visibleTo(userId);
          if (!stored.whisper.length) return true;
          return stored.whisper.includes(userId) || (stored.author === userId && !stored.blind);
        },
        seenBy(userId) {
          if (!this.visibleTo(userId)) return "hidden";
          return this.contentVisibleTo(userId) ? "content" : "private";
        },
      };
      ChatMessage.created.push(m);
      return m;
    },
    applyRollMode(chatData, rollMode) {
      if (rollMode === "roll") rollMode = g.settings.get("core", "rollMode");
      const gms = g.users.filter((u) => u.isGM).map((u) => u.id);
      if (rollMode === "publicroll") chatData.whisper = [];
      else if (rollMode === "selfroll") chatData.whisper = [g.user.id];
      else if (rollMode === "gmroll" || rollMode === "blindroll") {
        chatData.whisper = gen() >= 13 && chatData.whisper?.length ? chatData.whisper : gms;
      }
      chatData.blind = rollMode === "blindroll";
      return chatData;
    },
    getSpeaker({ scene, actor, token, alias } = {}) {
      const fromToken = (t) => ({ scene: t.parent?.id ?? null, token: t.id, actor: t.actor?.id ?? null, alias: alias || t.name });
      const shown = world?.canvas?.ready ? world.scene(world.canvas.sceneId) : null;
      const fromActor = (a) => ({ scene: (scene ?? shown)?.id ?? null, actor: a.id, token: null, alias: alias || a.name });
      if (token) return fromToken(token);
      if (actor?.isToken) return fromToken(actor.token);
      if (actor) {
        const tokens = actor.getActiveTokens?.(false, true) ?? [];
        return tokens.length ? fromToken(tokens[0]) : fromActor(actor);
      }
      const controlled = world?.canvas?.ready ? world.canvas.controlled ?? [] : [];
      if (controlled.length) return fromToken(controlled[0].document ?? controlled[0]);
      const char = g.user.character;
      if (char) {
        const tokens = char.getActiveTokens?.(false, true) ?? [];
        return tokens.length ? fromToken(tokens[0]) : fromActor(char);
      }
      return { scene: (scene ?? shown)?.id ?? null, actor: null, token: null, alias: alias || g.user.name };
    },
  };
  return ChatMessage;
}

const ENTITIES = { "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&amp;": "&" };

/** An HTML text as it reads once rendered: its character entities as their characters. */
export function htmlDecoded(html) {
  return String(html).replace(/&(lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e]);
}

/**
 * One connected client: its own `game` (user, settings, socket), CONFIG and hooks, all
 * sharing the world's documents, the world settings and the server.
 */
export function makeClient({ server, world, users, user, generation = 12, worldSettings }) {
  const listeners = new Map();
  const client = { user, listeners };
  const CONFIG = generation >= 13 ? { queries: {} } : {};
  // A notice's text as the user reads it (Foundry v12 renders it as HTML, v13 cleans it
  // as HTML: entities read as their characters), and each one's `html` as it was given;
  // `given`: every notice in order as `{kind, text, options}`, its options (`permanent`:
  // it stays until dismissed) as the module passed them, undefined when none.
  // (`html` and `given` are not enumerable: tests compare the notes the user read.)
  const notes = Object.defineProperties({ info: [], warn: [], error: [] }, { html: { value: [] }, given: { value: [] } });
  const notice = (kind) => (m, options) => {
    notes.html.push(String(m));
    notes[kind].push(htmlDecoded(m));
    notes.given.push({ kind, text: htmlDecoded(m), options });
  };
  // Each client sees its own user objects (v13: with `query` sending as this client).
  const views = users.contents.map((u) => {
    const v = Object.create(u);
    // As Foundry v13's User#query (client/documents/user.mjs): refused before sending a
    // query this client has not registered, by a user without QUERY_USER, or to a user
    // who is not active.
    if (generation >= 13) {
      v.query = async (name, data, options) => {
        if (!(name in CONFIG.queries)) throw new Error(`User query '${name}' is not registered`);
        if (!clientUsers.get(user.id).hasPermission("QUERY_USER")) throw new Error("You do not have permission to query users");
        if (!v.active) throw new Error(`User [${u.id}] is not active`);
        return server.query(user.id, u.id, name, data, options);
      };
    }
    return v;
  });
  const clientUsers = makeUsers(views);
  const game = {
    release: { generation },
    user: clientUsers.get(user.id),
    users: clientUsers,
    i18n: makeI18n(),
    settings: new FakeSettings(worldSettings, { user, notifyError: (m) => client.ui.notifications.error(m) }),
    socket: {
      on: (channel, fn) => { if (!listeners.has(channel)) listeners.set(channel, []); listeners.get(channel).push(fn); },
      emit: (channel, message) => server.emit(user.id, channel, message),
    },
    modules: new Map([["mindscape", { id: "mindscape", active: true }]]),
    system: { id: "dnd5e" },
    /** The world's scenes (`game.scenes`), shared by every client. */
    get scenes() { return world.scenes; },
  };
  Object.assign(client, {
    game, CONFIG, Hooks: new FakeHooks(), ChatMessage: makeChatMessage({ game, world }), Roll: FakeRoll,
    ui: { notifications: { info: notice("info"), warn: notice("warn"), error: notice("error") } },
    notes,
    fromUuid: world.fromUuid,
  });
  // The world's messages as this client's collection (`game.messages.filter`): those it created.
  game.messages = client.ChatMessage.created;
  server.connect(client);
  return client;
}

/**
 * A fake daemon behind `fetch`: `methods[name](params)` returns a result or throws
 * `{code, message, data}`; every call is recorded.
 */
export function fakeDaemon(methods, { token = "secret-token" } = {}) {
  const calls = [];
  const fetch = async (url, init) => {
    if (init.headers.Authorization !== `Bearer ${token}`) return { status: 401, ok: false, json: async () => ({}) };
    const body = JSON.parse(init.body);
    recordRequest("foundry", body);
    calls.push({ url, method: body.method, params: body.params });
    const fn = methods[body.method];
    if (!fn) return { status: 200, ok: true, json: async () => ({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "Method not found" } }) };
    try {
      const result = await fn(body.params ?? {}, calls);
      return { status: 200, ok: true, json: async () => ({ jsonrpc: "2.0", id: body.id, result }) };
    } catch (error) {
      return { status: 200, ok: true, json: async () => ({ jsonrpc: "2.0", id: body.id, error }) };
    }
  };
  return { fetch, calls };
}

/** Install one client's globals on globalThis (for code that reads Foundry's globals). */
export function installGlobals(client) {
  Object.assign(globalThis, {
    game: client.game, Hooks: client.Hooks, CONFIG: client.CONFIG, ui: client.ui,
    ChatMessage: client.ChatMessage, Roll: client.Roll, fromUuid: client.fromUuid,
    foundry: { applications: { api: { ApplicationV2: FakeApplicationV2 } } },
  });
}

/** Wait for queued timers/promises to run (the fake socket delivers on a timer). */
export const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));
