// The encounter meta's writes (a hold's, saveHeld; a deleted token's record, tokenDeleted; add's last save) racing one another while one is on its way to the server: none writes an older meta over another.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";
import { tick } from "../test-support/fakes.mjs";
import { hookTable } from "../mindscape/scripts/hooks.js";

async function setup({ addGate } = {}) {
  const { methods } = encounterMethods();
  const wrapped = addGate ? { ...methods, "encounter.add": async (p) => { await addGate.wait(); return methods["encounter.add"](p); } } : methods;
  const t = makeTable({ methods: wrapped });
  const ctl = t.clients.gm.svc.encounters;
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  const prime = t.world.token({ id: "tokF2", name: "Fenka Prime", actor: t.actors.fenka, actorLink: true });
  await ctl.create([ulcenToken.uuid, fenkaToken.uuid, goblinToken.uuid, prime.uuid], "Vault");
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  settings.set = async (ns, key, value, options) => { await tick(10); return set(ns, key, value, options); };
  const del = (token) => { t.world.docs.delete(token.uuid); return hookTable(t.clients.gm.svc).deleteToken(token); };
  return { t, ctl, prime, del };
}

test("two linked tokens deleted while a hold waits for the first record: the hold and both records are kept", async () => {
  const { t, ctl, prime, del } = await setup();
  const a = del(t.tokens.ulcenToken);
  await tick(2);
  const hold = ctl.saveHeld(new Map([["fenka-tokF", { write: null }]]), { id: "enc1" });
  await tick(2);
  const b = del(prime);
  await Promise.all([a, hold, b]);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, true);
  const cid = Object.entries(ctl.meta.combatants).find(([, c]) => c.tokenUuid === prime.uuid)[0];
  assert.equal(ctl.meta.combatants[cid].deletedLinked, true);
  assert.deepEqual(ctl.meta.held, { "fenka-tokF": { write: null } }, "the hold is kept");
});

function gate() {
  let open = false; let release; const p = new Promise((r) => { release = r; });
  return { wait: () => (open ? p : Promise.resolve()), arm: () => { open = true; }, release };
}

test("a hold being stored when add reads the meta for its last save: the hold is kept", async () => {
  const g = gate();
  const { t, ctl } = await setup({ addGate: g });
  const extra = t.world.token({ id: "tokX", name: "Extra", actor: t.actors.fenka, actorLink: false });
  g.arm();
  const adding = ctl.add([extra.uuid]);
  await tick(2);
  const hold = ctl.saveHeld(new Map([["fenka-tokF", { write: null }]]), { id: "enc1" });
  await tick(2);
  g.release();
  await Promise.all([adding, hold]);
  assert.deepEqual(ctl.meta.held, { "fenka-tokF": { write: null } }, "the hold is kept");
});

test("a linked token deleted while add's last save is being stored: the combatants added are kept", async () => {
  const { t, ctl, del } = await setup();
  const extra = t.world.token({ id: "tokX", name: "Extra", actor: t.actors.fenka, actorLink: false });
  const adding = ctl.add([extra.uuid]);
  // add's encounter.add answered; its last save is on its way to the server.
  for (let i = 0; i < 6 && !t.daemon.calls.some((c) => c.method === "encounter.add" && c.params.combatant?.data?.token?.uuid === extra.uuid); i++) await tick(1);
  await tick(2);
  const rec = del(t.tokens.ulcenToken);
  await Promise.all([adding, rec]);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, true);
  assert.ok(Object.values(ctl.meta.combatants).some((c) => c.tokenUuid === extra.uuid), "Extra is still in the meta");
});

test("End pressed after add's last encounter.add answered, while add waits for a deleted token's record: the ended encounter's meta is not stored again", async () => {
  const { t, ctl, del } = await setup();
  const extra = t.world.token({ id: "tokX", name: "Extra", actor: t.actors.fenka, actorLink: false });
  // Every value Foundry is asked to store as the encounter setting from now on.
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  const stored = [];
  settings.set = (ns, key, value, options) => { if (key === "encounter") stored.push(structuredClone(value)); return set(ns, key, value, options); };
  const rec = del(t.tokens.ulcenToken);
  const adding = ctl.add([extra.uuid]);
  // The companion answered add's encounter.add; add waits for the record before its last save.
  for (let i = 0; i < 6 && !t.daemon.calls.some((c) => c.method === "encounter.add" && c.params.combatant?.data?.token?.uuid === extra.uuid); i++) await tick(1);
  await tick(2);
  assert.ok(ctl.heldSaves.size, "the record is still being stored");
  const from = stored.length;
  await ctl.end();
  await Promise.all([adding, rec]);
  assert.deepEqual(stored.slice(from).filter((v) => v.id === "enc1"), [], "no meta of the ended encounter is stored once End is pressed");
  assert.deepEqual(ctl.meta, {});
});

test("a linked token deleted and brought back at once (Foundry's undo) while the deletion's record is on its way to the server: the record is cleared, not left behind", async () => {
  const { t, ctl, del } = await setup();
  const token = t.tokens.ulcenToken;
  const a = del(token);
  await tick(2);
  t.world.docs.set(token.uuid, token);
  const b = hookTable(t.clients.gm.svc).createToken(token);
  await Promise.all([a, b]);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, undefined);
  assert.equal(ctl.deletedTokens.has(token.uuid), false);
});
