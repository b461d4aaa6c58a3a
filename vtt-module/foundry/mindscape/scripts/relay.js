/**
 * The GM relay. The daemon runs on the GM's computer, so only the active GM's client
 * calls it; a player's client asks the GM (requests: prepare, odds, attack, declare ...)
 * and the GM asks a player (secret choices: a defense, an encounter choice).
 *
 * Transports:
 * - v13: `CONFIG.queries["mindscape.<name>"]` and `User#query`, between two clients only.
 * - v12 (and v13 when the sender of a query cannot be told): the module socket
 *   `module.mindscape` with request ids and replies; Foundry's server names the sender
 *   of every socket message, so that id is the one trusted.
 * A handler that must know its sender never trusts an id written in the payload. v13's
 * core calls a query handler with `{timeout}` only, but the server names the querying
 * user in the `userQuery` socket event that carries the query, and every listener of
 * that event runs in the same dispatch as the core's, which calls the handler: the
 * relay listens to it too and takes the sender from there (`#noteQuerySender`). If
 * neither the handler's options nor that event name the sender, the answering client
 * (the GM for requests, a player for the GM's questions) answers
 * `{relay: "sender-unknown"}` without running the handler, and the asking client
 * resends over the socket.
 *
 * Every answer is an envelope `{ok:true, value}` / `{ok:false, error}` so typed errors
 * (errors.js) reach the asking client intact.
 */
import { MODULE_ID, PAIRED_FLAG, RELAY_TIMEOUT_MS, SOCKET_NAME } from "./consts.js";
import {
  COMPANION_LINK_ERRORS, CompanionUnavailableError, MindscapeError, NoGMError, PermissionDeniedError, RelayNotReadyError, RelayTimeoutError, errorFromJSON,
} from "./errors.js";

const SENDER_UNKNOWN = "sender-unknown";

/**
 * How much longer than the timeout it gave Foundry a query is waited for: Foundry's
 * receiving client never answers a query it has no handler for (it throws "Received
 * invalid User query" without acknowledging, client/documents/collections/users.mjs),
 * so the asking client stops waiting by itself.
 */
const QUERY_GRACE_MS = 2000;

/**
 * @typedef {object} Handler
 * @property {"gm"|"player"} runsOn  "gm": answered by the active GM; "player": a question the GM asks a user
 * @property {(payload:any, ctx:{sender:any})=>Promise<any>} fn
 */

export class Relay {
  /**
   * @param {{game:any, CONFIG:any, handlers:Record<string, Handler>,
   *          timeoutMs?:number|(()=>number), randomId?:()=>string}} deps
   *   `timeoutMs` may be a function, read at each request (the world's defense timeout
   *   can change during a session)
   */
  constructor({ game, CONFIG, handlers, timeoutMs = RELAY_TIMEOUT_MS, randomId }) {
    this.game = game;
    this.CONFIG = CONFIG;
    this.handlers = handlers;
    this.timeout = timeoutMs;
    this.randomId = randomId ?? (() => Math.random().toString(36).slice(2) + Date.now().toString(36));
    this.pending = new Map();
    this.useSocketForGM = false;
    this.useSocketForUsers = false;
    /** False from `register({untilReady: true})` until `accept()`: requests are answered "not ready". */
    this.accepting = true;
    /** The sender and data of the last query of this module the server delivered (v13). */
    this.lastQuery = null;
  }

  /** How long to wait for an answer, in ms. */
  get timeoutMs() {
    const ms = typeof this.timeout === "function" ? this.timeout() : this.timeout;
    return Number.isFinite(ms) && ms > 0 ? ms : RELAY_TIMEOUT_MS;
  }

  /** True when this Foundry has `CONFIG.queries` and `User#query` (v13+). */
  get hasQueries() {
    return Boolean(this.CONFIG?.queries) && (this.game.release?.generation ?? 12) >= 13;
  }

  /**
   * The GM whose client talks to the daemon: Foundry's active GM (`game.users.activeGM`)
   * when its browser is paired, otherwise the first connected GM (by id) whose browser is
   * (the `paired` user flag each GM's client sets). Every client reads the same users,
   * so every client names the same GM. With no paired GM connected, Foundry's active GM
   * answers, and says how to pair.
   */
  get activeGM() {
    const gm = this.game.users?.activeGM ?? null;
    if (!gm || isPaired(gm)) return gm;
    const users = this.game.users?.contents ?? [...(this.game.users ?? [])];
    const paired = users.filter((u) => u.isGM && u.active && isPaired(u)).sort((a, b) => a.id.localeCompare(b.id));
    return paired[0] ?? gm;
  }

  /** Whether this client is the one that talks to the daemon. */
  get isActiveGM() {
    const gm = this.activeGM;
    return Boolean(this.game.user?.isGM && gm && gm.id === this.game.user.id);
  }

  /**
   * Whether this client may send queries: Foundry's `User#query` throws before sending
   * when the sender lacks the QUERY_USER permission (a player's by default, which the GM
   * may take away in the permission settings; client/documents/user.mjs), and the module
   * socket is used instead.
   */
  get mayQuery() {
    const user = this.game.user;
    return typeof user?.hasPermission !== "function" || Boolean(user.hasPermission("QUERY_USER"));
  }

  /**
   * Register query handlers (v13) and the socket listener (both). Call once, at "init":
   * a query that arrives before its handler is registered is never answered (Foundry's
   * receiving client throws without acknowledging), so a GM reloading would leave the
   * players' requests hanging. With `untilReady`, requests that arrive before `accept()`
   * (Foundry's "ready": the users and settings are read then) are answered
   * `RelayNotReadyError`, not run.
   * @param {{untilReady?:boolean}} [options]
   */
  register({ untilReady = false } = {}) {
    this.accepting = !untilReady;
    if (this.CONFIG?.queries) {
      for (const name of Object.keys(this.handlers)) {
        this.CONFIG.queries[`${MODULE_ID}.${name}`] = (data, options) => this.#onQuery(name, data, options);
      }
      this.game.socket?.on("userQuery", (userId, _queryId, queryName, queryData) => this.#noteQuerySender(userId, queryName, queryData));
    }
    this.game.socket?.on(SOCKET_NAME, (message, senderId) => this.#onSocket(message, senderId));
  }

  /** Start running the requests that arrive (Foundry's "ready"). */
  accept() {
    this.accepting = true;
  }

  /**
   * Ask the active GM's client to run `name` and return its value.
   * @throws {NoGMError} when no GM is connected
   */
  async toGM(name, payload) {
    if (this.isActiveGM) return this.#runLocal(name, payload);
    const gm = this.activeGM;
    if (!gm) throw new NoGMError({ request: name });
    if (this.hasQueries && !this.useSocketForGM && typeof gm.query === "function" && this.mayQuery) {
      const envelope = await this.#query(gm, name, payload, this.timeoutMs, () => new NoGMError({ request: name }));
      if (envelope === USE_SOCKET) return this.#socketRequest(name, payload, "gm");
      if (envelope?.relay === SENDER_UNKNOWN) {
        this.useSocketForGM = true;
        return this.#socketRequest(name, payload, "gm");
      }
      return unwrap(envelope);
    }
    return this.#socketRequest(name, payload, "gm");
  }

  /**
   * Ask one user's client (a secret choice). Local when that user is this client.
   * @param {string} userId
   */
  async toUser(userId, name, payload, timeoutMs = this.timeoutMs) {
    if (userId === this.game.user?.id) return this.#runLocal(name, payload);
    const user = this.game.users?.get(userId);
    if (!user?.active) throw new RelayTimeoutError({ user: user?.name ?? userId });
    if (this.hasQueries && !this.useSocketForUsers && typeof user.query === "function" && this.mayQuery) {
      const envelope = await this.#query(user, name, payload, timeoutMs, () => new RelayTimeoutError({ user: user.name ?? userId }));
      if (envelope !== USE_SOCKET) {
        if (envelope?.relay !== SENDER_UNKNOWN) return unwrap(envelope);
        // The player's client cannot tell who asked; the socket names the sender.
        this.useSocketForUsers = true;
      }
    }
    return this.#socketRequest(name, payload, userId, timeoutMs);
  }

  /**
   * `user.query` for the module's request `name`, waited for at most `timeoutMs` and a
   * grace. Foundry's failures are plain Errors whose text the user cannot act on; each
   * becomes the module's own error, whose message says what to do: the recipient gone
   * (`User [id] is not active`) `gone()`, no answer in time (or a receiving client that
   * never answered) RelayTimeoutError, a query Foundry refused before sending because
   * this user lost QUERY_USER meanwhile `USE_SOCKET` (the caller sends it over the
   * socket). What Foundry said goes to the console.
   * @returns {Promise<any>} the envelope answered, or USE_SOCKET
   */
  async #query(user, name, payload, timeoutMs, gone) {
    let timer;
    const late = new Promise((_resolve, reject) => {
      timer = setTimeout(() => reject(new RelayTimeoutError({ request: name })), timeoutMs + QUERY_GRACE_MS);
    });
    try {
      return await Promise.race([user.query(`${MODULE_ID}.${name}`, { payload }, { timeout: timeoutMs }), late]);
    } catch (error) {
      if (error instanceof MindscapeError) throw error;
      console.warn(`${MODULE_ID} | the query ${name} to ${user.name ?? user.id} failed`, error);
      if (!this.mayQuery) return USE_SOCKET;
      if (!user.active) throw gone();
      throw new RelayTimeoutError({ request: name });
    } finally {
      clearTimeout(timer);
    }
  }

  async #runLocal(name, payload) {
    const handler = this.handlers[name];
    if (!handler) throw new MindscapeError("MINDSCAPE.Error.UnknownRequest", { request: name });
    return handler.fn(payload, { sender: this.game.user });
  }

  /** Run a handler for a sender and wrap the outcome in an envelope. */
  async #answer(name, payload, sender) {
    const handler = this.handlers[name];
    try {
      if (!handler) throw new MindscapeError("MINDSCAPE.Error.UnknownRequest", { request: name });
      if (!this.accepting) throw new RelayNotReadyError({ request: name });
      if (handler.runsOn === "gm" && !this.isActiveGM) throw new PermissionDeniedError({ who: name });
      // A question meant for a player is only accepted from a known GM.
      if (handler.runsOn === "player" && !sender?.isGM) throw new PermissionDeniedError({ who: name });
      return { ok: true, value: await handler.fn(payload, { sender }) };
    } catch (error) {
      // The GM's link to its companion is the GM's: a player is not told its address.
      const link = !sender?.isGM && COMPANION_LINK_ERRORS.some((Link) => error instanceof Link);
      const json = link ? new CompanionUnavailableError().toJSON()
        : error instanceof MindscapeError ? error.toJSON()
          : { name: "MindscapeError", key: "MINDSCAPE.Error.Remote", data: { message: String(error?.message ?? error) } };
      return { ok: false, error: json };
    }
  }

  /**
   * The `userQuery` socket event (v13): the server's id of the user who sent a query,
   * with the very data object the core hands to the query handler.
   */
  #noteQuerySender(userId, queryName, queryData) {
    if (typeof queryName === "string" && queryName.startsWith(`${MODULE_ID}.`)) this.lastQuery = { userId, queryData };
  }

  async #onQuery(name, data, options) {
    // Before "ready" the users may not be read yet: nothing to tell the sender by.
    if (!this.accepting) return { ok: false, error: new RelayNotReadyError({ request: name }).toJSON() };
    const handler = this.handlers[name];
    // Only the core or the server may tell us who asked: the handler's options (a core
    // that names the sender), else the `userQuery` event that carried this query. Its
    // listeners run in the same dispatch as the core's, which called this handler: one
    // microtask later the event has been seen, and its data is this very object. Without
    // either, every handler (a request for the GM, a secret question for a player) falls
    // back to the socket, where the server names the sender. Nothing is answered to an
    // unknown sender.
    let senderRef = options?.user ?? options?.sender ?? options?.userId ?? null;
    if (!senderRef) {
      await null;
      const noted = this.lastQuery;
      this.lastQuery = null;
      if (noted && data !== null && typeof data === "object" && noted.queryData === data) senderRef = noted.userId;
    }
    const sender = typeof senderRef === "string" ? this.game.users?.get(senderRef) : senderRef;
    if (handler && !sender) return { relay: SENDER_UNKNOWN };
    return this.#answer(name, data?.payload, sender ?? null);
  }

  #socketRequest(name, payload, to, timeoutMs = this.timeoutMs) {
    const id = this.randomId();
    const recipient = to === "gm" ? this.activeGM?.id : to;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RelayTimeoutError({ request: name }));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer, recipient });
      this.game.socket.emit(SOCKET_NAME, { type: "request", id, name, to, payload });
    });
  }

  async #onSocket(message, senderId) {
    if (!message || typeof message !== "object") return;
    const sender = this.game.users?.get(senderId) ?? null;
    if (message.type === "request") {
      const forMe = message.to === "gm" ? this.isActiveGM : message.to === this.game.user?.id;
      if (!forMe || !sender) return;
      const envelope = await this.#answer(message.name, message.payload, sender);
      this.game.socket.emit(SOCKET_NAME, { type: "reply", id: message.id, to: senderId, ...envelope });
    } else if (message.type === "reply") {
      if (message.to !== this.game.user?.id) return;
      const waiting = this.pending.get(message.id);
      // A reply counts only from the client we asked (the server names the sender).
      if (!waiting || waiting.recipient !== senderId) return;
      clearTimeout(waiting.timer);
      this.pending.delete(message.id);
      try { waiting.resolve(unwrap(message)); } catch (error) { waiting.reject(error); }
    }
  }
}

/** `#query`'s answer when the query could not be sent and the socket should carry it. */
const USE_SOCKET = Symbol("use the socket");

function isPaired(user) {
  return Boolean(user.getFlag?.(MODULE_ID, PAIRED_FLAG));
}

/** Open an envelope: the value, or the typed error it carries. */
export function unwrap(envelope) {
  if (envelope?.ok) return envelope.value;
  if (envelope && envelope.ok === false) throw errorFromJSON(envelope.error);
  throw new MindscapeError("MINDSCAPE.Error.Remote", { message: "malformed relay answer" });
}
