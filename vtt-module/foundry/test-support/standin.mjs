/**
 * A minimal stand-in for Foundry's client API, for the browser harness: just enough of
 * game (users, settings, i18n, socket, modules), Hooks, ui.notifications, CONFIG,
 * ChatMessage, Roll.fromData, fromUuid, renderTemplate, DialogV2 and a Combat for the
 * module's real files to run in a page, with documents built from real dnd5e actor data.
 */
import { compile } from "./handlebars-lite.mjs";

const byPath = (obj, key) => key.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);

// As Foundry's Document#update: dotted keys expanded in order (expandObject), then merged
// (mergeObject with performDeletions): objects key by key, "-=key" deletes, the rest
// replaces.
const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function expandDotted(changes) {
  const out = {};
  for (const [key, value] of Object.entries(changes)) {
    const parts = key.split(".");
    let obj = out;
    for (const p of parts.slice(0, -1)) { if (!isPlainObject(obj[p])) obj[p] = {}; obj = obj[p]; }
    obj[parts[parts.length - 1]] = isPlainObject(value) ? expandDotted(value) : structuredClone(value);
  }
  return out;
}

function mergeDeleting(target, changes) {
  for (const [key, value] of Object.entries(changes)) {
    if (key.startsWith("-=")) delete target[key.slice(2)];
    else if (isPlainObject(value)) { if (!isPlainObject(target[key])) target[key] = {}; mergeDeleting(target[key], value); }
    else target[key] = value;
  }
  return target;
}

export function applyDotted(target, changes) {
  mergeDeleting(target, expandDotted(changes));
}

class Actor {
  constructor(data, uuid) { this.data = structuredClone(data); this.uuid = uuid; this.documentName = "Actor"; this.isToken = false; this.token = null; this.updates = []; }
  get id() { return this.data._id; }
  get name() { return this.data.name; }
  get flags() { return this.data.flags; }
  // The token a new token of this actor is placed from (Foundry's default disposition: hostile).
  get prototypeToken() { return { disposition: -1, ...(this.data.prototypeToken ?? {}) }; }
  get isOwner() { return true; }
  toObject() { return structuredClone(this.data); }
  testUserPermission(user) { return Boolean(user.isGM); }
  getFlag(scope, key) { return byPath(this.data.flags?.[scope] ?? {}, key); }
  // As Foundry's Actor#getActiveTokens(linked, document) (client/documents/actor.mjs):
  // [] without a ready canvas, else the tokens on the scene the canvas shows only;
  // placeables unless `document`.
  getActiveTokens(linked = false, document = false) {
    const canvas = window.canvas;
    if (!canvas?.ready) return [];
    const shown = window.harness.tokens.filter((t) => t.document.parent === canvas.scene && this.docsOf(t.document) && (!linked || t.document.actorLink));
    return shown.map((t) => (document ? t.document : t));
  }
  // Whether a token document is this actor's: a synthetic actor its own token only.
  docsOf(doc) { return this.isToken ? doc === this.token : doc.baseActor === this; }
  async update(changes) {
    this.updates.push(structuredClone(changes));
    applyDotted(this.data, changes);
    window.harness.log(`update ${this.uuid} ${JSON.stringify(changes)}`);
    return this;
  }
}

// The harness's one scene, as Foundry's `TokenDocument#parent`: its token documents.
const scene = { id: "harness", uuid: "Scene.harness", documentName: "Scene", tokens: { get contents() { return window.harness.tokens.map((t) => t.document); }, get(id) { return this.contents.find((d) => d.id === id); }, [Symbol.iterator]() { return this.contents[Symbol.iterator](); } } };

class TokenDocument {
  get parent() { return scene; }
  // Placed as Foundry places a token: with its actor's prototype disposition unless given.
  constructor({ id, name, actor, actorLink, img, disposition }) {
    Object.assign(this, { id, name, actorLink, baseActor: actor, actorId: actor.id, img, documentName: "Token" });
    this.disposition = disposition ?? actor.prototypeToken.disposition;
    this.uuid = `Scene.harness.Token.${id}`;
    if (actorLink) this.actor = actor;
    else {
      this.actor = new Actor(actor.toObject(), `${this.uuid}.Actor.${actor.id}`);
      this.actor.isToken = true;
      // The copy keeps its base actor's name, as Foundry's synthetic actor does.
      this.actor.token = this;
    }
  }
}

/**
 * DialogV2 as Foundry renders it: a <dialog> holding a <form> with the content and footer
 * buttons, registered in `foundry.applications.instances` under the element's id. A
 * button resolves `wait` to `(await callback(...)) ?? action`, as DialogV2#_onSubmit does
 * (so Cancel with `callback: () => null` answers "cancel"). The render callback gets the
 * application in v13 and the <dialog> element in v12, whose own close() only hides it.
 * Content: v13 uses an element's inner HTML as it is, and cleans a string with
 * `foundry.utils.cleanHTML`, whose rules the stand-in does not know: it takes the worst
 * case for our dialogs and strips every `data-*` attribute from a string, so that a
 * dialog that reached v13 as a string would fail its tests. v12 writes its string as it
 * is (an element there would show as "[object HTMLDivElement]").
 */
function dialogContentHtml(content, generation) {
  if (generation < 13) return String(content);
  if (typeof content !== "string") return content.innerHTML;
  const holder = document.createElement("div");
  holder.innerHTML = content;
  holder.querySelectorAll("*").forEach((el) => [...el.attributes].filter((a) => a.name.startsWith("data-")).forEach((a) => el.removeAttribute(a.name)));
  return holder.innerHTML;
}
const instances = new Map();
class DialogV2 {
  static generation = 13;
  /** The z-index of the window brought to the front last (above the CSS's 10). */
  static front = 10;
  static wait({ window: win = {}, content = "", buttons = [], render, rejectClose = false, classes = [], position = {} }) {
    return new Promise((resolve, reject) => {
      const el = document.createElement("dialog");
      // Stack dialogs a little apart, as Foundry cascades windows.
      const open = document.querySelectorAll("dialog.application").length;
      el.style.top = `${60 + 46 * open}px`;
      el.style.left = `${440 + 46 * open}px`;
      el.className = ["application", "dialog", ...classes].join(" ");
      el.id = `dialog-${Math.random().toString(36).slice(2)}`;
      if (position.width) el.style.width = `${position.width}px`;
      el.innerHTML = `<header class="window-header"><h1 class="window-title">${win.title ?? ""}</h1></header>
        <form class="dialog-form standard-form" autocomplete="off"><div class="dialog-content standard-form">${dialogContentHtml(content, DialogV2.generation)}</div>
        <footer class="form-footer">${buttons.map((b) => `<button type="submit" data-action="${b.action}"${b.default ? " autofocus" : ""}><i class="${b.icon ?? ""}"></i> ${b.label}</button>`).join("")}</footer></form>`;
      document.body.append(el);
      const finish = () => { app.closed = true; instances.delete(el.id); el.remove(); };
      const app = {
        id: el.id,
        element: el,
        closed: false,
        close: async () => { if (app.closed) return; finish(); if (rejectClose) reject(new Error("closed")); else resolve(null); },
      };
      instances.set(el.id, app);
      const form = el.querySelector("form");
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const button = event.submitter;
        const spec = buttons.find((b) => b.action === button?.dataset.action);
        const value = (await spec?.callback?.(event, button, el)) ?? spec?.action;
        finish();
        resolve(value);
      });
      // As Foundry brings a window to the front when it is pressed (bringToFront): a
      // dialog opened later may cover one opened before it.
      el.addEventListener("pointerdown", () => { el.style.zIndex = String(++DialogV2.front); });
      el.show();
      render?.(new Event("render"), DialogV2.generation >= 13 ? app : el);
    });
  }
}

/**
 * ApplicationV2 as far as the encounter panel uses it: DEFAULT_OPTIONS, one Handlebars
 * part, `data-action` clicks dispatched to `options.actions` with `this` = the app.
 */
class ApplicationV2 {
  static DEFAULT_OPTIONS = {};
  constructor(options = {}) {
    const d = this.constructor.DEFAULT_OPTIONS;
    this.options = { ...d, ...options, actions: { ...(d.actions ?? {}) } };
    this.element = null;
  }
  /** Whether the window is open (ApplicationV2#rendered). */
  get rendered() { return this.element !== null; }
  async render(options) {
    // A closed window is drawn only when forced (v13 returns before preparing anything).
    if (!this.element && !options?.force) return this;
    const context = await this._prepareContext(options);
    const html = await window.foundry.applications.handlebars.renderTemplate(this.constructor.PARTS.body.template, context);
    if (!this.element) {
      const el = document.createElement("div");
      el.id = this.options.id;
      el.className = ["application", ...(this.options.classes ?? [])].join(" ");
      el.innerHTML = `<header class="window-header"><h1 class="window-title">${window.game.i18n.localize(this.options.window?.title ?? "")}</h1></header><section class="window-content"></section>`;
      el.addEventListener("click", (event) => {
        const target = event.target.closest("[data-action]");
        const fn = target && this.options.actions[target.dataset.action];
        if (fn) { event.preventDefault(); fn.call(this, event, target); }
      });
      document.body.append(el);
      this.element = el;
    }
    this.element.querySelector(".window-content").innerHTML = html;
    this._onRender?.(context, options);
    window.harness.panelRenders = (window.harness.panelRenders ?? 0) + 1;
    return this;
  }
  async close() { this.element?.remove(); this.element = null; }
}
const HandlebarsApplicationMixin = (Base) => class extends Base {};

/**
 * The combat tracker's Combat as the module reads it: combatants with `token` and
 * `actor`, flags, and `previous` set to the state before an update before the
 * `updateCombat(combat, changed, options, userId)` hook fires (Foundry's
 * `Combat#_onUpdate`); `changed` holds only what changed. `startCombat` passes no
 * direction, `nextRound` direction 1, `previousRound` direction -1.
 */
class Combat {
  constructor(tokens) {
    this.id = "harnessCombat";
    this.round = 0;
    this.turn = null;
    this.flags = {};
    this.previous = undefined;
    const list = tokens.map((t, i) => ({ id: `cbt${i}`, tokenId: t.id, actorId: t.document.actorId, token: t.document, get actor() { return this.token.actor; } }));
    this.combatants = { contents: list, get size() { return list.length; }, [Symbol.iterator]: () => list[Symbol.iterator]() };
  }
  getFlag(scope, key) { return byPath(this.flags?.[scope] ?? {}, key); }
  setFlag(scope, key, value) { return this.update({ [`flags.${scope}.${key}`]: value }); }
  async update(changes, options = {}) {
    const before = structuredClone({ round: this.round, turn: this.turn, flags: this.flags });
    const data = structuredClone(before);
    applyDotted(data, changes);
    const changed = {};
    for (const key of ["round", "turn"]) if (data[key] !== before[key]) changed[key] = data[key];
    if (JSON.stringify(data.flags) !== JSON.stringify(before.flags)) changed.flags = expandDotted(changes).flags;
    if (!Object.keys(changed).length) return this;
    if ("round" in changed || "turn" in changed) this.previous = { round: before.round, turn: before.turn, tokenId: null, combatantId: null };
    Object.assign(this, { round: data.round, turn: data.turn, flags: data.flags });
    window.Hooks.callAll("updateCombat", this, changed, { diff: true, ...options }, window.game.user.id);
    return this;
  }
  startCombat() { return this.update({ round: 1, turn: 0 }); }
  nextRound() { return this.update({ round: this.round + 1, turn: 0 }, { direction: 1, worldTime: { delta: 6 } }); }
  previousRound() { return this.update({ round: Math.max(this.round - 1, 0), turn: 0 }, { direction: -1, worldTime: { delta: -6 } }); }
}

/** Build the page's Foundry: returns the harness handle tests drive. */
export async function setUp({ generation = 13, actors, moduleBase = "/modules/mindscape" }) {
  DialogV2.generation = generation;
  const en = await (await fetch(`${moduleBase}/lang/en.json`)).json();
  const localize = (k) => { const v = byPath(en, k); return typeof v === "string" ? v : k; };
  const i18n = {
    localize,
    has: (k) => typeof byPath(en, k) === "string",
    format: (k, data = {}) => localize(k).replace(/{[^}]+}/g, (m) => String(data[m.slice(1, -1)])),
  };
  const hooks = new Map();
  const Hooks = {
    on: (n, f) => { (hooks.get(n) ?? hooks.set(n, []).get(n)).push(f); },
    once: (n, f) => Hooks.on(n, f),
    callAll: (n, ...a) => { window.harness.hooksCalled.push(n); for (const f of hooks.get(n) ?? []) f(...a); return true; },
    call: (n, ...a) => Hooks.callAll(n, ...a),
  };
  const gm = { id: "gm0000000000001", name: "Gamemaster", isGM: true, active: true, targets: new Set() };
  const users = [gm];
  const registered = new Map();
  const values = new Map();
  const game = {
    release: { generation },
    user: gm,
    users: { get: (id) => users.find((u) => u.id === id), contents: users, filter: (f) => users.filter(f), find: (f) => users.find(f), [Symbol.iterator]: () => users[Symbol.iterator](), get activeGM() { return gm; } },
    i18n,
    settings: {
      register: (ns, key, spec) => registered.set(`${ns}.${key}`, spec),
      // As Foundry does: a menu type must be a FormApplication or ApplicationV2 subclass.
      registerMenu: (ns, key, spec) => {
        if (!(spec.type?.prototype instanceof ApplicationV2)) throw new Error("You must provide a menu type that is a FormApplication or ApplicationV2 instance or subclass");
      },
      get: (ns, key) => { const id = `${ns}.${key}`; if (id === "core.rollMode") return "publicroll"; return values.has(id) ? structuredClone(values.get(id)) : structuredClone(registered.get(id)?.default); },
      // As Foundry does: a changed value calls the setting's onChange with the writer's options.
      set: async (ns, key, v, options = {}) => {
        const id = `${ns}.${key}`;
        const changed = JSON.stringify(values.get(id)) !== JSON.stringify(v);
        values.set(id, structuredClone(v));
        if (changed) registered.get(id)?.onChange?.(structuredClone(v), options);
        return v;
      },
    },
    socket: { on: () => {}, emit: () => {} },
    modules: new Map([["mindscape", { id: "mindscape", active: true }]]),
    system: { id: "dnd5e" },
    // The world's scenes (`game.scenes`): the harness's one, active.
    scenes: { get: (id) => (id === scene.id ? scene : undefined), contents: [scene], active: scene, filter: (f) => [scene].filter(f), find: (f) => [scene].find(f), [Symbol.iterator]: () => [scene][Symbol.iterator]() },
  };
  const templates = new Map();
  const renderTemplate = async (path, ctx) => {
    if (!templates.has(path)) {
      const src = await (await fetch(`/${path}`)).text();
      templates.set(path, compile(src, { localize: (k, o) => (o?.hash && Object.keys(o.hash).length ? i18n.format(k, o.hash) : localize(k)) }));
    }
    return templates.get(path)(ctx);
  };
  const docs = new Map();
  const messages = [];
  // The world's messages, as `game.messages.filter` finds them.
  game.messages = messages;
  // ChatMessage as Foundry's client document (client/documents/chat-message.mjs, v12 and
  // v13) for the client that posts it: applyRollMode reads this client's user (self
  // whispers to `game.user.id`) and, in v13, keeps a whisper already set for private and
  // blind; `create` makes this user the author unless one is given (a GM may name any
  // user: BaseChatMessage #canCreate), migrates the deprecated `user` to `author`, and
  // re-applies the roll mode to a message with rolls as `_preCreate` does (v13: the
  // `rollMode` option only; v12: it, or this client's own mode when nobody is whispered).
  const gmIds = () => users.filter((u) => u.isGM).map((u) => u.id);
  const ChatMessage = {
    applyRollMode: (chatData, rollMode) => {
      if (rollMode === "roll") rollMode = game.settings.get("core", "rollMode");
      if (rollMode === "publicroll") chatData.whisper = [];
      else if (rollMode === "selfroll") chatData.whisper = [game.user.id];
      else if (rollMode === "gmroll" || rollMode === "blindroll") chatData.whisper = generation >= 13 && chatData.whisper?.length ? chatData.whisper : gmIds();
      chatData.blind = rollMode === "blindroll";
      return chatData;
    },
    // Foundry's getSpeaker: a token's, an actor's, else this client's controlled token,
    // else its user's character, else its user under the alias.
    getSpeaker: ({ scene, actor, token, alias } = {}) => {
      const fromToken = (t) => ({ scene: t.parent?.id ?? null, token: t.id, actor: t.actor?.id ?? null, alias: alias || t.name });
      if (token) return fromToken(token);
      if (actor?.isToken) return fromToken(actor.token);
      if (actor) {
        const tokens = actor.getActiveTokens(false, true);
        return tokens.length ? fromToken(tokens[0]) : { scene: (scene ?? window.canvas?.scene)?.id ?? null, actor: actor.id, token: null, alias: alias || actor.name };
      }
      const controlled = window.canvas?.ready ? window.canvas.tokens.controlled : [];
      if (controlled.length) return fromToken(controlled[0].document);
      return { scene: (scene ?? window.canvas?.scene)?.id ?? null, actor: null, token: null, alias: alias || game.user.name };
    },
    create: async (input, options = {}) => {
      const data = { ...input };
      if ("user" in data) { window.harness.deprecations.push("ChatMessage#user"); data.author ??= data.user; delete data.user; }
      data.author ??= game.user.id;
      data.whisper = [...(data.whisper ?? [])];
      data.blind = Boolean(data.blind);
      if (!game.user.isGM && data.author !== game.user.id) throw new Error("You cannot impersonate a different user");
      if (data.rolls?.length) {
        if (generation >= 13) { if (options.rollMode) ChatMessage.applyRollMode(data, options.rollMode); }
        else if (options.rollMode || !data.whisper.length) ChatMessage.applyRollMode(data, options.rollMode || "roll");
      }
      // As a ChatMessage document: its flags, and `update` (dotted paths), after which
      // Foundry renders the message again in the chat log (the hooks run again).
      const message = {
        id: `m${messages.length + 1}`, data, options, element: null,
        get flags() { return data.flags; },
        async update(changes) { applyDotted(data, changes); renderMessage(message); return message; },
      };
      messages.push(message);
      renderMessage(message);
      return message;
    },
  };
  /** Show a message in the chat log (in place of its earlier element) and run the render hook. */
  function renderMessage(message) {
    const { data, options } = message;
    const li = document.createElement("li");
    li.className = "chat-message message";
    li.dataset.rollMode = options?.rollMode ?? "";
    li.dataset.whisper = (data.whisper ?? []).join(",");
    li.dataset.blind = String(Boolean(data.blind));
    li.dataset.author = data.author ?? "";
    li.innerHTML = `<header class="message-header"><h4 class="message-sender">${data.speaker?.alias ?? ""}</h4><span class="roll-mode">${options?.rollMode ?? ""}</span></header>
      <div class="message-content">${data.content}${(data.rolls ?? []).map((r) => `<div class="dice-roll"><span class="dice-flavor">${r.options?.flavor ?? ""}</span><span class="dice-formula">${r.formula}</span><span class="dice-faces">${r.terms.filter((t) => t.results).flatMap((t) => t.results.map((x) => `<b class="die d${t.faces}">${x.result}</b>`)).join("")}</span><span class="dice-total">${r.total}</span></div>`).join("")}</div>`;
    if (message.element) message.element.replaceWith(li);
    else document.querySelector("#chat-log").append(li);
    message.element = li;
    Hooks.callAll(generation >= 13 ? "renderChatMessageHTML" : "renderChatMessage", message, generation >= 13 ? li : { 0: li, length: 1, jquery: "3.7.1" });
  }
  const Roll = { fromData: (data) => ({ ...data, toJSON: () => data }) };
  // A notice is rendered as HTML, as Foundry v12 does (v13 cleans it, then renders it):
  // `notes` holds the text it shows, `noticesHtml` the HTML it was given, `noticesGiven`
  // every notice in order as `{kind, text, options}`, its options as given (`permanent`:
  // it stays until dismissed), as the node fakes' `notes.given`.
  const notes = [];
  const noticesHtml = [];
  const noticesGiven = [];
  const notice = (kind) => (m, options) => {
    const li = document.createElement("li");
    li.innerHTML = String(m);
    noticesHtml.push(String(m));
    notes.push([kind, li.textContent]);
    noticesGiven.push({ kind, text: li.textContent, options });
  };
  Object.assign(window, {
    game, Hooks, CONFIG: generation >= 13 ? { queries: {}, sounds: {} } : { sounds: {} },
    ui: { notifications: { info: notice("info"), warn: notice("warn"), error: notice("error") } },
    ChatMessage, Roll, fromUuid: async (uuid) => docs.get(uuid) ?? null,
    foundry: { applications: { instances, api: { DialogV2, ApplicationV2, HandlebarsApplicationMixin }, handlebars: { renderTemplate, loadTemplates: async () => {} } } },
  });
  // Documents and placeables from the actor data.
  const tokens = [];
  const placeToken = (spec) => {
    const actor = docs.get(`Actor.${spec.data._id}`) ?? new Actor(spec.data, `Actor.${spec.data._id}`);
    docs.set(actor.uuid, actor);
    const doc = new TokenDocument({ id: spec.tokenId, name: spec.name ?? actor.name, actor, actorLink: spec.actorLink, img: spec.img, disposition: spec.disposition });
    docs.set(doc.uuid, doc);
    docs.set(doc.actor.uuid, doc.actor);
    const token = { id: doc.id, document: doc, actor: doc.actor };
    tokens.push(token);
    return token;
  };
  for (const spec of actors) placeToken(spec);
  // The canvas, as far as "selected tokens" go (the encounter panel adds those).
  // Foundry's `canvas.ready` and `canvas.scene`, the scene this client shows.
  window.canvas = { ready: true, scene, tokens: { controlled: [...tokens] } };
  const fetches = [];
  const realFetch = window.fetch.bind(window);
  window.fetch = async (url, init) => {
    const response = await realFetch(url, init);
    if (String(url).endsWith("/rpc")) {
      const copy = response.clone();
      fetches.push({ request: JSON.parse(init.body), response: await copy.json() });
    }
    return response;
  };
  window.harness = {
    generation, tokens, docs, messages, notes, noticesHtml, noticesGiven, fetches, hooksCalled: [], lines: [], deprecations: [],
    log: (line) => window.harness.lines.push(line),
    resolved: [],
    roundsEnded: [],
    rested: [],
    combat: new Combat(tokens),
    // A combat of some of the tokens only (by token id), for a test to put in `combat`.
    combatOf: (tokenIds) => new Combat(tokens.filter((t) => tokenIds.includes(t.id))),
    // A further token on the scene (`{data, tokenId, name, actorLink, disposition?}`, as
    // `setUp`'s actors), drawn on the board at `left`, `top`; not selected.
    addToken: (spec, { left = 560, top = 340 } = {}) => {
      const token = placeToken(spec);
      const el = document.createElement("div");
      el.className = "token";
      el.dataset.tokenId = token.id;
      el.style.left = `${left}px`;
      el.style.top = `${top}px`;
      el.innerHTML = `<span class="portrait">${token.document.name[0]}</span><span class="nameplate">${token.document.name}</span>`;
      document.querySelector("#board")?.append(el);
      return token;
    },
    // An actor of the world with no token on the scene.
    addWorldActor: (data) => {
      const actor = new Actor(data, `Actor.${data._id}`);
      docs.set(actor.uuid, actor);
      return actor;
    },
    actor: (uuid) => docs.get(uuid)?.toObject(),
  };
  Hooks.on("mindscape.resolved", (payload) => window.harness.resolved.push(JSON.parse(JSON.stringify({ result: payload.result, updates: payload.updates }))));
  Hooks.on("mindscape.roundEnded", (payload) => window.harness.roundsEnded.push(JSON.parse(JSON.stringify({ round: payload.round, result: payload.result, updates: payload.updates, messageId: payload.message?.id ?? null }))));
  Hooks.on("mindscape.rested", (payload) => window.harness.rested.push(JSON.parse(JSON.stringify({ system: payload.system, result: payload.result, updates: payload.updates, actors: payload.actors.map((a) => a.uuid), messageId: payload.message?.id ?? null }))));
  return window.harness;
}

/** Draw tokens on the "canvas" and open the token HUD of one of them, firing renderTokenHUD. */
export function openTokenHUD(tokenId) {
  const token = window.harness.tokens.find((t) => t.id === tokenId);
  document.querySelector("#token-hud")?.remove();
  const hud = document.createElement("div");
  hud.id = "token-hud";
  hud.className = "placeable-hud";
  hud.innerHTML = `<div class="col left"><button type="button" class="control-icon" data-action="elevation"><i class="fas fa-arrows-alt-v"></i></button></div><div class="col middle"></div><div class="col right"><button type="button" class="control-icon" data-action="target"><i class="fas fa-bullseye"></i></button></div>`;
  const el = document.querySelector(`[data-token-id="${tokenId}"]`);
  el.append(hud);
  const html = window.harness.generation >= 13 ? hud : { 0: hud, length: 1, jquery: "3.7.1" };
  window.Hooks.callAll("renderTokenHUD", { object: token, token }, html, {});
  return hud;
}
