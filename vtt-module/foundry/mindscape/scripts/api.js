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
import { quoted } from "./requests.js";

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
  // A macro's argument the API cannot take is refused naming it, before anything is done.
  const bad = (field, rule, got) => new UsageError("MINDSCAPE.Error.BadArgument", {
    field, rule: svc.t?.localize ? svc.t.localize(`MINDSCAPE.Error.ArgumentRule.${rule}`) : rule, got: quoted(got).slice(0, 80),
  });
  /** The named arguments of a call: an object, or nothing. */
  const named = (args) => {
    if (args === undefined || args === null) return {};
    if (typeof args !== "object" || Array.isArray(args)) throw bad("argument", "object", args);
    return args;
  };
  /** Uuids of `things` (one or many), each entry one `uuidOf` reads, else refused naming `field[i]`. */
  const uuidsOf = (field, things) => listOf(things).map((thing, i) => {
    const uuid = uuidOf(thing);
    if (!uuid) throw bad(`${field}[${i}]`, "token", thing);
    return uuid;
  });
  /** `physical` (or `dialog`): true, false or left out. */
  const flag = (field, value) => {
    if (value !== undefined && value !== null && typeof value !== "boolean") throw bad(field, "boolean", value);
    return value ?? undefined;
  };
  return {
    /**
     * Resolve an attack; without `attack` the attack dialog opens. Resolves to the
     * outcomes. `attack` holds the system's fields (power-pool: `mode`, `pool_dice`,
     * `keep_by` "die" | "action"); the defenders still choose in secret (a power-pool mind
     * that knows Imagination Swarm may draw in allies).
     */
    async resolve(args) {
      let request;
      try {
        const { attacker, targets, attack, physical } = named(args);
        const attackerUuid = attacker === undefined || attacker === null ? uuidOf(globalThis.canvas?.tokens?.controlled?.[0]) : uuidsOf("attacker", attacker)[0];
        if (!attackerUuid) throw new UsageError("MINDSCAPE.Error.NoAttacker");
        const targetUuids = targets === undefined || targets === null ? undefined : uuidsOf("targets", targets);
        request = { attackerUuid, targetUuids, attack, physical: flag("physical", physical) };
      } catch (error) {
        return shown(error);
      }
      return svc.startAttack(request);
    },
    /**
     * Exact odds of an attack (through the GM's client) as shown in the dialog:
     * `{outcomes: [{name, label, p, percent}], extras, damage}`. `target` is one target;
     * `targets` several (a Set, an array, one token or uuids), the first taken unless the
     * mode strikes them all at once (power-pool's psionic wave: the group's odds); without
     * either, the user's targets. Resolves to null after showing the error (no attacker or
     * target, an attack the dialog would not send, a refusal by the companion).
     */
    async odds(args) {
      try {
        const { attacker, target, targets, attack, assumeDefense = null } = named(args);
        const attackerUuid = attacker === undefined || attacker === null ? uuidOf(globalThis.canvas?.tokens?.controlled?.[0]) : uuidsOf("attacker", attacker)[0];
        if (!attackerUuid) throw new UsageError("MINDSCAPE.Error.NoAttacker");
        const targetUuids = target !== undefined && target !== null ? uuidsOf("target", target)
          : targets !== undefined && targets !== null ? uuidsOf("targets", targets) : listOf(svc.game?.user?.targets).map(uuidOf).filter(Boolean);
        if (!targetUuids.length) throw new UsageError("MINDSCAPE.Error.NoTarget");
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
    async endRound(args) {
      let request;
      try {
        const { tokenUuids, choices, physical } = named(args);
        if (choices !== undefined && choices !== null && (typeof choices !== "object" || Array.isArray(choices))) throw bad("choices", "choices", choices);
        const chosen = tokenUuids === undefined || tokenUuids === null ? [...(globalThis.canvas?.tokens?.controlled ?? [])].map(uuidOf).filter(Boolean) : uuidsOf("tokenUuids", tokenUuids);
        request = { tokenUuids: chosen, choices, physical: flag("physical", physical) };
      } catch (error) {
        return shown(error);
      }
      return svc.startEndRound(request);
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
    async rest(args) {
      let request;
      try {
        const { tokenUuids, hours, dialog, physical } = named(args);
        const chosen = tokenUuids === undefined || tokenUuids === null ? [...(globalThis.canvas?.tokens?.controlled ?? [])].map(uuidOf).filter(Boolean) : uuidsOf("tokenUuids", tokenUuids);
        request = { tokenUuids: chosen, hours: hours ?? null, dialog: flag("dialog", dialog), physical: flag("physical", physical) };
      } catch (error) {
        return shown(error);
      }
      return svc.startRest(request);
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
