// Registration: settings with the right scopes (VTT.md: URL and token client-scope, world
// options world-scope), hooks for both v12 and v13 names, the macro API at "ready".
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { FakeApplicationV2, FakeServer, FakeSettings, FakeUser, FakeWorld, MODULE_DIR, installGlobals, makeClient, makeUsers } from "../test-support/fakes.mjs";
import { ATTACK_ACTION, ENCOUNTER_ACTION, PROFILE_ACTION, REST_ACTION, hookTable } from "../mindscape/scripts/hooks.js";
import { boot } from "../mindscape/scripts/boot.js";
import { houseRuleValue, houseRulesFor, registerSettings } from "../mindscape/scripts/settings.js";
import { DEFENSE_TIMEOUT_MAX_S } from "../mindscape/scripts/consts.js";

function client(generation = 12) {
  const world = new FakeWorld();
  const gm = new FakeUser({ id: "gm0000", name: "GM", isGM: true });
  const c = makeClient({ server: new FakeServer(), world, users: makeUsers([gm]), user: gm, generation, worldSettings: new Map() });
  world.game = c.game;
  return { c, world };
}

test("module.json declares id, compatibility 12–13, esmodules, styles, English, and the socket", () => {
  const manifest = JSON.parse(readFileSync(path.join(MODULE_DIR, "module.json"), "utf8"));
  assert.equal(manifest.id, "mindscape");
  assert.deepEqual(manifest.compatibility, { minimum: "12", verified: "13" });
  assert.deepEqual(manifest.esmodules, ["scripts/index.js"]);
  assert.deepEqual(manifest.styles, ["styles/mindscape.css"]);
  assert.deepEqual(manifest.languages, [{ lang: "en", name: "English", path: "lang/en.json" }]);
  assert.equal(manifest.socket, true);
  assert.match(manifest.version, /^\d+\.\d+\.\d+$/);
  assert.ok(manifest.title && Array.isArray(manifest.authors) && manifest.authors.every((a) => a.name));
});

test("module.json names only files the module folder has, and only fields Foundry v12 and v13 read", () => {
  const manifest = JSON.parse(readFileSync(path.join(MODULE_DIR, "module.json"), "utf8"));
  const named = [...manifest.esmodules, ...manifest.styles, ...manifest.languages.map((l) => l.path)];
  assert.deepEqual(named.filter((file) => !existsSync(path.join(MODULE_DIR, file))), []);
  // Foundry's PackageManifestData (v12 and v13) for a module, nothing invented.
  const known = new Set(["id", "title", "description", "version", "authors", "compatibility", "esmodules", "scripts", "styles", "languages", "socket", "url", "manifest", "download", "license", "readme", "bugs", "changelog", "relationships", "flags", "media", "packs", "packFolders", "documentTypes", "library", "exclusive", "persistentStorage", "protected", "coreTranslation"]);
  assert.deepEqual(Object.keys(manifest).filter((k) => !known.has(k)), []);
  // Nothing is published (docs/FOUNDRY.md, Install): no address of a release that does
  // not exist. A build that is published adds both, the manifest's own address and its zip.
  assert.equal(Boolean(manifest.manifest), Boolean(manifest.download));
  if (manifest.manifest) {
    assert.match(manifest.manifest, /^https:\/\/.+\/module\.json$/);
    assert.match(manifest.download, /^https:\/\/.+\.zip$/);
  }
  // Every module the entry point imports, and every template boot.js preloads, is there;
  // no template is left out of the preload.
  const scripts = readdirSync(path.join(MODULE_DIR, "scripts"));
  for (const file of scripts) {
    const text = readFileSync(path.join(MODULE_DIR, "scripts", file), "utf8");
    for (const m of text.matchAll(/from "\.\/([^"]+)"/g)) assert.ok(scripts.includes(m[1]), `${file} imports ${m[1]}`);
  }
  const boot = readFileSync(path.join(MODULE_DIR, "scripts/boot.js"), "utf8");
  const preloaded = JSON.parse(/const TEMPLATES = (\[[^\]]*\])/.exec(boot)[1]);
  const templates = readdirSync(path.join(MODULE_DIR, "templates")).map((f) => f.replace(/\.hbs$/, ""));
  assert.deepEqual([...preloaded].sort(), templates.sort());
});

test("docs/FOUNDRY.md says honestly that no release is published, and how to install without one", () => {
  const docs = readFileSync(path.resolve(MODULE_DIR, "../../../docs/FOUNDRY.md"), "utf8");
  const install = docs.slice(docs.indexOf("## Install"), docs.indexOf("\n## ", docs.indexOf("## Install") + 5));
  assert.match(install, /No release is published/);
  assert.match(install, /Data\/modules\/mindscape\//);
});

for (const generation of [12, 13]) {
  test(`v${generation}: init registers settings with their scopes and every hook family; ready exposes the API`, async () => {
    const { c } = client(generation);
    installGlobals(c);
    await import(`../mindscape/scripts/index.js?v=${generation}`);
    for (const fn of c.Hooks.events.get("init")) fn();
    const scope = (k) => c.game.settings.registered.get(`mindscape.${k}`)?.scope;
    assert.equal(scope("daemonUrl"), "client");
    assert.equal(scope("daemonToken"), "client");
    assert.equal(scope("physicalDice"), "client");
    assert.equal(scope("ruleSystem"), "world");
    assert.equal(scope("houseRules"), "world");
    assert.equal(scope("playersMayAttack"), "world");
    assert.equal(scope("rollMode"), "world");
    assert.equal(scope("genericMapping"), "world");
    // The GM switches the tracker's round ends off for the whole world; on by default.
    assert.equal(scope("endRoundWithTracker"), "world");
    assert.equal(c.game.settings.registered.get("mindscape.endRoundWithTracker").default, true);
    assert.equal(c.game.settings.registered.get("mindscape.endRoundWithTracker").config, true);
    // Address and token are set by the restricted pairing menu only: Configure Settings
    // would show the token in plain text.
    assert.equal(c.game.settings.registered.get("mindscape.daemonUrl").config, false);
    assert.equal(c.game.settings.registered.get("mindscape.daemonToken").config, false);
    assert.deepEqual(Object.keys(c.game.settings.registered.get("mindscape.rollMode").choices), ["default", "publicroll", "gmroll", "blindroll", "selfroll"]);
    assert.ok(c.game.settings.menus.get("mindscape.pairing").restricted);
    // Foundry refuses (throws at "init") a menu type that is no FormApplication or
    // ApplicationV2 subclass; it constructs the type and renders it when the GM presses
    // the menu's button, which opens the module's own dialog.
    const opened = [];
    Object.assign(boot.svc, { openPairing: () => opened.push("pairing"), openHouseRules: () => opened.push("house rules") });
    for (const key of ["pairing", "houseRulesMenu"]) {
      const { type } = c.game.settings.menus.get(`mindscape.${key}`);
      assert.ok(type.prototype instanceof globalThis.foundry.applications.api.ApplicationV2, key);
      const app = new type();
      assert.equal(app.render(true), app);
    }
    assert.deepEqual(opened, ["pairing", "house rules"]);
    for (const name of ["renderTokenHUD", "getActorSheetHeaderButtons", "getHeaderControlsActorSheetV2", "getHeaderControlsApplicationV2", "renderChatMessageHTML", "updateCombat", "deleteToken", "createToken"]) {
      assert.equal(c.Hooks.events.get(name)?.length, 1, name);
    }
    // v13 fires the deprecated renderChatMessage (with a warning, jQuery for every
    // listener) as soon as anyone listens to it: only v12 gets a listener.
    assert.equal(c.Hooks.events.has("renderChatMessage"), generation < 13);
    // The relay answers from "init" (a query whose handler is missing is never answered).
    if (generation >= 13) assert.equal(typeof c.CONFIG.queries["mindscape.attack"], "function", "queries registered at init");
    assert.equal(c.listeners.get("module.mindscape")?.length, 1, "socket listener registered at init");
    // The encounter stored when this client loads (another client's), which a change of
    // the setting replaces: the controller notes it at ready.
    const loaded = { id: "enc0", system: "revised-2e", name: "Vault", combatants: {} };
    c.game.settings.shared.set("mindscape.encounter", structuredClone(loaded));
    for (const fn of c.Hooks.events.get("ready")) fn();
    assert.deepEqual(boot.svc.encounters.seenMeta, loaded);
    // A change of the encounter setting reaches the controller with the options its
    // writer gave (End's and Create's mark of the encounter they tell, `saveMeta`).
    const heard = [];
    boot.svc.encounters.encounterSet = (options) => { heard.push(options); return null; };
    await c.game.settings.set("mindscape", "encounter", {}, { mindscape: { told: "enc0" } });
    assert.deepEqual(heard, [{ mindscape: { told: "enc0" } }]);
    const api = c.game.modules.get("mindscape").api;
    const calls = ["resolve", "odds", "openEncounter", "configureActor", "endRound", "rest", "refreshEncounter"];
    assert.deepEqual(calls.filter((k) => typeof api[k] === "function"), calls);
    if (generation >= 13) assert.equal(typeof c.CONFIG.queries["mindscape.attack"], "function");
    assert.equal(c.listeners.get("module.mindscape")?.length, 1);
    assert.ok(c.Hooks.called.some((h) => h.name === "mindscape.ready"));
  });
}

test("the fake settings (test-support) refuse a menu type as Foundry does: no FormApplication or ApplicationV2 subclass, no menu", () => {
  const settings = new FakeSettings(new Map());
  const refusal = { message: "You must provide a menu type that is a FormApplication or ApplicationV2 instance or subclass" };
  for (const type of [class Plain {}, undefined, {}, () => {}]) {
    assert.throws(() => settings.registerMenu("mindscape", "pairing", { name: "x", restricted: true, type }), refusal, String(type?.name));
  }
  assert.equal(settings.menus.size, 0);
  const Menu = class extends FakeApplicationV2 {};
  settings.registerMenu("mindscape", "pairing", { name: "x", restricted: true, type: Menu });
  assert.equal(settings.menus.get("mindscape.pairing").type, Menu);
});

function fakeSvc() {
  const calls = [];
  return { calls, t: { localize: (k) => k }, startAttack: (a) => calls.push(["attack", a]), configureActor: (u) => calls.push(["profile", u]) };
}

test("AppV1 sheets get attack and profile header buttons that act on the sheet's actor", () => {
  const { world, c } = client();
  const actor = world.actor({ id: "zanna", name: "Zanna", ownership: { gm0000: 3 } });
  const token = world.token({ id: "t9", name: "Zanna", actor, actorLink: true });
  const svc = fakeSvc();
  const buttons = [{ label: "Close", class: "close" }];
  hookTable(svc).getActorSheetHeaderButtons({ actor }, buttons);
  assert.deepEqual(buttons.map((b) => b.class), [PROFILE_ACTION, ATTACK_ACTION, "close"]);
  buttons[1].onclick();
  buttons[0].onclick();
  assert.deepEqual(svc.calls, [["attack", { attackerUuid: token.uuid }], ["profile", "Actor.zanna"]]);
  assert.ok(c);
});

test("a world actor's sheet attacks through its linked token, else its first unlinked one", () => {
  const { world } = client();
  const actor = world.actor({ id: "ogre", name: "Ogre", ownership: { gm0000: 3 } });
  const copy = world.token({ id: "t1", name: "Ogre (copy)", actor, actorLink: false });
  const svc = fakeSvc();
  const attack = () => {
    const buttons = [];
    hookTable(svc).getActorSheetHeaderButtons({ actor }, buttons);
    buttons.find((b) => b.class === ATTACK_ACTION).onclick();
    return svc.calls.at(-1)[1].attackerUuid;
  };
  assert.equal(attack(), copy.uuid);
  // A linked token placed after the copy is still the one it fights through.
  const linked = world.token({ id: "t2", name: "Ogre", actor, actorLink: true });
  assert.equal(attack(), linked.uuid);
});

test("AppV2 sheets get the controls once, even when both hook names fire", () => {
  const { world } = client(13);
  const actor = world.actor({ id: "fenka", name: "Fenka", ownership: { gm0000: 3 } });
  const svc = fakeSvc();
  const controls = [];
  const table = hookTable(svc);
  table.getHeaderControlsActorSheetV2({ document: actor }, controls);
  table.getHeaderControlsApplicationV2({ document: actor }, controls);
  assert.deepEqual(controls.map((c) => c.action), [ATTACK_ACTION, PROFILE_ACTION]);
  controls[0].onClick();
  // No token on the map: the actor itself attacks.
  assert.deepEqual(svc.calls, [["attack", { attackerUuid: "Actor.fenka" }]]);
  // Other AppV2 windows (not actor sheets) get nothing.
  const other = [];
  table.getHeaderControlsApplicationV2({ document: { documentName: "JournalEntry" } }, other);
  assert.equal(other.length, 0);
});

test("v13: one click on a header control runs it once, though core runs its onClick and then the sheet's action of that name", () => {
  const { world } = client(13);
  const actor = world.actor({ id: "fenka", name: "Fenka", ownership: { gm0000: 3 } });
  const svc = { ...fakeSvc(), game: world.game };
  const app = { document: actor, options: { actions: {} } };
  const controls = [];
  hookTable(svc).getHeaderControlsApplicationV2(app, controls);
  for (const control of controls) {
    const click = { type: "click", button: 0 };
    // ApplicationV2#_renderHeaderControl: the button's listener calls onClick; the click
    // bubbles to the window, whose listener runs options.actions[li.dataset.action].
    control.onClick(click);
    app.options.actions[control.action].call(app, click, { dataset: { action: control.action } });
  }
  assert.deepEqual(svc.calls.map(([what]) => what), ["attack", "profile"]);
  // A core without onClick runs the action alone, once per click.
  app.options.actions[ATTACK_ACTION].call(app, { type: "click" }, {});
  app.options.actions[ATTACK_ACTION].call(app, { type: "click" }, {});
  assert.equal(svc.calls.filter(([what]) => what === "attack").length, 3);
});

test("v13: one click after the sheet was rendered again (an actor renamed: new header controls, the first render's action kept) runs each control once", () => {
  const { world } = client(13);
  const actor = world.actor({ id: "fenka", name: "Fenka", ownership: { gm0000: 3 } });
  const svc = { ...fakeSvc(), game: world.game };
  const app = { document: actor, options: { actions: {} } };
  const table = hookTable(svc);
  // DocumentSheetV2 renders the header again: the hook runs with a fresh controls list.
  table.getHeaderControlsApplicationV2(app, []);
  const controls = [];
  table.getHeaderControlsApplicationV2(app, controls);
  for (const control of controls) {
    const click = { type: "click", button: 0 };
    control.onClick(click);
    app.options.actions[control.action].call(app, click, { dataset: { action: control.action } });
  }
  assert.deepEqual(svc.calls.map(([what]) => what), ["attack", "profile"]);
});

test("v13: the sheet's action acts on the sheet it is called for", () => {
  const { world } = client(13);
  const fenka = world.actor({ id: "fenka", name: "Fenka", ownership: { gm0000: 3 } });
  const ulcen = world.actor({ id: "ulcen", name: "Ulcen", ownership: { gm0000: 3 } });
  const svc = { ...fakeSvc(), game: world.game };
  const actions = {};
  hookTable(svc).getHeaderControlsApplicationV2({ document: fenka, options: { actions } }, []);
  actions[PROFILE_ACTION].call({ document: ulcen, options: { actions } }, { type: "click" }, {});
  assert.deepEqual(svc.calls, [["profile", "Actor.ulcen"]]);
});

test("hookTable: renderChatMessage on v12 only, both when the generation cannot be read", () => {
  assert.ok("renderChatMessage" in hookTable({ game: { release: { generation: 12 } } }));
  assert.ok(!("renderChatMessage" in hookTable({ game: { release: { generation: 13 } } })));
  for (const game of [undefined, {}, { release: {} }]) {
    const table = hookTable({ game });
    assert.ok("renderChatMessage" in table && "renderChatMessageHTML" in table);
  }
});

test("v13: one click on the GM's Rest header control rests once (power-pool), like attack and profile", () => {
  const { world } = client(13);
  const actor = world.actor({ id: "fenka", name: "Fenka", ownership: { gm0000: 3 } });
  const svc = { ...fakeSvc(), game: world.game, system: "power-pool", startRest: (a) => svc.calls.push(["rest", a]) };
  const app = { document: actor, options: { actions: {} } };
  const controls = [];
  hookTable(svc).getHeaderControlsApplicationV2(app, controls);
  assert.deepEqual(controls.map((c) => c.action), [ATTACK_ACTION, PROFILE_ACTION, REST_ACTION]);
  for (const control of controls) {
    const click = { type: "click", button: 0 };
    control.onClick(click);
    app.options.actions[control.action].call(app, click, { dataset: { action: control.action } });
  }
  assert.deepEqual(svc.calls.map(([what]) => what), ["attack", "profile", "rest"]);
  assert.deepEqual(svc.calls[2][1], { tokenUuids: ["Actor.fenka"] });
});

test("v13: an owned item's sheet or a token's window (which have an actor too) get no Mindscape controls", () => {
  const { world } = client(13);
  const actor = world.actor({ id: "fenka", name: "Fenka", ownership: { gm0000: 3 } });
  const table = hookTable(fakeSvc());
  for (const document of [{ documentName: "Item", actor, isOwner: true }, { documentName: "Token", actor, isOwner: true }]) {
    const controls = [];
    const app = { document, actor, options: { actions: {} } };
    table.getHeaderControlsApplicationV2(app, controls);
    assert.deepEqual([controls, app.options.actions], [[], {}], document.documentName);
  }
});

test("sheets of actors the user does not own get no Mindscape buttons", () => {
  const { world } = client();
  const actor = world.actor({ id: "x", name: "X" });
  Object.defineProperty(actor, "isOwner", { value: false });
  const buttons = [];
  hookTable(fakeSvc()).getActorSheetHeaderButtons({ actor }, buttons);
  assert.equal(buttons.length, 0);
});

/** A player's client (Ann), with Ann's actor and one owned by Bo, each with a linked token. */
function playerClient(generation) {
  const world = new FakeWorld();
  const gm = new FakeUser({ id: "gm0000", name: "GM", isGM: true });
  const ann = new FakeUser({ id: "pl0001", name: "Ann" });
  const bo = new FakeUser({ id: "pl0002", name: "Bo" });
  const c = makeClient({ server: new FakeServer(), world, users: makeUsers([gm, ann, bo]), user: ann, generation, worldSettings: new Map() });
  world.game = c.game;
  const own = world.actor({ id: "ulcen", name: "Ulcen", ownership: { pl0001: 3 } });
  const other = world.actor({ id: "fenka", name: "Fenka", ownership: { pl0002: 3 } });
  world.token({ id: "tokU", name: "Ulcen", actor: own, actorLink: true });
  world.token({ id: "tokF", name: "Fenka", actor: other, actorLink: true });
  return { own, other, svc: { ...fakeSvc(), game: c.game } };
}

test("v13 sheets (AppV2) of actors the user does not own get no Mindscape controls, by either hook name", () => {
  const { own, other, svc } = playerClient(13);
  assert.equal(other.isOwner, false);
  const table = hookTable(svc);
  for (const hook of ["getHeaderControlsActorSheetV2", "getHeaderControlsApplicationV2"]) {
    for (const app of [{ document: other, options: { actions: {} } }, { actor: other, document: other, options: { actions: {} } }]) {
      const controls = [];
      table[hook](app, controls);
      assert.deepEqual(controls, [], hook);
      assert.deepEqual(app.options.actions, {}, hook);
    }
    // The player's own actor's sheet gets them.
    const controls = [];
    table[hook]({ document: own }, controls);
    assert.deepEqual(controls.map((c) => c.action), [ATTACK_ACTION, PROFILE_ACTION], hook);
  }
});

/** Just enough of a DOM element for the token HUD hook: children, dataset, queries by data-action. */
class FakeElement {
  constructor(className = "") { this.className = className; this.dataset = {}; this.children = []; this.attributes = {}; this.innerHTML = ""; }
  append(...nodes) { this.children.push(...nodes); }
  setAttribute(name, value) { this.attributes[name] = value; }
  addEventListener(type, fn) { this.listener = fn; }
  all() { return this.children.flatMap((n) => [n, ...n.all()]); }
  querySelector(selector) {
    const cls = /^\.col\.(\w+)$/.exec(selector);
    const action = /^\[data-action="([^"]+)"\]$/.exec(selector);
    return this.all().find((n) => (cls && n.className === `col ${cls[1]}`) || (action && n.dataset.action === action[1])) ?? null;
  }
}

for (const generation of [12, 13]) {
  test(`v${generation}: the token HUD of a token whose actor the user does not own gets no Mindscape button`, (t) => {
    const saved = globalThis.document;
    globalThis.document = { createElement: () => new FakeElement() };
    t.after(() => { if (saved === undefined) delete globalThis.document; else globalThis.document = saved; });
    const { own, other, svc } = playerClient(generation);
    const hud = () => {
      const root = new FakeElement("placeable-hud");
      root.append(new FakeElement("col left"), new FakeElement("col right"));
      // v12 hands the hook jQuery, v13 the element.
      return { root, html: generation >= 13 ? root : { 0: root, length: 1, jquery: "3.7.1" } };
    };
    const table = hookTable(svc);
    const theirs = hud();
    table.renderTokenHUD({ object: { document: other.getActiveTokens(false, true)[0], actor: other } }, theirs.html);
    assert.equal(theirs.root.querySelector(".col.right").children.length, 0);
    assert.equal(theirs.root.all().length, 2);
    // Ann's own token gets the attack button, which attacks with that token.
    const mine = hud();
    const token = own.getActiveTokens(false, true)[0];
    table.renderTokenHUD({ object: { document: token, actor: own } }, mine.html);
    const button = mine.root.querySelector(`[data-action="${ATTACK_ACTION}"]`);
    assert.ok(button);
    assert.equal(mine.root.querySelector(`[data-action="${ENCOUNTER_ACTION}"]`), null, "the encounter panel is the GM's");
    button.listener({ preventDefault() {}, stopPropagation() {} });
    assert.deepEqual(svc.calls, [["attack", { attackerUuid: token.uuid }]]);
  });
}

test("the GM's token HUD: attack and encounter buttons in the right column, named for screen readers, added once however often it renders; a click stays Mindscape's", (t) => {
  const saved = globalThis.document;
  globalThis.document = { createElement: () => new FakeElement() };
  t.after(() => { if (saved === undefined) delete globalThis.document; else globalThis.document = saved; });
  const { world, c } = client(13);
  const actor = world.actor({ id: "zanna", name: "Zanna", ownership: { gm0000: 3 } });
  const token = world.token({ id: "t9", name: "Zanna", actor, actorLink: true });
  const svc = { ...fakeSvc(), game: c.game };
  svc.openEncounter = () => svc.calls.push(["encounter"]);
  const root = new FakeElement("placeable-hud");
  root.append(new FakeElement("col left"), new FakeElement("col right"));
  const hud = { object: { document: token, actor } };
  hookTable(svc).renderTokenHUD(hud, root);
  hookTable(svc).renderTokenHUD(hud, root);
  const right = root.querySelector(".col.right");
  assert.deepEqual(right.children.map((b) => [b.dataset.action, b.attributes["aria-label"]]), [
    [ATTACK_ACTION, "MINDSCAPE.Attack.Button"], [ENCOUNTER_ACTION, "MINDSCAPE.Encounter.Title"],
  ]);
  assert.equal(root.querySelector(".col.left").children.length, 0);
  const stopped = [];
  for (const button of right.children) button.listener({ preventDefault() {}, stopPropagation: () => stopped.push(button.dataset.action) });
  assert.deepEqual(stopped, [ATTACK_ACTION, ENCOUNTER_ACTION], "the HUD's own click handlers never see it");
  assert.deepEqual(svc.calls, [["attack", { attackerUuid: token.uuid }], ["encounter"]]);
  // A player's HUD has no encounter button, even where the panel could be opened.
  const player = playerClient(13);
  player.svc.openEncounter = () => player.svc.calls.push(["encounter"]);
  const mine = new FakeElement("placeable-hud");
  mine.append(new FakeElement("col left"), new FakeElement("col right"));
  hookTable(player.svc).renderTokenHUD({ object: { document: player.own.getActiveTokens(false, true)[0], actor: player.own } }, mine);
  assert.deepEqual(mine.querySelector(".col.right").children.map((b) => b.dataset.action), [ATTACK_ACTION]);
});

test("AppV1: the GM's Psionic rest on a world actor's sheet rests that world actor, not one of its unlinked tokens", () => {
  const { world, c } = client();
  const actor = world.actor({ id: "goblin", name: "Goblin", ownership: { gm0000: 3 } });
  world.token({ id: "t7", name: "Goblin", actor, actorLink: false });
  const svc = { ...fakeSvc(), game: c.game, system: "power-pool" };
  svc.startRest = (r) => svc.calls.push(["rest", r]);
  const buttons = [];
  hookTable(svc).getActorSheetHeaderButtons({ actor }, buttons);
  buttons.find((b) => b.class === REST_ACTION).onclick();
  assert.deepEqual(svc.calls, [["rest", { tokenUuids: ["Actor.goblin"] }]]);
});

test("every setting is registered with its language file's name and hint; the defense timeout, the generic mapping and the encounter have their defaults; only the GM opens either menu", () => {
  const { c } = client();
  class Menu extends FakeApplicationV2 {}
  registerSettings(c.game, { PairingMenu: Menu, HouseRulesMenu: Menu });
  const registered = c.game.settings.registered;
  for (const [key, spec] of registered) {
    const name = key.slice("mindscape.".length);
    assert.deepEqual([spec.name, spec.hint], [`MINDSCAPE.Setting.${name}.Name`, `MINDSCAPE.Setting.${name}.Hint`], key);
  }
  const timeout = registered.get("mindscape.defenseTimeout");
  assert.deepEqual([timeout.scope, timeout.config, timeout.default, timeout.range], ["world", true, 30, { min: 5, max: DEFENSE_TIMEOUT_MAX_S, step: 5 }]);
  assert.deepEqual(registered.get("mindscape.genericMapping").default, { version: 1, fields: {} });
  // The encounter's record is the panel's own: not in Configure Settings.
  assert.deepEqual([registered.get("mindscape.encounter").scope, registered.get("mindscape.encounter").config, registered.get("mindscape.encounter").default], ["world", false, {}]);
  assert.deepEqual(["pairing", "houseRulesMenu"].map((k) => c.game.settings.menus.get(`mindscape.${k}`).restricted), [true, true]);
});

test("a system's house rules are read as a copy: changing what was read leaves the world's setting alone", async () => {
  const { c } = client();
  registerSettings(c.game, {});
  await c.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-MODE-LIMITS": false } });
  const read = houseRulesFor(c.game, "revised-2e");
  read["H-2E-MODE-LIMITS"] = true;
  assert.deepEqual(houseRulesFor(c.game, "revised-2e"), { "H-2E-MODE-LIMITS": false });
  assert.deepEqual(houseRulesFor(c.game, "power-pool"), {});
});

test("a house rule typed as a number and left blank or typed as none is saved as its default, not 0 or NaN; a number typed is that number, a flag true or false, a text as given", () => {
  // No rule the companion lists today is a number without choices (power-pool's
  // H-PP-BLANK-SAVE has its list), so its dialog shows no such box yet.
  const save = { default: 15 };
  assert.deepEqual(["", "  ", undefined, null, "twelve", "12abc", "NaN", "Infinity"].map((raw) => houseRuleValue(save, raw)), [15, 15, 15, 15, 15, 15, 15, 15]);
  assert.deepEqual(["12", " 0 ", "-3", "2.5"].map((raw) => houseRuleValue(save, raw)), [12, 0, -3, 2.5]);
  assert.deepEqual(["on", undefined, ""].map((raw) => houseRuleValue({ default: false }, raw)), [true, false, false]);
  assert.deepEqual(["all-dice", ""].map((raw) => houseRuleValue({ default: "one-die" }, raw)), ["all-dice", ""]);
});

test("the fake settings (test-support) refuse a player's client a world setting as Foundry does (SETTINGS_MODIFY: the server's error shown, then the promise rejected), and leave its client settings to it", async () => {
  const world = new FakeWorld();
  const server = new FakeServer();
  const shared = new Map();
  const gm = new FakeUser({ id: "gm0000", name: "GM", isGM: true });
  const player = new FakeUser({ id: "pl0001", name: "Player" });
  const users = makeUsers([gm, player]);
  const heard = [];
  const clients = [gm, player].map((user) => {
    const c = makeClient({ server, world, users, user, worldSettings: shared });
    registerSettings(c.game, null, { encounter: (value) => heard.push([user.id, value]) });
    return c;
  });
  const [gmClient, playerClient] = clients;
  await gmClient.game.settings.set("mindscape", "encounter", { id: "enc1" });
  assert.deepEqual(heard, [["gm0000", { id: "enc1" }], ["pl0001", { id: "enc1" }]]);
  heard.length = 0;
  await assert.rejects(playerClient.game.settings.set("mindscape", "encounter", { id: "enc2" }), /lacks permission to update Setting \[mindscape\.encounter\]/);
  assert.deepEqual(playerClient.game.settings.get("mindscape", "encounter"), { id: "enc1" });
  assert.deepEqual(gmClient.game.settings.get("mindscape", "encounter"), { id: "enc1" });
  assert.deepEqual(heard, []);
  assert.deepEqual([playerClient.notes.error, gmClient.notes.error], [["User Player lacks permission to update Setting [mindscape.encounter]"], []]);
  await playerClient.game.settings.set("mindscape", "physicalDice", true);
  assert.equal(playerClient.game.settings.get("mindscape", "physicalDice"), true);
  assert.equal(gmClient.game.settings.get("mindscape", "physicalDice"), false);
});
