/**
 * The macro API on `game.modules.get("mindscape").api`.
 *
 *   const api = game.modules.get("mindscape").api;
 *   await api.resolve({ attacker: token, targets: [t1], attack: { mode: "mind-thrust", multiplier: 2, range: "short" } });
 *   const odds = await api.odds({ attacker: token, target: t1, attack: { mode: "ego-whip" }, assumeDefense: "mind-blank" });
 *   api.openEncounter();
 *   api.configureActor(actor);
 */
import { UsageError } from "./errors.js";

/** A uuid from a Token placeable, TokenDocument, Actor or uuid string. */
export function uuidOf(thing) {
  if (!thing) return null;
  if (typeof thing === "string") return thing;
  return thing.document?.uuid ?? thing.uuid ?? null;
}

/** Build the API object for a service. */
export function makeApi(svc, { openEncounter } = {}) {
  return {
    /** Resolve an attack; without `attack` the attack dialog opens. Resolves to the outcomes. */
    async resolve({ attacker, targets, attack, physical } = {}) {
      const attackerUuid = uuidOf(attacker) ?? uuidOf(globalThis.canvas?.tokens?.controlled?.[0]);
      if (!attackerUuid) throw new UsageError("MINDSCAPE.Error.NoAttacker");
      const targetUuids = targets ? [].concat(targets).map(uuidOf) : undefined;
      return svc.startAttack({ attackerUuid, targetUuids, attack, physical });
    },
    /** Exact odds of an attack (through the GM's client) as shown in the dialog. */
    odds({ attacker, target, attack, assumeDefense = null }) {
      return svc.relay.toGM("odds", { attackerUuid: uuidOf(attacker), targetUuid: uuidOf(target), attack, assumeDefense });
    },
    /** Open the encounter panel (GM). */
    openEncounter() {
      return openEncounter?.();
    },
    /** Open the psionic profile editor of an actor. */
    configureActor(actor) {
      return svc.configureActor(uuidOf(actor));
    },
    /** The service itself, for integrations that need more. */
    service: svc,
  };
}
