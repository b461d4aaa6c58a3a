/**
 * The macro API on `game.modules.get("mindscape").api`.
 *
 *   const api = game.modules.get("mindscape").api;
 *   await api.resolve({ attacker: token, targets: [t1], attack: { mode: "mind-thrust", multiplier: 2, range: "short" } });
 *   await api.resolve({ attacker: token, targets: [t1], attack: { mode: "mental-stab", pool_dice: 3, keep_by: "die" } }); // power-pool
 *   const odds = await api.odds({ attacker: token, target: t1, attack: { mode: "ego-whip" }, assumeDefense: "mind-blank" });
 *   api.openEncounter();
 *   api.configureActor(actor);
 *   await api.endRound({ tokenUuids: [t1, t2], choices: { "<combatant id>": { close: true } } });
 *   await api.endRound({ tokenUuids: [ix], choices: { "<ix id>": { release: ["<creature id>"] } } }); // power-pool
 *   await api.rest({ tokenUuids: [t1], hours: 8 });
 *   await api.refreshEncounter();
 */
import { UsageError } from "./errors.js";

/** A uuid from a Token placeable, TokenDocument, Actor or uuid string. */
export function uuidOf(thing) {
  if (!thing) return null;
  if (typeof thing === "string") return thing;
  return thing.document?.uuid ?? thing.uuid ?? null;
}

/**
 * A list from one thing or many: an array, or any other iterable but a string
 * (`game.user.targets` is a Set, `canvas.tokens.controlled` an array).
 */
export function listOf(things) {
  if (things === undefined || things === null) return [];
  if (typeof things !== "string" && typeof things[Symbol.iterator] === "function") return [...things];
  return [things];
}

/** Build the API object for a service. */
export function makeApi(svc, { openEncounter } = {}) {
  // Every call shows its failure to the user in words that say how to fix it and
  // resolves to null, as the service's entry points do.
  const shown = (error) => {
    svc.notifyError(error);
    return null;
  };
  return {
    /**
     * Resolve an attack; without `attack` the attack dialog opens. Resolves to the
     * outcomes. `attack` holds the system's fields (power-pool: `mode`, `pool_dice`,
     * `keep_by` "die" | "action"); the defenders still choose in secret (a power-pool mind
     * that knows Imagination Swarm may draw in allies).
     */
    async resolve({ attacker, targets, attack, physical } = {}) {
      const attackerUuid = uuidOf(attacker) ?? uuidOf(globalThis.canvas?.tokens?.controlled?.[0]);
      if (!attackerUuid) return shown(new UsageError("MINDSCAPE.Error.NoAttacker"));
      const targetUuids = targets === undefined || targets === null ? undefined : listOf(targets).map(uuidOf);
      return svc.startAttack({ attackerUuid, targetUuids, attack, physical });
    },
    /**
     * Exact odds of an attack (through the GM's client) as shown in the dialog:
     * `{outcomes: [{name, label, p, percent}], extras, damage}`. `target` is one target;
     * `targets` several (a Set, an array, one token or uuids), the first taken unless the
     * mode strikes them all at once (power-pool's psionic wave: the group's odds); without
     * either, the user's targets. Resolves to null after showing the error (no attacker or
     * target, an attack the dialog would not send, a refusal by the companion).
     */
    async odds({ attacker, target, targets, attack, assumeDefense = null } = {}) {
      try {
        const attackerUuid = uuidOf(attacker) ?? uuidOf(globalThis.canvas?.tokens?.controlled?.[0]);
        if (!attackerUuid) throw new UsageError("MINDSCAPE.Error.NoAttacker");
        const given = target ?? targets ?? svc.game?.user?.targets;
        const targetUuids = given === undefined || given === null ? [] : listOf(given).map(uuidOf);
        if (!targetUuids.length || !targetUuids.every(Boolean)) throw new UsageError("MINDSCAPE.Error.NoTarget");
        return await svc.relay.toGM("odds", { attackerUuid, targetUuid: targetUuids[0], targetUuids, attack, assumeDefense });
      } catch (error) {
        return shown(error);
      }
    },
    /**
     * GM: end the psionic round for chosen tokens (by default the controlled ones), without
     * the combat tracker. `choices` go to `exchange.end_round` as given, keyed by combatant
     * id (the actor's id; `<actor id>-<token id>` for an unlinked token): revised-2e
     * `{close: true}`, power-pool `{release?: [id], keep?: [{target, by}], cannot_perceive?:
     * [id]}` for a controller. In power-pool the creatures those choices set free that are
     * not among the tokens go along as `puppets` when they are on the scene or in the world,
     * so that their sheets are freed too. Nobody is asked. Tokens of the current
     * encounter's combatants are left out (the encounter ends their rounds) and named to
     * the GM. Resolves to `{summary, updates, messageId, leftOut}` (`leftOut`: the names
     * left out), or null after showing the error (a player's call is refused).
     */
    endRound({ tokenUuids, choices, physical } = {}) {
      const chosen = tokenUuids ? listOf(tokenUuids) : [...(globalThis.canvas?.tokens?.controlled ?? [])];
      return svc.startEndRound({ tokenUuids: chosen.map(uuidOf).filter(Boolean), choices, physical });
    },
    /**
     * GM: a psionic rest for chosen tokens (by default the controlled ones; actors and
     * uuids are taken too). The rest dialog asks the hours (a system whose rest takes
     * them, revised-2e) or confirms one long rest (power-pool), unless `hours` are given
     * or `dialog` is false. A revised-2e open mind goes through its rounds during the
     * rest: `physical` asks for its dice as the setting does. Resolves to `{summary,
     * updates, messageId}`, or null after showing the error (a player's call is refused)
     * or when the dialog is cancelled.
     */
    rest({ tokenUuids, hours, dialog, physical } = {}) {
      const chosen = tokenUuids ? listOf(tokenUuids) : [...(globalThis.canvas?.tokens?.controlled ?? [])];
      return svc.startRest({ tokenUuids: chosen.map(uuidOf).filter(Boolean), hours: hours ?? null, dialog, physical });
    },
    /**
     * GM: take every combatant of the current encounter again from its sheet. Shows which
     * combatants changed which fields (nothing when every sheet matched) and resolves to
     * `[{combatantId, name, changed, revision}]`, or null after showing the error.
     */
    refreshEncounter() {
      return svc.startRefreshEncounter();
    },
    /** Open the encounter panel (GM; a player is told so, and gets null). */
    openEncounter() {
      if (!svc.game?.user?.isGM) return shown(new UsageError("MINDSCAPE.Error.EncounterGMOnly"));
      return openEncounter?.() ?? null;
    },
    /**
     * Open the psionic profile editor of an actor (an owner or the GM). Resolves to
     * `{profile, combatant, warnings}` once saved, or null when cancelled or after
     * showing the error.
     */
    async configureActor(actor) {
      const actorUuid = uuidOf(actor);
      if (!actorUuid) return shown(new UsageError("MINDSCAPE.Error.NoActorGiven"));
      return svc.configureActor(actorUuid);
    },
    /** The service itself, for integrations that need more. */
    service: svc,
  };
}
