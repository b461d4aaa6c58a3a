/**
 * Composition root: builds the service from Foundry's globals, registers settings and
 * hooks at "init", opens the relay and the macro API at "ready".
 */
import { MODULE_ID } from "./consts.js";
import { registerSettings, setting } from "./settings.js";
import { Mindscape } from "./service.js";
import { EncounterController, makeEncounterPanel } from "./encounter.js";
import { registerUiHooks } from "./hooks.js";
import { makeApi } from "./api.js";
import { preloadTemplates, renderTemplate } from "./foundry.js";
import * as dialogs from "./dialogs.js";

const TEMPLATES = ["attack-dialog", "odds", "defense-dialog", "dice-prompt", "pairing", "profile", "house-rules", "encounter", "encounter-choice", "encounter-action", "chat-card", "round-card", "rest-dialog", "close-dialog", "control-dialog", "join-dialog"];

/** The service built from Foundry's globals (one per page). */
function buildService() {
  const svc = new Mindscape({
    game: globalThis.game,
    ui: globalThis.ui,
    CONFIG: globalThis.CONFIG,
    Hooks: globalThis.Hooks,
    ChatMessage: globalThis.ChatMessage,
    Roll: globalThis.Roll,
    fromUuid: (uuid) => globalThis.fromUuid(uuid),
    WebSocket: globalThis.WebSocket,
    render: (name, ctx) => renderTemplate(name, ctx),
    dialogs,
  });
  svc.encounters = new EncounterController(svc);
  svc.env.encounters = svc.encounters;
  return svc;
}

/**
 * A settings menu's class for `game.settings.registerMenu`, which refuses (throws at
 * "init", and the rest of "init" never runs) a type that is not a FormApplication or
 * ApplicationV2 subclass: Foundry constructs it and renders it when the GM presses the
 * menu's button, and rendering opens the module's own dialog (`open`) instead of a window.
 * @param {Function} Base  Foundry's ApplicationV2 (v12 and v13)
 * @param {() => unknown} open
 */
export function menuOpening(Base, open) {
  return class MindscapeMenu extends Base {
    render() {
      open();
      return this;
    }
  };
}

export const boot = {
  svc: null,

  init() {
    const svc = buildService();
    this.svc = svc;
    const Base = globalThis.foundry.applications.api.ApplicationV2;
    registerSettings(globalThis.game, {
      PairingMenu: menuOpening(Base, () => svc.openPairing()),
      HouseRulesMenu: menuOpening(Base, () => svc.openHouseRules()),
    }, { encounter: (_value, options) => svc.encounters.encounterSet(options) });
    registerUiHooks(globalThis.Hooks, svc);
    // v13 answers a query only if its handler is registered when it arrives: from "init",
    // so that a GM reloading does not leave the players' requests unanswered; what
    // arrives before "ready" is told to try again (`Relay#accept`).
    svc.relay.register({ untilReady: true });
    preloadTemplates(TEMPLATES);
  },

  ready() {
    const svc = this.svc;
    const game = globalThis.game;
    svc.relay.accept();
    // The encounter as this client first sees it: what a change of the setting replaces.
    svc.encounters.seeMeta();
    let panel = null;
    const openEncounter = () => {
      if (!game.user.isGM || !svc.mayShowEncounter()) return null;
      if (!panel) {
        const Panel = makeEncounterPanel(globalThis.foundry, svc);
        panel = new Panel();
      }
      return panel.render({ force: true });
    };
    svc.openEncounter = openEncounter;
    const module = game.modules.get(MODULE_ID);
    if (module) module.api = makeApi(svc, { openEncounter });
    // Each GM's client says whether it is paired, so requests reach a GM who can answer.
    svc.announcePairing().catch((error) => console.warn("mindscape | could not record this GM's pairing", error));
    if (svc.relay.isActiveGM && !setting(game, "daemonToken")) {
      svc.notify("info", game.i18n.localize("MINDSCAPE.Pairing.NotYet"));
    }
    globalThis.Hooks.callAll(`${MODULE_ID}.ready`, module?.api);
  },
};
