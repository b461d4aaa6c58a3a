/**
 * A table of three clients (GM, two players) around one world, each running the real
 * Mindscape service over the fakes, with a scripted fake daemon on the GM's side.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { compile } from "./handlebars-lite.mjs";
import {
  FakeServer, FakeUser, FakeWorld, MODULE_DIR, fakeDaemon, makeClient, makeI18n, makeUsers,
} from "./fakes.mjs";
import { Mindscape } from "../mindscape/scripts/service.js";
import { EncounterController } from "../mindscape/scripts/encounter.js";
import { registerSettings } from "../mindscape/scripts/settings.js";

const i18n = makeI18n();
const compiled = new Map();

/** Render a module template with handlebars-lite and Foundry's `localize` helper. */
export function renderModuleTemplate(name, context) {
  if (!compiled.has(name)) {
    const src = readFileSync(path.join(MODULE_DIR, "templates", `${name}.hbs`), "utf8");
    compiled.set(name, compile(src, {
      localize: (key, options) => (options?.hash && Object.keys(options.hash).length ? i18n.format(key, options.hash) : i18n.localize(key)),
    }));
  }
  return compiled.get(name)(context);
}

/** The uuid the adapter addresses for a combatant ref (what `foundry.*` adapters return). */
export function actorUuidOfRef(ref) {
  const t = ref.data.token;
  return t && !t.actorLink ? `${t.uuid}.Actor.${ref.data.actor._id}` : `Actor.${ref.data.actor._id}`;
}

/** A revised-2e result as the daemon answers it, computed from the given psp figures. */
export function revisedResult(params, { hit = true, spent = 8, damage = 11, rolls } = {}) {
  const profile = (ref) => ref.data.actor.flags?.mindscape?.["revised-2e"] ?? {};
  const a = profile(params.attacker);
  const d = profile(params.defender);
  const aAfter = Math.max(0, (a.psp ?? 0) - (hit ? spent : spent / 2));
  const dAfter = Math.max(0, (d.psp ?? 0) - (hit ? damage : 0));
  return {
    system: "revised-2e",
    outcome: hit ? "hit" : "miss",
    attacker: { before: { id: "a", psp: a.psp }, after: { id: "a", psp: aAfter } },
    defender: { before: { id: "d", psp: d.psp }, after: { id: "d", psp: dAfter } },
    rolls: rolls ?? [
      { purpose: "attack", sides: 20, value: 17, by: "a", follows: null },
      { purpose: "damage", sides: 4, value: 4, by: "a", follows: null },
      { purpose: "damage", sides: 4, value: 3, by: "a", follows: null },
    ],
    events: [{ type: "psp-spent", combatant: "a", amount: spent }],
    summary: `${params.attacker.data.actor.name} lashes out with a ${params.attack.mode}.`,
    hit, critical: false, needed: 12, roll: { natural: 17, modified: 20 }, psp_spent: spent, damage: hit ? damage : 0, mind_opened: false, save: null,
    updates: [
      { uuid: actorUuidOfRef(params.attacker), update: { "flags.mindscape.revised-2e.psp": aAfter } },
      { uuid: actorUuidOfRef(params.defender), update: { "flags.mindscape.revised-2e.psp": dAfter } },
    ],
  };
}

/** Default fake daemon methods for a revised-2e world. */
export function defaultMethods(overrides = {}) {
  return {
    "companion.info": () => ({ name: "mindscape", version: "0.1.0", api_version: 1, systems: ["revised-2e", "combat-strength", "power-pool"], adapters: [], plugins: [] }),
    "adapters.list": () => [{ id: "foundry.dnd5e", vtt: "foundry", system: null }, { id: "foundry.generic", vtt: "foundry", system: null }],
    "systems.describe": ({ system }) => ({
      id: system,
      modes: { attacks: [{ id: "mind-thrust", cost: 2 }, { id: "ego-whip", cost: 4 }], defenses: [{ id: "thought-shield", cost: 2 }, { id: "mind-blank", cost: 3 }] },
      combatant_schema: { type: "object", properties: { psp: { type: "integer", minimum: 0 }, kind: { enum: ["psionicist", "wild-talent", "nonpsionic"] }, attacks: { type: "array", items: { enum: ["mind-thrust", "ego-whip"] } } } },
      house_rules: [{ id: "H-2E-CRIT-MODS", text: "the roll is the modified roll", default: true }],
    }),
    "adapters.import": ({ data }) => ({ combatant: { name: data.actor.name, level: 4, ...(data.actor.flags?.mindscape?.["revised-2e"] ?? {}) }, warnings: [] }),
    "exchange.odds": () => ({ outcomes: { hit: 0.55, miss: 0.45 }, critical: 0.1, mind_opened: 0.05, damage: { mean: 6.2, distribution: [[0, 0.45], [4, 0.3], [8, 0.25]], truncated_mass: 0 } }),
    "exchange.resolve": (params) => revisedResult(params),
    ...overrides,
  };
}

/** Scripted dialogs: each kind answers from a queue (or a function), and records its context. */
export function scriptedDialogs(script = {}) {
  const seen = [];
  const answer = async (kind, arg) => {
    seen.push({ kind, arg });
    const a = script[kind];
    if (typeof a === "function") return a(arg);
    if (Array.isArray(a)) return a.shift() ?? null;
    return a ?? null;
  };
  return {
    seen,
    attackDialog: async (arg) => {
      if (arg.oddsFor) arg.odds = await arg.oddsFor(script.attackForm ?? { mode: "mind-thrust", multiplier: "4", range: "short" });
      return answer("attackDialog", arg);
    },
    defenseDialog: (arg) => answer("defenseDialog", arg),
    diceDialog: (arg) => answer("diceDialog", arg),
    profileDialog: (arg) => answer("profileDialog", arg),
    houseRulesDialog: (arg) => answer("houseRulesDialog", arg),
    encounterChoiceDialog: (arg) => answer("encounterChoiceDialog", arg),
    pairingDialog: (arg) => answer("pairingDialog", arg),
  };
}

/**
 * Build the table. Ulcen (owned by p1, linked), Fenka (owned by p2, unlinked token),
 * a Goblin NPC (unlinked token, nobody owns it).
 */
export function makeTable({ generation = 12, passQuerySender = false, methods = defaultMethods(), dialogs = {}, token = "secret-token" } = {}) {
  const server = new FakeServer({ passQuerySender });
  const world = new FakeWorld();
  const gm = new FakeUser({ id: "gm0000", name: "Gamemaster", isGM: true });
  const p1 = new FakeUser({ id: "pl0001", name: "Ann" });
  const p2 = new FakeUser({ id: "pl0002", name: "Bo" });
  const users = makeUsers([gm, p1, p2]);
  const worldSettings = new Map();
  // revised-2e: a psionic mind knows only the modes its profile lists (COMBATANTS.md).
  const modes = { attacks: ["mind-thrust", "ego-whip"], defenses: ["thought-shield", "mind-blank"] };
  const ulcen = world.actor({ id: "ulcen", name: "Ulcen of Tyr", ownership: { pl0001: 3 }, flags: { mindscape: { "revised-2e": { kind: "psionicist", psp: 40, psp_max: 40, ...modes } } } });
  const fenka = world.actor({ id: "fenka", name: "Fenka", ownership: { pl0002: 3 }, flags: { mindscape: { "revised-2e": { kind: "psionicist", psp: 30, psp_max: 40, ...modes } } } });
  const goblin = world.actor({ id: "goblin", name: "Goblin", type: "npc", flags: { mindscape: { "revised-2e": { psp: 20, psp_max: 20, ...modes } } } });
  const ulcenToken = world.token({ id: "tokU", name: "Ulcen of Tyr", actor: ulcen, actorLink: true });
  const fenkaToken = world.token({ id: "tokF", name: "Fenka", actor: fenka, actorLink: false });
  const goblinToken = world.token({ id: "tokG", name: "Goblin", actor: goblin, actorLink: false });
  const daemon = fakeDaemon(methods, { token });
  const clients = {};
  for (const user of [gm, p1, p2]) {
    const c = makeClient({ server, world, users, user, generation, worldSettings });
    registerSettings(c.game);
    c.dialogs = scriptedDialogs(dialogs[user.id === gm.id ? "gm" : user.id === p1.id ? "p1" : "p2"] ?? {});
    c.svc = new Mindscape({
      game: c.game, ui: c.ui, CONFIG: c.CONFIG, Hooks: c.Hooks, ChatMessage: c.ChatMessage, Roll: c.Roll,
      fromUuid: c.fromUuid, render: async (n, ctx) => renderModuleTemplate(n, ctx), dialogs: c.dialogs,
      fetch: user.isGM ? daemon.fetch : async () => { throw new Error("a player's client must never call the daemon"); },
    });
    c.svc.encounters = new EncounterController(c.svc);
    c.svc.env.encounters = c.svc.encounters;
    c.svc.relay.register();
    clients[user.id === gm.id ? "gm" : user.id === p1.id ? "p1" : "p2"] = c;
  }
  world.game = clients.gm.game;
  clients.gm.game.settings.values.set("mindscape.daemonToken", token);
  return { server, world, users, gm, p1, p2, clients, daemon, actors: { ulcen, fenka, goblin }, tokens: { ulcenToken, fenkaToken, goblinToken } };
}
