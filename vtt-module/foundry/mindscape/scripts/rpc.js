/**
 * The daemon client: JSON-RPC 2.0 over `POST <url>/rpc` with a bearer token, and the
 * physical-dice loop that answers the dice-needed error (4002) by asking the user.
 * Only the GM's client ever constructs one (see relay.js).
 */
import { MAX_DICE_PROMPTS } from "./consts.js";
import {
  BadDaemonUrlError, CancelledError, DaemonAuthError, DaemonForbiddenError, DaemonHttpError,
  DaemonUnreachableError, DiceNeededError, NotPairedError, UsageError, errorFromRpc,
} from "./errors.js";

/** Strip trailing slashes so `${url}/rpc` is always one slash. */
export function normalizeUrl(url) {
  return String(url ?? "").trim().replace(/\/+$/, "");
}

/**
 * The companion address setting checked: an absolute `http://` or `https://` address
 * with a host and nothing after it (no path, query, fragment or user name), normalized.
 * Anything else is refused before a request is made: a browser resolves an address
 * without a scheme (`127.0.0.1:39393`) or an empty one against the Foundry page, and
 * would send the companion's token to the Foundry server.
 * @param {unknown} url
 * @returns {string}
 * @throws {BadDaemonUrlError}
 */
export function checkDaemonUrl(url) {
  const text = normalizeUrl(url);
  let parsed = null;
  try {
    parsed = /^https?:\/\//i.test(text) ? new URL(text) : null;
  } catch {
    parsed = null;
  }
  // No query or fragment, read from the text: an empty one ("…:39393/?", "…:39393#")
  // parses to none, but `${url}/rpc` would put "/rpc" in it and post to the root.
  const clean = parsed && parsed.hostname && !parsed.username && !parsed.password
    && (parsed.pathname === "/" || parsed.pathname === "") && !/[?#]/.test(text);
  if (!clean) throw new BadDaemonUrlError({ url: text });
  return text;
}

export class DaemonClient {
  /**
   * @param {{url:string, token:string, fetch?:typeof fetch, origin?:string}} options
   *   `origin` only feeds error messages (which `--allow-origin` to use).
   */
  constructor({ url, token, fetch: fetchImpl, origin }) {
    this.url = normalizeUrl(url);
    this.rawUrl = url;
    this.token = String(token ?? "").trim();
    this.fetch = fetchImpl ?? globalThis.fetch.bind(globalThis);
    this.origin = origin ?? globalThis.location?.origin ?? "";
    this.nextId = 1;
  }

  /**
   * Call one method and return its result, or throw a typed error (errors.js).
   * @param {string} method
   * @param {object} [params]
   */
  async call(method, params) {
    if (!this.token) throw new NotPairedError({ url: this.url });
    checkDaemonUrl(this.rawUrl);
    const body = { jsonrpc: "2.0", method, id: this.nextId++ };
    if (params !== undefined) body.params = params;
    const hint = { url: this.url, origin: this.origin };
    let response;
    try {
      response = await this.fetch(`${this.url}/rpc`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${this.token}` },
        body: JSON.stringify(body),
        // The companion never redirects: a redirect means something else answers there,
        // and the request with its token goes nowhere further (a network error here).
        redirect: "error",
      });
    } catch (cause) {
      // A browser reports a refused connection, a CORS refusal and a denied local-network
      // permission all as the same TypeError, so the message covers the three.
      throw new DaemonUnreachableError({ ...hint, cause: String(cause?.message ?? cause) });
    }
    if (response.status === 401) throw new DaemonAuthError(hint);
    if (response.status === 403) throw new DaemonForbiddenError(hint);
    let payload;
    try {
      payload = await response.json();
    } catch {
      throw new DaemonHttpError({ ...hint, status: response.status });
    }
    // The companion refuses a request before JSON-RPC (a body over 1 MiB: 413, not JSON:
    // 415) with an HTTP status and `{"error": "<its words>"}`; a JSON-RPC error object
    // (with its code) comes with 200.
    if (!response.ok && typeof payload?.error?.code !== "number") {
      const said = typeof payload?.error === "string" ? payload.error.slice(0, 300) : undefined;
      throw new DaemonHttpError({ ...hint, status: response.status, ...(said ? { said } : {}) });
    }
    if (payload?.error) throw errorFromRpc(payload.error);
    return payload?.result;
  }

  /** `companion.info`: used by the pairing dialog to test the connection. */
  info() { return this.call("companion.info"); }
}

/**
 * Call a dice-using method with physical dice: start from the dice already given (or
 * none), and each time the daemon says which dice it still needs (4002 {purpose, sides,
 * needed}) ask `promptDice` for exactly those and retry. The daemon is the authority on
 * what is needed, so the module never guesses the dice a resolution will use.
 * @param {(method:string, params:object)=>Promise<any>} call
 * @param {string} method
 * @param {object} params
 * @param {(need:{purpose:string, sides:number, needed:number, supplied:object})=>Promise<number[]|null>} promptDice
 * @returns {Promise<{result:any, dice:object}>}
 */
export async function callWithPhysicalDice(call, method, params, promptDice) {
  const dice = structuredClone(params.dice ?? {});
  for (let prompts = 0; ; prompts++) {
    try {
      const result = await call(method, { ...params, dice });
      return { result, dice };
    } catch (error) {
      if (!(error instanceof DiceNeededError)) throw error;
      // Stop before asking once more than the limit, not after: no typed die is thrown away.
      if (prompts === MAX_DICE_PROMPTS) throw new UsageError("MINDSCAPE.Error.TooManyDicePrompts", { count: MAX_DICE_PROMPTS });
      const { purpose, sides, needed } = error.data;
      const values = await promptDice({ purpose, sides, needed, supplied: structuredClone(dice) });
      if (!values) throw new CancelledError({ purpose });
      dice[purpose] = [...(dice[purpose] ?? []), ...values.map(Number)];
    }
  }
}

/**
 * Check typed die values before sending them, so a typo is caught in the dialog.
 * @returns {string|null} an i18n key of the problem, or null when all are fine
 */
export function checkDieValues(values, sides, needed) {
  if (values.length !== needed) return "MINDSCAPE.Dice.WrongCount";
  for (const v of values) {
    if (!Number.isInteger(v) || v < 1 || v > sides) return "MINDSCAPE.Dice.OutOfRange";
  }
  return null;
}
