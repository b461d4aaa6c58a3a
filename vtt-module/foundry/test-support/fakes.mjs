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
  }
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
  /** As Foundry's: every token of this actor on the scene (linked or not), unless `linked`. */
  getActiveTokens(linked = false) {
    if (this.isToken) return [this.token];
    return (this.world?.tokensOf(this) ?? []).filter((t) => !linked || t.actorLink);
  }
}

export class FakeTokenDocument {
  /**
   * An unlinked token gets its own synthetic actor, a copy of the base actor that keeps
   * the base actor's name, as Foundry's does (the token's own name is the token's). Its
   * `disposition` is the actor's prototype token's unless given, as when Foundry places one.
   */
  constructor({ id, sceneId = "scene1", name, actor, actorLink, world, disposition }) {
    Object.assign(this, { id, name, actorLink, baseActor: actor, actorId: actor.id, world, documentName: "Token" });
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
  get parent() { return this.world.scene(this.uuid.split(".")[1]); }
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

/** The world: documents by uuid, and what `fromUuid` resolves. */
export class FakeWorld {
  constructor() { this.docs = new Map(); this.tokens = []; this.game = null; }
  /** A combat whose updates reach every client the server connects. */
  combat(spec) { return new FakeCombat({ ...spec, world: this }); }
  actor(spec) { const a = new FakeActor({ ...spec, world: this }); this.docs.set(a.uuid, a); return a; }
  token(spec) {
    const t = new FakeTokenDocument({ ...spec, world: this });
    this.docs.set(t.uuid, t);
    this.docs.set(t.actor.uuid, t.actor);
    this.tokens.push(t);
    return t;
  }
  tokensOf(actor) { return this.tokens.filter((t) => t.baseActor === actor); }
  /** A Scene as far as the module reads it: its id and its TokenDocuments (those not deleted). */
  scene(id) {
    const list = () => this.tokens.filter((t) => t.uuid.split(".")[1] === id && this.docs.has(t.uuid));
    return { id, uuid: `Scene.${id}`, documentName: "Scene", tokens: { get contents() { return list(); }, [Symbol.iterator]: () => list()[Symbol.iterator]() } };
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
  async query(fromUserId, toUserId, name, data, options) {
    const c = this.clients.find((x) => x.user.id === toUserId);
    const handler = c?.CONFIG.queries?.[name];
    if (!handler) throw new Error(`no query ${name}`);
    this.log.push({ query: name, fromUserId, toUserId });
    // JSON round trip: what crosses the wire is data only; one object for every listener.
    const queryData = JSON.parse(JSON.stringify(data));
    const queryOptions = { timeout: options?.timeout };
    const queryId = `q${++this.queries}`;
    const opts = this.passQuerySender ? { ...queryOptions, user: c.game.users.get(fromUserId) } : { ...queryOptions };
    // The core's listener first (registered when the game starts), then the module's.
    const result = handler(queryData, opts);
    if (this.userQueryEvent) {
      for (const fn of c.listeners.get("userQuery") ?? []) fn(fromUserId, queryId, name, queryData, queryOptions, () => {});
    }
    return JSON.parse(JSON.stringify(await result));
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
export class FakeSettings {
  constructor(shared) { this.registered = new Map(); this.menus = new Map(); this.values = new Map(); this.shared = shared; }
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
  async set(ns, key, value) {
    const id = `${ns}.${key}`;
    const spec = this.registered.get(id);
    (spec?.scope === "world" ? this.shared : this.values).set(id, structuredClone(value));
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
 * ChatMessage as far as the module uses it. `applyRollMode(chatData, rollMode)` does what
 * Foundry's static method does (v12/v13): whisper to the GMs for gmroll/blindroll, blind
 * for blindroll, whisper to oneself for selfroll. `create` records what it was given; like
 * Foundry's `_preCreate`, it applies `options.rollMode` itself only to roll messages.
 */
export function makeChatMessage({ gmIds = ["gm0000"], selfId = "gm0000" } = {}) {
  return {
    created: [],
    async create(data, options) {
      const stored = { ...data };
      if (data.rolls?.length && options?.rollMode) this.applyRollMode(stored, options.rollMode);
      // As a ChatMessage document: its flags, and `update` with dotted paths (recorded).
      const m = {
        id: `msg${this.created.length + 1}`, data: stored, options, updates: [],
        get flags() { return stored.flags; },
        async update(changes) { this.updates.push(changes); applyDotted(stored, changes); return this; },
      };
      this.created.push(m);
      return m;
    },
    applyRollMode(chatData, rollMode) {
      if (rollMode === "gmroll" || rollMode === "blindroll") chatData.whisper = [...gmIds];
      else if (rollMode === "selfroll") chatData.whisper = [selfId];
      else if (rollMode === "publicroll") chatData.whisper = [];
      chatData.blind = rollMode === "blindroll";
      return chatData;
    },
    getSpeaker({ actor, token, alias } = {}) { return { actor: actor?.id ?? null, token: token?.id ?? null, alias: alias ?? token?.name ?? actor?.name }; },
  };
}

/**
 * One connected client: its own `game` (user, settings, socket), CONFIG and hooks, all
 * sharing the world's documents, the world settings and the server.
 */
export function makeClient({ server, world, users, user, generation = 12, worldSettings }) {
  const listeners = new Map();
  const client = { user, listeners };
  const CONFIG = generation >= 13 ? { queries: {} } : {};
  const notes = { info: [], warn: [], error: [] };
  // Each client sees its own user objects (v13: with `query` sending as this client).
  const views = users.contents.map((u) => {
    const v = Object.create(u);
    if (generation >= 13) v.query = (name, data, options) => server.query(user.id, u.id, name, data, options);
    return v;
  });
  const clientUsers = makeUsers(views);
  const game = {
    release: { generation },
    user: clientUsers.get(user.id),
    users: clientUsers,
    i18n: makeI18n(),
    settings: new FakeSettings(worldSettings),
    socket: {
      on: (channel, fn) => { if (!listeners.has(channel)) listeners.set(channel, []); listeners.get(channel).push(fn); },
      emit: (channel, message) => server.emit(user.id, channel, message),
    },
    modules: new Map([["mindscape", { id: "mindscape", active: true }]]),
    system: { id: "dnd5e" },
  };
  Object.assign(client, {
    game, CONFIG, Hooks: new FakeHooks(), ChatMessage: makeChatMessage({ gmIds: users.contents.filter((u) => u.isGM).map((u) => u.id), selfId: user.id }), Roll: FakeRoll,
    ui: { notifications: { info: (m) => notes.info.push(m), warn: (m) => notes.warn.push(m), error: (m) => notes.error.push(m) } },
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
