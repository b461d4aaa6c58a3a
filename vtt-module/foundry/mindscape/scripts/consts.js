/** The module's id: its folder name, its settings namespace, its flag scope and its socket. */
export const MODULE_ID = "mindscape";

/** The socket channel Foundry opens for a module with `"socket": true`. */
export const SOCKET_NAME = `module.${MODULE_ID}`;

/**
 * The user flag each GM's client sets to say whether its browser is paired with the
 * companion (a boolean, never the token): requests go to a GM who can answer them.
 */
export const PAIRED_FLAG = "paired";

/** The daemon's default address (`mindscape serve` listens here unless told otherwise). */
export const DEFAULT_DAEMON_URL = "http://127.0.0.1:39393";

/** The rule systems the daemon ships; plugins may add more (the world setting accepts any id). */
export const RULE_SYSTEMS = ["revised-2e", "combat-strength", "power-pool"];

/** Roll modes Foundry knows, plus "default" = the user's own chat roll mode. */
export const ROLL_MODES = ["default", "publicroll", "gmroll", "blindroll", "selfroll"];

/** The chat roll modes a user can be in (`core.rollMode`): every roll mode but "default". */
export const CHAT_ROLL_MODES = ROLL_MODES.filter((m) => m !== "default");

/** How long a defender's owner has to answer before the remembered default is used. */
export const DEFENSE_TIMEOUT_MS = 30000;

/** The longest defense timeout the world setting allows, in seconds. */
export const DEFENSE_TIMEOUT_MAX_S = 300;

/** After the defense timeout, how much longer the GM waits for the defender's answer to travel back. */
export const DEFENSE_GRACE_MS = 5000;

/** Time a relayed request may take beyond the defense question (resolving, writing back, posting). */
export const RELAY_MARGIN_MS = 120000;

/**
 * How many times, in one attack, a defender is asked again after the companion refused
 * the defense chosen (service.js `resolveChoosing`): the attack's defense questions
 * then take at most this many more timeouts.
 */
export const DEFENSE_REASKS = 2;

/**
 * How long a player's client waits for the GM to answer a relayed request. An attack
 * includes the defenders' secret choice, asked at once and then at most DEFENSE_REASKS
 * times again, so the wait is that many defense timeouts with their grace, and a
 * margin; it is never shorter than the longest attack flow.
 * @param {number} [defenseTimeoutS]  the world's "Seconds to choose a defense"
 */
export function relayTimeoutMs(defenseTimeoutS = DEFENSE_TIMEOUT_MS / 1000) {
  const s = Number(defenseTimeoutS);
  const seconds = Number.isFinite(s) && s >= 0 ? s : DEFENSE_TIMEOUT_MAX_S;
  return (seconds * 1000 + DEFENSE_GRACE_MS) * (1 + DEFENSE_REASKS) + RELAY_MARGIN_MS;
}

/** The relay timeout with the longest defense timeout the setting allows. */
export const RELAY_TIMEOUT_MS = relayTimeoutMs(DEFENSE_TIMEOUT_MAX_S);

/** At most this many dice-needed rounds before giving up (each round asks for one purpose). */
export const MAX_DICE_PROMPTS = 40;

/**
 * The most creatures under control that go along with an end of round or a rest as
 * `puppets` (the companion's limit, as for `combatants`); one more is left out, and the
 * companion's summary says its sheet still shows the control.
 */
export const MAX_PUPPETS = 64;
