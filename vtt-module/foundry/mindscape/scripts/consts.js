/** The module's id: its folder name, its settings namespace, its flag scope and its socket. */
export const MODULE_ID = "mindscape";

/** The socket channel Foundry opens for a module with `"socket": true`. */
export const SOCKET_NAME = `module.${MODULE_ID}`;

/** The daemon's default address (`mindscape serve` listens here unless told otherwise). */
export const DEFAULT_DAEMON_URL = "http://127.0.0.1:39393";

/** The rule systems the daemon ships; plugins may add more (the world setting accepts any id). */
export const RULE_SYSTEMS = ["revised-2e", "combat-strength", "power-pool"];

/** Roll modes Foundry knows, plus "default" = the user's own chat roll mode. */
export const ROLL_MODES = ["default", "publicroll", "gmroll", "blindroll", "selfroll"];

/** How long a defender's owner has to answer before the remembered default is used. */
export const DEFENSE_TIMEOUT_MS = 30000;

/** How long a player's client waits for the GM to answer a relayed request. */
export const RELAY_TIMEOUT_MS = 120000;

/** At most this many dice-needed rounds before giving up (each round asks for one purpose). */
export const MAX_DICE_PROMPTS = 40;
