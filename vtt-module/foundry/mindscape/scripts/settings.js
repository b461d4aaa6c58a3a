/**
 * Settings. The daemon's URL and token are *client* settings: world settings are sent to
 * every connected client, and the token must stay on the GM's computer. The world's rule
 * system, its house-rule options, whether players may start attacks, the roll mode of
 * the cards and whether the combat tracker ends psionic rounds are *world* settings the
 * GM sets once.
 */
import { DEFAULT_DAEMON_URL, DEFENSE_TIMEOUT_MAX_S, MODULE_ID, ROLL_MODES, RULE_SYSTEMS } from "./consts.js";

/** Every setting's key, scope and type, in one place (tests check the scopes here). */
export const SETTINGS = {
  // Not shown in Configure Settings (which would show the token in plain text): the
  // restricted pairing menu sets both.
  daemonUrl: { scope: "client", config: false, type: String, default: DEFAULT_DAEMON_URL },
  daemonToken: { scope: "client", config: false, type: String, default: "" },
  physicalDice: { scope: "client", config: true, type: Boolean, default: false },
  ruleSystem: {
    scope: "world", config: true, type: String, default: "revised-2e",
    choices: Object.fromEntries(RULE_SYSTEMS.map((s) => [s, `MINDSCAPE.System.${s}`])),
  },
  houseRules: { scope: "world", config: false, type: Object, default: {} },
  genericMapping: { scope: "world", config: false, type: Object, default: { version: 1, fields: {} } },
  playersMayAttack: { scope: "world", config: true, type: Boolean, default: true },
  rollMode: {
    scope: "world", config: true, type: String, default: "default",
    choices: Object.fromEntries(ROLL_MODES.map((m) => [m, `MINDSCAPE.RollMode.${m}`])),
  },
  defenseTimeout: {
    scope: "world", config: true, type: Number, default: 30,
    range: { min: 5, max: DEFENSE_TIMEOUT_MAX_S, step: 5 },
  },
  // The tracker's end of round leaves out the current encounter's combatants, whose
  // rounds the encounter panel counts itself; a GM who ends rounds only by macro
  // switches this off.
  endRoundWithTracker: { scope: "world", config: true, type: Boolean, default: true },
  encounter: { scope: "world", config: false, type: Object, default: {} },
};

/**
 * Register every setting and the two menus (pairing, house rules).
 * @param {any} game
 * @param {{PairingMenu:Function, HouseRulesMenu:Function}} menus  classes Foundry instantiates
 * @param {Object<string, Function>} [onChange]  by setting key, what Foundry calls when its
 *   value changes, on every client for a world setting: `(value, options, userId)`, the
 *   options those its writer gave `game.settings.set`
 */
export function registerSettings(game, menus, onChange = {}) {
  for (const [key, spec] of Object.entries(SETTINGS)) {
    game.settings.register(MODULE_ID, key, {
      name: `MINDSCAPE.Setting.${key}.Name`,
      hint: `MINDSCAPE.Setting.${key}.Hint`,
      ...spec,
      ...(onChange[key] ? { onChange: onChange[key] } : {}),
    });
  }
  if (menus?.PairingMenu) {
    game.settings.registerMenu(MODULE_ID, "pairing", {
      name: "MINDSCAPE.Pairing.MenuName",
      label: "MINDSCAPE.Pairing.MenuLabel",
      hint: "MINDSCAPE.Pairing.MenuHint",
      icon: "fas fa-plug",
      type: menus.PairingMenu,
      restricted: true,
    });
  }
  if (menus?.HouseRulesMenu) {
    game.settings.registerMenu(MODULE_ID, "houseRulesMenu", {
      name: "MINDSCAPE.HouseRules.MenuName",
      label: "MINDSCAPE.HouseRules.MenuLabel",
      hint: "MINDSCAPE.HouseRules.MenuHint",
      icon: "fas fa-scroll",
      type: menus.HouseRulesMenu,
      restricted: true,
    });
  }
}

/** Read one of this module's settings. */
export function setting(game, key) {
  return game.settings.get(MODULE_ID, key);
}

/** Write one of this module's settings; `options` go with a world setting's change to every client's `onChange`. */
export function setSetting(game, key, value, options = {}) {
  return game.settings.set(MODULE_ID, key, value, options);
}

/** The house-rule options of the world's current system (`{H-...: value}`). */
export function houseRulesFor(game, system) {
  const all = setting(game, "houseRules") ?? {};
  return { ...(all[system] ?? {}) };
}

/**
 * The value to save of a house rule (`rule.default` gives its type) from what its control
 * in the dialog gave (`raw`): a flag's tick as true or false, a number as that number,
 * anything else as given. A number left blank or typed as none ("", "twelve") is the
 * rule's default, not 0 or NaN: a cleared box is no choice, and the companion refuses a
 * value of another type than the default's.
 * @param {{default:any}} rule
 * @param {any} raw
 */
export function houseRuleValue(rule, raw) {
  if (typeof rule.default === "boolean") return Boolean(raw);
  if (typeof rule.default !== "number") return raw;
  const text = String(raw ?? "").trim();
  const n = Number(text);
  return text && Number.isFinite(n) ? n : rule.default;
}
