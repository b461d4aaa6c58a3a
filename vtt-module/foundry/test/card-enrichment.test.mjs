// Foundry enriches a chat message's content when it shows it (TextEditor.enrichHTML:
// the content is parsed, then its patterns run over the text of each text node), so a
// token named "[[1d100]]" or "@UUID[Actor.x]{…}" would roll dice or link a document on
// the card. The module's cards give each "[" its own text node (chat.js `unenriched`):
// the names read as typed, and no pattern of Foundry's (or a system's) matches.
import { test } from "node:test";
import assert from "node:assert/strict";
import { htmlDecoded } from "../test-support/fakes.mjs";
import { makeTable } from "../test-support/scenario.mjs";
import { unenriched } from "../mindscape/scripts/chat.js";

/** Foundry's enrichment patterns (client/applications/ux/text-editor.mjs), and dnd5e's. */
const PATTERNS = [
  /\[\[(\/[a-zA-Z]+\s)?(.*?)(]{2,3})(?:{([^}]+)})?/i,
  /@(UUID|Actor|Item|JournalEntry|Compendium)\[([^#\]]+)(?:#([^\]]+))?](?:{([^}]+)})?/,
  /@Embed\[(?<config>[^\]]+)](?:{(?<label>[^}]+)})?/i,
  /&(?<type>Reference)\[(?<config>[^\]]+)](?:{(?<label>[^}]+)})?/i,
];

/** The text nodes of an HTML fragment, as the browser parses them (entities read). */
const textNodes = (html) => html.split(/<[^>]*>/).map(htmlDecoded).filter(Boolean);

const ROLL = "[[1d100]]";
const LINK = "@UUID[Actor.goblin]{Trust me}";

test("names with Foundry's enrichment syntax read as typed on an attack's card, and nothing in it would be enriched", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank" } } } });
  t.tokens.ulcenToken.name = `Ulcen ${ROLL}`;
  t.tokens.goblinToken.name = `Gob ${LINK}`;
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  const [card] = t.clients.gm.ChatMessage.created;
  const nodes = textNodes(card.data.content);
  const text = nodes.join("");
  assert.ok(text.includes(`Ulcen ${ROLL}`), "the attacker's name reads as typed (header and summary)");
  assert.ok(text.includes(`Gob ${LINK}`), "the defender's name reads as typed");
  for (const node of nodes) for (const pattern of PATTERNS) assert.doesNotMatch(node, pattern);
});

test("a round's card (the same poster) is unenriched too; tags and attributes are left as they are", () => {
  assert.equal(unenriched('<p class="a">x [[1]] @UUID[y]</p>'), '<p class="a">x <span>[</span><span>[</span>1]] @UUID<span>[</span>y]</p>');
  assert.equal(unenriched('<i data-x="[a]"></i>'), '<i data-x="[a]"></i>');
});
