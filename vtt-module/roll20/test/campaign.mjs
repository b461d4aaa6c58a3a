// A small Roll20 campaign for the tests: a GM, two players, an AD&D 2E Revised
// psionicist and her victim (attribute names as the ADnD_2E_Revised sheet spells them,
// see shared fixtures/roll20/adnd2e-revised-psionics-tab.html), and their tokens.
import { fileURLToPath } from 'node:url';
import { createSandbox } from './fake-sandbox.mjs';
import { recordRequest } from '../../test-support/record.mjs';

// Every campaign's sandbox, for MINDSCAPE_CLIENT_REQUESTS (test-support/record.mjs):
// at the end of the test file each request the Mod script whispered is recorded once.
const sandboxes = [];
if (process.env.MINDSCAPE_CLIENT_REQUESTS) {
  process.on('exit', () => sandboxes.forEach((sb) => requests(sb).forEach((r) => recordRequest('roll20', r.body))));
}

export const SCRIPT = fileURLToPath(new URL('../Mindscape.js', import.meta.url));
// MINDSCAPE-REQ <pairing code> <id> <part>/<parts> <base64url>
export const MARKER = /MINDSCAPE-REQ [A-Za-z0-9]{16,64} ([A-Za-z0-9]+) (\d+)\/(\d+) ([A-Za-z0-9_-]+)/g;

export const GM = '-Pgm';
export const ALICE = '-Palice';
export const BOB = '-Pbob';

/**
 * A sandbox with the campaign loaded and Mindscape started (unless `start` is false);
 * `pairing` replaces the random pairing code the script makes on install.
 */
export function campaign({ start = true, before, pairing } = {}) {
  const sb = createSandbox({
    players: [
      { id: GM, name: 'Gail the GM', gm: true },
      { id: ALICE, name: 'Alice' },
      { id: BOB, name: 'Bob' },
    ],
  });
  sandboxes.push(sb);
  const ulcen = sb.add('character', { name: 'Ulcen of Tyr', controlledby: ALICE });
  const fenka = sb.add('character', { name: 'Fenka', controlledby: BOB });
  const ogre = sb.add('character', { name: 'Ogre', controlledby: '' });
  const attrs = (charId, list) => list.forEach(([name, current, max = '']) => sb.add('attribute', {
    _characterid: charId, name, current, max,
  }));
  attrs(ulcen.id, [
    ['PSP', '40', '40'], ['MThAC0', '17'], ['mthac0adj', '0'], ['selfMAC', '10'],
    ['Intelligence', '14'], ['Wisdom', '13'], ['Constitution', '12'], ['level-class1', '4'],
    ['HP', '18', '18'], ['weaponname1', 'Bone dagger'], ['spellname1', 'none'],
    ['repeating_psionic-attacks_-Ma1_psionic-attack-name', 'Ego Whip'],
    ['repeating_psionic-defenses_-Md1_psionic-defense-name', 'Thought Shield'],
    ['psi_mind', '{"state":"closed"}'],
  ]);
  attrs(fenka.id, [
    ['PSP', '30', '30'], ['MThAC0', '19'], ['selfMAC', '9'], ['Intelligence', '12'],
    ['Wisdom', '15'], ['level-class1', '3'], ['HP', '11', '11'],
    ['repeating_psionic-defenses_-Md2_psionic-defense-name', 'Mental Barrier'],
    ['repeating_psionic-defenses_-Md3_psionic-defense-name', 'Mind Blank'],
  ]);
  const tokenOf = (character, props = {}) => sb.add('graphic', {
    _subtype: 'token', _pageid: '-Page', represents: character.id, name: character.get('name'),
    bar1_link: '', bar2_link: '', bar3_link: '', bar1_value: '', bar1_max: '', bar2_value: '', bar2_max: '', bar3_value: '', bar3_max: '',
    controlledby: '', ...props,
  });
  // The player characters' tokens have bar 1 linked to HP (as a PC's token usually is);
  // the ogre's is not linked: it fights as itself.
  const linkedHp = (character) => {
    const hp = sb.attribute(character.id, 'HP');
    return { bar1_link: hp.id, bar1_value: hp.get('current'), bar1_max: hp.get('max') };
  };
  const tokens = { ulcen: tokenOf(ulcen, linkedHp(ulcen)), fenka: tokenOf(fenka, linkedHp(fenka)), ogre: tokenOf(ogre) };
  if (before) before(sb);
  sb.load(SCRIPT);
  if (start) sb.fire('ready');
  if (start && pairing) sb.state.Mindscape.pairing = pairing;
  return { sb, ulcen, fenka, ogre, tokens };
}

/**
 * Makes `ctx` a power-pool campaign in which Ulcen (Alice's) holds Fenka (Bob's) and a
 * thrall under psionic control, as the companion writes it on the sheets
 * (psi_controlled_by, psi_controlling: RULES.md §3.4), and the ogre (the GM's, an
 * unlinked token) may attack. Returns `ctx` with `thrall`.
 */
export function psionicControl(ctx) {
  const { sb } = ctx;
  sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  const thrall = sb.add('character', { name: 'Thrall', controlledby: '' });
  const attrs = (charId, list) => list.forEach(([name, current, max = '']) => sb.add('attribute', { _characterid: charId, name, current, max }));
  attrs(ctx.ogre.id, [['psi_pool', '3', '3'], ['psi_die', '8'], ['HP', '30', '30'], ['psi_psionic', '1'], ['psi_attacks', 'Mental Stab']]);
  attrs(ctx.ulcen.id, [['psi_pool', '3', '4'], ['psi_die', '6'], ['psi_psionic', '1'], ['psi_defenses', 'Pinnacle of Will'],
    ['repeating_psionic-defenses_-Md4_psionic-defense-name', 'Pinnacle of Will'],
    ['psi_dedicated', JSON.stringify([{ purpose: 'control', target: ctx.fenka.id }])],
    ['psi_controlling', JSON.stringify([{ id: ctx.fenka.id, kept_by: 'die' }, { id: thrall.id, kept_by: 'action' }])]]);
  attrs(ctx.fenka.id, [['psi_pool', '0', '3'], ['psi_die', '6'], ['psi_controlled_by', ctx.ulcen.id]]);
  attrs(thrall.id, [['psi_pool', '0', '2'], ['psi_die', '4'], ['psi_controlled_by', ctx.ulcen.id]]);
  return Object.assign(ctx, { thrall });
}

/** Decodes base64url as the userscript and the companion see it. */
export const decode = (code) => JSON.parse(Buffer.from(code, 'base64url').toString('utf8'));
export const encode = (value) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** Every request the Mod script whispered so far, reassembled: [{id, body, parts}]. */
export function requests(sb) {
  const found = new Map();
  for (const chat of sb.chats) {
    if (!chat.input.startsWith('/w gm ')) continue;
    for (const m of chat.input.matchAll(MARKER)) {
      const [, id, part, count, piece] = m;
      if (!found.has(id)) found.set(id, { id, count: Number(count), pieces: [] });
      found.get(id).pieces[Number(part) - 1] = piece;
    }
  }
  return Array.from(found.values()).map((r) => ({ id: r.id, parts: r.count, body: decode(r.pieces.join('')) }));
}

export const lastRequest = (sb) => requests(sb).at(-1);

/** Whispers (the text after "/w NAME ") sent to one recipient. */
export const whispersTo = (sb, name) => sb.chats
  .filter((c) => c.input.startsWith(name === 'gm' ? '/w gm ' : `/w "${name}" `))
  .map((c) => c.input);

/** A plain copy, so that values made inside the vm compare with deepStrictEqual. */
export const plain = (value) => JSON.parse(JSON.stringify(value));
