/**
 * A psionic rest outside encounters (`combatants.rest`, API.md): which systems rest, what
 * a system's rest asks for (hours, or nothing for one long rest), and the params. Pure
 * functions; the service (service.js) calls the companion, writes back and posts the card.
 */

/**
 * The shipped systems whose source has a rule for resting (`systems.list` `rest: true`).
 * `combat-strength` has none, and the companion refuses it (−32602). The sheet header
 * decides from this list because a header hook cannot wait for the companion; the GM's
 * client checks the system's `rest_schema` before it calls.
 */
export const RESTING_SYSTEMS = ["revised-2e", "power-pool"];

/** The hours the rest dialog offers first: a night's sleep. */
export const DEFAULT_REST_HOURS = 8;

/** Whether the sheet header offers a rest in a world of `system`. */
export function restsIn(system) {
  return RESTING_SYSTEMS.includes(system);
}

/**
 * What a system's rest asks for, from its `systems.describe` answer: null when the system
 * has no rest (no `rest_schema`), else `{hours}` with the whole-hour range its schema
 * allows (`revised-2e`: 1–1000), or `{hours: null}` when the rest takes no hours (one
 * long rest, `power-pool`).
 * @param {{rest_schema?:object}|null|undefined} description
 * @returns {{hours:{min:number, max:number}|null}|null}
 */
export function restSpec(description) {
  const schema = description?.rest_schema;
  if (!schema || typeof schema !== "object") return null;
  const h = schema.properties?.hours;
  if (!h) return { hours: null };
  return { hours: { min: Number.isInteger(h.minimum) ? h.minimum : 1, max: Number.isInteger(h.maximum) ? h.maximum : 1000 } };
}

/**
 * `value` as whole hours within `range`, or null when it is not one (empty, a fraction,
 * out of range, not a number). Form fields arrive as strings.
 * @param {unknown} value
 * @param {{min:number, max:number}} range
 * @returns {number|null}
 */
export function restHours(value, range) {
  const text = typeof value === "string" ? value.trim() : value;
  if (text === "" || text === null || text === undefined || typeof text === "boolean") return null;
  const n = Number(text);
  return Number.isInteger(n) && n >= range.min && n <= range.max ? n : null;
}

/**
 * Params of `combatants.rest`. `puppets` (power-pool: creatures the resting controllers
 * hold by an action that do not rest with them) and `options` are sent only when they
 * hold something, and `hours` only when given: the companion checks its params strictly
 * (a system whose rest takes no hours refuses them, and one without control any puppets).
 */
export function restParams({ system, combatants, puppets, options, hours }) {
  const params = { system, combatants };
  if (Array.isArray(puppets) && puppets.length) params.puppets = puppets;
  if (options && Object.keys(options).length) params.options = options;
  if (hours !== undefined && hours !== null) params.hours = hours;
  return params;
}
