/**
 * Typed errors. Each carries an i18n key (under MINDSCAPE.Error) and the data its message
 * needs, so the text shown to the user says what went wrong *and how to fix it*. Errors
 * cross the GM relay as plain JSON (`toJSON` / `errorFromJSON`) so a player sees the same
 * message the GM's client would have shown.
 */
import { plainText } from "./labels.js";

/** Root of every error this module raises on purpose. */
export class MindscapeError extends Error {
  /**
   * @param {string} key  i18n key of the message (MINDSCAPE.Error.*)
   * @param {object} [data]  values the message interpolates
   */
  constructor(key, data = {}) {
    super(`${key} ${JSON.stringify(data)}`);
    this.name = new.target.name;
    this.key = key;
    this.data = data;
  }

  /** Plain data for the relay: name, key and data are enough to rebuild the error. */
  toJSON() {
    return { name: this.name, key: this.key, data: this.data };
  }
}

/** The daemon did not answer at all (not running, wrong URL, CORS or Chrome's local-network prompt). */
export class DaemonUnreachableError extends MindscapeError {
  constructor(data) { super("MINDSCAPE.Error.Unreachable", data); }
}

/** HTTP 401: the token is missing or not the daemon's. */
export class DaemonAuthError extends MindscapeError {
  constructor(data) { super("MINDSCAPE.Error.Auth", data); }
}

/** HTTP 403: the daemon refused the page's Host or Origin. */
export class DaemonForbiddenError extends MindscapeError {
  constructor(data) { super("MINDSCAPE.Error.Forbidden", data); }
}

/** Any other HTTP failure (413, 5xx, a proxy page instead of JSON). */
export class DaemonHttpError extends MindscapeError {
  /** `data.said`: the companion's own words for a request it refused (a 413 or 415), when it gave them. */
  constructor(data) { super(data?.said ? "MINDSCAPE.Error.HttpRefused" : "MINDSCAPE.Error.Http", data); }
}

/** No token stored on this client yet. */
export class NotPairedError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.NotPaired", data); }
}

/**
 * The "Companion address" setting is no absolute http(s) address of the companion
 * (rpc.js `checkDaemonUrl`); nothing was sent. `data.url`: the address as set.
 */
export class BadDaemonUrlError extends MindscapeError {
  constructor(data) { super("MINDSCAPE.Error.BadUrl", data); }
}

/** A JSON-RPC error the daemon answered; subclasses below name the codes API.md defines. */
export class RpcError extends MindscapeError {
  constructor(key, data) { super(key, data); }
  get code() { return this.data.code; }
}

/** −32602: params failed the method's schema; `data.errors` lists {path, message}. */
export class InvalidParamsError extends RpcError {
  constructor(data) { super("MINDSCAPE.Error.InvalidParams", data); }
}

/** 4001: the rules forbid it (not enough PSPs, multiplier above level, ...). */
export class RulesError extends RpcError {
  constructor(data) { super("MINDSCAPE.Error.Rules", data); }
}

/** 4002: supplied dice ran out; `data` = {purpose, sides, needed}. */
export class DiceNeededError extends RpcError {
  constructor(data) { super("MINDSCAPE.Error.DiceNeeded", data); }
}

/** 4004: unknown encounter or combatant. */
export class NotFoundError extends RpcError {
  constructor(data) { super("MINDSCAPE.Error.NotFound", data); }
}

/** 4009: the encounter moved on since this client last looked. */
export class StaleRevisionError extends RpcError {
  constructor(data) { super("MINDSCAPE.Error.Stale", data); }
}

/**
 * 5003: the companion could not write its store; nothing changed. `data.retry` false: its
 * store file or write-ahead log was deleted or replaced while it ran, and only a restart
 * helps; true or absent (an older companion): the disk refused (full, read-only home).
 */
export class StoreUnavailableError extends RpcError {
  constructor(data) { super(data?.retry === false ? "MINDSCAPE.Error.StoreGone" : "MINDSCAPE.Error.StoreUnavailable", data); }
}

/** −32603 and anything unexpected from the daemon. */
export class DaemonFaultError extends RpcError {
  constructor(data) { super("MINDSCAPE.Error.Fault", data); }
}

/**
 * What a player is told when the GM's client could not reach its companion, or the
 * companion refused the call for its address, token, Host or Origin (the errors above):
 * those carry the companion's address, which is the GM's alone (`Relay` sends this
 * instead).
 */
export class CompanionUnavailableError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.CompanionUnavailable", data); }
}

/** The errors of the GM's own link to its companion, which name its address. */
export const COMPANION_LINK_ERRORS = [DaemonUnreachableError, DaemonAuthError, DaemonForbiddenError, DaemonHttpError, NotPairedError, BadDaemonUrlError];

/** A player asked for something and no GM is logged in to relay it to the daemon. */
export class NoGMError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.NoGM", data); }
}

/** The other client did not answer in time. */
export class RelayTimeoutError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.RelayTimeout", data); }
}

/** The other client received the request while it was still loading (before Foundry's "ready"); nothing ran. */
export class RelayNotReadyError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.NotReady", data); }
}

/** The GM's client refused a relayed request (not the owner, players may not attack, ...). */
export class PermissionDeniedError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.Permission", data); }
}

/**
 * The GM's client refused an owner's request because the world's "Players may start
 * attacks" is off: not a matter of owning the actor, as the Permission message says.
 */
export class PlayersMayNotAttackError extends PermissionDeniedError {
  constructor(data = {}) {
    super(data);
    this.key = "MINDSCAPE.Error.PlayersMayNotAttack";
    this.message = `${this.key} ${JSON.stringify(data)}`;
  }
}

/**
 * This GM's browser is not the one that talks to the companion (another GM's is: the
 * relay's `activeGM`), so what calls it from here directly (the encounter panel) cannot
 * run here. `data.name`: that GM's name.
 */
export class OtherGMError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.OtherGM", data); }
}

/**
 * The companion refused to take a creature into the encounter: the root
 * of the two errors below, which say when (never thrown itself). `data`: `{name,
 * problem}`, the creature's name and the refusal in words; `cause` is the companion's own
 * error. `of` makes one from that error.
 */
class SheetRefusedError extends MindscapeError {
  constructor(key, data, cause) {
    super(key, data);
    if (cause) this.cause = cause;
  }

  /**
   * The error of this class for `name`, whose sheet the companion refused with `cause`,
   * the refusal put in words as `describeError` does.
   * @param {string} name
   * @param {MindscapeError} cause
   * @param {{localize:(k:string)=>string, format:(k:string, d:object)=>string}} i18n
   */
  static of(name, cause, i18n) {
    return new this({ name, problem: describeError(cause, i18n) }, cause);
  }
}

/**
 * The companion refused to take an encounter combatant again from its sheet
 * (`encounter.refresh`: a profile it now refuses, a combatant it does not know), so
 * nothing was resolved or asked.
 */
export class RefreshRefusedError extends SheetRefusedError {
  constructor(data, cause) { super("MINDSCAPE.Error.RefreshRefused", data, cause); }
}

/**
 * The companion refused a selected token when it was added to the encounter
 * (`encounter.add`: −32602, or 4001: its sheet, or an encounter that holds
 * `max_combatants` already), so neither it nor the tokens selected after it were added.
 * `data.name`: the token's name (else its actor's).
 */
export class AddRefusedError extends SheetRefusedError {
  constructor(data, cause) { super("MINDSCAPE.Error.AddRefused", data, cause); }
}

/** The user closed a dialog; callers stop quietly. */
export class CancelledError extends MindscapeError {
  constructor(data = {}) { super("MINDSCAPE.Error.Cancelled", data); }
}

/** Bad use of the module itself (no target selected, actor without token, ...). */
export class UsageError extends MindscapeError {
  constructor(key, data = {}) { super(key, data); }
}

const BY_NAME = {
  MindscapeError, DaemonUnreachableError, DaemonAuthError, DaemonForbiddenError,
  DaemonHttpError, BadDaemonUrlError, NotPairedError, InvalidParamsError, RulesError, DiceNeededError,
  NotFoundError, StaleRevisionError, StoreUnavailableError, DaemonFaultError, NoGMError, RelayTimeoutError, RelayNotReadyError,
  PermissionDeniedError, PlayersMayNotAttackError, OtherGMError, RefreshRefusedError, AddRefusedError, CancelledError, UsageError,
  CompanionUnavailableError,
};

/**
 * Turn a JSON-RPC error object into the matching typed error.
 * @param {{code:number, message:string, data?:any}} error
 * @returns {RpcError}
 */
export function errorFromRpc(error) {
  const code = error?.code;
  const data = (error && typeof error.data === "object" && error.data !== null) ? error.data : {};
  const base = { code, message: error?.message ?? "" };
  switch (code) {
    case -32602: return new InvalidParamsError({ ...base, errors: data.errors ?? [] });
    case 4001: {
      // `combatant`: the id of the creature the refusal is about, when it is about one.
      const about = typeof data.combatant === "string" ? { combatant: data.combatant } : {};
      return new RulesError({ ...base, rule: data.rule ?? "", detail: data.detail ?? base.message, ...about });
    }
    case 4002: return new DiceNeededError({ ...base, purpose: data.purpose, sides: data.sides, needed: data.needed });
    case 4004: return new NotFoundError({ ...base, id: data.id ?? "" });
    case 4009: return new StaleRevisionError({ ...base, revision: data.revision });
    case 5003: return new StoreUnavailableError({ ...base, id: data.error_id ?? "", retry: data.retry !== false });
    default: return new DaemonFaultError({ ...base, id: data.id ?? data.error_id ?? "" });
  }
}

/**
 * Rebuild an error that crossed the relay; unknown shapes become a plain MindscapeError
 * so a malicious or buggy peer cannot make us construct arbitrary classes.
 * @param {any} json
 * @returns {MindscapeError}
 */
export function errorFromJSON(json) {
  const Cls = BY_NAME[json?.name];
  const key = typeof json?.key === "string" ? json.key : "MINDSCAPE.Error.Remote";
  const data = (json && typeof json.data === "object" && json.data) ? json.data : {};
  if (!Cls) return new MindscapeError(key, data);
  const err = Object.create(Cls.prototype);
  Object.assign(err, { name: Cls.name, key, data, message: `${key} ${JSON.stringify(data)}` });
  err.stack = "";
  return err;
}

/** Fill every `{name}` of a message template that `data` lacks with "", never "undefined". */
export function withPlaceholders(template, data) {
  const out = { ...data };
  for (const match of String(template).matchAll(/{([^}]+)}/g)) {
    if (out[match[1]] === undefined || out[match[1]] === null) out[match[1]] = "";
  }
  return out;
}

/**
 * The sentence to show a user for any error, localized, as plain text (a notice, a
 * status line): the language file's code marks around commands are dropped.
 * @param {unknown} error
 * @param {{localize:(k:string)=>string, format:(k:string, d:object)=>string}} i18n
 * @returns {string}
 */
export function describeError(error, i18n) {
  if (error instanceof MindscapeError) {
    const data = { ...error.data };
    let key = error.key;
    if (error instanceof InvalidParamsError) {
      const problems = error.data.errors ?? [];
      data.problems = problems.map((p) => `${p.path || "/"}: ${p.message}`).join("; ") || error.data.message;
      // Problems only in what was asked (the attack, the defense, the round's choices,
      // the hours), none in a sheet: the profile is not what to check.
      if (problems.length && problems.every((p) => /^\/(attack|defense|choices|hours)(\/|$)/.test(String(p.path ?? "")))) key = "MINDSCAPE.Error.InvalidRequest";
      // Problems only at the combatant as a whole, none in its fields (an encounter that
      // holds max_combatants already, a system that cannot take a combatant again): the
      // encounter refused it, not the sheet.
      else if (problems.length && problems.every((p) => p.path === "/combatant")) key = "MINDSCAPE.Error.InvalidForEncounter";
    }
    return plainText(i18n.format(key, withPlaceholders(i18n.localize(key), data)));
  }
  return i18n.format("MINDSCAPE.Error.Unexpected", { message: String(error?.message ?? error) });
}
