/** Mindscape for Foundry VTT: entry point. Everything else lives in the modules it imports. */
import { MODULE_ID } from "./consts.js";
import { boot } from "./boot.js";

Hooks.once("init", () => boot.init(MODULE_ID));
Hooks.once("ready", () => boot.ready());
