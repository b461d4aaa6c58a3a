/**
 * Hook registrations: token HUD button, actor-sheet header controls (AppV1 and AppV2),
 * chat-card listeners (v12 and v13 names), the combat tracker's rounds, deleted tokens
 * (whether they were linked, for the encounter) and tokens made again (Foundry's undo). Each hook family
 * is registered for both versions, the one the running Foundry does not fire staying
 * silent; but for `renderChatMessage`, which v13 fires only when someone listens
 * (`hookTable`).
 */
import { MODULE_ID } from "./consts.js";
import { elementOf } from "./foundry.js";
import { endedRound } from "./rounds.js";
import { restsIn } from "./rest.js";

export const ATTACK_ACTION = `${MODULE_ID}-attack`;
export const PROFILE_ACTION = `${MODULE_ID}-profile`;
export const ENCOUNTER_ACTION = `${MODULE_ID}-encounter`;
export const REST_ACTION = `${MODULE_ID}-rest`;

/**
 * Whether this client's sheets offer "Psionic rest": only to a GM (a rest gives PSPs and
 * pool dice back), and only in a world whose system has a rest rule (never
 * combat-strength). Header hooks are synchronous, so this is decided from the system id.
 */
export function restOffered(svc) {
  return Boolean(svc.game?.user?.isGM) && restsIn(svc.system);
}

/**
 * The token (document) uuid an actor sheet attacks with: a token's own actor, its token;
 * a world actor, its linked token on the scene, else the first of its unlinked ones (as
 * `Mindscape.docs` picks), else the actor itself.
 */
export function sheetAttackerUuid(actor) {
  if (actor?.isToken && actor.token) return actor.token.uuid;
  const tokens = actor?.getActiveTokens?.(false, true) ?? [];
  const token = tokens.find((t) => t.actorLink) ?? tokens[0];
  return token?.uuid ?? actor?.uuid;
}

/** One token-HUD control: a localized tooltip, a Font Awesome icon, a click that stays ours. */
function hudButton(svc, action, labelKey, icon, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "control-icon mindscape-hud";
  button.dataset.action = action;
  button.dataset.tooltip = svc.t.localize(labelKey);
  button.setAttribute("aria-label", svc.t.localize(labelKey));
  button.innerHTML = `<i class="fas ${icon}"></i>`;
  button.addEventListener("click", (event) => {
    event.preventDefault();
    event.stopPropagation();
    onClick();
  });
  return button;
}

/** Add the HUD button (v12 jQuery, v13 HTMLElement). */
export function onRenderTokenHUD(svc, hud, html) {
  const root = elementOf(html);
  if (!root || root.querySelector(`[data-action="${ATTACK_ACTION}"]`)) return;
  const token = hud.object ?? hud.token;
  const actor = token?.actor ?? token?.document?.actor;
  if (!actor || !actor.isOwner) return;
  const column = root.querySelector(".col.right") ?? root.querySelector(".col.left") ?? root;
  column.append(hudButton(svc, ATTACK_ACTION, "MINDSCAPE.Attack.Button", "fa-brain",
    () => svc.startAttack({ attackerUuid: token.document.uuid })));
  // The GM also gets the encounter panel here, next to the tokens it will hold.
  if (svc.game?.user?.isGM && svc.openEncounter) {
    column.append(hudButton(svc, ENCOUNTER_ACTION, "MINDSCAPE.Encounter.Title", "fa-users",
      () => svc.openEncounter()));
  }
}

/** AppV1 sheets (v12 core, dnd5e 4.x): header buttons. */
export function onGetActorSheetHeaderButtons(svc, sheet, buttons) {
  const actor = sheet.actor ?? sheet.document;
  if (!actor?.isOwner) return;
  const ours = [
    { label: "MINDSCAPE.Profile.Button", class: PROFILE_ACTION, icon: "fas fa-head-side-virus", onclick: () => svc.configureActor(actor.uuid) },
    { label: "MINDSCAPE.Attack.Button", class: ATTACK_ACTION, icon: "fas fa-brain", onclick: () => svc.startAttack({ attackerUuid: sheetAttackerUuid(actor) }) },
  ];
  // The sheet's own actor rests: a world actor's sheet the world actor, a token's sheet that token's actor.
  if (restOffered(svc)) ours.push({ label: "MINDSCAPE.Rest.Button", class: REST_ACTION, icon: "fas fa-bed", onclick: () => svc.startRest({ tokenUuids: [actor.uuid] }) });
  buttons.unshift(...ours);
}

/** The header actions each click event has already run (`oncePerClick`). */
const clicked = new WeakMap();

/**
 * One click, one call: v13 runs a header control's `onClick` from its button and then,
 * as the click bubbles to the window, the application's action of the same name; a core
 * without `onClick` runs the action only. Both get the same click event, so the guard
 * is kept on the event, by action: whichever render's closures run for it (v13's
 * DocumentSheetV2 builds the header controls again, with new `onClick`s, when the actor
 * is renamed, while the sheet's action stays the first one), `action` runs once per click.
 * @param {string} action
 * @param {any} event
 * @param {() => unknown} fn
 */
function oncePerClick(action, event, fn) {
  if (event !== null && typeof event === "object") {
    const done = clicked.get(event) ?? new Set();
    clicked.set(event, done);
    if (done.has(action)) return undefined;
    done.add(action);
  }
  return fn();
}

/** AppV2 sheets (v13 core, dnd5e 5.x): header controls, added once per sheet. */
export function onGetHeaderControls(svc, app, controls) {
  // An actor's own sheet only: an owned item's sheet or a token's window has an `actor`
  // too (the one it belongs to), and its header is no place to act as that actor.
  const actor = app.document?.documentName === "Actor" ? app.document : null;
  if (!actor?.isOwner) return;
  if (controls.some((c) => c.action === ATTACK_ACTION)) return;
  const runs = {
    [ATTACK_ACTION]: (a) => svc.startAttack({ attackerUuid: sheetAttackerUuid(a) }),
    [PROFILE_ACTION]: (a) => svc.configureActor(a.uuid),
  };
  if (restOffered(svc)) runs[REST_ACTION] = (a) => svc.startRest({ tokenUuids: [a.uuid] });
  const onClick = (action) => (event) => oncePerClick(action, event, () => runs[action](actor));
  controls.push(
    { action: ATTACK_ACTION, icon: "fas fa-brain", label: "MINDSCAPE.Attack.Button", onClick: onClick(ATTACK_ACTION) },
    { action: PROFILE_ACTION, icon: "fas fa-head-side-virus", label: "MINDSCAPE.Profile.Button", onClick: onClick(PROFILE_ACTION) },
  );
  if (runs[REST_ACTION]) controls.push({ action: REST_ACTION, icon: "fas fa-bed", label: "MINDSCAPE.Rest.Button", onClick: onClick(REST_ACTION) });
  // A header control runs the application's action of the same name; register ours on
  // this sheet too, for cores that dispatch by action rather than by `onClick`
  // (`oncePerClick` keeps a core that does both from running them twice). The action
  // acts on the sheet it is called for (`this`, as ApplicationV2 calls its actions), so
  // the one registered at the first render serves every later one.
  if (app.options?.actions && typeof app.options.actions === "object") {
    for (const action of Object.keys(runs)) {
      app.options.actions[action] ??= function sheetAction(event) {
        const own = this?.document?.documentName === "Actor" ? this.document : actor;
        return oncePerClick(action, event, () => runs[action](own));
      };
    }
  }
}

/**
 * Chat card behaviour: the details toggle, and the mark of a card whose encounter step
 * the GM undid (its `flags.mindscape.undone`, encounter.js `markUndone`). Works on
 * jQuery (v12) and HTMLElement (v13).
 */
export function onRenderChatMessage(svc, message, html) {
  const root = elementOf(html);
  const card = root?.querySelector?.(".mindscape-card");
  // Bind once: a message rendered again (an undo marks its card) may reuse its element,
  // and a core firing both chat hooks would flip the toggle twice per click.
  if (!card || card.dataset.mindscapeBound) return;
  card.dataset.mindscapeBound = "1";
  if (message?.flags?.[MODULE_ID]?.undone) {
    card.classList.add("undone");
    const mark = document.createElement("p");
    mark.className = "mindscape-undone";
    mark.textContent = svc.t.localize("MINDSCAPE.Card.Undone");
    card.prepend(mark);
  }
  // The toggle is a button that says whether the details are open (`aria-expanded`).
  for (const toggle of card.querySelectorAll("[data-mindscape-toggle]")) {
    toggle.addEventListener("click", (event) => {
      event.preventDefault();
      const open = card.classList.toggle("expanded");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }
}

/**
 * The combat tracker changed (every client gets `updateCombat`): when it moved on from a
 * round that had begun (rounds.js `endedRound`), the client that talks to the companion
 * ends that psionic round (service.js `endCombatRound`, which never rejects).
 * @returns {Promise<object|null>|null} the end of round under way, if any
 */
export function onUpdateCombat(svc, combat, changed, options) {
  const round = endedRound(combat, changed, options);
  if (round === null || !svc.relay?.isActiveGM) return null;
  return svc.endCombatRound(combat, round);
}

/**
 * Foundry deleted a token (every client gets `deleteToken`): whether it was linked then
 * is kept (encounter.js `tokenDeleted`), and stored with the encounter by the active
 * GM's client only, so one save is made.
 * @returns {Promise<void>|null} the record being stored, if any
 */
export function onDeleteToken(svc, token) {
  return svc.encounters?.tokenDeleted(token, { store: Boolean(svc.relay?.isActiveGM) }) ?? null;
}

/**
 * Foundry made a token (every client gets `createToken`): one made again under a deleted
 * token's uuid (Foundry's undo) drops the record of that deletion (encounter.js
 * `tokenCreated`), here and, by the active GM's client only, in the encounter.
 * @returns {Promise<void>|null} the record being cleared, if any
 */
export function onCreateToken(svc, token) {
  return svc.encounters?.tokenCreated(token, { store: Boolean(svc.relay?.isActiveGM) }) ?? null;
}

/**
 * The hook names this module listens to, and their handlers. Exported for tests.
 *
 * `renderChatMessage` only before v13: v13's `ChatMessage#renderHTML` fires it whenever
 * any module listens to it (`"renderChatMessage" in Hooks.events`), with a compatibility
 * warning and every listener handed jQuery; v13 fires `renderChatMessageHTML`, which v12
 * never fires. `game.release` is set when Foundry builds `game`, before "init"; a core
 * whose generation cannot be read gets both.
 */
export function hookTable(svc) {
  const generation = Number(svc.game?.release?.generation);
  const table = {
    renderTokenHUD: (hud, html) => onRenderTokenHUD(svc, hud, html),
    getActorSheetHeaderButtons: (sheet, buttons) => onGetActorSheetHeaderButtons(svc, sheet, buttons),
    getHeaderControlsActorSheetV2: (app, controls) => onGetHeaderControls(svc, app, controls),
    getHeaderControlsApplicationV2: (app, controls) => onGetHeaderControls(svc, app, controls),
    renderChatMessageHTML: (message, html) => onRenderChatMessage(svc, message, html),
    updateCombat: (combat, changed, options) => onUpdateCombat(svc, combat, changed, options),
    deleteToken: (token) => onDeleteToken(svc, token),
    createToken: (token) => onCreateToken(svc, token),
  };
  if (!(generation >= 13)) table.renderChatMessage = (message, html) => onRenderChatMessage(svc, message, html);
  return table;
}

/** Register every UI hook. */
export function registerUiHooks(Hooks, svc) {
  for (const [name, fn] of Object.entries(hookTable(svc))) Hooks.on(name, fn);
}
