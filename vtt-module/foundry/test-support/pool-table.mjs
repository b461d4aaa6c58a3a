// The power-pool table shared by the tests of psionic control and of scenes: the
// companion's power-pool as far as they need it, and the table of power-pool profiles.
import { combatantIdOfRef, defaultMethods, makeTable } from "./scenario.mjs";

export const POOL = "power-pool";

// The companion's power-pool as far as these tests need it: the modes (psionic-wave
// attacks several targets), and an import that reads the profile in the flags with the
// id the foundry.* adapters give.
export const poolMethods = (resolve) => defaultMethods({
  "systems.describe": ({ system }) => ({
    id: system,
    modes: {
      attacks: [{ id: "mental-stab" }, { id: "psionic-wave", several_targets: true },
        { id: "subconscious-subversion", on_success: [{ condition: "frightened", requires_control: false, outlasts_control: true, optional: true }] }],
      defenses: [{ id: "pinnacle-of-will" }, { id: "blank-mind" }, { id: "imagination-swarm", draws_allies: true }],
    },
    combatant_schema: { type: "object", properties: {} },
    house_rules: [],
  }),
  "adapters.import": ({ data }) => {
    if (data.actor.flags?.mindscape?.unreadable) throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/data/actor", message: "not a sheet this adapter reads" }] } };
    return { combatant: { id: combatantIdOfRef({ data }), name: data.actor.name, ...(data.actor.flags?.mindscape?.[POOL] ?? {}) }, warnings: [] };
  },
  "exchange.odds": () => ({ outcomes: { attacker: 0.4, defender: 0.6 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 } }),
  "exchange.resolve": resolve,
});

export const pool = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab", "psionic-wave"], defenses: ["pinnacle-of-will"], ...extra });

// Ulcen (Ann's) attacks; Fenka (Bo's, an unlinked token) and the goblin are the targets.
// `control`: who controls whom, as the flags hold it.
export async function poolTable({ resolve, dialogs = {}, control = () => {} } = {}) {
  const calls = [];
  const t = makeTable({
    methods: poolMethods((params) => { calls.push(params); return resolve ? resolve(params) : { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] }; }),
    dialogs,
  });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  const set = (actor, profile) => { actor.flags.mindscape[POOL] = pool(profile); };
  set(t.actors.ulcen, {});
  set(t.tokens.fenkaToken.actor, {});
  set(t.tokens.goblinToken.actor, {});
  const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { [POOL]: pool({ pool: 0, controlled_by: "goblin-tokG" }) } } });
  control(t, thrall);
  return { t, calls, thrall };
}

export const refId = (ref) => combatantIdOfRef(ref);
