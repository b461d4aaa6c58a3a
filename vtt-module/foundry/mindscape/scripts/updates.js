/**
 * Routing the daemon's write-back patches (`updates: [{uuid, update}]`) to documents.
 * The update must land on the actor *as seen through the token used*: a linked token's
 * world actor ("Actor.x"), an unlinked token's own synthetic actor
 * ("Scene.s.Token.t.Actor.x"), never the base actor of an unlinked token, which would
 * change every copy on the map.
 */

/**
 * A participant of an exchange: the token used and the actor seen through it.
 * @typedef {{tokenUuid:string|null, actorUuid:string, actorLink:boolean, baseActorUuid?:string}} Participant
 */

/**
 * Decide where each update goes. An update addressed to a participant's actor goes to
 * that actor, one addressed to a participant's token uuid to that token's actor. One
 * addressed to the base actor of an *unlinked* participant is redirected to that
 * participant's synthetic actor, but only when the base actor is not a participant itself
 * (then the update is its own) and no other unlinked participant shares that base actor
 * (then it cannot be told whose it is, and is refused). Updates to any other document
 * are refused (listed in `refused`) so a faulty adapter cannot write outside the
 * exchange. Several updates to one document are merged in order into one update call.
 * @param {{uuid:string, update:object}[]} updates
 * @param {Participant[]} participants
 * @returns {{plan:{uuid:string, update:object}[], refused:{uuid:string, update:object}[]}}
 */
export function planUpdates(updates, participants) {
  const target = new Map();
  for (const p of participants) {
    target.set(p.actorUuid, p.actorUuid);
    if (p.tokenUuid) target.set(p.tokenUuid, p.actorUuid);
  }
  const copies = new Map(); // base actor uuid -> the synthetic actors of its unlinked participants
  for (const p of participants) {
    if (p.actorLink || !p.baseActorUuid || p.baseActorUuid === p.actorUuid) continue;
    copies.set(p.baseActorUuid, new Set([...(copies.get(p.baseActorUuid) ?? []), p.actorUuid]));
  }
  for (const [base, actors] of copies) {
    if (!target.has(base) && actors.size === 1) target.set(base, [...actors][0]);
  }
  const merged = new Map();
  const refused = [];
  for (const u of updates ?? []) {
    const to = target.get(u?.uuid);
    if (!to || !u.update || typeof u.update !== "object") {
      refused.push(u);
      continue;
    }
    merged.set(to, { ...(merged.get(to) ?? {}), ...u.update });
  }
  return { plan: [...merged].map(([uuid, update]) => ({ uuid, update })), refused };
}

/**
 * Apply a plan: `fromUuid` each document and update it with the dotted paths.
 * @param {{uuid:string, update:object}[]} plan
 * @param {(uuid:string)=>Promise<any>} fromUuid
 * @returns {Promise<{uuid:string, ok:boolean, error?:string}[]>}
 */
export async function applyPlan(plan, fromUuid) {
  const report = [];
  for (const { uuid, update } of plan) {
    try {
      const doc = await fromUuid(uuid);
      if (!doc) throw new Error(`no document ${uuid}`);
      await doc.update(update);
      report.push({ uuid, ok: true });
    } catch (error) {
      report.push({ uuid, ok: false, error: String(error?.message ?? error) });
    }
  }
  return report;
}

/**
 * The participant record for a token document (or an actor without token).
 * @param {{uuid:string, actorLink:boolean, actor:{uuid:string}, baseActor?:{uuid:string}}|null} tokenDocument
 * @param {{uuid:string}} actor
 * @returns {Participant}
 */
export function participantOf(tokenDocument, actor) {
  const a = tokenDocument?.actor ?? actor;
  return {
    tokenUuid: tokenDocument?.uuid ?? null,
    actorUuid: a.uuid,
    actorLink: tokenDocument ? Boolean(tokenDocument.actorLink) : true,
    baseActorUuid: tokenDocument?.baseActor?.uuid ?? (tokenDocument?.actorId ? `Actor.${tokenDocument.actorId}` : a.uuid),
  };
}
