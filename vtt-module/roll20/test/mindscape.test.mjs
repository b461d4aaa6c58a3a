// The Mod script in the fake sandbox: command grammar, state migration, the
// request/answer protocol through the chat, its refusals, and the attribute writes.
// The companion's side is played by hand here (its real answers are exercised by
// bridge.browser.test.mjs); each answer below follows API.md's result shapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  campaign as newCampaign, psionicControl, requests, lastRequest, whispersTo, encode, plain, GM, ALICE, BOB,
} from './campaign.mjs';

// The AD&D 2E Revised sheet's psionics attributes sorted into those the companion's
// adapter reads and those it does not (checked against the adapter by tests/adapters).
const ATTRIBUTES = fileURLToPath(new URL('../../../tests/fixtures/roll20/adnd2e-revised-attributes.json', import.meta.url));
// The companion's schema of a generic mapping (its fields and attribute paths).
const MAPPING_SCHEMA = fileURLToPath(new URL('../../../adapters/data/mapping.schema.json', import.meta.url));

// The attacks still waiting for the companion's check (Mindscape.js checkTheAttacker),
// as [request id, job], the oldest first.
const checksWaiting = (sb) => Object.entries(sb.state.Mindscape.pending)
  .filter(([, job]) => job.kind === 'attack-check' && !job.late)
  .sort(([, a], [, b]) => a.at - b.at);

// The companion's answer that lets a checked attack through: the odds of its exchange
// with no defense, asked with least_chance 1, so that every chance below certainty is
// left out of the lists (API.md exchange.odds; the check reads none of it).
const checkAllowed = (id) => ({
  jsonrpc: '2.0', id, result: {
    outcomes: {}, left_out: { outcomes: 1, distribution: 1 },
    damage: { mean: 4.95, distribution: [], truncated_mass: 0, dealt: { chance: 0.55, mean: 9, p10: 9, median: 9, p90: 9, least: 9, most: 9 } },
  },
});

// The requests whispered so far but the checks of attacks (each announced to the GM as
// "Mindscape request ID: check of …").
const requestsBeyondChecks = (sb) => requests(sb)
  .filter((r) => !whispersTo(sb, 'gm').some((w) => w.includes(`Mindscape request <b>${r.id}</b>: check of `)));

// Every attack is checked with the companion before any defender is asked. In the tests
// of anything else the companion allows it at once: after each chat message, each check
// still waiting gets checkAllowed's answer. `campaign({ checkByHand: true })` leaves
// the checks to the test (the tests of the check itself).
const campaign = (options = {}) => {
  const ctx = newCampaign(options);
  const { chat } = ctx.sb;
  ctx.sb.chat = (message) => {
    chat(message);
    if (options.checkByHand) return;
    checksWaiting(ctx.sb).forEach(([id]) => chat({ playerid: GM, content: `!psi-result ${id} ${encode(checkAllowed(id))}` }));
  };
  return ctx;
};

const attack = (ctx, extra = '') => ctx.sb.chat({
  playerid: ALICE,
  selected: [ctx.tokens.ulcen.id],
  content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 3 --range short${extra}`,
});

// Attack, defend with the first button offered, and return the request whispered to the GM.
const attackAndDefend = (ctx, mode = 'mental-barrier') => {
  attack(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode ${mode}` });
  return lastRequest(ctx.sb);
};

const exchangeResult = (ctx, id, updates) => ({
  jsonrpc: '2.0',
  id,
  result: {
    system: 'revised-2e',
    outcome: 'hit',
    hit: true,
    needed: 12,
    roll: { natural: 15, modifier: 2, modified: 17 },
    psp_spent: 12,
    damage: 9,
    rolls: [{ purpose: 'attack', sides: 20, value: 15, by: ctx.ulcen.id, follows: null }],
    events: [],
    summary: 'Ulcen of Tyr lashes Fenka with an ego whip.',
    updates: updates || [
      { character_id: ctx.ulcen.id, attributes: { PSP: { current: 28 } } },
      { character_id: ctx.fenka.id, attributes: { HP: { current: 2 }, 'psionic-mind-state': { current: 'open' } } },
    ],
  },
});

const answer = (ctx, id, response, playerid = GM) => ctx.sb.chat({
  playerid, content: `!psi-result ${id} ${encode(response)}`,
});

// What a player never reads in a refusal: the companion's error code, a rule id (the
// given ones, and any "rule-id:" as the raw wording opened its detail with), a JSON path
// into the request, a combatant id, the GM's small print.
const assertPlainRefusal = (whisper, ruleIds = []) => {
  const text = whisper.replace(/^\/w ("[^"]*"|gm) /, '');
  assert.doesNotMatch(text, /\(-?\d{4,5}\)|(^|[^\d-])(4001|4002|4004|4009|-32602|-32603|-32001)\b/, text);
  assert.doesNotMatch(text, /(^|[\s(>;])\/[A-Za-z_]+(\/|\b)/, text);
  assert.doesNotMatch(text, /\b[a-z]+(-[a-z]+)+: /, text);
  assert.doesNotMatch(text, /-Mfake\d+|companion: /, text);
  ruleIds.forEach((rule) => assert.ok(!text.includes(rule), `${rule} in ${text}`));
};

const valueOf = (ctx, charId, name) => {
  const attr = ctx.sb.attribute(charId, name);
  return attr ? attr.get('current') : undefined;
};

test('the grammar splits arguments on "--" into lower-case keys (TokenMod/ChatSetAttr style)', () => {
  const { sb } = campaign();
  const args = sb.context.Mindscape.parseCommand('!psi attack --target -Mtok1 --mode ego-whip --mult 3 --range short --attr psp=PSP --attr mac=selfMAC');
  assert.equal(args.command, '!psi');
  assert.equal(args.verb, 'attack');
  assert.equal(args.get('target'), '-Mtok1');
  assert.equal(args.get('mode'), 'ego-whip');
  assert.equal(args.get('mult'), '3');
  assert.deepEqual(plain(args.all('attr')), ['psp=PSP', 'mac=selfMAC']);
  const help = sb.context.Mindscape.parseCommand('!psi --help');
  assert.equal(help.verb, '');
  assert.ok(help.has('help'));
  const words = sb.context.Mindscape.parseCommand('!psi encounter resolve --force');
  assert.deepEqual(plain(words.words), ['resolve']);
  assert.ok(words.has('force'));
});

test('checkInstall migrates a schema-1 state step by step to the current schema and keeps its settings', () => {
  const { sb } = campaign({ before: (s) => { s.state.Mindscape = { version: 1, system: 'combat-strength', rollMode: 'gm' }; } });
  const stored = plain(sb.state.Mindscape);
  assert.equal(stored.version, sb.context.Mindscape.SCHEMA_VERSION);
  assert.equal(stored.config.system, 'combat-strength');
  assert.equal(stored.config.rollMode, 'gm');
  assert.equal(stored.config.timeout, 30);
  assert.deepEqual(stored.characters, {});
  assert.deepEqual(stored.answered, []);
  assert.ok(sb.logs.some((line) => /migrated from 1/.test(line)));
});

test('checkInstall keeps per-character settings from a schema-2 state', () => {
  const before = (s) => {
    s.state.Mindscape = { version: 2, config: { system: 'power-pool', rollMode: 'private' }, characters: { '-Mx': { system: 'power-pool', attributes: { pool: 'PP' } } } };
  };
  const { sb } = campaign({ before });
  const stored = plain(sb.state.Mindscape);
  assert.equal(stored.config.rollMode, 'private');
  assert.deepEqual(stored.characters['-Mx'].attributes, { pool: 'PP' });
  assert.deepEqual(stored.exchanges, {});
});

test('checkInstall leaves a state from a newer script alone and replaces garbage with defaults', () => {
  const newer = campaign({ before: (s) => { s.state.Mindscape = { version: 99, keep: true }; } });
  assert.deepEqual(plain(newer.sb.state.Mindscape), { version: 99, keep: true });
  const broken = campaign({ before: (s) => { s.state.Mindscape = 'garbage'; } });
  assert.equal(broken.sb.state.Mindscape.version, broken.sb.context.Mindscape.SCHEMA_VERSION);
  assert.equal(broken.sb.state.Mindscape.config.system, 'revised-2e');
});

test('an attack whispers the defense buttons to the defender\'s controller and the GM only', () => {
  const ctx = campaign();
  attack(ctx);
  const toBob = whispersTo(ctx.sb, 'Bob');
  assert.equal(toBob.length, 1);
  // Fenka's sheet lists Mental Barrier and Mind Blank: those are the choices, plus none.
  assert.match(toBob[0], /\[Mental Barrier\]\(!psi defend --req [A-Za-z0-9]+ --mode mental-barrier\)/);
  assert.match(toBob[0], /\[Mind Blank\]\(!psi defend --req [A-Za-z0-9]+ --mode mind-blank\)/);
  assert.match(toBob[0], /--mode none\)/);
  assert.doesNotMatch(toBob[0], /thought-shield/);
  assert.equal(whispersTo(ctx.sb, 'gm').filter((w) => /defend --req/.test(w)).length, 1);
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/defend --req/.test(w)));
  // Nothing but the check of the attack goes to the companion until the defense is chosen.
  assert.deepEqual(requests(ctx.sb).map((r) => r.body.method), ['exchange.odds']);
  assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
});

test('an NPC defender\'s choice goes to the GM', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode mind-thrust` });
  assert.equal(whispersTo(ctx.sb, 'gm').filter((w) => /defend --req/.test(w)).length, 1);
  assert.equal(whispersTo(ctx.sb, 'Bob').length, 0);
});

test('only the defender\'s controller or the GM may answer the defense buttons', () => {
  const ctx = campaign();
  attack(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob')[0])[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only the controller of Fenka/);
  assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
});

test('a defender the attacker\'s player co-controls gets its defense from its other controller: the attacker\'s player is neither whispered the buttons nor may answer them, list them, or settle the defense with --defense', () => {
  const ctx = campaign();
  ctx.fenka.set('controlledby', `${ALICE},${BOB}`);
  attack(ctx, ' --defense mental-barrier');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--defense settles the defense of Fenka, which only its other controllers or the GM choose/);
  assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
  attack(ctx);
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/defend --req/.test(w)), 'the attacker\'s player got the defense buttons');
  assert.equal(whispersTo(ctx.sb, 'Bob').filter((w) => /defend --req/.test(w)).length, 1);
  assert.equal(whispersTo(ctx.sb, 'gm').filter((w) => /defend --req/.test(w)).length, 1);
  ctx.sb.chat({ playerid: ALICE, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /No attack waits for a defense of yours/);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /the defense of Fenka against your own attack is chosen by its other controllers/);
  assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mind-blank` });
  assert.equal(requestsBeyondChecks(ctx.sb).length, 1);
  assert.equal(lastRequest(ctx.sb).body.params.defense.mode, 'mind-blank');
});

test('a defender whose only controller is the attacker\'s player still gets its defense from that player', () => {
  const ctx = campaign();
  ctx.fenka.set('controlledby', ALICE);
  attack(ctx);
  const prompt = whispersTo(ctx.sb, 'Alice').find((w) => /defend --req/.test(w));
  assert.ok(prompt, 'the attacker\'s player, the only controller, got no defense buttons');
  const xid = /--req ([A-Za-z0-9]+)/.exec(prompt)[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode mind-blank` });
  assert.equal(requestsBeyondChecks(ctx.sb).length, 1);
  assert.equal(lastRequest(ctx.sb).body.params.defense.mode, 'mind-blank');
});

test('only the word none is no defense: a defense left out, empty or without a letter is refused naming its option, and the attack still waits (ROLL20.md: !psi defend)', () => {
  const ctx = campaign();
  attack(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  for (const tail of ['', ' --mode', ' --mode -', ' --mode ???']) {
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid}${tail}` });
    assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /refused<\/b><br>--mode /, `!psi defend --req ID${tail}`);
    assert.equal(requestsBeyondChecks(ctx.sb).length, 0, `!psi defend --req ID${tail} was sent`);
  }
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /--mode must be one of intellect-fortress, .*, or none for no defense \(got "\?\?\?"\)\./);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /--mode is missing: name the defense, one of .*, or none for no defense\./);
  // The attack still waits: the button's own command goes through.
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.equal(lastRequest(ctx.sb).body.params.defense, null);

  // The GM's --defense and a declared --defense alike; odds without --defense are the
  // chances against no defense.
  const gm = campaign();
  gm.sb.chat({ playerid: GM, selected: [gm.tokens.ulcen.id], content: `!psi attack --target ${gm.tokens.fenka.id} --mode ego-whip --defense` });
  assert.match(whispersTo(gm.sb, 'gm').at(-1), /refused<\/b><br>--defense /);
  gm.sb.chat({ playerid: GM, selected: [gm.tokens.ulcen.id], content: `!psi odds --target ${gm.tokens.fenka.id} --mode ego-whip --defense` });
  assert.match(whispersTo(gm.sb, 'gm').at(-1), /refused<\/b><br>--defense /);
  assert.equal(requests(gm.sb).length, 0);
  gm.sb.chat({ playerid: GM, selected: [gm.tokens.ulcen.id], content: `!psi odds --target ${gm.tokens.fenka.id} --mode ego-whip` });
  assert.equal(lastRequest(gm.sb).body.params.defense, null);
  const enc = encounterWithTwo();
  const sent = requests(enc.sb).length;
  enc.sb.chat({ playerid: ALICE, selected: [enc.tokens.ulcen.id], content: '!psi encounter declare --defense' });
  assert.match(whispersTo(enc.sb, 'Alice').at(-1), /refused<\/b><br>--defense /);
  assert.equal(requests(enc.sb).length, sent);
});

test('attacking with a token one does not control is refused', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /you do not control Ulcen/);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode fireball` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--mode must be one of/);
});

test('an option a command does not take is refused, naming it and what the command takes; nothing is sent (ROLL20.md: !psi <verb> --option value)', () => {
  const ctx = campaign();
  // A typo of --mult would otherwise make the attack at its default multiplier of 1.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mul 3` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /unknown option --mul; attack takes --target, --mode, --mult, .*Nothing was done\./);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --defence mind-blank` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /unknown option --defence; odds takes/);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --sytem power-pool' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /unknown option --sytem; encounter create takes --system, --name\./);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --forced' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /unknown option --forced; encounter resolve takes --force, --no-refresh\./);
  ctx.sb.chat({ playerid: BOB, content: '!psi defend --req abcdefgh --mode none --dise 2' });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /unknown option --dise; defend takes --req, --for, --mode, --dice, --sacrifice, --ally\./);
  assert.equal(requests(ctx.sb).length, 0);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.equal(ctx.sb.state.Mindscape.encounter, null);
});

test('what a command would drop unsaid is refused before anything is done: an option given twice that it takes once, a value after a flag, an option without its value, words that are no option (ROLL20.md: Commands)', () => {
  const ctx = campaign();
  const pairing = ctx.sb.state.Mindscape.pairing;
  const config = plain(ctx.sb.state.Mindscape.config);
  const refused = (playerid, content, pattern) => {
    const before = requests(ctx.sb).length;
    ctx.sb.chat({ playerid, selected: /^!psi (attack|rest)/.test(content) ? [ctx.tokens.ulcen.id] : [], content });
    assert.match((playerid === GM ? whispersTo(ctx.sb, 'gm') : whispersTo(ctx.sb, 'Alice')).at(-1), pattern, content);
    assert.equal(requests(ctx.sb).length, before, `${content} was sent`);
  };
  const fenka = ctx.tokens.fenka.id;
  // Given twice: only the last would have counted.
  refused(ALICE, `!psi attack --target ${fenka} --mode ego-whip --mult 2 --mult 5`, /--mult is given twice \("2", then "5"\): attack takes it once\. Nothing was done\./);
  refused(ALICE, `!psi attack --target ${fenka} --mode ego-whip --mode mind-thrust`, /--mode is given twice/);
  refused(GM, '!psi rest --hours 8 --hours 1', /--hours is given twice \("8", then "1"\): rest takes it once\. Nothing was sent\./);
  refused(GM, '!psi config --timeout 60 --timeout 90', /--timeout is given twice .*Nothing was changed\./);
  refused(GM, `!psi config --char ${ctx.ulcen.id} --char ${ctx.fenka.id} --system power-pool`, /--char is given twice/);
  refused(GM, '!psi config --attr psp=PSP --attr psp=Power', /--attr names psp twice: give each field once\. Nothing was changed\./);
  refused(GM, '!psi house --set H-2E-STUN=off --set h-2e-stun=on', /H-2E-STUN is set twice: say it once\. Nothing was changed\./);
  refused(GM, '!psi encounter create --name A --name B', /--name is given twice \("A", then "B"\): encounter create takes it once\./);
  // A value after a flag: --force no would have forced.
  refused(GM, '!psi pair --new please', /--new takes no value \(got "please"\): give --new alone, or leave it out\. Nothing was done\./);
  refused(GM, '!psi round --pay-none x', /--pay-none takes no value \(got "x"\).*Nothing was sent\./);
  refused(ALICE, '!psi join --req abcdefgh --leave x', /--leave takes no value/);
  // An option without its value.
  refused(GM, '!psi encounter create --system', /--system needs a value\. Nothing was done\./);
  refused(GM, '!psi house --set', /--set needs a value\. Nothing was changed\./);
  // Words that are no option: !psi pair new would have whispered the old code.
  refused(GM, '!psi pair new', /"new" is no option \(an option begins with --\); pair takes --new\. Nothing was done\./);
  refused(GM, '!psi rest 8', /"8" is no option \(an option begins with --\); rest takes --hours\. Nothing was sent\./);
  refused(GM, '!psi encounter create My Fight --system power-pool', /"My Fight" is no option .*; encounter create takes --system, --name\./);
  refused(ALICE, '!psi pending now', /"now" is no option .*; pending takes no options\./);
  assert.equal(ctx.sb.state.Mindscape.pairing, pairing);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.config), config);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  assert.equal(ctx.sb.state.Mindscape.encounter, null);
  // What a command takes several times still repeats: two fields, two house rules.
  ctx.sb.chat({ playerid: GM, content: '!psi config --attr psp=PSP --attr hp=Life' });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.config.attributes), { psp: 'PSP', hp: 'Life' });
  ctx.sb.chat({ playerid: GM, content: '!psi house --set H-2E-STUN=off --set H-2E-ORDER=initiative' });
  assert.equal(lastRequest(ctx.sb).body.method, 'systems.house_rules');

  // In an encounter: resolve --force no would have forced, declare --close yes closed.
  const enc = encounterWithTwo();
  const sent = requests(enc.sb).length;
  enc.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh --force no' });
  assert.match(whispersTo(enc.sb, 'gm').at(-1), /--force takes no value \(got "no"\): give --force alone, or leave it out\. Nothing was done\./);
  enc.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh --no-refresh' });
  assert.match(whispersTo(enc.sb, 'gm').at(-1), /--no-refresh is given twice: encounter resolve takes it once\./);
  enc.sb.chat({ playerid: ALICE, selected: [enc.tokens.ulcen.id], content: '!psi encounter declare --close yes' });
  assert.match(whispersTo(enc.sb, 'Alice').at(-1), /--close takes no value \(got "yes"\)/);
  enc.sb.chat({ playerid: GM, content: '!psi encounter undo now' });
  assert.match(whispersTo(enc.sb, 'gm').at(-1), /"now" is no option .*; encounter undo takes no options\./);
  assert.equal(requests(enc.sb).length, sent);
  // power-pool: a declaration's public action names one creature (two --release would
  // have let only the last go, at once).
  const pool = poolEncounter();
  const before = requests(pool.sb).length;
  pool.sb.chat({ playerid: ALICE, selected: [pool.tokens.ulcen.id], content: `!psi encounter declare --release ${pool.tokens.fenka.id} --release ${pool.tokens.ogre.id}` });
  assert.match(whispersTo(pool.sb, 'Alice').at(-1), /--release is given twice .*: encounter declare takes it once\. Nothing was done\./);
  assert.equal(requests(pool.sb).length, before);

  // --for names a wave's mind: on an attack that strikes one mind it means nothing.
  const single = campaign();
  attack(single);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(single.sb, 'Bob').at(-1))[1];
  single.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${single.tokens.ulcen.id} --mode mind-blank` });
  assert.match(whispersTo(single.sb, 'Bob').at(-1), /--for names the mind whose defense it is in a psionic wave, and this attack strikes one mind: leave it out\. Nothing was sent\./);
  assert.equal(requestsBeyondChecks(single.sb).length, 0);
  single.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mind-blank` });
  assert.equal(lastRequest(single.sb).body.method, 'exchange.resolve');
});

// docs/ROLL20.md, read by a GM to learn the commands.
const ROLL20_MD = fileURLToPath(new URL('../../../docs/ROLL20.md', import.meta.url));

test('ROLL20.md\'s table of what the badge says names every state the userscript shows, and no other (mindscape-bridge.user.js setStatus and its fails)', () => {
  const bridge = readFileSync(fileURLToPath(new URL('../mindscape-bridge.user.js', import.meta.url)), 'utf8');
  const shown = new Set([...bridge.matchAll(/setStatus\('([a-z ]+)'|fail: '([a-z ]+)'/g)].map((m) => m[1] || m[2]));
  shown.delete('starting'); // only until the first check, which follows at once
  const doc = readFileSync(ROLL20_MD, 'utf8');
  const table = doc.slice(doc.indexOf('| badge | meaning | what to do |'));
  const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
  const named = new Set(rows.flatMap((row) => [...row.split('|')[1].matchAll(/`([a-z ]+)`/g)].map((m) => m[1])));
  assert.deepEqual([...named].sort(), [...shown].sort());
});

test('the help handout comes for !psi --help, !psi help, !psi alone and --help beside any command, which then does nothing else (ROLL20.md: !psi --help)', () => {
  const ctx = campaign();
  for (const content of ['!psi --help', '!psi help', '!psi', `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --help`, '!psi round --help']) {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content });
    assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Open the help handout/, content);
  }
  assert.equal(requests(ctx.sb).length, 0);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('docs/ROLL20.md and the help handout name every command and option the script takes, and the doc lists the repeatable options and the flags as the script takes them (Mindscape.js COMMAND_OPTIONS)', () => {
  const ctx = campaign();
  const { COMMAND_OPTIONS, ENCOUNTER_OPTIONS } = ctx.sb.context.Mindscape;
  const doc = readFileSync(ROLL20_MD, 'utf8');
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  const help = handout.get('notes');
  const commands = Object.entries(COMMAND_OPTIONS)
    .concat(Object.entries(ENCOUNTER_OPTIONS).map(([action, options]) => [`encounter ${action}`, options]));
  // An option's name, whole (--keep is not --keep-by, nor --keep-all).
  const named = (name) => `--${name}(?![\\w-])`;
  for (const [command, options] of commands) {
    assert.match(doc, new RegExp(`\`!psi ${command}(?![\\w-])`), `ROLL20.md has no row for !psi ${command}`);
    for (const name of Object.keys(options)) {
      // In a code span of the doc; the help may name it anywhere.
      assert.match(doc, new RegExp(`\`[^\`\\n]*${named(name)}`), `ROLL20.md does not name ${command}'s --${name}`);
      // Only the round's question buttons type --answer (its section in ROLL20.md says so).
      if (name !== 'answer') assert.match(help, new RegExp(named(name)), `the help handout does not name ${command}'s --${name}`);
    }
  }
  // The encounter's commands, listed whole where the help and the doc list them (an
  // encounter command of no options, as status, is named by no option above).
  const actions = Object.keys(ENCOUNTER_OPTIONS);
  const helpList = /<code>!psi encounter ([a-z|]+)<\/code>/.exec(help);
  assert.ok(helpList, 'the help handout no longer lists the encounter commands as <code>!psi encounter a|b|...</code>');
  assert.deepEqual(helpList[1].split('|'), actions);
  const docList = /encounter wants one of\s+([a-z,\s]+)\./.exec(doc);
  assert.ok(docList, 'ROLL20.md no longer quotes the refusal listing the encounter commands');
  assert.deepEqual(docList[1].split(/,\s+/), actions);
  for (const verb of Object.keys(COMMAND_OPTIONS)) assert.match(help, new RegExp(`!psi ${verb}(?![\\w-])`), `the help handout has no !psi ${verb}`);
  // The options the Commands section says are taken several times, and those taking no value.
  const how = (kind) => [...new Set(commands.flatMap(([, options]) => Object.keys(options).filter((name) => options[name] === kind)))].sort();
  const listed = (from, to) => {
    const start = doc.indexOf(from);
    assert.ok(start >= 0, `ROLL20.md no longer says "${from}"`);
    const text = doc.slice(start + from.length, doc.indexOf(to, start));
    return [...new Set([...text.matchAll(/`--([a-z0-9-]+)`/g)].map((m) => m[1]))].sort();
  };
  assert.deepEqual(listed('The options taken several times are', '\n- '), how('many'));
  assert.deepEqual(listed('these are', '\n- '), how('flag'));
});

test('a refusal quotes at most 80 characters of what was typed, the last one an ellipsis: a paragraph pasted by mistake is not whispered back whole', () => {
  const ctx = encounterWithTwo();
  const long = `${'a'.repeat(60)}${'b'.repeat(5000)}`;
  for (const content of [`!psi ${long}`, `!psi pending --${long}`, `!psi attack --target ${ctx.tokens.fenka.id} --mode ${long}`,
    `!psi defend --req ${long} --mode none`, `!psi encounter declare --attack ${long} --target ${ctx.tokens.fenka.id}`]) {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content });
    const whisper = whispersTo(ctx.sb, 'Alice').at(-1);
    assert.match(whisper, /refused/, content);
    assert.ok(whisper.includes(`${'a'.repeat(60)}${'b'.repeat(19)}\u2026`), `${content.slice(0, 30)}: ${whisper.slice(0, 400)}`);
    assert.ok(!whisper.includes('b'.repeat(20)), `${content.slice(0, 30)} quoted more than 80 characters`);
  }
  // A short value is quoted whole.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode fireball` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /\(got "fireball"\)\./);
});

test('the attacker cannot settle a defense it does not control: --defense and the defender\'s options are refused, nothing is sent', () => {
  const ctx = campaign();
  attack(ctx, ' --defense none');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--defense settles the defense of Fenka, which only its controllers or the GM choose: attack without it/);
  assert.equal(whispersTo(ctx.sb, 'Bob').length, 0, 'no buttons: the attack was not made');
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --sacrifice 2` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--sacrifice goes with --defense \(the defender's choice\)\. Nothing was sent\./);
  assert.equal(requests(ctx.sb).length, 0);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('power-pool: the card says who won in words, and an attack that fails outright (a failed save against Blank Mind: no contest) shows no totals', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  const req = lastRequest(ctx.sb);
  // The companion's answer when the save fails (engine/power_pool: attack_total and
  // defense_total null, as the real daemon answers).
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: {
    system: 'power-pool', outcome: 'defender', winner: 'defender', attack_total: null, defense_total: null, controlled: false,
    rolls: [{ purpose: 'save', sides: 20, value: 7, by: ctx.ulcen.id, follows: null }], events: [],
    summary: 'Ulcen of Tyr fails the save against Fenka\'s Blank Mind: the attack fails outright.', updates: [],
  } });
  const card = ctx.sb.chats.at(-1).input;
  assert.match(card, /\{\{Outcome=The defender holds\}\}/);
  assert.doesNotMatch(card, /null|Totals|Winner/);
  // A contest rolled shows its totals.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const again = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode none` });
  const won = lastRequest(ctx.sb);
  answer(ctx, won.id, { jsonrpc: '2.0', id: won.id, result: {
    system: 'power-pool', outcome: 'attacker', winner: 'attacker', attack_total: 9, defense_total: 4, controlled: true, rolls: [], events: [],
    summary: 'Ulcen of Tyr takes control of Fenka.', updates: [],
  } });
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Outcome=The attacker wins\}\} \{\{Totals=9 vs\. 4\}\} \{\{Summary=/);
});

test('the defense choice becomes one exchange.resolve request whispered to the GM with a marker', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  assert.equal(req.body.jsonrpc, '2.0');
  assert.equal(req.body.id, req.id);
  assert.equal(req.body.method, 'exchange.resolve');
  const { params } = req.body;
  assert.equal(params.system, 'revised-2e');
  assert.deepEqual(params.attack, { mode: 'ego-whip', multiplier: 3, range: 'short' });
  assert.deepEqual(params.defense, { mode: 'mental-barrier' });
  assert.equal(params.attacker.adapter, 'roll20.adnd2e-revised');
  assert.equal(params.attacker.data.id, ctx.ulcen.id);
  assert.equal(params.attacker.data.name, 'Ulcen of Tyr');
  assert.equal(params.attacker.data.controlledby, ALICE);
  const names = params.attacker.data.attribs.map((a) => a.name);
  assert.ok(names.includes('PSP') && names.includes('MThAC0') && names.includes('Intelligence'));
  assert.ok(params.attacker.data.attribs.find((a) => a.name === 'PSP').max === '40');
  // Weapons and spells are not psionics: they stay home and keep the request short.
  assert.ok(!names.includes('weaponname1') && !names.includes('spellname1'));
  // Of the sheet, exactly what the adapter reads is sent: each name of the sheet's
  // psionics tabs and of the other pages the adapter reads, as the companion's tests sort
  // them (tests/fixtures/roll20/adnd2e-revised-attributes.json, checked against
  // adapters/roll20.py there), in any letter case; none of the others, such as a
  // Psionics Core power row's macro box (a worker fills it with ~2 KB of roll template).
  const { read, not_read: notRead } = JSON.parse(readFileSync(ATTRIBUTES, 'utf8'));
  const add = (name, current) => ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name, current, max: '' });
  const lower = new Set(names.map((name) => name.toLowerCase()));
  read.filter((name) => !lower.has(name.toLowerCase())).forEach((name, i) => add(i % 2 ? name.toUpperCase() : name, ''));
  const sent = attackAndDefend(ctx).body.params.attacker.data.attribs;
  const sentNames = new Set(sent.map((a) => a.name.toLowerCase()));
  assert.deepEqual(read.filter((name) => !sentNames.has(name.toLowerCase())), []);
  notRead.forEach((name, i) => add(i % 2 ? name.toUpperCase() : name, 'x'.repeat(2000)));
  assert.deepEqual(attackAndDefend(ctx).body.params.attacker.data.attribs, sent);
  // The adapter keeps state the sheet has no field for in psi_* attributes.
  assert.ok(names.includes('psi_mind'));
  assert.equal(params.defender.data.id, ctx.fenka.id);
  // The request is whispered to the GM only: the players see neither it nor the choice.
  assert.ok(ctx.sb.chats.filter((c) => /MINDSCAPE-REQ/.test(c.input)).every((c) => c.input.startsWith('/w gm ')));
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/mental-barrier/i.test(w)));
});

test('a long request is cut into numbered MINDSCAPE-REQ parts that rebuild the body', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 100' });
  const req = attackAndDefend(ctx);
  assert.ok(req.parts > 3);
  assert.equal(req.body.method, 'exchange.resolve');
  const lines = ctx.sb.chats.filter((c) => c.input.includes('MINDSCAPE-REQ ') && c.input.includes(` ${req.id} `));
  assert.equal(lines.length, req.parts);
  assert.ok(lines.every((c) => /MINDSCAPE-REQ \S+ \S+ \d+\/\d+ ([A-Za-z0-9_-]{1,100})</.test(c.input)));
});

test('a request the bridge would drop (more than 500 parts) or the companion refuse (over 1 MiB) is refused before anything is whispered or kept, saying how long it is and what to do', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 100' });
  const psion = ctx.sb.add('character', { name: 'Psion', controlledby: '' });
  for (let i = 0; i < 12; i += 1) ctx.sb.add('attribute', { _characterid: psion.id, name: `repeating_psionic-attacks_-Mrow${i}_psionic-attack-name`, current: `Discipline number ${i} with a long name`, max: '' });
  const tokens = [];
  for (let i = 0; i < 64; i += 1) tokens.push(ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: psion.id, name: i === 0 ? 'Psion <0>' : `Psion ${i}`, bar1_link: '', bar2_link: '', bar3_link: '', bar1_value: '9', bar1_max: '9' }));
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  const markers = () => ctx.sb.chats.filter((c) => c.input.includes('MINDSCAPE-REQ')).length;
  const before = markers();
  ctx.sb.chat({ playerid: GM, selected: tokens.map((t) => t.id), content: '!psi encounter add' });
  assert.equal(markers(), before, 'markers were whispered that the bridge drops');
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  const [, chunk] = /raise the part size with <code>!psi config --chunk (\d+)<\/code> or more \(up to 10000\), or select fewer tokens\. Nothing was sent\./.exec(told) || [];
  assert.match(told, /refused<\/b><br>Request \w+ \(add Psion &#60;0&#62;, .* to the encounter\) was not sent: it would take (\d+) chat parts of 100 characters, and the bridge relays at most 500: /);
  // What it says to do works.
  ctx.sb.chat({ playerid: GM, content: `!psi config --chunk ${chunk}` });
  ctx.sb.chat({ playerid: GM, selected: tokens.map((t) => t.id), content: '!psi encounter add' });
  assert.equal(lastRequest(ctx.sb).body.length, 64);
  assert.ok(lastRequest(ctx.sb).parts <= 500);

  // Over the companion's 1 MiB no part size helps: fewer tokens do.
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 10000' });
  ctx.sb.add('attribute', { _characterid: psion.id, name: 'psi_notes', current: 'x'.repeat(20000), max: '' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: tokens.map((t) => t.id), content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /was not sent: its body is \d+ KiB, and the companion takes at most 1024 KiB: select fewer tokens/);
  assert.equal(requests(ctx.sb).length, sent);
});

test('a defense whose exchange is too long to send leaves the attack waiting and the chooser uninformed of a choice made: once the GM raises --chunk the same button sends it', () => {
  const ctx = campaign();
  attack(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  // The sheet grew since the attack, past what parts of 100 characters carry.
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 100' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_notes', current: 'y'.repeat(60000), max: '' });
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mind-blank` });
  assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /refused<\/b><br>this request is too long to go through the chat to the companion; the GM has been told what to do\. Nothing was sent\./);
  assert.doesNotMatch(whispersTo(ctx.sb, 'Bob').at(-1), /Ego Whip/, 'the defending side learns the attack mode');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /this request is too long/);
  assert.ok(!whispersTo(ctx.sb, 'Bob').some((w) => /defense chosen/.test(w)));
  assert.ok(xid in plain(ctx.sb.state.Mindscape.exchanges), 'the attack no longer waits');
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 1000' });
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mind-blank` });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /defense chosen/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('a GM\'s answer writes the updates with setWithWorker, creating missing attributes, and posts a card', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const response = exchangeResult(ctx, req.id);
  answer(ctx, req.id, response);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('max'), '40');
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psionic-mind-state'), 'open');
  const written = plain(ctx.sb.workerWrites).map((w) => `${w.name}=${w.current}`);
  assert.deepEqual(written.sort(), ['HP=2', 'PSP=28', 'psionic-mind-state=open']);
  const card = ctx.sb.chats.at(-1);
  assert.equal(card.speakingAs, 'Mindscape');
  assert.match(card.input, /^&\{template:default\} \{\{name=Ego Whip: Ulcen of Tyr vs. Fenka\}\}/);
  assert.match(card.input, /\{\{Outcome=Hit\}\}/);
  assert.match(card.input, /\{\{Summary=Ulcen of Tyr lashes Fenka with an ego whip.\}\}/);
  assert.match(card.input, /\{\{Dice=attack d20: 15\}\}/);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
  // An answered request never times out afterwards.
  ctx.sb.advance(60000);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Start the relay/.test(w)));
});

test('the card follows the roll mode: gm whispers it, private also tells the controllers', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode private' });
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  const cards = ctx.sb.chats.filter((c) => c.input.includes('&{template:default}'));
  assert.deepEqual(cards.map((c) => c.input.split(' &')[0]).sort(), ['/w "Alice"', '/w "Bob"', '/w gm'].sort());
});

test('text from the companion cannot inject rolls, attribute calls or HTML into the card', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const response = exchangeResult(ctx, req.id);
  response.result.summary = '<img src=x> [[1d20]] @{Fenka|HP} }} {{x=y';
  answer(ctx, req.id, response);
  const card = ctx.sb.chats.at(-1).input;
  assert.doesNotMatch(card, /<img|\[\[|@\{|\}\} \{\{x=y/);
});

test('an answer typed by a player is refused and changes nothing', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), '40');
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Alice is not a GM/);
  // Told once a minute, and not kept in the archive: a hundred of them are one notice.
  const told = () => ctx.sb.chats.filter((c) => /Alice is not a GM/.test(c.input));
  for (let i = 0; i < 100; i++) answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(told().length, 1);
  assert.ok(told().every((c) => c.options.noarchive === true));
  ctx.sb.advance(60000);
  answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(told().length, 2);
  // The request still waits for the real answer.
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('an answer to an unknown request id is refused', () => {
  const ctx = campaign();
  answer(ctx, 'NoSuchRequest1', exchangeResult(ctx, 'NoSuchRequest1'));
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no request with that id is waiting/);
});

test('a name every object inherits (constructor, toString, __proto__, hasOwnProperty) typed as a verb, a request id or a system is refused in plain words, never taken for an entry', () => {
  const BUILT_IN = ['constructor', 'toString', '__proto__', 'hasOwnProperty'];
  const ctx = campaign();
  const refusedPlainly = (playerid, content, pattern) => {
    const before = ctx.sb.chats.length;
    ctx.sb.chat({ playerid, selected: /^!psi join/.test(content) ? [ctx.tokens.fenka.id] : [], content });
    const said = ctx.sb.chats.slice(before).map((c) => c.input).join('\n');
    assert.doesNotMatch(said, /internal error|function|\[native code\]/, content);
    assert.match(said, pattern, content);
  };
  for (const name of BUILT_IN) {
    refusedPlainly(BOB, `!psi ${name}`, new RegExp(`unknown command "${name.toLowerCase()}"`));
    refusedPlainly(BOB, `!psi defend --req ${name} --mode none`, /there is no attack waiting with id .* Nothing was done\./);
    refusedPlainly(BOB, `!psi join --req ${name}`, /there is no attack waiting for a defense with id .* Nothing was changed\./);
    refusedPlainly(GM, `!psi encounter ${name}`, new RegExp(`unknown encounter command "${name}"; encounter wants one of create, add, declare`));
    refusedPlainly(GM, `!psi config --system ${name}`, /--system must be one of revised-2e, combat-strength, power-pool\./);
    refusedPlainly(GM, `!psi config --char ${ctx.ulcen.id} --system ${name}`, /--system must be one of/);
    refusedPlainly(GM, `!psi house --system ${name}`, /--system must be one of/);
    refusedPlainly(GM, `!psi encounter create --system ${name}`, /--system must be one of/);
    refusedPlainly(GM, `!psi round --answer ${name}`, /there is no round waiting for that answer/);
  }
  // An answer to such an id is no answer to a request here (not one "more than an hour old").
  for (const name of ['constructor', 'toString', 'hasOwnProperty']) refusedPlainly(GM, `!psi-result ${name} abc`, /no request with that id is waiting/);
  assert.equal(requests(ctx.sb).length, 0);
  assert.equal(ctx.sb.state.Mindscape.config.system, 'revised-2e');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  const enc = encounterWithTwo();
  for (const name of BUILT_IN) {
    enc.sb.chat({ playerid: GM, content: `!psi encounter ${name}` });
    assert.match(whispersTo(enc.sb, 'gm').at(-1), /encounter wants one of create, add, declare/, name);
  }
  // The companion's words too: an outcome, a rule or a path named like them is shown as text.
  const out = campaign();
  const req = attackAndDefend(out);
  answer(out, req.id, { jsonrpc: '2.0', id: req.id, result: Object.assign(exchangeResult(out, req.id).result, { outcome: 'constructor' }) });
  assert.match(out.sb.chats.at(-1).input, /\{\{Outcome=Constructor\}\}/);
  const refused = attackAndDefend(out);
  answer(out, refused.id, { jsonrpc: '2.0', id: refused.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/attack/constructor', message: 'toString is not allowed' }] } } });
  assert.doesNotMatch(whispersTo(out.sb, 'gm').at(-1), /function|native code/);
});

test('a replayed answer is refused: each request is answered once', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  const writes = ctx.sb.workerWrites.length;
  answer(ctx, req.id, exchangeResult(ctx, req.id, [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 0 } } }]));
  assert.equal(ctx.sb.workerWrites.length, writes);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /already answered/);
});

test('malformed answers are refused without any write, and the request keeps waiting', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const bad = [
    [`!psi-result ${req.id} not*base64`, /not base64url-encoded JSON/],
    [`!psi-result ${req.id} ${Buffer.from('{"jsonrpc": "2.0", ').toString('base64url')}`, /not base64url-encoded JSON/],
    [`!psi-result ${req.id} ${encode({ jsonrpc: '2.0', id: 'other', result: {} })}`, /is not/],
    [`!psi-result ${req.id} ${encode({ jsonrpc: '2.0', id: req.id })}`, /exactly one of result and error/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [{ character_id: ctx.ogre.id, attributes: { HP: { current: 0 } } }]))}`, /did not involve/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [
      { character_id: ctx.ulcen.id, attributes: { PSP: { current: 1 } } },
      { character_id: ctx.fenka.id, attributes: { HP: { current: { evil: true } } } },
    ]))}`, /not a number or text/],
    [`!psi-result ${req.id} ${encode({ id: req.id, result: exchangeResult(ctx, req.id).result })}`, /lacks &#34;jsonrpc&#34;: &#34;2\.0&#34;/],
    [`!psi-result ${req.id} ${encode({ jsonrpc: '2.0', id: req.id, result: exchangeResult(ctx, req.id).result, error: { code: 4001, message: 'No' } })}`, /exactly one of result and error/],
    [`!psi-result ${req.id} ${encode({ jsonrpc: '2.0', id: req.id, error: { code: '4001', message: 'No' } })}`, /lacks a numeric code and a message/],
    [`!psi-result ${req.id} ${encode({ jsonrpc: '2.0', id: req.id, error: { code: 4001 } })}`, /lacks a numeric code and a message/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [{ character_id: 7, attributes: { HP: { current: 0 } } }]))}`, /updates\/0 lacks a character_id/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [{ character_id: ctx.fenka.id }]))}`, /updates\/0\/attributes is not an object/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [{ character_id: ctx.fenka.id, attributes: { 'H\u0007P': { current: 0 } } }]))}`, /unusable attribute name/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [{ character_id: ctx.fenka.id, attributes: { HP: {} } }]))}`, /needs current or max/],
    [`!psi-result ${req.id} ${encode(exchangeResult(ctx, req.id, [{ character_id: ctx.fenka.id, attributes: { HP: { current: 0, min: 0 } } }]))}`, /HP\/min is not current or max/],
    // Updates are read wherever a step holds them: its steps, its step, results a step holds.
    ...[{ steps: [{ updates: [] }] }, { step: { updates: [] } }, { step: { results: [{ updates: [] }] } }].map((where) => {
      const inner = JSON.parse(JSON.stringify(where).replace('"updates":[]', `"updates":[{"character_id":"${ctx.ogre.id}","attributes":{"HP":{"current":0}}}]`));
      return [`!psi-result ${req.id} ${encode({ jsonrpc: '2.0', id: req.id, result: Object.assign({}, exchangeResult(ctx, req.id).result, inner) })}`, /did not involve/];
    }),
    [`!psi-result ${req.id} 2/1 abc`, /out of range/],
    [`!psi-result ${req.id}`, /expected/],
    ['!psi-result ../../x abc', /malformed/],
  ];
  for (const [content, why] of bad) {
    ctx.sb.chat({ playerid: GM, content });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), why, content);
  }
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), '40');
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('an answer missing what its kind needs, or whose updates are no list, is refused as malformed: nothing is written or posted and the request keeps waiting (ROLL20.md: The protocol in the chat)', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const result = exchangeResult(ctx, req.id).result;
  const cards = () => ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).length;
  const bad = [
    [Object.assign({}, result, { updates: 'garbage' }), /The answer to request .* was refused and nothing changed: updates is not a list\./],
    [Object.assign({}, result, { updates: { [ctx.fenka.id]: { HP: { current: 0 } } } }), /updates is not a list/],
    [Object.assign({}, result, { results: [{ updates: 7 }] }), /results\/0\/updates is not a list/],
    [{}, /the result lacks its outcome/],
    [[], /the result is not an object/],
    [Object.assign({}, result, { summary: undefined }), /the result lacks its summary/],
  ];
  for (const [bogus, why] of bad) {
    answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: bogus });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), why, JSON.stringify(bogus).slice(0, 80));
    assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [req.id]);
  }
  assert.equal(cards(), 0, 'a card with only its title was posted');
  assert.equal(ctx.sb.workerWrites.length, 0);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(cards(), 1);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);

  // Odds without chances, a round's end without its summary: refused the same way.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const odds = lastRequest(ctx.sb);
  answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: {} });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the result lacks the chances \(outcomes\)/);
  assert.ok(ctx.sb.context.Mindscape.pendingIds().includes(odds.id));
});

test('an encounter is stored only with an id, and a revision only when it is a whole number: a resolve or undo answering another keeps the stale-revision guard', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  for (const [bogus, why] of [[{ id: { a: 1 }, revision: 0 }, /the result lacks the encounter id/], [{ id: '', revision: 0 }, /the encounter id/],
    [{ id: 'enc-1', revision: '0' }, /the result lacks the revision/], [{ id: 'enc-1' }, /the revision/]]) {
    answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: bogus });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), why, JSON.stringify(bogus));
    assert.equal(ctx.sb.state.Mindscape.encounter, null);
  }
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 7, revision: 0 } });
  assert.equal(ctx.sb.state.Mindscape.encounter.id, '7');
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, [{ jsonrpc: '2.0', id: add.body[0].id, result: { combatant_id: { x: 1 }, revision: 1 } }]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /lacks combatant_id/);
  answer(ctx, add.id, [{ jsonrpc: '2.0', id: add.body[0].id, result: { combatant_id: ctx.ulcen.id, revision: 1 } }]);
  for (const revision of [null, '5', 2.5]) {
    ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
    const resolve = lastRequest(ctx.sb);
    assert.equal(resolve.body.params.revision, 1);
    answer(ctx, resolve.id, { jsonrpc: '2.0', id: resolve.id, result: { revision, summary: 'Nothing happens.', updates: [] } });
    ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
    const undo = lastRequest(ctx.sb);
    assert.equal(undo.body.params.revision, 1, `after a resolve answering revision ${JSON.stringify(revision)} the undo names none`);
    answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: String(revision), updates: [] } });
    assert.equal(ctx.sb.state.Mindscape.encounter.revision, 1);
  }
});

test('an answer in numbered parts is applied once the last part arrives', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const code = encode(exchangeResult(ctx, req.id));
  const size = Math.ceil(code.length / 3);
  const pieces = [code.slice(0, size), code.slice(size, 2 * size), code.slice(2 * size)];
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 3/3 ${pieces[2]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/3 ${pieces[0]}` });
  assert.equal(ctx.sb.workerWrites.length, 0);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/3 ${pieces[1]}` });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('two GMs relaying one request: the parts of each answer are put together apart, the first whole answer is applied, card and sheets alike', () => {
  for (const [mine, theirs] of [['equal length', 'equal length'], ['short', 'a longer summary']]) {
    const ctx = campaign();
    const GM2 = '-Pgm2';
    ctx.sb.add('player', { _id: GM2, _displayname: 'Gus the co-GM', __gm: true, _online: true });
    const req = attackAndDefend(ctx);
    // Each bridge asked the companion itself: two answers with their own dice.
    const first = exchangeResult(ctx, req.id, [{ character_id: ctx.fenka.id, attributes: { HP: { current: 2 } } }]);
    first.result.summary = `Ulcen hits (${mine}).`;
    const second = exchangeResult(ctx, req.id, [{ character_id: ctx.fenka.id, attributes: { HP: { current: 7 } } }]);
    second.result.summary = `Ulcen hits (${theirs}).`;
    const halves = (response) => { const code = encode(response); const n = Math.ceil(code.length / 2); return [code.slice(0, n), code.slice(n)]; };
    const [a, b] = [halves(first), halves(second)];
    // Typed at once, their parts interleave in the chat.
    ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2 ${a[0]}` });
    ctx.sb.chat({ playerid: GM2, content: `!psi-result ${req.id} 1/2 ${b[0]}` });
    ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/2 ${a[1]}` });
    ctx.sb.chat({ playerid: GM2, content: `!psi-result ${req.id} 2/2 ${b[1]}` });
    assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2, mine);
    const said = ctx.sb.chats.map((c) => c.input).join('\n');
    assert.ok(said.includes(`Ulcen hits (${mine}).`), mine);
    if (theirs !== mine) assert.ok(!said.includes(`Ulcen hits (${theirs}).`), theirs);
    assert.doesNotMatch(said, /not base64url/);
    // The second GM's whole answer comes after: refused as already answered, nothing written.
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /already answered/);
  }
});

test('no flood of requests drops a waiting attack: only read-only requests are let go, and a player may have at most 4 of their own waiting', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  // Bob floods: his fifth odds request while four wait is refused, nothing whispered.
  const odds = () => ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi odds --target ${ctx.tokens.ulcen.id} --mode ego-whip` });
  for (let i = 0; i < 4; i++) odds();
  const sent = requests(ctx.sb).length;
  odds();
  assert.equal(requests(ctx.sb).length, sent, 'the fifth is not sent');
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /4 of your requests still wait for the companion's answer: ask again once they are answered \(or have timed out\)\. Nothing was sent\./);
  // Their timeouts run out: he may ask again.
  ctx.sb.advance(30000);
  odds();
  assert.equal(requests(ctx.sb).length, sent + 1);
  // The GM's own reads are not capped, but 60 of them let go only reads, never the attack.
  for (let i = 0; i < 60; i++) ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const pending = plain(ctx.sb.context.Mindscape.pendingIds());
  assert.ok(pending.includes(req.id), 'the exchange still waits');
  assert.equal(pending.length, 50);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
});

test('an answer arriving in many parts is not called lost while its parts keep coming: each part starts the timeout again', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const code = encode(exchangeResult(ctx, req.id));
  const count = 4;
  const size = Math.ceil(code.length / count);
  const pieces = Array.from({ length: count }, (_, i) => code.slice(i * size, (i + 1) * size));
  // The bridge types a long answer for about as long as the timeout: a part every 20 s.
  ctx.sb.advance(20000);
  pieces.slice(0, count - 1).forEach((piece, i) => {
    ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} ${i + 1}/${count} ${piece}` });
    ctx.sb.advance(20000);
  });
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Start the relay/.test(w)), 'no timeout while parts arrive');
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} ${count}/${count} ${pieces[count - 1]}` });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Start the relay|applied late/.test(w)));
  // Parts that stop coming: the timeout runs out from the last one.
  const next = attackAndDefend(ctx);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${next.id} 1/2 ${pieces[0]}` });
  ctx.sb.advance(29000);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Start the relay/.test(w)));
  ctx.sb.advance(1000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no answer from the companion in 30 s\. Start the relay/);
});

test('a request nobody answers times out with a message telling the GM to start the relay; its late answer is still applied', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  ctx.sb.advance(29000);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Start the relay/.test(w)));
  ctx.sb.advance(1000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no answer from the companion in 30 s\. Start the relay/);
  // A browser that runs no userscript shows no badge: the whisper says what to switch on.
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no badge at all: turn on <i>Allow User Scripts<\/i> for your userscript manager/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /did not answer in time/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Should its answer still arrive \(within the hour\), it is applied/);
  // The companion did the step: its answer, though late, is applied once and the GM told.
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => new RegExp(`A late answer for request <b>${req.id}</b> \\(Ego Whip by Ulcen of Tyr against Fenka\\) was applied`).test(w)));
  const writes = ctx.sb.workerWrites.length;
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(ctx.sb.workerWrites.length, writes);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /already answered/);
});

// The GM's early word that a request has had no part of its answer yet (a bridge that
// is not running, not paired, or no companion), before the timeout's own message.
const stillWaiting = (sb) => sb.chats.filter((c) => c.input.startsWith('/w gm ') && /still waiting for the bridge/.test(c.input));

test('a request with no part of its answer after 6 s has the GM told once what to check, and that it waits on; the timeout message still comes at 30 s', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  ctx.sb.advance(5900);
  assert.equal(stillWaiting(ctx.sb).length, 0, 'not before 6 s');
  ctx.sb.advance(100);
  const [hint] = stillWaiting(ctx.sb);
  assert.match(hint.input, new RegExp(`No part of an answer has come in 6 s to request <b>${req.id}</b> \\(Ego Whip by Ulcen of Tyr against Fenka\\);`));
  assert.match(hint.input, /<code>mindscape serve<\/code> running on this computer, and this Roll20 tab open with the Mindscape Bridge userscript enabled \(its badge must say connected, in green/);
  assert.match(hint.input, /The request keeps waiting for an answer until the timeout \(30 s\)\./);
  // Worth nothing once the answer or the timeout came: not kept in the archive.
  assert.equal(hint.options.noarchive, true);
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/still waiting for the bridge/.test(w)), 'the GM alone is told');
  ctx.sb.advance(23900);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Start the relay/.test(w)));
  ctx.sb.advance(100);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no answer from the companion in 30 s\. Start the relay/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /did not answer in time/);
  ctx.sb.advance(60000);
  assert.equal(stillWaiting(ctx.sb).length, 1, 'never twice, nor after the timeout');
  // Answered in time: no word at all.
  const quick = attackAndDefend(ctx);
  ctx.sb.advance(1000);
  answer(ctx, quick.id, exchangeResult(ctx, quick.id));
  ctx.sb.advance(60000);
  assert.equal(stillWaiting(ctx.sb).length, 1);
});

test('no early word for a request of which any part came from a GM before 6 s: an answer still incomplete, a part refused as unreadable, a tagged part', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const code = encode(exchangeResult(ctx, req.id));
  ctx.sb.advance(3000);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2 ${code.slice(0, 40)}` });
  ctx.sb.advance(20000);
  const garbled = gmOdds(ctx);
  ctx.sb.advance(1000);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${garbled} not-base64url-json` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the payload is not base64url-encoded JSON/);
  const tagged = gmOdds(ctx);
  ctx.sb.advance(1000);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${tagged} 1/3/tab2 AAAA` });
  ctx.sb.advance(60000);
  assert.equal(stillWaiting(ctx.sb).length, 0);
  // Each timed out all the same, the incomplete answer from its last part.
  [req.id, garbled, tagged].forEach((id) => assert.ok(whispersTo(ctx.sb, 'gm').some((w) => new RegExp(`Request <b>${id}</b> got no answer from the companion in 30 s`).test(w)), id));
  // A player's typed answer is no sign of the GM's bridge: the word still comes.
  const typed = gmOdds(ctx);
  ctx.sb.advance(1000);
  answer(ctx, typed, { jsonrpc: '2.0', id: typed, result: { outcomes: { hit: 1 } } }, ALICE);
  ctx.sb.advance(5000);
  assert.equal(stillWaiting(ctx.sb).length, 1);
  assert.match(stillWaiting(ctx.sb)[0].input, new RegExp(`to request <b>${typed}</b> `));
});

test('with a 5 s timeout the early word comes at 2.5 s, half of it, and the timeout\'s message at 5 s', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --timeout 5' });
  const id = gmOdds(ctx);
  ctx.sb.advance(2400);
  assert.equal(stillWaiting(ctx.sb).length, 0);
  ctx.sb.advance(100);
  assert.equal(stillWaiting(ctx.sb).length, 1);
  assert.match(stillWaiting(ctx.sb)[0].input, new RegExp(`No part of an answer has come in 2\\.5 s to request <b>${id}</b> .*until the timeout \\(5 s\\)\\.`));
  ctx.sb.advance(2500);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`Request <b>${id}</b> got no answer from the companion in 5 s\\. Start the relay`));
  assert.equal(stillWaiting(ctx.sb).length, 1);
});

test('requests sent in one go get one early word, naming the rest, for the first still unanswered; one answered before it gets none', () => {
  const ctx = campaign();
  const ids = [gmOdds(ctx), gmOdds(ctx), gmOdds(ctx)];
  ctx.sb.advance(1000);
  answer(ctx, ids[0], { jsonrpc: '2.0', id: ids[0], result: { outcomes: { hit: 1 } } });
  ctx.sb.advance(5000);
  assert.equal(stillWaiting(ctx.sb).length, 1);
  assert.match(stillWaiting(ctx.sb)[0].input, new RegExp(`to request <b>${ids[1]}</b> \\([^)]*\\), nor to request <b>${ids[2]}</b>; .*They keep waiting`));
  assert.doesNotMatch(stillWaiting(ctx.sb)[0].input, new RegExp(ids[0]));
  ctx.sb.advance(60000);
  assert.equal(stillWaiting(ctx.sb).length, 1, 'not one per request');
});

test('a request restored after a sandbox restart gets no early word, only the list of requests in flight', () => {
  const first = campaign();
  const req = attackAndDefend(first);
  const saved = plain(first.sb.state.Mindscape);
  const ctx = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /requests in flight/.test(w)), new RegExp(`<b>${req.id}</b>`));
  ctx.sb.advance(60000);
  assert.equal(stillWaiting(ctx.sb).length, 0);
});

test('a JSON-RPC error answer is reported and writes nothing', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: 4001, message: 'the rules forbid it', data: { rule: 'psp', detail: 'not enough PSPs' } } });
  assert.equal(ctx.sb.workerWrites.length, 0);
  // The GM reads the reason in words, the code and rule apart in small print.
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Not enough PSPs\.<br><span style="font-size:9px;color:#888;">companion: 4001 psp<\/span>/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /The exchange failed; the GM has been told/);
});

test('a refused exchange tells each side only its own secrets: the attacker\'s PSPs to its player, the defense\'s to the defender\'s, all to the GM', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx, 'mental-barrier');
  // An attacker-side refusal (not-enough-psp: RULES.md 1.4, the attacker's declared PSPs)
  // loses the attack: the attacker's player reads why, the chooser only that it failed,
  // under a title that does not name the attack mode it chose its defense without.
  const detail = 'Ulcen of Tyr declares 9 PSPs of ego-whip but holds 4';
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: 4001, message: 'the rules forbid it', data: { rule: 'not-enough-psp', detail } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr declares 9 PSPs of Ego Whip but holds 4\.<br>.*companion: 4001 not-enough-psp</);
  const toAttacker = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(toAttacker, /Mindscape: Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Ulcen of Tyr declares 9 PSPs of Ego Whip but holds 4\.<\/div>$/);
  assertPlainRefusal(toAttacker, ['not-enough-psp', 'ego-whip']);
  const toBob = whispersTo(ctx.sb, 'Bob');
  assert.match(toBob.at(-1), /The exchange failed; the GM has been told why/);
  assert.ok(toBob.every((w) => !/ego.whip|holds 4|declares 9/i.test(w)), toBob.join('\n'));
  // A refusal of anything else (here the defender's state) is the chooser's to read.
  const again = attackAndDefend(ctx, 'mental-barrier');
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, error: { code: 4001, message: 'the rules forbid it', data: { rule: 'target-dead', detail: 'Fenka is dead' } } });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Refused: Ulcen of Tyr vs\. Fenka<\/b><br>Fenka is dead\./);
  assertPlainRefusal(whispersTo(ctx.sb, 'Bob').at(-1), ['target-dead']);
  const toAlice = whispersTo(ctx.sb, 'Alice');
  assert.match(toAlice.at(-1), /The exchange failed; the GM has been told why/);
  assert.ok(toAlice.every((w) => !/mental-barrier/i.test(w)), toAlice.join('\n'));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {}, 'the attack is not kept');
  // The attacker's sheet refused by the companion's schema (it may tell the attacker's
  // PSPs): its player reads it, the defender's only that the exchange failed.
  const third = attackAndDefend(ctx, 'mental-barrier');
  answer(ctx, third.id, { jsonrpc: '2.0', id: third.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/attacker/data/attribs/3/current', message: 'PSP 41 is above its maximum 40' }] } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /PSP 41 is above its maximum 40/);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /The exchange failed; the GM has been told why/);
  assert.ok(whispersTo(ctx.sb, 'Bob').every((w) => !/PSP 41/.test(w)));
});

// The companion's refusal of a request `req` under `rule`, saying `detail` (API.md 4001).
const rulesRefusal = (req, rule, detail, more = {}) => ({
  jsonrpc: '2.0', id: req.id, error: { code: 4001, message: 'the rules forbid it', data: { rule, detail, ...more } },
});

// The whispers that carry defense buttons, to anyone.
const buttonsSent = (sb) => sb.chats.filter((c) => /!psi defend --req/.test(c.input));

test('an attack is checked with the companion before any defender is asked: exchange.odds as its exchange will be sent, with no defense, shown to nobody but the GM', () => {
  const ctx = campaign({ checkByHand: true });
  attack(ctx);
  const check = lastRequest(ctx.sb);
  assert.equal(check.body.method, 'exchange.odds');
  assert.equal(check.body.params.defense, null);
  // Only whether it is allowed matters: the answer's lists of chances stay out of the chat.
  assert.equal(check.body.params.least_chance, 1);
  assert.deepEqual(buttonsSent(ctx.sb), [], 'nobody is asked before the check answers');
  assert.deepEqual(whispersTo(ctx.sb, 'Bob'), [], 'the defender learns nothing of the check');
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes(check.id)), /check of Ego Whip by Ulcen of Tyr against Fenka, before Fenka is asked for a defense/);
  answer(ctx, check.id, checkAllowed(check.id));
  const toBob = whispersTo(ctx.sb, 'Bob');
  assert.equal(toBob.length, 1);
  assert.match(toBob[0], /Ulcen of Tyr attacks the mind of <b>Fenka<\/b>\. Choose a defense:<br>\[Mental Barrier\]/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /attack declared<\/b><br>Waiting for Fenka to choose a defense\./);
  // The exchange is the request checked, with the defense chosen.
  const xid = /--req ([A-Za-z0-9]+)/.exec(toBob[0])[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  const resolve = lastRequest(ctx.sb);
  assert.equal(resolve.body.method, 'exchange.resolve');
  assert.deepEqual({ ...resolve.body.params, defense: null, least_chance: 1 }, check.body.params);
  // A defense settled at once asks nobody: the exchange itself answers at once.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode mind-thrust --defense none` });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.equal(requests(ctx.sb).length, 3);
});

test('an attack the companion refuses for the attacker\'s own sake (RULES.md 1.4: not-enough-psp, multiplier-above-level) asks no defender; the attacker\'s player reads why in plain words, the GM with the rule', () => {
  const ctx = campaign({ checkByHand: true });
  attack(ctx);
  const check = lastRequest(ctx.sb);
  answer(ctx, check.id, rulesRefusal(check, 'not-enough-psp', 'Ulcen of Tyr declares 9 PSPs of ego-whip but holds 4'));
  const toAlice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(toAlice, /Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Ulcen of Tyr declares 9 PSPs of Ego Whip but holds 4\. The attack was not made: nobody was asked for a defense\.<\/div>$/);
  assertPlainRefusal(toAlice, ['not-enough-psp', 'ego-whip']);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /holds 4\. The attack was not made.*companion: 4001 not-enough-psp/);
  // A multiplier above the attacker's level, named as the companion names the attacker.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 9` });
  const high = lastRequest(ctx.sb);
  assert.equal(high.body.params.attack.multiplier, 9);
  answer(ctx, high.id, rulesRefusal(high, 'multiplier-above-level', `multiplier 9 is above ${ctx.ulcen.id}'s level 4`));
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Multiplier 9 is above Ulcen of Tyr&#39;s level 4\. The attack was not made/);
  assertPlainRefusal(whispersTo(ctx.sb, 'Alice').at(-1), ['multiplier-above-level']);
  // The attacker's own sheet refused by the companion's schema: no defense mends it either.
  attack(ctx);
  const sheet = lastRequest(ctx.sb);
  answer(ctx, sheet.id, { jsonrpc: '2.0', id: sheet.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/attacker/data/attribs/0/current', message: 'not a number' }] } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Ulcen of Tyr&#39;s sheet: not a number\. The attack was not made/);
  assert.deepEqual(whispersTo(ctx.sb, 'Bob'), [], 'the defender never learns an attack was coming');
  assert.deepEqual(buttonsSent(ctx.sb), []);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {}, 'no attack waits for a defense');
  assert.deepEqual(requests(ctx.sb).map((r) => r.body.method), ['exchange.odds', 'exchange.odds', 'exchange.odds']);
});

test('a check refused for anything but the attacker (a defender\'s secret) or lost by the bridge still asks the defender; the attacker\'s player learns nothing of why', () => {
  const ctx = campaign({ checkByHand: true });
  const answered = (response) => {
    attack(ctx);
    const check = lastRequest(ctx.sb);
    answer(ctx, check.id, response(check));
    return /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1) || '');
  };
  // The defender's state: the exchange will say what the companion makes of it.
  assert.ok(answered((check) => rulesRefusal(check, 'target-dead', 'Fenka is dead')));
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /not the attacker's own/.test(w)), /Fenka is dead\. The defense is asked all the same.*companion: 4001 target-dead/);
  // The defender's sheet refused by the schema.
  assert.ok(answered((check) => ({ jsonrpc: '2.0', id: check.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/defender/data/attribs/3/current', message: 'not a number' }] } } })));
  // The attacker's sheet and the defender's both: the defender's may be why.
  assert.ok(answered((check) => ({ jsonrpc: '2.0', id: check.id, error: { code: -32602, message: 'Invalid params', data: { errors: [
    { path: '/attacker/data/attribs/0/current', message: 'not a number' }, { path: '/defender/data/attribs/3/current', message: 'not a number' }] } } })));
  // The bridge lost the answer.
  assert.ok(answered((check) => ({ jsonrpc: '2.0', id: check.id, error: { code: -32001, message: 'uncertain', data: { detail: 'the connection to the companion was lost' } } })));
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /bridge could not get/.test(w)), /The defense is asked all the same/);
  assert.equal(whispersTo(ctx.sb, 'Bob').filter((w) => /defend!/.test(w)).length, 4);
  assert.equal(Object.keys(ctx.sb.state.Mindscape.exchanges).length, 4);
  const toAlice = whispersTo(ctx.sb, 'Alice');
  assert.equal(toAlice.length, 4);
  toAlice.forEach((w) => assert.match(w, /attack declared<\/b><br>Waiting for Fenka to choose a defense\.<\/div>$/));
});

test('a check with no answer in time still asks the defender (the bridge down fails the exchange too); its late answer changes nothing', () => {
  const ctx = campaign({ checkByHand: true });
  attack(ctx);
  const check = lastRequest(ctx.sb);
  ctx.sb.advance(29000);
  assert.deepEqual(buttonsSent(ctx.sb), []);
  ctx.sb.advance(1000);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /no answer/.test(w)), new RegExp(`Request <b>${check.id}</b> \\(check of Ego Whip .*\\) got no answer from the companion in 30 s, so the defense is asked without it\\. Start the relay`));
  assert.equal(whispersTo(ctx.sb, 'Bob').filter((w) => /defend!/.test(w)).length, 1);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Waiting for Fenka to choose a defense/);
  const waiting = plain(ctx.sb.state.Mindscape.exchanges);
  const chats = ctx.sb.chats.length;
  // Refused for the attacker's sake, but too late: the attack went on, and stays as it is.
  answer(ctx, check.id, rulesRefusal(check, 'not-enough-psp', 'Ulcen of Tyr declares 9 PSPs of ego-whip but holds 4'));
  assert.equal(ctx.sb.chats.length, chats + 1);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`The answer to request <b>${check.id}</b> .* came after the defense was asked without it, when it got no answer in time: it changes nothing\\.`));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), waiting);
  // An allowing one would not ask twice either (and the answer is taken once only).
  answer(ctx, check.id, checkAllowed(check.id));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /that request was already answered/);
  assert.equal(buttonsSent(ctx.sb).length, 2, 'one whisper to Bob, one to the GM');
});

test('an attack being checked at a sandbox restart was not made: the GM and the attacker\'s player are told, and the check\'s late answer asks nobody', () => {
  const first = campaign({ checkByHand: true });
  attack(first);
  const check = lastRequest(first.sb);
  const saved = plain(first.sb.state.Mindscape);
  const ctx = campaign({ checkByHand: true, before: (s) => { s.state.Mindscape = saved; } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => /requests in flight/.test(w));
  assert.match(told, new RegExp(`<b>${check.id}</b>: check of Ego Whip by Ulcen of Tyr against Fenka, before Fenka is asked for a defense`));
  assert.match(told, /An attack that was being checked before anyone was asked for a defense was not made, and its answer changes nothing/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /attack not made<\/b><br>The Mod sandbox restarted while your attack was being checked \(Ego Whip: Ulcen of Tyr vs\. Fenka\): nobody was asked for a defense\. Attack again\./);
  assert.deepEqual(whispersTo(ctx.sb, 'Bob'), []);
  answer(ctx, check.id, checkAllowed(check.id));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /came after the Mod sandbox restarted meanwhile, so the attack was not made: it changes nothing\./);
  assert.deepEqual(buttonsSent(ctx.sb), []);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('the help handout says an attack is checked before anyone is asked, and one the attacker cannot make asks nobody', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.match(handout.get('notes'), /the selected token attacks\. The companion checks the attack first: one the attacker cannot make .* is refused to you with the reason, and nobody is asked\./);
});

test('a GM may settle the defense at once; odds are whispered to whoever asked', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode mind-thrust --mult 2 --defense none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  assert.equal(req.body.params.defense, null);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 2` });
  const odds = lastRequest(ctx.sb);
  assert.equal(odds.body.method, 'exchange.odds');
  assert.equal(odds.body.params.defense, null);
  // A chance that would read 0.0% stays out of the answer typed through the bridge.
  assert.equal(odds.body.params.least_chance, 0.0005);
  answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: { outcomes: { hit: 0.45, miss: 0.55 }, critical: 0.05, damage: { mean: 4.5, distribution: [], truncated_mass: 0 } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Hit 45\.0%, Miss 55\.0%, Critical 5\.0%<br>Mean damage 4\.50/);
  // Odds for a defense of Fenka's (Bob's), or their refusal, would tell Alice which
  // defenses Fenka knows and can pay for: the companion is asked for them as if Fenka
  // knew the defense and could pay (assume_known), and Alice reads that they are.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --defense thought-shield` });
  const assumed = lastRequest(ctx.sb);
  assert.deepEqual([assumed.body.params.defense, assumed.body.params.assume_known], [{ mode: 'thought-shield' }, ['/defender']]);
  answer(ctx, assumed.id, { jsonrpc: '2.0', id: assumed.id, result: { outcomes: { hit: 0.3, miss: 0.7 }, damage: { mean: 2, distribution: [], truncated_mass: 0 } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Hit 30\.0%, Miss 70\.0%.*<i>As if Fenka knew Thought Shield and could pay for it: which defenses a mind knows, and what it can pay, only its controllers and the GM see\.<\/i>/);
  // The GM asks the truth: nothing is assumed.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --defense thought-shield` });
  assert.deepEqual([lastRequest(ctx.sb).body.params.defense, lastRequest(ctx.sb).body.params.assume_known], [{ mode: 'thought-shield' }, undefined]);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  assert.equal(lastRequest(ctx.sb).body.params.assume_known, undefined, 'no defense, nothing to assume');
  // Mode names are read after NFKC, as the companion reads sheet names: full-width too.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --defense \uff34\uff48\uff4f\uff55\uff47\uff48\uff54 \uff33\uff48\uff49\uff45\uff4c\uff44` });
  assert.deepEqual(lastRequest(ctx.sb).body.params.defense, { mode: 'thought-shield' });
});

test('combat-strength odds come in a few lines, not one per damage value: outcomes, conditions, defense strength at 0, the damage summed up (RULES.md 2.4: penetrating dice chain)', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode psychic-implosion --defense mind-blank` });
  const odds = lastRequest(ctx.sb);
  assert.equal(odds.body.params.least_chance, 0.0005);
  // The companion's shape (engine/combat_strength/README.md, "Odds"; docs/API.md
  // least_chance): 10, 20 and 30 kept, a long tail of values 31..1030 at 0.01% each left
  // out, and the damage dealt summed up over all of them.
  const distribution = [[10, 0.5], [20, 0.3], [30, 0.1]];
  const outcomes = Object.fromEntries(distribution.map(([v, p]) => [String(v), p * 0.98]));
  answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: {
    outcomes: { ...outcomes, crushed: 0.02 }, crushed: 0.02, left_out: { outcomes: 0.098, distribution: 0.1 },
    damage: { mean: 66.05, distribution, truncated_mass: 0, dealt: { chance: 1, mean: 66.05, p10: 10, median: 10, p90: 30, least: 10, most: 1030 } },
    defense_zero: 0.0216, conditions: {}, save: null, outcome: { crushed: 0.02, damage: 0.98 }, table: 'combat', bonus_dice: 4, attack_cost: 14,
  } });
  const card = whispersTo(ctx.sb, 'gm').at(-1);
  assert.equal(card.split('<br>').length, 4, card);
  assert.match(card, /Mind crushed 2\.0%, Damage 98\.0%<br>Defense strength falls to 0: 2\.2%<br>Damage when dealt: 66\.0 on average, median 10, 8 times in 10 from 10 to 30\./);
  assert.doesNotMatch(card, /\b(10|20|30) \d+\.\d%/);
  // Damage that is always the same is said once.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode psychic-implosion --defense mind-blank` });
  const fixed = lastRequest(ctx.sb);
  answer(ctx, fixed.id, { jsonrpc: '2.0', id: fixed.id, result: {
    outcomes: { 7: 1 }, crushed: 0, left_out: { outcomes: 0, distribution: 0 },
    damage: { mean: 7, distribution: [[7, 1]], truncated_mass: 0, dealt: { chance: 1, mean: 7, p10: 7, median: 7, p90: 7, least: 7, most: 7 } },
    defense_zero: 0, conditions: {}, save: null, outcome: { damage: 1, crushed: 0 },
  } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Damage 100\.0%<br>Damage when dealt: 7\.<\/div>$/);
  // A psionic wave on a defenseless mind deals no damage but leaves a condition: it says so.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode psionic-wave` });
  const wave = lastRequest(ctx.sb);
  answer(ctx, wave.id, { jsonrpc: '2.0', id: wave.id, result: {
    outcomes: { 0: 1 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0, dealt: null }, crushed: 0, defense_zero: 0,
    conditions: { asleep: 0.75, stunned: 0.25 }, save: null, outcome: { condition: 1 },
  } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /A condition 100\.0%<br>Conditions: Asleep 75\.0%, Stunned 25\.0%<\/div>$/);
});

test('odds refused for a mind the attack would strike tell a player who does not control it nothing of that mind; the GM reads why', () => {
  const ctx = campaign();
  const oddsRefused = (playerid, data) => {
    // (a player not controlling Fenka asks without --defense: odds for a defense are refused)
    const defense = playerid === GM ? ' --defense mind-blank' : '';
    ctx.sb.chat({ playerid, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip${defense}` });
    const odds = lastRequest(ctx.sb);
    assert.equal(odds.body.method, 'exchange.odds');
    answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, error: { code: 4001, message: 'the rules forbid it', data } });
  };
  // Fenka's PSPs (Bob's) are not Alice's to read.
  oddsRefused(ALICE, { rule: 'not-enough-psp-for-defense', detail: 'Fenka needs 3 PSPs for mind-blank but holds 1' });
  const toAlice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(toAlice, /No odds for this choice: the companion refused it because of a mind the attack would strike/);
  assert.doesNotMatch(toAlice, /holds 1|3 PSPs|not-enough/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka needs 3 PSPs for Mind Blank but holds 1\..*companion: 4001 not-enough-psp-for-defense/);
  // A refusal naming Fenka (power-pool's list of the defenses it knows) is hidden alike.
  oddsRefused(ALICE, { rule: 'mode-not-known', detail: "Fenka does not know blank-mind (knows [\"pinnacle-of-will\"])", combatant: ctx.fenka.id });
  assert.doesNotMatch(whispersTo(ctx.sb, 'Alice').at(-1), /pinnacle|knows/);
  // Her own attacker's refusal is hers to read, and the GM's asking reads everything.
  oddsRefused(ALICE, { rule: 'not-enough-psp', detail: 'Ulcen of Tyr declares 9 PSPs of ego-whip but holds 4' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Refused: Ego Whip odds: Ulcen of Tyr vs\. Fenka<\/b><br>Ulcen of Tyr declares 9 PSPs of Ego Whip but holds 4\./);
  assertPlainRefusal(whispersTo(ctx.sb, 'Alice').at(-1), ['not-enough-psp']);
  oddsRefused(GM, { rule: 'not-enough-psp-for-defense', detail: 'Fenka needs 3 PSPs for mind-blank but holds 1' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka needs 3 PSPs for Mind Blank but holds 1\./);
});

test('config is for GMs; it stores the system and attribute names per character', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi config --system power-pool' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM/);
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.ulcen.id} --system combat-strength --attr attack_strength=PSA --attr defense_strength=PSD` });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --system combat-strength --adapter roll20.generic --attr attack_strength=PSP' });
  const stored = plain(ctx.sb.state.Mindscape.characters);
  assert.deepEqual(stored[ctx.ulcen.id], { attributes: { attack_strength: 'PSA', defense_strength: 'PSD' }, system: 'combat-strength' });
  assert.equal(stored[ctx.fenka.id].adapter, 'roll20.generic');
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'PSA', current: '60', max: '60' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'dazed' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode psionic-wave` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode shield-thoughts` });
  const { params } = lastRequest(ctx.sb).body;
  assert.equal(params.system, 'combat-strength');
  assert.equal(params.attacker.adapter, 'roll20.generic');
  // roll20.generic takes {mapping, character} (adapters/roll20.py); only the mapped
  // attributes and the psi_* state attributes travel.
  assert.deepEqual(params.attacker.data.mapping, { version: 1, fields: { attack_strength: 'PSA', defense_strength: 'PSD' } });
  assert.equal(params.attacker.data.character.id, ctx.ulcen.id);
  assert.deepEqual(params.attacker.data.character.attribs.map((a) => a.name).sort(), ['PSA', 'psi_conditions', 'psi_mind']);
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode loud --timeout 60' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--rollmode must be one of/);
  assert.equal(ctx.sb.state.Mindscape.config.timeout, 30);
  ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr psp=Power|max' });
  assert.equal(ctx.sb.state.Mindscape.config.adapter, 'roll20.generic');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.config.attributes), { psp: 'Power|max' });
});

test('!psi config shows the campaign\'s attribute names, and each character\'s adapter and attribute names; --attr takes spaces around =, forgets a field given no attribute, and counts a name\'s length in characters; the bounds of --timeout and --chunk are taken, a bar in any case', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --attr psp=Power' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /adapter <b>roll20\.adnd2e-revised<\/b>; psp=Power<br>/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --adapter roll20.generic --attr hp=Life' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka: \(default\), roll20\.generic, hp=Life/);
  // A character's settings change by what is given, the rest kept.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --attr psp=Focus' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka: \(default\), roll20\.generic, hp=Life, psp=Focus/);
  // Spaces around = are allowed; an empty attribute forgets the field; a name's length is counted in characters.
  ctx.sb.chat({ playerid: GM, content: '!psi config --attr psp = Mind Points' });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.config.attributes), { psp: 'Mind Points' });
  ctx.sb.chat({ playerid: GM, content: '!psi config --attr psp=' });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.config.attributes), {});
  const before = JSON.stringify(ctx.sb.state.Mindscape.characters);
  ctx.sb.chat({ playerid: GM, content: '!psi config --char Nobody --system power-pool' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--char must name a character or a token that represents one\. Nothing was changed\./);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.characters), before);
  // The bounds of the campaign's numbers are taken; a bar is named in any case.
  ctx.sb.chat({ playerid: GM, content: '!psi config --timeout 600 --chunk 10000 --hpbar NONE' });
  assert.deepEqual([ctx.sb.state.Mindscape.config.timeout, ctx.sb.state.Mindscape.config.chunk, ctx.sb.state.Mindscape.config.hpBar], [600, 10000, 'none']);
  ctx.sb.chat({ playerid: GM, content: '!psi config --timeout 5' });
  assert.equal(ctx.sb.state.Mindscape.config.timeout, 5);
  const long = '\u{1F9E0}'.repeat(200);
  ctx.sb.chat({ playerid: GM, content: `!psi config --attr psp=${long}` });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.config.attributes), { psp: long });
});

test('config never guesses whose settings change: a selected token of no character, --char with tokens selected, and --reset with other options are refused and nothing changes (ROLL20.md: Settings)', () => {
  const ctx = campaign();
  const lamp = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: '', name: 'Lamp' });
  const before = plain(ctx.sb.state.Mindscape);
  const config = (selected, options) => ctx.sb.chat({ playerid: GM, selected, content: `!psi config${options}` });
  // The lamp alone would have changed the campaign; beside Ulcen's token, only Ulcen.
  config([lamp.id], ' --system power-pool');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Selected: Lamp \(represents no character\), which has no settings: select only tokens of characters, or none to change the campaign\. Nothing was changed\./);
  config([ctx.tokens.ulcen.id, lamp.id], ' --system power-pool');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Selected: Lamp \(represents no character\)/);
  // --char beside a selection: which one was meant?
  config([ctx.tokens.fenka.id], ` --char ${ctx.ulcen.id} --system power-pool`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--char names the character, and tokens are selected too: deselect the tokens, or leave out --char\. Nothing was changed\./);
  // --reset beside a setting would have dropped the setting unsaid.
  config([], ` --char ${ctx.ulcen.id} --reset --system combat-strength`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--reset forgets the character's settings, and --system would change them: give --reset alone .*Nothing was changed\./);
  config([ctx.tokens.ulcen.id], ' --reset --timeout 60');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--reset forgets the character's settings, and --timeout would change them/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape), before);
  // Showing the settings changes nothing, whatever is selected; --reset alone still forgets.
  config([lamp.id], '');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Mindscape: settings/);
  config([ctx.tokens.ulcen.id], ' --system power-pool');
  assert.equal(ctx.sb.state.Mindscape.characters[ctx.ulcen.id].system, 'power-pool');
  config([], ` --char ${ctx.tokens.ulcen.id} --reset`);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  assert.equal(ctx.sb.state.Mindscape.config.system, 'revised-2e');
});

test('config --attr takes only the fields and attributes the companion\'s mapping schema takes: another field, PSP|MAX, a..b, __proto__ are refused and nothing is stored', () => {
  const ctx = campaign();
  const before = plain(ctx.sb.state.Mindscape);
  const attr = (pair) => {
    ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.ulcen.id} --attr ${pair}` });
    return whispersTo(ctx.sb, 'gm').at(-1);
  };
  assert.match(attr('pps=PSP'), /--attr: "pps" is no combatant field the companion maps; the fields are kind, level, .*blank_mind_save \(docs\/COMBATANTS\.md\)\. Nothing was changed\./);
  assert.match(attr('__proto__=PSP'), /"__proto__" is no combatant field/);
  assert.match(attr('PSP=PSP'), /"PSP" is no combatant field/);
  for (const path of ['PSP|MAX', 'PSP|current', 'a..b', '.PSP', 'PSP.', 'a|b|max', 'x'.repeat(201)]) {
    assert.match(attr(`psp_max=${path}`), /--attr psp_max: ".*" is no attribute the companion reads: a name without \| .*at most 200 characters\. Nothing was changed\./, path);
  }
  ctx.sb.chat({ playerid: GM, content: `!psi config --attr hp=a..b` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /is no attribute the companion reads.*Nothing was changed\./);
  assert.deepEqual(plain(ctx.sb.state.Mindscape), before);
  // What the schema takes is stored: a maximum, a dotted name, one of 200 characters.
  attr(`psp=PSP --attr psp_max=PSP|max --attr attack_strength=Psionic.Attack --attr hp=${'h'.repeat(200)}`);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters[ctx.ulcen.id].attributes),
    { psp: 'PSP', psp_max: 'PSP|max', attack_strength: 'Psionic.Attack', hp: 'h'.repeat(200) });
});

test('the fields and attribute paths config --attr takes are those of adapters/data/mapping.schema.json, so the two cannot drift apart', () => {
  const schema = JSON.parse(readFileSync(MAPPING_SCHEMA, 'utf8'));
  const { MAPPING_FIELDS, MAPPING_PATH, MAPPING_PATH_LENGTH } = campaign().sb.context.Mindscape;
  assert.deepEqual([...MAPPING_FIELDS].sort(), [...schema.$defs.fields.propertyNames.enum].sort());
  assert.equal(MAPPING_PATH.source, schema.$defs.path.pattern);
  assert.equal(MAPPING_PATH_LENGTH, schema.$defs.path.maxLength);
  assert.equal(schema.$defs.path.minLength, 1);
});

test('options of another system are refused in plain words (API.md: attack objects are system-specific)', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --mult 2` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--mult is a revised-2e option/);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --range short` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--range must be one of \(none in this system\)/);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --dice 2` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode pinnacle-of-will --sacrifice 3,1 --dice 2` });
  const { params } = lastRequest(ctx.sb).body;
  assert.deepEqual(params.attack, { mode: 'mental-stab', pool_dice: 2 });
  assert.deepEqual(params.defense, { mode: 'pinnacle-of-will', sacrifice: [3, 1], pool_dice: 2 });
  assert.equal(requestsBeyondChecks(ctx.sb).length, 1);
  // Where both sides' options stand in one command, the defender's dice are --defense-dice.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --dice 3 --defense blank-mind --defense-dice 1` });
  const odds = lastRequest(ctx.sb).body.params;
  assert.deepEqual([odds.attack, odds.defense], [{ mode: 'mental-stab', pool_dice: 3 }, { mode: 'blank-mind', pool_dice: 1 }]);
});

test('a number in an option is digits only: an empty value, 0x3, 1e1 or 0b11 is refused, never taken as 0 or read as another base (ROLL20.md: Commands)', () => {
  const ctx = campaign();
  const refused = (playerid, content, pattern) => {
    const before = requests(ctx.sb).length;
    ctx.sb.chat({ playerid, selected: /^!psi config/.test(content) ? [] : [ctx.tokens.ulcen.id], content });
    const whisper = (playerid === GM ? whispersTo(ctx.sb, 'gm') : whispersTo(ctx.sb, 'Alice')).at(-1);
    assert.match(whisper, /refused/, content);
    if (pattern) assert.match(whisper, pattern, content);
    assert.equal(requests(ctx.sb).length, before, `${content} was sent`);
  };
  const target = `--target ${ctx.tokens.fenka.id}`;
  for (const bad of ['0x3', '1e1', '0b11', ' ']) {
    refused(ALICE, `!psi attack ${target} --mode ego-whip --mult ${bad}`, bad.trim() ? /--mult must be a whole number of 1 or more/ : null);
    refused(GM, `!psi rest --hours ${bad}`, bad.trim() ? /--hours must be a whole number of hours from 1 to 1000/ : null);
    refused(GM, `!psi config --timeout ${bad}`, bad.trim() ? /--timeout must be 5 to 600 seconds/ : null);
  }
  for (const bad of ['0x400', '2e3', '0b1111101000']) refused(GM, `!psi config --chunk ${bad}`, /--chunk must be 100 to 10000 characters/);
  assert.deepEqual([ctx.sb.state.Mindscape.config.timeout, ctx.sb.state.Mindscape.config.chunk], [30, 1000]);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  for (const bad of ['0x2', '1e0', '']) {
    refused(ALICE, `!psi attack ${target} --mode mental-stab --dice ${bad}`, bad ? /--dice must be a whole number of pool dice/ : null);
    refused(GM, `!psi attack ${target} --mode mental-stab --defense none --defense-dice ${bad}`, bad ? /--defense-dice must be a whole number of pool dice/ : null);
    refused(GM, `!psi attack ${target} --mode mental-stab --defense none --sacrifice ${bad || '1,'}`, /--sacrifice wants spell levels 1-9/);
  }
  // Digits still work, an inline roll's total too.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack ${target} --mode mental-stab --dice 02` });
  assert.deepEqual(plain(requests(ctx.sb).at(-1).body.params.attack), { mode: 'mental-stab', pool_dice: 2 });
});

test('power-pool: --dice and --defense-dice are pool dice from 0 to 100 (engine/dice.py MAX_DICE_PER_POOL), refused above, below or between, naming the option, nothing sent; 0 goes to the companion (a side may roll none of its pool)', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  const target = `--target ${ctx.tokens.fenka.id}`;
  const refused = (playerid, content, pattern) => {
    const before = requests(ctx.sb).length;
    ctx.sb.chat({ playerid, selected: [ctx.tokens.ulcen.id], content });
    const whisper = (playerid === GM ? whispersTo(ctx.sb, 'gm') : whispersTo(ctx.sb, 'Alice')).at(-1);
    assert.match(whisper, pattern, content);
    assert.equal(requests(ctx.sb).length, before, `${content} was sent`);
  };
  for (const bad of ['101', '-1', '1.5', '1000000']) {
    refused(ALICE, `!psi attack ${target} --mode mental-stab --dice ${bad}`, /--dice must be a whole number of pool dice from 0 to 100\./);
    refused(ALICE, `!psi odds ${target} --mode mental-stab --dice ${bad}`, /--dice must be a whole number of pool dice from 0 to 100\./);
    refused(GM, `!psi attack ${target} --mode mental-stab --defense none --defense-dice ${bad}`, /--defense-dice must be a whole number of pool dice from 0 to 100\./);
  }
  for (const dice of ['0', '100']) {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds ${target} --mode mental-stab --dice ${dice} --defense none --defense-dice ${dice}` });
    const params = plain(lastRequest(ctx.sb).body.params);
    assert.deepEqual([params.attack.pool_dice, params.defense.pool_dice], [Number(dice), Number(dice)]);
  }
  // !psi defend's own --dice, and an encounter's declaration, are held to the same.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack ${target} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none --dice 101` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /--dice must be a whole number of pool dice from 0 to 100\./);
  assert.equal(requests(ctx.sb).length, sent);
  const enc = encounterOf(ctx, [ctx.tokens.ulcen, ctx.tokens.fenka]);
  const before = requests(enc.sb).length;
  enc.sb.chat({ playerid: ALICE, selected: [enc.tokens.ulcen.id], content: `!psi encounter declare --attack mental-stab ${target} --dice 101` });
  assert.match(whispersTo(enc.sb, 'Alice').at(-1), /--dice must be a whole number of pool dice from 0 to 100\./);
  assert.equal(requests(enc.sb).length, before);
});

test('power-pool: no defense mode still rolls the pool, so its --dice and --sacrifice go along (an object without a mode); elsewhere they are refused, never dropped', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none --dice 1 --sacrifice 3` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.defense), { sacrifice: 3, pool_dice: 1 });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /No defense/);
  // Without them no defense is null, as before.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.equal(lastRequest(ctx.sb).body.params.defense, null);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none --defense-dice 2` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.defense), { pool_dice: 2 });
  // --ally still wants a mode that draws allies in.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none --defense-dice 2 --ally ${ctx.tokens.ogre.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /not no defense\. Nothing was sent\./);

  const r2e = campaign();
  const sent = requests(r2e.sb).length;
  r2e.sb.chat({ playerid: GM, selected: [r2e.tokens.ulcen.id], content: `!psi odds --target ${r2e.tokens.fenka.id} --mode ego-whip --defense none --defense-dice 2` });
  assert.match(whispersTo(r2e.sb, 'gm').at(-1), /--sacrifice and --defense-dice are power-pool options\./);
  attack(r2e);
  const rid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(r2e.sb, 'Bob').at(-1))[1];
  r2e.sb.chat({ playerid: BOB, content: `!psi defend --req ${rid} --mode none --sacrifice 2` });
  assert.match(whispersTo(r2e.sb, 'Bob').at(-1), /--sacrifice and --dice are power-pool options\./);
  assert.equal(requestsBeyondChecks(r2e.sb).length, 0);
  assert.ok(requests(r2e.sb).length > sent);
});

// The defense buttons Bob is offered when Alice's Ulcen mind-thrusts Fenka, as mode ids.
const fenkaDefenseButtons = (ctx) => {
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mind-thrust` });
  return Array.from(whispersTo(ctx.sb, 'Bob').at(-1).matchAll(/--mode ([a-z-]+)\)/g), (m) => m[1]);
};

// All five combat-strength defenses and No defense, as a psionic mind is offered them.
const COMBAT_STRENGTH_DEFENSES = ['mind-blank', 'shield-thoughts', 'mental-barrier', 'intellect-fortress', 'tower-of-iron-will', 'none'];

test('the defense buttons offer the modes the companion knows, read in its order for each system (adapters/roll20.py): psi_defenses over the AD&D rows, the rows in revised-2e only, else its defaults', () => {
  const ctx = campaign();
  const buttons = (mode) => {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ${mode}` });
    return Array.from(whispersTo(ctx.sb, 'Bob').at(-1).matchAll(/--mode ([a-z-]+)\)/g), (m) => m[1]);
  };
  const set = (name, current, max = '') => {
    const attr = ctx.sb.attribute(ctx.fenka.id, name);
    if (attr) attr.set({ current, max });
    else ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name, current, max });
  };
  const system = (id) => ctx.sb.chat({ playerid: GM, content: `!psi config --system ${id}` });
  // revised-2e: Fenka's psionic-defense rows (Mental Barrier, Mind Blank) ...
  assert.deepEqual(buttons('ego-whip'), ['mental-barrier', 'mind-blank', 'none']);
  // ... unless psi_defenses lists modes: the companion reads it over the rows.
  set('psi_defenses', 'thought-shield, tower-of-iron-will');
  assert.deepEqual(buttons('ego-whip'), ['thought-shield', 'tower-of-iron-will', 'none']);
  // A list naming no mode of the system knows none (the rows do not come back).
  set('psi_defenses', 'Mental Stab');
  assert.deepEqual(buttons('ego-whip'), ['none']);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /The companion knows no defense mode of Fenka \(the help handout says where it reads them\): No defense only\./);
  set('psi_defenses', '');
  assert.deepEqual(buttons('ego-whip'), ['mental-barrier', 'mind-blank', 'none']);
  assert.doesNotMatch(whispersTo(ctx.sb, 'Bob').at(-1), /knows no defense mode/);
  // The sheet's Psionics Core tab keeps its Defense Modes as power rows of
  // repeating_psion-defense5 (both revisions of the sheet: tests/fixtures/README.md):
  // read too, as are rows of the name earlier versions read (psion- twice).
  set('repeating_psion-defense5_-Mc_1_psiondefending', 'Intellect Fortress');
  assert.deepEqual(buttons('ego-whip'), ['mental-barrier', 'mind-blank', 'intellect-fortress', 'none']);
  set('repeating_psion-defense5_-Mc_1_psiondefending', '');
  set('repeating_psion-psion-defense5_-Mc1_psiondefending', 'Tower of Iron Will');
  assert.deepEqual(buttons('ego-whip'), ['mental-barrier', 'mind-blank', 'tower-of-iron-will', 'none']);
  set('repeating_psion-psion-defense5_-Mc1_psiondefending', '');
  // power-pool reads psi_defenses only: the rows are not its modes, and the companion's
  // default is none (only No defense), never all of them.
  system('power-pool');
  assert.deepEqual(buttons('mental-stab'), ['none']);
  set('psi_defenses', 'Blank Mind; Imagination Swarm, Tower of Iron Will');
  assert.deepEqual(buttons('mental-stab'), ['blank-mind', 'imagination-swarm', 'none']);
  set('psi_defenses', '["Pinnacle of Will"]');
  assert.deepEqual(buttons('mental-stab'), ['pinnacle-of-will', 'none']);
  // combat-strength: nothing listed is all five for a psionic mind (psi_psionic, else one
  // with a strength), none for another; a sheet's "Thought Shield" is its Shield Thoughts.
  set('psi_defenses', '');
  system('combat-strength');
  const five = COMBAT_STRENGTH_DEFENSES;
  assert.deepEqual(buttons('mind-thrust'), ['none']);
  set('psi_psionic', 'yes');
  assert.deepEqual(buttons('mind-thrust'), five);
  set('psi_psionic', '');
  set('psi_defense_strength', '0', '30');
  assert.deepEqual(buttons('mind-thrust'), five);
  set('psi_defenses', 'Thought Shield');
  assert.deepEqual(buttons('mind-thrust'), ['shield-thoughts', 'none']);
  // The generic adapter: psi_defenses over the attribute its mapping names; never the rows.
  set('psi_defenses', '');
  system('revised-2e');
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.fenka.id} --attr defenses=Wards --attr psp=PSP` });
  assert.deepEqual(buttons('ego-whip'), ['none']);
  set('Wards', 'Intellect Fortress');
  assert.deepEqual(buttons('ego-whip'), ['intellect-fortress', 'none']);
  set('psi_defenses', 'Mind Blank');
  assert.deepEqual(buttons('ego-whip'), ['mind-blank', 'none']);
});

test('combat-strength: a strength of only spaces is no strength, as the companion reads it (to_int): the other part, or the mapped attribute, counts, and the defense buttons follow', () => {
  const ctx = campaign();
  const buttons = () => fenkaDefenseButtons(ctx);
  const set = (name, current, max = '') => {
    const attr = ctx.sb.attribute(ctx.fenka.id, name);
    if (attr) attr.set({ current, max });
    else ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name, current, max });
  };
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  const five = COMBAT_STRENGTH_DEFENSES;
  // A maximum of spaces holds no number: the current 5 counts, so Fenka is psionic and
  // knows all five (the companion: attack_strength 5, psionic true).
  set('psi_attack_strength', '5', '   ');
  assert.deepEqual(buttons(), five);
  // Spaces in both parts: no strength at all, not psionic.
  set('psi_attack_strength', '   ', '   ');
  assert.deepEqual(buttons(), ['none']);
  // The generic adapter: a psi_* strength of spaces gives way to the mapped attribute.
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.fenka.id} --adapter roll20.generic --attr attack_strength=AS --attr attack_strength_max=AS|max --attr hp=HP` });
  set('AS', '0', '0');
  assert.deepEqual(buttons(), ['none']);
  set('AS', '3', '9');
  assert.deepEqual(buttons(), five);
  // psi_defenses of spaces is a list naming none, and still wins (split_names).
  set('psi_defenses', '   ');
  assert.deepEqual(buttons(), ['none']);
});

test('combat-strength: spaces are what the companion strips (Python str.strip): a strength maximum of U+0085 or U+001C holds no number, so the current value counts; a current value with them around it is its number', () => {
  const ctx = campaign();
  const buttons = () => fenkaDefenseButtons(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  const five = COMBAT_STRENGTH_DEFENSES;
  const add = (current, max) => ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_attack_strength', current, max });
  // The companion: attack_strength_max none (to_int strips U+0085), attack_strength 5: psionic.
  const strength = add('5', '\u0085');
  assert.deepEqual(buttons(), five);
  strength.set({ current: '\u001c5\u001f', max: '\u001c' });
  assert.deepEqual(buttons(), five);
  // psi_psionic says so with them around its word (to_bool strips them), whatever the strengths.
  strength.set({ current: '0', max: '0' });
  assert.deepEqual(buttons(), ['none']);
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psionic', current: '\u0085Yes\u001e', max: '' });
  assert.deepEqual(buttons(), five);
});

test('combat-strength: a strength is read as the companion reads a number (to_int): digits of any script count, and what it refuses ("1e1", "0x10", "5.0", ten digits, a fraction) is no strength', () => {
  const ctx = campaign();
  const buttons = () => fenkaDefenseButtons(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  const five = COMBAT_STRENGTH_DEFENSES;
  const attack = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_attack_strength', current: '', max: '' });
  const defense = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_defense_strength', current: '', max: '' });
  // Python's \d and int() take the digits of every script: Arabic-Indic 5, full-width 5,
  // monospace 5 (the last run of the mathematical digits), and with a sign.
  for (const text of ['\u0665', '\uff15', '\u{1d7fb}', '+\u0665', '\u0085\u0660\uff17\u001f']) {
    attack.set({ current: text, max: '' });
    assert.deepEqual(buttons(), five, text);
  }
  // Zeros of other scripts are 0 (the monospace zero too, a run after four others).
  for (const text of ['\u0660', '\uff10\uff10', '\u{1d7f6}', '-\u{1d7ce}']) {
    attack.set({ current: text, max: '' });
    assert.deepEqual(buttons(), ['none'], text);
  }
  // What to_int refuses holds no strength (the companion then refuses the sheet, naming
  // the attribute): the maximum so written counts as none, and with it Fenka is not psionic.
  for (const text of ['1e1', '0x10', '5.0', '\u0665.0', 'Infinity', '1234567890', '5 5', '1_0', '\ufeff5']) {
    attack.set({ current: '', max: text });
    assert.deepEqual(buttons(), ['none'], text);
  }
  // A number stored as a number: whole counts, a fraction is refused.
  attack.set({ current: '', max: 5 });
  assert.deepEqual(buttons(), five);
  attack.set({ current: '', max: 0.5 });
  assert.deepEqual(buttons(), ['none']);
  // A strength is 0 to 100000 (_INT0): one out of bounds is refused, and holds none either,
  // so the digits' values are read: 100000 counts, 100001 and -5 do not.
  for (const text of ['\u0661\u0660\u0660\u0660\u0660\u0660', '\uff11\uff10\uff10\uff10\uff10\uff10', 100000, '-0']) {
    attack.set({ current: '', max: text });
    assert.deepEqual(buttons(), text === '-0' ? ['none'] : five, text);
  }
  for (const text of ['\u0661\u0660\u0660\u0660\u0660\u0661', '\u{1d7cf}\u{1d7ce}\u{1d7ce}\u{1d7ce}\u{1d7ce}\u{1d7cf}', 100001, 1e10, '-\u0665']) {
    attack.set({ current: '', max: text });
    assert.deepEqual(buttons(), ['none'], text);
  }
  // A strength the companion refuses counts as none beside one it takes: -5 takes
  // nothing away from a defense strength of 5, nor 200000 adds to one of 0.
  attack.set({ current: '-\u0665', max: '' });
  defense.set({ current: '\u{1d7fb}', max: '' });
  assert.deepEqual(buttons(), five);
  attack.set({ current: '200000', max: '' });
  defense.set({ current: '0', max: '' });
  assert.deepEqual(buttons(), ['none']);
});

test('attacker and defender must use the same system', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.fenka.id} --system power-pool` });
  attack(ctx);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /uses revised-2e but Fenka uses power-pool/);
  // Nothing was sent or left waiting: no defense buttons, no attack stored, no request.
  assert.deepEqual(whispersTo(ctx.sb, 'Bob'), []);
  assert.equal(ctx.sb.chats.filter((c) => /defend --req/.test(c.input)).length, 0);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.equal(requests(ctx.sb).length, 0);
  // The same refusal where a request would go to the companion at once: the GM fixing
  // the defense in the command, and the odds.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --defense none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /uses revised-2e but Fenka uses power-pool/);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /uses revised-2e but Fenka uses power-pool/);
  assert.equal(requests(ctx.sb).length, 0);
});

test('an encounter is created, joined by a batch, declared in secret and resolved step by step', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi encounter create' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM/);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Dune duel' });
  const create = lastRequest(ctx.sb);
  assert.deepEqual(create.body.params, { system: 'revised-2e', name: 'Dune duel' });
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  assert.equal(ctx.sb.state.Mindscape.encounter.id, 'enc-1');

  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  assert.ok(Array.isArray(add.body));
  assert.deepEqual(add.body.map((b) => b.method), ['encounter.add', 'encounter.add']);
  assert.deepEqual(add.body.map((b) => b.params.combatant.data.id), [ctx.ulcen.id, ctx.fenka.id]);
  answer(ctx, add.id, add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: `c${i}`, revision: i + 1 } })));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), { [ctx.ulcen.id]: 'c0', [ctx.fenka.id]: 'c1' });

  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack mind-thrust --target ${ctx.tokens.fenka.id} --mult 2 --defense thought-shield` });
  const declare = lastRequest(ctx.sb);
  assert.equal(declare.body.method, 'encounter.declare');
  // Changing calls name the revision the script knows (API.md: stale -> 4009).
  assert.deepEqual(declare.body.params, {
    id: 'enc-1', combatant_id: 'c0', revision: 2,
    choice: { attack: { mode: 'mind-thrust', multiplier: 2, target: 'c1' }, defense: { mode: 'thought-shield' } },
  });
  answer(ctx, declare.id, { jsonrpc: '2.0', id: declare.id, result: { revision: 4, waiting_for: ['c1'] } });
  // The player reads back what was recorded, and that declaring again replaces all of it
  // (engine/revised_2e/encounter.py: "Declaring again replaces the earlier choice").
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /recorded in secret: Mind Thrust ×2 at Fenka; defense Thought Shield\. A new declaration replaces all of it, so declare your attack and your defense together\. Still to choose: 1/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Mind Thrust|Thought Shield/.test(w)), 'the GM\'s notice keeps the choice hidden');

  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force' });
  // Every combatant is taken again from its sheet first, one after the other (API.md
  // encounter.refresh); the sheets match here, so the revision stays 4.
  for (const [ref, cid] of [[ctx.ulcen.id, 'c0'], [ctx.fenka.id, 'c1']]) {
    const refresh = lastRequest(ctx.sb);
    assert.equal(refresh.body.method, 'encounter.refresh');
    assert.deepEqual([refresh.body.params.combatant_id, refresh.body.params.revision, refresh.body.params.combatant.data.id], [cid, 4, ref]);
    answer(ctx, refresh.id, { jsonrpc: '2.0', id: refresh.id, result: { combatant_id: cid, revision: 4, changed: [], warnings: [] } });
  }
  const resolve = lastRequest(ctx.sb);
  assert.deepEqual(resolve.body.params, { id: 'enc-1', revision: 4, force: true });
  // encounter.resolve answers the step (round, results, summary, rolls) with the
  // revision and the write-back updates beside it (companion/methods/encounter.py).
  const { updates, ...step } = exchangeResult(ctx, resolve.id).result;
  answer(ctx, resolve.id, {
    jsonrpc: '2.0',
    id: resolve.id,
    result: { round: 1, results: [step], summary: 'Round 1: Ulcen lashes out.', rolls: step.rolls, revision: 5, updates },
  });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 5);
  assert.match(ctx.sb.chats.at(-1).input, /^&\{template:default\} \{\{name=Dune duel: round 1\}\} \{\{Outcome=Hit\}\}/);

  ctx.sb.chat({ playerid: BOB, content: '!psi encounter get' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { phase: 'declare', revision: 5, waiting_for: ['c0', 'c1'] } });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Still to choose: Ulcen of Tyr, Fenka/);

  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  assert.equal(undo.body.method, 'encounter.undo');
  assert.deepEqual(undo.body.params, { id: 'enc-1', revision: 5 });
});

// A campaign whose current encounter (enc-1) of `system` holds the tokens `names` (of
// ctx.tokens), each under the combatant id `idOf(ctx, i)` the companion answers.
const encounterIn = (system, names, idOf) => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: `!psi encounter create --system ${system}` });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: names.map((name) => ctx.tokens[name].id), content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: idOf(ctx, i), revision: i + 1 } })));
  return ctx;
};

// Alice declares for Ulcen: the request sent, or her whisper when nothing was.
const aliceDeclares = (ctx, options) => {
  const before = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare ${options}` });
  return requests(ctx.sb).length > before ? lastRequest(ctx.sb) : whispersTo(ctx.sb, 'Alice').at(-1);
};

test('declare checks what the companion would refuse in raw words: a stance outside combat-strength\'s four (RULES.md 2.3), a stance in another system, two choices at once in power-pool', () => {
  const encounterOf = (system) => encounterIn(system, ['ulcen', 'fenka'], (ctx, i) => [ctx.ulcen.id, ctx.fenka.id][i]);
  const declare = aliceDeclares;
  const strength = encounterOf('combat-strength');
  assert.match(declare(strength, '--stance psychic-trance'), /--stance must be one of trance, discipline, wave, normal \(got "psychic-trance"\)/);
  assert.deepEqual(declare(strength, '--stance Trance').body.params.choice, { stance: 'trance' });
  assert.match(declare(encounterOf('revised-2e'), '--stance trance'), /--stance is a combat-strength choice; this encounter plays revised-2e\./);
  const pool = encounterOf('power-pool');
  assert.match(declare(pool, `--attack mental-stab --target ${pool.tokens.fenka.id} --defense blank-mind`),
    /in power-pool a declaration is one choice: --attack when you attack, --defense when you are struck .*Nothing was sent\./);
  assert.deepEqual(declare(pool, `--attack mental-stab --target ${pool.tokens.fenka.id}`).body.params.choice, { attack: { mode: 'mental-stab', target: pool.fenka.id } });
  // An option of the attack without --attack, or of the defense without --defense, is
  // refused, not dropped unsaid.
  const r2e = encounterOf('revised-2e');
  assert.match(declare(r2e, '--defense mind-blank --mult 2'), /--mult goes with --attack MODE \(the attack declared\)\. Nothing was sent\./);
  assert.match(declare(r2e, `--defense mind-blank --target ${r2e.tokens.fenka.id}`), /--target goes with --attack MODE/);
  assert.match(declare(pool, '--pass --keep-by die'), /--keep-by goes with --attack MODE/);
  // A mode the system does not have is refused naming --attack, the option declare takes
  // (not --mode, which it does not).
  assert.match(declare(r2e, `--attack fireball --target ${r2e.tokens.fenka.id}`),
    /--attack must be one of ego-whip, id-insinuation, mind-thrust, psionic-blast, psychic-crush for revised-2e \(got "fireball"\)\./);
  assert.match(declare(pool, '--pass --sacrifice 2'), /--sacrifice goes with --defense MODE \(or none\)\. Nothing was sent\./);
  // With them, no defense mode in power-pool keeps its dice and spells.
  assert.deepEqual(declare(pool, '--defense none --defense-dice 1 --sacrifice 2').body.params.choice, { defense: { sacrifice: 2, pool_dice: 1 } });
});

test('revised-2e declare: --attack2 declares a psionicist\'s second attack of the round (RULES.md 1.8), sent as attacks with both; without it attack as before; its options are refused alone, in other systems, without --attack or --target2', () => {
  // Ulcen, Fenka and the ogre, whose combatant ids the companion names c0, c1, c2.
  const encounterOf3 = (system) => encounterIn(system, ['ulcen', 'fenka', 'ogre'], (_ctx, i) => `c${i}`);
  const declared = aliceDeclares;
  const ctx = encounterOf3('revised-2e');
  const t = ctx.tokens;
  const two = declared(ctx, `--attack ego-whip --target ${t.fenka.id} --mult 2 --range medium --attack2 Mind Thrust --target2 ${t.ogre.id} --mult2 3 --range2 long --defense thought-shield`);
  assert.equal(two.body.method, 'encounter.declare');
  assert.deepEqual(plain(two.body.params), {
    id: 'enc-1', combatant_id: 'c0', revision: 3,
    choice: {
      attacks: [{ mode: 'ego-whip', multiplier: 2, range: 'medium', target: 'c1' }, { mode: 'mind-thrust', multiplier: 3, range: 'long', target: 'c2' }],
      defense: { mode: 'thought-shield' },
    },
  });
  answer(ctx, two.id, { jsonrpc: '2.0', id: two.id, result: { revision: 4, waiting_for: ['c1', 'c2'] } });
  // The player reads both attacks back; the GM's notice keeps them hidden.
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1),
    /recorded in secret: first attack Ego Whip ×2 at Fenka, medium range; second attack Mind Thrust ×3 at Ogre, long range; defense Thought Shield\. A new declaration/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Mind Thrust|Ego Whip|Thought Shield/.test(w)), 'the GM\'s notice keeps the choice hidden');
  // The second attack's multiplier is 1 when not given, as the first's; both may strike one mind.
  assert.deepEqual(plain(declared(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 ${t.fenka.id}`).body.params.choice),
    { attacks: [{ mode: 'ego-whip', multiplier: 1, target: 'c1' }, { mode: 'mind-thrust', multiplier: 1, target: 'c1' }] });
  // Without --attack2 the choice is one attack, as before.
  const one = declared(ctx, `--attack ego-whip --target ${t.fenka.id} --mult 2 --range short`);
  assert.deepEqual(plain(one.body.params.choice), { attack: { mode: 'ego-whip', multiplier: 2, range: 'short', target: 'c1' } });

  // Refused, and nothing sent.
  const refused = (c, options, why) => {
    const before = requests(c.sb).length;
    const said = declared(c, options);
    assert.equal(requests(c.sb).length, before, `${options} was sent`);
    assert.match(said, why, options);
  };
  refused(ctx, `--attack2 mind-thrust --target2 ${t.ogre.id} --defense thought-shield`,
    /--attack2 is the second attack of the round: declare the first with --attack MODE --target TOKEN as well\. Nothing was sent\./);
  for (const extra of [`--target2 ${t.ogre.id}`, '--mult2 2', '--range2 long']) {
    const key = extra.split(' ')[0];
    refused(ctx, `--attack ego-whip --target ${t.fenka.id} ${extra}`, new RegExp(`${key} goes with --attack2 MODE \\(the second attack declared\\)\\. Nothing was sent\\.`));
  }
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --mult2 2`,
    /--target2 is missing: name the token the second attack strikes \(--attack2 MODE --target2 TOKEN\)\. Nothing was sent\./);
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 -Mnobody`, /--target2 must be a token of a combatant in the current encounter\./);
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 ${t.ulcen.id}`, /a mind cannot attack itself\./);
  // The second attack's mode, multiplier and range are checked as the first's, naming its options.
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 fireball --target2 ${t.ogre.id}`,
    /--attack2 must be one of ego-whip, id-insinuation, mind-thrust, psionic-blast, psychic-crush for revised-2e \(got "fireball"\)\./);
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 ${t.ogre.id} --mult2 0`, /--mult2 must be a whole number of 1 or more\./);
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 ${t.ogre.id} --range2 far`, /--range2 must be one of short, medium, long\./);
  // Each is taken once, like the first attack's options.
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --attack2 ego-whip --target2 ${t.ogre.id}`,
    /--attack2 is given twice .*: encounter declare takes it once\. Nothing was done\./);
  refused(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 ${t.ogre.id} --target2 ${t.fenka.id}`,
    /--target2 is given twice .*: encounter declare takes it once\. Nothing was done\./);
  // combat-strength and power-pool have no second attack in a declaration.
  const strength = encounterOf3('combat-strength');
  refused(strength, `--attack ego-whip --target ${strength.tokens.fenka.id} --attack2 mind-thrust --target2 ${strength.tokens.ogre.id}`,
    /--attack2 is a revised-2e option: combat-strength has no second attack in a declaration\. Nothing was sent\./);
  const pool = encounterOf3('power-pool');
  refused(pool, `--attack mental-stab --target ${pool.tokens.fenka.id} --attack2 mental-stab --target2 ${pool.tokens.ogre.id}`,
    /--attack2 is a revised-2e option: power-pool has no second attack in a declaration\. Nothing was sent\./);
  refused(pool, `--attack mental-stab --target ${pool.tokens.fenka.id} --mult2 2`, /--mult2 is a revised-2e option: power-pool has no second attack/);

  // A round that allows one attack: the companion refuses (too-many-attacks, as
  // engine/revised_2e/encounter.py words it), and the player is told what to do.
  const late = declared(ctx, `--attack ego-whip --target ${t.fenka.id} --attack2 mind-thrust --target2 ${t.ogre.id}`);
  answer(ctx, late.id, { jsonrpc: '2.0', id: late.id, error: { code: 4001, message: 'The rules forbid it', data: { rule: 'too-many-attacks', detail: 'Ulcen of Tyr may make 1 attack(s) in round 1' } } });
  const alice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(alice, /Ulcen of Tyr may make 1 attack\(s\) in round 1\.<br>Nothing was recorded\. A psionicist makes a second attack only in the rounds its level allows: declare again with one attack \(without <code>--attack2<\/code>\)\./);
  assertPlainRefusal(alice, ['too-many-attacks']);
  // The help handout tells of it.
  ctx.sb.chat({ playerid: ALICE, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.match(handout.get('notes'), /<code>declare --attack MODE .*<code>--attack2 MODE --target2 TOKEN<\/code> \(with <code>--mult2<\/code>, <code>--range2<\/code>\) for a revised-2e psionicist's second attack of a round, which the companion allows by level/);
});

test('a resolved round shows what it did beside its exchanges (RULES.md 1.4: defenses are raised and paid at the round\'s start), so the cards add up to the PSPs written', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Arena' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: [ctx.ulcen.id, ctx.fenka.id][i], revision: i + 1 } })));
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  const resolve = lastRequest(ctx.sb);
  // The companion's round (engine/revised_2e): its summary tells the defenses paid, then
  // each exchange's own summary; 40 - 2 - 16 = 22 and 30 - 3 - 15 = 12 are written.
  const { updates, ...step } = exchangeResult(ctx, resolve.id).result;
  const hit = { ...step, summary: 'Ulcen of Tyr\'s ego whip ×4 strikes Fenka through the mind blank. Fenka loses 15 PSPs. Ulcen of Tyr pays 16 PSPs.' };
  answer(ctx, resolve.id, { jsonrpc: '2.0', id: resolve.id, result: {
    round: 1, results: [hit], revision: 3, rolls: step.rolls,
    summary: `Round 1: Ulcen of Tyr raises the thought shield (2 PSPs). Fenka raises the mind blank (3 PSPs). ${hit.summary}`,
    updates: [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 22 } } }, { character_id: ctx.fenka.id, attributes: { PSP: { current: 12 } } }],
  } });
  const cards = ctx.sb.chats.filter((c) => c.input.startsWith('&{template:default}')).map((c) => c.input);
  assert.equal(cards.length, 2, cards.join('\n'));
  assert.equal(cards[0], '&{template:default} {{name=Arena: round 1}} {{Summary=Round 1: Ulcen of Tyr raises the thought shield (2 PSPs). Fenka raises the mind blank (3 PSPs).}}');
  assert.match(cards[1], /\{\{Outcome=Hit\}\}.*\{\{Summary=Ulcen of Tyr&#39;s ego whip ×4 strikes Fenka/);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'PSP'), 12);
  // A round with nothing beside its exchange adds no card of its own.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  const next = lastRequest(ctx.sb);
  answer(ctx, next.id, { jsonrpc: '2.0', id: next.id, result: { round: 2, results: [hit], revision: 4, summary: `Round 2: ${hit.summary}`, updates: [] } });
  assert.equal(ctx.sb.chats.filter((c) => c.input.startsWith('&{template:default}')).length, 3);
});

test('!psi --help creates the help handout once and updates it afterwards', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi --help' });
  ctx.sb.chat({ playerid: GM, content: '!psi help' });
  const handouts = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.equal(handouts.length, 1);
  assert.match(handouts[0].get('notes'), /!psi attack --target/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /journal\.roll20\.net\/handout\//);
});

test('unknown verbs are answered with a pointer to the help', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi fly' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /unknown command "fly"; try !psi --help/);
});

// ------------------------------------------------------------ audit fixes

const PAIRED = 'TestPairingCode0123456789';
const ADAPTER = 'roll20.adnd2e-revised';

// Creates an encounter "enc-1" and adds the fighters of `tokens` (combatant ids = the
// fighters' refs, as the Roll20 adapters make them); returns the context.
const encounterOf = (ctx, tokens, id = 'enc-1') => {
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id, revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: tokens.map((t) => t.id), content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: b.params.combatant.data.id, revision: i + 1 } })));
  return ctx;
};

// The encounter of Ulcen and Fenka.
const encounterWithTwo = (options = {}) => {
  const ctx = campaign(options);
  return encounterOf(ctx, [ctx.tokens.ulcen, ctx.tokens.fenka]);
};

test('selected tokens that represent no character are left out of encounter add, !psi round and !psi rest, and the GM is told so', () => {
  const ctx = campaign();
  const lamp = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: '', name: 'Lamp' });
  const gone = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: '-Mdeleted', name: '' });
  const said = (from) => ctx.sb.chats.slice(from).map((c) => c.input).join('\n');
  let from = ctx.sb.chats.length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, lamp.id], content: '!psi round' });
  assert.match(said(from), /Left out: Lamp \(represents no character\)\./);
  assert.deepEqual(lastRequest(ctx.sb).body.params.combatants.map((c) => c.data.id), [ctx.ulcen.id]);
  from = ctx.sb.chats.length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, lamp.id, gone.id], content: '!psi rest --hours 8' });
  assert.match(said(from), /Left out: Lamp \(represents no character\), a token without a name \(represents no character\)\./);
  assert.deepEqual(lastRequest(ctx.sb).body.params.combatants.map((c) => c.data.id), [ctx.ulcen.id]);
  from = ctx.sb.chats.length;
  ctx.sb.chat({ playerid: GM, selected: [lamp.id], content: '!psi round' });
  assert.match(said(from), /Left out: Lamp \(represents no character\)\.[\s\S]*none of the selected tokens represents a character with psionics/);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  from = ctx.sb.chats.length;
  ctx.sb.chat({ playerid: GM, selected: [lamp.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  assert.match(said(from), /Mindscape: encounter<\/b><br>Left out: Lamp \(represents no character\)\./);
  assert.deepEqual(lastRequest(ctx.sb).body.map((b) => b.params.combatant.data.id), [ctx.fenka.id]);
  ctx.sb.chat({ playerid: GM, selected: [lamp.id], content: '!psi encounter add' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /select the tokens to add, or name them with --token\. Left out: Lamp \(represents no character\)\./);
});

test('a new campaign gets a random pairing code that only a GM sees with !psi pair, and --new renews it', () => {
  const ctx = campaign();
  const code = ctx.sb.state.Mindscape.pairing;
  assert.match(code, /^[A-Za-z0-9]{24}$/);
  assert.notEqual(campaign().sb.state.Mindscape.pairing, code);
  ctx.sb.chat({ playerid: ALICE, content: '!psi pair' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM may see or change the pairing code/);
  assert.ok(ctx.sb.chats.filter((c) => !c.input.startsWith('/w gm ')).every((c) => !c.input.includes(code)));
  ctx.sb.chat({ playerid: GM, content: '!psi pair' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`Pairing code: <code>${code}</code>.*paste it`));
  ctx.sb.chat({ playerid: GM, content: '!psi pair --new' });
  const renewed = ctx.sb.state.Mindscape.pairing;
  assert.notEqual(renewed, code);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`New pairing code: <code>${renewed}</code>`));
});

test('checkInstall migrates a schema-3 state to the current schema with a pairing code and keeps the rest', () => {
  const before = (s) => {
    s.state.Mindscape = {
      version: 3, config: { system: 'power-pool', rollMode: 'gm', timeout: 45, chunk: 800, adapter: 'roll20.generic', attributes: {} },
      characters: {}, exchanges: {}, encounter: { id: 'e', system: 'power-pool', revision: 3, combatants: {} }, answered: [],
    };
  };
  const { sb } = campaign({ before });
  const stored = plain(sb.state.Mindscape);
  assert.equal(stored.version, sb.context.Mindscape.SCHEMA_VERSION);
  assert.match(stored.pairing, /^[A-Za-z0-9]{24}$/);
  assert.equal(stored.config.timeout, 45);
  assert.equal(stored.encounter.revision, 3);
});

test('every request marker carries the pairing code and is a whisper of its own', () => {
  const ctx = campaign({ pairing: PAIRED });
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 100' });
  const req = attackAndDefend(ctx);
  const markers = ctx.sb.chats.filter((c) => c.input.includes('MINDSCAPE-REQ'));
  // The check of the attack, then its exchange.
  const [check] = requests(ctx.sb);
  assert.notEqual(check.id, req.id);
  assert.equal(markers.length, check.parts + req.parts);
  for (const c of markers) {
    const text = c.input.slice('/w gm '.length).replace(/<[^>]*>/g, '');
    const { id, parts } = text.includes(` ${req.id} `) ? req : check;
    assert.match(text, new RegExp(`^MINDSCAPE-REQ ${PAIRED} ${id} \\d+/${parts} [A-Za-z0-9_-]+$`));
  }
});

test('a character name cannot put a request marker into the chat', () => {
  const ctx = campaign();
  ctx.ulcen.set({ name: 'Evil MINDSCAPE-REQ forged03 1/1 eyJqc29ucnBjIjoiMi4wIn0' });
  ctx.fenka.set({ name: 'Sly MINDSCAPE-\u200bREQ forged04 1/1 eyJqc29ucnBjIjoiMi4wIn0' });
  const req = attackAndDefend(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config' });
  // Only the Mod script's own marker whispers hold the marker word, and nothing else.
  const withMarker = ctx.sb.chats.filter((c) => /MINDSCAPE-\u200b?REQ/i.test(c.input));
  assert.equal(withMarker.length, requests(ctx.sb).reduce((n, r) => n + r.parts, 0), 'the check of the attack and its exchange');
  assert.equal(requests(ctx.sb).length, 2);
  for (const c of withMarker) assert.match(c.input, /^\/w gm <div[^>]*>MINDSCAPE-REQ [A-Za-z0-9]{24} [A-Za-z0-9]{12} \d+\/\d+ [A-Za-z0-9_-]+<\/div>$/);
  assert.ok(ctx.sb.chats.some((c) => c.input.includes('Evil MINDSCAPE_REQ forged03')));
  assert.ok(ctx.sb.chats.some((c) => c.input.includes('Sly MINDSCAPE_REQ forged04')));
});

test('changing encounter calls name the revision they expect; a stale answer (4009) resyncs instead of failing', () => {
  const ctx = encounterWithTwo();
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 2);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force --no-refresh' });
  const resolve = lastRequest(ctx.sb);
  assert.equal(resolve.body.params.revision, 2);
  answer(ctx, resolve.id, { jsonrpc: '2.0', id: resolve.id, error: { code: 4009, message: 'Stale revision', data: { revision: 3 } } });
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /moved on \(now at revision 3\).*this answer changed nothing\. Resyncing/.test(w)));
  const get = lastRequest(ctx.sb);
  assert.equal(get.body.method, 'encounter.get');
  assert.deepEqual(get.body.params, { id: 'enc-1' });
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'round', revision: 3, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [] } });
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /revision 3.*Combatants: Ulcen of Tyr, Fenka/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /May pay to close/);
  // revised-2e's view prices closing a mind a critical hit opened (API.md close_offers).
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const status = lastRequest(ctx.sb);
  answer(ctx, status.id, { jsonrpc: '2.0', id: status.id, result: { id: 'enc-1', phase: 'round', revision: 3, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [ctx.fenka.id],
    close_offers: { [ctx.fenka.id]: { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null }, [ctx.ulcen.id]: { cost: 4, defense: 'thought-shield', basis: 'last', psp: 4, payable: false, reason: 'last-psp' } } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /May pay to close their minds \(declare --close\): Fenka \(10 PSPs\)<\/div>$/);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.resolve');
  assert.equal(lastRequest(ctx.sb).body.params.revision, 3);
});

test('a late step answer does not take the encounter\'s revision back: the undo that timed out answers revision 3 after a resync showed 5, and the next call names 5', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  assert.equal(undo.body.params.revision, 2);
  ctx.sb.advance(30000);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'round', revision: 5, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [] } });
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 5);
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 3, undone: 2, updates: [] } });
  assert.match(whispersTo(ctx.sb, 'gm').join('\n'), /A late answer for request/);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 5);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.resolve');
  assert.equal(lastRequest(ctx.sb).body.params.revision, 5);
});

test('revised-2e close offers in !psi encounter status (RULES.md 1.5) are read only by the GM and the controllers of that mind: an offer tells that its PSPs reach its price', () => {
  const ctx = encounterWithTwo();
  const status = (playerid) => {
    ctx.sb.chat({ playerid, content: '!psi encounter status' });
    const get = lastRequest(ctx.sb);
    answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'round', revision: 2, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [ctx.fenka.id],
      close_offers: { [ctx.fenka.id]: { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null }, [ctx.ulcen.id]: { cost: 4, defense: 'thought-shield', basis: 'last', psp: 9, payable: true, reason: null } } } });
  };
  status(GM);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /May pay to close their minds \(declare --close\): Fenka \(10 PSPs\), Ulcen of Tyr \(4 PSPs\)<\/div>$/);
  // Alice controls Ulcen: she reads his offer, not Fenka's (Bob's), the rest of the status alike.
  status(ALICE);
  const alice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(alice, /Combatants: Ulcen of Tyr, Fenka<br>Still to choose: Fenka<br>May pay to close their minds \(declare --close\): Ulcen of Tyr \(4 PSPs\)<\/div>$/);
  assert.doesNotMatch(alice, /10 PSPs/);
  status(BOB);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Still to choose: Fenka<br>May pay to close their minds \(declare --close\): Fenka \(10 PSPs\)<\/div>$/);
  // A player who controls neither reads no offer at all.
  ctx.sb.objects.find((o) => o.id === ctx.fenka.id).set({ controlledby: '' });
  status(BOB);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Still to choose: Fenka<\/div>$/);
});

test('a refusal names fighters, not combatant ids: a resolve still waiting for choices, a declaration\'s target unknown to the companion', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  const resolve = lastRequest(ctx.sb);
  // As revised-2e's engine words it (encounter.py: choices-missing).
  answer(ctx, resolve.id, { jsonrpc: '2.0', id: resolve.id, error: { code: 4001, message: 'The rules forbid it', data: { rule: 'choices-missing', detail: `still waiting for ${ctx.ulcen.id}, ${ctx.fenka.id}` } } });
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /Refused: the next step of Encounter<\/b><br>Still waiting for Ulcen of Tyr, Fenka\.<br><span style="font-size:9px;color:#888;">companion: 4001 choices-missing<\/span><\/div>$/);
  assert.doesNotMatch(told, /-Mfake/);
  // The companion no longer knows the target (4004 names the id it was sent): this
  // script's view lagged behind (a combatant removed in the companion).
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 2` });
  const declare = lastRequest(ctx.sb);
  answer(ctx, declare.id, { jsonrpc: '2.0', id: declare.id, error: { code: 4004, message: 'Not found', data: { id: ctx.fenka.id } } });
  const alice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(alice, /<b>Mindscape: Refused: Ulcen of Tyr&#39;s declaration<\/b><br>The companion does not know Fenka as a combatant of this encounter: a GM adds it with <code>!psi encounter add<\/code>\.<\/div>$/);
  assertPlainRefusal(alice);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`companion: 4004 ${ctx.fenka.id}<`));
});

test('a declaration refused reads in the table\'s words: no error code, rule id, JSON path, mode id or source reference; the GM keeps the code and rule in small print', () => {
  const ctx = encounterWithTwo();
  const refused = (error) => {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 2 --defense thought-shield` });
    const declare = lastRequest(ctx.sb);
    answer(ctx, declare.id, { jsonrpc: '2.0', id: declare.id, error });
    return [whispersTo(ctx.sb, 'Alice').at(-1), whispersTo(ctx.sb, 'gm').at(-1)];
  };
  // As the companion answers them (checked against the daemon): a rule with its source, a
  // schema refusal at a path with a list of ids, a house rule named by its id.
  const cases = [
    [{ code: 4001, message: 'The rules forbid it', data: { rule: 'attack-requires-trance', detail: 'Ulcen of Tyr is in the "normal" stance: only combatants in a psychic trance make attacks in the segments (seed steps 2 and 3.ii)' } },
      'Ulcen of Tyr is in the &#34;normal&#34; stance: only combatants in a psychic trance make attacks in the segments.', '4001 attack-requires-trance'],
    [{ code: -32602, message: 'Invalid params', data: { errors: [{ path: '/choice/attack/mode', message: '"ego-lash" is not one of ["ego-whip", "id-insinuation", "mind-thrust"]' }] } },
      'Attack mode: &#34;ego-lash&#34; is not one of Ego Whip, Id Insinuation, Mind Thrust.', '-32602 /choice/attack/mode'],
    [{ code: -32602, message: 'Invalid params', data: { errors: [{ path: '/choice/attack/multiplier', message: '0 is less than the minimum of 1' }] } },
      'Attack multiplier: 0 is less than the minimum of 1.', '-32602 /choice/attack/multiplier'],
    [{ code: 4001, message: 'The rules forbid it', data: { rule: 'one-wave-per-round', detail: 'Ulcen of Tyr has already used Psionic Wave this round (H-CS-WAVE-ROUND)' } },
      'Ulcen of Tyr has already used Psionic Wave this round (a house rule).', '4001 one-wave-per-round'],
    [{ code: 4002, message: 'Dice needed', data: { purpose: 'attack', sides: 20, needed: 1 } }, 'The companion needs 1 more d20 for attack.', '4002'],
    [{ code: -32603, message: 'Internal error', data: { error_id: 'e-42' } }, "The companion failed unexpectedly; its log on the GM's computer says why.", '-32603 error id e-42 Internal error'],
  ];
  for (const [error, reason, note] of cases) {
    const [alice, gm] = refused(error);
    assert.ok(alice.endsWith(`<b>Mindscape: Refused: Ulcen of Tyr&#39;s declaration</b><br>${reason}</div>`), alice);
    assertPlainRefusal(alice, [error.data.rule || '/choice/', 'H-CS-WAVE-ROUND', 'seed', 'ego-whip']);
    assert.ok(gm.endsWith(`<br>${reason}<br><span style="font-size:9px;color:#888;">companion: ${note}</span></div>`), gm);
  }
});

test('a refusal at a member whose name holds "/" or "~" reads that name as given: the path escapes them as ~1 and ~0 (RFC 6901), the GM\'s small print keeps the path as the companion wrote it', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 2` });
  const declare = lastRequest(ctx.sb);
  // "a/b" and "c~1d" (its "~" written "~0", then "/" is no part of it) as members of the choice
  const errors = [{ path: '/choice/attack/a~1b', message: 'not allowed here' },
    { path: '/choice/attack/c~01d', message: 'not allowed here' }];
  answer(ctx, declare.id, { jsonrpc: '2.0', id: declare.id, error: { code: -32602, message: 'Invalid params', data: { errors } } });
  const alice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.ok(alice.endsWith('<br>Attack a/b: not allowed here.<br>Attack c~1d: not allowed here.</div>'), alice);
  assertPlainRefusal(alice);
  assert.ok(whispersTo(ctx.sb, 'gm').at(-1).includes('companion: -32602 /choice/attack/a~1b /choice/attack/c~01d</span>'));
});

test('a 5003 with retry: false (the store\'s files deleted or replaced while the companion ran) says to restart mindscape serve; retry true or absent keeps the full-disk reason; the GM keeps the error id either way, and a player is pointed at no id he cannot see', () => {
  const ctx = encounterWithTwo();
  const refused = (data) => {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 2 --defense thought-shield` });
    const declare = lastRequest(ctx.sb);
    answer(ctx, declare.id, { jsonrpc: '2.0', id: declare.id, error: { code: 5003, message: 'Store unavailable: nothing was written', data } });
    return [whispersTo(ctx.sb, 'Alice').at(-1), whispersTo(ctx.sb, 'gm').at(-1)];
  };
  const gone = "The companion's store files were moved or deleted while it ran, so nothing was saved: put them back if they were moved, then restart <code>mindscape serve</code> on the GM's computer (without them it starts a new, empty store; its log there says more).";
  const full = 'The companion could not save (its disk may be full or its folder read-only), so nothing was changed.';
  for (const [data, reason] of [[{ error_id: 'e-51', retry: false }, gone], [{ error_id: 'e-51', retry: true }, full], [{ error_id: 'e-51' }, full],
    // Only the boolean false says the files are gone.
    [{ error_id: 'e-51', retry: 'false' }, full], [{ error_id: 'e-51', retry: 0 }, full]]) {
    const [alice, gm] = refused(data);
    assert.ok(alice.endsWith(`<br>${reason}</div>`), alice);
    assertPlainRefusal(alice);
    // The player's whisper has no small print: it must not send him to an error id.
    assert.doesNotMatch(alice, /error id|e-51/, alice);
    assert.ok(gm.endsWith(`<br>${reason}<br><span style="font-size:9px;color:#888;">companion: 5003 error id e-51 Store unavailable: nothing was written</span></div>`), gm);
  }
});

test('a player whose declaration arrives after the encounter moved on is told nothing was recorded', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: '!psi encounter declare --defense thought-shield' });
  const declare = lastRequest(ctx.sb);
  answer(ctx, declare.id, { jsonrpc: '2.0', id: declare.id, error: { code: 4009, message: 'Stale revision', data: { revision: 5 } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /moved on before your request arrived, so this answer recorded nothing/);
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.get');
});

test('when the bridge cannot tell whether a changing call ran, the GM is sent to !psi encounter status', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, error: { code: -32001, message: 'the bridge does not know whether the companion did this', data: { detail: 'timed out' } } });
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /could not tell whether the companion carried this out/);
  assert.match(told, /timed out/i);
  assert.match(told, /!psi encounter status/);
  assert.equal(ctx.sb.workerWrites.length, 0);
});

test('a resolve the bridge cannot vouch for holds everyone until status tells: stored, they stay held and the GM is told to put the companion\'s copy on the sheets; not stored, the holds end', () => {
  const lost = (id) => ({ jsonrpc: '2.0', id, error: { code: -32001, message: 'the bridge does not know whether the companion did this', data: { detail: 'timed out' } } });
  const status = (ctx, revision) => {
    ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
    const get = lastRequest(ctx.sb);
    const fighters = [[ctx.ulcen.id, 'Ulcen of Tyr', 32], [ctx.fenka.id, 'Fenka', 15]];
    answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', revision, phase: 'round', waiting_for: [], combatants: fighters.map(([id, name, psp]) => ({ id, name, psp })) } });
  };
  for (const [revision, stored] of [[3, true], [2, false]]) {
    const ctx = encounterWithTwo();
    ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
    const resolve = lastRequest(ctx.sb);
    assert.equal(resolve.body.params.revision, 2);
    answer(ctx, resolve.id, lost(resolve.id));
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /could not tell whether the companion carried this out.*the encounter keeps its own copy of every combatant \(Ulcen of Tyr, Fenka\): the refresh before a resolve leaves them out/);
    assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
    assert.equal(ctx.sb.workerWrites.length, 0);
    status(ctx, revision);
    const said = whispersTo(ctx.sb, 'gm').join('\n');
    if (stored) {
      assert.match(said, /The companion stored the step whose answer was lost \(it was at revision 2, now 3\): its write-back never reached the sheets, and no card was posted for it\. The encounter keeps its own copy of those held/);
      assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
      // Status shows the values to put on the sheets.
      assert.match(said, /Held, the encounter keeps its own copy[^]*Ulcen of Tyr: [^<]*32/);
      // The next resolve's refresh leaves them out: the stored step is not lost.
      ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
      assert.ok(requests(ctx.sb).every((r) => Array.isArray(r.body) || r.body.method !== 'encounter.refresh'));
    } else {
      assert.match(said, /The companion did not store the step whose answer was lost \(it is still at revision 2\): nobody is held for it; repeat it if it still fits\./);
      assert.deepEqual(held(ctx), []);
    }
    assert.equal(ctx.sb.state.Mindscape.encounter.uncertain, undefined);
  }
  // Resolved again without a status: the companion takes it at the revision the lost
  // one named, so that one was not stored, and the holds end with this step.
  const ctx = encounterWithTwo();
  const first = resolveNow(ctx);
  answer(ctx, first.id, lost(first.id));
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  const again = resolveNow(ctx);
  assert.equal(again.body.params.revision, 2);
  answer(ctx, again.id, stepAnswer(ctx, again, 3));
  assert.deepEqual(held(ctx), []);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The companion did not store the step whose answer was lost/.test(w)));
  assert.equal(ctx.sb.state.Mindscape.encounter.uncertain, undefined);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('a call the companion refused before running it (the bridge\'s -32002: HTTP 413 …) is reported as refused at once, not as one it may have done; a check so lost still asks the defender', () => {
  const refusedByHttp = (id, status, text) => ({
    jsonrpc: '2.0', id, error: { code: -32002, message: 'the bridge could not carry this out', data: { detail: `the companion refused the request before running it (HTTP ${status}: ${text})` } },
  });
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  const resolve = lastRequest(ctx.sb);
  answer(ctx, resolve.id, refusedByHttp(resolve.id, 413, 'the request body exceeds 1048576 bytes'));
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /Refused: the next step of Encounter<\/b><br>The companion refused the request before running it \(HTTP 413: the request body exceeds 1048576 bytes\)\./);
  assert.match(told, /bridge: -32002<\/span>/);
  assert.doesNotMatch(told, /could not tell whether|may have done/);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
  ctx.sb.advance(60000);
  assert.ok(!whispersTo(ctx.sb, 'gm').some((w) => /no answer from the companion/.test(w)));
  // A batch: every call refused, each joiner told.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, add.body.map((b) => refusedByHttp(b.id, 415, 'compressed request bodies are not accepted')));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ogre did not join: The companion refused the request before running it \(HTTP 415/);
  // The check of an attack the bridge could not get asks the defender all the same.
  const atk = campaign({ checkByHand: true });
  attack(atk);
  const check = lastRequest(atk.sb);
  answer(atk, check.id, refusedByHttp(check.id, 400, 'bad request'));
  assert.match(whispersTo(atk.sb, 'gm').find((w) => /bridge could not get/.test(w)) || '', /The defense is asked all the same/);
  assert.match(whispersTo(atk.sb, 'Bob').at(-1), /defend!/);
});

test('a create that times out, or that the bridge cannot vouch for, says what its late answer does, not to run status (there is no encounter yet)', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Duel' });
  const create = lastRequest(ctx.sb);
  ctx.sb.advance(30000);
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /no answer from the companion in 30 s/);
  assert.match(told, /should its answer still arrive \(within the hour\), that encounter becomes the current one here, unless you have created another meanwhile/);
  assert.match(told, /If no answer comes, run <code>!psi encounter create<\/code> again/);
  assert.doesNotMatch(told, /encounter status/);
  // Status would only say there is none; the late answer does what the advice says.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no current encounter/);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-late', revision: 0 } });
  assert.equal(ctx.sb.state.Mindscape.encounter.id, 'enc-late');
  // An uncertain answer is the last one: no late answer will make the encounter current.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter end' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const again = lastRequest(ctx.sb);
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, error: { code: -32001, message: 'the bridge does not know whether the companion did this', data: { detail: 'the connection was lost after sending' } } });
  const uncertain = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(uncertain, /Mindscape: new encounter<\/b><br>The bridge could not tell whether the companion carried this out: The connection was lost after sending\.<br>No other answer will come for it: run <code>!psi encounter create<\/code> again/);
  assert.doesNotMatch(uncertain, /encounter status/);
  // After a sandbox restart, a create in flight gets the same advice.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  ctx.sb.fire('ready');
  const restarted = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(restarted, /requests in flight.*A late answer to <code>encounter create<\/code> makes that encounter the current one here/);
  assert.doesNotMatch(restarted, /encounter status/);
});

test('an add the companion answers "already in the encounter" counts as joined', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  // What the companion answers for a combatant added before (companion: -32602 at /combatant/id).
  const dup = (b) => ({ jsonrpc: '2.0', id: b.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/combatant/id', message: `"${b.params.combatant.data.id}" is already in the encounter` }] } } });
  answer(ctx, add.id, [dup(add.body[0]), { jsonrpc: '2.0', id: add.body[1].id, result: { combatant_id: ctx.fenka.id, revision: 3 } }]);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), { [ctx.ulcen.id]: ctx.ulcen.id, [ctx.fenka.id]: ctx.fenka.id });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr was already in the encounter: joined\.<br>Fenka joined\./);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: '!psi encounter declare --defense thought-shield' });
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.declare');
});

test('a changing request that times out sends the GM to !psi encounter status, not to repeat it', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  ctx.sb.advance(30000);
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /no answer from the companion in 30 s/);
  assert.match(told, /may have done it all the same: run <code>!psi encounter status<\/code>/);
  assert.doesNotMatch(told, /repeat the command/);
  // A question that changes nothing may simply be asked again.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  ctx.sb.advance(30000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /then repeat the command/);
});

test('!psi encounter status asks the companion and takes its word for the revision and the combatants', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  // The add's answer comes too late: the companion has both, this script neither.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  ctx.sb.advance(30000);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), {});
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  assert.equal(get.body.method, 'encounter.get');
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'round', revision: 2, combatants: { [ctx.ulcen.id]: { id: ctx.ulcen.id }, [ctx.fenka.id]: { id: ctx.fenka.id } }, waiting_for: [ctx.ulcen.id] } });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), { [ctx.ulcen.id]: ctx.ulcen.id, [ctx.fenka.id]: ctx.fenka.id });
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 2);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Combatants: Ulcen of Tyr, Fenka<br>Still to choose: Ulcen of Tyr/);
});

test('config refuses campaign options for selected tokens and stores nothing (ROLL20.md: every option is checked first)', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi config --rollmode gm --timeout 120' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--rollmode, --timeout are campaign settings.*deselect the tokens.*Nothing was changed/);
  assert.equal(ctx.sb.state.Mindscape.config.rollMode, 'public');
  assert.equal(ctx.sb.state.Mindscape.config.timeout, 30);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  // A selected token with no character option only shows the settings.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi config' });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Roll mode: <b>public<\/b>/);
  // An option config does not know is refused rather than ignored.
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmod gm' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /unknown option --rollmod/);
  ctx.sb.chat({ playerid: GM, content: '!psi config --reset' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--reset forgets a character's settings/);
  // One bad option among good ones for several tokens: nothing stored.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id, ctx.tokens.fenka.id], content: '!psi config --system combat-strength --adapter nope' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--adapter must be one of/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi config --reset' });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), {});
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode gm --timeout 120' });
  assert.equal(ctx.sb.state.Mindscape.config.rollMode, 'gm');
  assert.equal(ctx.sb.state.Mindscape.config.timeout, 120);
});

test('inline rolls in options count as their totals (--mult [[1d4]], as TokenMod reads them)', () => {
  const ctx = campaign();
  ctx.sb.chat({
    playerid: GM,
    selected: [ctx.tokens.ulcen.id],
    content: `!psi attack --target ${ctx.tokens.ogre.id} --mode ego-whip --mult $[[0]] --range short --defense none`,
    inlinerolls: [{ expression: '1d4', results: { total: 3, type: 'V' } }],
  });
  assert.deepEqual(lastRequest(ctx.sb).body.params.attack, { mode: 'ego-whip', multiplier: 3, range: 'short' });
});

// ------------------------------------------------- unlinked tokens (three goblins)

// A Goblin character and three tokens of it whose bars are not linked to its sheet, as
// a GM drops copies of one NPC on the map; the second one is wounded (bar 1 = 3 / 7).
const goblins = (options = {}) => {
  const ctx = campaign(options);
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  [['PSP', '20', '20'], ['MThAC0', '19'], ['selfMAC', '10'], ['Intelligence', '10'], ['Wisdom', '9'],
    ['level-class1', '1'], ['HP', '7', '7'], ['psi_mind', '{"state":"closed"}']]
    .forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: goblin.id, name, current, max }));
  const token = (name, hp, props = {}) => ctx.sb.add('graphic', {
    _subtype: 'token', _pageid: '-Page', represents: goblin.id, name, controlledby: '',
    bar1_link: '', bar2_link: '', bar3_link: '', bar1_value: hp, bar1_max: '7', bar2_value: '', bar2_max: '', bar3_value: '', bar3_max: '', ...props,
  });
  const gob = [token('Goblin 1', '7'), token('Goblin 2', '3'), token('Goblin 3', '7')];
  return Object.assign(ctx, { goblin, gob });
};

const attribOf = (combatant, name) => combatant.data.attribs.find((a) => a.name.toLowerCase() === name.toLowerCase());

test('an unlinked token fights as itself: its id is the combatant id and its HP comes from its bar (ROLL20.md: unlinked tokens)', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.gob[1].id} --mode ego-whip --defense none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  const { attacker, defender } = req.body.params;
  assert.equal(attacker.data.id, ctx.gob[0].id);
  assert.equal(defender.data.id, ctx.gob[1].id);
  // The companion's id rule: 1-64 letters, digits, '-' or '_' (adapters/roll20.py).
  for (const c of [attacker, defender]) assert.match(c.data.id, /^[A-Za-z0-9_-]{1,64}$/);
  assert.equal(defender.data.name, 'Goblin 2');
  assert.deepEqual(plain(attribOf(defender, 'HP')), { name: 'HP', current: '3', max: '7' });
  assert.deepEqual(plain(attribOf(attacker, 'HP')), { name: 'HP', current: '7', max: '7' });
  // Everything else is the character's sheet (PSP has no bar by default).
  assert.equal(attribOf(defender, 'PSP').current, '20');
  assert.equal(attribOf(defender, 'MThAC0').current, '19');
  assert.match(req.body.params.attacker.adapter, /^roll20\./);
});

test('an unlinked token\'s write-back goes to its own bar and state, never to the copies sharing its character', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.gob[1].id} --mode ego-whip --defense none` });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, exchangeResult(ctx, req.id, [
    { character_id: ctx.gob[0].id, attributes: { PSP: { current: 8 } } },
    { character_id: ctx.gob[1].id, attributes: { HP: { current: 1 }, psi_mind: { current: '{"state":"open"}' } } },
  ]));
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.equal(ctx.gob[1].get('bar1_max'), '7');
  assert.equal(ctx.gob[2].get('bar1_value'), '7');
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), '7');
  // The mind state is Goblin 2's alone: kept for its token, not written to the sheet.
  assert.equal(valueOf(ctx, ctx.goblin.id, 'psi_mind'), '{"state":"closed"}');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id]), { psi_mind: { name: 'psi_mind', current: '{"state":"open"}', max: '' } });
  // PSP has no bar (--pspbar none, the default): it falls back to the character's sheet.
  assert.equal(valueOf(ctx, ctx.goblin.id, 'PSP'), 8);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=Ego Whip: Goblin 1 vs\. Goblin 2\}\}/);
  // The next exchange reads what Goblin 2 keeps and its bar; Goblin 3 still has its own.
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[2].id], content: `!psi odds --target ${ctx.gob[1].id} --mode ego-whip --defense none` });
  const { attacker, defender } = lastRequest(ctx.sb).body.params;
  assert.equal(attribOf(defender, 'HP').current, 1);
  assert.equal(attribOf(defender, 'psi_mind').current, '{"state":"open"}');
  assert.equal(attribOf(attacker, 'psi_mind').current, '{"state":"closed"}');
});

test('goblin may attack goblin; a token still cannot attack itself, nor two linked tokens of one character each other', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.gob[0].id} --mode ego-whip --defense none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /a mind cannot attack itself/);
  const second = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: ctx.ulcen.id, name: 'Ulcen (mirror)', bar1_link: ctx.tokens.ulcen.get('bar1_link') });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${second.id} --mode ego-whip --defense none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /a mind cannot attack itself/);
  assert.equal(requests(ctx.sb).length, 0);
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[2].id], content: `!psi attack --target ${ctx.gob[0].id} --mode ego-whip --defense none` });
  assert.equal(requests(ctx.sb).length, 1);
});

test('a linked token keeps writing its character\'s attributes, whatever the bar settings', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  // bar 1 (HP) is linked, bar 2 is not: one linked bar of those in use makes it the character.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.gob[0].id} --mode ego-whip --defense none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.params.attacker.data.id, ctx.ulcen.id);
  answer(ctx, req.id, exchangeResult(ctx, req.id, [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 31 } } }]));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 31);
  assert.equal(ctx.tokens.ulcen.get('bar2_value'), '');
});

test('--pspbar puts an unlinked token\'s PSP on that bar, read and written (the character\'s PSP untouched)', () => {
  const ctx = goblins();
  ctx.gob[0].set({ bar2_value: '12', bar2_max: '20' });
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  assert.equal(ctx.sb.state.Mindscape.config.pspBar, '2');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Unlinked tokens: HP on bar <b>1<\/b>, PSP on bar <b>2<\/b>/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.gob[1].id} --mode ego-whip --defense none` });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(plain(attribOf(req.body.params.attacker, 'PSP')), { name: 'PSP', current: '12', max: '20' });
  // An empty bar falls back to the sheet: Goblin 2's bar 2 holds nothing.
  assert.equal(attribOf(req.body.params.defender, 'PSP').current, '20');
  answer(ctx, req.id, exchangeResult(ctx, req.id, [{ character_id: ctx.gob[0].id, attributes: { PSP: { current: 4, max: 20 } } }]));
  assert.equal(ctx.gob[0].get('bar2_value'), 4);
  assert.equal(ctx.gob[0].get('bar2_max'), 20);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'PSP'), '20');
  assert.equal(ctx.sb.workerWrites.length, 0);
});

test('every refusal of a campaign setting ends "Nothing was changed." and changes nothing, also the settings given before the one refused', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --attr psp=MyPSP' });
  const before = plain(ctx.sb.state.Mindscape.config);
  for (const [content, said] of [
    ['!psi config --system power-pool --rollmode loud', /--rollmode must be one of public, gm, private\. Nothing was changed\.<\/div>$/],
    ['!psi config --rollmode gm --timeout 3', /--timeout must be 5 to 600 seconds\. Nothing was changed\.<\/div>$/],
    ['!psi config --adapter roll20.generic --timeout 60 --chunk 50', /--chunk must be 100 to 10000 characters\. Nothing was changed\.<\/div>$/],
    ['!psi config --attr psp=Other --chunk 500 --hpbar 4', /--hpbar must be one of 1, 2, 3, none\. Nothing was changed\.<\/div>$/],
    ['!psi config --hpbar none --pspbar 9', /--pspbar must be one of 1, 2, 3, none\. Nothing was changed\.<\/div>$/],
    ['!psi config --timeout 60 --hpbar 2 --pspbar 2', /HP and PSP cannot share one bar\. Nothing was changed\.<\/div>$/],
    ['!psi config --reset', /--reset forgets a character's settings: select its token or name it with --char\. Nothing was changed\.<\/div>$/],
  ]) {
    ctx.sb.chat({ playerid: GM, content });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), said, content);
    assert.deepEqual(plain(ctx.sb.state.Mindscape.config), before, content);
  }
  assert.equal(requests(ctx.sb).length, 0);
});

test('--hpbar and --pspbar are checked campaign settings', () => {
  const ctx = goblins();
  assert.equal(ctx.sb.state.Mindscape.config.hpBar, '1');
  assert.equal(ctx.sb.state.Mindscape.config.pspBar, 'none');
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar 4' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--hpbar must be one of 1, 2, 3, none/);
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 1' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /HP and PSP cannot share one bar/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: '!psi config --hpbar 3' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--hpbar is a campaign setting/);
  assert.equal(ctx.sb.state.Mindscape.config.hpBar, '1');
  assert.equal(ctx.sb.state.Mindscape.config.pspBar, 'none');
  // With HP on no bar, an unlinked token's HP is its character's again (read and written).
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar none' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.gob[1].id} --mode ego-whip --defense none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.params.defender.data.id, ctx.gob[1].id);
  assert.equal(attribOf(req.body.params.defender, 'HP').current, '7');
  answer(ctx, req.id, exchangeResult(ctx, req.id, [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 5 } } }]));
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 5);
  assert.equal(ctx.gob[1].get('bar1_value'), '3');
});

test('an option naming one of a fixed set of words (--system, --adapter, --rollmode, --hpbar, --pspbar) takes it in any case and stores the word as listed; free text keeps its case', () => {
  const ctx = campaign();
  const config = () => plain(ctx.sb.state.Mindscape.config);
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode GM --hpbar NONE --pspbar 2' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /settings/);
  assert.deepEqual([config().rollMode, config().hpBar, config().pspBar], ['gm', 'none', '2']);
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode Private --system Power-Pool --adapter ROLL20.Generic' });
  assert.deepEqual([config().rollMode, config().system, config().adapter], ['private', 'power-pool', 'roll20.generic']);
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.ulcen.id} --system COMBAT-STRENGTH --adapter Roll20.ADnD2e-Revised --attr psp=MyPSP` });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters[ctx.ulcen.id]),
    { system: 'combat-strength', adapter: 'roll20.adnd2e-revised', attributes: { psp: 'MyPSP' } });
  // A word of no case is still refused, naming the words.
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode Loud' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--rollmode must be one of public, gm, private\./);
  assert.equal(config().rollMode, 'private');
  ctx.sb.chat({ playerid: GM, content: '!psi house --system REVISED-2E' });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params), { system: 'revised-2e' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --system Combat-Strength --name Night Raid' });
  const create = lastRequest(ctx.sb).body;
  assert.equal(create.method, 'encounter.create');
  assert.deepEqual([create.params.system, create.params.name], ['combat-strength', 'Night Raid']);
});

test('an encounter command the script does not know is named as unknown, with the words it takes, whether or not an encounter is going on', () => {
  const ctx = campaign();
  const known = 'encounter wants one of create, add, declare, refresh, resolve, get, status, undo, end.';
  for (const playerid of [GM, BOB]) {
    ctx.sb.chat({ playerid, content: '!psi encounter Strat' });
    const whisper = (playerid === GM ? whispersTo(ctx.sb, 'gm') : whispersTo(ctx.sb, 'Bob')).at(-1);
    assert.match(whisper, new RegExp(`unknown encounter command "Strat"; ${known.replace(/\./g, '\\.')}`));
    assert.doesNotMatch(whisper, /no current encounter/);
  }
  ctx.sb.chat({ playerid: GM, content: '!psi encounter' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /refused.*encounter wants one of create, add/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /no current encounter|unknown encounter command/);
  // A known one still says that there is no encounter.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no current encounter/);
  assert.equal(requests(ctx.sb).length, 0);
  const enc = encounterWithTwo();
  enc.sb.chat({ playerid: GM, content: '!psi encounter strat' });
  assert.match(whispersTo(enc.sb, 'gm').at(-1), /unknown encounter command "strat"; encounter wants one of create, add/);
});

test('the controllers of an unlinked token (its own and its character\'s) get the defense buttons and private cards', () => {
  const ctx = goblins();
  ctx.gob[1].set({ controlledby: BOB });
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode private' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.gob[1].id} --mode ego-whip` });
  const toBob = whispersTo(ctx.sb, 'Bob');
  assert.match(toBob.at(-1), /attacks the mind of <b>Goblin 2<\/b>/);
  const xid = /--req ([A-Za-z0-9]+)/.exec(toBob.at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.params.defender.data.controlledby, BOB);
  answer(ctx, req.id, exchangeResult(ctx, req.id, [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 0 } } }]));
  assert.ok(whispersTo(ctx.sb, 'Bob').some((w) => /template:default/.test(w)));
  assert.equal(ctx.gob[1].get('bar1_value'), 0);
  // Bob controls Goblin 2's token only, not the other copies.
  ctx.sb.chat({ playerid: BOB, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.tokens.ulcen.id} --mode ego-whip` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /you do not control Goblin 1/);
});

test('two goblins of one character join an encounter as two combatants and can target each other', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id, ctx.gob[1].id, ctx.tokens.ulcen.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  const ids = add.body.map((b) => b.params.combatant.data.id);
  assert.deepEqual(ids, [ctx.gob[0].id, ctx.gob[1].id, ctx.ulcen.id]);
  answer(ctx, add.id, add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: b.params.combatant.data.id, revision: i + 1 } })));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Goblin 1 joined\.<br>Goblin 2 joined\.<br>Ulcen of Tyr joined\./);
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi encounter declare --attack ego-whip --target ${ctx.gob[1].id}` });
  const declare = lastRequest(ctx.sb);
  assert.equal(declare.body.params.combatant_id, ctx.gob[0].id);
  assert.equal(declare.body.params.choice.attack.target, ctx.gob[1].id);
  // A resync recognises a token's combatant id as that token.
  ctx.sb.state.Mindscape.encounter.combatants = {};
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 3, combatants: ids.map((id) => ({ id })), waiting_for: [ctx.gob[1].id] } });
  assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.encounter.combatants)).sort(), ids.slice().sort());
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Still to choose: Goblin 2/);
});

// --------------------------------------------------------- late answers

test('requests in flight survive a sandbox restart: the GM is told, and a late answer is applied', () => {
  const first = campaign();
  const req = attackAndDefend(first);
  // A restart: a new sandbox over the same campaign (same object ids) and the same state.
  const saved = plain(first.sb.state.Mindscape);
  const ctx = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  assert.equal(ctx.ulcen.id, first.ulcen.id);
  const told = whispersTo(ctx.sb, 'gm').find((w) => /requests in flight/.test(w));
  assert.match(told, new RegExp(`<b>${req.id}</b>: Ego Whip by Ulcen of Tyr against Fenka`));
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => new RegExp(`A late answer for request <b>${req.id}</b>.*was applied`).test(w)));
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
  // A player still cannot answer, late or not.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const odds = lastRequest(ctx.sb);
  ctx.sb.advance(30000);
  answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: { outcomes: { hit: 1 } } }, ALICE);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Alice is not a GM/);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [odds.id]);
});

test('the requests kept for late answers are bounded: the last 50, none older than an hour', () => {
  const ctx = campaign();
  const ask = () => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
    return lastRequest(ctx.sb).id;
  };
  const first = ask();
  const old = ctx.sb.state.Mindscape.pending[first];
  old.at -= 61 * 60 * 1000;
  const ids = Array.from({ length: 55 }, ask);
  const kept = plain(ctx.sb.context.Mindscape.pendingIds());
  assert.equal(kept.length, 50);
  assert.ok(!kept.includes(first));
  assert.deepEqual(kept.sort(), ids.slice(5).sort());
  answer(ctx, first, { jsonrpc: '2.0', id: first, result: { outcomes: { hit: 1 } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no request with that id is waiting/);
  // An hour-old request still in state when its answer comes is refused too.
  ctx.sb.state.Mindscape.pending[ids[54]].at -= 61 * 60 * 1000;
  answer(ctx, ids[54], { jsonrpc: '2.0', id: ids[54], result: { outcomes: { hit: 1 } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /more than an hour old/);
});

test('a late encounter.create does not replace the encounter the GM went on with', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name First' });
  const slow = lastRequest(ctx.sb);
  ctx.sb.advance(30000);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Second' });
  const second = lastRequest(ctx.sb);
  answer(ctx, second.id, { jsonrpc: '2.0', id: second.id, result: { id: 'enc-2', revision: 0 } });
  answer(ctx, slow.id, { jsonrpc: '2.0', id: slow.id, result: { id: 'enc-1', revision: 0 } });
  assert.equal(ctx.sb.state.Mindscape.encounter.id, 'enc-2');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /created encounter <b>enc-1<\/b> after all; <b>enc-2<\/b> stays the current one/);
});

test('checkInstall migrates a schema-4 state to schema 5: bars, pending requests and token values, the rest kept', () => {
  const before = (s) => {
    s.state.Mindscape = {
      version: 4, config: { system: 'revised-2e', rollMode: 'gm', timeout: 45, chunk: 800, adapter: ADAPTER, attributes: {} },
      characters: {}, exchanges: {}, encounter: null, answered: [{ id: 'OldRequest01', how: 'expired' }], pairing: PAIRED,
    };
  };
  const { sb } = campaign({ before });
  const stored = plain(sb.state.Mindscape);
  assert.equal(stored.version, 5);
  assert.equal(stored.config.hpBar, '1');
  assert.equal(stored.config.pspBar, 'none');
  assert.equal(stored.config.timeout, 45);
  assert.equal(stored.pairing, PAIRED);
  assert.deepEqual([stored.pending, stored.tokens], [{}, {}]);
  // Questions before a round's end are kept from schema 5 on, starting with none.
  assert.deepEqual(stored.questions, {});
  // An answer refused as timed out under schema 4 stays refused.
  sb.chat({ playerid: GM, content: `!psi-result OldRequest01 ${encode({ jsonrpc: '2.0', id: 'OldRequest01', result: {} })}` });
  assert.match(whispersTo(sb, 'gm').at(-1), /timed out/);
});

// ------------------------------------------------------------- !psi round

// The answer exchange.end_round gives (API.md; companion/methods/exchange.py).
const roundResult = (id, { events = [], rolls = [], summary = 'End of the round: nothing changes.', updates = [] } = {}) => ({
  jsonrpc: '2.0', id, result: { system: 'revised-2e', combatants: [], events, rolls, summary, unused_dice: {}, updates },
});

const setTurnOrder = (ctx, entries, page = '-Page') => ctx.sb.api.Campaign().set({ turnorder: JSON.stringify(entries), playerpageid: page });

const turn = (token) => ({ id: token.id, pr: '10', custom: '', _pageid: token.get('_pageid') });

const roundRefs = (req) => req.body.params.combatants.map((c) => (c.adapter === 'roll20.generic' ? c.data.character.id : c.data.id));

// The fighters a GM's `!psi round` of Ulcen and Fenka sends to the companion.
const roundOfUlcenAndFenka = (ctx) => {
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  return roundRefs(lastRequest(ctx.sb));
};

// Fenka with nothing psionic: no PSPs, and no defense rows either (rows naming modes
// would send her, for the companion to refuse a nonpsionic mind that knows modes).
const fenkaWithoutPsionics = (ctx) => {
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '0', max: '0' });
  ['repeating_psionic-defenses_-Md2_psionic-defense-name', 'repeating_psionic-defenses_-Md3_psionic-defense-name']
    .forEach((name) => ctx.sb.attribute(ctx.fenka.id, name).remove());
};

// Fenka with nothing psionic, so that only an attribute a test gives her decides whether
// a round's end sends her: `(name, current)` is what roundOfUlcenAndFenka sends with
// that one attribute added to her (and taken away after).
const withOneAttribute = (ctx) => {
  fenkaWithoutPsionics(ctx);
  return (name, current) => {
    const attr = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name, current, max: '' });
    const refs = roundOfUlcenAndFenka(ctx);
    attr.remove();
    return refs;
  };
};

test('!psi round is for GMs: a player is refused and nothing is sent', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /refused.*only a GM may end the psionic round/);
  assert.equal(requests(ctx.sb).length, 0);
});

test('!psi round sends exchange.end_round for the selected psionic characters as {adapter, data}, leaving out the ones with nothing psionic', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.end_round');
  assert.deepEqual(Object.keys(req.body.params).sort(), ['combatants', 'system']);
  assert.equal(req.body.params.system, 'revised-2e');
  assert.deepEqual(roundRefs(req), [ctx.ulcen.id, ctx.fenka.id]);
  const [ulcen] = req.body.params.combatants;
  assert.equal(ulcen.adapter, 'roll20.adnd2e-revised');
  assert.equal(ulcen.data.name, 'Ulcen of Tyr');
  // The same attributes an attack sends: psionics and psi_* state, not the gear.
  const names = ulcen.data.attribs.map((a) => a.name);
  assert.ok(names.includes('PSP') && names.includes('psi_mind') && !names.includes('weaponname1'));
  // The ogre has neither PSPs nor psi_* state: the GM who selected it is told why.
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Left out/.test(w)), /Left out: Ogre \(nothing psionic\)/);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Mindscape request/.test(w)), /end the round for Ulcen of Tyr, Fenka/);
});

test('a nonpsionic mind with psionic state (dazed by a psionic attack) takes part in the round\'s end', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.ogre.id, name: 'psi_conditions', current: 'dazed', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  // The ogre's token is unlinked: it ends the round as itself, reading its sheet.
  assert.deepEqual(roundRefs(req), [ctx.tokens.ogre.id]);
  assert.deepEqual(plain(req.body.params.combatants[0].data.attribs.find((a) => a.name === 'psi_conditions')), { name: 'psi_conditions', current: 'dazed', max: '' });
});

test('without a selection !psi round takes the Turn Tracker\'s tokens on the player page, once per character, skipping custom entries', () => {
  const ctx = campaign();
  const mirror = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: ctx.ulcen.id, name: 'Ulcen (mirror)', bar1_link: ctx.tokens.ulcen.get('bar1_link') });
  const elsewhere = ctx.sb.add('character', { name: 'Far Away', controlledby: '' });
  ctx.sb.add('attribute', { _characterid: elsewhere.id, name: 'PSP', current: '10', max: '10' });
  const farToken = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-OtherPage', represents: elsewhere.id, name: 'Far Away', bar1_link: 'x' });
  setTurnOrder(ctx, [
    turn(ctx.tokens.fenka),
    { id: '-1', pr: '5', custom: 'Lair action', _pageid: '-Page' },
    turn(ctx.tokens.ulcen),
    turn(farToken),
    turn(mirror),
    turn(ctx.tokens.ogre),
    { id: '-Mgone', pr: '1', custom: '', _pageid: '-Page' },
  ]);
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(req), [ctx.fenka.id, ctx.ulcen.id]);
  // The Turn Tracker's non-psionic monsters are left out without a word every round.
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Left out/.test(w)));
});

test('!psi round with nobody psionic to end the round for is refused', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no token in the Turn Tracker \(on its page\) represents a character with psionics/);
  setTurnOrder(ctx, [turn(ctx.tokens.ogre)]);
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no token in the Turn Tracker/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics/);
  assert.equal(requests(ctx.sb).length, 0);
});

test('characters of different systems are refused in one !psi round, naming who uses which', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.fenka.id} --system power-pool` });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /different systems \(revised-2e: Ulcen of Tyr; power-pool: Fenka\); select the tokens of one system/);
  assert.equal(requests(ctx.sb).length, 0);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  assert.equal(lastRequest(ctx.sb).body.params.system, 'power-pool');
});

test('--close (revised-2e) becomes the pay-to-close choice under the combatant id; other uses are refused', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: `!psi round --close ${ctx.tokens.fenka.id} --close ${ctx.ulcen.id}` });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(req.body.params.choices, { [ctx.fenka.id]: { close: true }, [ctx.ulcen.id]: { close: true } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi round --close ${ctx.tokens.fenka.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--close must name the token or character of one whose round ends here/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round --dice wisdom-check=3' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /unknown option --dice; round takes --close/);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi round --close ${ctx.tokens.ulcen.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--close is a revised-2e option/);
  assert.equal(requests(ctx.sb).length, 1);
});

// A mind a critical hit opened before this round, announced as one that still may pay to close now (RULES.md §1.5).
const MAY_CLOSE = JSON.stringify({ state: 'open', opened_by: 'critical', locked_rounds: 0, last_defense: 'mental-barrier', used_power: false, may_pay_to_close: true, rounds_open: 1 });

// The answer exchange.round_end_choices gives (API.md) for Fenka, whose mind may pay to close.
const closeOffer = (id, fenkaId, close, summary) => ({
  jsonrpc: '2.0', id, result: { system: 'revised-2e', combatants: [{ id: fenkaId, name: 'Fenka', choices: { close } }], summary },
});

// The buttons of the GM's last whisper, as [label, command].
const buttonsIn = (text) => Array.from(text.matchAll(/\[([^\]]+)\]\((![^)]+)\)/g)).map((m) => [m[1], m[2]]);

test('a mind that may pay to close is priced by the companion before the round ends; the GM\'s button ends it with that choice, once', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  // Only the mind that may pay is priced; nothing ends yet.
  assert.equal(asked.body.method, 'exchange.round_end_choices');
  assert.deepEqual(roundRefs(asked), [ctx.fenka.id]);
  answer(ctx, asked.id, closeOffer(asked.id, ctx.fenka.id,
    { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null },
    'Fenka may pay 10 PSPs (twice the mental barrier, the last defense it used) to close its mind.'));
  assert.equal(requests(ctx.sb).length, 1, 'the round waits for the GM');
  const question = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(question, /Fenka may pay 10 PSPs \(twice the mental barrier, the last defense it used\) to close its mind\./);
  const buttons = buttonsIn(question);
  assert.deepEqual(buttons.map(([label]) => label), ['Fenka pays 10 PSPs', 'Nobody pays']);
  const [, pays] = buttons[0];
  assert.match(pays, new RegExp(`^!psi round --answer [A-Za-z0-9]+ --close ${ctx.fenka.id}$`));
  // Pressed with nothing selected: the round ends for both, Fenka paying.
  ctx.sb.chat({ playerid: GM, content: pays });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(ended), [ctx.ulcen.id, ctx.fenka.id]);
  assert.deepEqual(ended.body.params.choices, { [ctx.fenka.id]: { close: true } });
  // A second press (or the other button) ends nothing more.
  ctx.sb.chat({ playerid: GM, content: buttons[1][1] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  assert.equal(requests(ctx.sb).length, 2);
});

test('a mind a critical hit opened this round is priced before the round ends; one locked open, or opened by its last PSPs, is not', () => {
  // Seed 004: it "can close its mind in the following round": paid at this round's end, it starts that round closed.
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: JSON.stringify({ state: 'open', opened_by: 'critical', locked_rounds: 0, last_defense: 'mental-barrier', used_power: false, may_pay_to_close: false, rounds_open: 0 }), max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_mind', current: JSON.stringify({ state: 'open', opened_by: 'critical', may_pay_to_close: false, rounds_open: 2, locked_rounds: 3 }), max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ogre.id, name: 'psi_mind', current: JSON.stringify({ state: 'open', opened_by: 'zero-psp', may_pay_to_close: false, rounds_open: 0 }), max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id, ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  assert.equal(asked.body.method, 'exchange.round_end_choices');
  assert.deepEqual(roundRefs(asked), [ctx.fenka.id]);
});

test('a mind opened by a critical hit a round ago is priced only on the word that it still may pay (may_pay_to_close true, not merely truthy); a psi_mind that is no JSON is not priced', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: JSON.stringify({ state: 'open', opened_by: 'critical', may_pay_to_close: 1, rounds_open: 1 }), max: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: '{state: open' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round');
});

test('without a selection !psi round takes the Turn Tracker\'s tokens of every page when neither its page nor the player page is set; a turn order that is no list is an empty one', () => {
  const ctx = campaign();
  ctx.sb.api.Campaign().set({ turnorder: JSON.stringify([turn(ctx.tokens.ulcen)]), playerpageid: '', initiativepage: false });
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.ulcen.id]);
  const sent = requests(ctx.sb).length;
  ctx.sb.api.Campaign().set({ turnorder: JSON.stringify({ id: ctx.tokens.ulcen.id }) });
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no token in the Turn Tracker \(on its page\) represents a character with psionics/);
  assert.equal(requests(ctx.sb).length, sent);
});

test('at most 64 fighters end a round or rest together: 65 selected are refused and nothing is sent', () => {
  const ctx = goblins();
  const many = Array.from({ length: 62 }, (_, i) => ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: ctx.goblin.id, name: `Goblin ${i + 4}`, bar1_link: '' }));
  const selected = ctx.gob.concat(many).map((t) => t.id);
  assert.equal(selected.length, 65);
  ctx.sb.chat({ playerid: GM, selected, content: '!psi round' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /at most 64 characters end a round together; select fewer tokens\./);
  ctx.sb.chat({ playerid: GM, selected, content: '!psi rest --hours 8' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /at most 64 characters rest together; select fewer tokens\./);
  assert.equal(requests(ctx.sb).length, 0);
  ctx.sb.chat({ playerid: GM, selected: selected.slice(1), content: '!psi round' });
  assert.equal(roundRefs(lastRequest(ctx.sb)).length, 64);
});

test('nobody pays: the button ends the round without choices; a player cannot press it', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  answer(ctx, asked.id, closeOffer(asked.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null }, 'Fenka may pay.'));
  const [, none] = buttonsIn(whispersTo(ctx.sb, 'gm').at(-1)).at(-1);
  assert.match(none, /--pay-none$/);
  ctx.sb.chat({ playerid: ALICE, content: none });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM may end the psionic round/);
  ctx.sb.chat({ playerid: GM, content: none });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.equal(ended.body.params.choices, undefined);
  // A hand-made answer for someone who was not offered closing is refused.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const again = lastRequest(ctx.sb);
  answer(ctx, again.id, closeOffer(again.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null }, 'Fenka may pay.'));
  const qid = buttonsIn(whispersTo(ctx.sb, 'gm').at(-1))[0][1].match(/--answer (\S+)/)[1];
  ctx.sb.chat({ playerid: GM, content: `!psi round --answer ${qid} --close ${ctx.ulcen.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr was not offered closing its mind this round/);
});

test('when the companion says no mind can pay, the round ends at once and the GM is told why', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  const why = 'Closing Fenka\'s mind would cost 10 PSPs (twice the mental barrier, the last defense it used), more than the 4 PSPs it holds.';
  answer(ctx, asked.id, closeOffer(asked.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 4, payable: false, reason: 'psp' }, why));
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.equal(ended.body.params.choices, undefined);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => w.includes('more than the 4 PSPs it holds. The round ends without anyone paying.')));
});

// Ask the question before a round's end for the selected tokens and answer that Fenka may
// pay 10 PSPs; returns the commands of the buttons by label.
const askedToClose = (ctx, selected = [ctx.tokens.ulcen.id, ctx.tokens.fenka.id]) => {
  ctx.sb.chat({ playerid: GM, selected, content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  assert.equal(asked.body.method, 'exchange.round_end_choices');
  answer(ctx, asked.id, closeOffer(asked.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null }, 'Fenka may pay.'));
  return Object.fromEntries(buttonsIn(whispersTo(ctx.sb, 'gm').at(-1)));
};

test('a round ends once: a newer question, --pay-none or --close answer the older question, whose buttons then end nothing', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const first = askedToClose(ctx);
  const second = askedToClose(ctx);
  assert.notEqual(first['Nobody pays'], second['Nobody pays']);
  ctx.sb.chat({ playerid: GM, content: first['Nobody pays'] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round --pay-none' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: second['Fenka pays 10 PSPs'] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  assert.equal(requests(ctx.sb).length, sent);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.questions), {});
});

test('a question is good for an hour, and at most 20 are kept', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx);
  const [qid] = Object.keys(ctx.sb.state.Mindscape.questions);
  ctx.sb.state.Mindscape.questions[qid].at -= 60 * 60 * 1000;
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: buttons['Nobody pays'] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /more than an hour old/);
  assert.equal(requests(ctx.sb).length, sent);
  // Questions for other fighters do not pile up without bound.
  const stored = ctx.sb.state.Mindscape.questions;
  for (let i = 0; i < 25; i += 1) stored[`Old${i}question`] = { fighters: [`-other${i}`], system: 'revised-2e', payers: [], at: Date.now() - 1000 + i };
  const newest = askedToClose(ctx);
  assert.equal(Object.keys(ctx.sb.state.Mindscape.questions).length, 20);
  // The oldest go: the question just asked is kept, and its button ends the round.
  assert.ok(!('Old0question' in ctx.sb.state.Mindscape.questions));
  ctx.sb.chat({ playerid: GM, content: newest['Nobody pays'] });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round');
});

test('a late answer to the question only reports: the round is not ended from it', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  ctx.sb.advance(30000);
  const timedOut = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(timedOut, /run <code>!psi round --pay-none<\/code>/);
  assert.match(timedOut, /older than this script does not relay the question: update it/);
  answer(ctx, asked.id, closeOffer(asked.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 4, payable: false, reason: 'psp' }, 'Fenka cannot pay.'));
  assert.equal(requests(ctx.sb).length, 1, 'no end of round from a late answer');
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes('came late')), /Fenka cannot pay\. This answer came late, so the round was not ended from it/);
});

test('pressed after a fighter joined the encounter, the button leaves it out; after a payer\'s sheet changed, the companion is asked again', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx);
  // Fenka raises another defense meanwhile: her sheet, and maybe her price, changed.
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '25' });
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes('changed since the question')), /The sheet of Fenka changed since the question, and so may the price: asking the companion again/);
  const again = lastRequest(ctx.sb);
  assert.equal(again.body.method, 'exchange.round_end_choices');
  // The button was used: pressed again before the new price comes, it ends nothing.
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  assert.equal(lastRequest(ctx.sb).id, again.id);
  answer(ctx, again.id, closeOffer(again.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 25, payable: true, reason: null }, 'Fenka may pay.'));
  const fresh = Object.fromEntries(buttonsIn(whispersTo(ctx.sb, 'gm').at(-1)));
  // Ulcen joins an encounter before the GM presses: the round ends for Fenka alone.
  ctx.sb.state.Mindscape.encounter = { id: 'enc-1', system: 'revised-2e', name: 'x', revision: 1, combatants: { [ctx.ulcen.id]: ctx.ulcen.id } };
  ctx.sb.chat({ playerid: GM, content: fresh['Fenka pays 10 PSPs'] });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(ended), [ctx.fenka.id]);
  assert.deepEqual(ended.body.params.choices, { [ctx.fenka.id]: { close: true } });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Ulcen of Tyr \(joined the encounter since/.test(w)));
});

const endRoundsSent = (ctx) => requests(ctx.sb).filter((r) => r.body.method === 'exchange.end_round');

test('a round ended while its question is on the way is not ended again by the answer, whatever it says', () => {
  for (const payable of [false, true]) {
    const ctx = campaign();
    ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
    const asked = lastRequest(ctx.sb);
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round --pay-none' });
    answer(ctx, asked.id, closeOffer(asked.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable, reason: payable ? null : 'psp' }, 'Fenka may pay.'));
    assert.equal(endRoundsSent(ctx).length, 1, `payable ${payable}`);
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The round was ended, or asked about again, before this answer came/);
    assert.equal(buttonsIn(whispersTo(ctx.sb, 'gm').at(-1)).length, 0);
  }
  // An older question's button pressed while a newer question is on the way ends the
  // round; the newer answer then only reports.
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const first = askedToClose(ctx, [ctx.tokens.fenka.id]);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  const second = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, content: first['Nobody pays'] });
  answer(ctx, second.id, closeOffer(second.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 4, payable: false, reason: 'psp' }, 'Fenka cannot pay.'));
  assert.equal(endRoundsSent(ctx).length, 1);
});

test('the answer leaves out fighters deleted or gone into the encounter meanwhile, and offers only the fighters it asked about', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ogre.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id, ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  assert.deepEqual(roundRefs(asked), [ctx.tokens.ogre.id, ctx.fenka.id]);
  ctx.tokens.ogre.remove();
  ctx.sb.state.Mindscape.encounter = { id: 'enc-1', system: 'revised-2e', name: 'x', revision: 1, combatants: { [ctx.ulcen.id]: ctx.ulcen.id } };
  const offer = { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null };
  // An offer for Ulcen, who was not asked about, is no button.
  answer(ctx, asked.id, { jsonrpc: '2.0', id: asked.id, result: { system: 'revised-2e', summary: 'S.', combatants: [
    { id: ctx.tokens.ogre.id, name: 'Ogre', choices: { close: offer } }, { id: ctx.fenka.id, name: 'Fenka', choices: { close: offer } }, { id: ctx.ulcen.id, name: 'Ulcen', choices: { close: offer } }] } });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Ulcen of Tyr \(joined the encounter since/.test(w)));
  const buttons = Object.fromEntries(buttonsIn(whispersTo(ctx.sb, 'gm').at(-1)));
  assert.deepEqual(Object.keys(buttons), ['Fenka pays 10 PSPs', 'Nobody pays']);
  ctx.sb.chat({ playerid: GM, content: buttons['Nobody pays'] });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.fenka.id]);
  // Nobody can pay: the round ends at once, for those still outside alone.
  const other = campaign();
  other.sb.add('attribute', { _characterid: other.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  other.sb.add('attribute', { _characterid: other.ogre.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  other.sb.chat({ playerid: GM, selected: [other.tokens.ogre.id, other.tokens.fenka.id], content: '!psi round' });
  const q = lastRequest(other.sb);
  other.tokens.ogre.remove();
  answer(other, q.id, closeOffer(q.id, other.fenka.id, { ...offer, psp: 4, payable: false, reason: 'psp' }, 'Fenka cannot pay.'));
  assert.deepEqual(roundRefs(lastRequest(other.sb)), [other.fenka.id]);
  assert.ok(other.sb.logs.every((line) => !/TypeError/.test(line)));
});

test('a button whose payer may no longer pay says so and ends the round without anyone paying; odd answer ids are refused', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx, [ctx.tokens.fenka.id]);
  ctx.sb.attribute(ctx.fenka.id, 'psi_mind').set({ current: JSON.stringify({ state: 'open', opened_by: 'critical', may_pay_to_close: false, rounds_open: 2, locked_rounds: 3 }) });
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The mind of Fenka may no longer pay to close: the round ends without anyone paying\./.test(w)));
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.equal(ended.body.params.choices, undefined);
  for (const qid of ['constructor', '__proto__', 'toString']) {
    ctx.sb.chat({ playerid: GM, content: `!psi round --answer ${qid} --pay-none` });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  }
});

test('a button whose payer may no longer pay, while another fighter still may, says only that and asks the companion again', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx, [ctx.tokens.fenka.id, ctx.tokens.ulcen.id]);
  ctx.sb.attribute(ctx.fenka.id, 'psi_mind').set({ current: JSON.stringify({ state: 'open', opened_by: 'critical', may_pay_to_close: false, rounds_open: 2, locked_rounds: 3 }) });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: MAY_CLOSE });
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The mind of Fenka may no longer pay to close\.<\/div>$/.test(w)));
  const again = lastRequest(ctx.sb);
  assert.equal(again.body.method, 'exchange.round_end_choices');
  assert.deepEqual(roundRefs(again), [ctx.ulcen.id]);
});

test('a question sent anew answers the one still on its way: the older answer only reports; its sheet warnings name the fighter it was asked about', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const first = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const offer = closeOffer(first.id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null }, 'Fenka may pay.');
  offer.result.warnings = ['/combatants/0: PSP read as 30'];
  answer(ctx, first.id, offer);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w)) || '', /Fenka: PSP read as 30/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The round was ended, or asked about again, before this answer came, so the round was not ended from it/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.questions), {});
});

test('a refused question before a round\'s end names the fighter it asked about where it sent it (/combatants/0 is Fenka, the only one asked), not the first selected', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(roundRefs(req), [ctx.fenka.id]);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/combatants/0/data/attribs/0/current', message: 'psp must be a whole number' }] } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<br>Fenka&#39;s sheet: psp must be a whole number\./);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen/);
});

test('only a payable offer (payable true) with a whole cost, for a mind that was asked, becomes a button: otherwise the round ends without anyone paying', () => {
  const cases = [
    ['a cost in words', { cost: '10', payable: true }, () => []],
    ['payable not true', { cost: 10, payable: 'yes' }, () => []],
    ['an offer for a fighter not asked', { cost: 10, payable: false, reason: 'too few PSPs' },
      (ctx) => [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: { close: { cost: 8, payable: true, reason: null } } }]],
  ];
  for (const [what, close, more] of cases) {
    const ctx = campaign();
    ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
    const asked = lastRequest(ctx.sb);
    const offer = closeOffer(asked.id, ctx.fenka.id, close, 'Fenka may pay.');
    offer.result.combatants.push(...more(ctx));
    answer(ctx, asked.id, offer);
    assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Fenka may pay\. The round ends without anyone paying\./.test(w)), what);
    assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round', what);
  }
});

test('a button whose round\'s end is too long to send ends nothing: the question still waits, and once the GM raises --chunk the same button ends the round', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 100' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_notes', current: 'y'.repeat(60000), max: '' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  assert.equal(requests(ctx.sb).length, sent);
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 1000' });
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.deepEqual(ended.body.params.choices, { [ctx.fenka.id]: { close: true } });
});

test('a button pressed after its payer joined the encounter ends the round for the others, without that payer\'s choice', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx);
  ctx.sb.state.Mindscape.encounter = { id: 'enc-1', system: 'revised-2e', name: 'x', revision: 1, combatants: { [ctx.fenka.id]: ctx.fenka.id } };
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(ended), [ctx.ulcen.id]);
  assert.equal(ended.body.params.choices, undefined);
});

test('a restart while a question is on the way says its late answer only reports', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  ctx.sb.context.Mindscape.checkInstall();
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /A question before a round's end only reports when answered late: run <code>!psi round<\/code> again/);
});

test('with a generic mapping that keeps the mind in an attribute of its own, the companion is asked whose mind may pay', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --adapter roll20.generic --attr psp=PSP --attr psp_max=PSP|max --attr mind=MindState' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  assert.equal(asked.body.method, 'exchange.round_end_choices');
  assert.equal(asked.body.params.combatants[0].adapter, 'roll20.generic');
});

test('--close or --pay-none decide at once, without asking; both together are refused', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round --pay-none' });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round');
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: `!psi round --close ${ctx.tokens.fenka.id}` });
  assert.deepEqual(lastRequest(ctx.sb).body.params.choices, { [ctx.fenka.id]: { close: true } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: `!psi round --close ${ctx.tokens.fenka.id} --pay-none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--close and --pay-none contradict each other/);
  assert.equal(requests(ctx.sb).length, 2);
});

test('the round\'s updates are written as an attack\'s are (a stun ends: psi_conditions and psi_condition_rounds), and the card follows the roll mode', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'stunned', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_condition_rounds', current: '{"stunned":0}', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, roundResult(req.id, {
    events: [{ type: 'condition-ended', combatant: ctx.ulcen.id, condition: 'stunned' }],
    summary: 'End of the round: Ulcen of Tyr is no longer stunned.',
    updates: [
      { character_id: ctx.ulcen.id, attributes: { psi_conditions: { current: '' }, psi_condition_rounds: { current: '{}' } } },
      // An attribute the sheet lacks is created, as for an attack's write-back.
      { character_id: ctx.fenka.id, attributes: { psi_condition_rounds: { current: '{"dazed":1}' } } },
    ],
  }));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_conditions'), '');
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_condition_rounds'), '{}');
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_condition_rounds'), '{"dazed":1}');
  assert.deepEqual(plain(ctx.sb.workerWrites).map((w) => w.name).sort(), ['psi_condition_rounds', 'psi_condition_rounds', 'psi_conditions']);
  const card = ctx.sb.chats.at(-1);
  assert.equal(card.speakingAs, 'Mindscape');
  assert.match(card.input, /^&\{template:default\} \{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr is no longer stunned\.\}\}$/);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);

  // With --rollmode gm, a round with dice goes to the GM only, each die naming its roller.
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode gm' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round' });
  const second = lastRequest(ctx.sb);
  const from = ctx.sb.chats.length;
  answer(ctx, second.id, roundResult(second.id, {
    events: [{ type: 'wisdom-check', combatant: ctx.ulcen.id, target: 10, roll: 7, success: true }, { type: 'mind-closed', combatant: ctx.ulcen.id, how: 'wisdom-check' }],
    rolls: [{ purpose: 'wisdom-check', sides: 20, value: 7, by: ctx.ulcen.id, follows: null }],
    summary: 'End of the round: Ulcen of Tyr closes its mind (Wisdom check 7 against 10).',
  }));
  const cards = ctx.sb.chats.slice(from).filter((c) => c.input.includes('&{template:default}'));
  assert.equal(cards.length, 1);
  assert.match(cards[0].input, /^\/w gm &\{template:default\} \{\{name=End of the round\}\}/);
  assert.match(cards[0].input, /\{\{Dice=wisdom-check d20: 7 \(Ulcen of Tyr\)\}\}/);
});

test('a round\'s end where nothing changes is only a short whisper to the GM (the countdown still written)', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'stunned', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_condition_rounds', current: '{"stunned":1}', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  const from = ctx.sb.chats.length;
  answer(ctx, req.id, roundResult(req.id, {
    updates: [{ character_id: ctx.ulcen.id, attributes: { psi_condition_rounds: { current: '{"stunned":0}' } } }],
  }));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_condition_rounds'), '{"stunned":0}');
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_conditions'), 'stunned');
  const said = ctx.sb.chats.slice(from);
  assert.equal(said.length, 1);
  assert.match(said[0].input, /^\/w gm .*End of the round: nothing changes\. \(Ulcen of Tyr, Fenka\)/);
  assert.doesNotMatch(said[0].input, /template/);
});

test('what the companion warns about a sheet is whispered to the GM with the fighter\'s name, once per session', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  const warnings = ['/combatants/1: no PSP maximum recorded; taken as the current PSPs, 30', '/combatants/0: Wisdom 26 is above the tables\' 25; used as 25'];
  const answerWarned = (id) => answer(ctx, id, { jsonrpc: '2.0', id, result: { ...roundResult(id).result, warnings } });
  answerWarned(req.id);
  const told = whispersTo(ctx.sb, 'gm').filter((w) => w.includes('sheet warnings'));
  assert.equal(told.length, 1);
  assert.match(told[0], /Fenka: no PSP maximum recorded; taken as the current PSPs, 30<br>Ulcen of Tyr: Wisdom 26 is above the tables&#39; 25; used as 25/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  answerWarned(lastRequest(ctx.sb).id);
  assert.equal(whispersTo(ctx.sb, 'gm').filter((w) => w.includes('sheet warnings')).length, 1, 'not again at the next round');
  // Odds read the same sheets: their warnings name the fighters too, never /attacker.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const odds = lastRequest(ctx.sb);
  answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: { outcomes: { hit: 1, miss: 0 }, warnings: ['/attacker: kind not recorded; a mind with PSPs is taken as a psionicist', '/defender: no con score; assumed 10'] } });
  const oddsTold = whispersTo(ctx.sb, 'gm').filter((w) => w.includes('sheet warnings')).at(-1);
  assert.match(oddsTold, /Ulcen of Tyr: kind not recorded; a mind with PSPs is taken as a psionicist<br>Fenka: no con score; assumed 10/);
});

test('a sheet warning at /combatants/10 names the eleventh fighter of a round\'s end, as /combatants/1 names the second', () => {
  const ctx = goblins();
  const band = ctx.gob.concat(Array.from({ length: 8 }, (_, i) => ctx.sb.add('graphic', {
    _subtype: 'token', _pageid: '-Page', represents: ctx.goblin.id, name: `Goblin ${i + 4}`, controlledby: '',
    bar1_link: '', bar2_link: '', bar3_link: '', bar1_value: '7', bar1_max: '7', bar2_value: '', bar2_max: '', bar3_value: '', bar3_max: '',
  })));
  ctx.sb.chat({ playerid: GM, selected: band.map((t) => t.id), content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.params.combatants.length, 11);
  const warnings = ['/combatants/10: no con score; assumed 10', '/combatants/1: Wisdom 26 is above the tables\' 25; used as 25'];
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { ...roundResult(req.id).result, warnings } });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes('sheet warnings')), /<br>Goblin 11: no con score; assumed 10<br>Goblin 2: Wisdom 26 /);
});

test('an exchange\'s sheet warning at /defender names the defender; one at a place the request did not send is whispered as the companion wrote it', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, { ...exchangeResult(ctx, req.id), result: { ...exchangeResult(ctx, req.id).result, warnings: ['/defender: no con score; assumed 10', '/puppets/3: no psi_die attribute'] } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => w.includes('sheet warnings'));
  assert.match(told, /assume this reading the sheets:<br>Fenka: no con score; assumed 10<br>\/puppets\/3: no psi_die attribute<\/div>/);
});

test('a refused round\'s end is reported to the GM as an attack\'s refusal is, and writes nothing', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi round --close ${ctx.tokens.ulcen.id}` });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: 4001, message: 'Rules violation', data: { rule: 'cannot-close', detail: 'Ulcen of Tyr cannot pay to close its mind this round' } } });
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: End of the round<\/b><br>Ulcen of Tyr cannot pay to close its mind this round\.<br>Nothing was changed: the round has not ended\.<br>.*companion: 4001 cannot-close</);
  assert.ok(ctx.sb.chats.every((c) => c.input.startsWith('/w ')), 'nothing is posted to the table');
});

test('a round\'s end that times out warns against ending the round twice', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round' });
  ctx.sb.advance(30000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no answer from the companion in 30 s.*wait for it rather than end the round again/);
});

test('a round\'s end that asks nothing first, repeated after its timeout and then answered late, is computed from the same sheets as the late one: two cards, the newer request\'s value where both wrote one and the older\'s where only it wrote (ROLL20.md Late answers)', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round' });
  const late = lastRequest(ctx.sb);
  ctx.sb.advance(30000);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round' });
  const repeat = lastRequest(ctx.sb);
  const from = ctx.sb.chats.length;
  const ended = (id, psp, updates) => roundResult(id, {
    events: [{ type: 'psp-regained', combatant: ctx.ulcen.id, amount: psp - 40 }],
    summary: `End of the round: Ulcen of Tyr has ${psp} PSPs.`,
    updates: [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: psp }, ...updates } }],
  });
  answer(ctx, repeat.id, ended(repeat.id, 41));
  answer(ctx, late.id, ended(late.id, 42, { psi_conditions: { current: '' } }));
  assert.equal(ctx.sb.chats.slice(from).filter((c) => c.input.includes('{{name=End of the round}}')).length, 2);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 41);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_conditions'), '');
});

test('an attack repeated after its timeout reads the sheets when the defense is chosen: a late answer that came before then has written them, and the repeat counts again (ROLL20.md Late answers)', () => {
  const ctx = campaign();
  const late = attackAndDefend(ctx);
  ctx.sb.advance(30000);
  attack(ctx);
  answer(ctx, late.id, exchangeResult(ctx, late.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  const repeat = lastRequest(ctx.sb);
  assert.equal(repeat.body.method, 'exchange.resolve');
  assert.equal(attribOf(repeat.body.params.attacker, 'PSP').current, 28);
  assert.equal(attribOf(repeat.body.params.defender, 'HP').current, 2);
});

test('a round\'s end that asks a question first, repeated after its timeout, reads the sheets when the GM answers: a late answer that came before then has written them, and the repeat counts again (ROLL20.md Late answers)', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const offer = (id) => closeOffer(id, ctx.fenka.id, { cost: 10, defense: 'mental-barrier', basis: 'last', psp: 30, payable: true, reason: null },
    'Fenka may pay 10 PSPs (twice the mental barrier, the last defense it used) to close its mind.');
  const ask = () => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
    const asked = lastRequest(ctx.sb);
    assert.equal(asked.body.method, 'exchange.round_end_choices');
    answer(ctx, asked.id, offer(asked.id));
    return buttonsIn(whispersTo(ctx.sb, 'gm').at(-1));
  };
  ctx.sb.chat({ playerid: GM, content: ask()[0][1] });
  const late = lastRequest(ctx.sb);
  assert.equal(late.body.method, 'exchange.end_round');
  ctx.sb.advance(30000);
  const nobody = ask().find(([label]) => label === 'Nobody pays')[1];
  answer(ctx, late.id, roundResult(late.id, {
    events: [{ type: 'mind-closed', combatant: ctx.fenka.id }],
    summary: 'End of the round: Fenka pays 10 PSPs and closes its mind.',
    updates: [{ character_id: ctx.fenka.id, attributes: { PSP: { current: 20 } } }],
  }));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'PSP'), 20);
  ctx.sb.chat({ playerid: GM, content: nobody });
  const repeat = lastRequest(ctx.sb);
  assert.equal(repeat.body.method, 'exchange.end_round');
  assert.equal(repeat.body.params.combatants.find((c) => c.data.id === ctx.fenka.id).data.attribs.find((a) => a.name === 'PSP').current, 20);
});

test('the fighters of the current encounter are left out of !psi round: the encounter ends their rounds itself', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Ulcen of Tyr \(in the encounter, which ends its own rounds\), Fenka \(in the encounter/.test(w)));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics outside the current encounter/);
  assert.ok(requests(ctx.sb).every((r) => r.body.method !== 'exchange.end_round'));
});

test('unlinked tokens in the Turn Tracker end the round each as itself; a token\'s update is kept for that token', () => {
  const ctx = goblins();
  ctx.sb.state.Mindscape.tokens[ctx.gob[1].id] = { psi_conditions: { name: 'psi_conditions', current: 'dazed', max: '' } };
  setTurnOrder(ctx, ctx.gob.map(turn));
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(roundRefs(req), ctx.gob.map((g) => g.id));
  assert.equal(attribOf(req.body.params.combatants[1], 'psi_conditions').current, 'dazed');
  answer(ctx, req.id, roundResult(req.id, {
    events: [{ type: 'condition-ended', combatant: ctx.gob[1].id, condition: 'dazed' }],
    summary: 'End of the round: Goblin 2 is no longer dazed.',
    updates: [{ character_id: ctx.gob[1].id, attributes: { psi_conditions: { current: '' } } }],
  }));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id].psi_conditions), { name: 'psi_conditions', current: '', max: '' });
  assert.equal(ctx.sb.attribute(ctx.goblin.id, 'psi_conditions'), null);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Summary=End of the round: Goblin 2 is no longer dazed\.\}\}/);
});

test('with the generic adapter a character counts as psionic by the psionic fields its mapping names, not by HP', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength --adapter roll20.generic --attr attack_strength=PSA --attr hp=HP' });
  // Nothing psionic but what the mapping names: no psi_* state (Ulcen's closed mind is cleared).
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: '' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  // HP (mapped, but every character has it) and a PSP score the mapping does not name count for nothing.
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics/);
  assert.equal(requests(ctx.sb).length, sent);
  // The mapped attack strength makes Ulcen psionic; Fenka, without it, stays out.
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'PSA', current: '60', max: '60' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.params.system, 'combat-strength');
  assert.equal(req.body.params.combatants[0].adapter, 'roll20.generic');
  assert.deepEqual(roundRefs(req), [ctx.ulcen.id]);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Fenka \(nothing psionic\)/.test(w)));
});

test('a round\'s end takes a fighter by a psi_* attribute with only a maximum, and PSPs spent to 0 of a maximum; not one whose psi_* attribute is blanks', () => {
  const ctx = campaign();
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').set({ current: '0' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ogre.id, name: 'psi_pool', current: '', max: '3' });
  fenkaWithoutPsionics(ctx);
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_conditions', current: '  ', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id, ctx.tokens.ogre.id], content: '!psi round' });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.ulcen.id, ctx.tokens.ogre.id]);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Fenka \(nothing psionic\)/.test(w)));
});

test('a round\'s end reads each attribute as the companion does: the first of its name in any case, a psi_* attribute\'s maximum only where it keeps a field (psi_pool, psi_psp ...)', () => {
  const ctx = campaign();
  const round = () => roundOfUlcenAndFenka(ctx);
  // Fenka has no psi_* state, no PSPs and no defense rows: only what is added below decides.
  fenkaWithoutPsionics(ctx);
  const added = [];
  const add = (name, current, max = '') => added.push(ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name, current, max }));
  const clear = () => added.splice(0).forEach((a) => a.remove());
  // A second attribute of a name (here in another case) is not read: the first is empty.
  for (const [first, second] of [['psi_conditions', 'PSI_Conditions'], ['psi_mind', 'psi_mind'], ['PSP', 'psp']]) {
    add(second === 'psp' ? 'PSP_max' : first, '');
    if (second === 'psp') add('psp_max', '40');
    else add(second, second === 'psi_mind' ? '{"state":"open","opened_by":"attack"}' : 'dazed');
    assert.deepEqual(round(), [ctx.ulcen.id], `${first}, then ${second}`);
    clear();
  }
  // Named first, it counts, in any case.
  add('PSI_Conditions', 'dazed');
  add('psi_conditions', '');
  assert.deepEqual(round(), [ctx.ulcen.id, ctx.fenka.id]);
  clear();
  // The maximum of a psi_* attribute that is no pair is never read; a pair's is.
  add('psi_conditions', '', 'dazed');
  assert.deepEqual(round(), [ctx.ulcen.id]);
  clear();
  for (const name of ['psi_psp', 'psi_pool', 'PSI_Attack_Strength']) {
    add(name, '', '3');
    assert.deepEqual(round(), [ctx.ulcen.id, ctx.fenka.id], name);
    clear();
  }
  // psi_psp_max and psi_hit_dice are not where the companion keeps psp_max and hit_dice.
  for (const name of ['psi_psp_max', 'psi_hit_dice']) {
    add(name, '40');
    assert.deepEqual(round(), [ctx.ulcen.id], name);
    clear();
  }
});

test('a round\'s end leaves out a fighter whose psi_* state is JSON null or the empty state the companion writes once it is over; a state the companion refuses sends it, for the refusal to name the attribute', () => {
  const ctx = campaign();
  const state = withOneAttribute(ctx);
  // No state: JSON null with JSON's spaces, an empty state where the engine takes it for
  // none (a daze whose rounds are out leaves psi_condition_rounds "{}").
  for (const [name, current] of [['psi_mind', 'null'], ['psi_mind', ' \tnull\r\n'], ['psi_mind', '{}'], ['psi_condition_rounds', '{ }'],
    ['psi_lost_powers', '[]'], ['psi_dedicated', '[ ]'], ['psi_controlling', '[]'], ['psi_quick_mac', 'null']]) {
    assert.deepEqual(state(name, current), [ctx.ulcen.id], `${name} ${JSON.stringify(current)}`);
  }
  // State, or what the companion refuses: an empty quick_mac (its schema needs both
  // members), a list where an object belongs, text that is no JSON, null after a space
  // JSON does not know.
  for (const [name, current] of [['psi_mind', '{"state":"open","opened_by":"attack"}'], ['psi_condition_rounds', '{"dazed":1}'],
    ['psi_quick_mac', '{}'], ['psi_mind', '[]'], ['psi_lost_powers', '{}'], ['psi_mind', 'nul'], ['psi_mind', '\u00a0null']]) {
    assert.deepEqual(state(name, current), [ctx.ulcen.id, ctx.fenka.id], `${name} ${JSON.stringify(current)}`);
  }
});

// The engine's default mind as the companion writes it (adapters/roll20.py encode of
// revised-2e's closed_mind) once a mind a psionic attack opened closes again.
const CLOSED_MIND_TEXT = '{"state":"closed","opened_by":null,"locked_rounds":0,"last_defense":null,"used_power":false,"may_pay_to_close":false,"rounds_open":0}';

test('a round\'s end leaves out a nonpsionic fighter whose psi_mind is the default closed mind, in any order and spacing, as the companion writes it once an opened mind closes; a closed mind that carries anything more sends it', () => {
  const ctx = campaign();
  const state = withOneAttribute(ctx);
  // The engine fills in every member a mind leaves out from its closed mind: those it
  // names with their values, in any order and spacing, are no state.
  for (const current of [CLOSED_MIND_TEXT,
    '{ "rounds_open" : 0, "may_pay_to_close" : false, "used_power" : false,\n "last_defense" : null, "locked_rounds" : 0, "opened_by" : null, "state" : "closed" }',
    '{"state":"closed"}', ' {"opened_by": null, "locked_rounds": 0.0}\t', '{"state":"open","state":"closed"}']) {
    assert.deepEqual(state('psi_mind', current), [ctx.ulcen.id], current);
  }
  // A closed mind still locked, counting rounds open, allowed to pay, remembering a
  // defense or a power used on it is state; a member the engine does not know, or a value
  // of another type, the companion refuses (a name every object inherits too).
  const closed = JSON.parse(CLOSED_MIND_TEXT);
  for (const more of [{ locked_rounds: 2 }, { rounds_open: 1 }, { may_pay_to_close: true }, { last_defense: 'mind-blank' },
    { used_power: true }, { opened_by: 'attack' }, { state: 'open' }, { used_power: 0 }, { locked_rounds: '0' }, { dazed: 0 },
    { constructor: null }, { toString: null }]) {
    const current = JSON.stringify({ ...closed, ...more });
    assert.deepEqual(state('psi_mind', current), [ctx.ulcen.id, ctx.fenka.id], current);
  }
});

test('a round\'s end sends a fighter whose psi_* state, no state in itself, is padded beyond the companion\'s 100000 characters: the companion refuses it, and the refusal names the attribute', () => {
  const ctx = campaign();
  const state = withOneAttribute(ctx);
  const pad = ' '.repeat(100000);
  for (const [name, current] of [['psi_mind', `{}${pad}`], ['psi_mind', `null${pad}`], ['psi_mind', `${pad}${CLOSED_MIND_TEXT}`],
    ['psi_condition_rounds', `{${pad}}`], ['psi_lost_powers', `[]${pad}`]]) {
    assert.deepEqual(state(name, current), [ctx.ulcen.id, ctx.fenka.id], `${name} of ${current.length}`);
  }
  // Exactly as long as the companion takes: still no state; only spaces: none.
  for (const [name, current] of [['psi_mind', `{}${pad.slice(2)}`], ['psi_mind', `${CLOSED_MIND_TEXT}${pad.slice(CLOSED_MIND_TEXT.length)}`],
    ['psi_mind', `${pad} `]]) {
    assert.deepEqual(state(name, current), [ctx.ulcen.id], `${name} of ${current.length}`);
  }
});

test('revised-2e: a fighter with no PSPs whose AD&D sheet rows name a psionic mode is sent at a round\'s end and a rest, so that the companion\'s refusal (a nonpsionic mind knows no psionic modes) names it; rows naming no mode, rows a psi_* list stands in for, and other systems leave it out', () => {
  const ctx = campaign();
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '0', max: '0' });
  // Fenka's defense rows (Mental Barrier, Mind Blank) with no PSPs: the companion's refusal,
  // as it answers this very request, names her to the GM.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(roundRefs(req), [ctx.ulcen.id, ctx.fenka.id]);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/combatants/1/defenses', message: 'a nonpsionic mind knows no psionic modes' }] } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka&#39;s defenses: a nonpsionic mind knows no psionic modes\.<br>Nothing was changed: the round has not ended/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.ulcen.id, ctx.fenka.id]);
  // An attack row alone counts too, in either tab, in any case of its name.
  const rows = ['repeating_psionic-defenses_-Md2_psionic-defense-name', 'repeating_psionic-defenses_-Md3_psionic-defense-name'];
  rows.forEach((name) => ctx.sb.attribute(ctx.fenka.id, name).remove());
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id]);
  for (const [name, text] of [['repeating_psionic-attacks_-Mb1_psionic-attack-name', 'Mind Thrust'], ['REPEATING_PSION-ATTACK5_-Mb2_PSIONATTACKING', 'psychic crush']]) {
    const row = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name, current: text, max: '' });
    assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id, ctx.fenka.id], name);
    row.remove();
  }
  // A row naming no revised-2e mode the adapter ignores (with a warning): she stays out.
  const fireball = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'repeating_psionic-attacks_-Mb3_psionic-attack-name', current: 'Fireball', max: '' });
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id]);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Fenka \(nothing psionic\)/.test(w)));
  fireball.remove();
  // psi_attacks of only spaces is a list naming no mode, which the adapter reads in the rows' place.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'repeating_psionic-attacks_-Mb4_psionic-attack-name', current: 'Ego Whip', max: '' });
  const listed = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_attacks', current: '  ', max: '' });
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id]);
  listed.remove();
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  // power-pool and combat-strength read no rows: the companion takes her as nonpsionic.
  for (const system of ['power-pool', 'combat-strength']) {
    ctx.sb.chat({ playerid: GM, content: `!psi config --system ${system}` });
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics/, system);
  }
});

test('a nonpsionic fighter whose mind a psionic attack opened takes part in round\'s ends until the companion writes it closed, and is left out after', () => {
  const ctx = campaign();
  fenkaWithoutPsionics(ctx);
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: '{"state":"open","opened_by":"attack","locked_rounds":0,"last_defense":null,"used_power":false,"may_pay_to_close":false,"rounds_open":1}', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(roundRefs(req), [ctx.ulcen.id, ctx.fenka.id]);
  answer(ctx, req.id, roundResult(req.id, {
    events: [{ type: 'mind-closed', combatant: ctx.fenka.id, how: 'round-end' }],
    summary: 'End of the round: Fenka\'s mind closes.',
    updates: [{ character_id: ctx.fenka.id, attributes: { psi_mind: { current: CLOSED_MIND_TEXT } } }],
  }));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_mind'), CLOSED_MIND_TEXT);
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id]);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Fenka \(nothing psionic\)/.test(w)));
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.ulcen.id]);
});

test('a round\'s end sends a fighter whose psi_* flag or choice holds only spaces, which the companion refuses (naming it); a list of only spaces names nothing and a number or JSON of only spaces is none: those stay out', () => {
  const ctx = campaign();
  const state = withOneAttribute(ctx);
  // Spaces as Python's str.strip() takes them (U+0085, U+001C included).
  for (const spaces of [' ', '\u3000', '\u0085\u001c']) {
    for (const name of ['psi_kind', 'psi_class_group', 'psi_psionic', 'psi_mindless', 'psi_die']) {
      assert.deepEqual(state(name, spaces), [ctx.ulcen.id, ctx.fenka.id], `${name} ${JSON.stringify(spaces)}`);
    }
    for (const name of ['psi_conditions', 'psi_attacks', 'psi_spell_levels', 'psi_psp', 'psi_mthac0', 'psi_mind', 'psi_controlled_by']) {
      assert.deepEqual(state(name, spaces), [ctx.ulcen.id], `${name} ${JSON.stringify(spaces)}`);
    }
  }
});

test('with the generic adapter a mapped psionic field is read from the first attribute of its name and the part the mapping names', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength --adapter roll20.generic --attr attack_strength=PSA|max --attr hp=HP' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: '' });
  const round = () => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
    return requests(ctx.sb).at(-1);
  };
  const sent = requests(ctx.sb).length;
  // Its current value is not what the mapping reads; a second PSA is not read.
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'PSA', current: '60', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psa', current: '60', max: '60' });
  round();
  assert.equal(requests(ctx.sb).length, sent);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics/);
  ctx.sb.attribute(ctx.ulcen.id, 'PSA').set({ max: '60' });
  assert.deepEqual(roundRefs(round()), [ctx.ulcen.id]);
});

test('a round\'s end reads the sheet\'s PSPs as the companion reads a number (to_int): PSPs in another script\'s digits count; a PSP box the companion refuses ("1e1", "0x10", "5.0", above 100000) sends its fighter all the same, for the companion\'s refusal to name the box', () => {
  const ctx = campaign();
  const round = () => roundOfUlcenAndFenka(ctx);
  // Fenka has no psi_* state and no defense rows: only its PSP box decides.
  fenkaWithoutPsionics(ctx);
  const psp = ctx.sb.attribute(ctx.fenka.id, 'PSP');
  for (const [current, max] of [['\uff13\uff10', ''], ['', '\u0663'], ['+\u{1d7fb}', '']]) {
    psp.set({ current, max });
    assert.deepEqual(round(), [ctx.ulcen.id, ctx.fenka.id], `${current}/${max}`);
  }
  // PSPs are 0 to 100000 (_INT0): 100000 counts; a box the companion refuses, above that
  // or not a whole number, is sent too, so that its refusal names the box.
  for (const [current, max] of [['\u0661\u0660\u0660\u0660\u0660\u0660', ''], ['1e1', ''], ['0x10', ''], ['5.0', ''], ['Infinity', ''],
    ['1234567890', ''], ['\u0661\u0660\u0660\u0660\u0660\u0661', ''], [100001, ''], ['', '200000'], ['-3', '']]) {
    psp.set({ current, max });
    assert.deepEqual(round(), [ctx.ulcen.id, ctx.fenka.id], `${current}/${max}`);
  }
  // Nothing, only spaces or 0 is no PSPs: Fenka stays out.
  for (const [current, max] of [['', ''], ['  ', ''], ['0', '\u0660']]) {
    psp.set({ current, max });
    assert.deepEqual(round(), [ctx.ulcen.id], `${current}/${max}`);
    assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Fenka \(nothing psionic\)/.test(w)));
  }
});

test('a round\'s end takes a character whose PSPs only a PSP_max attribute holds, and one given a system of its own by !psi config', () => {
  const ctx = campaign();
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').set({ current: '0', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'PSP_max', current: '40', max: '' });
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '0', max: '0' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --system revised-2e' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.ulcen.id, ctx.fenka.id]);
});

test('with the generic adapter a psionic field mapped to an attribute\'s maximum (psp_max=PSP|max) makes a character psionic', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr psp_max=PSP|max --attr hp=HP' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_mind').set({ current: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round' });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [ctx.ulcen.id]);
});

test('the help handout lists !psi round', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.match(handout.get('notes'), /<code>!psi round<\/code> \(GM\): ends the psionic round.*--close TOKEN/);
});

// ---------------------------------------------------------------- !psi rest

// combatants.rest answers as exchange.end_round does (API.md), with the dice a revised-2e
// open mind rolled during the rest; the summary and events below are the companion's for
// Ulcen at 5 of 40 PSPs resting 2 hours.
const restResult = (id, { system = 'revised-2e', events = [], rolls = [], summary = 'After the rest: nothing changes.', updates = [] } = {}) => ({
  jsonrpc: '2.0', id, result: { system, combatants: [], events, rolls, summary, unused_dice: {}, updates, warnings: [] },
});

const restRefs = (req) => req.body.params.combatants.map((c) => (c.adapter === 'roll20.generic' ? c.data.character.id : c.data.id));

test('!psi rest is for GMs, and without a selected token it is refused: a rest never falls back on the Turn Tracker', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 8' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /refused.*only a GM may let characters rest/);
  setTurnOrder(ctx, [turn(ctx.tokens.ulcen), turn(ctx.tokens.fenka)]);
  ctx.sb.chat({ playerid: GM, content: '!psi rest --hours 8' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /select the tokens of the characters who rest \(a rest is not a round of combat: the Turn Tracker is not used\)\. Nothing was sent\./);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi rest --hours 8' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics outside the current encounter/);
  assert.equal(requests(ctx.sb).length, 0);
});

test('!psi rest --hours 8 sends combatants.rest for the selected psionic characters, once each, as {adapter, data}', () => {
  const ctx = campaign();
  const mirror = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: ctx.ulcen.id, name: 'Ulcen (mirror)', bar1_link: ctx.tokens.ulcen.get('bar1_link') });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id, mirror.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'combatants.rest');
  assert.deepEqual(Object.keys(req.body.params).sort(), ['combatants', 'hours', 'system']);
  assert.equal(req.body.params.system, 'revised-2e');
  assert.equal(req.body.params.hours, 8);
  assert.deepEqual(restRefs(req), [ctx.ulcen.id, ctx.fenka.id]);
  assert.equal(req.body.params.combatants[0].adapter, 'roll20.adnd2e-revised');
  assert.deepEqual(plain(attribOf(req.body.params.combatants[0], 'PSP')), { name: 'PSP', current: '40', max: '40' });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Left out/.test(w)), /Left out: Ogre \(nothing psionic\)/);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Mindscape request/.test(w)), /rest 8 hours for Ulcen of Tyr, Fenka/);
});

test('revised-2e rests by the hour (RULES.md 1.8): a missing or bad --hours is refused before anything is sent', () => {
  const ctx = campaign();
  const rest = (options) => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi rest${options}` });
  rest('');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /revised-2e regains PSPs by the hour of sleep or meditation: give --hours N \(a whole number from 1 to 1000\)\. Nothing was sent\./);
  for (const bad of ['0', '1001', '2.5', '-3', 'eight']) {
    rest(` --hours ${bad}`);
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--hours must be a whole number of hours from 1 to 1000 \(got "[^"]*"\)\. Nothing was sent\./, `--hours ${bad}`);
  }
  // An option without its value, as any command refuses it.
  rest(' --hours ');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--hours needs a value\. Nothing was sent\./);
  rest(' --hours 8 --dice 3');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /unknown option --dice; rest takes --hours\. Nothing was sent\./);
  assert.equal(requests(ctx.sb).length, 0);
  // The bounds themselves are hours the companion takes; an inline roll counts as its total.
  rest(' --hours 1');
  assert.equal(lastRequest(ctx.sb).body.params.hours, 1);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours $[[0]]', inlinerolls: [{ results: { total: 1000 } }] });
  assert.equal(lastRequest(ctx.sb).body.params.hours, 1000);
});

test('power-pool is one long rest: --hours is refused, and the request carries none', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /power-pool has one long rest, not hours: leave out --hours\. Nothing was sent\./);
  assert.equal(requests(ctx.sb).length, 0);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(Object.keys(req.body.params).sort(), ['combatants', 'system']);
  assert.equal(req.body.params.system, 'power-pool');
  assert.deepEqual(restRefs(req), [ctx.ulcen.id, ctx.fenka.id]);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Mindscape request/.test(w)), /a long rest for Ulcen of Tyr, Fenka/);
});

// The real companion's answer (power-pool; recorded from it) when Ulcen, as psionicControl
// leaves him, loses the thrall he holds by an action (`reason`: rest or
// controller-cannot-act), the thrall sent as the request's only puppet: the thrall in
// `others`, both sheets written, and the adapter's warnings about the thrall's sheet.
const thrallFreed = (ctx, id, summary, reason) => ({ jsonrpc: '2.0', id, result: {
  system: 'power-pool', combatants: [{ id: ctx.ulcen.id, before: {}, after: {} }], others: [{ id: ctx.thrall.id, before: {}, after: {} }],
  rolls: [], unused_dice: {}, summary,
  events: [{ type: 'control-ended', combatant: ctx.thrall.id, controller: ctx.ulcen.id, reason }],
  updates: [
    { character_id: ctx.ulcen.id, attributes: { psi_controlling: { current: JSON.stringify([{ id: ctx.fenka.id, kept_by: 'die', wave: null }]) } } },
    { character_id: ctx.thrall.id, attributes: { psi_controlled_by: { current: '' } } },
  ],
  warnings: ['/puppets/0: no class level (level-class1..); taken as 1', '/puppets/0: not recorded as psionic; it defends with its Hit Dice only (H-PP-NO-POOL)'],
} });

// After thrallFreed's answer: the thrall's sheet is freed as Ulcen's is written, Fenka
// (held by a die) stays his, and the warnings about the thrall's sheet name it.
const assertThrallFreed = (ctx) => {
  assert.equal(valueOf(ctx, ctx.thrall.id, 'psi_controlled_by'), '');
  assert.deepEqual(JSON.parse(valueOf(ctx, ctx.ulcen.id, 'psi_controlling')).map((l) => l.id), [ctx.fenka.id]);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), ctx.ulcen.id);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w)), /Thrall: no class level/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)));
};

test('power-pool: with a generic mapping, a psi_controlling of only spaces or of the JSON null holds no control (parse_json_text): the mapped attribute counts, so a long rest takes the creatures it holds by an action along', () => {
  for (const empty of ['   ', ' null\n']) {
    const ctx = psionicControl(campaign());
    const held = ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current');
    ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.ulcen.id} --adapter roll20.generic --attr controlling=Held --attr hp=HP` });
    ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: empty });
    ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'Held', current: held, max: '' });
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
    const req = lastRequest(ctx.sb);
    assert.equal(req.body.method, 'combatants.rest', JSON.stringify(empty));
    assert.deepEqual((req.body.params.puppets || []).map((c) => c.data.id), [ctx.thrall.id], JSON.stringify(empty));
  }
});

test('power-pool: a long rest ends the control a resting controller keeps by an action (seed 001: "Powers can\'t be maintained when a creature rests"): the creatures it holds so go along as puppets, and their sheets are freed', () => {
  const ctx = psionicControl(campaign());
  const puppetRefs = (req) => (req.body.params.puppets || []).map((c) => c.data.id);
  // Fenka, held by a die, stays under control: only the thrall goes along. A creature
  // that is no character or token here cannot (the companion's summary says so).
  const links = JSON.parse(ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current'));
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify(links.concat([{ id: '-Mgone', kept_by: 'action' }])) });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'combatants.rest');
  assert.deepEqual(restRefs(req), [ctx.ulcen.id]);
  assert.deepEqual(puppetRefs(req), [ctx.thrall.id]);
  assert.equal(attribOf(req.body.params.puppets[0], 'psi_controlled_by').current, ctx.ulcen.id);
  // A thrall that rests too is a combatant, not a puppet: the companion frees it before its rest.
  const thrallToken = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: ctx.thrall.id, name: 'Thrall', bar1_link: ctx.sb.attribute(ctx.thrall.id, 'psi_pool').id });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, thrallToken.id], content: '!psi rest' });
  const both = lastRequest(ctx.sb);
  assert.deepEqual(restRefs(both), [ctx.ulcen.id, ctx.thrall.id]);
  assert.deepEqual(puppetRefs(both), []);
  // The answer frees the thrall's sheet as it writes Ulcen's; its warnings name it.
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify(links) });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
  const rested = lastRequest(ctx.sb);
  answer(ctx, rested.id, thrallFreed(ctx, rested.id, 'After the rest: Ulcen of Tyr rests and spends no action to keep its control of Thrall: the control ends.', 'rest'));
  assertThrallFreed(ctx);
  assert.equal(ctx.sb.chats.at(-1).input, '&{template:default} {{name=Long rest}} {{Summary=After the rest: Ulcen of Tyr rests and spends no action to keep its control of Thrall: the control ends.}}');
  // Outside power-pool a psi_controlling changes nothing: nobody goes along.
  ctx.sb.chat({ playerid: GM, content: '!psi config --system revised-2e' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 8' });
  assert.deepEqual(Object.keys(lastRequest(ctx.sb).body.params).sort(), ['combatants', 'hours', 'system']);
});

test('combat-strength has no rest rule: the script refuses it itself, with or without --hours', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  for (const options of ['', ' --hours 8']) {
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi rest${options}` });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /combat-strength has no rest: its rules say nothing of what a rest gives back.*Nothing was sent\./);
  }
  assert.equal(requests(ctx.sb).length, 0);
});

test('characters of different systems are refused in one !psi rest, naming who uses which', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.fenka.id} --system power-pool` });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /different systems \(revised-2e: Ulcen of Tyr; power-pool: Fenka\); select the tokens of one system and run !psi rest for each/);
  assert.equal(requests(ctx.sb).length, 0);
});

test('the fighters of the current encounter are left out of !psi rest: the encounter holds its own copy of them', () => {
  const ctx = encounterWithTwo();
  const before = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Ulcen of Tyr \(in the encounter, which keeps its own copy\), Fenka \(in the encounter, which keeps its own copy\)/.test(w)));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of the selected tokens represents a character with psionics outside the current encounter/);
  assert.equal(requests(ctx.sb).length, before);
});

test('the rest\'s updates are written (PSPs back, a stun run out) and its summary is a card in the campaign\'s roll mode', () => {
  const ctx = campaign();
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').set({ current: '5' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'stunned', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 2' });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, restResult(req.id, {
    events: [
      { type: 'psp-regained', combatant: ctx.ulcen.id, amount: 10, hours: 2 },
      { type: 'condition-ended', combatant: ctx.ulcen.id, condition: 'stunned' },
    ],
    summary: 'After the rest: Ulcen of Tyr regains 10 PSPs (15 of 40). Ulcen of Tyr is no longer stunned.',
    updates: [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 15 }, psi_conditions: { current: '' }, psi_condition_rounds: { current: '{}' } } }],
  }));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 15);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_conditions'), '');
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_condition_rounds'), '{}');
  assert.deepEqual(plain(ctx.sb.workerWrites).map((w) => w.name).sort(), ['PSP', 'psi_condition_rounds', 'psi_conditions']);
  const card = ctx.sb.chats.at(-1);
  assert.equal(card.speakingAs, 'Mindscape');
  assert.equal(card.input, '&{template:default} {{name=Rest: 2 hours}} {{Summary=After the rest: Ulcen of Tyr regains 10 PSPs (15 of 40). Ulcen of Tyr is no longer stunned.}}');
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);

  // private: the GM and the controllers of the characters who rested (Alice), not Bob.
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode private --system power-pool' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
  const second = lastRequest(ctx.sb);
  const from = ctx.sb.chats.length;
  answer(ctx, second.id, restResult(second.id, {
    system: 'power-pool',
    events: [{ type: 'pool-regained', combatant: ctx.ulcen.id, amount: 3 }],
    summary: 'After the rest: Ulcen of Tyr gets 3 pool dice back.',
    updates: [{ character_id: ctx.ulcen.id, attributes: { psi_pool: { current: 7 } } }],
  }));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_pool'), 7);
  const cards = ctx.sb.chats.slice(from).map((c) => c.input).filter((t) => t.includes('&{template:default}'));
  assert.deepEqual(cards.map((t) => t.split(' &{')[0]), ['/w gm', '/w "Alice"']);
  assert.match(cards[0], /\{\{name=Long rest\}\} \{\{Summary=After the rest: Ulcen of Tyr gets 3 pool dice back\.\}\}$/);
});

test('a rest in which an open mind goes through its rounds puts its dice on the card, each naming its roller', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode gm' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 1' });
  const req = lastRequest(ctx.sb);
  assert.ok(!('dice' in req.body.params) && !('seed' in req.body.params), 'the companion rolls the dice');
  const from = ctx.sb.chats.length;
  // The companion's answer for a mind opened at 0 PSPs (Wisdom 13): locked 2 rounds, then closed by a check.
  answer(ctx, req.id, restResult(req.id, {
    events: [
      { type: 'psp-regained', combatant: ctx.ulcen.id, amount: 5, hours: 1 },
      { type: 'mind-locked', combatant: ctx.ulcen.id, rounds: 2 },
      { type: 'wisdom-check', combatant: ctx.ulcen.id, target: 10, roll: 3, success: true },
      { type: 'mind-closed', combatant: ctx.ulcen.id, how: 'wisdom-check' },
    ],
    rolls: [
      { purpose: 'open-duration', sides: 4, value: 1, by: ctx.ulcen.id, follows: null },
      { purpose: 'wisdom-check', sides: 20, value: 3, by: ctx.ulcen.id, follows: null },
    ],
    summary: 'After the rest: Ulcen of Tyr regains 5 PSPs (5 of 40). Ulcen of Tyr\'s mind closes during the rest (Wisdom check 10, rolled 3, after 1 try).',
    updates: [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 5 }, psi_mind: { current: '{"state":"closed"}' } } }],
  }));
  const cards = ctx.sb.chats.slice(from).filter((c) => c.input.includes('&{template:default}'));
  assert.equal(cards.length, 1);
  assert.match(cards[0].input, /^\/w gm &\{template:default\} \{\{name=Rest: 1 hour\}\} \{\{Summary=After the rest: Ulcen of Tyr regains 5 PSPs/);
  assert.match(cards[0].input, /\{\{Dice=open-duration d4: 1 \(Ulcen of Tyr\), wisdom-check d20: 3 \(Ulcen of Tyr\)\}\}$/);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 5);
});

test('a rest where nothing changes is only a short whisper to the GM', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 8' });
  const req = lastRequest(ctx.sb);
  const from = ctx.sb.chats.length;
  answer(ctx, req.id, restResult(req.id));
  const said = ctx.sb.chats.slice(from);
  assert.equal(said.length, 1);
  assert.match(said[0].input, /^\/w gm .*Mindscape: rest.*After the rest: nothing changes\. \(Ulcen of Tyr, Fenka\)/);
  assert.doesNotMatch(said[0].input, /template/);
  assert.equal(ctx.sb.workerWrites.length, 0);
});

test('a refused rest is reported to the GM and writes nothing; one that times out warns against resting twice', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 8' });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/combatants/0/data/attribs/0/current', message: 'psp must be a whole number' }] } } });
  assert.equal(ctx.sb.workerWrites.length, 0);
  // The path the companion names is the fighter's sheet, in words; the GM's small print keeps it.
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Rest: 8 hours<\/b><br>Ulcen of Tyr&#39;s sheet: psp must be a whole number\.<br>.*companion: -32602 \/combatants\/0\/data\/attribs\/0\/current</);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 8' });
  ctx.sb.advance(30000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no answer from the companion in 30 s.*then repeat the command.*wait for it rather than run the rest again/);
});

test('an unlinked token rests as itself: its PSPs go to its own bar, not to the sheet its copies share', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  ctx.gob[1].set({ bar2_value: '4', bar2_max: '20' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[1].id], content: '!psi rest --hours 1' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(restRefs(req), [ctx.gob[1].id]);
  assert.equal(attribOf(req.body.params.combatants[0], 'PSP').current, '4');
  answer(ctx, req.id, restResult(req.id, {
    events: [{ type: 'psp-regained', combatant: ctx.gob[1].id, amount: 3, hours: 1 }],
    summary: 'After the rest: Goblin 2 regains 3 PSPs (7 of 20).',
    updates: [{ character_id: ctx.gob[1].id, attributes: { PSP: { current: 7 } } }],
  }));
  assert.equal(ctx.gob[1].get('bar2_value'), 7);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'PSP'), '20');
});

// ------------------------------------------------------ !psi encounter refresh

const refreshAnswer = (ctx, req, revision, changed = []) => answer(ctx, req.id, {
  jsonrpc: '2.0', id: req.id, result: { combatant_id: req.body.params.combatant_id, revision, changed, warnings: [] },
});

const refreshes = (sb) => requests(sb).filter((r) => !Array.isArray(r.body) && r.body.method === 'encounter.refresh');

test('!psi encounter refresh is for GMs; it needs a current encounter', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no current encounter/);
  const enc = encounterWithTwo();
  enc.sb.chat({ playerid: ALICE, content: '!psi encounter refresh' });
  assert.match(whispersTo(enc.sb, 'Alice').at(-1), /only a GM may refresh an encounter/);
  assert.equal(refreshes(enc.sb).length, 0);
});

test('!psi encounter refresh sends one encounter.refresh per combatant, one after the other, each with the revision the answer before gave', () => {
  const ctx = encounterWithTwo();
  // A sword blow on the sheet, outside the encounter.
  ctx.sb.attribute(ctx.ulcen.id, 'HP').set({ current: '9' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 1, 'the second waits for the first answer');
  const first = lastRequest(ctx.sb);
  assert.deepEqual(Object.keys(first.body.params).sort(), ['combatant', 'combatant_id', 'id', 'revision']);
  assert.deepEqual([first.body.params.id, first.body.params.combatant_id, first.body.params.revision], ['enc-1', ctx.ulcen.id, 2]);
  assert.equal(first.body.params.combatant.adapter, ADAPTER);
  assert.deepEqual(plain(attribOf(first.body.params.combatant, 'HP')), { name: 'HP', current: '9', max: '18' });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes(first.id)), /take Ulcen of Tyr again from the sheet \(1 of 2\)/);
  refreshAnswer(ctx, first, 3, ['hp']);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  const second = lastRequest(ctx.sb);
  assert.equal(second.body.method, 'encounter.refresh');
  assert.deepEqual([second.body.params.combatant_id, second.body.params.revision, second.body.params.combatant.data.id], [ctx.fenka.id, 3, ctx.fenka.id]);
  refreshAnswer(ctx, second, 3, []);
  assert.equal(refreshes(ctx.sb).length, 2);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Mindscape: encounter refresh.*Ulcen of Tyr: hp taken again from the sheet\.<br>Unchanged: Fenka\./);
  // Refreshing writes nothing: the sheet is the source here.
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
});

test('a choice the refreshed sheets no longer allow is dropped by the companion: the GM is told who must declare again', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const first = lastRequest(ctx.sb);
  answer(ctx, first.id, { jsonrpc: '2.0', id: first.id, result: { combatant_id: ctx.ulcen.id, revision: 3, changed: ['psp'], dropped_choices: [ctx.ulcen.id], warnings: [] } });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Must declare again \(the sheets no longer allow the choice they declared\): Ulcen of Tyr\./);
});

test('when every sheet matches, !psi encounter refresh says so and the revision stays', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 2);
  refreshAnswer(ctx, lastRequest(ctx.sb), 2);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 2);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Every sheet matches the encounter: Ulcen of Tyr, Fenka\./);
});

test('a stale revision (4009) stops the refresh, says who was not taken again, and resyncs as the other encounter commands do', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const first = lastRequest(ctx.sb);
  answer(ctx, first.id, { jsonrpc: '2.0', id: first.id, error: { code: 4009, message: 'Stale revision', data: { revision: 5 } } });
  const told = whispersTo(ctx.sb, 'gm');
  assert.ok(told.some((w) => /The refresh stopped at Ulcen of Tyr; not taken again: Fenka\. Run <code>!psi encounter refresh<\/code> again/.test(w)));
  assert.ok(told.some((w) => /Refresh of Ulcen of Tyr.*moved on \(now at revision 5\).*this answer changed nothing\. Resyncing/.test(w)));
  const get = lastRequest(ctx.sb);
  assert.equal(get.body.method, 'encounter.get');
  assert.equal(refreshes(ctx.sb).length, 1);
});

test('!psi encounter resolve takes every sheet again first and sends the resolve with the revision the last refresh gave', () => {
  const ctx = encounterWithTwo();
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '21' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force' });
  const first = lastRequest(ctx.sb);
  assert.deepEqual([first.body.method, first.body.params.combatant_id, first.body.params.revision], ['encounter.refresh', ctx.ulcen.id, 2]);
  refreshAnswer(ctx, first, 2);
  const second = lastRequest(ctx.sb);
  assert.deepEqual([second.body.method, second.body.params.combatant_id, second.body.params.revision], ['encounter.refresh', ctx.fenka.id, 2]);
  assert.equal(attribOf(second.body.params.combatant, 'PSP').current, '21');
  refreshAnswer(ctx, second, 3, ['psp']);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /before resolving/.test(w)), /Fenka: psp taken again from the sheet\.<br>Unchanged: Ulcen of Tyr\./);
  const resolve = lastRequest(ctx.sb);
  assert.equal(resolve.body.method, 'encounter.resolve');
  assert.deepEqual(resolve.body.params, { id: 'enc-1', revision: 3, force: true });
  // --no-refresh resolves at once.
  const quick = encounterWithTwo();
  quick.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  assert.deepEqual(lastRequest(quick.sb).body.params, { id: 'enc-1', revision: 2 });
  assert.equal(refreshes(quick.sb).length, 0);
});

test('a refresh that fails before a resolve sends no resolve: a refused sheet (4004) and an uncertain relay alike', () => {
  for (const error of [
    { code: 4004, message: 'Not found', data: { id: 'enc-1' } },
    { code: -32001, message: 'the bridge does not know whether the companion did this', data: { detail: 'timed out' } },
  ]) {
    const ctx = encounterWithTwo();
    ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
    refreshAnswer(ctx, lastRequest(ctx.sb), 2);
    const second = lastRequest(ctx.sb);
    answer(ctx, second.id, { jsonrpc: '2.0', id: second.id, error });
    assert.ok(requests(ctx.sb).every((r) => Array.isArray(r.body) || r.body.method !== 'encounter.resolve'), `no resolve after ${error.code}`);
    const told = whispersTo(ctx.sb, 'gm');
    assert.ok(told.some((w) => /Unchanged: Ulcen of Tyr\.<br>The refresh stopped at Fenka\. The step was not resolved: run <code>!psi encounter resolve<\/code> again/.test(w)), String(error.code));
    if (error.code === 4004) assert.match(told.at(-1), /Refused: Refresh of Fenka<\/b><br>The companion does not know this encounter \(it may have been deleted\).*companion: 4004 enc-1</);
    else assert.match(told.at(-1), /could not tell whether the companion carried this out.*!psi encounter status/);
  }
});

test('a refresh that times out stops the run; its late answer is taken (the revision) but nothing more is sent, and no resolve', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  const first = lastRequest(ctx.sb);
  ctx.sb.advance(30000);
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /no answer from the companion in 30 s.*run <code>!psi encounter status<\/code>/);
  assert.match(told, /The refresh stopped at Ulcen of Tyr; not taken again: Fenka\. The step was not resolved/);
  // While it was waiting, a second refresh or resolve would have raced it; after the timeout one may start again.
  refreshAnswer(ctx, first, 3, ['hp']);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr: hp taken again from the sheet\.<br>This answer came late, so nothing more was sent\. Not taken again: Fenka\. The step was not resolved\./);
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.ok(requests(ctx.sb).every((r) => Array.isArray(r.body) || r.body.method !== 'encounter.resolve'));
});

test('a second refresh or resolve is refused while a refresh runs', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  for (const command of ['!psi encounter refresh', '!psi encounter resolve', '!psi encounter resolve --no-refresh']) {
    ctx.sb.chat({ playerid: GM, content: command });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the sheets of the encounter are being taken again \(encounter\.refresh\) right now/, command);
  }
  assert.equal(requests(ctx.sb).filter((r) => !Array.isArray(r.body) && /^encounter\.re/.test(r.body.method)).length, 1);
});

test('an undo is refused while a refresh runs, since it would write the sheets the run reads; after the run it goes', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the sheets of the encounter are being taken again \(encounter\.refresh\) right now; wait for that to end, or for its timeout\./);
  const undos = () => requests(ctx.sb).filter((r) => !Array.isArray(r.body) && r.body.method === 'encounter.undo');
  assert.equal(undos().length, 0);
  refreshAnswer(ctx, lastRequest(ctx.sb), 2);
  refreshAnswer(ctx, lastRequest(ctx.sb), 2);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  assert.equal(undos().length, 1);
});

test('a combatant whose token is gone is not taken again (and said so); an unlinked token is refreshed from its own bars', () => {
  const ctx = goblins();
  encounterOf(ctx, [ctx.gob[0], ctx.gob[1]]);
  ctx.gob[0].remove();
  ctx.gob[1].set({ bar1_value: '1' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const only = lastRequest(ctx.sb);
  assert.equal(only.body.params.combatant_id, ctx.gob[1].id);
  assert.equal(attribOf(only.body.params.combatant, 'HP').current, '1');
  refreshAnswer(ctx, only, 3, ['hp']);
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`Goblin 2: hp taken again from the sheet\\.<br>Not taken again, their token or character is gone: ${ctx.gob[0].id}\\.`));
});

test('the help handout lists !psi rest and the encounter\'s refresh', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  const notes = handout.get('notes');
  assert.match(notes, /<code>!psi rest --hours N<\/code> \(GM\).*power-pool: one long rest, no <code>--hours<\/code>; a resting controller loses the control it keeps by an action, and a creature so set free that does not rest has its sheet freed too\. combat-strength has no rest\./);
  assert.match(notes, /<code>!psi encounter create\|add\|declare\|refresh\|resolve\|get\|status\|undo\|end<\/code>.*<code>resolve<\/code> does it first by itself \(<code>--no-refresh<\/code> skips it\)/);
});

// --------------------------------------- write-backs that miss the sheets (held)

// An encounter.resolve answer: the exchange of exchangeResult as the step's one result,
// its updates beside it (API.md), `extra` over them (updates_failed).
const stepAnswer = (ctx, req, revision, extra = {}) => {
  const { updates, ...step } = exchangeResult(ctx, req.id).result;
  return { jsonrpc: '2.0', id: req.id, result: { round: 1, results: [step], summary: 'Round 1.', rolls: step.rolls, revision, updates, ...extra } };
};

const UNMADE = { updates: [], updates_failed: { error_id: 'e-42' } };

const resolveNow = (ctx) => {
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh' });
  return lastRequest(ctx.sb);
};

// Fenka's HP cannot be written (as a sheet deleted or locked meanwhile would throw).
const lockFenkaHp = (ctx) => {
  ctx.sb.attribute(ctx.fenka.id, 'HP').setWithWorker = () => { throw new Error('sheet locked'); };
};

const held = (ctx) => plain(ctx.sb.state.Mindscape.encounter.held);

test('a step the companion stored but could not write back (updates_failed) is told to the GM, and every combatant is held', () => {
  const ctx = encounterWithTwo();
  const resolve = resolveNow(ctx);
  // The answer is checked whole first: a malformed updates_failed is refused.
  answer(ctx, resolve.id, stepAnswer(ctx, resolve, 3, { updates: [], updates_failed: 'e-42' }));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused.*updates_failed is not an object/);
  answer(ctx, resolve.id, stepAnswer(ctx, resolve, 3, UNMADE));
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w));
  assert.match(told, /The step is stored in the companion, but the companion could not write it to the sheets \(error id <b>e-42<\/b>; the companion's log has the cause\)\. The sheets still show the state before it\./);
  assert.match(told, /The encounter keeps its own copy of every combatant \(Ulcen of Tyr, Fenka\) until you have brought the sheets in line by hand \(from the card, or <code>!psi encounter status<\/code>\) and run <code>!psi encounter refresh<\/code>/);
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  // The step is done all the same: its card, its revision, and nothing written.
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(ctx.sb.chats.at(-1).input, /^&\{template:default\} \{\{name=Encounter: round 1\}\}/);
});

test('an undo the companion stored but could not write back says the sheets still hold the undone step, and holds every combatant', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 3, undone: 2, updates: [], updates_failed: { error_id: 'e-43' } } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w));
  assert.match(told, /The undo is stored in the companion, but the companion could not write it to the sheets \(error id <b>e-43<\/b>.*The sheets still show the state before it, with the undone step's changes\./);
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
});

test('a write that fails for one fighter of a step is reported and holds that fighter; the other fighters are still written', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const resolve = resolveNow(ctx);
  answer(ctx, resolve.id, stepAnswer(ctx, resolve, 3));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), '11');
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w));
  assert.match(told, /These sheets missed the changes of this answer \(Encounter\); the other changes were written:<br><b>Fenka<\/b> \(writing failed; the API console has the details\): HP 2; psionic-mind-state open<br>The encounter keeps its own copy of Fenka until the write lands or you have brought the sheet in line by hand and run <code>!psi encounter refresh<\/code>\. Before the next resolve, the write it missed is tried again/);
  assert.doesNotMatch(told, /nobody is held/);
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  assert.ok(ctx.sb.logs.some((line) => /writing the update of .* failed: Error: sheet locked/.test(line)));
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(ctx.sb.chats.at(-1).input, /template:default/);
});

test('a fighter deleted before its answer is applied misses its write-back; the answer is applied for the others, and nobody is held outside an encounter', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  ctx.tokens.fenka.remove();
  ctx.fenka.remove();
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w));
  assert.match(told, new RegExp(`<b>${ctx.fenka.id}</b> \\(its character or token is gone\\): HP 2; psionic-mind-state open<br>Put these values on the sheet by hand`));
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused/.test(w)));
  assert.match(ctx.sb.chats.at(-1).input, /template:default/);
});

test('the refresh before a resolve keeps the encounter\'s copy of a held combatant and says so', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const first = resolveNow(ctx);
  answer(ctx, first.id, stepAnswer(ctx, first, 3));
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  const only = lastRequest(ctx.sb);
  assert.deepEqual([only.body.method, only.body.params.combatant_id], ['encounter.refresh', ctx.ulcen.id]);
  refreshAnswer(ctx, only, 3);
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /before resolving/.test(w)), /Unchanged: Ulcen of Tyr\.<br>Kept the encounter's copy of Fenka \(its sheet missed a write-back\)\./);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').find((w) => /before resolving/.test(w)), /Still held/);
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.resolve');
  // Everyone held (updates_failed): the resolve goes at once, saying so.
  const all = encounterWithTwo();
  const step = resolveNow(all);
  answer(all, step.id, stepAnswer(all, step, 3, UNMADE));
  all.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(refreshes(all.sb).length, 0);
  assert.match(whispersTo(all.sb, 'gm').find((w) => /before resolving/.test(w)), /Kept the encounter's copy of Ulcen of Tyr, Fenka \(their sheets missed a write-back\)\./);
  assert.deepEqual(lastRequest(all.sb).body.params, { id: 'enc-1', revision: 3 });
});

test('!psi encounter refresh takes held combatants too and lets go of each it took; status lists who is still held', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const first = lastRequest(ctx.sb);
  assert.equal(first.body.params.combatant_id, ctx.ulcen.id);
  refreshAnswer(ctx, first, 4, ['psp']);
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  const second = lastRequest(ctx.sb);
  assert.equal(second.body.params.combatant_id, ctx.fenka.id);
  answer(ctx, second.id, { jsonrpc: '2.0', id: second.id, error: { code: 4004, message: 'Not found', data: { id: 'enc-1' } } });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /No longer held \(the encounter has taken the sheet\): Ulcen of Tyr\./.test(w)));
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  // The view gives the encounter's copy: the values to put on the held sheet.
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 4, waiting_for: [], combatants: {
    [ctx.ulcen.id]: {}, [ctx.fenka.id]: { psp: 19, psp_max: 30, hp: 11, conditions: ['stunned'], condition_rounds: { stunned: 1 }, mind: { state: 'open' } } } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<br>Held, the encounter keeps its own copy \(their sheets missed a write-back; put these values on them, then <code>!psi encounter refresh<\/code>\):<br>Fenka: PSP 19, max 30; HP 11; conditions stunned \(1 more\); mind open<\/div>$/);
  // The copy tells Fenka's PSPs and hit points: her controller (Bob) reads it, Alice not.
  for (const [playerid, whose, reads] of [[ALICE, 'Alice', false], [BOB, 'Bob', true]]) {
    ctx.sb.chat({ playerid, content: '!psi encounter status' });
    const asked = lastRequest(ctx.sb);
    answer(ctx, asked.id, { jsonrpc: '2.0', id: asked.id, result: { id: 'enc-1', phase: 'declare', revision: 4, waiting_for: [], combatants: {
      [ctx.ulcen.id]: {}, [ctx.fenka.id]: { psp: 19, psp_max: 30, hp: 11 } } } });
    const told = whispersTo(ctx.sb, whose).at(-1);
    assert.equal(/Held, the encounter keeps its own copy[^]*Fenka: PSP 19, max 30; HP 11/.test(told), reads, whose);
    assert.match(told, /Combatants: Ulcen of Tyr, Fenka/);
  }
  // Taken again successfully, Fenka is let go of too, and status lists nobody.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.deepEqual(held(ctx), []);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const again = lastRequest(ctx.sb);
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, result: { id: 'enc-1', phase: 'declare', revision: 4, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [] } });
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /Held/);
});

test('while a step or undo waits for its answer, a refresh keeps the encounter\'s copies: the answer would write the sheets after they were read', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 0, 'no sheet is taken while the undo is on its way');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /A step or undo of this encounter is still waiting for its answer.*kept its own copy of Ulcen of Tyr, Fenka/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /Still held/);
  // The same before a resolve: the step goes on with the encounter's copies.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force' });
  assert.equal(refreshes(ctx.sb).length, 0);
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.resolve');
  // The undo is answered (unwritten): both are held; a refresh the GM starts now takes
  // both and lets go.
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 3, undone: 2, updates: [], updates_failed: { error_id: 'e-44' } } });
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  const resolve = lastRequest(ctx.sb);
  answer(ctx, resolve.id, { jsonrpc: '2.0', id: resolve.id, error: { code: 4009, message: 'Stale revision', data: { revision: 3 } } });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'round', revision: 3, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [] } });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.deepEqual(held(ctx), []);
});

test('a held fighter whose character is deleted is let go of at the next refresh', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  ctx.tokens.fenka.remove();
  ctx.fenka.remove();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force' });
  assert.deepEqual(held(ctx), [ctx.ulcen.id], 'Fenka is gone: no longer held');
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Kept the encounter's copy of Ulcen of Tyr/.test(w)));
});

test('a new encounter starts with nobody held, and ending an encounter forgets its holds', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-2', revision: 0 } });
  assert.deepEqual(held(ctx), []);
  const other = encounterWithTwo();
  const unmade = resolveNow(other);
  answer(other, unmade.id, stepAnswer(other, unmade, 3, UNMADE));
  other.sb.chat({ playerid: GM, content: '!psi encounter end' });
  assert.equal(other.sb.state.Mindscape.encounter, null);
  other.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const again = lastRequest(other.sb);
  answer(other, again.id, { jsonrpc: '2.0', id: again.id, result: { id: 'enc-3', revision: 0 } });
  assert.deepEqual(held(other), []);
});

// Fenka's HP writes again (the lock of lockFenkaHp lifted).
const unlockFenkaHp = (ctx) => { delete ctx.sb.attribute(ctx.fenka.id, 'HP').setWithWorker; };

const writes = (ctx) => plain(ctx.sb.state.Mindscape.encounter.writes || {});

// An encounter of Ulcen and Fenka whose first step (revision 3) missed Fenka's sheet:
// her HP is locked (lockFenkaHp), so she is held with that write waiting.
const fenkaMissedAStep = () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3));
  return ctx;
};

// A step's answer that changes nothing: no exchange, no update.
const emptyStep = (ctx, req, revision) => answer(ctx, req.id, {
  jsonrpc: '2.0', id: req.id, result: { round: 2, results: [], summary: 'Round 2.', rolls: [], revision, updates: [] },
});

test('the refresh before a resolve writes a held fighter\'s missed write again while its sheet shows what it showed, then takes the sheet and lets go', () => {
  const ctx = fenkaMissedAStep();
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  // The write waits with what the sheet showed when it failed, and the requests sent
  // before its step that were still waiting (none here).
  assert.deepEqual(writes(ctx), { [ctx.fenka.id]: {
    attributes: { HP: { current: 2 }, 'psionic-mind-state': { current: 'open' } },
    expect: { HP: { current: '11' }, 'psionic-mind-state': { current: '' } },
    older: { HP: { current: [] }, 'psionic-mind-state': { current: [] } },
  } });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /Before the next resolve, the write it missed is tried again \(the hold ends when it lands\) as long as the sheet still shows what it showed when writing failed: Fenka\./);
  // Still locked: the retry fails, Fenka keeps the encounter's copy and stays held.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /before resolving/.test(w)), /Kept the encounter's copy of Fenka \(its sheet missed a write-back\)\.<br>Writing what Fenka missed failed again \(the API console has the details\)\./);
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  const second = lastRequest(ctx.sb);
  assert.equal(second.body.method, 'encounter.resolve');
  emptyStep(ctx, second, 4);
  // Unlocked: the next resolve writes it, then takes Fenka's sheet like Ulcen's.
  unlockFenkaHp(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psionic-mind-state'), 'open');
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
  const fenka = lastRequest(ctx.sb);
  assert.deepEqual([fenka.body.method, fenka.body.params.combatant_id], ['encounter.refresh', ctx.fenka.id]);
  assert.equal(attribOf(fenka.body.params.combatant, 'HP').current, 2);
  refreshAnswer(ctx, fenka, 4);
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /before resolving/.test(w)).at(-1),
    /Wrote again what Fenka missed \(the sheet still showed what it showed when writing failed\): no longer held\./);
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.resolve');
});

test('a held fighter\'s missed write is not written over a sheet the GM changed since: it stays held and the GM is told', () => {
  const ctx = fenkaMissedAStep();
  unlockFenkaHp(ctx);
  ctx.sb.attribute(ctx.fenka.id, 'HP').set({ current: '5' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), '5');
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psionic-mind-state'), undefined);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /before resolving/.test(w)), /Not written again, the sheet has changed since writing failed: Fenka\. Bring it in line \(<code>!psi encounter status<\/code> gives the encounter's copy\) and run <code>!psi encounter refresh<\/code>\./);
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  const resolve = lastRequest(ctx.sb);
  emptyStep(ctx, resolve, 4);
  // Status says so too, rather than promising a write.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 4, waiting_for: [], combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<br>Not written again, the sheet has changed since writing failed: Fenka\.<\/div>$/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /tried again/);
  // The GM's own refresh takes the sheet as it is, writes nothing and forgets the write.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), '5');
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
});

test('a later step that writes what a held fighter missed ends its hold; one that writes part of it leaves the rest waiting', () => {
  const ctx = fenkaMissedAStep();
  unlockFenkaHp(ctx);
  // An undo writes Fenka's mind back only: HP still waits.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 4, undone: 3, updates: [
    { character_id: ctx.fenka.id, attributes: { 'psionic-mind-state': { current: 'closed' } } }] } });
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  assert.deepEqual(writes(ctx)[ctx.fenka.id], { attributes: { HP: { current: 2 } }, expect: { HP: { current: '11' } }, older: { HP: { current: [] } } });
  // The next step writes HP too: nothing waits any more, and Fenka is let go of.
  const next = resolveNow(ctx);
  answer(ctx, next.id, stepAnswer(ctx, next, 5));
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
});

test('a fighter held because the companion could not write the step has no write to try again, even when a later write fails too', () => {
  const ctx = fenkaMissedAStep();
  assert.ok(writes(ctx)[ctx.fenka.id]);
  // The companion's failure: every combatant held, nothing to try again.
  const second = resolveNow(ctx);
  answer(ctx, second.id, stepAnswer(ctx, second, 4, UNMADE));
  assert.deepEqual(writes(ctx), {});
  // A write that fails now (HP still locked) is not kept to try again either, and the
  // GM is not promised one.
  const told = whispersTo(ctx.sb, 'gm').length;
  const third = resolveNow(ctx);
  answer(ctx, third.id, stepAnswer(ctx, third, 5));
  assert.deepEqual(writes(ctx), {});
  const missed = whispersTo(ctx.sb, 'gm').slice(told).find((w) => /sheets not updated/.test(w));
  assert.match(missed, /The encounter keeps its own copy of Fenka until you have brought the sheet in line by hand/);
  assert.doesNotMatch(missed, /tried again|until the write lands/);
  assert.deepEqual(held(ctx).sort(), [ctx.ulcen.id, ctx.fenka.id].sort());
  // Its status names nobody whose write is tried again.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 5, waiting_for: [], combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Held, the encounter keeps its own copy/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /tried again/);
});

test('two failed steps merge their writes: what the second put in place before it failed is not left waiting, nor told as missed', () => {
  const ctx = fenkaMissedAStep();
  // The second step writes Fenka's mind (it lands) and then her HP (locked: it fails).
  const second = resolveNow(ctx);
  answer(ctx, second.id, stepAnswer(ctx, second, 4, { updates: [
    { character_id: ctx.fenka.id, attributes: { 'psionic-mind-state': { current: 'closed' }, HP: { current: 1 } } }] }));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psionic-mind-state'), 'closed');
  assert.deepEqual(writes(ctx)[ctx.fenka.id], { attributes: { HP: { current: 1 } }, expect: { HP: { current: '11' } }, older: { HP: { current: [] } } });
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /sheets not updated/.test(w)).at(-1),
    /the other changes were written:<br><b>Fenka<\/b> \(writing failed; the API console has the details\): HP 1<br>/);
  unlockFenkaHp(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 1);
  assert.deepEqual(held(ctx), []);
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /before resolving/.test(w)).at(-1), /Wrote again what Fenka missed/);
});

test('a held fighter\'s waiting write matches attribute names in any case, as Roll20 does', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, { updates: [{ character_id: ctx.fenka.id, attributes: { hp: { current: 3 } } }] }));
  assert.deepEqual(writes(ctx)[ctx.fenka.id], { attributes: { hp: { current: 3 } }, expect: { hp: { current: '11' } }, older: { hp: { current: [] } } });
  unlockFenkaHp(ctx);
  // A later step writing HP (as the sheet spells it) takes hp off: nothing waits, the hold ends.
  const next = resolveNow(ctx);
  answer(ctx, next.id, stepAnswer(ctx, next, 4, { updates: [{ character_id: ctx.fenka.id, attributes: { HP: { current: 4 } } }] }));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 4);
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
});

test('a failed update that a later one of the same answer writes over in full leaves nobody held', () => {
  const ctx = encounterWithTwo();
  const hp = ctx.sb.attribute(ctx.fenka.id, 'HP');
  hp.setWithWorker = () => { delete hp.setWithWorker; throw new Error('busy once'); };
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, { updates: [
    { character_id: ctx.fenka.id, attributes: { HP: { current: 2 } } },
    { character_id: ctx.fenka.id, attributes: { HP: { current: 3 } } }] }));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 3);
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /A later change of the same answer wrote over what was missed: nobody is held\./);
});

test('the GM\'s own refresh writes nothing: it takes a held sheet as it is and forgets the waiting write', () => {
  const ctx = fenkaMissedAStep();
  unlockFenkaHp(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  const fenka = lastRequest(ctx.sb);
  assert.equal(fenka.body.params.combatant_id, ctx.fenka.id);
  assert.equal(attribOf(fenka.body.params.combatant, 'HP').current, '11');
  refreshAnswer(ctx, fenka, 4, ['hp']);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), '11');
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
});

test('a held fighter the companion no longer has (a resync) is out of its hold: joining again, nothing from before is written over its sheet', () => {
  const ctx = fenkaMissedAStep();
  unlockFenkaHp(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 4, waiting_for: [], combatants: { [ctx.ulcen.id]: {} } } });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.held), []);
  assert.deepEqual(writes(ctx), {});
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, add.body.map((b) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: b.params.combatant.data.id, revision: 5 } })));
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 5);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), '11');
});

// Token `token`'s writes throw ('token locked') until the returned function puts its
// set back.
const lockToken = (token) => {
  const set = token.set;
  token.set = () => { throw new Error('token locked'); };
  return () => { token.set = set; };
};

test('an unlinked token\'s missed write waits with what its bar showed, and lands on the bar when tried again; its own record took its part at once', () => {
  const ctx = goblins();
  encounterOf(ctx, [ctx.gob[0], ctx.gob[1]]);
  const unlock = lockToken(ctx.gob[1]);
  const step = resolveNow(ctx);
  const update = { character_id: ctx.gob[1].id, attributes: { HP: { current: 1 }, psi_mind: { current: '{"state":"open"}' } } };
  answer(ctx, step.id, { jsonrpc: '2.0', id: step.id, result: { round: 1, results: [], summary: 'Round 1.', rolls: [], revision: 3, updates: [update] } });
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  assert.deepEqual(writes(ctx)[ctx.gob[1].id], { attributes: { HP: { current: 1 } }, expect: { HP: { current: '3' } }, older: { HP: { current: [] } } });
  assert.equal(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id].psi_mind.current, '{"state":"open"}');
  unlock();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), '7', 'the character keeps its own HP');
  assert.deepEqual(held(ctx), []);
  const second = lastRequest(ctx.sb);
  assert.equal(second.body.params.combatant_id, ctx.gob[1].id);
  assert.equal(attribOf(second.body.params.combatant, 'psi_mind').current, '{"state":"open"}');
});

// The whisper of the last write an unlinked token missed.
const missedWhisper = (ctx) => whispersTo(ctx.sb, 'gm').filter((w) => /sheets not updated/.test(w)).at(-1);

const OPENED = '{"state":"open"}';

const OPENED_SHOWN = '&#123;&#34;state&#34;:&#34;open&#34;&#125;';

test('an unlinked token\'s write whose bar throws outside an encounter keeps its own record and its sheet\'s PSP, and names only the bar\'s value as missed, with where it belongs (ROLL20.md: unlinked tokens)', () => {
  const ctx = goblins();
  const req = attackGoblin(ctx);
  const unlock = lockToken(ctx.gob[1]);
  answerWrites(ctx, req, ctx.gob[1].id, { HP: { current: 1 }, PSP: { current: 8 }, psi_mind: { current: OPENED } });
  // Its bar is not written (its write threw); its own record (written first) and its
  // character's PSP (--pspbar none, written before the bars) are.
  assert.equal(ctx.gob[1].get('bar1_value'), '3');
  assert.equal(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id].psi_mind.current, OPENED);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'PSP'), 8);
  const told = missedWhisper(ctx);
  assert.match(told, /the other changes were written:<br><b>Goblin 2<\/b> \(writing failed; the API console has the details\): HP 1 \(its token's bar 1\)<br>/);
  assert.match(told, /<br>Put the values for a sheet or a token's bar there by hand if it is still needed\.<\/div>$/);
  assert.doesNotMatch(told, /PSP|psi_mind|own record|nothing was written/);
  // Its next exchange sends the mind its record took.
  unlock();
  const next = attackGoblin(ctx);
  assert.equal(attribOf(next.body.params.defender, 'psi_mind').current, OPENED);
});

// Token `token`'s next set puts only its first key in place and throws, as a set that
// fails part way; the sets after it work.
const setFailsAfterFirstKey = (token) => {
  const set = token.set;
  token.set = (patch) => {
    token.set = set;
    const [first] = Object.keys(patch);
    set.call(token, { [first]: patch[first] });
    throw new Error('token locked part way');
  };
};

test('an unlinked token\'s bars whose set throws part way count as missed only the keys the token does not show: those it put in place, or showed already, landed', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  ctx.gob[1].set({ bar2_max: '20' });
  const req = attackGoblin(ctx);
  setFailsAfterFirstKey(ctx.gob[1]);
  answerWrites(ctx, req, ctx.gob[1].id, { HP: { current: 1 }, PSP: { current: 8, max: 20 } });
  // bar1_value (HP) was set before the throw, bar2_max showed 20 already; bar2_value was not set.
  assert.deepEqual([ctx.gob[1].get('bar1_value'), ctx.gob[1].get('bar2_value')], [1, '']);
  const told = missedWhisper(ctx);
  assert.match(told, /the other changes were written:<br><b>Goblin 2<\/b> \(writing failed; the API console has the details\): PSP 8 \(its token's bar 2\)<br>/);
  assert.doesNotMatch(told, /HP 1|max 20/);
  // In an encounter, the write left waiting to be tried again holds only that key's part.
  const enc = goblins();
  enc.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  encounterOf(enc, [enc.gob[0], enc.gob[1]]);
  setFailsAfterFirstKey(enc.gob[1]);
  const step = resolveNow(enc);
  roundAnswer(enc, step, 1, 3, { updates: [{ character_id: enc.gob[1].id, attributes: { HP: { current: 1 }, PSP: { current: 8 } } }] });
  assert.deepEqual(held(enc), [enc.gob[1].id]);
  assert.deepEqual(writes(enc)[enc.gob[1].id].attributes, { PSP: { current: 8 } });
});

test('an unlinked token\'s missed PSP names the bar set by --pspbar, and a maximum that is the bar\'s max as such', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  const req = attackGoblin(ctx);
  lockToken(ctx.gob[1]);
  answerWrites(ctx, req, ctx.gob[1].id, { PSP: { current: 8, max: 20 }, PSP_max: { current: 20 } });
  const told = missedWhisper(ctx);
  assert.match(told, /<b>Goblin 2<\/b> \(writing failed; the API console has the details\): PSP 8, max 20 \(its token's bar 2\); PSP_max 20 \(its token's bar 2 max\)<br>Put the values for a sheet or a token's bar there by hand if it is still needed\.<\/div>$/);
  assert.doesNotMatch(told, /own record/);
});

test('a held unlinked token whose bar\'s write threw is told only of its bar\'s value: a refresh letting go of it before the write is tried again takes its own record with the step\'s mind', () => {
  const ctx = goblins();
  encounterOf(ctx, [ctx.gob[0], ctx.gob[1]]);
  const unlock = lockToken(ctx.gob[1]);
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 3, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 1 }, psi_mind: { current: OPENED } } }] });
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  const told = missedWhisper(ctx);
  assert.match(told, /the other changes were written:<br><b>Goblin 2<\/b> \(writing failed; the API console has the details\): HP 1 \(its token's bar 1\)<br>The encounter keeps its own copy of Goblin 2 until the write lands/);
  assert.doesNotMatch(told, /psi_mind|own record/);
  unlock();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  const taken = lastRequest(ctx.sb);
  assert.equal(taken.body.params.combatant_id, ctx.gob[1].id);
  assert.equal(attribOf(taken.body.params.combatant, 'psi_mind').current, OPENED);
});

test('a held unlinked token with no write to try keeps its own record\'s part of a later step whose bar\'s write throws: only the bar\'s value is left to the GM', () => {
  const ctx = goblins();
  encounterOf(ctx, [ctx.gob[0], ctx.gob[1]]);
  const first = resolveNow(ctx);
  roundAnswer(ctx, first, 1, 3, UNMADE);
  lockToken(ctx.gob[1]);
  const second = resolveNow(ctx);
  roundAnswer(ctx, second, 2, 4, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 1 }, psi_mind: { current: OPENED } } }] });
  assert.deepEqual(writes(ctx), {});
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.byHand), { [ctx.gob[1].id]: { HP: { current: 1 } } });
  assert.equal(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id].psi_mind.current, OPENED);
  const told = missedWhisper(ctx);
  assert.match(told, /: HP 1 \(its token's bar 1\)<br>The encounter keeps its own copy of Goblin 2 until you have brought the sheet in line by hand/);
  assert.doesNotMatch(told, /psi_mind|own record/);
});

test('!psi encounter status says where each value of a held unlinked token belongs: its bars, its character\'s sheet, or its own record, which no command sets', () => {
  const ctx = goblins();
  encounterOf(ctx, [ctx.gob[0], ctx.gob[1]]);
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 3, UNMADE);
  assert.deepEqual(held(ctx), [ctx.gob[0].id, ctx.gob[1].id]);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 3, waiting_for: [], combatants: {
    [ctx.gob[0].id]: { hp: 7 },
    [ctx.gob[1].id]: { psp: 19, psp_max: 20, hp: 1, conditions: ['stunned'], condition_rounds: { stunned: 1 }, mind: { state: 'open' } } } } });
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, new RegExp('<br>Held, the encounter keeps its own copy \\(their sheets missed a write-back; put these values where each belongs, then <code>!psi encounter refresh</code>\\):'
    + '<br>Goblin 1: HP 7 \\(its token\'s bar 1\\)'
    + '<br>Goblin 2: PSP 19, max 20 \\(its character\'s sheet, shared by every token of it\\); HP 1 \\(its token\'s bar 1\\); '
    + 'conditions stunned \\(1 more\\) \\(Mindscape\'s own record of this token\\); mind open \\(Mindscape\'s own record of this token\\)'
    + '<br>No command sets Mindscape\'s own record of a token: a write that failed here put its values there all the same, but a write-back the companion could not make, '
    + 'or a step whose answer was lost, did not, and the refresh that lets go of the token takes it with what that record holds: Goblin 2\\.</div>$'));
  assert.doesNotMatch(told, /put these values on them/);
  // With --pspbar 2, its PSP is its bar's.
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const again = lastRequest(ctx.sb);
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, result: { id: 'enc-1', phase: 'declare', revision: 3, waiting_for: [], combatants: {
    [ctx.gob[0].id]: {}, [ctx.gob[1].id]: { psp: 19, psp_max: 20 } } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<br>Goblin 1: no values in the view<br>Goblin 2: PSP 19, max 20 \(its token's bar 2\)<\/div>$/);
});

test('!psi encounter status names a held character\'s values as its sheet\'s attributes, as it names a held token\'s: the mapping of a generic character', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --adapter roll20.generic --attr hp=Life --attr psp=Focus --attr psp_max=Focus|max' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 3, waiting_for: [], combatants: {
    [ctx.ulcen.id]: { hp: 40 }, [ctx.fenka.id]: { psp: 19, psp_max: 30, hp: 11, mind: { state: 'open' } } } } });
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /put these values on them, then <code>!psi encounter refresh<\/code>\):<br>Ulcen of Tyr: HP 40<br>Fenka: Focus 19, max 30; Life 11; mind open<\/div>$/);
  assert.doesNotMatch(told, /its token's bar|its character's sheet|own record/);
});

// The GM's `!psi encounter status` whisper, the companion's encounter.get answering with
// `combatants` (its view of each fighter) at `revision`.
const statusWith = (ctx, combatants, revision) => {
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision, waiting_for: [], combatants } });
  return whispersTo(ctx.sb, 'gm').at(-1);
};

// adapters/roll20.py: a field a generic mapping does not name is read from and written
// to its psi_* attribute (state_attribute), PSP's maximum as psi_psp's max.
test('!psi encounter status names HP and PSP that a generic mapping leaves out as the psi_* attributes the companion writes them to, for a character and an unlinked token', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --adapter roll20.generic --attr hp=Life' });
  const status = (c, combatants) => statusWith(c, combatants, 3);
  const fenka = { psp: 19, psp_max: 30, hp: 11, mind: { state: 'open' } };
  assert.match(status(ctx, { [ctx.ulcen.id]: { hp: 40 }, [ctx.fenka.id]: fenka }), /<br>Fenka: psi_psp 19, max 30; Life 11; mind open<\/div>$/);
  // PSP named, its maximum not: the maximum is psi_psp's.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi config --attr psp=Focus' });
  assert.match(status(ctx, { [ctx.ulcen.id]: { hp: 40 }, [ctx.fenka.id]: fenka }), /<br>Fenka: Focus 19; psi_psp max 30; Life 11; mind open<\/div>$/);
  // An unlinked goblin keeps psi_psp in Mindscape's own record of it (applyTokenUpdate).
  const gob = goblins();
  encounterOf(gob, [gob.gob[0], gob.gob[1]]);
  const again = resolveNow(gob);
  answer(gob, again.id, stepAnswer(gob, again, 3, UNMADE));
  gob.sb.chat({ playerid: GM, selected: [gob.gob[0].id], content: '!psi config --adapter roll20.generic --attr hp=HP' });
  assert.match(status(gob, { [gob.gob[0].id]: { hp: 7 }, [gob.gob[1].id]: { psp: 19, psp_max: 20, hp: 1 } }),
    /<br>Goblin 2: psi_psp 19, max 20 \(Mindscape's own record of this token\); HP 1 \(its token's bar 1\)<br>No command sets/);
});

// adapters/roll20.py: the AD&D 2E Revised adapter binds PSP to the sheet's PSP attribute
// only where the sheet has one; else its write-back puts PSP on psi_psp (state_attribute:
// {"psi_psp": {"current": 5, "max": 7}} for a sheet with no PSP), and it writes HP only
// where the sheet keeps it (SHEET_ONLY).
test('!psi encounter status names the PSP of a held fighter whose sheet has no PSP attribute as psi_psp, where the write-back puts it, for a character and an unlinked token; HP where none is kept is left out', () => {
  const ctx = campaign();
  encounterOf(ctx, [ctx.tokens.fenka, ctx.tokens.ogre]);
  ctx.sb.attribute(ctx.fenka.id, 'PSP').remove();
  const status = (combatants) => statusWith(ctx, combatants, 4);
  // The write-back the companion makes for Fenka now lands on psi_psp, created on her sheet.
  const first = resolveNow(ctx);
  roundAnswer(ctx, first, 1, 3, { updates: [{ character_id: ctx.fenka.id, attributes: { psi_psp: { current: 5, max: 7 } } }] });
  assert.deepEqual([valueOf(ctx, ctx.fenka.id, 'psi_psp'), ctx.sb.attribute(ctx.fenka.id, 'psi_psp').get('max')], [5, 7]);
  assert.ok(!ctx.sb.attribute(ctx.fenka.id, 'PSP'));
  // Held, status names that place: psi_psp on her sheet, and on the ogre's token (whose
  // character has no PSP and no HP) Mindscape's own record, where applyTokenUpdate keeps
  // psi_psp; the ogre's HP, which no write-back puts anywhere, is not named.
  const second = resolveNow(ctx);
  roundAnswer(ctx, second, 2, 4, UNMADE);
  const told = status({ [ctx.fenka.id]: { psp: 4, psp_max: 7, hp: 11 }, [ctx.tokens.ogre.id]: { psp: 0, psp_max: 0, hp: 30 } });
  assert.match(told, /<br>Fenka: psi_psp 4, max 7; HP 11<br>Ogre: psi_psp 0, max 0 \(Mindscape's own record of this token\)<br>No command sets/);
  assert.doesNotMatch(told, /PSP 4|PSP 0|its character's sheet|HP 30/);
  // Her sheet given a PSP attribute again, psi_psp still holds her PSPs: the companion
  // reads and writes them there (the psionic state store wins). Emptied, PSP is theirs.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'PSP', current: '4', max: '7' });
  const again = { [ctx.fenka.id]: { psp: 4, psp_max: 7, hp: 11 }, [ctx.tokens.ogre.id]: {} };
  assert.match(status(again), /<br>Fenka: psi_psp 4, max 7; HP 11<br>Ogre: no values in the view<\/div>$/);
  ctx.sb.attribute(ctx.fenka.id, 'psi_psp').set({ current: '', max: '' });
  assert.match(status(again), /<br>Fenka: PSP 4, max 7; HP 11<br>Ogre: no values in the view<\/div>$/);
});

// adapters/roll20.py, as the AD&D 2E Revised adapter reads a sheet and writes it back:
// psi_psp holding only spaces gives no PSPs (to_int), so PSP stays where the sheet keeps
// it; an HP box absent but HP_max filled in is read as full and written back to HP
// (_full); a PSP box whose maximum is empty beside a PSP_max attribute has its maximum
// read from and written to PSP_max; and an attribute is written as the sheet spells it
// (Character.spelled). Write-back for Fenka and Ulcen below: {"PSP": {"current": 3},
// "PSP_max": {"current": 31}, "HP": {"current": 2}}, {"psp": {"current": 39, "max": 40},
// "HP": {"current": 17}}.
test('!psi encounter status names a held fighter\'s HP and PSP where the AD&D 2E Revised adapter writes them back: past a psi_psp of spaces, on HP from HP_max, the PSP maximum on PSP_max, as the sheet spells them', () => {
  const ctx = campaign();
  encounterOf(ctx, [ctx.tokens.fenka, ctx.tokens.ulcen]);
  const status = (combatants) => statusWith(ctx, combatants, 4);
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 3, UNMADE);
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psp', current: '  ', max: ' ' });
  // A second psi_psp is not read: the first of a name counts (Character).
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psp', current: '5', max: '9' });
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'PSP_max', current: '30', max: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'HP').remove();
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'HP_max', current: '18', max: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').set({ name: 'psp' });
  const told = status({ [ctx.fenka.id]: { psp: 3, psp_max: 31, hp: 2 }, [ctx.ulcen.id]: { psp: 39, psp_max: 40, hp: 17 } });
  assert.match(told, /<br>Fenka: PSP 3; PSP_max 31; HP 2<br>Ulcen of Tyr: psp 39, max 40; HP 17<\/div>$/);
  assert.doesNotMatch(told, /psi_psp/);
});

test('!psi encounter status names no place for a held unlinked token whose character is gone: it is out of the fight, as a missed write of it says', () => {
  const ctx = goblins();
  encounterOf(ctx, [ctx.gob[0], ctx.gob[1]]);
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 3, UNMADE);
  ctx.goblin.remove();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 3, waiting_for: [], combatants: {
    [ctx.gob[0].id]: { hp: 7 }, [ctx.gob[1].id]: { psp: 19, psp_max: 20, hp: 1, mind: { state: 'open' } } } } });
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /put these values on them, then <code>!psi encounter refresh<\/code>\):<br>Goblin 1: HP 7<br>Goblin 2: PSP 19, max 20; HP 1; mind open<\/div>$/);
  assert.doesNotMatch(told, /its token's bar|its character's sheet|own record/);
});

test('a held fighter\'s write tried again that throws after one attribute landed leaves only the rest waiting', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const step = resolveNow(ctx);
  // HP is written first and throws: PSP is never tried, so both wait.
  answer(ctx, step.id, stepAnswer(ctx, step, 3, { updates: [{ character_id: ctx.fenka.id, attributes: { HP: { current: 2 }, PSP: { current: 5 } } }] }));
  assert.deepEqual(Object.keys(writes(ctx)[ctx.fenka.id].attributes), ['HP', 'PSP']);
  unlockFenkaHp(ctx);
  ctx.sb.attribute(ctx.fenka.id, 'PSP').setWithWorker = () => { throw new Error('sheet locked'); };
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  const waiting = writes(ctx)[ctx.fenka.id];
  assert.deepEqual(waiting.attributes, { PSP: { current: 5 } });
  assert.deepEqual(Object.keys(waiting.expect), ['PSP']);
  assert.deepEqual(Object.keys(waiting.older), ['PSP']);
});

test('a hold made while the GM\'s own refresh waits for a late answer stays: a sheet read before it is not let go of, and nothing more is taken', () => {
  const ctx = fenkaMissedAStep();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const ulcen = lastRequest(ctx.sb);
  assert.equal(ulcen.body.params.combatant_id, ctx.ulcen.id);
  // Ulcen's refresh times out, which ends the run (an undo is refused while it runs);
  // then an undo's write to Ulcen fails: Ulcen is held too.
  ctx.sb.advance(30000);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  assert.equal(undo.body.method, 'encounter.undo');
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').setWithWorker = () => { throw new Error('sheet locked'); };
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 4, undone: 3, updates: [
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 40 } } }] } });
  assert.deepEqual(held(ctx).sort(), [ctx.ulcen.id, ctx.fenka.id].sort());
  // The late answer tells the sheet Ulcen's refresh read, from before the undo.
  refreshAnswer(ctx, ulcen, 4);
  assert.deepEqual(held(ctx).sort(), [ctx.ulcen.id, ctx.fenka.id].sort());
  assert.equal(refreshes(ctx.sb).length, 1, 'Fenka, held, is not taken');
  const report = whispersTo(ctx.sb, 'gm').filter((w) => /encounter refresh/.test(w)).at(-1);
  assert.match(report, /Still held, a write-back failed while this refresh ran: Ulcen of Tyr\./);
  assert.match(report, /This answer came late, so nothing more was sent\. Not taken again: Fenka\./);
  assert.doesNotMatch(report, /No longer held|Wrote again|failed again/);
  assert.ok(writes(ctx)[ctx.fenka.id], 'Fenka\'s write still waits for the refresh before a resolve');
});

test('a hold that reaches the GM\'s own refresh while it runs keeps the sheets of those held out of it: one whose turn comes after is neither taken nor let go of', () => {
  // No command makes such a hold now: a step is refused while a refresh runs, and one
  // still waiting when the run begins keeps everyone's copy (stepPending). The undo's
  // request is taken out of state before the run and put back during it, as the way in
  // should a new one ever open.
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  const pending = ctx.sb.state.Mindscape.pending;
  const job = plain(pending[undo.id]);
  delete pending[undo.id];
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const ulcen = lastRequest(ctx.sb);
  assert.equal(ulcen.body.params.combatant_id, ctx.ulcen.id);
  pending[undo.id] = job;
  answer(ctx, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 4, undone: 3, updates: [], updates_failed: { error_id: 'e-44' } } });
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  refreshAnswer(ctx, ulcen, 4);
  assert.equal(refreshes(ctx.sb).length, 1, 'Fenka, held since the run began, is not taken');
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  const report = whispersTo(ctx.sb, 'gm').filter((w) => /encounter refresh/.test(w)).at(-1);
  assert.match(report, /Still held, a write-back failed while this refresh ran: Fenka, Ulcen of Tyr\./);
  assert.doesNotMatch(report, /No longer held|Kept the encounter's copy|still waiting for its answer/);
});

test('a step whose write-back the companion could not make holds every combatant still here, not one whose character is gone', () => {
  const ctx = encounterWithTwo();
  ctx.tokens.fenka.remove();
  ctx.fenka.remove();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  assert.deepEqual(held(ctx), [ctx.ulcen.id]);
});

test('a step\'s write-back for a combatant whose character is gone holds nobody and promises no write: the GM puts the values on by hand', () => {
  const ctx = encounterWithTwo();
  ctx.tokens.fenka.remove();
  ctx.fenka.remove();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w));
  assert.match(told, /\(its character or token is gone\): HP 2; psionic-mind-state open<br>Put these values on the sheet by hand if it is still needed\.<\/div>$/);
});

test('a second failed write of a held fighter keeps the parts of an attribute the first one missed: its current and its maximum both land', () => {
  const ctx = fenkaMissedAStep();
  const second = resolveNow(ctx);
  answer(ctx, second.id, stepAnswer(ctx, second, 4, { updates: [{ character_id: ctx.fenka.id, attributes: { HP: { max: 20 } } }] }));
  assert.deepEqual(writes(ctx)[ctx.fenka.id].attributes.HP, { current: 2, max: 20 });
  unlockFenkaHp(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.equal(ctx.sb.attribute(ctx.fenka.id, 'HP').get('max'), 20);
  assert.deepEqual(held(ctx), []);
});

test('a held sheet the GM changed and then put back is tried again: status promises the write again, not a changed sheet', () => {
  const ctx = fenkaMissedAStep();
  const hp = ctx.sb.attribute(ctx.fenka.id, 'HP');
  hp.set({ current: '5' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /before resolving/.test(w)).at(-1), /Not written again, the sheet has changed since writing failed: Fenka\./);
  emptyStep(ctx, lastRequest(ctx.sb), 4);
  // Put back as it was (the HP still locked): tried again, it fails again.
  hp.set({ current: '11' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 4);
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /before resolving/.test(w)).at(-1), /Writing what Fenka missed failed again/);
  emptyStep(ctx, lastRequest(ctx.sb), 5);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 5, waiting_for: [], combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Before the next resolve, the write it missed is tried again[^<]*Fenka\.<\/div>$/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /Not written again/);
});

// A held Fenka whose retry found her sheet changed (HP 5, the write waiting with HP 2
// over 11), then a resolve answered with `updates` for her; status's whisper after it.
const changedThenStep = (ctx, updates) => {
  ctx.sb.attribute(ctx.fenka.id, 'HP').set({ current: '5' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /before resolving/.test(w)).at(-1), /Not written again, the sheet has changed since writing failed: Fenka\./);
  const resolve = lastRequest(ctx.sb);
  answer(ctx, resolve.id, stepAnswer(ctx, resolve, 4, { updates: [{ character_id: ctx.fenka.id, attributes: updates }] }));
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 4, waiting_for: [], combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} } } });
  return whispersTo(ctx.sb, 'gm').at(-1);
};

test('a later step that writes another part of a held fighter whose sheet the GM changed, or misses one, leaves status saying the sheet has changed', () => {
  // It writes the mind's state: the HP the GM changed still waits.
  const wrote = fenkaMissedAStep();
  const told = changedThenStep(wrote, { 'psionic-mind-state': { current: 'closed' } });
  assert.deepEqual(Object.keys(writes(wrote)[wrote.fenka.id].attributes), ['HP']);
  assert.match(told, /<br>Not written again, the sheet has changed since writing failed: Fenka\.<\/div>$/);
  assert.doesNotMatch(told, /tried again/);
  // It misses the HP again (still locked): the GM's 5 still stands against the 11 expected.
  const missed = fenkaMissedAStep();
  const again = changedThenStep(missed, { HP: { current: 1 } });
  assert.deepEqual(writes(missed)[missed.fenka.id].attributes.HP, { current: 1 });
  assert.match(again, /<br>Not written again, the sheet has changed since writing failed: Fenka\.<\/div>$/);
  assert.doesNotMatch(again, /tried again/);
});

test('a later step that writes the very part the GM changed on a held sheet leaves the rest of its write to be tried again: status promises it', () => {
  const ctx = fenkaMissedAStep();
  unlockFenkaHp(ctx);
  const told = changedThenStep(ctx, { HP: { current: 3 } });
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 3);
  assert.deepEqual(Object.keys(writes(ctx)[ctx.fenka.id].attributes), ['psionic-mind-state']);
  assert.match(told, /Before the next resolve, the write it missed is tried again[^<]*Fenka\.<\/div>$/);
  assert.doesNotMatch(told, /Not written again/);
});

test('a step or an undo answered after another encounter was created here holds nobody in the new one: the GM is told to bring the sheets in line by hand', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-2', revision: 0 } });
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w));
  assert.match(told, /That encounter is no longer the current one here: bring the sheets in line by hand\./);
  assert.equal(ctx.sb.state.Mindscape.encounter.id, 'enc-2');
  assert.equal(ctx.sb.state.Mindscape.encounter.holds, undefined);
  // An undo's too.
  const other = encounterWithTwo();
  other.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(other.sb);
  other.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const again = lastRequest(other.sb);
  answer(other, again.id, { jsonrpc: '2.0', id: again.id, result: { id: 'enc-2', revision: 0 } });
  answer(other, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 3, undone: 2, updates: [], updates_failed: { error_id: 'e-45' } } });
  assert.match(whispersTo(other.sb, 'gm').find((w) => /sheets not updated/.test(w)), /That encounter is no longer the current one here/);
  assert.equal(other.sb.state.Mindscape.encounter.holds, undefined);
});

test('a secret declaration on its way does not stop a refresh: it writes no sheet', () => {
  const ctx = encounterWithTwo();
  const declared = aliceDeclares(ctx, `--attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1 --range short`);
  assert.equal(declared.body.method, 'encounter.declare');
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.equal(lastRequest(ctx.sb).body.params.combatant_id, ctx.ulcen.id);
});

test('the error id of a write-back the companion could not make is told as a number too', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, { updates: [], updates_failed: { error_id: 42 } }));
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /\(error id <b>42<\/b>; the companion's log has the cause\)/);
});

test('a missed write names the maximum it would have set apart from the current value', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, { updates: [{ character_id: ctx.fenka.id, attributes: { HP: { current: 2, max: 20 } } }] }));
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /<b>Fenka<\/b> \(writing failed; the API console has the details\): HP 2, max 20<br>/);
});

test('a single attack\'s write that fails holds nobody in the current encounter: only an encounter\'s own steps hold', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /Put these values on the sheet by hand if it is still needed\.<\/div>$/);
});

test('a refresh that timed out no longer stops another from starting, nor does one of an encounter forgotten here', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  ctx.sb.advance(30000);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 2);
  // A run of enc-1 still on its way; enc-1 forgotten and enc-2 created: enc-2 refreshes.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter end' });
  encounterOf(ctx, [ctx.tokens.ulcen], 'enc-2');
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 3);
  assert.equal(lastRequest(ctx.sb).body.params.id, 'enc-2');
});

test('a refresh of an encounter nobody has joined says there is nobody to take again; a resolve goes at once without saying it', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /encounter refresh.*The encounter has no combatant to take again from a sheet\./);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.resolve');
  assert.equal(whispersTo(ctx.sb, 'gm').filter((w) => /no combatant to take again/.test(w)).length, 1);
});

test('a combatant a resync drops while a refresh runs is not taken again', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const ulcen = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 2, waiting_for: [], combatants: { [ctx.ulcen.id]: {} } } });
  refreshAnswer(ctx, ulcen, 2);
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Every sheet matches the encounter: Ulcen of Tyr\./);
});

test('the revision a refresh run names never goes back to an older one a refresh answered, nor is lost to an answer without one', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const ulcen = lastRequest(ctx.sb);
  assert.equal(ulcen.body.params.revision, 2);
  // A declaration answered meanwhile moved the encounter to revision 5.
  const declared = aliceDeclares(ctx, `--attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1 --range short`);
  answer(ctx, declared.id, { jsonrpc: '2.0', id: declared.id, result: { revision: 5, waiting_for: [ctx.fenka.id], updates: [] } });
  refreshAnswer(ctx, ulcen, 3);
  assert.equal(lastRequest(ctx.sb).body.params.revision, 5);
  // An answer that gives no revision leaves the one known.
  const other = encounterWithTwo();
  other.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const first = lastRequest(other.sb);
  answer(other, first.id, { jsonrpc: '2.0', id: first.id, result: { combatant_id: first.body.params.combatant_id, changed: [] } });
  assert.equal(lastRequest(other.sb).body.params.combatant_id, other.fenka.id);
  assert.equal(lastRequest(other.sb).body.params.revision, 2);
});

test('declare --release, --cannot-perceive or --keep of a token outside the encounter is refused before anything is sent', () => {
  const ctx = encounterIn('power-pool', ['ulcen', 'fenka'], (c, i) => [c.ulcen.id, c.fenka.id][i]);
  for (const option of [`--release ${ctx.tokens.ogre.id}`, `--cannot-perceive ${ctx.tokens.ogre.id}`, `--keep ${ctx.tokens.ogre.id} --by die`]) {
    const before = requests(ctx.sb).length;
    const said = aliceDeclares(ctx, option);
    assert.equal(requests(ctx.sb).length, before, option);
    assert.match(said, /must be a token of a combatant in the current encounter\./, option);
  }
});

test('declare refuses an attack without a --target or at a token outside the encounter, a defense mode the system lacks, and an ally outside the encounter, before anything is sent', () => {
  const ctx = encounterIn('power-pool', ['ulcen', 'fenka'], (c, i) => [c.ulcen.id, c.fenka.id][i]);
  for (const [option, why] of [
    ['--attack mental-stab', /--target must be a token of a combatant in the current encounter\./],
    [`--attack mental-stab --target ${ctx.tokens.ogre.id}`, /--target must be a token of a combatant in the current encounter\./],
    ['--defense no-such-defense', /--defense must be one of/],
    [`--defense imagination-swarm --ally ${ctx.tokens.ogre.id}`, /--ally must be a token of a combatant in the current encounter\./],
  ]) {
    const before = requests(ctx.sb).length;
    const said = aliceDeclares(ctx, option);
    assert.equal(requests(ctx.sb).length, before, option);
    assert.match(said, why, option);
  }
});

test('a step on its way keeps the sheets from a refresh of its own encounter, also one kept from before requests named their encounter, but not another encounter\'s', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  delete ctx.sb.state.Mindscape.pending[undo.id].encounter;
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 0);
  ctx.sb.state.Mindscape.pending[undo.id].encounter = 'enc-1';
  encounterOf(ctx, [ctx.tokens.ulcen], 'enc-2');
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.equal(lastRequest(ctx.sb).body.params.id, 'enc-2');
});

test('revised-2e declare --close asks to pay to close the mind, and its player reads back that choice', () => {
  const ctx = encounterWithTwo();
  const req = aliceDeclares(ctx, '--close');
  assert.deepEqual(plain(req.body.params.choice), { close: true });
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { revision: 3, waiting_for: [], updates: [] } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Your choice is recorded in secret: pay to close the mind\. A new declaration replaces all of it/);
});

test('declare --keep takes its --by in any case', () => {
  const ctx = encounterIn('power-pool', ['ulcen', 'fenka'], (c, i) => [c.ulcen.id, c.fenka.id][i]);
  const req = aliceDeclares(ctx, `--keep ${ctx.tokens.fenka.id} --by Die`);
  assert.deepEqual(plain(req.body.params.choice), { keep: { target: ctx.fenka.id, by: 'die' } });
});

test('a secret choice is read back whole to whoever declared it: a stance, no multiplier at 1, every target of a wave, its pool dice, no defense, the allies drawn in', () => {
  const recorded = (ctx, req, who) => {
    answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { revision: 9, waiting_for: [], updates: [] } });
    return /Your choice is recorded in secret: (.*?)\. A new declaration/.exec(whispersTo(ctx.sb, who).at(-1))[1];
  };
  const r2e = encounterWithTwo();
  assert.equal(recorded(r2e, aliceDeclares(r2e, `--attack ego-whip --target ${r2e.tokens.fenka.id} --mult 1 --range short --defense none`), 'Alice'),
    'Ego Whip at Fenka, short range; defense none');
  const strength = encounterIn('combat-strength', ['ulcen', 'fenka'], (c, i) => [c.ulcen.id, c.fenka.id][i]);
  assert.match(recorded(strength, aliceDeclares(strength, '--stance trance'), 'Alice'), /^stance trance$/);
  const pool = swarmCampaign();
  encounterOf(pool, [pool.tokens.ulcen, pool.tokens.fenka, pool.tokens.ogre, pool.tokens.porter]);
  assert.match(recorded(pool, aliceDeclares(pool, `--attack psionic-wave --target ${pool.tokens.fenka.id} --target ${pool.tokens.ogre.id} --dice 3`), 'Alice'),
    / at Fenka, Ogre, 3 pool dice$/);
  assert.match(recorded(pool, declare(pool, BOB, pool.tokens.fenka, ` --defense imagination-swarm --ally ${pool.tokens.porter.id}`), 'Bob'),
    /^defense Imagination Swarm, drawing in Porter$/);
});

test('only a GM may create, add to, refresh, resolve, undo or end an encounter: a player\'s command sends nothing and keeps the encounter', () => {
  const ctx = encounterWithTwo();
  const before = requests(ctx.sb).length;
  const refusals = {
    create: 'create an encounter', add: 'add tokens to an encounter', refresh: 'refresh an encounter',
    resolve: 'resolve an encounter', undo: "undo an encounter's step", end: 'end an encounter',
  };
  for (const [action, what] of Object.entries(refusals)) {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter ${action}` });
    assert.equal(whispersTo(ctx.sb, 'Alice').at(-1).includes(`only a GM may ${what}.`), true, action);
  }
  assert.equal(requests(ctx.sb).length, before);
  assert.equal(ctx.sb.state.Mindscape.encounter.id, 'enc-1');
});

test('an encounter command is read in any case: a player\'s UNDO is refused as a GM\'s, a GM\'s Status is sent', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: ALICE, content: '!psi encounter UNDO' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM may undo an encounter's step\./);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter Status' });
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.get');
});

test('encounter add refuses a --token that names no fighter and sends a fighter named twice once', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  const before = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: `!psi encounter add --token ${ctx.tokens.ulcen.id} --token -Mnothing` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /select the tokens to add, or name them with --token\./);
  assert.equal(requests(ctx.sb).length, before);
  ctx.sb.chat({ playerid: GM, content: `!psi encounter add --token ${ctx.tokens.ulcen.id} --token ${ctx.tokens.ulcen.id}` });
  assert.deepEqual(lastRequest(ctx.sb).body.map((b) => b.params.combatant.data.id), [ctx.ulcen.id]);
});

test('a declaration is made for exactly one selected token, one its player controls', () => {
  const ctx = encounterWithTwo();
  const before = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter declare --close' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /select exactly one token of a combatant in the current encounter\./);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.fenka.id], content: '!psi encounter declare --close' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /you do not control Fenka\./);
  assert.equal(requests(ctx.sb).length, before);
});

test('resolve --no-refresh --force sends the forced resolve at once', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --no-refresh --force' });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params), { id: 'enc-1', revision: 2, force: true });
});

test('the pairing code is whispered out of the chat archive; a new one tells how many requests still waiting carry the old one, the same one does not', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  ctx.sb.chat({ playerid: GM, content: '!psi pair' });
  const same = ctx.sb.chats.at(-1);
  assert.match(same.input, /Pairing code: <code>/);
  assert.equal(same.options.noarchive, true);
  assert.doesNotMatch(same.input, /still waiting/);
  ctx.sb.chat({ playerid: GM, content: '!psi pair --new' });
  assert.match(ctx.sb.chats.at(-1).input, /New pairing code: .*The 1 request\(s\) still waiting carry the old code and will not be relayed\./);
});

test('the help handout is in every player\'s journal, and the link to it is whispered out of the chat archive', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.equal(handout.get('inplayerjournals'), 'all');
  const link = ctx.sb.chats.at(-1);
  assert.match(link.input, /journal\.roll20\.net\/handout\//);
  assert.equal(link.options.noarchive, true);
});

test('a refresh answer of an encounter forgotten here lets go of nobody held in the current one', () => {
  const ctx = encounterWithTwo();
  // enc-1 has made one hold when its refresh begins, as enc-2 will have when the answer comes.
  const unmade = resolveNow(ctx);
  answer(ctx, unmade.id, stepAnswer(ctx, unmade, 3, UNMADE));
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const old = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter end' });
  encounterOf(ctx, [ctx.tokens.ulcen, ctx.tokens.fenka], 'enc-2');
  const step = resolveNow(ctx);
  answer(ctx, step.id, stepAnswer(ctx, step, 3, UNMADE));
  refreshAnswer(ctx, old, 7);
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The current encounter changed here meanwhile, so nothing more was sent\./);
});

test('a step\'s write that fails for a fighter a resync dropped meanwhile keeps no write for it to try again', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const step = resolveNow(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 2, waiting_for: [], combatants: { [ctx.ulcen.id]: {} } } });
  answer(ctx, step.id, stepAnswer(ctx, step, 3));
  assert.deepEqual(held(ctx), []);
  assert.deepEqual(writes(ctx), {});
});

test('an unlinked token keeps what each write-back gave it: a later one adds to it, a part of a value already kept, in any case of its name', () => {
  const ctx = goblins();
  const hit = (updates) => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${ctx.gob[1].id} --mode ego-whip --defense none` });
    const req = lastRequest(ctx.sb);
    answer(ctx, req.id, exchangeResult(ctx, req.id, updates));
  };
  hit([{ character_id: ctx.gob[1].id, attributes: { psi_mind: { current: '{"state":"open"}' }, psi_timer: { current: '2' } } }]);
  hit([{ character_id: ctx.gob[1].id, attributes: { PSI_TIMER: { max: '3' } } }]);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id]), {
    psi_mind: { name: 'psi_mind', current: '{"state":"open"}', max: '' },
    psi_timer: { name: 'psi_timer', current: '2', max: '3' },
  });
});

test('a card shows the roll against what was needed, the damage, the PSPs spent and every die, naming one a penetrating die rolled after; no totals without both sides\' totals', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const response = exchangeResult(ctx, req.id);
  response.result.rolls = response.result.rolls.concat([
    { purpose: 'damage', sides: 6, value: 6, by: ctx.ulcen.id, follows: null },
    { purpose: 'damage', sides: 6, value: 3, by: ctx.ulcen.id, follows: 1 },
  ]);
  response.result.attack_total = 5;
  answer(ctx, req.id, response);
  const card = ctx.sb.chats.at(-1).input;
  assert.match(card, /\{\{Roll=15 \+ 2 = 17 \(needed 12\)\}\} \{\{Damage=9\}\} \{\{PSP spent=12\}\}/);
  assert.match(card, /\{\{Dice=attack d20: 15, damage d6: 6, damage d6: 3 \(penetrating\)\}\}/);
  assert.doesNotMatch(card, /Totals/);
});

test('in the private roll mode each controller reads a card once, and a GM among them only as the GM', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode private' });
  ctx.fenka.set('controlledby', `${ALICE},${GM}`);
  // Alice controls Fenka too: she settles the defense at once.
  attack(ctx, ' --defense mental-barrier');
  const req = lastRequest(ctx.sb);
  const from = ctx.sb.chats.length;
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  const cards = ctx.sb.chats.slice(from).filter((c) => c.input.includes('&{template:default}')).map((c) => c.input.replace(/ &\{.*$/, ''));
  assert.deepEqual(cards, ['/w gm', '/w "Alice"']);
});

test('a step that holds one exchange as its step, or is that exchange, is shown as that exchange\'s card', () => {
  const ctx = encounterWithTwo();
  const resolve = resolveNow(ctx);
  const { updates, ...exchange } = exchangeResult(ctx, resolve.id).result;
  answer(ctx, resolve.id, { jsonrpc: '2.0', id: resolve.id, result: { step: exchange, summary: 'Round 1.', revision: 3, updates } });
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Summary=Ulcen of Tyr lashes Fenka with an ego whip\.\}\}/);
  // Or that is the exchange itself.
  const next = resolveNow(ctx);
  answer(ctx, next.id, { jsonrpc: '2.0', id: next.id, result: Object.assign({}, exchange, { summary: 'Fenka reels.', revision: 4, updates: [] }) });
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Outcome=Hit\}\}.*\{\{Summary=Fenka reels\.\}\}/);
});

test('an updates_failed outside an encounter\'s step holds nobody in the current encounter and says nothing of a step', () => {
  const ctx = encounterWithTwo();
  const req = attackAndDefend(ctx);
  const response = exchangeResult(ctx, req.id);
  response.result.updates_failed = { error_id: 'e-46' };
  answer(ctx, req.id, response);
  assert.deepEqual(held(ctx), []);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/sheets not updated/.test(w)));
});

test('a batch answer with more responses than requests is refused as malformed and nobody joins', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  const responses = add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: b.params.combatant.data.id, revision: i + 1 } }));
  answer(ctx, add.id, responses.concat([{ jsonrpc: '2.0', id: `${add.id}-9`, result: { combatant_id: 'x', revision: 9 } }]));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /a batch answer must hold one response per request/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), {});
});

test('a refresh answer without its list of changed fields is refused as malformed and the refresh keeps waiting for it', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const first = lastRequest(ctx.sb);
  answer(ctx, first.id, { jsonrpc: '2.0', id: first.id, result: { combatant_id: first.body.params.combatant_id, revision: 3 } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the result lacks the list of changed fields/);
  assert.ok(plain(ctx.sb.context.Mindscape.pendingIds()).includes(first.id));
  refreshAnswer(ctx, first, 3);
  assert.equal(lastRequest(ctx.sb).body.params.combatant_id, ctx.fenka.id);
});

test('answers of an encounter no longer current here change nothing in the current one: an add joins nobody to it, a declaration, a step or an undo moves not its revision', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const first = lastRequest(ctx.sb);
  answer(ctx, first.id, { jsonrpc: '2.0', id: first.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter end' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const second = lastRequest(ctx.sb);
  answer(ctx, second.id, { jsonrpc: '2.0', id: second.id, result: { id: 'enc-2', revision: 0 } });
  answer(ctx, add.id, add.body.map((b, i) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: b.params.combatant.data.id, revision: i + 5 } })));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), {});
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 0);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr joined encounter <b>enc-1<\/b>, which is no longer the current one here\.<br>Fenka joined encounter <b>enc-1<\/b>/);
  // enc-2's own add joins; then a declaration, a step and an undo of enc-1 are answered.
  const other = encounterWithTwo();
  const declared = aliceDeclares(other, `--attack ego-whip --target ${other.tokens.fenka.id} --mult 1 --range short`);
  const step = resolveNow(other);
  other.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(other.sb);
  other.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const next = lastRequest(other.sb);
  answer(other, next.id, { jsonrpc: '2.0', id: next.id, result: { id: 'enc-2', revision: 0 } });
  answer(other, declared.id, { jsonrpc: '2.0', id: declared.id, result: { revision: 3, waiting_for: [], updates: [] } });
  assert.equal(other.sb.state.Mindscape.encounter.revision, 0);
  answer(other, step.id, stepAnswer(other, step, 4));
  assert.equal(other.sb.state.Mindscape.encounter.revision, 0);
  answer(other, undo.id, { jsonrpc: '2.0', id: undo.id, result: { revision: 5, undone: 4, updates: [] } });
  assert.equal(other.sb.state.Mindscape.encounter.revision, 0);
});

test('a refusal names a fighter for the combatant id the companion gave it, and for where a refresh or an add sent its sheet', () => {
  const ctx = encounterIn('revised-2e', ['ulcen', 'fenka'], (c, i) => ['cid-ulcen', 'cid-fenka'][i]);
  const declared = aliceDeclares(ctx, `--attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1 --range short`);
  answer(ctx, declared.id, { jsonrpc: '2.0', id: declared.id, error: { code: 4001, message: 'Rules violation', data: { rule: 'target-gone', detail: 'cid-fenka cannot be struck now' } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Fenka cannot be struck now\./);
  const sheetRefused = { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/combatant/data/attribs/0/current', message: 'must be a number' }] } };
  const run = encounterWithTwo();
  run.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const first = lastRequest(run.sb);
  answer(run, first.id, { jsonrpc: '2.0', id: first.id, error: sheetRefused });
  assert.match(whispersTo(run.sb, 'gm').at(-1), /Ulcen of Tyr&#39;s sheet: must be a number\./);
  const add = campaign();
  add.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(add.sb);
  answer(add, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  add.sb.chat({ playerid: GM, selected: [add.tokens.fenka.id], content: '!psi encounter add' });
  const batch = lastRequest(add.sb);
  answer(add, batch.id, [{ jsonrpc: '2.0', id: batch.body[0].id, error: sheetRefused }]);
  assert.match(whispersTo(add.sb, 'gm').at(-1), /Fenka did not join: Fenka&#39;s sheet: must be a number\./);
});

test('a rules refusal without a detail reads as its rule in words', () => {
  const ctx = encounterWithTwo();
  const declared = aliceDeclares(ctx, `--attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1 --range short`);
  answer(ctx, declared.id, { jsonrpc: '2.0', id: declared.id, error: { code: 4001, message: 'Rules violation', data: { rule: 'target-gone' } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /declaration<\/b><br>Target gone\./i);
});

test('a request refused as not found for the encounter it was made for says the companion does not know that encounter, once another is current here too', () => {
  const ctx = encounterWithTwo();
  const declared = aliceDeclares(ctx, `--attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1 --range short`);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-2', revision: 0 } });
  answer(ctx, declared.id, { jsonrpc: '2.0', id: declared.id, error: { code: 4004, message: 'Not found', data: { id: 'enc-1' } } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /The companion does not know this encounter \(it may have been deleted\)/);
});

test('odds whose damage averages 0 leave the mean damage out; any other mean is given', () => {
  const ctx = campaign();
  for (const [mean, said] of [[0, false], [4.5, true]]) {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 3 --range short --defense mental-barrier` });
    const odds = lastRequest(ctx.sb);
    answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: { outcomes: { hit: 0.5, miss: 0.5 }, damage: { mean } } });
    assert.equal(/Mean damage 4\.50/.test(whispersTo(ctx.sb, 'Alice').at(-1)), said, String(mean));
    assert.equal(/Mean damage/.test(whispersTo(ctx.sb, 'Alice').at(-1)), said, String(mean));
  }
});

test('a public action the GM declares is told to the GM once', () => {
  const ctx = poolEncounter();
  const req = declare(ctx, GM, ctx.tokens.ogre, ' --pass');
  const from = ctx.sb.chats.length;
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { revision: 5, waiting_for: [], updates: [] } });
  assert.equal(ctx.sb.chats.slice(from).filter((c) => /Ogre passes this round: done at once/.test(c.input)).length, 1);
});

test('a status of an encounter no longer current here leaves the current one as it is', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-2', revision: 0 } });
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 9, waiting_for: [], combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} } } });
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 0);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.encounter.combatants), {});
});

test('a resync takes in a combatant the companion lists only while its fighter is still here', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: { id: 'enc-1', phase: 'declare', revision: 4, waiting_for: [],
    combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {}, [ctx.ogre.id]: {}, '-Mgone': {} } } });
  assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.encounter.combatants)).sort(), [ctx.ulcen.id, ctx.fenka.id, ctx.ogre.id].sort());
});

test('only the companion\'s word that the combatant id is already in the encounter counts an add as joined; an add\'s revisions never go back', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, [
    { jsonrpc: '2.0', id: add.body[0].id, result: { combatant_id: ctx.ulcen.id, revision: 5 } },
    { jsonrpc: '2.0', id: add.body[1].id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/combatant/name', message: 'a name already in the encounter' }] } } },
  ]);
  assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.encounter.combatants)), [ctx.ulcen.id]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka did not join/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi encounter add' });
  const late = lastRequest(ctx.sb);
  answer(ctx, late.id, [{ jsonrpc: '2.0', id: late.body[0].id, result: { combatant_id: ctx.ogre.id, revision: 3 } }]);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 5);
});

test('a stale-revision refusal once no encounter is current here is reported as refused, with no resync', () => {
  const ctx = encounterWithTwo();
  const declared = aliceDeclares(ctx, `--attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1 --range short`);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter end' });
  const before = requests(ctx.sb).length;
  answer(ctx, declared.id, { jsonrpc: '2.0', id: declared.id, error: { code: 4009, message: 'Stale revision', data: { revision: 7 } } });
  assert.equal(requests(ctx.sb).length, before);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Ulcen of Tyr&#39;s declaration/);
});

test('only an api message that is a !psi command is read: a general message, or !psi run into a word, is not', () => {
  const ctx = campaign();
  const before = ctx.sb.chats.length;
  ctx.sb.chat({ playerid: ALICE, type: 'general', content: '!psi fly' });
  ctx.sb.chat({ playerid: ALICE, content: '!psifly' });
  assert.equal(ctx.sb.chats.length, before);
});

test('--help after any command opens the help', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi attack --help' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /journal\.roll20\.net\/handout\//);
});

test('an internal error in a command is told to whoever typed it, and one while applying an answer to the GM as such', () => {
  const ctx = campaign();
  const { findObjs, playerIsGM } = ctx.sb.context;
  ctx.sb.context.findObjs = () => { throw new Error('broken'); };
  ctx.sb.chat({ playerid: ALICE, content: '!psi --help' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /an internal error happened; the API console has the details\./);
  ctx.sb.context.findObjs = findObjs;
  ctx.sb.context.playerIsGM = () => { throw new Error('broken'); };
  ctx.sb.chat({ playerid: GM, content: '!psi-result abc def' });
  ctx.sb.context.playerIsGM = playerIsGM;
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /An internal error happened while applying an answer; the API console has the details\./);
});

test('a malformed request id in a typed answer is quoted back to the GM as text, never as markup', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi-result <img/src=x> abc' });
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /answer refused.*the request id is malformed/);
  assert.doesNotMatch(told, /<img/);
});

test('the help handout says a combatant whose sheet missed a step is held until the GM\'s refresh', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.match(handout.get('notes'), /that combatant is held: <code>resolve<\/code> keeps the encounter's copy of it until you have put the sheet right and run <code>refresh<\/code>.*lists who is held/);
});

// ------------------------------------------------------------ !psi house

// The companion's house rules of revised-2e, two of them (systems.house_rules).
const HOUSE_RULES = [
  { id: 'H-2E-STUN', text: 'A mind forced open is stunned for the rest of that round.', default: true, choices: [true, false] },
  { id: 'H-2E-ORDER', text: 'Order of attacks in an encounter round.', default: 'listed', choices: ['listed', 'initiative'] },
];

// Sends `!psi house<options>` as the GM and answers it with HOUSE_RULES (or `rules`).
const house = (ctx, options = '', rules = HOUSE_RULES) => {
  ctx.sb.chat({ playerid: GM, content: `!psi house${options}` });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { system: req.body.params.system, house_rules: rules } });
  return req;
};

const houseState = (ctx) => plain(ctx.sb.state.Mindscape.config.house || {});

test('!psi house is for GMs and asks the companion for the house rules of the campaign\'s system', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi house' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM may see or change the house rules/);
  assert.equal(requests(ctx.sb).length, 0);
  ctx.sb.chat({ playerid: GM, content: '!psi house --sett H-2E-STUN=off' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /unknown option --sett; house takes --system, --set, --default\. Nothing was changed\./);
  ctx.sb.chat({ playerid: GM, content: '!psi house --system gurps' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--system must be one of revised-2e, combat-strength, power-pool/);
  ctx.sb.chat({ playerid: GM, content: '!psi house --set H-2E-STUN' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--set wants RULE=VALUE, as H-2E-STUN=off \(got "H-2E-STUN"\)\. Nothing was changed\./);
  assert.equal(requests(ctx.sb).length, 0);
  const req = house(ctx);
  assert.deepEqual(plain(req.body), { jsonrpc: '2.0', id: req.id, method: 'systems.house_rules', params: { system: 'revised-2e' } });
  const list = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(list, /<b>H-2E-STUN<\/b>: on \(default\) \[off\]\(!psi house --system revised-2e --set H-2E-STUN=off\)<br>A mind forced open is stunned/);
  assert.match(list, /<b>H-2E-ORDER<\/b>: listed \(default\) \[initiative\]\(!psi house --system revised-2e --set H-2E-ORDER=initiative\)/);
  assert.doesNotMatch(list, /Changed/);
  assert.deepEqual(houseState(ctx), {});
  // A malformed answer is refused.
  ctx.sb.chat({ playerid: GM, content: '!psi house' });
  const bad = lastRequest(ctx.sb);
  answer(ctx, bad.id, { jsonrpc: '2.0', id: bad.id, result: { system: 'revised-2e' } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused.*the result lacks the house rules/);
});

test('a house rule the companion accepts is stored and sent as options by every request of that system', () => {
  const ctx = campaign();
  house(ctx, ' --set h-2e-stun=OFF --set H-2E-ORDER=initiative');
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'H-2E-STUN': false, 'H-2E-ORDER': 'initiative' } });
  const list = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(list, /Changed\. Every revised-2e request of this campaign is resolved with these/);
  assert.match(list, /<b>H-2E-STUN<\/b>: <b>off<\/b> \(default on\) \[on\]\(!psi house --system revised-2e --set H-2E-STUN=on\)/);
  const options = { 'H-2E-STUN': false, 'H-2E-ORDER': 'initiative' };
  assert.deepEqual(plain(attackAndDefend(ctx).body.params.options), options);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.options), options);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round --pay-none' });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round');
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.options), options);
  // The question before a round's end, and the round its button ends, carry them too.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  const buttons = askedToClose(ctx);
  assert.deepEqual(plain(requests(ctx.sb).filter((r) => r.body.method === 'exchange.round_end_choices').at(-1).body.params.options), options);
  ctx.sb.chat({ playerid: GM, content: buttons['Fenka pays 10 PSPs'] });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params), { system: 'revised-2e', combatants: lastRequest(ctx.sb).body.params.combatants, choices: { [ctx.fenka.id]: { close: true } }, options });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest --hours 8' });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.options), options);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params), { system: 'revised-2e', options });
  // Another system's requests carry none of them.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create --system power-pool' });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params), { system: 'power-pool' });
  ctx.sb.chat({ playerid: GM, content: '!psi config' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /House rules of revised-2e \(<code>!psi house<\/code>\): H-2E-STUN=off, H-2E-ORDER=initiative/);
});

test('a house rule or value the companion does not know changes nothing, and says what it takes', () => {
  const ctx = campaign();
  house(ctx, ' --set H-2E-STUN=off');
  house(ctx, ' --set H-2E-ORDER=random --set H-2E-STUN=on');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Nothing was changed: H-2E-ORDER takes listed or initiative, not "random"\./);
  house(ctx, ' --set H-2E-NOPE=on --default H-2E-STUN');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Nothing was changed: H-2E-NOPE is not a house rule of revised-2e\./);
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'H-2E-STUN': false } });
});

test('--default puts a rule back (ALL: every rule), and a value equal to the default is not kept', () => {
  const ctx = campaign();
  house(ctx, ' --set H-2E-STUN=off --set H-2E-ORDER=initiative');
  house(ctx, ' --default H-2E-STUN');
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'H-2E-ORDER': 'initiative' } });
  house(ctx, ' --set H-2E-ORDER=listed');
  assert.deepEqual(houseState(ctx), {});
  assert.equal(attackAndDefend(ctx).body.params.options, undefined);
  house(ctx, ' --set H-2E-STUN=no --set H-2E-ORDER=initiative');
  house(ctx, ' --default all');
  assert.deepEqual(houseState(ctx), {});
});

test('a stored rule this companion no longer knows is listed with a button to clear it, and its refusal points to !psi house', () => {
  const ctx = campaign();
  house(ctx, ' --set H-2E-STUN=off --set H-2E-ORDER=initiative');
  // A companion without H-2E-ORDER.
  house(ctx, '', [HOUSE_RULES[0]]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Set here but unknown to this companion \(its requests are refused until you clear them\): H-2E-ORDER \[clear\]\(!psi house --system revised-2e --default H-2E-ORDER\)/);
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/options/H-2E-ORDER', message: 'unknown house rule; known: ["H-2E-STUN"]' }] } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /House rule H-2E-ORDER: unknown house rule; known: H-2E-STUN\.<br>The campaign's house rules are sent as <code>options<\/code>: <code>!psi house<\/code> shows them, and <code>--default RULE<\/code> clears one\./);
  house(ctx, ' --default H-2E-ORDER', [HOUSE_RULES[0]]);
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'H-2E-STUN': false } });
});

test('a change of the house rules leaves the current encounter as it was created, and says so', () => {
  const ctx = encounterWithTwo();
  house(ctx, ' --set H-2E-STUN=off');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The current encounter keeps the house rules it was created with; a new one takes these\./);
  house(ctx, ' --system power-pool', [{ id: 'H-PP-NO-POOL', text: 'No pool.', default: true, choices: [true, false] }]);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /current encounter/);
  assert.equal(requests(ctx.sb).at(-1).body.params.system, 'power-pool');
});

test('the help handout lists !psi house', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.match(handout.get('notes'), /<code>!psi house<\/code> \(GM\): the house rules of the campaign's system.*<code>--set H-2E-STUN=off<\/code> switches one/);
});

test('a rule that takes a run of numbers gets one button that asks for the number, and is checked against the range', () => {
  const ctx = campaign();
  const cap = { id: 'H-CS-PEN-CAP', text: 'Penetration stops after this many extra dice.', default: 20, choices: Array.from({ length: 101 }, (_, i) => i) };
  const rules = [{ id: 'H-CS-WAVE-ROUND', text: 'Waves.', default: true, choices: [true, false] }, cap];
  house(ctx, ' --system combat-strength', rules);
  const list = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(list, /<b>H-CS-PEN-CAP<\/b>: 20 \(default\) \[set\]\(!psi house --system combat-strength --set H-CS-PEN-CAP=\?\{H-CS-PEN-CAP: 0 to 100\|20\}\)<br>/);
  assert.ok(list.length < 1000, `one button, not a hundred (${list.length} characters)`);
  house(ctx, ' --system combat-strength --set H-CS-PEN-CAP=101', rules);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Nothing was changed: H-CS-PEN-CAP takes a whole number from 0 to 100, not "101"\./);
  house(ctx, ' --system combat-strength --set H-CS-PEN-CAP=5', rules);
  assert.deepEqual(houseState(ctx), { 'combat-strength': { 'H-CS-PEN-CAP': 5 } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>H-CS-PEN-CAP<\/b>: <b>5<\/b> \(default 20\) \[set\]\(!psi house --system combat-strength --set H-CS-PEN-CAP=\?\{H-CS-PEN-CAP: 0 to 100\|5\}\)/);
  // A stored value the companion no longer takes is named as such.
  house(ctx, ' --system combat-strength', [rules[0], { ...cap, choices: Array.from({ length: 4 }, (_, i) => i) }]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>H-CS-PEN-CAP<\/b>: <b>5<\/b> \(default 20, which this companion does not take \(it takes 0 or 1 or 2 or 3\)\)/);
});

test('!psi house: a run of seven whole numbers asks for the number; six, a run with a gap or with a word get a button each; a value changed to another is a change; a rule without choices, an odd id or value get no button', () => {
  const ctx = campaign();
  const rule = (id, choices) => ({ id, text: id, default: choices[0], choices });
  const rules = [rule('R-SEVEN', [0, 1, 2, 3, 4, 5, 6]), rule('R-SIX', [0, 1, 2, 3, 4, 5]), rule('R-GAP', [0, 1, 2, 3, 4, 5, 7]), rule('R-WORD', [0, 1, 2, 3, 4, 5, 6, 'off'])];
  house(ctx, '', rules);
  const list = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(list, /<b>R-SEVEN<\/b>: 0 \(default\) \[set\]\(!psi house --system revised-2e --set R-SEVEN=\?\{R-SEVEN: 0 to 6\|0\}\)<br>/);
  ['R-SIX', 'R-GAP', 'R-WORD'].forEach((id) => assert.match(list, new RegExp(`<b>${id}</b>: 0 \\(default\\) \\[1\\]\\(!psi house --system revised-2e --set ${id}=1\\) \\[2\\]`), id));
  // A value changed to another that is not the default either is a change.
  house(ctx, ' --set R-SEVEN=3', rules);
  house(ctx, ' --set R-SEVEN=5', rules);
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'R-SEVEN': 5 } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Changed\. /);
  // A rule without choices is none; an id or a value that cannot stand in a command gets no button.
  house(ctx, '', [rule('R-NONE', []), rule('R(ODD)', [true, false]), rule('R-TEXT', ['plain', 'a)b'])]);
  const odd = whispersTo(ctx.sb, 'gm').at(-1);
  assert.doesNotMatch(odd, /R-NONE/);
  assert.doesNotMatch(odd, /--set R\(ODD\)/);
  assert.doesNotMatch(odd, /--set R-TEXT=a\)b/);
});

test('!psi house: yes and no switch a rule, a choice is named in any case; the campaign\'s system is asked by default; a rule id that cannot stand in a command is refused; house rules that are no object count as none; a late answer to a read shows the rules', () => {
  const ctx = campaign();
  ctx.sb.state.Mindscape.config.house = { 'revised-2e': 'junk' };
  attack(ctx);
  assert.equal(lastRequest(ctx.sb).body.params.options, undefined);
  house(ctx, ' --set H-2E-STUN = no --set H-2E-ORDER=INITIATIVE');
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Mindscape request/.test(w) && /house rules/.test(w)), /change the house rules of revised-2e/);
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'H-2E-STUN': false, 'H-2E-ORDER': 'initiative' } });
  house(ctx, ' --set H-2E-STUN=yes');
  assert.deepEqual(houseState(ctx), { 'revised-2e': { 'H-2E-ORDER': 'initiative' } });
  // An encounter of another system is none of this change's business.
  const { encounter } = ctx.sb.state.Mindscape;
  ctx.sb.state.Mindscape.encounter = { id: 'enc-1', system: 'power-pool', name: 'x', revision: 1, combatants: {} };
  house(ctx, ' --set H-2E-STUN=off');
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /current encounter keeps/);
  ctx.sb.state.Mindscape.encounter = encounter;
  // Another system's rules are kept beside these; a stored rule unknown here is cleared in any case.
  house(ctx, ' --system combat-strength --set H-2E-ORDER=initiative');
  assert.deepEqual(Object.keys(houseState(ctx)).sort(), ['combat-strength', 'revised-2e']);
  ctx.sb.state.Mindscape.config.house['revised-2e']['h-old'] = 1;
  house(ctx, ' --default h-old');
  assert.ok(!('h-old' in houseState(ctx)['revised-2e']));
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: '!psi house --set H(2)=on' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--set wants RULE=VALUE, as H-2E-STUN=off \(got "H\(2\)=on"\)\. Nothing was changed\./);
  ctx.sb.chat({ playerid: GM, content: '!psi house --default H(2)' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--default wants a rule id, as H-2E-STUN, or ALL\. Nothing was changed\./);
  assert.equal(requests(ctx.sb).length, sent);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: GM, content: '!psi house' });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params), { system: 'power-pool' });
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /Mindscape request/.test(w)).at(-1), /read the house rules of power-pool/);
  // Only reading: a late answer shows the rules as ever.
  const read = lastRequest(ctx.sb);
  ctx.sb.advance(31000);
  answer(ctx, read.id, { jsonrpc: '2.0', id: read.id, result: { system: 'power-pool', house_rules: HOUSE_RULES } });
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /came late/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>H-2E-STUN<\/b>: on \(default\)/);
});

test('a late answer about the house rules changes nothing and says so; a rule both set and put back is refused', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi house --set H-2E-STUN=off' });
  const req = lastRequest(ctx.sb);
  ctx.sb.advance(31000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /A late answer only shows the house rules: any change it carried is not made\./);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { system: 'revised-2e', house_rules: HOUSE_RULES } });
  assert.deepEqual(houseState(ctx), {});
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /This answer came late, so the changes were not made: repeat them if you still want them\.<br><b>H-2E-STUN<\/b>: on \(default\)/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/was applied/.test(w)));
  ctx.sb.chat({ playerid: GM, content: '!psi house --set H-2E-STUN=off --default h-2e-stun' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /H-2E-STUN is both --set and --default: say one\. Nothing was changed\./);
  assert.equal(requests(ctx.sb).length, 1);
  // Putting back a rule and setting it again to the value it has is no change.
  house(ctx, ' --set H-2E-STUN=off');
  house(ctx, ' --default H-2E-ORDER --set H-2E-STUN=off');
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /Changed/);
});

test('the companion listing no house rules is said in words', () => {
  const ctx = campaign();
  house(ctx, '', []);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The companion lists no house rules for revised-2e\./);
});

// ------------------------------------------------ power-pool: psionic control

const underControl = () => psionicControl(campaign());

const refOf = (combatant) => combatant.data.id;

test('power-pool: an attack on a creature under psionic control strikes its controller, whose owner chooses the defense; its puppets go along', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const asked = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(asked, /Ogre attacks the mind of <b>Fenka<\/b>, whom <b>Ulcen of Tyr<\/b> controls: the attack strikes Ulcen of Tyr, who chooses the defense:/);
  assert.ok(whispersTo(ctx.sb, 'Bob').every((w) => !/defend!/.test(w)), 'the puppet does not choose');
  const xid = /--req ([A-Za-z0-9]+)/.exec(asked)[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /only the controller of Ulcen of Tyr or the GM may choose this defense/);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode pinnacle-of-will` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  const p = req.body.params;
  assert.deepEqual([refOf(p.attacker), refOf(p.defender), refOf(p.controller)], [ctx.tokens.ogre.id, ctx.fenka.id, ctx.ulcen.id]);
  assert.deepEqual(p.puppets.map(refOf), [ctx.thrall.id], 'Fenka is in already; the thrall goes along');
  assert.deepEqual(plain(p.defense), { mode: 'pinnacle-of-will' });
  // The ogre won: Ulcen is controlled and his control ends; the answer frees both.
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: {
    system: 'power-pool', outcome: 'attacker', summary: 'Ogre overwhelms Ulcen of Tyr.', rolls: [], events: [],
    updates: [
      { character_id: ctx.ulcen.id, attributes: { psi_controlled_by: { current: ctx.tokens.ogre.id }, psi_controlling: { current: '[]' } } },
      { character_id: ctx.fenka.id, attributes: { psi_controlled_by: { current: '' } } },
      { character_id: ctx.thrall.id, attributes: { psi_controlled_by: { current: '' } } },
    ] } });
  assert.equal(valueOf(ctx, ctx.thrall.id, 'psi_controlled_by'), '');
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), '');
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused/.test(w)));
});

test('power-pool: odds of an attack on a puppet are the odds against its controller; the GM may fix the controller\'s defense at once', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  const odds = lastRequest(ctx.sb);
  assert.equal(odds.body.method, 'exchange.odds');
  assert.equal(refOf(odds.body.params.controller), ctx.ulcen.id);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  assert.equal(refOf(req.body.params.controller), ctx.ulcen.id);
});

test('power-pool: with a generic mapping, control is read as the companion reads it: a filled psi_controlled_by wins over the mapped attribute, which counts when it is empty', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr controlled_by=Puppeteer --attr hp=HP' });
  // Fenka's mapped attribute names nobody here; her psi_controlled_by (Ulcen) is what the companion reads.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'Puppeteer', current: '-Mnobody', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  let req = lastRequest(ctx.sb);
  assert.equal(req.body.params.defender.adapter, 'roll20.generic');
  assert.equal(req.body.params.controller.data.character.id, ctx.ulcen.id);
  // Emptied, psi_controlled_by gives way to the mapped attribute.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.fenka.id, 'Puppeteer').set({ current: ctx.ulcen.id });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  req = lastRequest(ctx.sb);
  assert.equal(req.body.params.controller.data.character.id, ctx.ulcen.id);
  // The mapped attribute naming nobody here, with psi_controlled_by empty: the attack stops.
  ctx.sb.attribute(ctx.fenka.id, 'Puppeteer').set({ current: '-Mnobody' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.equal(requests(ctx.sb).length, sent);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka is under the psionic control of "-Mnobody".*Put the controller's ref right in its Puppeteer, or clear it\./);
  // Kept in the attribute's maximum: the message says so.
  ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr controlled_by=Puppeteer|max --attr hp=HP' });
  ctx.sb.attribute(ctx.fenka.id, 'Puppeteer').set({ current: '', max: '-Mnobody' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.equal(requests(ctx.sb).length, sent);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Put the controller's ref right in its Puppeteer \(max\), or clear it\./);
});

test('power-pool: with a generic mapping, a psi_controlled_by of only spaces names no controller (to_text stripped): the mapped attribute counts, as the companion reads it', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr controlled_by=Puppeteer --attr hp=HP' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '   ' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'Puppeteer', current: ctx.ulcen.id, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.equal(lastRequest(ctx.sb).body.params.controller.data.character.id, ctx.ulcen.id);
  // The mapped attribute naming nobody here: the attack stops, naming it, not psi_controlled_by.
  ctx.sb.attribute(ctx.fenka.id, 'Puppeteer').set({ current: '-Mnobody' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.equal(requests(ctx.sb).length, sent);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka is under the psionic control of "-Mnobody".*Put the controller's ref right in its Puppeteer, or clear it\./);
});

test('power-pool: with a generic mapping, a psi_controlled_by of U+001C and U+0085 names no controller, as the companion strips them (Python str.strip): the mapped attribute counts', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr controlled_by=Puppeteer --attr hp=HP' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '\u001c\u0085' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'Puppeteer', current: `\u0085${ctx.ulcen.id}\u001d`, max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.equal(lastRequest(ctx.sb).body.params.controller.data.character.id, ctx.ulcen.id);
});

test('power-pool: a controller that is no character or token here stops the attack with the reason; one that attacks its own puppet goes to the companion at once', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '-Mnobody' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Fenka is under the psionic control of "-Mnobody", which is no character or token here: an attack on it strikes its controller \(power-pool\)\. Put the controller's ref right in its psi_controlled_by, or clear it\. Nothing was sent\./);
  assert.equal(requests(ctx.sb).length, 0);
  // Ulcen attacks Fenka, whom he controls: the companion answers with its rule.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: ctx.ulcen.id });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_attacks', current: 'mental-stab', max: '' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  assert.equal(req.body.params.defense, null);
  assert.equal(req.body.params.controller, undefined, 'the controller is the attacker itself');
});

test('power-pool: when the control of the target changes before the defense, nothing is sent and both sides are told to attack again', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Alice').at(-1))[1];
  const sent = requests(ctx.sb).length;
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
  assert.equal(requests(ctx.sb).length, sent);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /the psionic control of Fenka changed since the attack was declared, so another mind answers it now\. Nothing was sent: attack again\./);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /there is no attack waiting/);
});

test('outside power-pool a psi_controlled_by on a sheet changes nothing: the defender answers for itself', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_controlled_by', current: ctx.ulcen.id, max: '' });
  const req = attackAndDefend(ctx);
  assert.equal(req.body.params.controller, undefined);
  assert.equal(req.body.params.puppets, undefined);
});

// ------------------------------------- power-pool encounter choices (declare)

// A power-pool encounter of Ulcen, Fenka and the ogre (control as in psionicControl).
const poolEncounter = () => {
  const ctx = psionicControl(campaign());
  return encounterOf(ctx, [ctx.tokens.ulcen, ctx.tokens.fenka, ctx.tokens.ogre]);
};

const declare = (ctx, playerid, token, options) => {
  ctx.sb.chat({ playerid, selected: [token.id], content: `!psi encounter declare${options}` });
  return lastRequest(ctx.sb);
};

test('a declaration\'s targets and allies are checked as !psi attack checks them, before anything is sent: several --target outside power-pool, one named twice or oneself, --ally without a defense that draws allies in, an ally named twice', () => {
  const check = (ctx, playerid, token, options, why) => {
    const before = requests(ctx.sb).length;
    ctx.sb.chat({ playerid, selected: [token.id], content: `!psi encounter declare${options}` });
    assert.match((playerid === GM ? whispersTo(ctx.sb, 'gm') : whispersTo(ctx.sb, playerid === ALICE ? 'Alice' : 'Bob')).at(-1), why, options);
    assert.equal(requests(ctx.sb).length, before, `${options} was sent`);
  };
  // revised-2e strikes one target: two would have lost the first unsaid.
  const r2e = campaign();
  encounterOf(r2e, [r2e.tokens.ulcen, r2e.tokens.fenka, r2e.tokens.ogre]);
  const t = r2e.tokens;
  check(r2e, ALICE, t.ulcen, ` --attack ego-whip --target ${t.fenka.id} --target ${t.ogre.id}`, /revised-2e attacks one --target at a time \(only power-pool's psionic wave strikes several\)\./);
  check(r2e, ALICE, t.ulcen, ` --attack ego-whip --target ${t.ulcen.id}`, /a mind cannot attack itself\./);
  // The same words as the attack's own refusal.
  r2e.sb.chat({ playerid: ALICE, selected: [t.ulcen.id], content: `!psi attack --mode ego-whip --target ${t.fenka.id} --target ${t.ogre.id}` });
  assert.match(whispersTo(r2e.sb, 'Alice').at(-1), /revised-2e attacks one --target at a time/);
  const pool = poolEncounter();
  const p = pool.tokens;
  check(pool, GM, p.ogre, ` --attack psionic-wave --target ${p.fenka.id} --target ${p.fenka.id}`, /name each --target once\./);
  check(pool, GM, p.ogre, ` --attack mental-stab --target ${p.fenka.id} --target ${p.ulcen.id}`, /Mental Stab strikes one --target \(only Psionic Wave strikes several\)\. Nothing was sent\./);
  // --ally with no defense, or another one, that draws allies in: the companion would refuse it.
  check(pool, BOB, p.fenka, ` --defense none --ally ${p.ogre.id}`,
    /--ally goes with --defense imagination-swarm: only Imagination Swarm draws allies into the defense, not no defense\. Nothing was sent\./);
  check(pool, BOB, p.fenka, ` --defense blank-mind --ally ${p.ogre.id}`, /not Blank Mind\. Nothing was sent\./);
  check(pool, BOB, p.fenka, ` --defense imagination-swarm --ally ${p.ogre.id} --ally ${p.ogre.id}`, /Ogre is named twice: it cannot be drawn into the defense as an ally\. Nothing was sent\./);
  check(pool, BOB, p.fenka, ` --defense imagination-swarm --ally ${p.fenka.id}`, /Fenka declares this defense: it cannot be drawn into the defense as an ally\./);
  // A wave at two minds, and a swarm drawing one ally in, still go.
  pool.sb.chat({ playerid: GM, selected: [p.ogre.id], content: `!psi encounter declare --attack psionic-wave --target ${p.fenka.id} --target ${p.ulcen.id}` });
  assert.deepEqual(plain(lastRequest(pool.sb).body.params.choice.attack), { mode: 'psionic-wave', target: pool.fenka.id, targets: [pool.ulcen.id] });
  pool.sb.chat({ playerid: BOB, selected: [p.fenka.id], content: `!psi encounter declare --defense imagination-swarm --ally ${p.ogre.id}` });
  assert.deepEqual(plain(lastRequest(pool.sb).body.params.choice.defense), { mode: 'imagination-swarm', allies: [p.ogre.id] });
});

test('power-pool: a declaration refused at /combatants/<a combatant\'s id>/… names that fighter\'s field, not "Fenka\'s fighter …"', () => {
  const ctx = poolEncounter();
  const req = declare(ctx, GM, ctx.tokens.ogre, ` --attack mental-stab --target ${ctx.tokens.fenka.id}`);
  answer(ctx, req.id, schemaRefusal(req.id, [[`/combatants/${ctx.fenka.id}/controlled_by`, 'Fenka is under Ulcen of Tyr\'s control here, but Ulcen of Tyr\'s controlling does not list it']]));
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(told, /<br>Fenka&#39;s controlled by: Fenka is under Ulcen of Tyr&#39;s control here, but Ulcen of Tyr&#39;s controlling does not list it\.<br><span/);
  assert.doesNotMatch(told, /fighter/);
});

test('power-pool declare: a psionic wave names several --target, --keep-by says how control is kept, --ally draws allies into a swarm', () => {
  const ctx = poolEncounter();
  const wave = declare(ctx, GM, ctx.tokens.ogre, ` --attack psionic-wave --target ${ctx.tokens.ulcen.id} --target ${ctx.tokens.fenka.id} --keep-by die`);
  assert.equal(wave.body.method, 'encounter.declare');
  assert.deepEqual(plain(wave.body.params.choice), { attack: { mode: 'psionic-wave', target: ctx.ulcen.id, targets: [ctx.fenka.id], keep_by: 'die' } });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Mindscape request/.test(w) && /declares a choice \(hidden\)/.test(w)) || '', /Ogre declares a choice \(hidden\)/);
  const swarm = declare(ctx, ALICE, ctx.tokens.ulcen, ` --defense imagination-swarm --ally ${ctx.tokens.fenka.id}`);
  assert.deepEqual(plain(swarm.body.params.choice), { defense: { mode: 'imagination-swarm', allies: [ctx.fenka.id] } });
  // No defense mode is an object without a mode in power-pool: the pool is still rolled.
  const none = declare(ctx, BOB, ctx.tokens.fenka, ' --defense none');
  assert.deepEqual(plain(none.body.params.choice), { defense: {} });
  const sent = requests(ctx.sb).length;
  declare(ctx, GM, ctx.tokens.ogre, ` --attack mental-stab --target ${ctx.tokens.ulcen.id} --keep-by forever`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--keep-by must be die \(a pool die kept for the control\) or action \(an action each round\)\./);
  declare(ctx, ALICE, ctx.tokens.ulcen, ` --ally ${ctx.tokens.fenka.id}`);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--ally goes with --defense/);
  declare(ctx, ALICE, ctx.tokens.ulcen, ' --defense imagination-swarm --ally -Mnobody');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--ally must be a token of a combatant in the current encounter\./);
  declare(ctx, ALICE, ctx.tokens.ulcen, '');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /declare what\? --attack, --defense, --stance, --close, or in power-pool --pass, --release, --keep, --cannot-perceive, --rest\./);
  assert.equal(requests(ctx.sb).length, sent);
});

test('power-pool encounter: --ally from a wave\'s mind other than the first is refused (allies-first-mind-only): before anything is sent when the view is current, else in the companion\'s words; nothing changes', () => {
  const ctx = swarmCampaign();
  encounterOf(ctx, [ctx.tokens.ulcen, ctx.tokens.fenka, ctx.tokens.ogre, ctx.tokens.porter]);
  const wave = declare(ctx, GM, ctx.tokens.ogre, ` --attack psionic-wave --target ${ctx.tokens.ulcen.id} --target ${ctx.tokens.fenka.id}`);
  answer(ctx, wave.id, { jsonrpc: '2.0', id: wave.id, result: { revision: 5, waiting_for: [ctx.ulcen.id, ctx.fenka.id], updates: [] } });
  // Without a view the companion judges: its refusal says what to do, and nothing is recorded.
  const swarm = declare(ctx, BOB, ctx.tokens.fenka, ` --defense imagination-swarm --ally ${ctx.tokens.porter.id}`);
  assert.deepEqual(plain(swarm.body.params.choice), { defense: { mode: 'imagination-swarm', allies: [ctx.porter.id] } });
  const before = JSON.stringify(ctx.sb.state.Mindscape.encounter);
  refusal(ctx, swarm, 'allies-first-mind-only', 'only Ulcen of Tyr, struck first, draws allies into the defending group of this psionic wave', ctx.fenka.id);
  const said = /Refused: Fenka&#39;s declaration<\/b><br>Only Ulcen of Tyr, struck first, draws allies into the defending group of this psionic wave\.<br>Nothing was recorded\. In a psionic wave only the mind struck first draws allies into the group's defense: declare this defense again without <code>--ally<\/code>/;
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), said);
  assertPlainRefusal(whispersTo(ctx.sb, 'Bob').at(-1), ['allies-first-mind-only']);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), said);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /companion: 4001 allies-first-mind-only<\/span><\/div>$/);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.encounter), before);
  // With the current view (!psi encounter status: struck, the first leading) it is refused here.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  const view = (revision) => ({ id: 'enc-1', phase: 'defense', revision, waiting_for: [ctx.ulcen.id, ctx.fenka.id], struck: [ctx.ulcen.id, ctx.fenka.id],
    combatants: Object.fromEntries([ctx.ulcen.id, ctx.fenka.id, ctx.tokens.ogre.id, ctx.porter.id].map((id) => [id, { id }])) });
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: view(5) });
  const sent = requests(ctx.sb).length;
  declare(ctx, BOB, ctx.tokens.fenka, ` --defense imagination-swarm --ally ${ctx.tokens.porter.id}`);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /in this psionic wave only the mind struck first, Ulcen of Tyr, draws allies into the group's defense: declare the defense of Fenka without --ally\. Nothing was sent\./);
  assert.equal(requests(ctx.sb).length, sent);
  // A mind the wave does not strike is not judged here: the companion answers for it.
  const ogre = declare(ctx, GM, ctx.tokens.ogre, ` --defense imagination-swarm --ally ${ctx.tokens.porter.id}`);
  assert.equal(requests(ctx.sb).length, sent + 1);
  assert.deepEqual(plain(ogre.body.params.choice.defense.allies), [ctx.porter.id]);
  // The first mind draws allies in; the others declare without.
  assert.deepEqual(plain(declare(ctx, ALICE, ctx.tokens.ulcen, ` --defense imagination-swarm --ally ${ctx.tokens.porter.id}`).body.params.choice.defense.allies), [ctx.porter.id]);
  const none = declare(ctx, BOB, ctx.tokens.fenka, ' --defense none');
  assert.deepEqual(plain(none.body.params.choice), { defense: {} });
  // A view the encounter has moved on from checks nothing: the companion judges again.
  answer(ctx, none.id, { jsonrpc: '2.0', id: none.id, result: { revision: 6, waiting_for: [ctx.ulcen.id], updates: [] } });
  const count = requests(ctx.sb).length;
  declare(ctx, BOB, ctx.tokens.fenka, ` --defense imagination-swarm --ally ${ctx.tokens.porter.id}`);
  assert.equal(requests(ctx.sb).length, count + 1);
});

test('power-pool public actions: --pass, --release, --keep --by, --cannot-perceive and --rest apply at once; their write-backs are made', () => {
  const ctx = poolEncounter();
  const cases = [
    [` --release ${ctx.tokens.fenka.id}`, { release: ctx.fenka.id }, 'Ulcen of Tyr lets Fenka go'],
    [` --keep ${ctx.tokens.fenka.id} --by action`, { keep: { target: ctx.fenka.id, by: 'action' } }, 'Ulcen of Tyr keeps Fenka under control by an action each round'],
    [` --cannot-perceive ${ctx.tokens.fenka.id}`, { cannot_perceive: ctx.fenka.id }, 'Ulcen of Tyr can no longer perceive Fenka'],
    [' --pass', { pass: true }, 'Ulcen of Tyr passes this round'],
    [' --rest', { rest: true }, 'Ulcen of Tyr takes a long rest'],
  ];
  let revision = 4;
  for (const [options, choice, said] of cases) {
    const req = declare(ctx, ALICE, ctx.tokens.ulcen, options);
    assert.deepEqual(plain(req.body.params.choice), choice, options);
    assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /Mindscape request/.test(w)).at(-1), new RegExp(said));
    revision += 1;
    answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { revision, waiting_for: [ctx.ulcen.id], updates: [] } });
    assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`${said}: done at once \\(everyone may know it\\)\\. Still to choose: 1\\.`));
  }
  // What the action did, as the companion says it, is told too (made chat-safe).
  const rest = declare(ctx, ALICE, ctx.tokens.ulcen, ' --rest');
  answer(ctx, rest.id, { jsonrpc: '2.0', id: rest.id, result: { revision: 10, waiting_for: [ctx.ulcen.id], updates: [],
    events: [{ type: 'pool-regained', combatant: ctx.ulcen.id, amount: 3 }], summary: 'Ulcen of Tyr takes a long rest. Ulcen of Tyr regains 3 dice (5 in the pool) <b>[[1]]</b>.' } });
  const told = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(told, /takes a long rest: done at once \(everyone may know it\)\. Ulcen of Tyr takes a long rest\. Ulcen of Tyr regains 3 dice \(5 in the pool\)/);
  assert.ok(!told.includes('<b>[[1]]</b>'), told);
  assert.match(told, /Still to choose: 1\.<\/div>$/);
  // A release writes both sheets: the puppet is free, the controller holds nobody.
  const release = declare(ctx, ALICE, ctx.tokens.ulcen, ` --release ${ctx.tokens.fenka.id}`);
  answer(ctx, release.id, { jsonrpc: '2.0', id: release.id, result: { revision: 10, waiting_for: [], updates: [
    { character_id: ctx.fenka.id, attributes: { psi_controlled_by: { current: '' } } },
    { character_id: ctx.ulcen.id, attributes: { psi_controlling: { current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action' }]) } } },
  ] } });
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), '');
  assert.equal(JSON.parse(valueOf(ctx, ctx.ulcen.id, 'psi_controlling')).length, 1);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused/.test(w)));
  // Refusals: --keep without --by, --by alone, a non-member.
  const sent = requests(ctx.sb).length;
  declare(ctx, ALICE, ctx.tokens.ulcen, ` --keep ${ctx.tokens.fenka.id}`);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--keep wants --by die or --by action/);
  declare(ctx, ALICE, ctx.tokens.ulcen, ' --by die');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--by goes with --keep\./);
  declare(ctx, ALICE, ctx.tokens.ulcen, ' --release -Mnobody');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--release must be a token of a combatant in the current encounter\./);
  assert.equal(requests(ctx.sb).length, sent);
});

test('a public action is stored before its write-back: one that misses a sheet holds it, and no refresh takes a sheet while it is on its way', () => {
  const ctx = poolEncounter();
  const release = declare(ctx, ALICE, ctx.tokens.ulcen, ` --release ${ctx.tokens.fenka.id}`);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 0, 'the release would write the sheets after they were read');
  answer(ctx, release.id, { jsonrpc: '2.0', id: release.id, result: { revision: 5, waiting_for: [], updates: [], updates_failed: { error_id: 'e-7' } } });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /The action is stored in the companion, but the companion could not write it to the sheets \(error id <b>e-7<\/b>/);
  assert.deepEqual(held(ctx).sort(), [ctx.ulcen.id, ctx.fenka.id, ctx.tokens.ogre.id].sort());
});

test('power-pool choices are refused in another system\'s encounter; there --defense none stays null', () => {
  const ctx = encounterWithTwo();
  declare(ctx, ALICE, ctx.tokens.ulcen, ' --pass');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--pass is a power-pool choice; this encounter plays revised-2e\./);
  const none = declare(ctx, BOB, ctx.tokens.fenka, ' --defense none');
  assert.deepEqual(plain(none.body.params.choice), { defense: null });
});

test('power-pool: the companion\'s warnings about the controller and the puppets name them; a puppet that is no fighter here is told to the GM', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: ctx.ulcen.id });
  const links = JSON.parse(ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current'));
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify(links.concat([{ id: '-Mgone', kept_by: 'action' }])) });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /psionic control/.test(w)), /Under psionic control in this exchange but no character or token here: -Mgone\. If the control ends, their sheets will not show it\./);
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { system: 'power-pool', outcome: 'defender', summary: 'Rebuffed.', rolls: [], events: [], updates: [],
    warnings: ['/controller: no class level (level-class1..); taken as 1', '/puppets/0: no psi_die attribute; the pool\'s die taken as d8'] } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w));
  assert.match(told, /Ulcen of Tyr: no class level/);
  assert.match(told, /Thrall: no psi_die attribute/);
});

test('a public action waits while the sheets of the encounter are being taken again', () => {
  const ctx = poolEncounter();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  const sent = requests(ctx.sb).length;
  declare(ctx, ALICE, ctx.tokens.ulcen, ` --release ${ctx.tokens.fenka.id}`);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /the sheets of the encounter are being taken again \(encounter\.refresh\) right now; declare this once that is over\./);
  assert.equal(requests(ctx.sb).length, sent);
  // A secret choice goes on: it writes nothing.
  declare(ctx, ALICE, ctx.tokens.ulcen, ` --attack mental-stab --target ${ctx.tokens.fenka.id}`);
  assert.equal(requests(ctx.sb).length, sent + 1);
});

// ------------------------------------------------ power-pool: psionic waves

test('power-pool: a psionic wave at several --target is one exchange; each mind struck chooses its defense with buttons of its own', () => {
  const ctx = underControl();
  // Nobody under control here: Fenka and Ulcen each answer for themselves.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const toBob = whispersTo(ctx.sb, 'Bob').at(-1);
  const toAlice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(toBob, /Ogre strikes the minds of <b>Fenka, Ulcen of Tyr<\/b> at once\. <b>Fenka<\/b>, choose a defense:/);
  assert.match(toAlice, /<b>Ulcen of Tyr<\/b>, choose a defense:.*--for [^ ]+ --mode pinnacle-of-will/);
  const xid = /--req ([A-Za-z0-9]+)/.exec(toBob)[1];
  const sent = requests(ctx.sb).length;
  // Alice may not answer for Fenka; Bob answers for her, and the wave waits for Ulcen.
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only the controller of Fenka or the GM may choose this defense/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /--for must name the mind whose defense this is: one of Fenka, Ulcen of Tyr\./);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Still to choose a defense: Ulcen of Tyr\./);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Fenka has chosen its defense already\./);
  assert.equal(requests(ctx.sb).length, sent);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  const p = req.body.params;
  assert.deepEqual([refOf(p.defender), p.defenders.map(refOf)], [ctx.fenka.id, [ctx.ulcen.id]]);
  assert.deepEqual(plain(p.defense), {});
  assert.deepEqual(plain(p.defenses), { [ctx.ulcen.id]: { mode: 'pinnacle-of-will' } });
  assert.equal(p.attack.mode, 'psionic-wave');
});

test('power-pool: a psionic wave is checked once, at all its targets as its exchange strikes them; pool dice beyond the attacker\'s pool (pool-dice-exceed-pool naming the attacker) ask none of its minds', () => {
  const ctx = psionicControl(campaign({ checkByHand: true }));
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  const wave = (extra = '') => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave${extra}` });
    return lastRequest(ctx.sb);
  };
  const check = wave(' --dice 5');
  assert.equal(check.body.method, 'exchange.odds');
  const p = check.body.params;
  assert.deepEqual([refOf(p.defender), p.defenders.map(refOf), p.defense, p.defenses], [ctx.fenka.id, [ctx.ulcen.id], null, undefined]);
  answer(ctx, check.id, rulesRefusal(check, 'pool-dice-exceed-pool', 'Ogre has 3 dice to roll, not 5', { combatant: refOf(p.attacker) }));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Psionic Wave: Ogre vs\. Fenka, Ulcen of Tyr<\/b><br>Ogre has 3 dice to roll, not 5\. The attack was not made: nobody was asked for a defense\./);
  assert.deepEqual(buttonsSent(ctx.sb), []);
  assert.deepEqual(whispersTo(ctx.sb, 'Bob').concat(whispersTo(ctx.sb, 'Alice')), [], 'no mind struck learns of the wave');
  // Allowed, every mind struck is asked, each with buttons of its own.
  const allowed = wave();
  assert.equal(requests(ctx.sb).length, 2, 'one check for the whole wave');
  answer(ctx, allowed.id, checkAllowed(allowed.id));
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Fenka<\/b>, choose a defense:/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /<b>Ulcen of Tyr<\/b>, choose a defense:/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Waiting for Fenka, Ulcen of Tyr to choose a defense\./);
});

test('power-pool: the check of a wave is described to the GM with all its targets and the minds to be asked, and its sheet warnings name the fighter where the wave sent it', () => {
  const ctx = psionicControl(campaign({ checkByHand: true }));
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const check = lastRequest(ctx.sb);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes(check.id)), /check of Psionic Wave by Ogre against Fenka, Ulcen of Tyr, before Fenka, Ulcen of Tyr are asked for a defense/);
  const allowed = checkAllowed(check.id);
  allowed.result.warnings = ['/defenders/0: psi_die read as 6'];
  answer(ctx, check.id, allowed);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w)) || '', /Ulcen of Tyr: psi_die read as 6/);
});

test('power-pool: the player of a puppet cannot settle, with --defense, the defense of the controller an attack on it strikes', () => {
  const ctx = underControl();
  const imp = ctx.sb.add('character', { name: 'Imp', controlledby: BOB });
  [['psi_pool', '2', '2'], ['psi_die', '6'], ['psi_psionic', '1'], ['psi_attacks', 'Mental Stab'], ['HP', '7', '7']]
    .forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: imp.id, name, current, max }));
  const token = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: imp.id, name: 'Imp', bar1_link: ctx.sb.attribute(imp.id, 'HP').id });
  ctx.sb.chat({ playerid: BOB, selected: [token.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense none` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /--defense settles the defense of Ulcen of Tyr, which only its controllers or the GM choose/);
  assert.equal(requests(ctx.sb).length, 0);
});

test('an attack the GM makes that the companion refuses for the attacker\'s sake is told to the GM once', () => {
  const ctx = campaign({ checkByHand: true });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 3 --range short` });
  const check = lastRequest(ctx.sb);
  answer(ctx, check.id, rulesRefusal(check, 'not-enough-psp', 'Ulcen of Tyr declares 9 PSPs of ego-whip but holds 4'));
  assert.equal(ctx.sb.chats.filter((c) => /Refused: Ego Whip/.test(c.input)).length, 1);
});

test('power-pool: a wave at two creatures one mind controls asks that mind once and sends it as their controller', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.thrall.id} --mode psionic-wave` });
  assert.equal(whispersTo(ctx.sb, 'Alice').filter((w) => /defend!/.test(w)).length, 1);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Alice').at(-1))[1];
  // With one mind to ask, --for may be left out.
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([refOf(p.defender), p.defenders.map(refOf), refOf(p.controller)], [ctx.fenka.id, [ctx.thrall.id], ctx.ulcen.id]);
  assert.deepEqual(plain(p.defense), { mode: 'pinnacle-of-will' });
  assert.equal(p.defenses, undefined);
});

test('several --target: refused outside power-pool and with --defense; odds of a wave send every target', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ogre.id} --mode ego-whip` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /revised-2e attacks one --target at a time \(only power-pool's psionic wave strikes several\)\./);
  const pool = underControl();
  pool.sb.chat({ playerid: GM, selected: [pool.tokens.ogre.id], content: `!psi attack --target ${pool.tokens.fenka.id} --target ${pool.tokens.ulcen.id} --mode psionic-wave --defense none` });
  assert.match(whispersTo(pool.sb, 'gm').at(-1), /with several targets each mind struck chooses its own defense: leave out --defense\. Nothing was sent\./);
  for (const option of ['--defense-dice 2', '--sacrifice 3']) {
    pool.sb.chat({ playerid: GM, selected: [pool.tokens.ogre.id], content: `!psi attack --target ${pool.tokens.fenka.id} --target ${pool.tokens.ulcen.id} --mode psionic-wave ${option}` });
    assert.match(whispersTo(pool.sb, 'gm').at(-1), new RegExp(`leave out ${option.split(' ')[0]}\\. Nothing was sent\\.`));
  }
  pool.sb.chat({ playerid: GM, selected: [pool.tokens.ogre.id], content: `!psi attack --target ${pool.tokens.fenka.id} --target ${pool.tokens.fenka.id} --mode psionic-wave` });
  assert.match(whispersTo(pool.sb, 'gm').at(-1), /name each --target once\./);
  assert.equal(requests(pool.sb).length, 0);
  pool.sb.chat({ playerid: GM, selected: [pool.tokens.ogre.id], content: `!psi odds --target ${pool.tokens.fenka.id} --target ${pool.thrall.id} --mode psionic-wave` });
  const odds = lastRequest(pool.sb).body.params;
  assert.deepEqual([refOf(odds.defender), odds.defenders.map(refOf), refOf(odds.controller)], [pool.fenka.id, [pool.thrall.id], pool.ulcen.id]);
});

test('power-pool: a player\'s odds for a defense assume it known by every mind struck that the player does not control (the controller struck in its puppet\'s place too), and say whose', () => {
  const ctx = underControl();
  // Bob controls Fenka (Ulcen's puppet) and, here, the ogre; Alice controls Ulcen.
  ctx.sb.objects.find((o) => o.id === ctx.ogre.id).set({ controlledby: BOB });
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense pinnacle-of-will` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.odds');
  const p = req.body.params;
  assert.deepEqual([refOf(p.defender), refOf(p.controller)], [ctx.fenka.id, ctx.ulcen.id]);
  // Fenka is Bob's own: the truth about her; Ulcen, struck in her place, is Alice's.
  assert.deepEqual(plain(p.assume_known), ['/controller']);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { outcomes: { attacker: 0.25, defender: 0.75 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 } } });
  // power-pool's defenses have no cost: nothing to pay, and the answer says only that.
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<i>As if Ulcen of Tyr knew Pinnacle of Will: which defenses a mind knows only its controllers and the GM see\.<\/i>/);
});

test('power-pool: a player\'s odds with --ally assume the defense known by an ally the player does not control; the GM\'s odds assume nothing', () => {
  const ctx = seerCampaign();
  ctx.sb.objects.find((o) => o.id === ctx.ogre.id).set({ controlledby: BOB });
  const odds = (playerid) => {
    ctx.sb.chat({ playerid, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense imagination-swarm --ally ${ctx.tokens.seer.id}` });
    return lastRequest(ctx.sb).body.params;
  };
  const bobs = odds(BOB);
  assert.deepEqual(bobs.allies.map(refOf), [ctx.seer.id]);
  assert.deepEqual(plain(bobs.assume_known), ['/allies/0'], 'Seer is Alice\'s');
  assert.equal(odds(GM).assume_known, undefined);
});

test('power-pool: odds and a psionic wave at a creature whose psi_controlled_by names its controller\'s token are refused with the ref to write, before anything is sent', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: ctx.tokens.ulcen.id });
  const refused = new RegExp(`Fenka's psi_controlled_by names its controller Ulcen of Tyr as "${ctx.tokens.ulcen.id}", but the companion knows that fighter as "${ctx.ulcen.id}"`);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), refused);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.thrall.id} --target ${ctx.tokens.fenka.id} --mode psionic-wave` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), refused);
  assert.equal(requests(ctx.sb).length, 0);
});

test('power-pool: when the control of a puppet changes before its controller defends, an attacker\'s player is told to attack again too, once when it also chose the defense', () => {
  for (const [attacking, also] of [[BOB, 'Bob'], [ALICE, null]]) {
    const ctx = underControl();
    const imp = ctx.sb.add('character', { name: 'Imp', controlledby: attacking });
    [['psi_pool', '2', '2'], ['psi_die', '6'], ['psi_psionic', '1'], ['psi_attacks', 'Mental Stab'], ['HP', '7', '7']]
      .forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: imp.id, name, current, max }));
    const token = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: imp.id, name: 'Imp', bar1_link: ctx.sb.attribute(imp.id, 'HP').id });
    ctx.sb.chat({ playerid: attacking, selected: [token.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
    const xid = reqOf(whispersTo(ctx.sb, 'Alice').filter((w) => /defend!/.test(w)).at(-1));
    ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
    ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
    const changed = (name) => whispersTo(ctx.sb, name).filter((w) => /the psionic control of Fenka changed since the attack was declared/.test(w)).length;
    assert.equal(changed('Alice'), 1);
    if (also) assert.equal(changed(also), 1, also);
  }
});

test('power-pool !psi join: a creature every player may control joined by a player tells that player; in a wave whose first target is a puppet it joins the group of the controller struck first', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  ctx.sb.objects.find((o) => o.id === ctx.seer.id).set({ controlledby: 'all' });
  ctx.sb.objects.find((o) => o.id === ctx.ulcen.id).set({ controlledby: '' });
  join(ctx, ALICE, ctx.tokens.seer, xid);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /joined<\/b><br><b>Seer<\/b> joins the defense of Fenka/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.thrall.id} --target ${ctx.tokens.fenka.id} --mode psionic-wave` });
  const wave = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.match(join(ctx, GM, ctx.tokens.seer, wave), /<b>Seer<\/b> joins the defense of the group of Ulcen of Tyr \(struck first by the psionic wave of Ogre\)/);
});

// Fenka (Bob's, free) with a psionic wave, the thrall Ulcen's and a goblin the ogre's:
// two controllers struck in their puppets' places. Returns the goblin.
const twoControllers = (ctx) => {
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_pool', current: '0', max: '2' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_controlled_by', current: ctx.tokens.ogre.id, max: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psionic', current: '1', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_attacks', current: 'Psionic Wave', max: '' });
  return goblin;
};

test('power-pool waves: when control changes before the last choice, made by the attacker\'s own player, that player is told once', () => {
  const ctx = underControl();
  const goblin = twoControllers(ctx);
  ctx.sb.objects.find((o) => o.id === ctx.ogre.id).set({ controlledby: BOB });
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi attack --target ${ctx.thrall.id} --target ${goblin.id} --mode psionic-wave` });
  const xid = reqOf(whispersTo(ctx.sb, 'Alice').at(-1));
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode none` });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.tokens.ogre.id} --mode none` });
  assert.equal(whispersTo(ctx.sb, 'Bob').filter((w) => /the psionic control of a target changed/.test(w)).length, 1);
});

test('power-pool: a player\'s odds for a wave assume the defense known by each controller struck in its puppet\'s place that the player does not control', () => {
  const ctx = underControl();
  const goblin = twoControllers(ctx);
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi odds --target ${ctx.thrall.id} --target ${goblin.id} --mode psionic-wave --defense pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.odds');
  assert.deepEqual(p.controllers.map(refOf), [ctx.ulcen.id, ctx.tokens.ogre.id]);
  assert.ok(p.assume_known.includes('/controllers/0') && p.assume_known.includes('/controllers/1'), plain(p.assume_known).join(' '));
});

test('power-pool waves: a mode that strikes one target is refused with several; an own puppet among the targets goes to the companion at once; a wave refused tells every chooser', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode mental-stab` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Mental Stab strikes one --target \(only Psionic Wave strikes several\)\. Nothing was sent\./);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode mental-stab` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Mental Stab strikes one --target/);
  assert.equal(requests(ctx.sb).length, 0);
  // Ulcen's wave at Fenka (his own puppet) and the ogre: nobody is asked.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ogre.id} --mode psionic-wave` });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/defend!/.test(w)));
  // A wave the companion refuses for something other than a defense chosen (allies, a mode
  // not known, a mind unaware: chooseAgain): the GM gets the detail, each chooser that it failed.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error: { code: 4001, message: 'The rules forbid it', data: { rule: 'no-die-to-dedicate', detail: 'Ogre has no die in its pool to keep control with' } } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ogre has no die in its pool/);
  for (const player of ['Alice', 'Bob']) {
    assert.match(whispersTo(ctx.sb, player).at(-1), /Refused: Ogre vs\. Fenka, Ulcen of Tyr<\/b><br>The exchange failed; the GM has been told why\./, player);
    assert.ok(whispersTo(ctx.sb, player).every((w) => !/no die/.test(w)), player);
  }
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {}, 'the attack is not kept');
});

test('power-pool waves: a wave refused tells a GM who chooses for one of its minds once, with the detail, and no "exchange failed" beside it', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  // The GM is the ogre's controller by name, as a player would be.
  ctx.ogre.set({ controlledby: GM });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ogre.id} --mode psionic-wave` });
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${xid} --for ${ctx.tokens.ogre.id} --mode none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  const from = whispersTo(ctx.sb, 'gm').length;
  refusal(ctx, req, 'no-die-to-dedicate', 'Ulcen of Tyr has no die in its pool to keep control with');
  const toGM = whispersTo(ctx.sb, 'gm').slice(from);
  assert.equal(toGM.length, 1, toGM.join('\n'));
  assert.match(toGM[0], /Ulcen of Tyr has no die in its pool to keep control with/);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /The exchange failed; the GM has been told why\./);
});

test('power-pool waves: control that changes before the last choice stops the wave; two controllers go as controllers; an attack older than an hour is forgotten', () => {
  const ctx = underControl();
  // The thrall is Ulcen's; a goblin is the ogre's: two controllers.
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_pool', current: '0', max: '2' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_controlled_by', current: ctx.tokens.ogre.id, max: '' });
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: '!psi config --system power-pool' });
  // Fenka (Bob's), free now, attacks both puppets with a wave.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psionic', current: '1', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_attacks', current: 'Psionic Wave', max: '' });
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi attack --target ${ctx.thrall.id} --target ${goblin.id} --mode psionic-wave` });
  const ask = whispersTo(ctx.sb, 'Alice').at(-1);
  const xid = /--req ([A-Za-z0-9]+)/.exec(ask)[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode none` });
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${xid} --for ${ctx.tokens.ogre.id} --mode none` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual(p.controllers.map(refOf), [ctx.ulcen.id, ctx.tokens.ogre.id]);
  assert.deepEqual(plain(p.defenses), { [ctx.tokens.ogre.id]: {} });
  // Again, but the thrall is let go of before the last choice: nothing is sent.
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi attack --target ${ctx.thrall.id} --target ${goblin.id} --mode psionic-wave` });
  const again = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Alice').at(-1))[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${again} --for ${ctx.ulcen.id} --mode none` });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${again} --for ${ctx.tokens.ogre.id} --mode none` });
  assert.equal(requests(ctx.sb).length, sent);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the psionic control of a target changed since the attack was declared, so other minds answer it now\. Nothing was sent: attack again\./);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /the psionic control of a target changed since the attack was declared/, 'the attacker\'s player learns it too');
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${again} --for ${ctx.tokens.ogre.id} --mode none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no attack waiting with id/, 'the wave was forgotten');
  // An attack whose defense does not come within the hour is forgotten.
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi attack --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const old = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Alice').at(-1))[1];
  ctx.sb.state.Mindscape.exchanges[old].at -= 61 * 60 * 1000;
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${old} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /there is no attack waiting with id .* \(already defended, called off, or more than an hour old\)\. Nothing was done\./);
});

test('power-pool: a psi_controlled_by naming a linked token instead of its character is refused with the ref to write', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: ctx.tokens.ulcen.id });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`Fenka's psi_controlled_by names its controller Ulcen of Tyr as "${ctx.tokens.ulcen.id}", but the companion knows that fighter as "${ctx.ulcen.id}": put that in psi_controlled_by\\. Nothing was sent\\.`));
  assert.equal(requests(ctx.sb).length, 0);
});

// ------------------------- power-pool: single attacks, --keep-by and allies (swarm)

// underControl, but Fenka is free (Ulcen holds only the thrall) and Bob also plays
// Porter, a non-psionic ally with a token of its own.
const swarmCampaign = () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  // Fenka knows the swarm where the companion reads a power-pool creature's modes.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_defenses', current: 'Imagination Swarm' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action' }]) });
  const porter = ctx.sb.add('character', { name: 'Porter', controlledby: BOB });
  ctx.sb.add('attribute', { _characterid: porter.id, name: 'psi_pool', current: '1', max: '1' });
  ctx.sb.add('attribute', { _characterid: porter.id, name: 'HP', current: '6', max: '6' });
  const token = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: porter.id, name: 'Porter', bar1_link: ctx.sb.attribute(porter.id, 'HP').id });
  return Object.assign(ctx, { porter, tokens: Object.assign(ctx.tokens, { porter: token }) });
};

// The ogre (the GM's) attacks Fenka; returns the id of the attack waiting for her defense.
const ogreAttacksFenka = (ctx, extra = '') => {
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab${extra}` });
  return /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
};

test('power-pool: --keep-by die|action says how control is kept if the attack wins, on !psi attack and !psi odds; other systems refuse it', () => {
  const ctx = swarmCampaign();
  const xid = ogreAttacksFenka(ctx, ' --keep-by die');
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.attack), { mode: 'mental-stab', keep_by: 'die' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --keep-by Action --defense none` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.attack), { mode: 'mental-stab', keep_by: 'action' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --keep-by die` });
  const odds = lastRequest(ctx.sb);
  assert.equal(odds.body.method, 'exchange.odds');
  assert.equal(odds.body.params.attack.keep_by, 'die');
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --keep-by forever` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--keep-by must be die \(a pool die kept for the control\) or action \(an action each round\)\./);
  assert.equal(requests(ctx.sb).length, sent);
  const other = campaign();
  attack(other, ' --keep-by die');
  assert.match(whispersTo(other.sb, 'Alice').at(-1), /--keep-by is a power-pool option\./);
  assert.equal(requests(other.sb).length, 0);
});

test('power-pool: --decline frightened spares the target Subconscious Subversion\'s Fear (the attacker may choose), on !psi attack and in a declaration; other systems refuse it', () => {
  const ctx = swarmCampaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode subconscious-subversion --decline Frightened --defense none` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.attack), { mode: 'subconscious-subversion', decline: ['frightened'] });
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode subconscious-subversion --decline "fear!"` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--decline names an effect to spare, such as --decline frightened\./);
  assert.equal(requests(ctx.sb).length, sent);
  const other = campaign();
  attack(other, ' --decline frightened');
  assert.match(whispersTo(other.sb, 'Alice').at(-1), /--decline is a power-pool option\./);
  assert.equal(requests(other.sb).length, 0);
});

test('power-pool: the defender choosing imagination-swarm draws allies in with --ally; they go as allies, their sheets are written and the card names them', () => {
  const ctx = swarmCampaign();
  const xid = ogreAttacksFenka(ctx, ' --keep-by die');
  // A button cannot pick tokens: the whisper shows the command to type.
  const asked = whispersTo(ctx.sb, 'Bob').at(-1);
  assert.match(asked, new RegExp(`Imagination Swarm may draw allied non-psionic creatures into the defense: type <code>!psi defend --req ${xid} --mode imagination-swarm --ally &#64;&#123;target&#124;Ally&#124;token_id&#125;</code>`));
  // Seed 001: "The defender may choose draw allied non-psionic creatures into the psionic
  // combat"; a psionic creature joins by its own choice, with !psi join.
  assert.match(asked, /Each adds a die \(its whole pool under the house rule H-PP-GROUP all-dice\) and is dazed, and falls with the group\. A psionic creature is not drawn in: it joins by its own choice\.<br>A psionic creature that can see Fenka may join/);
  assert.doesNotMatch(asked, /defends with Imagination Swarm itself/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /defense chosen<\/b><br>Imagination Swarm, drawing in Porter/);
  const req = lastRequest(ctx.sb);
  const p = req.body.params;
  assert.deepEqual(plain(p.defense), { mode: 'imagination-swarm' });
  assert.deepEqual(p.allies.map(refOf), [ctx.porter.id], 'a linked token goes as its character');
  assert.equal(p.defenses, undefined, 'an ally drawn in has no defense of its own');
  assert.deepEqual(p.puppets, undefined);
  // The ogre wins: Fenka and Porter fall under its control, Porter dazed; both sheets follow.
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: {
    system: 'power-pool', outcome: 'attacker', winner: 'attacker', attack_total: 66, defense_total: 8, rolls: [], events: [],
    summary: 'Ogre wins: Fenka and Porter fall under its psionic control (kept by a dedicated die).',
    defense: { mode: 'imagination-swarm', members: [
      { id: ctx.fenka.id, role: 'defender', mode: 'imagination-swarm', dice: 1, sides: 4, rolls: true },
      { id: ctx.porter.id, role: 'ally', mode: null, dice: 1, sides: 4, rolls: true }] },
    warnings: ['/allies/0: not recorded as psionic; it defends with its Hit Dice only (H-PP-NO-POOL)'],
    updates: [
      { character_id: ctx.tokens.ogre.id, attributes: { psi_controlling: { current: JSON.stringify([{ id: ctx.fenka.id, kept_by: 'die' }, { id: ctx.porter.id, kept_by: 'die' }]) } } },
      { character_id: ctx.fenka.id, attributes: { psi_controlled_by: { current: ctx.tokens.ogre.id } } },
      { character_id: ctx.porter.id, attributes: { psi_pool: { current: 0 }, psi_conditions: { current: 'dazed' }, psi_controlled_by: { current: ctx.tokens.ogre.id } } },
    ] } });
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)));
  assert.equal(valueOf(ctx, ctx.porter.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.equal(valueOf(ctx, ctx.porter.id, 'psi_conditions'), 'dazed');
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Allies=Porter \(drawn in, dazed, 1d4\)\}\}/);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w)), /Porter: not recorded as psionic/);
});

test('power-pool: the GM settles a swarm at once with --defense and --ally, and odds take allies too; a psionic creature that joined in an encounter is named on the card with its mode', () => {
  const ctx = swarmCampaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense imagination-swarm --ally ${ctx.porter.id}` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  assert.deepEqual(req.body.params.allies.map(refOf), [ctx.porter.id]);
  assert.equal(req.body.params.defenses, undefined);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: {
    system: 'power-pool', outcome: 'defender', winner: 'defender', rolls: [], events: [], summary: 'Fenka holds.',
    defense: { mode: 'imagination-swarm', members: [
      { id: ctx.fenka.id, role: 'defender', mode: 'imagination-swarm', dice: 1, sides: 4, rolls: true },
      { id: ctx.porter.id, role: 'ally', mode: null, dice: 0, sides: 4, rolls: false }] },
    updates: [] } });
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Allies=Porter \(drawn in, dazed, rolls nothing\)\}\}/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  // Seed 001: "Psionically active creatures may also use this defence mode to participate";
  // in an encounter Ulcen joins by his own declaration, and its step's card says so.
  const enc = encounterOf(ctx, [ctx.tokens.ulcen, ctx.tokens.fenka, ctx.tokens.ogre]);
  enc.sb.chat({ playerid: GM, content: '!psi encounter resolve --force --no-refresh' });
  const step = lastRequest(enc.sb);
  answer(enc, step.id, { jsonrpc: '2.0', id: step.id, result: { revision: 9, exchange: 1, exchanges: [{
    system: 'power-pool', outcome: 'defender', winner: 'defender', rolls: [], events: [], summary: 'Fenka holds.',
    defense: { mode: 'imagination-swarm', members: [
      { id: ctx.fenka.id, role: 'defender', mode: 'imagination-swarm', dice: 1, sides: 4, rolls: true },
      { id: ctx.ulcen.id, role: 'ally', mode: 'imagination-swarm', dice: 3, sides: 6, rolls: true }] } }], updates: [] } });
  assert.match(enc.sb.chats.at(-1).input, /\{\{Allies=Ulcen of Tyr \(defends with Imagination Swarm, 3d6\)\}\}/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense imagination-swarm --ally ${ctx.tokens.porter.id}` });
  const odds = lastRequest(ctx.sb).body;
  assert.equal(odds.method, 'exchange.odds');
  assert.deepEqual(odds.params.allies.map(refOf), [ctx.porter.id]);
});

test('power-pool: --ally is refused before anything is sent for another defense, another system, the attacker, a creature already struck, one named twice or one under control', () => {
  const ctx = swarmCampaign();
  const xid = ogreAttacksFenka(ctx);
  const sent = requestsBeyondChecks(ctx.sb).length;
  const defend = (options) => {
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid}${options}` });
    return whispersTo(ctx.sb, 'Bob').at(-1);
  };
  assert.match(defend(` --mode pinnacle-of-will --ally ${ctx.porter.id}`), /--ally goes with --mode imagination-swarm: only Imagination Swarm draws allies into the defense, not Pinnacle of Will\. Nothing was sent\./);
  assert.match(defend(` --mode none --ally ${ctx.porter.id}`), /only Imagination Swarm draws allies into the defense, not no defense\./);
  assert.match(defend(` --mode imagination-swarm --ally ${ctx.tokens.ogre.id}`), /Ogre makes this attack: it cannot be drawn into the defense as an ally\. Nothing was sent\./);
  assert.match(defend(` --mode imagination-swarm --ally ${ctx.tokens.fenka.id}`), /Fenka is struck by this attack already: it cannot be drawn into the defense as an ally\./);
  assert.match(defend(` --mode imagination-swarm --ally ${ctx.porter.id} --ally ${ctx.tokens.porter.id}`), /Porter is named twice: it cannot be drawn into the defense as an ally\./);
  assert.match(defend(` --mode imagination-swarm --ally ${ctx.thrall.id}`), /Thrall is under the psionic control of Ulcen of Tyr: it cannot be drawn into the defense as an ally\./);
  assert.match(defend(' --mode imagination-swarm --ally -Mnobody'), /--ally must name a token that represents a character/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.porter.id], content: '!psi config --system revised-2e' });
  assert.match(defend(` --mode imagination-swarm --ally ${ctx.porter.id}`), /Porter uses revised-2e, not power-pool: it cannot be drawn into the defense as an ally\./);
  assert.equal(requestsBeyondChecks(ctx.sb).length, sent, 'nothing was sent');
  // The attack still waits: a good choice goes through.
  defend(' --mode imagination-swarm');
  assert.equal(requestsBeyondChecks(ctx.sb).length, sent + 1);
  // The GM's --ally needs --defense; a controller struck in its puppet's place is in the exchange.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --ally ${ctx.porter.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--ally goes with --defense imagination-swarm, which settles the defense at once/);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.thrall.id} --mode mental-stab --defense imagination-swarm --ally ${ctx.tokens.ulcen.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr is struck by this attack already/);
  assert.equal(requestsBeyondChecks(ctx.sb).length, sent + 1);
  // Another system refuses --ally.
  const other = campaign();
  attack(other);
  const req = /--req ([A-Za-z0-9]+)/.exec(whispersTo(other.sb, 'Bob').at(-1))[1];
  other.sb.chat({ playerid: BOB, content: `!psi defend --req ${req} --mode mental-barrier --ally ${other.tokens.ogre.id}` });
  assert.match(whispersTo(other.sb, 'Bob').at(-1), /--ally is a power-pool option\./);
  assert.ok(whispersTo(other.sb, 'Bob').every((w) => !/may draw allies/.test(w)), 'no hint outside power-pool');
  assert.equal(requestsBeyondChecks(other.sb).length, 0);
});

test('power-pool waves: only the mind struck first draws allies in (its whisper says how); a chooser who knows no swarm gets no hint', () => {
  const ctx = swarmCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), new RegExp(`type <code>!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally `));
  assert.ok(!/may draw allies/.test(whispersTo(ctx.sb, 'Alice').at(-1)), 'Ulcen knows only Pinnacle of Will');
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will --ally ${ctx.thrall.id}` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /in a psionic wave only the mind struck first, Fenka, draws allies into the group's defense\. Nothing was sent\./);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.ulcen.id}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Ulcen of Tyr is struck by this attack already/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Fenka: Imagination Swarm, drawing in Porter/);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([refOf(p.defender), p.defenders.map(refOf), p.allies.map(refOf)], [ctx.fenka.id, [ctx.ulcen.id], [ctx.porter.id]]);
  assert.deepEqual(plain(p.defense), { mode: 'imagination-swarm' });
  assert.deepEqual(plain(p.defenses), { [ctx.ulcen.id]: { mode: 'pinnacle-of-will' } });
});

test('power-pool waves: when the last choice makes an exchange too long to send, that choice is not kept and the wave still waits for it', () => {
  const ctx = swarmCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 100' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_notes', current: 'z'.repeat(60000), max: '' });
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /this request is too long to go through the chat/);
  assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.exchanges[xid].choices)), [ctx.fenka.id]);
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 1000' });
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([plain(p.defense), plain(p.defenses), p.allies.map(refOf)], [{ mode: 'imagination-swarm' }, { [ctx.ulcen.id]: { mode: 'pinnacle-of-will' } }, [ctx.porter.id]]);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

// The companion's refusal of the request `req` (4001, its rule and detail, and the id of
// the creature it is about when given: API.md's `combatant`).
const refusal = (ctx, req, rule, detail, combatant) => answer(ctx, req.id, {
  jsonrpc: '2.0', id: req.id, error: { code: 4001, message: 'The rules forbid it', data: Object.assign({ rule, detail }, combatant ? { combatant } : {}) },
});
const reqOf = (whisper) => /--req ([A-Za-z0-9]+)/.exec(whisper)[1];

test('power-pool: a psionic ally the companion refuses (ally-psionic) does not lose the attack: nothing is written, the chooser is told why, and the defense is chosen again under a new id', () => {
  const ctx = swarmCampaign();
  const xid = ogreAttacksFenka(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.porter.id} --ally ${ctx.tokens.ulcen.id}` });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(req.body.params.allies.map(refOf), [ctx.porter.id, ctx.ulcen.id], 'the script leaves it to the companion whom it counts psionic');
  const at = ctx.sb.state.Mindscape.pending[req.id].exchange.at;
  const before = plain(ctx.sb.state.Mindscape.characters);
  const chats = ctx.sb.chats.length;
  // Seed 001: "The defender may choose draw allied non-psionic creatures into the psionic combat".
  refusal(ctx, req, 'ally-psionic', `Ulcen of Tyr is psionic: it joins by its own choice, with its own defense in /defenses/${ctx.ulcen.id} (imagination-swarm); a defender draws in only non-psionic creatures`);
  const bob = whispersTo(ctx.sb, 'Bob');
  const told = bob.at(-2);
  const again = reqOf(bob.at(-1));
  assert.match(told, new RegExp(`defense refused</b><br><b>Ulcen of Tyr</b> is psionic: a defender draws in only allied non-psionic creatures\\. A psionic creature joins a defense by its own choice: its controller or the GM sends <code>!psi join --req ${again}</code> with its token selected\\.`));
  assert.match(told, /Nothing was written to any sheet, and the attack of Ogre still waits: Fenka chooses the defense again\./);
  // The defense buttons again, under a new id; the old ones are spent.
  assert.notEqual(again, xid);
  assert.match(bob.at(-1), new RegExp(`Ogre attacks the mind of <b>Fenka</b>\\. Choose a defense:<br>\\[Imagination Swarm\\]\\(!psi defend --req ${again} --mode imagination-swarm\\) \\[No defense\\]`));
  assert.match(bob.at(-1), new RegExp(`type <code>!psi defend --req ${again} --mode imagination-swarm --ally `));
  const gm = whispersTo(ctx.sb, 'gm');
  // The GM reads the companion's reason in words (no path, no id), its rule in small print.
  assert.match(gm.at(-2), /<b>Ulcen of Tyr<\/b> is psionic.*The companion said: Ulcen of Tyr is psionic: it joins by its own choice, with its own defense \(Imagination Swarm\); a defender draws in only non-psionic creatures\.<br><span[^>]*>companion: 4001 ally-psionic<\/span>/);
  assertPlainRefusal(told, ['ally-psionic']);
  assert.match(gm.at(-1), new RegExp(`--req ${again} --mode none`));
  assert.ok(gm.every((w) => !/answer refused|Refused: /.test(w)));
  assert.equal(whispersTo(ctx.sb, 'Alice').length, 0, 'the creature named as an ally is not its player\'s choice: Alice is told nothing');
  assert.ok(ctx.sb.chats.slice(chats).every((c) => !/&\{template/.test(c.input)), 'no card');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), before);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), '');
  // The attack waits once, as it was (its hour runs from the attack), without the allies.
  const waiting = plain(ctx.sb.state.Mindscape.exchanges);
  assert.deepEqual(Object.keys(waiting), [again]);
  assert.equal(waiting[again].at, at);
  assert.equal(waiting[again].allies, undefined);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), new RegExp(`there is no attack waiting with id ${xid}`));
  // Chosen again with a non-psionic ally only: it goes, and is good once.
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  assert.equal(requests(ctx.sb).length, sent + 1);
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([plain(p.defense), p.allies.map(refOf), p.attack.mode], [{ mode: 'imagination-swarm' }, [ctx.porter.id], 'mental-stab']);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /there is no attack waiting with id/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('power-pool: a refused defense is chosen again also when the GM settled it at once; the attacking player learns only that it is chosen again; a mode not known names the mode', () => {
  const ctx = swarmCampaign();
  // The GM's --defense with a mindless ally: Fenka's player gets the buttons, as for any attack.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense imagination-swarm --ally ${ctx.porter.id}` });
  refusal(ctx, lastRequest(ctx.sb), 'ally-mindless', 'Porter has no mind to draw in');
  assert.match(whispersTo(ctx.sb, 'gm').at(-2), /<b>Porter<\/b> has no mind, so it cannot be drawn into the defense\./);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-2), /<b>Porter<\/b> has no mind, so it cannot be drawn into the defense\.<br>Nothing was written to any sheet/);
  const first = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.exchanges)), [first]);
  // Alice's Ulcen attacks Fenka: Alice is told it is chosen again, never why.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode blank-mind` });
  refusal(ctx, lastRequest(ctx.sb), 'mode-not-known', "Fenka does not know blank-mind (knows [\"imagination-swarm\"])");
  assert.match(whispersTo(ctx.sb, 'Bob').at(-2), /<b>Fenka<\/b> does not know Blank Mind\.<br>Nothing was written to any sheet, and the attack of Ulcen of Tyr still waits: Fenka chooses the defense again\./);
  const alice = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(alice, /The defense chosen against your attack could not be used, so Fenka chooses again\. Nothing was written to any sheet\./);
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/Blank Mind|blank-mind/.test(w)));
  // A mind without a pool uses no mode.
  const again = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode pinnacle-of-will` });
  refusal(ctx, lastRequest(ctx.sb), 'mode-not-known', 'Fenka is not psionic: a creature without a power pool uses no defense modes (H-PP-NO-POOL)');
  assert.match(whispersTo(ctx.sb, 'Bob').at(-2), /<b>Fenka<\/b> is not psionic and uses no defense mode: it may choose No defense only\./);
  assert.equal(Object.keys(plain(ctx.sb.state.Mindscape.exchanges)).length, 2);
});

test('power-pool: other refusals still lose the attack: the attacker\'s own mode not known, any other rule, and an attack an hour old', () => {
  const ctx = swarmCampaign();
  const defendWith = (mode) => {
    const xid = ogreAttacksFenka(ctx);
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode ${mode}` });
    return lastRequest(ctx.sb);
  };
  // mode-not-known about the attack mode: no other defense mends it.
  refusal(ctx, defendWith('imagination-swarm'), 'mode-not-known', "Ogre does not know mental-stab (knows [\"psionic-wave\"])");
  // Modes by their labels, the list the companion gives as one: no ids, no brackets.
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Mental Stab: Ogre vs\. Fenka<\/b><br>Ogre does not know Mental Stab \(knows Psionic Wave\)\.<br>.*companion: 4001 mode-not-known</);
  // The modes Ogre knows are the GM's secret: Bob learns only that the exchange failed.
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /The exchange failed; the GM has been told why\./);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  refusal(ctx, defendWith('none'), 'no-die-to-dedicate', 'Ogre has no die left in its pool to keep control by');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: .*Ogre has no die left in its pool to keep control by\./);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  // The attack's hour runs from the attack: one older is not brought back.
  const old = defendWith('imagination-swarm');
  ctx.sb.state.Mindscape.pending[old.id].exchange.at -= 61 * 60 * 1000;
  refusal(ctx, old, 'ally-mindless', 'Porter has no mind to draw in');
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Refused: Ogre vs\. Fenka<\/b><br>Porter has no mind to draw in\./);
  assertPlainRefusal(whispersTo(ctx.sb, 'Bob').at(-1), ['ally-mindless']);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('revised-2e: a defense refused for the defender (RULES.md 1.2, 1.4: too few PSPs, a mode not known, no psionic mind, unable to act) is chosen again under a new id; nothing is written and the attacker learns only that', () => {
  const ctx = campaign();
  const before = plain(ctx.sb.state.Mindscape.characters);
  const cases = [
    ['not-enough-psp-for-defense', 'Fenka needs 5 PSPs for mental-barrier but holds 1', /<b>Fenka<\/b> needs 5 PSPs for Mental Barrier but holds 1: a defense it can pay for, or No defense, will do\./],
    ['defense-not-known', 'Fenka does not know tower-of-iron-will', /<b>Fenka<\/b> does not know Tower of Iron Will\./],
    ['nonpsionic-cannot-defend', 'Fenka has no psionic mind and cannot raise mind-blank', /<b>Fenka<\/b> has no psionic mind and raises no defense mode: it may choose No defense only\./],
    ['defender-cannot-act', 'Fenka cannot raise a defense now', /<b>Fenka<\/b> cannot act, so it cannot raise a defense now: it may choose No defense only\./],
  ];
  let req = attackAndDefend(ctx);
  let xid = null;
  for (const [rule, detail, why] of cases) {
    refusal(ctx, req, rule, detail);
    const bob = whispersTo(ctx.sb, 'Bob');
    assert.match(bob.at(-2), why, rule);
    assert.match(bob.at(-2), /Nothing was written to any sheet, and the attack of Ulcen of Tyr still waits: Fenka chooses the defense again\./, rule);
    assert.match(whispersTo(ctx.sb, 'gm').at(-2), new RegExp(`The companion said: Fenka [^<]*\\.<br><span[^>]*>companion: 4001 ${rule}<`), rule);
    assertPlainRefusal(bob.at(-2), [rule]);
    assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /The defense chosen against your attack could not be used, so Fenka chooses again\. Nothing was written to any sheet\./, rule);
    const again = reqOf(bob.at(-1));
    assert.notEqual(again, xid, rule);
    assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.exchanges)), [again], rule);
    xid = again;
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode mind-blank` });
    req = lastRequest(ctx.sb);
    assert.deepEqual([req.body.params.defense.mode, req.body.params.attack.mode], ['mind-blank', 'ego-whip'], rule);
  }
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/PSPs|Mental Barrier|Tower|psionic mind|cannot act/.test(w)), 'the attacker learns nothing of the defense');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), before);
  // The attacker's own mode not known (attack-not-known) is no defense's fault: lost as
  // before, and its player's to read; the defender's only that it failed.
  refusal(ctx, req, 'attack-not-known', 'Ulcen of Tyr does not know ego-whip');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr does not know Ego Whip\.<br>.*companion: 4001 attack-not-known</);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /<b>Mindscape: Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Ulcen of Tyr does not know Ego Whip\.<\/div>$/);
  assertPlainRefusal(whispersTo(ctx.sb, 'Alice').at(-1), ['attack-not-known', 'ego-whip']);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Mindscape: Refused: Ulcen of Tyr vs\. Fenka<\/b><br>The exchange failed; the GM has been told why\./);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('combat-strength: a defense mode the defender does not know (defense-mode-not-known) is chosen again; the attacker\'s own mode not known (attack-mode-not-known) still loses the attack', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mind-thrust` });
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${reqOf(whispersTo(ctx.sb, 'Bob').at(-1))} --mode mind-blank` });
  refusal(ctx, lastRequest(ctx.sb), 'defense-mode-not-known', 'Fenka does not know Mind Blank');
  const bob = whispersTo(ctx.sb, 'Bob');
  assert.match(bob.at(-2), /<b>Fenka<\/b> does not know Mind Blank\.<br>Nothing was written to any sheet, and the attack of Ulcen of Tyr still waits: Fenka chooses the defense again\./);
  const again = reqOf(bob.at(-1));
  assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.exchanges)), [again]);
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/Mind Blank/.test(w)));
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode shield-thoughts` });
  refusal(ctx, lastRequest(ctx.sb), 'attack-mode-not-known', 'Ulcen of Tyr does not know Mind Thrust');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Mind Thrust: Ulcen of Tyr vs\. Fenka<\/b><br>Ulcen of Tyr does not know Mind Thrust\.<br>.*companion: 4001 attack-mode-not-known</);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('power-pool: a defense refused for the mind that chose it (defender-unaware, pool-dice-exceed-pool, spell-not-memorised, its combatant the defender) is chosen again; pool-dice-exceed-pool about the attacker loses the attack', () => {
  const ctx = swarmCampaign();
  const before = plain(ctx.sb.state.Mindscape.characters);
  let xid = ogreAttacksFenka(ctx);
  const fenka = ctx.fenka.id;
  const cases = [
    ['imagination-swarm --dice 3', 'pool-dice-exceed-pool', 'Fenka has 1 die to roll, not 3',
      /<b>Fenka<\/b> has only 1 die to roll: choose 1 or fewer \(or leave the dice out: the whole pool\)\./],
    ['imagination-swarm', 'defender-unaware', 'Fenka is asleep: it may defend only with a mode that works while unaware (cognitive-labyrinth), otherwise it rolls nothing',
      /<b>Fenka<\/b> is asleep: it may defend only with a mode that works while unaware \(Cognitive Labyrinth\); with No defense it rolls nothing\./],
    ['imagination-swarm --sacrifice 2,2', 'spell-not-memorised', '/defense/sacrifice: Fenka sacrifices 2 level-2 spells but has only 1 memorised (memorised: [1, 2])',
      /<b>Fenka<\/b> sacrifices 2 level-2 spells but has only 1 memorised \(memorised: level 1, 2\): sacrifice spells it holds, or none\./],
    ['imagination-swarm --sacrifice 3,2,2', 'spell-not-memorised', '/defense/sacrifice: Fenka sacrifices 2 level-2 spells but has only 1 memorised, and sacrifices a level-3 spell but has none memorised (memorised: [1, 2])',
      /<b>Fenka<\/b> sacrifices 2 level-2 spells but has only 1 memorised, and sacrifices a level-3 spell but has none memorised \(memorised: level 1, 2\): sacrifice spells it holds, or none\./],
    ['imagination-swarm --dice 3', 'pool-dice-exceed-pool', 'Fenka has 2 dice to roll, not 3',
      /<b>Fenka<\/b> has only 2 dice to roll: choose 2 or fewer \(or leave the dice out: the whole pool\)\./],
  ];
  for (const [mode, rule, detail, why] of cases) {
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode ${mode}` });
    const req = lastRequest(ctx.sb);
    assert.equal(refOf(req.body.params.defender), fenka, rule);
    refusal(ctx, req, rule, detail, fenka);
    const bob = whispersTo(ctx.sb, 'Bob');
    assert.match(bob.at(-2), why, rule);
    assert.match(bob.at(-2), /Nothing was written to any sheet, and the attack of Ogre still waits: Fenka chooses the defense again\./, rule);
    assert.match(whispersTo(ctx.sb, 'gm').at(-2), new RegExp(`The companion said: Fenka [^<]*\\.<br><span[^>]*>companion: 4001 ${rule}<`), rule);
    assertPlainRefusal(bob.at(-2), [rule]);
    const again = reqOf(bob.at(-1));
    assert.notEqual(again, xid, rule);
    assert.deepEqual(Object.keys(plain(ctx.sb.state.Mindscape.exchanges)), [again], rule);
    xid = again;
  }
  assert.deepEqual(plain(ctx.sb.state.Mindscape.characters), before);
  // The attacker's pool dice beyond its pool: no defense mends that.
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  const req = lastRequest(ctx.sb);
  refusal(ctx, req, 'pool-dice-exceed-pool', 'Ogre has 2 dice in its pool, not 4', refOf(req.body.params.attacker));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: .*<br>Ogre has 2 dice in its pool, not 4\.<br>.*companion: 4001 pool-dice-exceed-pool</);
  // Ogre's pool is the GM's secret: Bob, who chose the defense, learns only that it failed.
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /The exchange failed; the GM has been told why\./);
  assert.doesNotMatch(whispersTo(ctx.sb, 'Bob').at(-1), /2 dice|Mental Stab/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('power-pool waves: a mind struck that is asleep (defender-unaware, the companion naming it) starts every choice over; its controller learns why, the other chooser only that a defense could not be used', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  refusal(ctx, lastRequest(ctx.sb), 'defender-unaware',
    'Ulcen of Tyr is asleep: it may defend only with a mode that works while unaware (cognitive-labyrinth), otherwise it rolls nothing', ctx.ulcen.id);
  const alice = whispersTo(ctx.sb, 'Alice');
  assert.match(alice.at(-2), /<b>Ulcen of Tyr<\/b> is asleep: it may defend only with a mode that works while unaware \(Cognitive Labyrinth\); with No defense it rolls nothing\.<br>Nothing was written to any sheet, and the attack of Ogre still waits: every mind it strikes chooses its defense again\./);
  const bob = whispersTo(ctx.sb, 'Bob');
  assert.match(bob.at(-2), /A defense chosen against this attack could not be used \(the GM has been told why\)\./);
  assert.ok(bob.every((w) => !/asleep/.test(w)));
  const again = reqOf(bob.at(-1));
  assert.notEqual(again, xid);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[again].choices), {}, 'every mind chooses again');
});

test('power-pool waves: a defense the companion refuses starts every mind\'s choice over under a new id; the side it is about learns why, the others only that a defense could not be used', () => {
  const ctx = swarmCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  refusal(ctx, lastRequest(ctx.sb), 'ally-mindless', 'Porter has no mind to draw in');
  // Fenka drew Porter in: Bob learns why; Alice only that a defense could not be used.
  const bob = whispersTo(ctx.sb, 'Bob');
  assert.match(bob.at(-2), /<b>Porter<\/b> has no mind, so it cannot be drawn into the defense\.<br>Nothing was written to any sheet, and the attack of Ogre still waits: every mind it strikes chooses its defense again\./);
  const again = reqOf(bob.at(-1));
  assert.notEqual(again, xid);
  assert.match(bob.at(-1), new RegExp(`<b>Fenka</b>, choose a defense:.*--req ${again} --for ${ctx.fenka.id} --mode none.*type <code>!psi defend --req ${again} --for ${ctx.fenka.id} --mode imagination-swarm --ally `));
  const alice = whispersTo(ctx.sb, 'Alice');
  assert.match(alice.at(-2), /A defense chosen against this attack could not be used \(the GM has been told why\)\. Nothing was written to any sheet/);
  assert.match(alice.at(-1), new RegExp(`<b>Ulcen of Tyr</b>, choose a defense:<br>\\[Pinnacle of Will\\]\\(!psi defend --req ${again} --for ${ctx.ulcen.id} --mode pinnacle-of-will\\)`));
  assert.ok(alice.every((w) => !/Porter|no mind/.test(w)));
  assert.match(whispersTo(ctx.sb, 'gm').at(-3), /<b>Porter<\/b> has no mind.*ally-mindless/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[again].choices), {}, 'the choices start over');
  // Alice's own choice counts no more: she chooses again too. A mode Ulcen does not know
  // is Alice's to hear about.
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${again} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Still to choose a defense: Fenka\./);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --for ${ctx.fenka.id} --mode none` });
  const second = lastRequest(ctx.sb);
  assert.equal(second.body.params.allies, undefined);
  refusal(ctx, second, 'mode-not-known', "Ulcen of Tyr does not know pinnacle-of-will (knows [\"blank-mind\"])");
  assert.match(whispersTo(ctx.sb, 'Alice').at(-2), /<b>Ulcen of Tyr<\/b> does not know Pinnacle of Will\./);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-2), /A defense chosen against this attack could not be used/);
  const third = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${third} --for ${ctx.ulcen.id} --mode none` });
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${third} --for ${ctx.fenka.id} --mode none` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([plain(p.defense), plain(p.defenses)], [{}, { [ctx.ulcen.id]: {} }]);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

// ------------------ power-pool: a psionic creature joins a defense (!psi join)

// swarmCampaign, and Alice's Seer: psionic, knows Imagination Swarm (in psi_defenses, where
// the companion reads a power-pool creature's modes), holds a hound under its control; both
// have tokens linked to their sheets.
const seerCampaign = () => {
  const ctx = swarmCampaign();
  const attrs = (charId, list) => list.forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: charId, name, current, max }));
  const seer = ctx.sb.add('character', { name: 'Seer', controlledby: ALICE });
  const hound = ctx.sb.add('character', { name: 'Hound', controlledby: '' });
  attrs(seer.id, [['psi_pool', '2', '2'], ['psi_die', '6'], ['psi_psionic', '1'], ['HP', '9', '9'],
    ['psi_defenses', 'Imagination Swarm'], ['psi_controlling', JSON.stringify([{ id: hound.id, kept_by: 'action' }])]]);
  attrs(hound.id, [['psi_pool', '0', '1'], ['psi_die', '4'], ['HP', '5', '5'], ['psi_controlled_by', seer.id]]);
  const tokenOf = (c) => ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: c.id, name: c.get('name'), bar1_link: ctx.sb.attribute(c.id, 'HP').id });
  return Object.assign(ctx, { seer, hound, tokens: Object.assign(ctx.tokens, { seer: tokenOf(seer), hound: tokenOf(hound) }) });
};

// `playerid` sends !psi join for the attack waiting as `xid` with `token` selected; the
// whisper that answers it (to the GM for the GM).
const join = (ctx, playerid, token, xid) => {
  ctx.sb.chat({ playerid, selected: token ? [token.id] : [], content: `!psi join --req ${xid}` });
  return whispersTo(ctx.sb, { [GM]: 'gm', [ALICE]: 'Alice', [BOB]: 'Bob' }[playerid]).at(-1);
};

test('power-pool !psi join: a psionic creature joins a single attack\'s defense by its own choice (seed 001); it goes as an ally with its own defense, its puppets along, its sheet written, the card says how it defended', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  // Seed 001: "Psionically active creatures may also use this defence mode to participate in
  // a psionic combat that is targeting an ally they can see". The defender's whisper (Bob's
  // and the GM's) says how; Alice, Seer's player, does not see it: the GM passes it on.
  const line = new RegExp(`A psionic creature that can see Fenka may join the defense by its own choice, with Imagination Swarm: its controller or the GM selects its token and sends \\[Join the defense\\]\\(!psi join --req ${xid}\\) \\(<code>!psi join --req ${xid}</code>\\) before the defense is chosen\\.`);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), line);
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /defend!/.test(w)).at(-1), line);
  assert.equal(whispersTo(ctx.sb, 'Alice').length, 0);
  const sent = requests(ctx.sb).length;
  const told = join(ctx, ALICE, ctx.tokens.seer, xid);
  assert.match(told, /joined<\/b><br><b>Seer<\/b> joins the defense of Fenka against the attack of Ogre by its own choice, with Imagination Swarm: it rolls its own pool with the defending group, and falls with the group should the attack win\. It goes to the companion when the defense is chosen\./);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Seer<\/b> joins the defense of Fenka/, 'the defender\'s side learns who joined');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>Seer<\/b> joins the defense of Fenka/);
  assert.equal(requests(ctx.sb).length, sent, 'nothing is sent before the defense is chosen');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[xid].joined), [{ ref: ctx.seer.id, mode: 'imagination-swarm' }]);
  // Bob may not draw in a creature that joined of itself; he draws in Porter.
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.seer.id}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Seer has joined this defense by its own choice already: it cannot be drawn into the defense as an ally\. Nothing was sent\./);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /defense chosen<\/b><br>Imagination Swarm, drawing in Porter; joined by Seer/);
  const req = lastRequest(ctx.sb);
  const p = req.body.params;
  assert.deepEqual(p.allies.map(refOf), [ctx.porter.id, ctx.seer.id]);
  assert.deepEqual(plain(p.defenses), { [ctx.seer.id]: { mode: 'imagination-swarm' } });
  assert.deepEqual(plain(p.defense), { mode: 'imagination-swarm' });
  assert.deepEqual(p.puppets.map(refOf), [ctx.hound.id], 'the creatures Seer controls go along');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.match(join(ctx, ALICE, ctx.tokens.seer, xid), new RegExp(`Seer cannot join: there is no attack waiting for a defense with id ${xid}`));
  // The ogre wins: the group falls, Seer's hound goes free; every sheet follows.
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: {
    system: 'power-pool', outcome: 'attacker', winner: 'attacker', attack_total: 20, defense_total: 9, rolls: [], events: [],
    summary: 'Ogre wins: Fenka, Porter and Seer fall under its psionic control.',
    defense: { mode: 'imagination-swarm', members: [
      { id: ctx.fenka.id, role: 'defender', mode: 'imagination-swarm', dice: 1, sides: 4, rolls: true },
      { id: ctx.porter.id, role: 'ally', mode: null, dice: 1, sides: 4, rolls: true },
      { id: ctx.seer.id, role: 'ally', mode: 'imagination-swarm', dice: 2, sides: 6, rolls: true }] },
    updates: [
      { character_id: ctx.seer.id, attributes: { psi_pool: { current: 0 }, psi_controlled_by: { current: ctx.tokens.ogre.id }, psi_controlling: { current: '[]' } } },
      { character_id: ctx.hound.id, attributes: { psi_controlled_by: { current: '' } } },
    ] } });
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)));
  assert.equal(valueOf(ctx, ctx.seer.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.equal(valueOf(ctx, ctx.seer.id, 'psi_pool'), 0);
  assert.equal(valueOf(ctx, ctx.hound.id, 'psi_controlled_by'), '');
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Allies=Porter \(drawn in, dazed, 1d4\), Seer \(defends with Imagination Swarm, 2d6\)\}\}/);
});

test('power-pool !psi join: an exchange refused tells a GM who controls a creature that joined once, with the detail, and no "exchange failed" beside it', () => {
  const ctx = seerCampaign();
  ctx.seer.set({ controlledby: GM });
  const xid = ogreAttacksFenka(ctx);
  assert.match(join(ctx, GM, ctx.tokens.seer, xid), /<b>Seer<\/b> joins the defense of Fenka/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm` });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(req.body.params.allies.map(refOf), [ctx.seer.id]);
  const from = whispersTo(ctx.sb, 'gm').length;
  refusal(ctx, req, 'no-die-to-dedicate', 'Ogre has no die left in its pool to keep control by');
  const toGM = whispersTo(ctx.sb, 'gm').slice(from);
  assert.equal(toGM.length, 1, toGM.join('\n'));
  assert.match(toGM[0], /Ogre has no die left in its pool to keep control by/);
  // Bob chose the defense: he reads why.
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Refused: Ogre vs\. Fenka<\/b><br>Ogre has no die left in its pool to keep control by\./);
});

test('power-pool !psi join is refused, naming the creature and changing nothing: another system, no such attack, the attacker, a target, a controller struck in its puppet\'s place, one joined or drawn in already, one under control, one that does not know the swarm, another system\'s creature, a creature the sender does not control', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  const before = JSON.stringify(ctx.sb.state.Mindscape.exchanges);
  const sent = requestsBeyondChecks(ctx.sb).length;
  const refused = (playerid, token, why, id = xid) => assert.match(join(ctx, playerid, token, id), why);
  refused(ALICE, null, /refused<\/b><br>select the token of the one psionic creature that joins the defense/);
  refused(BOB, ctx.tokens.seer, /you do not control Seer: only its controller or the GM may make it join a defense\. Nothing was changed\./);
  refused(ALICE, ctx.tokens.seer, /Seer cannot join: there is no attack waiting for a defense with id nope \(already defended, called off, or more than an hour old\)\. Nothing was changed\./, 'nope');
  refused(GM, ctx.tokens.ogre, /Ogre makes this attack: it cannot join this defense\. Nothing was changed\./);
  refused(BOB, ctx.tokens.fenka, /Fenka is a target of this attack: it cannot join this defense\./);
  refused(GM, ctx.tokens.hound, /Hound is under the psionic control of Seer: it cannot join this defense\./);
  refused(ALICE, ctx.tokens.ulcen, /Ulcen of Tyr does not know Imagination Swarm, the defense by which a psionic creature joins: it cannot join this defense\./);
  // Only a mode the companion reads counts: Porter's sheet lists none (it would know none).
  refused(BOB, ctx.tokens.porter, /Porter does not know Imagination Swarm, the defense by which a psionic creature joins: it cannot join this defense\./);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.porter.id], content: '!psi config --system revised-2e' });
  refused(BOB, ctx.tokens.porter, /Porter uses revised-2e, not power-pool: it cannot join this defense\./);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.exchanges), before, 'nothing changed');
  join(ctx, ALICE, ctx.tokens.seer, xid);
  refused(GM, ctx.tokens.seer, /Seer has joined this defense already: it cannot join this defense\./);
  assert.equal(ctx.sb.state.Mindscape.exchanges[xid].joined.length, 1);
  // A controller struck in its puppet's place: the ogre attacks the thrall, Ulcen answers.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.thrall.id} --mode mental-stab` });
  const onThrall = reqOf(whispersTo(ctx.sb, 'Alice').at(-1));
  refused(ALICE, ctx.tokens.ulcen, /Ulcen of Tyr is struck by this attack already, in its puppet's place: it cannot join this defense\./, onThrall);
  assert.equal(requestsBeyondChecks(ctx.sb).length, sent);
  // Another system has no joining, and no line about it.
  const other = campaign();
  attack(other);
  const otherXid = reqOf(whispersTo(other.sb, 'Bob').at(-1));
  assert.doesNotMatch(whispersTo(other.sb, 'Bob').at(-1), /join/);
  other.sb.chat({ playerid: GM, selected: [other.tokens.ogre.id], content: `!psi join --req ${otherXid}` });
  assert.match(whispersTo(other.sb, 'gm').at(-1), /Ogre cannot join: this attack is revised-2e's, and only power-pool lets a psionic creature join a defense \(with Imagination Swarm\)\. Nothing was changed\./);
  assert.equal(other.sb.state.Mindscape.exchanges[otherXid].joined, undefined);
});

// A swarm or seer campaign (swarmCampaign, seerCampaign), and the ogre's psionic wave at
// Fenka (struck first) and Ulcen; returns the id of the attack waiting for their defenses.
const waveAtFenkaAndUlcen = (ctx) => {
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ogre.id, 'psi_attacks').set({ current: 'Mental Stab, Psionic Wave' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  return reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
};

test('power-pool !psi join in a psionic wave: the creature joins the group of the mind struck first', () => {
  const ctx = seerCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /A psionic creature that can see a mind this wave strikes may join the defense by its own choice, with Imagination Swarm \(it joins the group of Fenka, struck first\)/);
  // Ulcen is struck: his player may not make him join.
  assert.match(join(ctx, ALICE, ctx.tokens.ulcen, xid), /Ulcen of Tyr is a target of this attack/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  // Between two minds' choices Seer still joins.
  assert.match(join(ctx, ALICE, ctx.tokens.seer, xid), /<b>Seer<\/b> joins the defense of the group of Fenka \(struck first by the psionic wave of Ogre\)/);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([refOf(p.defender), p.defenders.map(refOf), p.allies.map(refOf)], [ctx.fenka.id, [ctx.ulcen.id], [ctx.porter.id, ctx.seer.id]]);
  // Seer joined the first mind's group, not Ulcen's: his choice is told without it.
  assert.match(whispersTo(ctx.sb, 'Alice').filter((w) => /defense chosen/.test(w)).at(-1) || '', /defense chosen<\/b><br>Ulcen of Tyr: Pinnacle of Will<\/div>$/);
  assert.deepEqual(plain(p.defenses), { [ctx.ulcen.id]: { mode: 'pinnacle-of-will' }, [ctx.seer.id]: { mode: 'imagination-swarm' } });
});

test('power-pool !psi join in a psionic wave: a creature the first mind drew in cannot join, and its player is not told that it was drawn in (a secret until the card); the first mind\'s side and the GM are', () => {
  const ctx = seerCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  // Bob names Alice's Seer as Fenka's ally (the companion will judge it): Fenka's choice.
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.seer.id}` });
  const before = JSON.stringify(ctx.sb.state.Mindscape.exchanges);
  const told = join(ctx, ALICE, ctx.tokens.seer, xid);
  assert.match(told, /refused<\/b><br>Seer cannot join this defense\. Nothing was changed\./);
  assert.doesNotMatch(told, /drawn|ally|Fenka|Imagination/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Seer is drawn into this defense already, as an ally, so it cannot join this defense; its player was told only that it cannot join/);
  assert.match(join(ctx, GM, ctx.tokens.seer, xid), /Seer is drawn into this defense already, as an ally: it cannot join this defense\. Nothing was changed\./);
  // Fenka's player made that choice: he hears why.
  ctx.sb.objects.find((o) => o.id === ctx.seer.id).set({ controlledby: `${ALICE},${BOB}` });
  assert.match(join(ctx, BOB, ctx.tokens.seer, xid), /Seer is drawn into this defense already, as an ally: it cannot join this defense\./);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.exchanges), before, 'nothing changed');
});

// seerCampaign, and Carol, a third player, who plays Sprite, a psionic creature that
// knows Imagination Swarm. Returns the campaign with `sprite`.
const CAROL = '-Pcarol';
const spriteCampaign = () => {
  const ctx = seerCampaign();
  ctx.sb.add('player', { _id: CAROL, _displayname: 'Carol', __gm: false, _online: true });
  const attrs = (charId, list) => list.forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: charId, name, current, max }));
  const sprite = ctx.sb.add('character', { name: 'Sprite', controlledby: CAROL });
  attrs(sprite.id, [['psi_pool', '2', '2'], ['psi_die', '6'], ['psi_psionic', '1'], ['HP', '7', '7'], ['psi_defenses', 'Imagination Swarm']]);
  ctx.tokens.sprite = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: sprite.id, name: 'Sprite', bar1_link: ctx.sb.attribute(sprite.id, 'HP').id });
  return Object.assign(ctx, { sprite });
};

// spriteCampaign, and a psionic wave Alice makes with Ulcen at Fenka (Bob's) and Seer
// (Alice's own, in range), in the order `first` gives ('fenka' or 'seer'). Returns the
// campaign with the id of the attack waiting for the defenses (`xid`).
const ownWave = (first = 'fenka') => {
  const ctx = spriteCampaign();
  const attrs = (charId, list) => list.forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: charId, name, current, max }));
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  attrs(ctx.ulcen.id, [['psi_attacks', 'Psionic Wave']]);
  const targets = first === 'seer' ? [ctx.tokens.seer, ctx.tokens.fenka] : [ctx.tokens.fenka, ctx.tokens.seer];
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack ${targets.map((t) => `--target ${t.id}`).join(' ')} --mode psionic-wave` });
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[xid].members), targets.map((t) => t.get('represents')));
  return Object.assign(ctx, { xid });
};

// What Carol is whispered, as whispersTo gives it.
const toCarol = (ctx) => ctx.sb.chats.filter((c) => c.input.startsWith('/w "Carol" ')).map((c) => c.input);

test('power-pool !psi join in a psionic wave that strikes a mind of the attacking player: a creature of a third player joins; the attacking player, who chooses its own mind\'s defense, is not told (the defense is a secret until the card), the rest of the defending side and the GM are', () => {
  const ctx = ownWave();
  const before = whispersTo(ctx.sb, 'Alice').length;
  ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${ctx.xid}` });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[ctx.xid].joined), [{ ref: ctx.sprite.id, mode: 'imagination-swarm' }]);
  const line = /<b>Sprite<\/b> joins the defense of the group of Fenka \(struck first by the psionic wave of Ulcen of Tyr\)/;
  assert.match(toCarol(ctx).at(-1), line, 'the sender');
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), line, 'the player of the mind struck first');
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), line);
  const alice = whispersTo(ctx.sb, 'Alice').slice(before);
  assert.ok(alice.every((w) => !/Sprite|joins the defense/.test(w)), alice.join('\n'));
  // Leaving is told to the same players.
  ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${ctx.xid} --leave` });
  assert.match(toCarol(ctx).at(-1), /<b>Sprite<\/b> leaves the defense of the group of Fenka/);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Sprite<\/b> leaves the defense/);
  assert.ok(whispersTo(ctx.sb, 'Alice').slice(before).every((w) => !/Sprite/.test(w)));
  // Alice still chooses her own Seer's defense, with its buttons.
  assert.match(whispersTo(ctx.sb, 'Alice').filter((w) => /defend!/.test(w)).at(-1), new RegExp(`<b>Seer</b>, choose a defense:.*!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm`));
});

test('power-pool !psi join in a psionic wave that strikes a mind of the attacking player: the defense buttons of that mind (!psi pending, or whispered again after a refusal) do not name the creature that joined, nor does its defense chosen when it was struck first; the other side\'s and the GM\'s do', () => {
  const ctx = ownWave('seer');
  ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${ctx.xid}` });
  assert.match(toCarol(ctx).at(-1), /<b>Sprite<\/b> joins the defense of the group of Seer/);
  const before = whispersTo(ctx.sb, 'Alice').length;
  const aliceHeard = () => whispersTo(ctx.sb, 'Alice').slice(before);
  // !psi pending: Alice gets Seer's buttons, without "Joined: Sprite"; Bob's and the GM's say it.
  ctx.sb.chat({ playerid: ALICE, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`<b>Seer</b>, choose a defense:.*--for ${ctx.seer.id}.*before the defense is chosen\\.</div>$`));
  ctx.sb.chat({ playerid: BOB, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Fenka<\/b>, choose a defense:.*before the defense is chosen\. Joined: Sprite\./);
  ctx.sb.chat({ playerid: GM, content: '!psi pending' });
  assert.ok(whispersTo(ctx.sb, 'gm').filter((w) => /defend!/.test(w)).slice(-2).every((w) => /Joined: Sprite\./.test(w)));
  // Seer leads the group: Alice's defense chosen does not say who joined it.
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /defense chosen<\/b><br>Seer: Imagination Swarm<\/div>$/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${ctx.xid} --for ${ctx.fenka.id} --mode none` });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(req.body.params.allies.map(refOf), [ctx.sprite.id], 'Sprite goes with the group');
  // The companion refuses Fenka's choice: every mind chooses again; Sprite stays joined.
  refusal(ctx, req, 'mode-not-known', "Fenka does not know mind-blank (knows [\"imagination-swarm\"])", ctx.fenka.id);
  const again = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.notEqual(again, ctx.xid);
  assert.deepEqual(joinedAgain(ctx), [[ctx.sprite.id]]);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Fenka<\/b>, choose a defense:.*Joined: Sprite\./);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`<b>Seer</b>, choose a defense:.*--req ${again} --for ${ctx.seer.id}`));
  assert.ok(whispersTo(ctx.sb, 'gm').filter((w) => w.includes(`--req ${again} `) && /defend!/.test(w)).every((w) => /Joined: Sprite\./.test(w)));
  assert.match(toCarol(ctx).at(-1), /Still joined: Sprite/);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${again} --for ${ctx.seer.id} --mode none` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /defense chosen<\/b><br>Seer: No defense<\/div>$/);
  assert.ok(aliceHeard().every((w) => !/Sprite/.test(w)), aliceHeard().join('\n'));
});

test('power-pool: in a psionic wave whose first mind is the attacking player\'s own, its --ally naming a creature of another player that joined is refused without saying that it joined (the GM is told why); the first mind\'s other player hears why', () => {
  const ctx = ownWave('seer');
  ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${ctx.xid}` });
  const before = JSON.stringify(ctx.sb.state.Mindscape.exchanges);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm --ally ${ctx.tokens.sprite.id}` });
  const told = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(told, /refused<\/b><br>Sprite is psionic, and a psionic creature joins a defense by its own choice: it cannot be drawn into the defense as an ally\. Nothing was sent\.<\/div>$/);
  assert.doesNotMatch(told, /joined|already/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Sprite has joined this defense by its own choice already, so it cannot be drawn in as an ally; the player choosing the defense of Seer was told only that it is psionic/);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.exchanges), before, 'nothing changed');
  // Seer's other controller (not the attacking player) hears why.
  ctx.seer.set('controlledby', `${ALICE},${BOB}`);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm --ally ${ctx.tokens.sprite.id}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Sprite has joined this defense by its own choice already: it cannot be drawn into the defense as an ally\. Nothing was sent\./);
});

test('power-pool: in a psionic wave whose first mind is the attacking player\'s own, its --ally naming another player\'s psionic creature is refused alike whether or not that creature joined, so the refusal does not tell the attacking player who joined; the other side still sends such an ally for the companion to judge', () => {
  const refusalTo = (join) => {
    const ctx = ownWave('seer');
    if (join) ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${ctx.xid}` });
    const before = JSON.stringify(ctx.sb.state.Mindscape.exchanges);
    ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm --ally ${ctx.tokens.sprite.id}` });
    assert.equal(JSON.stringify(ctx.sb.state.Mindscape.exchanges), before, 'nothing changed');
    return whispersTo(ctx.sb, 'Alice').at(-1);
  };
  const unjoined = refusalTo(false);
  assert.match(unjoined, /refused<\/b><br>Sprite is psionic, and a psionic creature joins a defense by its own choice: it cannot be drawn into the defense as an ally\. Nothing was sent\.<\/div>$/);
  assert.equal(refusalTo(true), unjoined, 'the same words whether Sprite joined or not');
  // Seer's other controller, who may know who joined, still sends Sprite for the companion to judge.
  const ctx = ownWave('seer');
  ctx.seer.set('controlledby', `${ALICE},${BOB}`);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm --ally ${ctx.tokens.sprite.id}` });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[ctx.xid].allies), [ctx.sprite.id]);
});

test('power-pool: in a psionic wave whose first mind is the attacking player\'s own, an older companion\'s refusal that fits a creature still joined and another of its name is not told to the attacking player with its detail (it may be about the creature that joined), only that a defense could not be used', () => {
  const ctx = ownWave('seer');
  // Carol's creature bears the name of Alice's Seer: the refusal below fits both.
  ctx.sprite.set({ name: 'Seer' });
  ctx.tokens.sprite.set({ name: 'Seer' });
  ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${ctx.xid}` });
  const before = whispersTo(ctx.sb, 'Alice').length;
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${ctx.xid} --for ${ctx.seer.id} --mode imagination-swarm` });
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${ctx.xid} --for ${ctx.fenka.id} --mode none` });
  refusal(ctx, lastRequest(ctx.sb), 'ally-not-psionic', 'Seer is not psionic: it joins no psionic combat by its own choice and has no defense mode; only a defender using imagination-swarm draws it in');
  assert.deepEqual(joinedAgain(ctx), [[ctx.sprite.id]], 'not pinned on a creature: the joiner stays');
  const alice = whispersTo(ctx.sb, 'Alice').slice(before);
  assert.match(alice.at(-2), /defense refused<\/b><br>A defense chosen against this attack could not be used \(the GM has been told why\)\./);
  assert.ok(alice.every((w) => !/not psionic|joins no psionic combat|Joined:|Still joined/.test(w)), alice.join('\n'));
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /defense refused/.test(w)).at(-1), /The companion refused the defense: Seer is not psionic/);
  assert.match(toCarol(ctx).at(-1), /Still joined: Seer/);
});

test('power-pool: after a refused defense, the attacking player whose own creature joined the defense against its attack learns only of that one still joined, not of another player\'s creature (a secret until the card)', () => {
  const ctx = spriteCampaign();
  // Alice's ogre attacks Bob's Fenka; Alice makes her Seer join (her own choice), Carol her Sprite.
  ctx.ogre.set('controlledby', ALICE);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.match(join(ctx, ALICE, ctx.tokens.seer, xid), /<b>Seer<\/b> joins the defense of Fenka/);
  const before = whispersTo(ctx.sb, 'Alice').length;
  ctx.sb.chat({ playerid: CAROL, selected: [ctx.tokens.sprite.id], content: `!psi join --req ${xid}` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Sprite<\/b> joins the defense of Fenka/);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode blank-mind` });
  refusal(ctx, lastRequest(ctx.sb), 'mode-not-known', "Fenka does not know blank-mind (knows [\"imagination-swarm\"])", ctx.fenka.id);
  const again = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Joined: Seer, Sprite\./);
  assert.match(toCarol(ctx).at(-1), /Still joined: Seer, Sprite/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`A defense chosen against this attack could not be used \\(the GM has been told why\\)\\..* Still joined: Seer \\(to leave the defense: <code>!psi join --req ${again} --leave</code>`));
  const alice = whispersTo(ctx.sb, 'Alice').slice(before);
  assert.ok(alice.every((w) => !/Sprite/.test(w)), alice.join('\n'));
});

test('power-pool !psi join and a refused defense: a refusal about the creature that joined leaves it out (it may join again under the new id); any other keeps it joined; a failure tells its player only that', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  join(ctx, ALICE, ctx.tokens.seer, xid);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode pinnacle-of-will` });
  // Asleep, Seer rolls nothing with Imagination Swarm: the companion refuses it.
  refusal(ctx, lastRequest(ctx.sb), 'defender-unaware', 'Seer is asleep: it may defend only with a mode that works while unaware (cognitive-labyrinth), otherwise it rolls nothing');
  const again = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.notEqual(again, xid);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`defense refused</b><br><b>Seer</b> cannot join the defense: Seer is asleep: it may defend only with a mode that works while unaware \\(Cognitive Labyrinth\\), otherwise it rolls nothing\\. It is left out \\(should that change, it may join again: <code>!psi join --req ${again}</code> with its token selected\\)\\.<br>Nothing was written to any sheet, and the attack of Ogre still waits: Fenka chooses the defense again\\.`));
  assertPlainRefusal(whispersTo(ctx.sb, 'Alice').at(-1), ['defender-unaware', 'cognitive-labyrinth']);
  assert.match(whispersTo(ctx.sb, 'gm').at(-2), /<b>Seer<\/b> cannot join the defense.*The companion said: Seer is asleep: .*companion: 4001 defender-unaware</);
  assert.doesNotMatch(whispersTo(ctx.sb, 'Bob').at(-1), /Joined:/);
  assert.equal(ctx.sb.state.Mindscape.exchanges[again].joined.length, 0);
  // Awake again, Seer joins under the new id; a defense the companion refuses for the
  // defender keeps it joined, and its player is told that it is still in.
  join(ctx, ALICE, ctx.tokens.seer, again);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode blank-mind` });
  refusal(ctx, lastRequest(ctx.sb), 'mode-not-known', "Fenka does not know blank-mind (knows [\"imagination-swarm\"])");
  const third = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /before the defense is chosen\. Joined: Seer\./);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp('A defense chosen against this attack could not be used \\(the GM has been told why\\)\\. Nothing was written to any sheet, and the attack of Ogre still waits: '
    + `Fenka chooses the defense again\\. Still joined: Seer \\(to leave the defense: <code>!psi join --req ${third} --leave</code> with its token selected\\)\\.`));
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/Blank Mind|blank-mind/.test(w)), 'the defender\'s choice stays secret');
  // The GM settles it: Seer goes along.
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${third} --mode none` });
  const p = lastRequest(ctx.sb).body.params;
  assert.deepEqual([p.allies.map(refOf), plain(p.defenses)], [[ctx.seer.id], { [ctx.seer.id]: { mode: 'imagination-swarm' } }]);
  // A creature the companion reads as non-psionic cannot join by itself: left out too.
  refusal(ctx, lastRequest(ctx.sb), 'ally-not-psionic', 'Seer is not psionic: it joins no psionic combat by its own choice and has no defense mode; only a defender using imagination-swarm draws it in (without /defenses/seer)');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /The companion reads <b>Seer<\/b> as non-psionic: it cannot join a defense by its own choice \(only a defender's Imagination Swarm draws in non-psionic allies\)\. It is left out/);
  // Any other refusal loses the attack as before: Seer's player learns that it failed.
  const fourth = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  join(ctx, ALICE, ctx.tokens.seer, fourth);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${fourth} --mode none` });
  refusal(ctx, lastRequest(ctx.sb), 'no-die-to-dedicate', 'Ogre has no die left in its pool to keep control by');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /The exchange failed; the GM has been told why\./);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

// seerCampaign: the ogre attacks Fenka, Seer joins by its own choice and Bob's swarm draws
// Porter in (`porter` names it anew): Porter goes at /allies/0, Seer at /allies/1.
const seerAndPorterDefend = (porter) => {
  const ctx = seerCampaign();
  if (porter) [ctx.porter, ctx.tokens.porter].forEach((o) => o.set({ name: porter }));
  const xid = ogreAttacksFenka(ctx);
  join(ctx, ALICE, ctx.tokens.seer, xid);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(req.body.params.allies.map(refOf), [ctx.porter.id, ctx.seer.id]);
  return { ctx, req };
};

// The joiners of the attack waiting again after a refusal.
const joinedAgain = (ctx) => Object.values(plain(ctx.sb.state.Mindscape.exchanges)).map((x) => (x.joined || []).map((j) => j.ref));

test('power-pool: a refusal is pinned on the combatant the companion names only when it was sent; an older companion\'s on the ally at the /allies/N its detail starts with, else on the fighter whose name it starts with, the longest name winning, never one named further on', () => {
  // The /allies/N it starts with; a name it starts with, not a path or a longer name further on.
  for (const detail of ['/allies/1: asleep, it may defend only with a mode that works while unaware (cognitive-labyrinth)',
    'Seer is asleep, so the group (/allies/0) rolls without it', 'Seer is asleep beside Porter']) {
    const { ctx, req } = seerAndPorterDefend();
    refusal(ctx, req, 'defender-unaware', detail);
    assert.match(whispersTo(ctx.sb, 'gm').at(-2), /defense refused<\/b><br><b>Seer<\/b> cannot join the defense: /, detail);
    assert.deepEqual(joinedAgain(ctx), [[]], detail);
  }
  // A combatant named that this request did not send is nobody's, whatever the detail says.
  const foreign = seerAndPorterDefend();
  refusal(foreign.ctx, foreign.req, 'ally-mindless', 'Seer has no mind', foreign.ctx.ulcen.id);
  assert.match(whispersTo(foreign.ctx.sb, 'gm').at(-2), /defense refused<\/b><br>The companion refused the defense: Seer has no mind\./);
  assert.deepEqual(joinedAgain(foreign.ctx), [[foreign.ctx.seer.id]]);
  // "Seer Porter …" is Seer Porter's, not Seer's (who stays joined).
  const longer = seerAndPorterDefend('Seer Porter');
  refusal(longer.ctx, longer.req, 'ally-mindless', 'Seer Porter has no mind');
  assert.match(whispersTo(longer.ctx.sb, 'gm').at(-2), /defense refused<\/b><br><b>Seer Porter<\/b> /);
  assert.deepEqual(joinedAgain(longer.ctx), [[longer.ctx.seer.id]]);
});

// `count` hirelings of the GM (Hireling 0, 1, ...), each a character with a pool and HP
// and a token linked to it: allies enough for an /allies/10.
const hirelings = (ctx, count) => Array.from({ length: count }, (_, i) => {
  const hireling = ctx.sb.add('character', { name: `Hireling ${i}`, controlledby: '' });
  ctx.sb.add('attribute', { _characterid: hireling.id, name: 'psi_pool', current: '1', max: '1' });
  const hp = ctx.sb.add('attribute', { _characterid: hireling.id, name: 'HP', current: '6', max: '6' });
  return ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: hireling.id, name: `Hireling ${i}`, bar1_link: hp.id });
});

test('power-pool: an older companion\'s refusal whose detail starts with /allies/10 is pinned on the eleventh ally drawn in, as /allies/1 is on the second', () => {
  for (const [n, detail] of [[10, '/allies/10: has no mind to draw in'], [1, '/allies/1: has no mind to draw in']]) {
    const ctx = swarmCampaign();
    const allies = hirelings(ctx, 11);
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense imagination-swarm ${allies.map((t) => `--ally ${t.id}`).join(' ')}` });
    const req = lastRequest(ctx.sb);
    assert.equal(req.body.params.allies.length, 11);
    refusal(ctx, req, 'ally-mindless', detail);
    assert.match(whispersTo(ctx.sb, 'Bob').at(-2), new RegExp(`<b>Hireling ${n}</b> has no mind, so it cannot be drawn into the defense\\.`), detail);
  }
});

test('power-pool: a player\'s odds with eleven allies the player does not control assume the defense known by each, /allies/10 included', () => {
  const ctx = swarmCampaign();
  ctx.sb.objects.find((o) => o.id === ctx.ogre.id).set({ controlledby: BOB });
  const allies = hirelings(ctx, 11);
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.ogre.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mental-stab --defense imagination-swarm ${allies.map((t) => `--ally ${t.id}`).join(' ')}` });
  const p = lastRequest(ctx.sb).body.params;
  assert.equal(p.allies.length, 11);
  assert.deepEqual(plain(p.assume_known), allies.map((_, i) => `/allies/${i}`));
});

// swarmCampaign, and three unlinked Goblin tokens of one psionic Goblin character, all named
// "Goblin" (as Roll20 names copies): the GM's first attacks the second, Alice's third
// (its token's own controller) may join. Returns ctx with `gob`.
const goblinBand = () => {
  const ctx = swarmCampaign();
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  [['psi_psionic', '1'], ['psi_pool', '2', '2'], ['psi_die', '6'], ['HP', '7', '7'], ['psi_attacks', 'Mental Stab'], ['psi_defenses', 'Imagination Swarm']]
    .forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: goblin.id, name, current, max }));
  const token = (controlledby = '') => ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: goblin.id, name: 'Goblin', controlledby, bar1_link: '', bar2_link: '', bar3_link: '' });
  return Object.assign(ctx, { gob: [token(), token(), token(ALICE)] });
};

// The first goblin attacks the second; the third joins; the GM chooses `mode` for the
// second. Returns the request sent.
const goblinJoinsAndGmDefends = (ctx, xid, mode = 'imagination-swarm') => {
  join(ctx, ALICE, ctx.gob[2], xid);
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${xid} --mode ${mode}` });
  return lastRequest(ctx.sb);
};

test('power-pool: a refusal about one of several creatures of one name (five Goblins) is pinned on the one the companion names (API.md 4001 combatant): the Goblin that joined is left out, never refused over and over', () => {
  const ctx = goblinBand();
  const [g1, g2, g3] = ctx.gob;
  ctx.sb.chat({ playerid: GM, selected: [g1.id], content: `!psi attack --target ${g2.id} --mode mental-stab` });
  const xid = reqOf(whispersTo(ctx.sb, 'gm').filter((w) => /defend!/.test(w)).at(-1));
  const req = goblinJoinsAndGmDefends(ctx, xid);
  assert.deepEqual(req.body.params.allies.map(refOf), [g3.id]);
  // Asleep, the Goblin that joined rolls nothing: the companion names it, not the attacker.
  refusal(ctx, req, 'defender-unaware', 'Goblin is asleep: it may defend only with a mode that works while unaware (cognitive-labyrinth), otherwise it rolls nothing', g3.id);
  const again = reqOf(whispersTo(ctx.sb, 'gm').at(-1));
  assert.notEqual(again, xid);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[again].joined), [], 'left out');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`<b>Goblin</b> cannot join the defense: Goblin is asleep: .* It is left out \\(should that change, it may join again: <code>!psi join --req ${again}</code>`));
  // The companion reads it as non-psionic (ally-not-psionic): left out again, not kept to be refused again.
  const second = goblinJoinsAndGmDefends(ctx, again, 'none');
  refusal(ctx, second, 'ally-not-psionic', 'Goblin is not psionic: it joins no psionic combat by its own choice and has no defense mode; only a defender using imagination-swarm draws it in', g3.id);
  const third = reqOf(whispersTo(ctx.sb, 'gm').at(-1));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[third].joined), []);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /The companion reads <b>Goblin<\/b> as non-psionic: it cannot join a defense by its own choice .* It is left out/);
  // A mode the attacking Goblin does not know is no defense's fault, whatever the names.
  const fourth = goblinJoinsAndGmDefends(ctx, third, 'none');
  refusal(ctx, fourth, 'mode-not-known', "Goblin does not know mental-stab (knows [\"mind-thrust\"])", g1.id);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: Mental Stab: Goblin vs\. Goblin<\/b><br>Goblin does not know Mental Stab \(knows Mind Thrust\)\.<br>.*companion: 4001 mode-not-known</);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('power-pool: an older companion\'s refusal naming one of several creatures of one name keeps the joiner, and says how to leave it out: !psi join --req ID --leave (its controller or the GM), which changes nothing else', () => {
  const ctx = goblinBand();
  const [g1, g2, g3] = ctx.gob;
  ctx.sb.chat({ playerid: GM, selected: [g1.id], content: `!psi attack --target ${g2.id} --mode mental-stab` });
  const xid = reqOf(whispersTo(ctx.sb, 'gm').filter((w) => /defend!/.test(w)).at(-1));
  // No combatant in the error data: the name fits all three Goblins, so none is guessed.
  refusal(ctx, goblinJoinsAndGmDefends(ctx, xid), 'ally-not-psionic', 'Goblin is not psionic: it joins no psionic combat by its own choice and has no defense mode; only a defender using imagination-swarm draws it in');
  const gm = whispersTo(ctx.sb, 'gm');
  const again = reqOf(gm.at(-1));
  assert.match(gm.at(-2), new RegExp(`Should the refusal be about Goblin, which joined by its own choice, leave it out \\(its controller or the GM\\): <code>!psi join --req ${again} --leave</code> with its token selected\\.`));
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[again].joined), [{ ref: g3.id, mode: 'imagination-swarm' }]);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`Still joined: Goblin \\(to leave the defense: <code>!psi join --req ${again} --leave</code> with its token selected\\)\\.`));
  // Only its controller or the GM takes it out; Bob controls no Goblin.
  const before = JSON.stringify(ctx.sb.state.Mindscape.exchanges);
  ctx.sb.chat({ playerid: BOB, selected: [g3.id], content: `!psi join --req ${again} --leave` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /you do not control Goblin: only its controller or the GM may make it leave a defense\. Nothing was changed\./);
  ctx.sb.chat({ playerid: GM, selected: [g1.id], content: `!psi join --req ${again} --leave` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Goblin has not joined this defense: there is nothing to leave\. Nothing was changed\./);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.exchanges), before);
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: ALICE, selected: [g3.id], content: `!psi join --req ${again} --leave` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), new RegExp(`left</b><br><b>Goblin</b> leaves the defense of Goblin against the attack of Goblin: it no longer goes with the defending group \\(it may join again before the defense is chosen: <code>!psi join --req ${again}</code>\\)\\.`));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>Goblin<\/b> leaves the defense/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges[again].joined), []);
  assert.equal(requests(ctx.sb).length, sent, 'nothing is sent');
  // The defense goes without it.
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${again} --mode none` });
  assert.equal(lastRequest(ctx.sb).body.params.allies, undefined);
});

test('the help handout lists --keep-by and --ally for single attacks', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, content: '!psi --help' });
  const notes = ctx.sb.objects.find((o) => o.get('_type') === 'handout').get('notes');
  assert.match(notes, /<code>--keep-by die\|action<\/code>: how control is kept if the attack wins/);
  assert.match(notes, /<code>--mode imagination-swarm --ally &#64;&#123;target&#124;Ally&#124;token_id&#125;<\/code> \(repeatable\) draws allied non-psionic creatures into the defense/);
  assert.match(notes, /A psionic creature is not drawn in: it joins by its own choice \(<code>!psi join<\/code>\)\./);
  assert.match(notes, /When the companion refuses the allies or the defense \(a psionic or mindless ally, a mode not known\), nothing is written and the attack still waits: the defense buttons come again/);
  assert.doesNotMatch(notes, /a psionic one defends with Imagination Swarm itself/);
  assert.match(notes, /<li><code>!psi join --req ID<\/code> with a psionic creature's token selected \(its controller or the GM; power-pool\)/);
  assert.doesNotMatch(notes, /in an encounter \(<code>!psi encounter declare/);
  assert.match(notes, /The defense buttons offer the modes the companion knows, read where it reads them: <code>psi_defenses<\/code> when it holds anything \(in every system\).*in revised-2e only, the psionic-defense rows\..*revised-2e and power-pool know none \(only No defense is offered\)/);
  assert.match(notes, /<code>!psi join --req ID --leave<\/code> takes a creature that joined out again \(its controller or the GM\)/);
  assert.match(notes, /its player learns only that it cannot join: the drawing in stays secret/);
  assert.match(notes, /in a wave only the mind struck first draws allies in, and another mind's <code>--ally<\/code> is refused with nothing recorded/);
});

// ------------------------------- power-pool: control at a round's end (!psi round)

// The GM ends the round with `options` for the selected tokens (Ulcen's, by default);
// returns the request it made.
const poolRound = (ctx, options, selected = [ctx.tokens.ulcen.id]) => {
  ctx.sb.chat({ playerid: GM, selected, content: `!psi round${options}` });
  return lastRequest(ctx.sb);
};

const controlLink = (targets, keptBy, wave = null) => ({ targets, kept_by: keptBy, wave });

// The answer exchange.round_end_choices gives for Ulcen as psionicControl leaves him (API.md;
// the real companion's shape): Fenka kept by a die, the thrall by an action; keeping the
// thrall by a die only while his pool has one.
const controlOffer = (ctx, id, { die = true } = {}) => {
  const fenka = controlLink([ctx.fenka.id], 'die');
  const thrall = controlLink([ctx.thrall.id], 'action');
  return { jsonrpc: '2.0', id, result: { system: 'power-pool', summary: 'Ulcen of Tyr controls one creature by a die from its pool; it may release it or keep it by an action instead (the die returns).',
    combatants: [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: {
      release: [fenka, thrall], keep: [{ ...fenka, by: 'action' }].concat(die ? [{ ...thrall, by: 'die' }] : []), cannot_perceive: [thrall] } }] } };
};

// Asks the question for Ulcen and answers it with `offer` (controlOffer's, by default);
// returns the buttons of the GM's question as [label, command].
const askedAboutControl = (ctx, offer = (id) => controlOffer(ctx, id)) => {
  const asked = poolRound(ctx, '');
  assert.equal(asked.body.method, 'exchange.round_end_choices');
  answer(ctx, asked.id, offer(asked.id));
  return buttonsIn(whispersTo(ctx.sb, 'gm').at(-1));
};

const sentDescription = (ctx) => whispersTo(ctx.sb, 'gm').filter((w) => /Mindscape request/.test(w)).at(-1);

test('power-pool !psi round: --release, --keep --by and --cannot-perceive name creatures by token or character, several in one command; those set free outside the round go as puppets', () => {
  const ctx = underControl();
  const req = poolRound(ctx, ` --keep ${ctx.tokens.fenka.id} --by action --cannot-perceive ${ctx.thrall.id}`);
  assert.equal(req.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(req), [ctx.ulcen.id]);
  assert.deepEqual(plain(req.body.params.choices), { [ctx.ulcen.id]: { keep: [{ target: ctx.fenka.id, by: 'action' }], cannot_perceive: [ctx.thrall.id] } });
  // The thrall, kept by an action and out of sight now, goes free: its sheet goes along.
  // So does Fenka's, kept by an action from now on: a controller that cannot act loses
  // such a control at the round's end (controller-cannot-act), which the companion judges.
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id, ctx.fenka.id]);
  assert.match(sentDescription(ctx), /end the round for Ulcen of Tyr \(Ulcen of Tyr keeps Fenka by an action each round; Ulcen of Tyr loses sight of Thrall\)/);
  // Each --keep takes the --by right after it.
  const two = poolRound(ctx, ` --keep ${ctx.fenka.id} --by action --keep ${ctx.thrall.id} --by die`);
  assert.deepEqual(plain(two.body.params.choices), { [ctx.ulcen.id]: { keep: [{ target: ctx.fenka.id, by: 'action' }, { target: ctx.thrall.id, by: 'die' }] } });
  assert.deepEqual(two.body.params.puppets.map(refOf), [ctx.fenka.id, ctx.thrall.id], 'each held by an action, on the sheet or from now on');
  // Fenka's round ends here too: released, she is answered among the combatants.
  const both = poolRound(ctx, ` --release ${ctx.tokens.fenka.id}`, [ctx.tokens.ulcen.id, ctx.tokens.fenka.id]);
  assert.deepEqual(roundRefs(both), [ctx.ulcen.id, ctx.fenka.id]);
  assert.deepEqual(plain(both.body.params.choices), { [ctx.ulcen.id]: { release: [ctx.fenka.id] } });
  assert.deepEqual(both.body.params.puppets.map(refOf), [ctx.thrall.id], 'the thrall, held by an action, goes along; Fenka is a fighter');
  // Losing sight of Fenka, kept by a die, ends nothing: her sheet does not go along.
  assert.deepEqual(poolRound(ctx, ` --cannot-perceive ${ctx.tokens.fenka.id}`).body.params.puppets.map(refOf), [ctx.thrall.id]);
  // A creature that is no character or token here is named by the id its controller's
  // sheet gives; it cannot go along (the companion's summary says its sheet was not given).
  const links = JSON.parse(ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current'));
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify(links.concat([{ id: '-Mgone', kept_by: 'action' }])) });
  const gone = poolRound(ctx, ' --release -Mgone');
  assert.deepEqual(plain(gone.body.params.choices), { [ctx.ulcen.id]: { release: ['-Mgone'] } });
  assert.deepEqual(gone.body.params.puppets.map(refOf), [ctx.thrall.id]);
  // --keep-all ends the round at once, keeping every control as it is; the creature held
  // by an action goes along all the same.
  const all = poolRound(ctx, ' --keep-all');
  assert.equal(all.body.method, 'exchange.end_round');
  assert.deepEqual(Object.keys(all.body.params).sort(), ['combatants', 'puppets', 'system']);
  assert.deepEqual(all.body.params.puppets.map(refOf), [ctx.thrall.id]);
});

test('power-pool !psi round: options that pair up wrongly, name a control twice or a creature nobody here controls are refused before anything is sent; other systems refuse them', () => {
  const ctx = underControl();
  const refused = [
    [` --keep ${ctx.fenka.id}`, /--keep TOKEN wants --by die \(a die of the pool kept for the control\) or --by action \(an action each round\) right after it\. Nothing was sent\./],
    [` --keep ${ctx.fenka.id} --release ${ctx.thrall.id} --by die`, /--keep TOKEN wants --by die/],
    [` --keep ${ctx.fenka.id} --by sometimes`, /--keep TOKEN wants --by die/],
    [` --by die --keep ${ctx.fenka.id}`, /--by goes right after the --keep it belongs to: --keep TOKEN --by die\|action\. Nothing was sent\./],
    [` --release ${ctx.tokens.fenka.id} --cannot-perceive ${ctx.fenka.id}`, /Fenka is named twice: each control takes one choice at a round's end\. Nothing was sent\./],
    [` --release ${ctx.tokens.ogre.id}`, /--release: none of those whose round ends here controls Ogre \(no psi_controlling of theirs names it\): select the controller's token too/],
    [' --release', /--release needs a value\. Nothing was sent\./],
    [` --keep-all --release ${ctx.fenka.id}`, /--keep-all keeps every control as it is, and --release changes one: give one or the other\./],
    [' --pay-none', /--pay-none is a revised-2e option: no mind pays to close in power-pool \(--keep-all ends the round keeping every control as it is\)\./],
    [` --close ${ctx.tokens.ulcen.id}`, /--close is a revised-2e option/],
  ];
  for (const [options, why] of refused) {
    poolRound(ctx, options);
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), why, options);
  }
  // Fenka alone ends her round: the control over her is Ulcen's, who is not in it.
  poolRound(ctx, ` --release ${ctx.tokens.fenka.id}`, [ctx.tokens.fenka.id]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /none of those whose round ends here controls Fenka/);
  assert.equal(requests(ctx.sb).length, 0);
  const other = campaign();
  for (const options of [` --release ${other.tokens.fenka.id}`, ' --keep-all', ` --cannot-perceive ${other.tokens.fenka.id}`]) {
    poolRound(other, options);
    assert.match(whispersTo(other.sb, 'gm').at(-1), /--(release|keep-all|cannot-perceive) is a power-pool option \(psionic control\)\. Nothing was sent\./, options);
  }
  assert.equal(requests(other.sb).length, 0);
});

test('power-pool: a controller that holds one creature is asked about its control before the round ends', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action' }]) });
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  assert.equal(poolRound(ctx, '').body.method, 'exchange.round_end_choices');
});

test('power-pool !psi round: --by is read in any case; a creature two controllers both name in psi_controlling is refused until their sheets are put right', () => {
  const ctx = underControl();
  const req = poolRound(ctx, ` --keep ${ctx.fenka.id} --by Action`);
  assert.equal(req.body.method, 'exchange.end_round');
  assert.deepEqual(plain(req.body.params.choices), { [ctx.ulcen.id]: { keep: [{ target: ctx.fenka.id, by: 'action' }] } });
  ctx.sb.add('attribute', { _characterid: ctx.ogre.id, name: 'psi_controlling', current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action' }]), max: '' });
  const sent = requests(ctx.sb).length;
  poolRound(ctx, ` --release ${ctx.thrall.id}`, [ctx.tokens.ulcen.id, ctx.tokens.ogre.id]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr and Ogre each name Thrall in psi_controlling: put their sheets right first\./);
  assert.equal(requests(ctx.sb).length, sent);
});

test('power-pool question: a control link that is no link (no creature, a creature id that is no text, kept by neither die nor action) is offered nothing, and the round ends with none chosen', () => {
  const links = [['no creature', { targets: [], kept_by: 'die' }], ['an id that is no text', { targets: [7], kept_by: 'die' }], ['kept by dice', { targets: ['x'], kept_by: 'dice' }]];
  for (const [what, link] of links) {
    const ctx = underControl();
    const asked = poolRound(ctx, '');
    answer(ctx, asked.id, { jsonrpc: '2.0', id: asked.id, result: { system: 'power-pool', summary: 'Ulcen of Tyr controls something.',
      combatants: [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: { release: [link], keep: [], cannot_perceive: [] } }] } });
    assert.match(whispersTo(ctx.sb, 'gm').find((w) => /Ulcen of Tyr controls something/.test(w)) || '', /Nobody holds a control to keep or let go: the round ends with none chosen\./, what);
    assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round', what);
  }
});

test('power-pool question: a wave held by dice takes a die each; a link the companion calls a wave is said to be one though it holds one creature; a creature whose id cannot stand in a command gets no buttons; a keep by neither die nor action is no offer', () => {
  const ctx = underControl();
  const asked = poolRound(ctx, '');
  const pair = controlLink([ctx.fenka.id, ctx.thrall.id], 'die', 'w1');
  const odd = controlLink(['odd)id'], 'action', 'w2');
  answer(ctx, asked.id, { jsonrpc: '2.0', id: asked.id, result: { system: 'power-pool', summary: 'Ulcen of Tyr controls three creatures.',
    combatants: [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: { release: [pair, odd], keep: [{ ...pair, by: 'fist' }], cannot_perceive: [] } }] } });
  const question = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(question, /controls <b>Fenka, Thrall<\/b> by a die each from its pool, one psionic wave \(kept and let go together\): \[Release them\]/);
  assert.match(question, /by an action each round, one psionic wave \(kept and let go together\): \(no buttons: its id cannot stand in a command\)/);
  assert.doesNotMatch(question, /Keep them/, 'a keep by neither die nor action is no offer');
});

test('power-pool question: a newer question answers the older, whose buttons end nothing; a keep by another means than offered, or a loss of sight not offered, is refused; a creature known only by its id in psi_controlling is named by that id', () => {
  const ctx = underControl();
  const first = Object.fromEntries(askedAboutControl(ctx));
  askedAboutControl(ctx);
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, content: first['Keep everything as it is'] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  const [qid] = Object.keys(ctx.sb.state.Mindscape.questions);
  ctx.sb.chat({ playerid: GM, content: `!psi round --answer ${qid} --keep ${ctx.fenka.id} --by die` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr was not offered keeping Fenka by a die this round\./);
  ctx.sb.chat({ playerid: GM, content: `!psi round --answer ${qid} --cannot-perceive ${ctx.fenka.id}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr was not offered losing sight of Fenka this round\./);
  assert.equal(requests(ctx.sb).length, sent);
  // A creature that is no character or token here: the companion's offer names its id.
  const asked = poolRound(ctx, '');
  answer(ctx, asked.id, { jsonrpc: '2.0', id: asked.id, result: { system: 'power-pool', summary: 'Ulcen of Tyr controls a ghost.',
    combatants: [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: { release: [controlLink(['ghost1'], 'action')], keep: [], cannot_perceive: [] } }] } });
  const [ghostQid] = Object.keys(ctx.sb.state.Mindscape.questions);
  ctx.sb.chat({ playerid: GM, content: `!psi round --answer ${ghostQid} --release ghost1` });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.deepEqual(plain(ended.body.params.choices), { [ctx.ulcen.id]: { release: ['ghost1'] } });
});

test('power-pool: a controller\'s control is offered before the round ends; a button ends it with that one change, once, and the creature set free has its sheet freed', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id], content: '!psi round' });
  const asked = lastRequest(ctx.sb);
  // Only the controller is asked about; nothing ends yet.
  assert.equal(asked.body.method, 'exchange.round_end_choices');
  assert.deepEqual(roundRefs(asked), [ctx.ulcen.id]);
  assert.match(sentDescription(ctx), /ask what control may be kept or let go before the round ends for Ulcen of Tyr, Ogre/);
  answer(ctx, asked.id, controlOffer(ctx, asked.id));
  assert.equal(requests(ctx.sb).length, 1, 'the round waits for the GM');
  const question = whispersTo(ctx.sb, 'gm').at(-1);
  assert.match(question, /<b>Ulcen of Tyr<\/b> controls <b>Fenka<\/b> by a die from its pool: \[Release\]/);
  assert.match(question, /<b>Ulcen of Tyr<\/b> controls <b>Thrall<\/b> by an action each round: \[Release\]/);
  assert.match(question, /Each button ends the round with that one change, every other control holding as it is/);
  assert.match(question, /For several changes at once, type them in one command: <code>!psi round --answer [A-Za-z0-9]+ --release TOKEN --keep TOKEN --by die --cannot-perceive TOKEN<\/code>/);
  const buttons = buttonsIn(question);
  const qid = /--answer (\S+)/.exec(buttons[0][1])[1];
  assert.deepEqual(buttons, [
    ['Release', `!psi round --answer ${qid} --release ${ctx.fenka.id}`],
    ['Keep it by an action instead', `!psi round --answer ${qid} --keep ${ctx.fenka.id} --by action`],
    ['Release', `!psi round --answer ${qid} --release ${ctx.thrall.id}`],
    ['Keep it by a die instead', `!psi round --answer ${qid} --keep ${ctx.thrall.id} --by die`],
    ['Lost sight', `!psi round --answer ${qid} --cannot-perceive ${ctx.thrall.id}`],
    ['Keep everything as it is', `!psi round --answer ${qid} --keep-all`],
  ]);
  // A player cannot press it; the GM releases Fenka with nothing selected: the round ends
  // for both fighters of the question, and Fenka's sheet goes along.
  ctx.sb.chat({ playerid: ALICE, content: buttons[0][1] });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /only a GM may end the psionic round/);
  ctx.sb.chat({ playerid: GM, content: buttons[0][1] });
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(ended), [ctx.ulcen.id, ctx.tokens.ogre.id]);
  assert.deepEqual(plain(ended.body.params.choices), { [ctx.ulcen.id]: { release: [ctx.fenka.id] } });
  // Fenka set free, and the thrall Ulcen holds by an action.
  assert.deepEqual(ended.body.params.puppets.map(refOf), [ctx.fenka.id, ctx.thrall.id]);
  // A second press ends nothing more.
  ctx.sb.chat({ playerid: GM, content: buttons[5][1] });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /there is no round waiting for that answer/);
  assert.equal(requests(ctx.sb).length, 2);
  // The answer writes both sheets, the puppet's as a fighter's.
  answer(ctx, ended.id, { jsonrpc: '2.0', id: ended.id, result: {
    system: 'power-pool', combatants: [], others: [{ id: ctx.fenka.id, before: {}, after: {} }], rolls: [], unused_dice: {},
    events: [{ type: 'control-ended', combatant: ctx.fenka.id, controller: ctx.ulcen.id, reason: 'released' }],
    summary: 'End of the round: Ulcen of Tyr releases Fenka.',
    updates: [
      { character_id: ctx.ulcen.id, attributes: { psi_pool: { current: 4 }, psi_dedicated: { current: '[]' }, psi_controlling: { current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action', wave: null }]) } } },
      { character_id: ctx.fenka.id, attributes: { psi_controlled_by: { current: '' } } },
    ] } });
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), '');
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'psi_pool'), 4);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr releases Fenka\.\}\}/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)));
});

test('power-pool question: a wave is one line; what was not offered, a wave named twice and an uncontrolled creature are refused; several offers typed in one answer; keep everything', () => {
  const ctx = underControl();
  // The thrall and a goblin are one psionic wave's, kept by an action; the pool has no die left.
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_controlled_by', current: ctx.ulcen.id, max: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_pool').set({ current: '0' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify([
    { id: ctx.fenka.id, kept_by: 'die' }, { id: ctx.thrall.id, kept_by: 'action', wave: 'w1' }, { id: goblin.id, kept_by: 'action', wave: 'w1' }]) });
  const fenka = controlLink([ctx.fenka.id], 'die');
  const wave = controlLink([ctx.thrall.id, goblin.id], 'action', 'w1');
  const offer = (id) => ({ jsonrpc: '2.0', id, result: { system: 'power-pool', summary: 'S.', combatants: [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: {
    release: [fenka, wave], keep: [{ ...fenka, by: 'action' }], cannot_perceive: [wave] } }] } });
  const buttons = askedAboutControl(ctx, offer);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>Ulcen of Tyr<\/b> controls <b>Thrall, Goblin<\/b> by an action each round, one psionic wave \(kept and let go together\): \[Release them\]/);
  assert.deepEqual(buttons.map(([label]) => label), ['Release', 'Keep it by an action instead', 'Release them', 'Lost sight', 'Keep everything as it is']);
  const qid = /--answer (\S+)/.exec(buttons[0][1])[1];
  const sent = requests(ctx.sb).length;
  const typed = (options) => ctx.sb.chat({ playerid: GM, content: `!psi round --answer ${qid}${options}` });
  typed(` --keep ${goblin.id} --by die`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr was not offered keeping Goblin by a die this round\./);
  typed(` --release ${ctx.thrall.id} --cannot-perceive ${goblin.id}`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Thrall and Goblin are creatures of one psionic wave, held by one control: each control takes one choice/);
  typed(` --release ${ctx.tokens.ogre.id}`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--release: Ogre is under none of the controls this question offered\./);
  typed(` --close ${ctx.ulcen.id}`);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--close is a revised-2e option/);
  assert.equal(requests(ctx.sb).length, sent, 'a refused answer sends nothing and leaves the question open');
  // Two offers at once: Fenka released and the wave out of sight free all three.
  typed(` --release ${ctx.tokens.fenka.id} --cannot-perceive ${goblin.id}`);
  const ended = lastRequest(ctx.sb);
  assert.deepEqual(plain(ended.body.params.choices), { [ctx.ulcen.id]: { release: [ctx.fenka.id], cannot_perceive: [goblin.id] } });
  assert.deepEqual(ended.body.params.puppets.map(refOf), [ctx.fenka.id, ctx.thrall.id, goblin.id]);
  assert.match(sentDescription(ctx), /Ulcen of Tyr releases Fenka; Ulcen of Tyr loses sight of Thrall, Goblin/);
  // Keep everything as it is: the round ends with no choice; only the wave held by an
  // action goes along (its controller might not act), not Fenka, held by a die.
  const again = askedAboutControl(ctx, offer);
  ctx.sb.chat({ playerid: GM, content: again.at(-1)[1] });
  const kept = lastRequest(ctx.sb);
  assert.equal(kept.body.method, 'exchange.end_round');
  assert.deepEqual(Object.keys(kept.body.params).sort(), ['combatants', 'puppets', 'system']);
  assert.deepEqual(kept.body.params.puppets.map(refOf), [ctx.thrall.id, goblin.id]);
});

test('power-pool question: a controller whose sheet changed since is asked about again; one that holds no control any more, or is offered nothing, ends the round with none chosen', () => {
  const ctx = underControl();
  let buttons = askedAboutControl(ctx);
  ctx.sb.attribute(ctx.ulcen.id, 'psi_pool').set({ current: '2' });
  ctx.sb.chat({ playerid: GM, content: buttons[0][1] });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The sheet of Ulcen of Tyr changed since the question, and so may the control it holds: asking the companion again\./.test(w)));
  const again = lastRequest(ctx.sb);
  assert.equal(again.body.method, 'exchange.round_end_choices');
  answer(ctx, again.id, controlOffer(ctx, again.id));
  buttons = buttonsIn(whispersTo(ctx.sb, 'gm').at(-1));
  // The control ends elsewhere before the button is pressed.
  const links = ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current');
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.chat({ playerid: GM, content: buttons[0][1] });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The sheet of Ulcen of Tyr shows no creature under control any more: the round ends with no change of control\./.test(w)));
  const ended = lastRequest(ctx.sb);
  assert.equal(ended.body.method, 'exchange.end_round');
  assert.equal(ended.body.params.choices, undefined);
  // The companion offers nothing (its reading of the sheet): the round ends at once.
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: links });
  const asked = poolRound(ctx, '');
  answer(ctx, asked.id, { jsonrpc: '2.0', id: asked.id, result: { system: 'power-pool', summary: 'Nobody has anything to choose.', combatants: [{ id: ctx.ulcen.id, name: 'Ulcen of Tyr', choices: {} }] } });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.end_round');
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Nobody has anything to choose\. Nobody holds a control to keep or let go: the round ends with none chosen\./.test(w)));
});

test('power-pool question: --keep-all while it is on its way answers it; one that times out says how to end the round without it', () => {
  const ctx = underControl();
  const asked = poolRound(ctx, '');
  ctx.sb.advance(30000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /To end the round without the question, run <code>!psi round --keep-all<\/code> \(or name the changes: <code>--release TOKEN<\/code>/);
  const second = poolRound(ctx, '');
  poolRound(ctx, ' --keep-all');
  answer(ctx, second.id, controlOffer(ctx, second.id));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The round was ended, or asked about again, before this answer came/);
  answer(ctx, asked.id, controlOffer(ctx, asked.id));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /This answer came late, so the round was not ended from it/);
  assert.equal(endRoundsSent(ctx).length, 1);
});

test('power-pool: a puppet\'s write-back is made as a fighter\'s (an unlinked token keeps its own), its sheet warnings name it, and a write it misses is reported', () => {
  const ctx = underControl();
  // The ogre's unlinked token is Ulcen's too, kept by an action: its psi_* state is its own.
  const ogre = ctx.tokens.ogre.id;
  ctx.sb.state.Mindscape.tokens[ogre] = { psi_controlled_by: { name: 'psi_controlled_by', current: ctx.ulcen.id, max: '' } };
  const links = JSON.parse(ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current'));
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify(links.concat([{ id: ogre, kept_by: 'action' }])) });
  const req = poolRound(ctx, ` --release ${ogre} --cannot-perceive ${ctx.thrall.id}`);
  assert.deepEqual(req.body.params.puppets.map(refOf), [ogre, ctx.thrall.id]);
  assert.equal(attribOf(req.body.params.puppets[0], 'psi_controlled_by').current, ctx.ulcen.id);
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').setWithWorker = () => { throw new Error('sheet locked'); };
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: {
    system: 'power-pool', combatants: [], rolls: [], unused_dice: {}, summary: 'End of the round: Ulcen of Tyr releases Ogre. Ulcen of Tyr loses sight of Thrall: the control ends.',
    events: [{ type: 'control-ended', combatant: ogre, controller: ctx.ulcen.id, reason: 'released' }, { type: 'control-ended', combatant: ctx.thrall.id, controller: ctx.ulcen.id, reason: 'not-perceived' }],
    warnings: ['/puppets/1: no psi_die attribute; the pool\'s die taken as d8'],
    updates: [
      { character_id: ctx.ulcen.id, attributes: { psi_controlling: { current: JSON.stringify([{ id: ctx.fenka.id, kept_by: 'die', wave: null }]) } } },
      { character_id: ogre, attributes: { psi_controlled_by: { current: '' } } },
      { character_id: ctx.thrall.id, attributes: { psi_controlled_by: { current: '' } } },
    ] } });
  assert.deepEqual(plain(ctx.sb.state.Mindscape.tokens[ogre].psi_controlled_by), { name: 'psi_controlled_by', current: '', max: '' });
  assert.equal(ctx.sb.attribute(ctx.ogre.id, 'psi_controlled_by'), null, 'the copies of the ogre share nothing of it');
  assert.equal(JSON.parse(valueOf(ctx, ctx.ulcen.id, 'psi_controlling')).length, 1);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w)), /Thrall: no psi_die attribute/);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /sheets not updated/.test(w)), /<b>Thrall<\/b> \(writing failed; the API console has the details\): psi_controlled_by .*the other changes were written|the other changes were written.*<b>Thrall<\/b>/);
  assert.equal(valueOf(ctx, ctx.thrall.id, 'psi_controlled_by'), ctx.ulcen.id);
});

test('power-pool: a controller that cannot act loses the control it keeps by an action at the round\'s end without any choice (controller-cannot-act): the creatures it holds so go along, and their sheets are freed', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode private' });
  ctx.thrall.set({ controlledby: BOB });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'asleep', max: '' });
  // Fenka, held by a die, holds: only the thrall goes along; nobody needs to choose anything.
  const from = ctx.sb.chats.length;
  const req = poolRound(ctx, ' --keep-all');
  assert.equal(req.body.params.choices, undefined);
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id]);
  answer(ctx, req.id, thrallFreed(ctx, req.id, 'End of the round: Ulcen of Tyr is asleep and cannot spend the action that keeps its control of Thrall: the control ends.', 'controller-cannot-act'));
  assertThrallFreed(ctx);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr is asleep and cannot spend the action that keeps its control of Thrall: the control ends\.\}\}/);
  // The private card goes to the controllers of Ulcen and of the thrall set free.
  const cardsTo = (start) => ctx.sb.chats.slice(start).map((c) => c.input).filter((t) => t.includes('{{name=End of the round}}')).map((t) => t.split(' &{')[0]);
  assert.deepEqual(cardsTo(from), ['/w gm', '/w "Alice"', '/w "Bob"']);
  // Where nothing changes, the GM is told whose round ended, not the puppets sent along.
  const quiet = poolRound(ctx, ' --keep-all', [ctx.tokens.fenka.id]);
  assert.equal(quiet.body.params.puppets, undefined, 'Fenka controls nobody');
  ctx.sb.attribute(ctx.ulcen.id, 'psi_conditions').set({ current: '' });
  const kept = poolRound(ctx, ' --keep-all');
  assert.equal(kept.body.params.puppets, undefined, 'the thrall is free now');
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action' }]) });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: ctx.ulcen.id });
  const held = poolRound(ctx, ' --keep-all');
  answer(ctx, held.id, { jsonrpc: '2.0', id: held.id, result: { system: 'power-pool', combatants: [], rolls: [], unused_dice: {}, events: [], summary: 'End of the round: nothing changes.', updates: [] } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /End of the round: nothing changes\. \(Ulcen of Tyr\)<\/div>$/);
  // A thrall whose control held learns nothing of Ulcen's round.
  ctx.sb.attribute(ctx.ulcen.id, 'psi_conditions').set({ current: 'dazed' });
  const dazed = poolRound(ctx, ' --keep-all');
  assert.deepEqual(dazed.body.params.puppets.map(refOf), [ctx.thrall.id]);
  const later = ctx.sb.chats.length;
  answer(ctx, dazed.id, { jsonrpc: '2.0', id: dazed.id, result: { system: 'power-pool', combatants: [{ id: ctx.ulcen.id, before: {}, after: {} }], rolls: [], unused_dice: {},
    events: [{ type: 'condition-ended', combatant: ctx.ulcen.id, condition: 'dazed' }], summary: 'End of the round: Ulcen of Tyr is no longer dazed.',
    updates: [{ character_id: ctx.ulcen.id, attributes: { psi_conditions: { current: '' } } }] } });
  assert.deepEqual(cardsTo(later), ['/w gm', '/w "Alice"']);
});

test('power-pool: a round\'s end the companion refuses (a control ended meanwhile, no die to dedicate, a controller that cannot act, a control chosen twice) changes nothing and tells the GM why', () => {
  const ctx = underControl();
  const cases = [
    [` --release ${ctx.tokens.fenka.id}`, { code: 4001, message: 'The rules forbid it', data: { rule: 'not-controlling', detail: `Ulcen of Tyr does not control "${ctx.fenka.id}" (/choices/${ctx.ulcen.id}/release/0)` } },
      /Refused: End of the round<\/b><br>Ulcen of Tyr does not control Fenka\.<br>Nothing was changed: the round has not ended\. The choices sent: Ulcen of Tyr releases Fenka\. A sheet changed since the choice was made .*run <code>!psi round<\/code> again/],
    [` --keep ${ctx.thrall.id} --by die`, { code: 4001, message: 'The rules forbid it', data: { rule: 'no-die-to-dedicate', detail: 'Ulcen of Tyr has no die in its pool to keep control with' } },
      /<br>Ulcen of Tyr has no die in its pool to keep control with\.<br>Nothing was changed: the round has not ended\. The choices sent: Ulcen of Tyr keeps Thrall by a die\. Keeping control by a die needs a die in the controller's pool for each creature held \(a psionic wave: one each\): keep it by an action, or release it\./],
    [` --keep ${ctx.thrall.id} --by die`, { code: 4001, message: 'The rules forbid it', data: { rule: 'controller-cannot-act', detail: 'Ulcen of Tyr is unconscious and cannot act: it cannot change how it keeps its control (one kept by an action ends as the round ends)', combatant: ctx.ulcen.id } },
      /<br>Ulcen of Tyr is unconscious and cannot act: it cannot change how it keeps its control \(one kept by an action ends as the round ends\)\.<br>Nothing was changed: the round has not ended\. The choices sent: Ulcen of Tyr keeps Thrall by a die\. A controller that cannot act \(asleep, unconscious, stunned, at 0 HP or fewer\) keeps its control as it is: run <code>!psi round<\/code> again without <code>--keep<\/code> for it\./],
    [` --release ${ctx.thrall.id}`, { code: -32602, message: 'Invalid params', data: { errors: [{ path: `/choices/${ctx.ulcen.id}/release/1`, message: `"${ctx.thrall.id}" is held by the control /choices/${ctx.ulcen.id}/release/0 already chooses for (a psionic wave's creatures share one): one choice each` }] } },
      /Refused: End of the round<\/b><br>Thrall is held by the control Ulcen of Tyr&#39;s release already chooses for \(a psionic wave&#39;s creatures share one\): one choice each\.<br>Nothing was changed: the round has not ended\. The choices sent: Ulcen of Tyr releases Thrall\. Each control takes one choice/],
  ];
  for (const [options, error, told] of cases) {
    const req = poolRound(ctx, options);
    answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, error });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), told, options);
    // The words are the table's; the companion's code and rule stay in the GM's small print.
    assertPlainRefusal(whispersTo(ctx.sb, 'gm').at(-1).replace(/<span style="font-size:9px[^>]*>[^<]*<\/span>/, ''), [error.data.rule || '/choices/']);
  }
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.ok(ctx.sb.chats.every((c) => c.input.startsWith('/w ')), 'nothing is posted to the table');
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
});

// ------------------------ power-pool: a puppet's sheet the companion refuses

// The companion's refusal of a request for fields its schema refuses (-32602), given as
// [path, message] (API.md: error.data.errors).
const schemaRefusal = (id, errors) => ({ jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid params',
  data: { errors: errors.map(([path, message]) => ({ path, message })) } } });

// Adds creatures under Ulcen's control, kept `keptBy`, after those psionicControl gives
// him (their sheets and his psi_controlling say so, as the companion writes it).
const heldByUlcen = (ctx, names, keptBy = 'action') => {
  const added = names.map((name) => ctx.sb.add('character', { name, controlledby: '' }));
  added.forEach((c) => ctx.sb.add('attribute', { _characterid: c.id, name: 'psi_controlled_by', current: ctx.ulcen.id, max: '' }));
  const controlling = ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling');
  controlling.set({ current: JSON.stringify(JSON.parse(controlling.get('current')).concat(added.map((c) => ({ id: c.id, kept_by: keptBy })))) });
  return added;
};

const refusedTold = (ctx) => whispersTo(ctx.sb, 'gm').filter((w) => /The companion refused the sheet/.test(w));

test('power-pool: a round\'s end the companion refuses for a puppet\'s sheet alone is sent again without it, as it was (sheets read again), the GM told to put that sheet right; the answer is applied', () => {
  const ctx = underControl();
  ctx.sb.state.Mindscape.config.house = { 'power-pool': { 'H-PP-NO-POOL': false } };
  const req = poolRound(ctx, ` --release ${ctx.tokens.fenka.id}`);
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.fenka.id, ctx.thrall.id]);
  // Meanwhile Ulcen's sheet changes, and so do the campaign's house rules: the request is
  // sent again with the sheets as they are now and the house rules it carried.
  ctx.sb.attribute(ctx.ulcen.id, 'HP').set({ current: '17' });
  ctx.sb.state.Mindscape.config.house = {};
  answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/1/data/attribs/0/current', 'psi_pool: 99 is above its maximum <2> [[1d4]]']]));
  const again = lastRequest(ctx.sb);
  assert.notEqual(again.id, req.id);
  assert.equal(again.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(again), [ctx.ulcen.id]);
  assert.equal(attribOf(again.body.params.combatants[0], 'HP').current, '17');
  assert.deepEqual(plain(again.body.params.choices), { [ctx.ulcen.id]: { release: [ctx.fenka.id] } });
  assert.deepEqual(again.body.params.puppets.map(refOf), [ctx.fenka.id]);
  assert.deepEqual(plain(again.body.params.options), { 'H-PP-NO-POOL': false });
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [again.id]);
  // The job kept in state (also across a restart) holds refs and choices, not sheets.
  const job = plain(ctx.sb.state.Mindscape.pending[again.id]);
  assert.deepEqual(job.refused, [ctx.thrall.id]);
  assert.doesNotMatch(JSON.stringify(job), /attribs/);
  const told = refusedTold(ctx);
  assert.equal(told.length, 1);
  assert.match(told[0], /End of the round.*The companion refused the sheet of Thrall \(under psionic control, sent along as puppets\): Thrall&#39;s sheet: psi_pool: 99 is above its maximum .*companion: -32602 \/puppets\/1\/data\/attribs\/0\/current<\/span><br>/);
  assert.match(told[0], /Nothing was changed: the request is sent again without it\. The control over it may end while the sheet of Thrall still shows it: put that sheet right\./);
  assert.doesNotMatch(told[0], /<2>|\[\[/, 'the companion\'s text is escaped');
  assert.equal(ctx.sb.workerWrites.length, 0);
  // The answer to the request sent again is applied as any round's end.
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, result: {
    system: 'power-pool', combatants: [{ id: ctx.ulcen.id, before: {}, after: {} }], others: [{ id: ctx.fenka.id, before: {}, after: {} }], rolls: [], unused_dice: {},
    summary: `End of the round: Ulcen of Tyr releases Fenka. "${ctx.thrall.id}" was not given: its sheet still shows it under Ulcen of Tyr's control until it is changed.`,
    events: [{ type: 'control-ended', combatant: ctx.fenka.id, controller: ctx.ulcen.id, reason: 'released' }],
    updates: [
      { character_id: ctx.ulcen.id, attributes: { psi_controlling: { current: JSON.stringify([{ id: ctx.thrall.id, kept_by: 'action', wave: null }]) } } },
      { character_id: ctx.fenka.id, attributes: { psi_controlled_by: { current: '' } } },
    ] } });
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psi_controlled_by'), '');
  assert.deepEqual(JSON.parse(valueOf(ctx, ctx.ulcen.id, 'psi_controlling')).map((l) => l.id), [ctx.thrall.id]);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr releases Fenka\./);
  // The creature the companion was not given is named, not shown by its id.
  assert.match(ctx.sb.chats.at(-1).input, /Thrall was not given: its sheet still shows it/);
  assert.doesNotMatch(ctx.sb.chats.at(-1).input, new RegExp(ctx.thrall.id));
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
});

test('power-pool: a rest refused for the sheet at /puppets/10 alone is sent again without the eleventh puppet, as one at /puppets/1 is without the second', () => {
  for (const n of [10, 1]) {
    const ctx = underControl();
    heldByUlcen(ctx, Array.from({ length: 10 }, (_, i) => `Porter ${i}`));
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
    const req = lastRequest(ctx.sb);
    const puppets = req.body.params.puppets.map(refOf);
    assert.equal(puppets.length, 11);
    answer(ctx, req.id, schemaRefusal(req.id, [[`/puppets/${n}/data/attribs/0/current`, 'psi_pool: not a number']]));
    const again = lastRequest(ctx.sb);
    assert.notEqual(again.id, req.id, `/puppets/${n}`);
    assert.deepEqual(again.body.params.puppets.map(refOf), puppets.filter((_, i) => i !== n));
  }
});

test('power-pool: a rest the companion refuses for a puppet\'s sheet alone is sent again without it; the answer frees the sheets of the others', () => {
  const ctx = underControl();
  const [porter] = heldByUlcen(ctx, ['Porter']);
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id, porter.id]);
  answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/0/data/attribs/2/current', 'psi_die: must be one of 4, 6, 8, 10, 12']]));
  const again = lastRequest(ctx.sb);
  assert.notEqual(again.id, req.id);
  assert.equal(again.body.method, 'combatants.rest');
  assert.deepEqual(restRefs(again), [ctx.ulcen.id]);
  assert.deepEqual(Object.keys(again.body.params).sort(), ['combatants', 'puppets', 'system']);
  assert.deepEqual(again.body.params.puppets.map(refOf), [porter.id]);
  assert.match(refusedTold(ctx).at(-1), /Long rest.*The companion refused the sheet of Thrall .*psi_die: must be one of 4, 6, 8, 10, 12\.<br><span[^>]*>companion: -32602 \/puppets\/0\/data\/attribs\/2\/current<\/span><br>Nothing was changed: the request is sent again without it\..*put that sheet right/);
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, result: {
    system: 'power-pool', combatants: [{ id: ctx.ulcen.id, before: {}, after: {} }], others: [{ id: porter.id, before: {}, after: {} }], rolls: [], unused_dice: {}, warnings: [],
    summary: 'After the rest: Ulcen of Tyr rests and spends no action to keep its control: the control of Porter and Thrall ends.',
    events: [{ type: 'control-ended', combatant: porter.id, controller: ctx.ulcen.id, reason: 'rest' }, { type: 'control-ended', combatant: ctx.thrall.id, controller: ctx.ulcen.id, reason: 'rest' }],
    updates: [
      { character_id: ctx.ulcen.id, attributes: { psi_controlling: { current: JSON.stringify([{ id: ctx.fenka.id, kept_by: 'die', wave: null }]) } } },
      { character_id: porter.id, attributes: { psi_controlled_by: { current: '' } } },
    ] } });
  assert.equal(valueOf(ctx, porter.id, 'psi_controlled_by'), '');
  assert.deepEqual(JSON.parse(valueOf(ctx, ctx.ulcen.id, 'psi_controlling')).map((l) => l.id), [ctx.fenka.id]);
  assert.equal(valueOf(ctx, ctx.thrall.id, 'psi_controlled_by'), ctx.ulcen.id, 'the refused sheet is not written');
  assert.equal(ctx.sb.chats.at(-1).input, '&{template:default} {{name=Long rest}} {{Summary=After the rest: Ulcen of Tyr rests and spends no action to keep its control: the control of Porter and Thrall ends.}}');
});

test('power-pool: a second refusal of another puppet\'s sheet leaves that one out too, with the first', () => {
  const ctx = underControl();
  const [porter, mule] = heldByUlcen(ctx, ['Porter', 'Mule']);
  const req = poolRound(ctx, ' --keep-all');
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id, porter.id, mule.id]);
  answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/2/data/attribs/0/current', 'psi_pool: not a number']]));
  const second = lastRequest(ctx.sb);
  assert.deepEqual(second.body.params.puppets.map(refOf), [ctx.thrall.id, porter.id]);
  // Two errors about one sheet (the thrall's, now at /puppets/0) are one puppet refused.
  answer(ctx, second.id, schemaRefusal(second.id, [['/puppets/0/data/attribs/0/current', 'psi_pool: not a number'], ['/puppets/0/data/attribs/1/max', 'psi_die: not a die']]));
  const third = lastRequest(ctx.sb);
  assert.notEqual(third.id, second.id);
  assert.deepEqual(third.body.params.puppets.map(refOf), [porter.id]);
  assert.equal(third.body.params.choices, undefined);
  const told = refusedTold(ctx);
  assert.equal(told.length, 2);
  assert.match(told[0], /refused the sheet of Mule /);
  assert.match(told[1], /refused the sheet of Thrall .*: Thrall&#39;s sheet: psi_pool: not a number\.<br>Thrall&#39;s sheet maximum: psi_die: not a die\.<br><span[^>]*>companion: -32602 \/puppets\/0\/data\/attribs\/0\/current \/puppets\/0\/data\/attribs\/1\/max</);
  // When every puppet is refused, the round still ends, with none.
  answer(ctx, third.id, schemaRefusal(third.id, [['/puppets/0', 'must be an object']]));
  const fourth = lastRequest(ctx.sb);
  assert.equal(fourth.body.params.puppets, undefined);
  assert.deepEqual(roundRefs(fourth), [ctx.ulcen.id]);
  answer(ctx, fourth.id, { jsonrpc: '2.0', id: fourth.id, result: { system: 'power-pool', combatants: [], rolls: [], unused_dice: {}, events: [], summary: 'End of the round: nothing changes.', updates: [] } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /End of the round: nothing changes\. \(Ulcen of Tyr\)/);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
});

test('power-pool: the names of the puppets refused are made chat-safe: markup and inline rolls in a sheet\'s name are shown as text', () => {
  const ctx = underControl();
  const [odd] = heldByUlcen(ctx, ['<b>X</b>[[1d4]]']);
  const req = poolRound(ctx, ' --keep-all');
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id, odd.id]);
  answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/1/data/attribs/0/current', 'psi_pool: not a number']]));
  assert.deepEqual(lastRequest(ctx.sb).body.params.puppets.map(refOf), [ctx.thrall.id]);
  const [told] = refusedTold(ctx);
  assert.match(told, /The companion refused the sheet of &#60;b&#62;X&#60;\/b&#62;&#91;&#91;1d4&#93;&#93; \(under psionic control/);
  assert.match(told, /while the sheet of &#60;b&#62;X&#60;\/b&#62;&#91;&#91;1d4&#93;&#93; still shows it/);
  assert.doesNotMatch(told, /<b>X|\[\[1d4/);
});

// A fighter of the refused request that joined an encounter before the refusal came
// keeps the encounter's own copy: the request sent again leaves it out, with its choices.
const joinsEncounter = (ctx, ref) => {
  ctx.sb.state.Mindscape.encounter = { id: 'enc-1', system: 'power-pool', name: 'x', revision: 1, combatants: { [ref]: ref } };
};

test('power-pool: a round\'s end sent again without a refused puppet leaves out a fighter that joined the encounter meanwhile, and its choices with it', () => {
  const ctx = underControl();
  const req = poolRound(ctx, ` --release ${ctx.tokens.fenka.id}`, [ctx.tokens.ulcen.id, ctx.tokens.ogre.id]);
  assert.deepEqual(roundRefs(req), [ctx.ulcen.id, ctx.tokens.ogre.id]);
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.fenka.id, ctx.thrall.id]);
  // The ogre joins the encounter: the round is ended again for Ulcen alone, with his choice.
  joinsEncounter(ctx, ctx.tokens.ogre.id);
  answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/1/data/attribs/0/current', 'psi_pool: not a number']]));
  const again = lastRequest(ctx.sb);
  assert.notEqual(again.id, req.id);
  assert.deepEqual(roundRefs(again), [ctx.ulcen.id]);
  assert.deepEqual(plain(again.body.params.choices), { [ctx.ulcen.id]: { release: [ctx.fenka.id] } });
  assert.deepEqual(again.body.params.puppets.map(refOf), [ctx.fenka.id]);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Ogre \(joined the encounter since, which keeps its own copy\)/.test(w)));
  // Ulcen joins it instead: the round is ended again for the ogre alone, without Ulcen's choice
  // (nor the puppets it freed).
  const other = underControl();
  const first = poolRound(other, ` --release ${other.tokens.fenka.id}`, [other.tokens.ulcen.id, other.tokens.ogre.id]);
  joinsEncounter(other, other.ulcen.id);
  answer(other, first.id, schemaRefusal(first.id, [['/puppets/1/data/attribs/0/current', 'psi_pool: not a number']]));
  const resent = lastRequest(other.sb);
  assert.notEqual(resent.id, first.id);
  assert.deepEqual(roundRefs(resent), [other.tokens.ogre.id]);
  assert.equal(resent.body.params.choices, undefined);
  assert.equal(resent.body.params.puppets, undefined);
  assert.ok(whispersTo(other.sb, 'gm').some((w) => /Left out: Ulcen of Tyr \(joined the encounter since, which keeps its own copy\)/.test(w)));
});

test('power-pool: a rest sent again without a refused puppet leaves out a fighter that joined the encounter meanwhile', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id], content: '!psi rest' });
  const req = lastRequest(ctx.sb);
  assert.deepEqual(restRefs(req), [ctx.ulcen.id, ctx.tokens.ogre.id]);
  assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id]);
  joinsEncounter(ctx, ctx.tokens.ogre.id);
  answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/0/data/attribs/2/current', 'psi_die: must be one of 4, 6, 8, 10, 12']]));
  const again = lastRequest(ctx.sb);
  assert.notEqual(again.id, req.id);
  assert.equal(again.body.method, 'combatants.rest');
  assert.deepEqual(restRefs(again), [ctx.ulcen.id]);
  assert.equal(again.body.params.puppets, undefined);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Left out: Ogre \(joined the encounter since, which keeps its own copy\)/.test(w)));
});

test('power-pool: when every fighter of a refused round\'s end or rest joined the encounter meanwhile, nothing is sent again and the GM is told so', () => {
  for (const command of [' --keep-all', 'rest']) {
    const ctx = underControl();
    const req = command === 'rest'
      ? (ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' }), lastRequest(ctx.sb))
      : poolRound(ctx, command);
    assert.deepEqual(req.body.params.puppets.map(refOf), [ctx.thrall.id]);
    joinsEncounter(ctx, ctx.ulcen.id);
    const before = requests(ctx.sb).length;
    answer(ctx, req.id, schemaRefusal(req.id, [['/puppets/0/data/attribs/0/current', 'psi_pool: not a number']]));
    assert.equal(requests(ctx.sb).length, before, command);
    const told = whispersTo(ctx.sb, 'gm');
    assert.ok(told.some((w) => /Left out: Ulcen of Tyr \(joined the encounter since, which keeps its own copy\)/.test(w)), command);
    assert.match(told.at(-1), /The companion refused the sheet of Thrall .*Nothing was changed, and none of its fighters is left outside the current encounter: nothing was sent again\./);
    assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [], command);
    assert.equal(ctx.sb.workerWrites.length, 0);
  }
});

test('power-pool: a refusal that names more than puppet sheets (a fighter\'s field, a puppet not sent, a rule) is reported as before and not sent again; nor is a late one', () => {
  const ctx = underControl();
  const cases = [
    [schemaRefusal('ID', [['/puppets/0/data/attribs/0/current', 'psi_pool: not a number'], ['/combatants/0/data/attribs/0/current', 'psp must be a whole number']]),
      /Refused: End of the round<\/b><br>Thrall&#39;s sheet: psi_pool: not a number\.<br>Ulcen of Tyr&#39;s sheet: psp must be a whole number\.<br>Nothing was changed: the round has not ended\./],
    [schemaRefusal('ID', [['/puppets/7/data', 'must be an object']]), /Refused: End of the round<\/b><br>Puppet: must be an object\.<br>Nothing was changed/],
    [schemaRefusal('ID', [['/puppetsx/0', 'unknown']]), /Refused: End of the round<\/b><br>Puppetsx: unknown\./],
    [{ jsonrpc: '2.0', id: 'ID', error: { code: 4001, message: 'The rules forbid it', data: { rule: 'not-controlling', detail: 'Ulcen of Tyr does not control /puppets/0' } } }, /<br>Ulcen of Tyr does not control Thrall\./],
  ];
  for (const [response, told] of cases) {
    const req = poolRound(ctx, ' --keep-all');
    const before = requests(ctx.sb).length;
    answer(ctx, req.id, Object.assign(response, { id: req.id }));
    assert.equal(requests(ctx.sb).length, before, 'nothing is sent again');
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), told);
  }
  assert.equal(refusedTold(ctx).length, 0);
  // An answer that comes after the timeout is not sent again: the GM may have ended the
  // round meanwhile. The GM is told what the companion refused and what to do.
  const late = poolRound(ctx, ' --keep-all');
  ctx.sb.advance(30000);
  const before = requests(ctx.sb).length;
  answer(ctx, late.id, schemaRefusal(late.id, [['/puppets/0/data/attribs/0/current', 'psi_pool: not a number']]));
  assert.equal(requests(ctx.sb).length, before);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /The companion refused the sheet of Thrall .*Nothing was changed\. This answer came late, so the request is not sent again \(the command may have been repeated meanwhile\): if the round has not ended, run <code>!psi round<\/code> again/);
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
});

test('power-pool: at most 64 puppets go along with a round\'s end or a rest (the companion takes no more), those set free first; the others are left out', () => {
  const ctx = underControl();
  const many = heldByUlcen(ctx, Array.from({ length: 70 }, (_, i) => `Thrall ${i + 2}`));
  const [freed] = heldByUlcen(ctx, ['Freed'], 'die');
  const round = poolRound(ctx, ` --release ${freed.id}`);
  assert.equal(round.body.method, 'exchange.end_round');
  assert.deepEqual(round.body.params.puppets.map(refOf), [freed.id, ctx.thrall.id].concat(many.slice(0, 62).map((c) => c.id)));
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi rest' });
  const rest = lastRequest(ctx.sb);
  assert.equal(rest.body.method, 'combatants.rest');
  assert.deepEqual(rest.body.params.puppets.map(refOf), [ctx.thrall.id].concat(many.slice(0, 63).map((c) => c.id)));
});

test('encounter add: more fighters than an encounter holds (64) are refused before anything is sent', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = lastRequest(ctx.sb);
  answer(ctx, create.id, { jsonrpc: '2.0', id: create.id, result: { id: 'enc-1', revision: 0 } });
  const sent = requests(ctx.sb).length;
  const many = Array.from({ length: 65 }, (_, i) => ctx.sb.add('character', { name: `Goblin ${i + 1}`, controlledby: '' }));
  ctx.sb.chat({ playerid: GM, content: `!psi encounter add ${many.map((c) => `--token ${c.id}`).join(' ')}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /an encounter holds at most 64 combatants; select fewer tokens\. Nothing was sent\./);
  assert.equal(requests(ctx.sb).length, sent);
  ctx.sb.chat({ playerid: GM, content: `!psi encounter add ${many.slice(1).map((c) => `--token ${c.id}`).join(' ')}` });
  assert.equal(lastRequest(ctx.sb).body.length, 64);
});

test('the help handout lists power-pool control at the round\'s end', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi --help' });
  const [handout] = ctx.sb.api.findObjs({ _type: 'handout', name: 'Help: Mindscape' });
  assert.match(handout.get('notes'), /power-pool: when a fighter controls creatures.*<code>--release TOKEN<\/code>, <code>--keep TOKEN --by die\|action<\/code>, <code>--cannot-perceive TOKEN<\/code>.*<code>--keep-all<\/code>/);
  assert.match(handout.get('notes'), /A controller that cannot act \(asleep, unconscious, stunned, at 0 HP or fewer\) loses the control it keeps by an action and cannot keep a control another way\. A creature set free whose own round does not end there has its sheet freed too\./);
});

// -------------------------- fighters deleted while an attack waits; guarded callbacks

const calledOff = (sb, name) => whispersTo(sb, name).filter((w) => /attack called off/.test(w));

test('a defender deleted while its attack\'s check waits: the check\'s timeout calls the attack off, naming it, asks nobody, and the Mod sandbox goes on', () => {
  const ctx = campaign({ checkByHand: true });
  attack(ctx);
  ctx.tokens.fenka.remove();
  ctx.fenka.remove();
  // On Roll20 an error thrown out of a timer stops every Mod script of the game.
  assert.doesNotThrow(() => ctx.sb.advance(31000));
  const gm = whispersTo(ctx.sb, 'gm');
  assert.match(gm.find((w) => /no answer/.test(w)), /got no answer from the companion in 30 s\. Start the relay/);
  assert.ok(gm.every((w) => !/the defense is asked without it/.test(w)), 'the GM is not told the defense is asked');
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Ego Whip attack of Ulcen of Tyr on Fenka was called off: Fenka, the mind attacked, is no longer in the game \(its token or character was deleted\)\. Nobody was asked for a defense\. Nothing was written to any sheet\./);
  assert.match(calledOff(ctx.sb, 'Alice').at(-1), /Your Ego Whip attack of Ulcen of Tyr on Fenka was called off: Fenka, the mind attacked, is no longer in the game/);
  assert.deepEqual(buttonsSent(ctx.sb), []);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.ok(gm.every((w) => !/internal error/.test(w)));
  // The sandbox still answers.
  ctx.sb.chat({ playerid: GM, content: '!psi config' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /settings/);
});

test('an unlinked token deleted while its attack\'s check waits: the check\'s answer calls the attack off, naming the token, and asks nobody', () => {
  const ctx = campaign({ checkByHand: true });
  ctx.sb.add('attribute', { _characterid: ctx.ogre.id, name: 'PSP', current: '10', max: '10' });
  ctx.tokens.ogre.set({ name: 'Ogre the Tall' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode ego-whip --mult 1 --range short` });
  const check = lastRequest(ctx.sb);
  ctx.tokens.ogre.remove();
  answer(ctx, check.id, checkAllowed(check.id));
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Ego Whip attack of Ulcen of Tyr on Ogre the Tall was called off: Ogre the Tall, the mind attacked, is no longer in the game/);
  assert.match(calledOff(ctx.sb, 'Alice').at(-1), /Your Ego Whip attack of Ulcen of Tyr on Ogre the Tall was called off/);
  assert.deepEqual(buttonsSent(ctx.sb), []);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
});

test('an attacker deleted while its check waits: the attack is called off when the check times out, naming the attacker; its defender is never asked', () => {
  const ctx = campaign({ checkByHand: true });
  attack(ctx);
  ctx.tokens.ulcen.remove();
  ctx.ulcen.remove();
  assert.doesNotThrow(() => ctx.sb.advance(31000));
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Ego Whip attack of Ulcen of Tyr on Fenka was called off: Ulcen of Tyr, the attacker, is no longer in the game \(its token or character was deleted\)\. Nobody was asked for a defense\./);
  assert.match(calledOff(ctx.sb, 'Alice').at(-1), /Your Ego Whip attack/);
  assert.deepEqual(whispersTo(ctx.sb, 'Bob'), [], 'the defender learns nothing of an attack it was never asked about');
});

test('an attacker deleted while the defense buttons are out: the attack is called off at once, the defender\'s player is told (without the attack mode), and the old button only says no attack waits', () => {
  const ctx = campaign();
  attack(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  const sent = requests(ctx.sb).length;
  ctx.ulcen.remove();
  assert.match(calledOff(ctx.sb, 'Bob').at(-1), /The attack of Ulcen of Tyr on Fenka was called off: Ulcen of Tyr, the attacker, is no longer in the game \(its token or character was deleted\)\. Its defense buttons do nothing now\./);
  assert.ok(calledOff(ctx.sb, 'Bob').every((w) => !/Ego Whip/.test(w)), 'the defending side does not learn the attack mode');
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Ego Whip attack of Ulcen of Tyr on Fenka was called off/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), new RegExp(`there is no attack waiting with id ${xid} \\(already defended, called off, or more than an hour old\\)\\. Nothing was done\\.`));
  assert.equal(requests(ctx.sb).length, sent);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
});

test('power-pool: a target of a psionic wave deleted while its minds choose is left out; the wave goes on against the others, and is sent at once when they have all chosen', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  [['psi_pool', '2', '2'], ['psi_die', '4'], ['HP', '5', '5']].forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: goblin.id, name, current, max }));
  const goblin1 = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: goblin.id, name: 'Goblin 1', bar1_link: '', bar2_link: '', bar3_link: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${goblin1.id} --target ${ctx.tokens.fenka.id} --mode psionic-wave` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Still to choose a defense: Goblin 1\./);
  const sent = requests(ctx.sb).length;
  // The goblin falls to a sword; the GM takes its token off the map.
  goblin1.remove();
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /attack goes on/.test(w)), /Left out of the Psionic Wave attack of Ogre on Goblin 1, Fenka, as no longer in the game \(its token or character was deleted\): Goblin 1\. +The attack goes on against Fenka\./);
  assert.equal(requests(ctx.sb).length, sent + 1, 'Fenka has chosen: the wave is sent');
  const p = lastRequest(ctx.sb).body.params;
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.equal(refOf(p.defender), ctx.fenka.id);
  assert.equal(p.defenders, undefined);
  assert.equal(p.defenses, undefined);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('power-pool: a creature that joined a defense and is deleted before the defense is chosen is left out (the GM is told), and the defense goes to the companion without it', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  join(ctx, ALICE, ctx.tokens.seer, xid);
  ctx.seer.remove();
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Left out of the Mental Stab attack of Ogre on Fenka, as no longer in the game \(its token or character was deleted\): Seer\. +The attack goes on\./);
  assert.ok(whispersTo(ctx.sb, 'Alice').concat(whispersTo(ctx.sb, 'Bob')).every((w) => !/Left out/.test(w)), 'only the GM is told');
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` });
  const p = lastRequest(ctx.sb).body.params;
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.equal(p.allies, undefined);
  assert.equal(p.defenses, undefined);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
});

test('power-pool: a defense the companion refuses after its defender was deleted is not asked again: the attack is called off, and the chooser is told', () => {
  const ctx = swarmCampaign();
  const xid = ogreAttacksFenka(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  const req = lastRequest(ctx.sb);
  ctx.tokens.fenka.remove();
  ctx.fenka.remove();
  refusal(ctx, req, 'ally-mindless', 'Porter has no mind', ctx.porter.id);
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Mental Stab attack of Ogre on Fenka was called off: Fenka, the mind attacked, is no longer in the game/);
  assert.match(calledOff(ctx.sb, 'Bob').at(-1), /The attack of Ogre on Fenka was called off/);
  assert.equal(buttonsSent(ctx.sb).length, 2, 'only the first prompt (to Bob and the GM): nobody is asked again');
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
});

test('a fighter Roll20 still returns while it tells of its deletion is gone all the same: the attack waiting on the ogre\'s token, or on its character, is called off at once', () => {
  for (const [type, object] of [['graphic', (ctx) => ctx.tokens.ogre], ['character', (ctx) => ctx.ogre]]) {
    const ctx = swarmCampaign();
    ogreAttacksFenka(ctx);
    // Roll20 may still return the object whose deletion it tells of.
    ctx.sb.fire(`destroy:${type}`, object(ctx));
    assert.match(calledOff(ctx.sb, 'gm').at(-1) || '', /The Mental Stab attack of Ogre on Fenka was called off: Ogre, the attacker, is no longer in the game/, type);
    assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {}, type);
  }
});

test('power-pool: a psionic wave whose every target answers through one controller is called off when that controller is deleted, naming it once, by name', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.thrall.id} --mode psionic-wave` });
  const sent = requests(ctx.sb).length;
  ctx.ulcen.remove();
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Psionic Wave attack of Ogre on Fenka, Thrall was called off: every mind it strikes \(Ulcen of Tyr\) is no longer in the game \(its token or character was deleted\)\./);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.equal(requests(ctx.sb).length, sent);
});

test('power-pool: an attack on a puppet is called off when the controller answering it is deleted; when its attacker is, the controller\'s player, who was asked, is told, not the puppet\'s', () => {
  const ctx = underControl();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  ctx.tokens.ogre.remove();
  assert.match(calledOff(ctx.sb, 'Alice').at(-1), /The attack of Ogre on Fenka was called off: Ogre, the attacker, is no longer in the game/);
  assert.deepEqual(calledOff(ctx.sb, 'Bob'), [], 'Fenka\'s player was never asked');
  const again = underControl();
  again.sb.chat({ playerid: GM, selected: [again.tokens.ogre.id], content: `!psi attack --target ${again.tokens.fenka.id} --mode mental-stab` });
  again.ulcen.remove();
  assert.match(calledOff(again.sb, 'gm').at(-1), /The Mental Stab attack of Ogre on Fenka was called off: Ulcen of Tyr, which controls Fenka and answers the attack in its place, is no longer in the game/);
  assert.deepEqual(plain(again.sb.state.Mindscape.exchanges), {});
});

test('power-pool: the mind struck first by a wave deleted after drawing allies in: its allies go with its choice, the GM is told, and the next mind leads a group without them', () => {
  const ctx = swarmCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  ctx.fenka.remove();
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Left out of the Psionic Wave attack of Ogre on Fenka, Ulcen of Tyr, as no longer in the game \(its token or character was deleted\): Fenka\. The allies Fenka drew in \(Porter\) go with its choice: Ulcen of Tyr, now struck first, leads the defending group\. The attack goes on against Ulcen of Tyr\./);
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.deepEqual([refOf(p.defender), p.defenders, p.allies], [ctx.ulcen.id, undefined, undefined]);
});

test('power-pool: an ally drawn into a wave\'s defense and deleted while another mind still chooses is left out, the GM told once; the wave waits for that mind and goes without the ally', () => {
  const ctx = swarmCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.porter.id}` });
  const sent = requests(ctx.sb).length;
  ctx.porter.remove();
  const leftOut = () => whispersTo(ctx.sb, 'gm').filter((w) => /attack goes on/.test(w));
  assert.match(leftOut().at(-1), /Left out of the Psionic Wave attack of Ogre on Fenka, Ulcen of Tyr, as no longer in the game \(its token or character was deleted\): Porter\. +The attack goes on against Fenka, Ulcen of Tyr\./);
  assert.equal(requests(ctx.sb).length, sent, 'Ulcen of Tyr has not chosen yet');
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` });
  const p = lastRequest(ctx.sb).body.params;
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.deepEqual([refOf(p.defender), p.defenders.map(refOf), p.allies], [ctx.fenka.id, [ctx.ulcen.id], undefined]);
  assert.deepEqual(plain(p.defense), { mode: 'imagination-swarm' });
  assert.equal(leftOut().length, 1, 'told once');
});

test('an attacker deleted while the Mod sandbox was not running is found gone at the next click: !psi pending, !psi join and the defense button call its attack off', () => {
  const clicks = {
    pending: (ctx) => ctx.sb.chat({ playerid: BOB, content: '!psi pending' }),
    join: (ctx, xid) => join(ctx, ALICE, ctx.tokens.seer, xid),
    defend: (ctx, xid) => ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` }),
  };
  for (const [name, click] of Object.entries(clicks)) {
    const ctx = seerCampaign();
    const xid = ogreAttacksFenka(ctx);
    const sent = requests(ctx.sb).length;
    // No destroy event reaches a sandbox that is down.
    ctx.sb.objects.splice(ctx.sb.objects.indexOf(ctx.tokens.ogre), 1);
    click(ctx, xid);
    assert.match(calledOff(ctx.sb, 'gm').at(-1) || '', /The Mental Stab attack of Ogre on Fenka was called off: Ogre, the attacker, is no longer in the game/, name);
    assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {}, name);
    assert.equal(requests(ctx.sb).length, sent, name);
  }
});

test('power-pool !psi join: the GM\'s join tells the creature\'s player, and the GM once; against an attack on a puppet the controller answering it is told; two tokens selected are refused', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.seer.id, ctx.tokens.ulcen.id], content: `!psi join --req ${xid}` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /refused<\/b><br>select the token of the one psionic creature that joins the defense/);
  assert.equal(ctx.sb.state.Mindscape.exchanges[xid].joined, undefined);
  join(ctx, GM, ctx.tokens.seer, xid);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /joined<\/b><br><b>Seer<\/b> joins the defense of Fenka against the attack of Ogre/);
  assert.equal(ctx.sb.chats.filter((c) => /Mindscape: joined/.test(c.input)).length, 3, 'Bob, Alice and the GM, once each');
  // On the thrall Ulcen answers in its place: Alice learns who joins.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.thrall.id} --mode mental-stab` });
  const onThrall = reqOf(whispersTo(ctx.sb, 'Alice').at(-1));
  join(ctx, BOB, ctx.tokens.fenka, onThrall);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /joined<\/b><br><b>Fenka<\/b> joins the defense of Thrall against the attack of Ogre/);
});

test('power-pool: an attacker deleted after a creature joined the defense is still named in words when its attack is called off', () => {
  const ctx = seerCampaign();
  const xid = ogreAttacksFenka(ctx);
  join(ctx, ALICE, ctx.tokens.seer, xid);
  ctx.tokens.ogre.remove();
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Mental Stab attack of Ogre on Fenka was called off: Ogre, the attacker, is no longer in the game/);
});

test('power-pool: a wave whose remaining target another mind answers now, once a target is deleted, is called off: none of the minds asked is still struck', () => {
  const ctx = underControl();
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  [['psi_pool', '2', '2'], ['psi_die', '4'], ['HP', '5', '5']].forEach(([name, current, max = '']) => ctx.sb.add('attribute', { _characterid: goblin.id, name, current, max }));
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${goblin.id} --mode psionic-wave` });
  const sent = requests(ctx.sb).length;
  // Ulcen lets Fenka go: she would answer for herself now; then the goblin falls.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  goblin.remove();
  assert.match(calledOff(ctx.sb, 'gm').at(-1), /The Psionic Wave attack of Ogre on Fenka, Goblin was called off: none of the minds asked for a defense is still struck by it \(Goblin: no longer in the game/);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
  assert.equal(requests(ctx.sb).length, sent);
});

test('an attack older than an hour is forgotten, not called off, when a fighter of it is deleted, and !psi pending no longer shows its prompt', () => {
  const ctx = campaign();
  attack(ctx);
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.state.Mindscape.exchanges[xid].at -= 61 * 60 * 1000;
  ctx.sb.chat({ playerid: BOB, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /No attack waits for a defense of yours\./);
  attack(ctx);
  const old = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.state.Mindscape.exchanges[old].at -= 61 * 60 * 1000;
  ctx.ulcen.remove();
  assert.deepEqual(calledOff(ctx.sb, 'gm'), []);
  assert.deepEqual(plain(ctx.sb.state.Mindscape.exchanges), {});
});

test('an error inside a request\'s timeout is caught: it goes to the API console, the GM is told, and the Mod sandbox goes on', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const { id } = lastRequest(ctx.sb);
  const { playerIsGM } = ctx.sb.context;
  ctx.sb.context.playerIsGM = () => { throw new Error('player list unavailable'); };
  assert.doesNotThrow(() => ctx.sb.advance(31000));
  ctx.sb.context.playerIsGM = playerIsGM;
  assert.ok(ctx.sb.logs.some((line) => line.includes(`internal error when request ${id} timed out: Error: player list unavailable`)), ctx.sb.logs.join('\n'));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`internal error</b><br>An internal error happened when request ${id} timed out; the API console has the details\\. The Mod sandbox goes on`));
  ctx.sb.chat({ playerid: GM, content: '!psi config' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /settings/);
});

// --------------------------------------------------------- the chat archive

// Roll20 keeps a message in the chat archive (what a reload shows) unless it is sent noarchive.
const archived = (chat) => chat.options.noarchive !== true;

test('what a player or the GM needs after a reload is kept in the chat archive (defense buttons, result cards in the private roll mode, refusals); the request markers and echoes of a command are not', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --rollmode private' });
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  ctx.sb.chat({ playerid: ALICE, content: '!psi round' });
  const { chats } = ctx.sb;
  const markers = chats.filter((c) => /MINDSCAPE-REQ/.test(c.input));
  assert.ok(markers.length >= 2, 'the check and the exchange');
  assert.ok(markers.every((c) => !archived(c)), 'a marker replayed from the archive must not reach the bridge again');
  assert.ok(chats.filter((c) => /Mindscape request <b>/.test(c.input)).every((c) => !archived(c)));
  const prompts = buttonsSent(ctx.sb);
  assert.deepEqual(prompts.map((c) => c.input.split(' ')[1]), ['"Bob"', 'gm']);
  assert.ok(prompts.every(archived), 'the only copy of a secret choice survives a reload');
  const cards = chats.filter((c) => /template:default/.test(c.input));
  assert.deepEqual(cards.map((c) => c.input.split(' ')[1]).sort(), ['"Alice"', '"Bob"', 'gm']);
  assert.ok(cards.every(archived));
  assert.ok(chats.filter((c) => /Mindscape: refused/.test(c.input)).every(archived));
  assert.ok(chats.filter((c) => /Mindscape: (attack declared|defense chosen)/.test(c.input)).every((c) => !archived(c)));
  assert.ok(chats.filter((c) => /Mindscape: settings/.test(c.input)).every(archived));
});

test('an archived defense button clicked again once its attack was answered says no attack waits, and sends nothing', () => {
  const ctx = campaign();
  attackAndDefend(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(buttonsSent(ctx.sb).at(-1).input)[1];
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mind-blank` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), new RegExp(`refused</b><br>there is no attack waiting with id ${xid} \\(already defended, called off, or more than an hour old\\)\\. Nothing was done\\.`));
  assert.equal(requests(ctx.sb).length, sent);
});

test('!psi pending whispers the caller again the defense prompts waiting for a mind it controls (the GM: every one); nothing once the defense is chosen', () => {
  const ctx = campaign();
  attack(ctx);
  const prompt = whispersTo(ctx.sb, 'Bob').at(-1);
  ctx.sb.chat({ playerid: BOB, content: '!psi pending' });
  assert.equal(whispersTo(ctx.sb, 'Bob').at(-1), prompt, 'the same buttons, the same id');
  ctx.sb.chat({ playerid: ALICE, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /pending<\/b><br>No attack waits for a defense of yours\./);
  ctx.sb.chat({ playerid: GM, content: '!psi pending' });
  assert.equal(whispersTo(ctx.sb, 'gm').at(-1), prompt.replace(/^\/w "Bob" /, '/w gm '));
  const xid = /--req ([A-Za-z0-9]+)/.exec(prompt)[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  ctx.sb.chat({ playerid: BOB, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /No attack waits for a defense of yours\./);
  ctx.sb.chat({ playerid: BOB, content: '!psi pending --all' });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /unknown option --all; pending takes no options/);
});

test('!psi pending leaves out the minds of a wave that have chosen: the GM is whispered again only the prompt of the mind still to choose', () => {
  const ctx = swarmCampaign();
  const xid = waveAtFenkaAndUlcen(ctx);
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  const before = whispersTo(ctx.sb, 'gm').length;
  ctx.sb.chat({ playerid: GM, content: '!psi pending' });
  const again = whispersTo(ctx.sb, 'gm').slice(before);
  assert.equal(again.length, 1);
  assert.match(again[0], /<b>Ulcen of Tyr<\/b>, choose a defense:/);
});

test('!psi pending tells the GM how many questions before a round\'s end wait for an answer, after the prompts; a player hears of none; one older than an hour is not counted', () => {
  const ctx = campaign();
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: MAY_CLOSE, max: '' });
  askedToClose(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /pending<\/b><br>No attack waits for a defense now\. A question before a round's end waits for your answer: the buttons are in the chat \(or run <code>!psi round<\/code> again to be asked anew\)\.<\/div>$/);
  ctx.sb.chat({ playerid: ALICE, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /pending<\/b><br>No attack waits for a defense of yours\.<\/div>$/);
  const { questions } = ctx.sb.state.Mindscape;
  const [qid] = Object.keys(questions);
  questions.Q2nd = JSON.parse(JSON.stringify(questions[qid]));
  attack(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-2), /defend!/);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /pending<\/b><br>2 questions before a round's end wait for your answer: the buttons are in the chat/);
  Object.values(questions).forEach((q) => { q.at -= 61 * 60 * 1000; });
  ctx.sb.chat({ playerid: GM, content: '!psi pending' });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /defend!/, 'only the prompt: no question waits');
});

test('a player whose display name holds a double quote cannot be whispered (/w cannot escape it): the GM gets the whisper meant for them, and why', () => {
  const ctx = campaign();
  ctx.sb.api.getObj('player', BOB).properties._displayname = 'Bob "the Bold"';
  attack(ctx);
  assert.ok(ctx.sb.chats.every((c) => !c.input.startsWith('/w "Bob')), 'no whisper to a name that matches nobody');
  const redirected = whispersTo(ctx.sb, 'gm').filter((w) => /could not whisper this to/.test(w));
  assert.equal(redirected.length, 1);
  assert.match(redirected[0], /^\/w gm <div>Mindscape could not whisper this to <b>Bob &#34;the Bold&#34;<\/b>: Roll20 cannot whisper a player whose display name holds a double quote \(&quot;\)\. Ask them to rename themselves without one, and pass this on meanwhile\.<\/div><div[^>]*><b>Mindscape: defend!<\/b>.*!psi defend --req/);
  assert.ok(archived(ctx.sb.chats.find((c) => /could not whisper this to/.test(c.input))));
});

// ------------------------------------------------- !psi round and the Turn Tracker

test('without a selection !psi round takes the Turn Tracker\'s tokens on the page it was opened on (initiativepage), not the player page', () => {
  const ctx = campaign();
  // The players are on another page; the GM runs the fight on -Page, where the tracker is.
  const elsewhere = ctx.sb.add('character', { name: 'Far Away', controlledby: '' });
  ctx.sb.add('attribute', { _characterid: elsewhere.id, name: 'PSP', current: '10', max: '10' });
  const farToken = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Players', represents: elsewhere.id, name: 'Far Away', bar1_link: 'x' });
  ctx.sb.api.Campaign().set({
    turnorder: JSON.stringify([turn(ctx.tokens.fenka), turn(ctx.tokens.ulcen), turn(farToken)]),
    playerpageid: '-Players',
    initiativepage: '-Page',
  });
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.end_round');
  assert.deepEqual(roundRefs(req), [ctx.fenka.id, ctx.ulcen.id]);
  // With the tracker closed (initiativepage false) the player page stands in for it.
  ctx.sb.api.Campaign().set({ initiativepage: false });
  ctx.sb.chat({ playerid: GM, content: '!psi round' });
  assert.deepEqual(roundRefs(lastRequest(ctx.sb)), [elsewhere.id]);
});

// ------------------------------------- the requests kept waiting: their bounds and caps

// The waiting attack `req` (attackAndDefend) copied into state `count` times, each older
// than it, as a long session leaves attacks whose answers never came: ids Seed00000000 on.
const seedAttacks = (ctx, req, count, from = 0) => {
  const pending = ctx.sb.state.Mindscape.pending;
  const job = plain(pending[req.id]);
  return Array.from({ length: count }, (_, i) => {
    const id = `Seed${String(from + i).padStart(8, '0')}`;
    pending[id] = Object.assign({}, job, { id, at: job.at - 100000 + from + i });
    return id;
  });
};

const gmOdds = (ctx) => {
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  return lastRequest(ctx.sb).id;
};

test('above 50 waiting requests only the read-only ones are let go, however many attacks wait; only above 500 the oldest of any kind goes, so that exactly 500 are kept', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const kept = () => plain(ctx.sb.context.Mindscape.pendingIds());
  // 60 attacks wait: an odds asked now is let go at once, and none of the attacks.
  const seeded = seedAttacks(ctx, req, 59);
  const odds = gmOdds(ctx);
  assert.equal(kept().length, 60);
  assert.ok(!kept().includes(odds), 'the odds are let go');
  assert.deepEqual(kept().sort(), seeded.concat([req.id]).sort());
  // 500 attacks wait: all are kept.
  const more = seedAttacks(ctx, req, 440, 59);
  gmOdds(ctx);
  assert.equal(kept().length, 500);
  assert.ok(kept().includes(seeded[0]), 'the oldest of 500 is kept');
  // The 501st: the oldest attack is let go, and only it.
  seedAttacks(ctx, req, 1, 499);
  gmOdds(ctx);
  assert.equal(kept().length, 500);
  assert.ok(!kept().includes(seeded[0]), 'the oldest of 501 is let go');
  assert.ok(kept().includes(seeded[1]) && kept().includes(more.at(-1)) && kept().includes(req.id));
  answer(ctx, seeded[0], exchangeResult(ctx, seeded[0]));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /no request with that id is waiting/);
  // The attack made last is still answered.
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
});

test('an encounter\'s status only reads: a player may have at most 4 of them waiting, and above 50 waiting requests they are let go, never the step', () => {
  const ctx = encounterWithTwo();
  const status = (playerid) => ctx.sb.chat({ playerid, content: '!psi encounter status' });
  for (let i = 0; i < 4; i++) status(ALICE);
  const sent = requests(ctx.sb).length;
  status(ALICE);
  assert.equal(requests(ctx.sb).length, sent, 'the fifth is not sent');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /4 of your requests still wait for the companion's answer: ask again once they are answered \(or have timed out\)\. Nothing was sent\./);
  const resolve = resolveNow(ctx);
  for (let i = 0; i < 60; i++) status(GM);
  const kept = plain(ctx.sb.context.Mindscape.pendingIds());
  assert.equal(kept.length, 50);
  assert.ok(kept.includes(resolve.id), 'the step still waits');
});

test('a player may have at most 4 checks of their attacks waiting: a fifth attack is refused and nobody is asked', () => {
  const ctx = campaign({ checkByHand: true });
  for (let i = 0; i < 4; i++) attack(ctx);
  assert.equal(checksWaiting(ctx.sb).length, 4);
  const sent = requests(ctx.sb).length;
  attack(ctx);
  assert.equal(requests(ctx.sb).length, sent, 'the fifth check is not sent');
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /4 of your requests still wait for the companion's answer/);
  assert.equal(checksWaiting(ctx.sb).length, 4);
});

test('the cap of 4 waiting requests counts only a player\'s own reads and checks: a declaration still goes, another player\'s and the GM\'s waiting requests do not count, and another Mod script is never capped', () => {
  const ctx = encounterWithTwo();
  const odds = (playerid, from, to) => ctx.sb.chat({ playerid, selected: [from.id], content: `!psi odds --target ${to.id} --mode ego-whip` });
  // The GM and Bob have their own requests waiting: Alice's four still go.
  for (let i = 0; i < 4; i++) odds(GM, ctx.tokens.ulcen, ctx.tokens.fenka);
  for (let i = 0; i < 3; i++) odds(BOB, ctx.tokens.fenka, ctx.tokens.ulcen);
  let sent = requests(ctx.sb).length;
  for (let i = 0; i < 4; i++) odds(ALICE, ctx.tokens.ulcen, ctx.tokens.fenka);
  assert.equal(requests(ctx.sb).length, sent + 4);
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/still wait for the companion's answer/.test(w)));
  odds(ALICE, ctx.tokens.ulcen, ctx.tokens.fenka);
  assert.equal(requests(ctx.sb).length, sent + 4, 'her fifth read is refused');
  // With four of her reads waiting, her declaration is no read: it goes.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: '!psi encounter declare --defense thought-shield' });
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.declare');
  assert.equal(requests(ctx.sb).length, sent + 5);
  // Another Mod script (playerid API) asking for the status six times is not capped.
  sent = requests(ctx.sb).length;
  for (let i = 0; i < 6; i++) ctx.sb.chat({ playerid: 'API', content: '!psi encounter status' });
  assert.equal(requests(ctx.sb).length, sent + 6);
  assert.ok(requests(ctx.sb).slice(-6).every((r) => r.body.method === 'encounter.get'));
});

// ------------------------------------------------------------- --decline given twice

test('power-pool: --decline may be given more than once on !psi attack, and an effect named twice is sent once', () => {
  const ctx = swarmCampaign();
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode subconscious-subversion --decline frightened --decline Frightened --defense none` });
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/given twice/.test(w)));
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.attack), { mode: 'subconscious-subversion', decline: ['frightened'] });
});

test('power-pool: a declaration\'s --decline without --attack is refused naming --decline, and nothing is sent', () => {
  const pool = encounterIn('power-pool', ['ulcen', 'fenka'], (ctx, i) => [ctx.ulcen.id, ctx.fenka.id][i]);
  const sent = requests(pool.sb).length;
  assert.match(aliceDeclares(pool, '--pass --decline frightened'), /--decline goes with --attack MODE \(the attack declared\)\. Nothing was sent\./);
  assert.match(aliceDeclares(pool, '--defense none --decline frightened'), /--decline goes with --attack MODE/);
  assert.equal(requests(pool.sb).length, sent);
});

// ------------------------------------------------------------ answers and their parts

test('a player typing answers is told to the GM at most once a minute: not again 6 s later, again after 61 s', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const told = () => ctx.sb.chats.filter((c) => /Alice is not a GM/.test(c.input)).length;
  answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(told(), 1);
  ctx.sb.advance(6000);
  answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(told(), 1, 'not again after 6 s');
  ctx.sb.advance(53000);
  answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(told(), 1, 'not again after 59 s');
  ctx.sb.advance(2000);
  answer(ctx, req.id, exchangeResult(ctx, req.id), ALICE);
  assert.equal(told(), 2, 'again after 61 s');
});

// `response` cut into `count` parts of its code.
const partsOf = (response, count) => {
  const code = encode(response);
  const size = Math.ceil(code.length / count);
  return Array.from({ length: count }, (_, i) => code.slice(i * size, (i + 1) * size));
};

test('the parts of one GM\'s answer that claim different totals are not put together: the answer is refused and nothing is written', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const [a, b] = partsOf(exchangeResult(ctx, req.id), 2);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/3 ${a}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/2 ${b}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused.*the parts disagree on their count/);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), '40');
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [req.id]);
});

test('a part saved as null (the state saved and read again mid-answer) is still missing: the answer waits for it instead of being put together without it', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const pieces = partsOf(exchangeResult(ctx, req.id), 3);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/3 ${pieces[0]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 3/3 ${pieces[2]}` });
  // Roll20 keeps state as JSON: the hole of part 2 is read back as null.
  const job = ctx.sb.state.Mindscape.pending[req.id];
  job.partsBy = plain(job.partsBy);
  assert.deepEqual(job.partsBy[GM].parts, [pieces[0], null, pieces[2]]);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 3/3 ${pieces[2]}` });
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused/.test(w)), 'nothing put together yet');
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), '40');
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/3 ${pieces[1]}` });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused/.test(w)));
});

test('after a multi-part answer is refused as malformed, that GM\'s parts are forgotten: the answer sent again in another number of parts is applied', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  // Not JSON at all.
  const junk = Buffer.from('not json at all', 'utf8').toString('base64url');
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2 ${junk.slice(0, 6)}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/2 ${junk.slice(6)}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused.*the payload is not base64url-encoded JSON/);
  const three = partsOf(exchangeResult(ctx, req.id), 3);
  three.forEach((piece, i) => ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} ${i + 1}/3 ${piece}` }));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  // JSON the request cannot take (no result and no error) alike.
  const next = attackAndDefend(ctx);
  partsOf({ jsonrpc: '2.0', id: next.id }, 2).forEach((piece, i) => ctx.sb.chat({ playerid: GM, content: `!psi-result ${next.id} ${i + 1}/2 ${piece}` }));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /disagree/);
  const response = exchangeResult(ctx, next.id);
  response.result.updates = [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 16 } } }];
  partsOf(response, 4).forEach((piece, i) => ctx.sb.chat({ playerid: GM, content: `!psi-result ${next.id} ${i + 1}/4 ${piece}` }));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 16);
});

// Two browsers of one GM account each relayed the request and asked the companion
// itself: two answers of the same shape (the same digit counts, their own dice), whose
// parts a mix of could read as one valid answer. `roll` and `hp` tell them apart.
const ownDice = (ctx, id, roll, hp) => {
  const response = exchangeResult(ctx, id, [
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 28 } } },
    { character_id: ctx.fenka.id, attributes: { HP: { current: hp } } },
  ]);
  response.result.roll = { natural: roll, modifier: 2, modified: roll + 2 };
  response.result.rolls[0].value = roll;
  response.result.summary = `Ulcen rolls ${roll} and leaves Fenka at ${hp} HP.`;
  return response;
};

test('two browsers of one GM relaying one request: their parts, interleaved in any order, are put together per source tag; the first whole answer is applied whole and once, the other is already answered, nothing mixed', () => {
  // [source, part]: the answer whose last part comes first wins.
  const orders = [
    [[['A', 1], ['B', 1], ['B', 2], ['A', 2]], 'B'],
    [[['A', 1], ['B', 1], ['A', 2], ['B', 2]], 'A'],
    [[['B', 2], ['A', 1], ['A', 2], ['B', 1]], 'A'],
    [[['A', 2], ['B', 1], ['A', 1], ['B', 2]], 'A'],
    [[['A', 1], ['A', 2], ['B', 1], ['B', 2]], 'A'],
    [[['B', 1], ['A', 2], ['B', 2], ['A', 1]], 'B'],
  ];
  for (const [order, winner] of orders) {
    const ctx = campaign();
    const req = attackAndDefend(ctx);
    const answers = { A: ownDice(ctx, req.id, 15, 2), B: ownDice(ctx, req.id, 18, 7) };
    assert.equal(encode(answers.A).length, encode(answers.B).length, 'the two answers have one shape');
    const parts = { A: partsOf(answers.A, 2), B: partsOf(answers.B, 2) };
    const tags = { A: 'k3Zq-9_a', B: 'Pw0xY7mE' };
    const cards = () => ctx.sb.chats.filter((c) => c.input.includes('&{template:default}'));
    const label = order.map(([s, p]) => `${s}${p}`).join(', ');
    order.forEach(([s, p], i) => {
      ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} ${p}/2/${tags[s]} ${parts[s][p - 1]}` });
      const whole = order.slice(0, i + 1).filter(([t]) => t === winner).length === 2;
      assert.equal(cards().length, whole ? 1 : 0, `${label}: after ${s}${p}`);
    });
    const loser = winner === 'A' ? 'B' : 'A';
    const card = cards()[0].input;
    assert.ok(card.includes(answers[winner].result.summary), `${label}: ${card}`);
    assert.ok(!card.includes(answers[loser].result.summary), label);
    assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), answers[winner].result.updates[1].attributes.HP.current, label);
    assert.deepEqual(plain(ctx.sb.workerWrites).map((w) => `${w.name}=${w.current}`).sort(),
      [`HP=${answers[winner].result.updates[1].attributes.HP.current}`, 'PSP=28'], `${label}: written once`);
    const refusals = whispersTo(ctx.sb, 'gm').filter((w) => /answer refused/.test(w));
    assert.ok(refusals.length >= 1 && refusals.every((w) => /that request was already answered/.test(w)), `${label}: ${refusals.join('\n')}`);
    assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [], label);
  }
});

test('parts without a source tag (an older bridge) are still put together per GM, apart from a tagged source of the same GM', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const old = partsOf(ownDice(ctx, req.id, 15, 2), 3);
  const tagged = partsOf(ownDice(ctx, req.id, 18, 7), 3);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/3 ${old[0]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/3/Pw0xY7mE ${tagged[0]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/3/Pw0xY7mE ${tagged[1]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 3/3 ${old[2]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/3 ${old[1]}` });
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.match(ctx.sb.chats.filter((c) => c.input.includes('&{template:default}'))[0].input, /Ulcen rolls 15 and leaves Fenka at 2 HP\./);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 3/3/Pw0xY7mE ${tagged[2]}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /that request was already answered/);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.ok(whispersTo(ctx.sb, 'gm').filter((w) => /answer refused/.test(w)).length === 1);
});

test('a part whose source tag is malformed (empty, too long, another character than base64url\'s, a second slash) is refused naming the tag, and nothing of it is kept', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const [a, b] = partsOf(exchangeResult(ctx, req.id), 2);
  for (const [tag, said] of [['', '""'], ['x'.repeat(17), `"${'x'.repeat(17)}"`], ['ab.cd', '"ab.cd"'], ['ab/cd', '"ab/cd"'], ['ab+c', '"ab+c"']]) {
    ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2/${tag} ${a}` });
    assert.ok(whispersTo(ctx.sb, 'gm').at(-1).includes(`was refused and nothing changed: the source tag ${said.replace(/"/g, '&#34;')} after the part number is malformed (1 to 16 letters, digits, - or _).`),
      `${tag}: ${whispersTo(ctx.sb, 'gm').at(-1)}`);
  }
  assert.deepEqual(plain(ctx.sb.state.Mindscape.pending[req.id].partsBy), {});
  assert.equal(ctx.sb.workerWrites.length, 0);
  // The request still waits: its parts with a tag of 16 characters are applied.
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/2/${'y'.repeat(16)} ${b}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2/${'y'.repeat(16)} ${a}` });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('the parts kept for one answer stay bounded whatever tags come: at most 4 sources of one GM at once, a fifth refused saying so; a source refused as malformed frees its place, another GM has its own', () => {
  const ctx = campaign();
  const GM2 = '-Pgm2';
  ctx.sb.add('player', { _id: GM2, _displayname: 'Gus the co-GM', __gm: true, _online: true });
  const req = attackAndDefend(ctx);
  const [a, b] = partsOf(exchangeResult(ctx, req.id), 2);
  for (const tag of ['one', 'two', 'three', 'four']) ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2/${tag} ${a}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2/five ${a}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /was refused and nothing changed: this GM&#39;s parts of it already come from 4 sources \(browsers\), so those of source tag &#34;five&#34; are not kept\./);
  const kept = () => Object.keys(plain(ctx.sb.state.Mindscape.pending[req.id].partsBy)).sort();
  assert.deepEqual(kept(), [`${GM} four`, `${GM} one`, `${GM} three`, `${GM} two`]);
  // Parts without a tag (an older bridge) and another GM's are kept apart from those.
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2 ${a}` });
  ctx.sb.chat({ playerid: GM2, content: `!psi-result ${req.id} 1/2/five ${a}` });
  assert.equal(kept().length, 6);
  // "two" completes into something unreadable: refused, and its place is free again.
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/2/two AAAA` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /not base64url-encoded JSON/);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 1/2/five ${a}` });
  assert.ok(kept().includes(`${GM} five`));
  assert.equal(ctx.sb.workerWrites.length, 0);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} 2/2/five ${b}` });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
});

// ---------------------------------------- steps whose answers were lost (-32001), settled

const lostAnswer = (id) => ({ jsonrpc: '2.0', id, error: { code: -32001, message: 'the bridge does not know whether the companion did this', data: { detail: 'timed out' } } });

// The GM's !psi encounter status answered with the view at `revision` (none: left out),
// every combatant of the encounter still in it.
const statusAt = (ctx, revision) => {
  ctx.sb.chat({ playerid: GM, content: '!psi encounter status' });
  const get = lastRequest(ctx.sb);
  const view = { id: 'enc-1', phase: 'round', waiting_for: [], combatants: Object.values(ctx.sb.state.Mindscape.encounter.combatants).map((id) => ({ id })) };
  if (revision !== undefined) view.revision = revision;
  answer(ctx, get.id, { jsonrpc: '2.0', id: get.id, result: view });
};

test('a lost step that the status shows not stored ends only the holds it made: a fighter held before for a failed write stays held', () => {
  const ctx = encounterWithTwo();
  lockFenkaHp(ctx);
  const first = resolveNow(ctx);
  answer(ctx, first.id, stepAnswer(ctx, first, 3));
  assert.deepEqual(held(ctx), [ctx.fenka.id]);
  const lost = resolveNow(ctx);
  assert.equal(lost.body.params.revision, 3);
  answer(ctx, lost.id, lostAnswer(lost.id));
  assert.deepEqual(held(ctx).sort(), [ctx.ulcen.id, ctx.fenka.id].sort());
  statusAt(ctx, 3);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The companion did not store the step whose answer was lost \(it is still at revision 3\)/.test(w)));
  assert.deepEqual(held(ctx), [ctx.fenka.id], 'Fenka\'s write still waits');
  assert.ok(ctx.sb.state.Mindscape.encounter.writes[ctx.fenka.id], 'and so does the write to try again');
});

test('two lost steps in a row, settled as not stored, end the holds of both', () => {
  const ctx = encounterWithTwo();
  const first = resolveNow(ctx);
  answer(ctx, first.id, lostAnswer(first.id));
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  // The ogre joins (the companion at revision 3), then the next step is lost too: it
  // holds the ogre as well.
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: '!psi encounter add' });
  const add = lastRequest(ctx.sb);
  answer(ctx, add.id, add.body.map((b) => ({ jsonrpc: '2.0', id: b.id, result: { combatant_id: b.params.combatant.data.id, revision: 3 } })));
  const second = resolveNow(ctx);
  assert.equal(second.body.params.revision, 3);
  answer(ctx, second.id, lostAnswer(second.id));
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id, ctx.tokens.ogre.id]);
  statusAt(ctx, 3);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The companion did not store the step whose answer was lost \(it is still at revision 3\)/.test(w)));
  assert.deepEqual(held(ctx), []);
  assert.equal(ctx.sb.state.Mindscape.encounter.uncertain, undefined);
});

test('a view without a revision does not settle a lost step: the holds stay until a view with one tells', () => {
  const ctx = encounterWithTwo();
  const step = resolveNow(ctx);
  answer(ctx, step.id, lostAnswer(step.id));
  const before = whispersTo(ctx.sb, 'gm').length;
  statusAt(ctx);
  assert.ok(whispersTo(ctx.sb, 'gm').slice(before).every((w) => !/whose answer was lost/.test(w)), 'neither stored nor not stored');
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  assert.equal(ctx.sb.state.Mindscape.encounter.uncertain.revision, 2);
  statusAt(ctx, 2);
  assert.deepEqual(held(ctx), []);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The companion did not store the step whose answer was lost/.test(w)));
});

test('a lost step sent without a revision (the encounter\'s revision unknown here) holds nobody, and no later view calls it stored', () => {
  const ctx = encounterWithTwo();
  delete ctx.sb.state.Mindscape.encounter.revision;
  const step = resolveNow(ctx);
  assert.equal(step.body.params.revision, undefined);
  answer(ctx, step.id, lostAnswer(step.id));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /could not tell whether the companion carried this out/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /keeps its own copy/);
  assert.deepEqual(held(ctx) || [], []);
  statusAt(ctx, 3);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/whose answer was lost/.test(w)));
  assert.deepEqual(held(ctx) || [], []);
});

// ------------------------------------------------ utilities, through the chat

test('a name travels to the companion as UTF-8 whatever its characters: each length of encoding at its edges, as the bridge and the companion decode it', () => {
  const ctx = campaign();
  const name = 'A\u007f\u0080\u07ff\u0800\uffff\u{10000}\u{10ffff}Z';
  ctx.ulcen.set({ name });
  attack(ctx);
  assert.equal(requests(ctx.sb)[0].body.params.attacker.data.name, name);
});

test('an answer whose payload is no strict base64url of UTF-8 is refused as unreadable, never read leniently: overlong encodings, a surrogate in three bytes, a byte no character starts with, a lone trailing character; the characters beside the surrogates are read', () => {
  const ctx = campaign();
  const req = attackAndDefend(ctx);
  const good = exchangeResult(ctx, req.id);
  // The answer's bytes with `bad` in the middle of its summary.
  const withBytes = (bad) => {
    const [head, tail] = JSON.stringify(Object.assign({}, good, { result: Object.assign({}, good.result, { summary: 'Ulcen XX' }) })).split('XX');
    return Buffer.concat([Buffer.from(head), Buffer.from(bad), Buffer.from(tail)]).toString('base64url');
  };
  // A whole number of base64url quads, then one character more (a space, were it read).
  let padded = good;
  while (encode(padded).length % 4 !== 0) padded = Object.assign({}, padded, { result: Object.assign({}, padded.result, { summary: `${padded.result.summary} ` }) });
  // U+D800 and U+DFFF as three bytes: no character, in UTF-8 (a lone half of a pair).
  const codes = [withBytes([0xc1, 0x81]), withBytes([0xe0, 0x81, 0x81]), withBytes([0xed, 0xa0, 0x80]), withBytes([0xed, 0xbf, 0xbf]), withBytes([0xff]), `${encode(padded)}I`];
  for (const code of codes) {
    ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} ${code}` });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the payload is not base64url-encoded JSON/, code.slice(-12));
    assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [req.id]);
  }
  assert.equal(ctx.sb.workerWrites.length, 0);
  // U+D7FF and U+E000, the characters either side of the surrogates, are read.
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${req.id} ${withBytes([0xed, 0x9f, 0xbf, 0xee, 0x80, 0x80])}` });
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), []);
  assert.ok(ctx.sb.chats.some((c) => c.input.includes('Ulcen \ud7ff\ue000')));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('a name reaches the chat as text: an ampersand, markdown\'s * and `, a backslash and a line break do nothing there', () => {
  const ctx = campaign();
  ctx.ulcen.set({ name: 'Ann &#64; *bold* `code` back\\slash\nnext' });
  attack(ctx);
  const prompt = whispersTo(ctx.sb, 'Bob').at(-1);
  assert.ok(prompt.includes('Ann &amp;#64; &#42;bold&#42; &#96;code&#96; back&#92;slash next'), prompt);
  assert.doesNotMatch(prompt, /[*`\\\n]|&#64;/);
});

test('a name that begins with the marker word is defused as one with it inside', () => {
  const ctx = campaign();
  ctx.ulcen.set({ name: 'MINDSCAPE-REQ forged05 1/1 eyJqc29ucnBjIjoiMi4wIn0' });
  attack(ctx);
  const withMarker = ctx.sb.chats.filter((c) => /MINDSCAPE-REQ/i.test(c.input));
  assert.equal(withMarker.length, requests(ctx.sb).reduce((n, r) => n + r.parts, 0));
  assert.ok(ctx.sb.chats.some((c) => c.input.includes('MINDSCAPE_REQ forged05')));
});

test('a refusal quotes a value of exactly 80 characters whole, and what it quotes is text', () => {
  const ctx = campaign();
  const eighty = 'c'.repeat(80);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ${eighty}` });
  assert.ok(whispersTo(ctx.sb, 'Alice').at(-1).includes(`(got "${eighty}")`));
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode <img src=x>` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /\(got "&#60;img src=x&#62;"\)/);
});

test('the ids of requests and attacks and the pairing code draw from all of Roll20\'s randomInteger (1 to n): its least and its most are letters of their alphabet', () => {
  for (const pick of [() => 1, (n) => n]) {
    const ctx = campaign({ before: (s) => { s.context.randomInteger = pick; } });
    attack(ctx);
    const id = requests(ctx.sb)[0].id;
    const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
    const letter = pick(62) === 1 ? 'A' : '9';
    assert.deepEqual([id, xid, ctx.sb.state.Mindscape.pairing], [letter.repeat(12), letter.repeat(12), letter.repeat(24)]);
  }
});

test('typed values are read as a player means them: a mode with punctuation about it, a range in capitals, spell levels with spaces after the commas', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode (Ego Whip!) --range SHORT` });
  assert.deepEqual(plain(requests(ctx.sb).at(-1).body.params.attack), { mode: 'ego-whip', multiplier: 1, range: 'short' });
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode blank-mind --sacrifice 3, 1` });
  assert.deepEqual(plain(lastRequest(ctx.sb).body.params.defense), { mode: 'blank-mind', sacrifice: [3, 1] });
});

test('numbers and names a command cannot send are refused before anything is sent: a multiplier beyond exact integers, spell levels 0 and 10, an effect to decline that starts with a hyphen', () => {
  const ctx = campaign();
  const refused = (content, pattern) => {
    const before = requests(ctx.sb).length;
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), pattern, content);
    assert.equal(requests(ctx.sb).length, before, `${content} was sent`);
  };
  const target = `--target ${ctx.tokens.fenka.id}`;
  refused(`!psi attack ${target} --mode ego-whip --mult 99999999999999999999`, /--mult must be a whole number of 1 or more/);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  for (const level of ['0', '10', '3,0']) refused(`!psi attack ${target} --mode mental-stab --defense none --sacrifice ${level}`, /--sacrifice wants spell levels 1-9/);
  refused(`!psi attack ${target} --mode subconscious-subversion --decline -frightened`, /--decline names an effect to spare/);
});

// ------------------------------------------------ state handling

test('checkInstall takes from a schema-1 state only a system and a roll mode it knows, and from a schema-2 one its own timeout and chunk', () => {
  const one = campaign({ before: (s) => { s.state.Mindscape = { version: 1, system: 'toString', rollMode: 'loud' }; } });
  assert.deepEqual([one.sb.state.Mindscape.config.system, one.sb.state.Mindscape.config.rollMode], ['revised-2e', 'public']);
  const two = campaign({ before: (s) => { s.state.Mindscape = { version: 2, config: { system: 'power-pool', rollMode: 'gm', timeout: 45, chunk: 700 } }; } });
  assert.deepEqual([two.sb.state.Mindscape.config.timeout, two.sb.state.Mindscape.config.chunk], [45, 700]);
});

test('checkInstall puts a current state right: a pairing code that is no code is made anew, requests and token values that are no objects become empty, an hour-old request and question and the values of a deleted token are dropped', () => {
  const first = campaign();
  const saved = plain(first.sb.state.Mindscape);
  const broken = campaign({ before: (s) => { s.state.Mindscape = Object.assign(plain(saved), { pairing: 'short', pending: null, tokens: [] }); } });
  assert.match(broken.sb.state.Mindscape.pairing, /^[A-Za-z0-9]{24}$/);
  assert.deepEqual(plain([broken.sb.state.Mindscape.pending, broken.sb.state.Mindscape.tokens]), [{}, {}]);
  const old = Date.now() - 61 * 60 * 1000;
  const stale = Object.assign(plain(saved), {
    pending: { OldRequest01: { id: 'OldRequest01', kind: 'odds', description: 'odds long ago', at: old, partsBy: {} } },
    questions: { OldQuestion1: { at: old, fighters: [] } },
    tokens: { '-Mgone': { psp: { name: 'PSP', current: '3', max: '9' } } },
  });
  const ctx = campaign({ before: (s) => { s.state.Mindscape = stale; } });
  assert.deepEqual(plain([ctx.sb.state.Mindscape.pending, ctx.sb.state.Mindscape.questions, ctx.sb.state.Mindscape.tokens]), [{}, {}, {}]);
  assert.deepEqual(whispersTo(ctx.sb, 'gm'), [], 'no request was in flight');
});

test('a request an hour old is forgotten when the next one is made, however few wait', () => {
  const ctx = campaign();
  const ask = () => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
    return lastRequest(ctx.sb).id;
  };
  const first = ask();
  ctx.sb.state.Mindscape.pending[first].at -= 61 * 60 * 1000;
  const second = ask();
  assert.deepEqual(plain(ctx.sb.context.Mindscape.pendingIds()), [second]);
});

test('a request waits the configured --timeout for its answer, not the default 30 s', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --timeout 10' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const req = lastRequest(ctx.sb);
  ctx.sb.advance(10000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`Request <b>${req.id}</b> got no answer from the companion in 10 s`));
});

test('the 200 answered requests remembered are the latest: the newest of them replayed is refused, the oldest forgotten', () => {
  const ctx = campaign();
  ctx.sb.state.Mindscape.answered = Array.from({ length: 200 }, (_, i) => ({ id: `Answered${String(i).padStart(4, '0')}`, how: 'answered' }));
  const req = attackAndDefend(ctx);
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  const answered = plain(ctx.sb.state.Mindscape.answered).map((entry) => entry.id);
  assert.equal(answered.length, 200);
  assert.equal(answered.at(-1), req.id);
  // Two answers came in (the attack's check and its exchange): the two oldest went.
  assert.equal(answered[0], 'Answered0002');
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /already/);
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('a GM\'s attack being checked at a sandbox restart is told once, in the list of requests in flight', () => {
  const first = campaign({ checkByHand: true });
  first.sb.chat({ playerid: GM, selected: [first.tokens.ulcen.id], content: `!psi attack --target ${first.tokens.fenka.id} --mode ego-whip` });
  const saved = plain(first.sb.state.Mindscape);
  const ctx = campaign({ checkByHand: true, before: (s) => { s.state.Mindscape = saved; } });
  assert.equal(whispersTo(ctx.sb, 'gm').length, 1);
  assert.match(whispersTo(ctx.sb, 'gm')[0], /requests in flight/);
});

// ------------------------------------------------ grammar, control, characters

test('the grammar reads a flag in capitals as its lower-case key, a value after several spaces without them, drops an empty "--", and get gives the last of a repeated option', () => {
  const { sb } = campaign();
  const args = sb.context.Mindscape.parseCommand('!psi round --PAY-NONE --target    -Mtok1   -- --mode a --mode b');
  assert.ok(args.has('pay-none'));
  assert.equal(args.get('target'), '-Mtok1');
  assert.deepEqual(plain(args.options.map(([key]) => key)), ['pay-none', 'target', 'mode', 'mode']);
  assert.equal(args.get('mode'), 'b');
});

test('who controls a fighter: a controlledby list with spaces after its commas, "all" (anyone may act, the secret choice goes to the GM alone), a GM listed, a player without a display name', () => {
  const ctx = campaign();
  ctx.fenka.set({ controlledby: `${ALICE}, ${BOB}` });
  attack(ctx);
  assert.equal(whispersTo(ctx.sb, 'Bob').length, 1, 'Bob, listed after a space, gets the buttons');
  const prompts = () => whispersTo(ctx.sb, 'gm').filter((w) => /defend --req/.test(w)).length;
  const gmBefore = prompts();
  ctx.ogre.set({ controlledby: 'all' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.ulcen.id} --mode mind-thrust` });
  assert.doesNotMatch(whispersTo(ctx.sb, 'Alice').at(-1), /refused/, 'anyone may attack with a creature controlled by all');
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode mind-thrust` });
  assert.equal(prompts(), gmBefore + 2, 'one prompt for Ulcen, one for the ogre: none twice');
  ctx.ogre.set({ controlledby: GM });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode mind-thrust` });
  assert.equal(prompts(), gmBefore + 3, 'a GM controller gets the prompt once');
  ctx.sb.add('player', { _id: '-Pnameless', _displayname: '', __gm: false, _online: true });
  ctx.ogre.set({ controlledby: '-Pnameless' });
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode mind-thrust` });
  assert.ok(ctx.sb.chats.every((c) => !c.input.startsWith('/w "" ')), 'nobody is whispered by an empty name');
  assert.equal(prompts(), gmBefore + 5, 'the GM gets the nameless player\'s prompt as well as its own');
});

test('with no bar used for HP or PSP a token with any bar linked fights as its character; a character\'s own mapping and adapter go over the campaign\'s', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar none --pspbar none' });
  ctx.sb.chat({ playerid: GM, content: '!psi config --attr psp=CampaignPSP' });
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.fenka.id} --attr psp=OwnPSP` });
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.ulcen.id} --adapter roll20.adnd2e-revised --attr psp=PSP` });
  attack(ctx);
  const { attacker, defender } = requests(ctx.sb).at(-1).body.params;
  assert.equal(defender.data.character.id, ctx.fenka.id);
  assert.equal(defender.data.mapping.fields.psp, 'OwnPSP');
  assert.deepEqual([attacker.adapter, attacker.data.id], ['roll20.adnd2e-revised', ctx.ulcen.id]);
});

test('the defenses known are read as the companion reads them: psi_defenses one a line or in capitals, the first of two defense rows of one name, psi_psionic in any case and its no, an attack strength alone', () => {
  const ctx = campaign();
  const buttons = () => fenkaDefenseButtons(ctx);
  const add = (name, current, max = '') => ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name, current, max });
  add('psionic-defense-name', 'Thought Shield');
  add('Psionic-Defense-Name', 'Tower of Iron Will');
  assert.deepEqual(buttons(), ['mental-barrier', 'mind-blank', 'thought-shield', 'none']);
  const listed = add('PSI_DEFENSES', 'Mind Blank\nTower of Iron Will');
  assert.deepEqual(buttons(), ['mind-blank', 'tower-of-iron-will', 'none']);
  listed.remove();
  ctx.sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  const five = COMBAT_STRENGTH_DEFENSES;
  const psionic = add('psi_psionic', ' Yes ');
  assert.deepEqual(buttons(), five);
  add('psi_attack_strength', '0', '20');
  psionic.set({ current: 'no' });
  assert.deepEqual(buttons(), ['none']);
  psionic.set({ current: '' });
  assert.deepEqual(buttons(), five);
});

test('power-pool: the attacker waits for the controller struck in its puppet\'s place, who is not told how to draw allies in when it knows no defense that does', () => {
  const ctx = psionicControl(campaign());
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Waiting for Ulcen of Tyr to choose a defense/.test(w)));
  // Ulcen knows Pinnacle of Will only.
  const prompt = whispersTo(ctx.sb, 'Alice').filter((w) => /defend!/.test(w)).at(-1);
  assert.match(prompt, /--mode pinnacle-of-will\)/);
  assert.doesNotMatch(prompt, /may draw allied/);
});

// ------------------------------------------------ requests out, attacks, unlinked tokens

test('a request exactly as long as the part size goes in one part, never with an empty one after it', () => {
  const ctx = campaign();
  const ask = () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  ask();
  const length = encode(lastRequest(ctx.sb).body).length;
  ctx.sb.chat({ playerid: GM, content: `!psi config --chunk ${length}` });
  ask();
  assert.equal(lastRequest(ctx.sb).parts, 1);
  assert.equal(ctx.sb.chats.filter((c) => c.input.includes(lastRequest(ctx.sb).id) && /MINDSCAPE-REQ/.test(c.input)).length, 1);
});

test('odds name a chance the companion gives by a field id in words: mind_opened reads Mind opened', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  const odds = lastRequest(ctx.sb);
  answer(ctx, odds.id, { jsonrpc: '2.0', id: odds.id, result: { outcomes: { hit: 0.5, miss: 0.5 }, mind_opened: 0.1 } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Hit 50\.0%, Miss 50\.0%, Mind opened 10\.0%/);
});

test('!psi attack refuses two attackers selected and a psionic wave with one target that names no fighter, before anything is sent', () => {
  const ctx = campaign();
  const sent = requests(ctx.sb).length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /select exactly one token that represents the attacking character/);
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target -Mnothing --mode psionic-wave` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /--target must name a token that represents a character/);
  assert.equal(requests(ctx.sb).length, sent);
});

test('a character without a name goes by its id; a selected token deleted meanwhile is passed over without an error', () => {
  const ctx = campaign();
  ctx.fenka.set({ name: '' });
  ctx.tokens.fenka.set({ name: '' });
  attack(ctx);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), new RegExp(`the mind of <b>${ctx.fenka.id}</b>`));
  ctx.sb.chat({ playerid: GM, selected: ['-Mdeleted', ctx.tokens.ulcen.id], content: '!psi rest --hours 8' });
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
  assert.equal(lastRequest(ctx.sb).body.method, 'combatants.rest');
});

test('power-pool: in a psionic wave only the mind struck first, which leads the group, is told how to draw allies in', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_defenses').set({ current: 'Imagination Swarm' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_defenses', current: 'Imagination Swarm', max: '' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /Imagination Swarm may draw allied non-psionic creatures/);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--mode imagination-swarm\)/);
  assert.doesNotMatch(whispersTo(ctx.sb, 'Alice').at(-1), /may draw allied/);
});

test('an unlinked token sends only what its sheet\'s adapter reads from its bars: a mapped maximum as the maximum, no attribute for a field not mapped, no PSP_max the sheet lacks', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  ctx.tokens.ogre.set({ bar1_value: '20', bar1_max: '30', bar2_value: '5', bar2_max: '9' });
  const aimed = () => {
    ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.ogre.id} --mode ego-whip` });
    return requests(ctx.sb).at(-1).body.params.defender;
  };
  const sheet = aimed().data.attribs;
  assert.deepEqual(plain(sheet.find((a) => a.name === 'PSP')), { name: 'PSP', current: '5', max: '9' });
  assert.ok(!sheet.some((a) => /^PSP_max$/i.test(a.name)));
  ctx.sb.chat({ playerid: GM, content: `!psi config --char ${ctx.ogre.id} --attr psp=PP --attr psp_max=PP|max` });
  const mapped = aimed().data.character.attribs;
  assert.deepEqual(plain(mapped.find((a) => a.name === 'PP')), { name: 'PP', current: '5', max: '9' });
  assert.ok(!mapped.some((a) => a.name === 'undefined'));
});

test('a summary quoting an encounter\'s combatant id names the fighter that combatant is, also where that id is no Roll20 id', () => {
  const ctx = encounterWithTwo();
  const enc = ctx.sb.state.Mindscape.encounter;
  enc.combatants[ctx.ulcen.id] = 'psionicist-1';
  const req = attackAndDefend(ctx);
  const result = exchangeResult(ctx, req.id);
  result.result.summary = '"psionicist-1" was not given: its sheet is unchanged.';
  answer(ctx, req.id, result);
  const card = ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).at(-1).input;
  assert.match(card, /Ulcen of Tyr was not given: its sheet is unchanged\./);
});

test('power-pool: a target of a psionic wave deleted while the wave is checked is left out when the minds are asked, and the GM is told', () => {
  const ctx = psionicControl(campaign({ checkByHand: true }));
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const [[id]] = checksWaiting(ctx.sb);
  ctx.fenka.remove();
  answer(ctx, id, checkAllowed(id));
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /attack goes on<\/b><br>Left out of the .*Fenka.*The attack goes on against Ulcen of Tyr\./.test(w)));
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /<b>Ulcen of Tyr<\/b>, choose a defense/);
});

test('power-pool: control is read from the sheets as the companion reads it: a psi_controlled_by with spaces about the ref still names the controller, and an entry of psi_controlling without a string id is no puppet', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: ` ${ctx.ulcen.id} ` });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify([{ id: ctx.fenka.id, kept_by: 'die' }, { id: 7, kept_by: 'action' }]) });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /Waiting for Ulcen of Tyr to choose a defense/.test(w)));
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Alice').at(-1))[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
  assert.equal(lastRequest(ctx.sb).body.method, 'exchange.resolve');
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/no character or token here/.test(w)));
});

test('power-pool: a psionic wave at two puppets of two controllers names the puppets struck to each controller asked, and the companion\'s warnings about a further target and the second controller name them', () => {
  const ctx = underControl();
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_pool', current: '0', max: '2' });
  ctx.sb.add('attribute', { _characterid: goblin.id, name: 'psi_controlled_by', current: ctx.tokens.ogre.id, max: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psionic', current: '1', max: '' });
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: `!psi attack --target ${ctx.thrall.id} --target ${goblin.id} --mode psionic-wave` });
  const ask = whispersTo(ctx.sb, 'Alice').at(-1);
  assert.match(ask, /Fenka strikes the minds of <b>Thrall, Goblin<\/b> at once\. <b>Ulcen of Tyr<\/b>, choose a defense/);
  const xid = /--req ([A-Za-z0-9]+)/.exec(ask)[1];
  ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode none` });
  ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${xid} --for ${ctx.tokens.ogre.id} --mode none` });
  const req = lastRequest(ctx.sb);
  answer(ctx, req.id, { jsonrpc: '2.0', id: req.id, result: { system: 'power-pool', outcome: 'defender', summary: 'Rebuffed.', rolls: [], events: [], updates: [],
    warnings: ['/defenders/0: no psi_die attribute; the pool\'s die taken as d8', '/controllers/1: no class level (level-class1..); taken as 1'] } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => /sheet warnings/.test(w));
  assert.match(told, /Goblin: no psi_die attribute/);
  assert.match(told, /Ogre: no class level/);
});

test('a restart lists the requests in flight oldest first, and of a house-rules request says that its late answer makes no change', () => {
  const first = campaign();
  first.sb.chat({ playerid: GM, content: '!psi house' });
  const house = lastRequest(first.sb);
  first.sb.chat({ playerid: GM, selected: [first.tokens.ulcen.id], content: `!psi odds --target ${first.tokens.fenka.id} --mode ego-whip` });
  const odds = lastRequest(first.sb);
  const saved = plain(first.sb.state.Mindscape);
  saved.pending[house.id].at -= 1000;
  const ctx = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => /requests in flight/.test(w));
  assert.ok(told.indexOf(house.id) < told.indexOf(odds.id), told);
  assert.match(told, /A change of the house rules answered late is not made: run <code>!psi house<\/code> again\./);
});

test('a state from a newer script is said so in the API console', () => {
  const { sb } = campaign({ before: (s) => { s.state.Mindscape = { version: 99 }; } });
  assert.ok(sb.logs.some((line) => /state schema 99 is newer than this script understands; left untouched/.test(line)));
});

test('a whisper worth nothing after a reload stays out of the chat archive also when it goes to the GM for a player whose name holds a double quote', () => {
  const ctx = campaign();
  ctx.sb.api.getObj('player', ALICE).properties._displayname = 'Alice "Ace"';
  attack(ctx);
  const declared = ctx.sb.chats.find((c) => /could not whisper this to/.test(c.input) && /attack declared/.test(c.input));
  assert.ok(declared);
  assert.ok(!archived(declared));
});

test('an attack and a request keep for the whole hour: a defense chosen, and an answer come, 45 minutes later still go through', () => {
  const ctx = campaign();
  attack(ctx);
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.state.Mindscape.exchanges[xid].at -= 45 * 60 * 1000;
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  ctx.sb.state.Mindscape.pending[req.id].at -= 45 * 60 * 1000;
  answer(ctx, req.id, exchangeResult(ctx, req.id));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
});

test('revised-2e: a defense row the companion reads as Thought Shield (Shield Thoughts, ThoughtShield) is offered as Thought Shield', () => {
  const ctx = campaign();
  for (const name of ['Shield Thoughts', 'ThoughtShield']) {
    ctx.sb.attribute(ctx.fenka.id, 'repeating_psionic-defenses_-Md3_psionic-defense-name').set({ current: name });
    attack(ctx);
    assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /\[Thought Shield\]\(!psi defend --req [A-Za-z0-9]+ --mode thought-shield\)/, name);
  }
});

test('revised-2e: a sheet row naming a mode with a digit ("Mind Blank 2") names no mode, as the companion reads it (adapters/core.py mode_id keeps digits): no button offers it, and with no PSPs such rows alone leave the fighter out of a round\'s end', () => {
  const ctx = campaign();
  assert.deepEqual(fenkaDefenseButtons(ctx), ['mental-barrier', 'mind-blank', 'none']);
  ctx.sb.attribute(ctx.fenka.id, 'repeating_psionic-defenses_-Md3_psionic-defense-name').set({ current: 'Mind Blank 2' });
  assert.deepEqual(fenkaDefenseButtons(ctx), ['mental-barrier', 'none']);
  // A typed mode is the companion's id: one with a digit is refused, not read as another.
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mind-thrust2` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /--mode must be one of ego-whip, .* for revised-2e \(got "mind-thrust2"\)\./);
  // No PSPs, and rows that name modes only with a digit: the companion takes her as a
  // nonpsionic mind that knows no mode, so a round's end leaves her out.
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '0', max: '0' });
  ctx.sb.attribute(ctx.fenka.id, 'repeating_psionic-defenses_-Md2_psionic-defense-name').set({ current: 'Mental Barrier 2' });
  const row = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'repeating_psionic-attacks_-Mb9_psionic-attack-name', current: 'Ego Whip 2', max: '' });
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id]);
  row.set({ current: 'Ego Whip' });
  assert.deepEqual(roundOfUlcenAndFenka(ctx), [ctx.ulcen.id, ctx.fenka.id]);
});

test('request ids are 6 to 32 letters or digits: a longer one in an answer is refused as malformed; a pairing code of 16 characters set before is kept at a restart', () => {
  const ctx = campaign();
  const long = 'A'.repeat(33);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${long} ${encode({ jsonrpc: '2.0', id: long, result: {} })}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /the request id is malformed/);
  const saved = Object.assign(plain(ctx.sb.state.Mindscape), { pairing: 'Sixteen0Letters1' });
  const again = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  assert.equal(again.sb.state.Mindscape.pairing, 'Sixteen0Letters1');
});

test('a restart while an encounter step is in flight sends the GM to !psi encounter status before repeating it', () => {
  const first = encounterWithTwo();
  const step = resolveNow(first);
  const saved = plain(first.sb.state.Mindscape);
  assert.ok(saved.pending[step.id]);
  const ctx = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  const told = whispersTo(ctx.sb, 'gm').find((w) => /requests in flight/.test(w));
  assert.match(told, /Run <code>!psi encounter status<\/code> before you repeat an encounter command\./);
});

test('the 1 MiB the companion takes is counted in the body\'s bytes, not its base64url: a body of 900 KiB or of exactly 1 MiB is sent, and one too long is told its size in KiB rounded up', () => {
  const ctx = campaign();
  ctx.sb.chat({ playerid: GM, content: '!psi config --chunk 10000' });
  const notes = ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_notes', current: 'z'.repeat(900 * 1024), max: '' });
  const ask = () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip` });
  ask();
  const sent = lastRequest(ctx.sb);
  const bytes = Buffer.byteLength(JSON.stringify(sent.body));
  assert.ok(bytes > 900 * 1024 && bytes < 1024 * 1024, `${bytes}`);
  // Exactly 1 MiB still goes.
  notes.set({ current: 'z'.repeat(900 * 1024 + 1024 * 1024 - bytes) });
  ask();
  const whole = lastRequest(ctx.sb);
  assert.notEqual(whole.id, sent.id);
  assert.equal(Buffer.byteLength(JSON.stringify(whole.body)), 1024 * 1024);
  notes.set({ current: 'z'.repeat(1100 * 1024) });
  ask();
  assert.equal(lastRequest(ctx.sb).id, whole.id, 'nothing more was sent');
  const size = Math.ceil((bytes + 200 * 1024) / 1024);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`was not sent: its body is ${size} KiB, and the companion takes at most 1024 KiB`));
});

test('power-pool: a psi_controlling holding a JSON object, not a list, controls nobody: the attack goes on as for a free mind', () => {
  const ctx = underControl();
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: JSON.stringify({ id: ctx.thrall.id, kept_by: 'action' }) });
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.ulcen.id} --mode mental-stab --defense none` });
  const req = lastRequest(ctx.sb);
  assert.equal(req.body.method, 'exchange.resolve');
  assert.equal(req.body.params.puppets, undefined);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/internal error/.test(w)));
});

// ------------------------------------- one request relayed by two bridges (4009 first)

// Two bridges (two GMs, or two browsers of one GM account: ROLL20.md "Two GM tabs") each
// relay a changing call: the companion carries out the first run and refuses the second
// as stale (4009), a short answer that may come before the first run's long one.
const staleAnswer = (id, revision) => ({ jsonrpc: '2.0', id, error: { code: 4009, message: 'Stale revision', data: { revision } } });

const viewAt = (ctx, id, revision) => ({
  jsonrpc: '2.0', id, result: { id: 'enc-1', phase: 'round', revision, combatants: { [ctx.ulcen.id]: {}, [ctx.fenka.id]: {} }, waiting_for: [] },
});

const stepCards = (ctx) => ctx.sb.chats.filter((c) => c.input.includes('&{template:default}') && c.input.includes('Ulcen of Tyr lashes Fenka with an ego whip.'));

test('a resolve relayed by two bridges: the second run\'s stale refusal (4009) coming first is reported and resynced, and the first run\'s longer answer after it is still applied once (card, sheets, revision); while it arrives (not once it stopped for the timeout) a refresh keeps the encounter\'s copies; a further answer is already answered', () => {
  const ctx = encounterWithTwo();
  const resolve = resolveNow(ctx);
  assert.equal(resolve.body.params.revision, 2);
  answer(ctx, resolve.id, staleAnswer(resolve.id, 3));
  const told = whispersTo(ctx.sb, 'gm').find((w) => /moved on/.test(w));
  assert.match(told, /moved on \(now at revision 3\) before this request reached the companion, so this answer changed nothing\. Resyncing with the companion&hellip; Should a second bridge .* have relayed it too, that answer is still applied when it comes\./);
  assert.doesNotMatch(told, /so nothing changed/);
  const get = lastRequest(ctx.sb);
  assert.equal(get.body.method, 'encounter.get');
  answer(ctx, get.id, viewAt(ctx, get.id, 3));
  // A third bridge's refusal of the same request is not reported (nor resynced) again.
  answer(ctx, resolve.id, staleAnswer(resolve.id, 3), GM);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused.*that request was already answered \(the encounter had moved on\); only another bridge&#39;s success, or its word that it cannot tell whether the companion ran it, is still taken\.<\/div>$/);
  assert.equal(lastRequest(ctx.sb).id, get.id, 'no second resync');
  assert.equal(ctx.sb.workerWrites.length, 0);
  // The first run's answer comes in tagged parts. While it arrives, a refresh takes no
  // sheet: the answer would write them after they were read.
  const parts = partsOf(stepAnswer(ctx, resolve, 3), 3);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${resolve.id} 1/3/k3Zq-9_a ${parts[0]}` });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 0);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /refused as stale, but a second bridge's answer to it is still arriving.*kept its own copy of Ulcen of Tyr, Fenka/);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${resolve.id} 2/3/k3Zq-9_a ${parts[1]}` });
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${resolve.id} 3/3/k3Zq-9_a ${parts[2]}` });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 28);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 2);
  assert.equal(stepCards(ctx).length, 1);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.deepEqual(held(ctx), []);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => new RegExp(`Request <b>${resolve.id}</b> \\(resolve the next step of the encounter\\) was relayed twice: `
    + 'the companion carried it out once, and this answer, of the run carried out, was applied').test(w)));
  assert.ok(!plain(ctx.sb.context.Mindscape.pendingIds()).includes(resolve.id));
  // Another GM's (or browser's) success after it is already answered: nothing twice.
  const writes = ctx.sb.workerWrites.length;
  answer(ctx, resolve.id, stepAnswer(ctx, resolve, 3));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /that request was already answered\.<\/div>$/);
  assert.equal(ctx.sb.workerWrites.length, writes);
  assert.equal(stepCards(ctx).length, 1);
  // The answer is in: a refresh takes the sheets again.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 1);
  // An answer that stops arriving holds no refresh back once its timeout has passed.
  const other = encounterWithTwo();
  const stuck = resolveNow(other);
  answer(other, stuck.id, staleAnswer(stuck.id, 3));
  const view = lastRequest(other.sb);
  answer(other, view.id, viewAt(other, view.id, 3));
  other.sb.chat({ playerid: GM, content: `!psi-result ${stuck.id} 1/3/k3Zq-9_a ${partsOf(stepAnswer(other, stuck, 3), 3)[0]}` });
  other.sb.advance(30000);
  other.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(other.sb).length, 1);
  assert.doesNotMatch(whispersTo(other.sb, 'gm').at(-1), /still arriving/);
});

test('an undo and a declaration relayed by two bridges: the success after the stale refusal is applied (sheets, revision, what the GM and the player read); the other way round the refusal is already answered, as before', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' });
  const undo = lastRequest(ctx.sb);
  answer(ctx, undo.id, staleAnswer(undo.id, 3));
  assert.equal(lastRequest(ctx.sb).body.method, 'encounter.get');
  const undone = { jsonrpc: '2.0', id: undo.id, result: { revision: 3, undone: 2, updates: [{ character_id: ctx.fenka.id, attributes: { HP: { current: 7 } } }] } };
  answer(ctx, undo.id, undone);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'HP'), 7);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The last step was undone\./.test(w)));
  assert.match(whispersTo(ctx.sb, 'gm').at(-2), new RegExp(`Request <b>${undo.id}</b> \\(undo the last step of the encounter\\) was relayed twice`));
  // Alice's declaration: she is told this answer recorded nothing, then that it was recorded.
  const declared = aliceDeclares(ctx, '--defense thought-shield');
  assert.equal(declared.body.params.revision, 3);
  answer(ctx, declared.id, staleAnswer(declared.id, 4));
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /moved on before your request arrived, so this answer recorded nothing \(should it be recorded all the same, you are told so\)/);
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, viewAt(ctx, get.id, 4));
  answer(ctx, declared.id, { jsonrpc: '2.0', id: declared.id, result: { revision: 4, waiting_for: [ctx.fenka.id] } });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Your choice is recorded in secret: .*Thought Shield/);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 4);
  // The other way round (the success first) the refusal after it is already answered:
  // not reported, no resync.
  const again = aliceDeclares(ctx, '--defense thought-shield');
  answer(ctx, again.id, { jsonrpc: '2.0', id: again.id, result: { revision: 5, waiting_for: [ctx.fenka.id] } });
  const gm = whispersTo(ctx.sb, 'gm').length;
  answer(ctx, again.id, staleAnswer(again.id, 5));
  assert.equal(whispersTo(ctx.sb, 'gm').length, gm + 1);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /that request was already answered\.<\/div>$/);
  assert.equal(lastRequest(ctx.sb).id, again.id);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Your choice is recorded in secret/);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 5);
});

test('a refresh run relayed by two bridges: the stale refusal stops it, and the first run\'s answer after it is taken (its revision) without carrying the run on', () => {
  const ctx = encounterWithTwo();
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  const first = lastRequest(ctx.sb);
  answer(ctx, first.id, staleAnswer(first.id, 3));
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The refresh stopped at Ulcen of Tyr; not taken again: Fenka\. The step was not resolved/.test(w)));
  refreshAnswer(ctx, first, 3, ['hp']);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr: hp taken again from the sheet\.<br>This answer came after the stale refusal that stopped the run, so nothing more was sent\. Not taken again: Fenka\. The step was not resolved\./);
  assert.equal(refreshes(ctx.sb).length, 1);
  assert.ok(requests(ctx.sb).every((r) => Array.isArray(r.body) || r.body.method !== 'encounter.resolve'));
});

test('a resolve relayed by two bridges: the other bridge\'s uncertain answer (-32001) after the stale refusal holds every combatant as a lone one does, and the status says it cannot tell whether the step was stored', () => {
  const ctx = encounterWithTwo();
  const resolve = resolveNow(ctx);
  answer(ctx, resolve.id, staleAnswer(resolve.id, 3));
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, viewAt(ctx, get.id, 3));
  assert.deepEqual(held(ctx), []);
  // A third relay's refusal is refused, and says that such an answer is still taken.
  answer(ctx, resolve.id, staleAnswer(resolve.id, 3));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /answer refused.*or its word that it cannot tell whether the companion ran it, is still taken/);
  const lost = { jsonrpc: '2.0', id: resolve.id, error: { code: -32001, message: 'the bridge does not know whether the companion did this', data: { detail: 'timed out' } } };
  answer(ctx, resolve.id, lost);
  const told = whispersTo(ctx.sb, 'gm').at(-1);
  assert.doesNotMatch(told, /answer refused|relayed twice|late answer/);
  assert.match(told, /The bridge could not tell whether the companion carried this out: .*Run <code>!psi encounter status<\/code>.*the encounter keeps its own copy of every combatant \(Ulcen of Tyr, Fenka\)/);
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
  assert.equal(ctx.sb.state.Mindscape.encounter.uncertain.revision, 2);
  // Settled, as a lone one is: a success after it is already answered and writes nothing.
  answer(ctx, resolve.id, stepAnswer(ctx, resolve, 3));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /that request was already answered\.<\/div>$/);
  assert.equal(ctx.sb.workerWrites.length, 0);
  // The status cannot tell whether it was stored (the 4009 said the companion was past
  // revision 2 already, and it is either way), and says so; the holds stay.
  statusAt(ctx, 3);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/The companion stored the step/.test(w)));
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /The companion's view cannot tell whether it stored the step whose answer was lost: a second bridge's copy of it was refused as stale, the companion being past revision 2 already \(now 3\), as it is when the other copy was stored, and also when another call got there first\. If it was stored, its write-back never reached the sheets, and no card was posted for it\. The encounter keeps its own copy of those held/.test(w)));
  assert.deepEqual(held(ctx), [ctx.ulcen.id, ctx.fenka.id]);
});

test('the newest request wins: the GM resolves again after a stale refusal, and the first relay\'s success that comes after the second step\'s answer writes no place that answer wrote (the GM is told which), only the rest; card and revision as before', () => {
  const ctx = encounterWithTwo();
  const first = resolveNow(ctx);
  answer(ctx, first.id, staleAnswer(first.id, 3));
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, viewAt(ctx, get.id, 3));
  const second = resolveNow(ctx);
  assert.equal(second.body.params.revision, 3);
  answer(ctx, second.id, stepAnswer(ctx, second, 4, { updates: [
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 16 } } },
    { character_id: ctx.fenka.id, attributes: { HP: { current: 0 } } },
  ] }));
  assert.deepEqual([valueOf(ctx, ctx.ulcen.id, 'PSP'), valueOf(ctx, ctx.fenka.id, 'HP')], [16, 0]);
  // The first relay's success (revision 3): PSP 28, HP 2 and Fenka's mind open.
  answer(ctx, first.id, stepAnswer(ctx, first, 3));
  assert.deepEqual([valueOf(ctx, ctx.ulcen.id, 'PSP'), valueOf(ctx, ctx.fenka.id, 'HP')], [16, 0]);
  assert.equal(valueOf(ctx, ctx.fenka.id, 'psionic-mind-state'), 'open');
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => new RegExp(`Request <b>${first.id}</b> \\(resolve the next step of the encounter\\) was relayed twice: .*was applied \\(the stale refusal before it was the other run's\\)\\. `
    + 'Not written, because an answer to a request sent later wrote these or, where its write failed, is to \\(the newest request wins\\): Ulcen of Tyr: PSP; Fenka: HP\\.</div>$').test(w)));
  assert.equal(stepCards(ctx).length, 2);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 4);
  assert.deepEqual(held(ctx), []);
});

test('the newest request wins: an attack\'s late answer, after its timeout or a sandbox restart, writes no place a repeated attack\'s answer wrote before it (the GM is told which), only the rest', () => {
  const repeated = (ctx) => exchangeResult(ctx, null, [
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 25 } } },
    { character_id: ctx.fenka.id, attributes: { HP: { current: 4 } } },
  ]);
  const skipped = 'Not written, because an answer to a request sent later wrote these or, where its write failed, is to \\(the newest request wins\\): Ulcen of Tyr: PSP; Fenka: HP\\.';
  // After its timeout.
  const ctx = campaign();
  const late = attackAndDefend(ctx);
  ctx.sb.advance(30000);
  const again = attackAndDefend(ctx);
  answer(ctx, again.id, Object.assign(repeated(ctx), { id: again.id }));
  answer(ctx, late.id, exchangeResult(ctx, late.id));
  assert.deepEqual([valueOf(ctx, ctx.ulcen.id, 'PSP'), valueOf(ctx, ctx.fenka.id, 'HP'), valueOf(ctx, ctx.fenka.id, 'psionic-mind-state')], [25, 4, 'open']);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /late answer/.test(w)), new RegExp(`A late answer for request <b>${late.id}</b> \\(Ego Whip by Ulcen of Tyr against Fenka\\) was applied\\. ${skipped}</div>$`));
  // Across restarts: sent before one, the repeat sent after it and answered before
  // another. A restart is a new sandbox over the same campaign: its state and its sheets.
  const restart = (from) => {
    const saved = plain(from.sb.state.Mindscape);
    const sheets = from.sb.objects.filter((o) => o.get('_type') === 'attribute').map((o) => [o.get('_characterid'), o.get('name'), o.get('current'), o.get('max')]);
    return campaign({ before: (s) => {
      s.state.Mindscape = saved;
      sheets.forEach(([charId, name, current, max]) => {
        const attr = s.attribute(charId, name);
        if (attr) attr.set({ current, max });
        else s.add('attribute', { _characterid: charId, name, current, max });
      });
    } });
  };
  const before = campaign();
  const lost = attackAndDefend(before);
  const after = restart(before);
  const repeat = attackAndDefend(after);
  answer(after, repeat.id, Object.assign(repeated(after), { id: repeat.id }));
  const last = restart(after);
  answer(last, lost.id, exchangeResult(last, lost.id));
  assert.deepEqual([valueOf(last, last.ulcen.id, 'PSP'), valueOf(last, last.fenka.id, 'HP'), valueOf(last, last.fenka.id, 'psionic-mind-state')], [25, 4, 'open']);
  assert.match(whispersTo(last.sb, 'gm').at(-1), new RegExp(`A late answer for request <b>${lost.id}</b> .* was applied\\. ${skipped}</div>$`));
  // The other way round (the older answered first) the newer writes everything.
  const next = attackAndDefend(last);
  answer(last, next.id, Object.assign(repeated(last), { id: next.id }));
  assert.deepEqual([valueOf(last, last.ulcen.id, 'PSP'), valueOf(last, last.fenka.id, 'HP')], [25, 4]);
  assert.doesNotMatch(whispersTo(last.sb, 'gm').join('\n'), new RegExp(`${next.id}.*Not written`));
  // Two attacks answered in time, the newer first: the older's answer says so too.
  const one = attackAndDefend(last);
  const two = attackAndDefend(last);
  answer(last, two.id, Object.assign(repeated(last), { id: two.id }));
  answer(last, one.id, exchangeResult(last, one.id));
  assert.match(whispersTo(last.sb, 'gm').find((w) => w.includes(`Request <b>${one.id}</b>`)), new RegExp(`<b>Mindscape: answer</b><br>Request <b>${one.id}</b> \\(Ego Whip by Ulcen of Tyr against Fenka\\) was applied\\. ${skipped}</div>$`));
});

test('the newest request wins also where its write failed: the older relay\'s success that comes after leaves that place to the write waiting to be tried again, and the fighter stays held', () => {
  const ctx = encounterWithTwo();
  const pspBefore = valueOf(ctx, ctx.ulcen.id, 'PSP');
  const first = resolveNow(ctx);
  answer(ctx, first.id, staleAnswer(first.id, 3));
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, viewAt(ctx, get.id, 3));
  const second = resolveNow(ctx);
  const psp = ctx.sb.attribute(ctx.ulcen.id, 'PSP');
  psp.setWithWorker = () => { delete psp.setWithWorker; throw new Error('busy once'); };
  answer(ctx, second.id, stepAnswer(ctx, second, 4, { updates: [
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 16 } } },
    { character_id: ctx.fenka.id, attributes: { HP: { current: 0 } } },
  ] }));
  assert.deepEqual(held(ctx), [ctx.ulcen.id]);
  // The first relay's success (revision 3: PSP 28) does not write the older PSP where the
  // newer answer's write failed, nor take that write off Ulcen's hold.
  answer(ctx, first.id, stepAnswer(ctx, first, 3));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), pspBefore);
  assert.deepEqual(held(ctx), [ctx.ulcen.id]);
  assert.deepEqual(writes(ctx)[ctx.ulcen.id].attributes, { PSP: { current: 16 } });
  assert.ok(whispersTo(ctx.sb, 'gm').some((w) => new RegExp(`Request <b>${first.id}</b> .*was relayed twice: .*Not written, because an answer to a request sent later wrote these or, where its write failed, is to \\(the newest request wins\\): Ulcen of Tyr: PSP; Fenka: HP\\.</div>$`).test(w)));
  // The refresh before the next resolve writes the newer value, and the hold ends.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 16);
  assert.deepEqual(held(ctx), []);
});

test('the newest request wins: the GM reads each attribute left out once, though the older answer names the fighter in two updates', () => {
  const ctx = campaign();
  const one = attackAndDefend(ctx);
  const two = attackAndDefend(ctx);
  answer(ctx, two.id, exchangeResult(ctx, two.id, [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 25 } } }]));
  answer(ctx, one.id, exchangeResult(ctx, one.id, [
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 28 } } },
    { character_id: ctx.ulcen.id, attributes: { PSP: { current: 27 } } },
  ]));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 25);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes(`Request <b>${one.id}</b>`)), /\(the newest request wins\): Ulcen of Tyr: PSP\.<\/div>$/);
});

test('the newest request wins: where the newer answer wrote only an attribute\'s current, the older writes its max and the GM reads which part was left out ("PSP (current)")', () => {
  const ctx = campaign();
  const one = attackAndDefend(ctx);
  const two = attackAndDefend(ctx);
  answer(ctx, two.id, exchangeResult(ctx, two.id, [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 25 } } }]));
  answer(ctx, one.id, exchangeResult(ctx, one.id, [{ character_id: ctx.ulcen.id, attributes: { PSP: { current: 28, max: 39 } } }]));
  assert.equal(valueOf(ctx, ctx.ulcen.id, 'PSP'), 25);
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('max'), 39);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes(`Request <b>${one.id}</b>`)), /\(the newest request wins\): Ulcen of Tyr: PSP \(current\)\.<\/div>$/);
});


// Goblin 1 attacks Goblin 2, or the goblin token `target` (a mind with no defense): the
// request sent, for the newest-wins tests.
const attackGoblin = (ctx, target = ctx.gob[1]) => {
  ctx.sb.chat({ playerid: GM, selected: [ctx.gob[0].id], content: `!psi attack --target ${target.id} --mode ego-whip --defense none` });
  return lastRequest(ctx.sb);
};

// Answers the exchange request `req` with one update: `attributes` written for `id`.
const answerWrites = (ctx, req, id, attributes) => answer(ctx, req.id, exchangeResult(ctx, req.id, [{ character_id: id, attributes }]));

// The older (late) answer of the newest-wins tests: HP 2, for the Goblin character or
// for the token Goblin 2.
const olderAnswerForCharacter = (ctx, late) => answerWrites(ctx, late, ctx.goblin.id, { HP: { current: 2 } });
const olderAnswerForToken = (ctx, late) => answerWrites(ctx, late, ctx.gob[1].id, { HP: { current: 2 } });

// Answers the encounter step `req` as round `round` at `revision`, with no results and
// `fields` (its `updates`, or UNMADE).
const roundAnswer = (ctx, req, round, revision, fields) => answer(ctx, req.id, {
  jsonrpc: '2.0', id: req.id, result: { round, results: [], summary: `Round ${round}.`, rolls: [], revision, ...fields },
});

// The next call of `obj[method]` throws (as a busy sandbox can); the ones after work.
const throwsOnce = (obj, method) => {
  obj[method] = () => { delete obj[method]; throw new Error('busy once'); };
};

// The GM unlinks the token's HP bar. Roll20 shows the linked attribute on the bar, and
// keeps it there when the bar is unlinked: `shown` is what it showed.
const unlinkShowing = (token, shown) => {
  token.set({ bar1_value: shown });
  token.set({ bar1_link: '' });
};

// The GM links the token's HP bar to the Goblin character's HP (7), which the bar shows.
const linkToGoblinHp = (ctx, token) => token.set({ bar1_link: ctx.sb.attribute(ctx.goblin.id, 'HP').id, bar1_value: '7' });

// The GM's whisper about the late answer ends with what it did not write because a newer
// request did (`names`, as "Goblin 2: HP"); or no whisper says anything was not written.
const assertLeftOut = (ctx, names) => assert.match(
  whispersTo(ctx.sb, 'gm').find((w) => /late answer/.test(w)),
  new RegExp(`\\(the newest request wins\\): ${names.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.</div>$`),
);
const assertNothingLeftOut = (ctx) => assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/Not written/.test(w)));

// The older answer for the token Goblin 2 leaves its bar showing `shown`, and the GM is
// told so; the older answer for the character leaves its HP at `shown`, and the GM is told
// so; or it writes the character's HP 2, and nothing is said to be left out.
const olderAnswerLeavesBar = (ctx, late, shown) => {
  olderAnswerForToken(ctx, late);
  assert.equal(ctx.gob[1].get('bar1_value'), shown);
  assertLeftOut(ctx, 'Goblin 2: HP');
};
const olderAnswerLeavesHp = (ctx, late, shown) => {
  olderAnswerForCharacter(ctx, late);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), shown);
  assertLeftOut(ctx, 'Goblin: HP');
};
const olderAnswerWritesHp = (ctx, late) => {
  olderAnswerForCharacter(ctx, late);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 2);
  assertNothingLeftOut(ctx);
};

// The link tests' start: Goblin 1's attack on the token Goblin 2 times out; the GM links
// that token's HP bar to its character's HP, so the repeat is sent for the character,
// whose answer writes HP 1. The older request (its answer still to come) is returned.
const linkedThenCharacterAnswered = (ctx) => {
  const late = attackGoblin(ctx);
  assert.equal(late.body.params.defender.data.id, ctx.gob[1].id);
  ctx.sb.advance(30000);
  ctx.gob[1].set({ bar1_link: ctx.sb.attribute(ctx.goblin.id, 'HP').id });
  const again = attackGoblin(ctx);
  assert.equal(again.body.params.defender.data.id, ctx.goblin.id);
  answerWrites(ctx, again, ctx.goblin.id, { HP: { current: 1 } });
  return late;
};

// The newest-wins tests' two requests: Goblin 1's attack on Goblin 2 timed out (its answer
// is still to come, `late`) and the GM's repeat (`again`).
const timedOutThenAgain = (ctx) => {
  const late = attackGoblin(ctx);
  ctx.sb.advance(30000);
  return { late, again: attackGoblin(ctx) };
};

test('the newest request wins though the GM moved the HP bar (--hpbar) or renamed HP (--attr) since the newer answer: the older answer writes that fighter\'s HP nowhere (not on the bar HP moved to, which keeps what it held, nor as the token\'s own value), and the newer HP stays on the bar it was written to, which after --hpbar no longer shows HP', () => {
  const run = (change) => {
    const ctx = goblins();
    ctx.sb.chat({ playerid: GM, content: '!psi config --adapter roll20.generic --attr hp=HP --attr psp=PSP' });
    const { late, again } = timedOutThenAgain(ctx);
    answerWrites(ctx, again, ctx.gob[1].id, { HP: { current: 1 } });
    assert.equal(ctx.gob[1].get('bar1_value'), 1);
    ctx.sb.chat({ playerid: GM, content: `!psi config ${change}` });
    olderAnswerForToken(ctx, late);
    assertLeftOut(ctx, 'Goblin 2: HP');
    return ctx;
  };
  // HP now on bar 2: the older HP is not put there, and bar 1 keeps the newer HP, which
  // it no longer shows as HP (the GM moved it; newest-wins does not carry it along).
  const moved = run('--hpbar 2');
  assert.equal(moved.gob[1].get('bar2_value'), '');
  assert.equal(moved.gob[1].get('bar1_value'), 1);
  // HP now read from Life: the older HP is not kept as the token's own HP either.
  const renamed = run('--attr hp=Life');
  assert.equal(renamed.gob[1].get('bar1_value'), 1);
  assert.equal((renamed.sb.state.Mindscape.tokens[renamed.gob[1].id] || {}).hp, undefined);
});

test('the newest request wins though the GM linked the token\'s HP bar since: the older answer for the token leaves that bar (it shows the attribute) as the character\'s newer answer wrote the attribute', () => {
  const ctx = goblins();
  const late = linkedThenCharacterAnswered(ctx);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  olderAnswerForToken(ctx, late);
  assert.equal(ctx.gob[1].get('bar1_value'), '3');
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assertLeftOut(ctx, 'Goblin 2: HP');
});

test('the newest request wins though the GM linked the token\'s HP bar and unlinked it again after the character\'s newer answer wrote through it: the older answer for the token leaves the HP that bar kept', () => {
  const ctx = goblins();
  const late = linkedThenCharacterAnswered(ctx);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerForToken(ctx, late);
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assertLeftOut(ctx, 'Goblin 2: HP');
});

// The Goblin, the token Goblin 2's HP bar linked to its HP, is made an encounter's one
// combatant, whose step writes `attributes` on the character (in their order); writing
// `failing` throws once, so the Goblin is held with that write waiting.
const goblinStepFails = (ctx, failing, attributes = { HP: { current: 1 } }) => {
  encounterOf(ctx, [ctx.gob[1]]);
  const attr = ctx.sb.attribute(ctx.goblin.id, failing);
  throwsOnce(attr, 'setWithWorker');
  const step = resolveNow(ctx);
  const update = { character_id: ctx.goblin.id, attributes };
  roundAnswer(ctx, step, 1, 3, { updates: [update] });
  assert.deepEqual(held(ctx), [ctx.goblin.id]);
};

// The unlink tests' start: Goblin 1's attack on the token Goblin 2 times out; the GM links
// that token's HP bar to its character's HP, and a step's write to the character fails
// (goblinStepFails). The older request (its answer still to come) is returned.
const linkedThenStepFailed = (ctx, failing, attributes) => {
  const late = attackGoblin(ctx);
  ctx.sb.advance(30000);
  ctx.gob[1].set({ bar1_link: ctx.sb.attribute(ctx.goblin.id, 'HP').id });
  goblinStepFails(ctx, failing, attributes);
  return late;
};

test('the newest request wins only where a held write can still reach: the GM linked the token\'s HP bar, the character\'s newer write through it failed, and the GM unlinked the bar before the older answer for the token came, which writes that bar (the write tried again reaches only the attribute) and says nothing of it', () => {
  const ctx = goblins();
  const late = linkedThenStepFailed(ctx, 'HP');
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), '7');
  ctx.gob[1].set({ bar1_link: '' });
  olderAnswerForToken(ctx, late);
  assert.equal(ctx.gob[1].get('bar1_value'), 2);
  assertNothingLeftOut(ctx);
  // The write tried again before the next resolve lands on the character alone.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assert.equal(ctx.gob[1].get('bar1_value'), 2);
  assert.deepEqual(held(ctx), []);
});

test('the newest request wins where a newer write failed after writing HP through the token\'s linked bar: the GM unlinked the bar, which keeps that HP, and the older answer for the token leaves it', () => {
  const ctx = goblins();
  const late = linkedThenStepFailed(ctx, 'PSP', { HP: { current: 1 }, PSP: { current: 9 } });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerLeavesBar(ctx, late, 1);
});

test('the newest request wins where a newer write failed and landed when tried again, through the token\'s linked bar: the GM unlinked the bar after that, which keeps that HP, and the older answer for the token leaves it', () => {
  const ctx = goblins();
  const late = linkedThenStepFailed(ctx, 'HP');
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assert.deepEqual(held(ctx), []);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerLeavesBar(ctx, late, 1);
});

test('the newest request wins where one newer answer wrote HP through the token\'s linked bar and another one\'s write of it failed after: the GM unlinked the bar, which keeps the HP written, and the older answer for the token leaves it', () => {
  const ctx = goblins();
  const late = linkedThenCharacterAnswered(ctx);
  goblinStepFails(ctx, 'HP', { HP: { current: 5 } });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerLeavesBar(ctx, late, 1);
});

test('the newest request wins where a newer write failed after writing HP through the token\'s linked bar, and the GM unlinked the bar and then moved HP to another bar (--hpbar) or swapped the HP and PSP bars: the older answer for the token writes its HP nowhere, as after a newer write that landed', () => {
  const run = (change) => {
    const ctx = goblins();
    const late = linkedThenStepFailed(ctx, 'PSP', { HP: { current: 1 }, PSP: { current: 9 } });
    unlinkShowing(ctx.gob[1], 1);
    ctx.sb.chat({ playerid: GM, content: `!psi config ${change}` });
    olderAnswerLeavesBar(ctx, late, 1);
    return ctx;
  };
  assert.equal(run('--hpbar 3').gob[1].get('bar3_value'), '');
  assert.equal(run('--hpbar 2 --pspbar 1').gob[1].get('bar2_value'), '');
});

test('the newest request wins where two newer writes of HP through the token\'s linked bar failed, the first after writing it: the GM unlinked the bar, which keeps the first one\'s HP, and the older answer for the token leaves it (the conditions add up)', () => {
  const ctx = goblins();
  const late = linkedThenStepFailed(ctx, 'PSP', { HP: { current: 1 }, PSP: { current: 9 } });
  const attr = ctx.sb.attribute(ctx.goblin.id, 'HP');
  throwsOnce(attr, 'setWithWorker');
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 4, { updates: [{ character_id: ctx.goblin.id, attributes: { HP: { current: 4 } } }] });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerLeavesBar(ctx, late, 1);
});

test('the newest request wins for a request kept with a condition that names no bar (a value alone): it is read on the bar the part is on now', () => {
  const run = (bar) => {
    const ctx = goblins();
    const late = attackGoblin(ctx);
    ctx.sb.advance(30000);
    ctx.sb.state.Mindscape.pending[late.id].newerWrote = { [`${ctx.gob[1].id}|bar|hp|value`]: { shows: ['1'] } };
    ctx.gob[1].set({ bar1_value: bar });
    olderAnswerForToken(ctx, late);
    return ctx.gob[1].get('bar1_value');
  };
  assert.equal(run(1), 1);
  assert.equal(run('3'), 2);
});

// The mirror of the unlink tests: the GM links the token Goblin 3's HP bar, and Goblin 1's
// attack on it (so for the Goblin character) times out; Goblin 2, added to an encounter
// while unlinked, has its HP bar linked to the character's HP too (showing 7, as Roll20
// shows the linked attribute), and a step's write of its HP 1 throws once, so Goblin 2 is
// held with that write waiting. `before` runs inside the throwing set (a write through the
// link before the throw). The older request (its answer still to come) is returned.
const tokenLinkedThenStepFailed = (ctx, before = () => {}) => {
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  ctx.gob[2].set({ bar1_link: hp.id });
  const late = attackGoblin(ctx, ctx.gob[2]);
  assert.equal(late.body.params.defender.data.id, ctx.goblin.id);
  ctx.sb.advance(30000);
  encounterOf(ctx, [ctx.gob[1]]);
  linkToGoblinHp(ctx, ctx.gob[1]);
  const token = ctx.gob[1];
  token.set = (props) => { delete token.set; before(props); throw new Error('busy once'); };
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 3, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 1 } } }] });
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  return late;
};

// After tokenLinkedThenStepFailed the GM unlinks Goblin 2's HP bar, and the write tried
// again before the next resolve lands on that bar alone, which ends the hold. The older
// request (its answer still to come) is returned.
const unlinkedThenLandedOnBar = (ctx) => {
  const late = tokenLinkedThenStepFailed(ctx);
  ctx.gob[1].set({ bar1_link: '' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.deepEqual(held(ctx), []);
  return late;
};

// The refresh sent before a resolve is answered (revision 3), and the encounter step sent
// after it is returned.
const roundAfterRefresh = (ctx) => {
  refreshAnswer(ctx, lastRequest(ctx.sb), 3);
  const step = lastRequest(ctx.sb);
  assert.equal(step.body.method, 'encounter.resolve');
  return step;
};

test('the newest request wins only where a held write can still reach: the GM linked a token\'s HP bar to its character\'s HP, the token\'s newer write failed, and the GM unlinked the bar before the older answer for the character came, which writes the character\'s HP (the write tried again reaches only the bar) and says nothing of it', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), '7');
  ctx.gob[1].set({ bar1_link: '' });
  olderAnswerWritesHp(ctx, late);
  // The write tried again before the next resolve lands on the token's bar alone.
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 2);
  assert.deepEqual(held(ctx), []);
});

test('the newest request wins where a token\'s newer write through its HP bar linked to its character\'s HP failed and the bar is still linked: the older answer for the character leaves its HP to the write tried again', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  olderAnswerLeavesHp(ctx, late, '7');
});

test('the newest request wins where a token\'s newer write through its HP bar linked to its character\'s HP failed after writing it: the GM unlinked the bar, and the older answer for the character leaves the HP its attribute shows', () => {
  const ctx = goblins();
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  // Roll20 writes the linked attribute with the bar.
  const late = tokenLinkedThenStepFailed(ctx, (props) => hp.set({ current: props.bar1_value }));
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerLeavesHp(ctx, late, 1);
});

test('the newest request wins where two newer writes of a token\'s HP through its bar linked to its character\'s HP failed, the first after writing it: the GM unlinked the bar, and the older answer for the character leaves the HP the first wrote (the conditions add up)', () => {
  const ctx = goblins();
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  const late = tokenLinkedThenStepFailed(ctx, (props) => hp.set({ current: props.bar1_value }));
  const token = ctx.gob[1];
  throwsOnce(token, 'set');
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 4, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 4 } } }] });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  unlinkShowing(ctx.gob[1], 1);
  olderAnswerLeavesHp(ctx, late, 1);
});

test('the newest request wins where a token\'s newer write through its HP bar linked to its character\'s HP failed, and the GM then moved HP to another bar (--hpbar), not linked: the write tried again reaches only that bar, and the older answer for the character writes its HP', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar 3' });
  olderAnswerWritesHp(ctx, late);
});

// Goblin 3's HP bar is linked to its character's HP, and Goblin 1's attack on it times
// out; Goblin 2 (unlinked, bar 7) joins an encounter and its step's write of HP 1 fails,
// so Goblin 2 is held with that write waiting. The older request (its answer still to
// come) is returned.
const unlinkedThenStepFailed = (ctx) => {
  ctx.gob[2].set({ bar1_link: ctx.sb.attribute(ctx.goblin.id, 'HP').id });
  const late = attackGoblin(ctx, ctx.gob[2]);
  assert.equal(late.body.params.defender.data.id, ctx.goblin.id);
  ctx.sb.advance(30000);
  encounterOf(ctx, [ctx.gob[1]]);
  ctx.gob[1].set({ bar1_value: '7' });
  const token = ctx.gob[1];
  throwsOnce(token, 'set');
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 1, 3, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 1 } } }] });
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  return late;
};

test('the newest request wins where a newer step\'s write that failed lands when tried again on a place it did not reach when it failed: with the unlinked token\'s HP bar set to none since (--hpbar none), the write tried again lands on its character\'s HP, which the older answer for the character leaves', () => {
  const ctx = goblins();
  const late = unlinkedThenStepFailed(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar none' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assert.deepEqual(held(ctx), []);
  olderAnswerLeavesHp(ctx, late, 1);
});

test('the newest request wins where a newer step\'s write that failed lands when tried again through a link the GM made since: the token\'s HP bar, linked to its character\'s HP after the write failed, writes that HP, which the older answer for the character leaves', () => {
  const ctx = goblins();
  const late = unlinkedThenStepFailed(ctx);
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  const token = ctx.gob[1];
  token.set({ bar1_link: hp.id });
  // Roll20 writes the linked attribute with the bar.
  const set = token.set.bind(token);
  token.set = (props) => { set(props); if ('bar1_value' in props) hp.set({ current: props.bar1_value }); };
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assert.deepEqual(held(ctx), []);
  olderAnswerLeavesHp(ctx, late, 1);
});

test('the newest request wins only for the requests sent before the step whose write failed: one sent after it, answered late after the write tried again landed, writes over it', () => {
  const ctx = goblins();
  unlinkedThenStepFailed(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar none' });
  const after = attackGoblin(ctx, ctx.gob[2]);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  answerWrites(ctx, after, ctx.goblin.id, { HP: { current: 2 } });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 2);
  assertNothingLeftOut(ctx);
});

test('the newest request wins part by part where two steps\' failed writes of one fighter wait together: a request sent between them leaves, where the write tried again lands, only the part the later step wrote', () => {
  const ctx = goblins();
  const late = unlinkedThenStepFailed(ctx);
  const between = attackGoblin(ctx, ctx.gob[2]);
  const token = ctx.gob[1];
  throwsOnce(token, 'set');
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 2, 4, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { max: 5 } } }] });
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar none' });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  assert.deepEqual([hp.get('current'), hp.get('max')], [1, 5]);
  answerWrites(ctx, between, ctx.goblin.id, { HP: { current: 2, max: 6 } });
  assert.deepEqual([hp.get('current'), hp.get('max')], [2, 5]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /\(the newest request wins\): Goblin: HP \(max\)\.<\/div>$/);
  answerWrites(ctx, late, ctx.goblin.id, { HP: { current: 3, max: 7 } });
  assert.deepEqual([hp.get('current'), hp.get('max')], [2, 5]);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => w.includes(`request <b>${late.id}</b>`) && /late answer/.test(w)), /\(the newest request wins\): Goblin: HP\.<\/div>$/);
});

test('a held write kept from before holds listed the requests sent before its step is still tried again, and lands', () => {
  const ctx = goblins();
  unlinkedThenStepFailed(ctx);
  const waiting = ctx.sb.state.Mindscape.encounter.writes[ctx.gob[1].id];
  assert.ok(waiting.older);
  delete waiting.older;
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.deepEqual(held(ctx), []);
});

test('the newest request wins only while a held write still waits: the token\'s newer write through its HP bar linked to its character\'s HP failed, the GM unlinked the bar, the write tried again landed on the bar alone (the hold is over), and the GM linked the bar again: the older answer for the character writes its HP', () => {
  const ctx = goblins();
  const late = unlinkedThenLandedOnBar(ctx);
  linkToGoblinHp(ctx, ctx.gob[1]);
  olderAnswerWritesHp(ctx, late);
});

test('the newest request wins only while a held write still waits: the token\'s newer write through its HP bar linked to its character\'s HP failed and the GM ended the encounter (its holds forgotten), the bar still linked: the older answer for the character writes its HP', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  ctx.sb.chat({ playerid: GM, content: '!psi encounter end' });
  olderAnswerWritesHp(ctx, late);
});

test('the newest request wins while a step\'s write that failed is to be put on the sheet by hand: the token\'s newer write through its HP bar linked to its character\'s HP failed, and a later step\'s write-back the companion could not make left the token held with no write to try: the older answer for the character leaves its HP, the bar still linked', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 2, 4, UNMADE);
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  assert.equal(ctx.sb.state.Mindscape.encounter.writes[ctx.gob[1].id], undefined);
  olderAnswerLeavesHp(ctx, late, '7');
});

test('the newest request wins where a newer write through a token\'s HP bar linked to its character\'s HP failed outside an encounter step (the GM is told to put it on the token\'s bar by hand): the older answer for the character leaves its HP, the bar still linked', () => {
  const ctx = goblins();
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  ctx.gob[2].set({ bar1_link: hp.id });
  const late = attackGoblin(ctx, ctx.gob[2]);
  ctx.sb.advance(30000);
  const newer = attackGoblin(ctx);
  assert.equal(newer.body.params.defender.data.id, ctx.gob[1].id);
  linkToGoblinHp(ctx, ctx.gob[1]);
  const token = ctx.gob[1];
  throwsOnce(token, 'set');
  answerWrites(ctx, newer, ctx.gob[1].id, { HP: { current: 1 } });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /HP 1 \(its token's bar 1\)<br>Put the values for a sheet or a token's bar there by hand/);
  olderAnswerLeavesHp(ctx, late, '7');
});

test('the newest request wins for a request kept with a character\'s HP remembered whole (true, as before conditions on attributes): its older answer leaves it, the bar that reached it unlinked or not', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  ctx.sb.state.Mindscape.pending[late.id].newerWrote = { [`${ctx.goblin.id}|hp|current`]: true };
  ctx.gob[1].set({ bar1_link: '' });
  olderAnswerLeavesHp(ctx, late, '7');
});

test('the newest request wins though the GM swapped the HP and PSP bars since the newer answer: the older answer writes the PSP the newer never wrote to the PSP bar, and leaves out only HP', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  const { late, again } = timedOutThenAgain(ctx);
  answerWrites(ctx, again, ctx.gob[1].id, { HP: { current: 1 } });
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar 2 --pspbar 1' });
  answerWrites(ctx, late, ctx.gob[1].id, { HP: { current: 2 }, PSP: { current: 5 } });
  assert.equal(ctx.gob[1].get('bar1_value'), 5);
  assert.equal(ctx.gob[1].get('bar2_value'), '');
  assertLeftOut(ctx, 'Goblin 2: HP');
});

test('the newest request wins where two attribute parts stand for one bar: the newer answer\'s PSP max on the PSP bar is not overwritten by the older\'s PSP_max', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  const { late, again } = timedOutThenAgain(ctx);
  answerWrites(ctx, again, ctx.gob[1].id, { PSP: { max: 30 } });
  assert.equal(ctx.gob[1].get('bar2_max'), 30);
  answerWrites(ctx, late, ctx.gob[1].id, { PSP_max: { current: 40 } });
  assert.equal(ctx.gob[1].get('bar2_max'), 30);
  assertLeftOut(ctx, 'Goblin 2: PSP_max');
});

test('the newest request wins where two attribute parts stand for one bar field though the GM set that bar to none since: the older answer\'s PSP_max does not overwrite the PSP max the newer wrote', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar 2' });
  const { late, again } = timedOutThenAgain(ctx);
  answerWrites(ctx, again, ctx.gob[1].id, { PSP: { max: 30 } });
  ctx.sb.chat({ playerid: GM, content: '!psi config --pspbar none' });
  answerWrites(ctx, late, ctx.gob[1].id, { PSP_max: { current: 40 } });
  const written = ctx.sb.attribute(ctx.goblin.id, 'PSP_max');
  assert.equal(written ? written.get('current') : undefined, undefined);
  assertLeftOut(ctx, 'Goblin 2: PSP_max');
});

test('the newest request wins where unlinked copies share their character\'s HP (--hpbar none): the older answer for one copy leaves the HP the newer wrote for another', () => {
  const ctx = goblins();
  ctx.sb.chat({ playerid: GM, content: '!psi config --hpbar none' });
  const attack = (target) => {
    ctx.sb.chat({ playerid: GM, selected: [ctx.gob[2].id], content: `!psi attack --target ${target.id} --mode ego-whip --defense none` });
    return lastRequest(ctx.sb);
  };
  const late = attack(ctx.gob[1]);
  ctx.sb.advance(30000);
  const other = attack(ctx.gob[0]);
  answerWrites(ctx, other, ctx.gob[0].id, { HP: { current: 1 } });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  olderAnswerForToken(ctx, late);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assertLeftOut(ctx, 'Goblin 2: HP');
});

test('the newest request wins for a request kept from before the fighter\'s own parts were remembered: a bar it remembered leaves that bar as the newer answer wrote it', () => {
  const ctx = goblins();
  const late = attackGoblin(ctx);
  ctx.sb.advance(30000);
  ctx.sb.state.Mindscape.pending[late.id].newerWrote = { [`${ctx.gob[1].id}|bar1_value`]: true };
  olderAnswerLeavesBar(ctx, late, '3');
});

test('the newest request wins between two requests kept from before there was a seq: the one sent later, by its time, keeps what it wrote from the other\'s late answer', () => {
  const before = campaign();
  const older = attackAndDefend(before);
  const newer = attackAndDefend(before);
  const saved = plain(before.sb.state.Mindscape);
  [older, newer].forEach((req, i) => { delete saved.pending[req.id].seq; saved.pending[req.id].at -= 2000 - i * 1000; });
  const ctx = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  answerWrites(ctx, newer, ctx.ulcen.id, { PSP: { current: 25 } });
  answer(ctx, older.id, exchangeResult(ctx, older.id));
  assert.deepEqual([valueOf(ctx, ctx.ulcen.id, 'PSP'), valueOf(ctx, ctx.fenka.id, 'HP')], [25, 2]);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), new RegExp(`A late answer for request <b>${older.id}</b> .*\\(the newest request wins\\): Ulcen of Tyr: PSP\\.</div>$`));
});

test('the newest request wins for an unlinked token too: a late answer leaves its bar and its own values as a newer answer wrote them, and writes the rest, the other copies\' bars included', () => {
  const ctx = goblins();
  const { late, again } = timedOutThenAgain(ctx);
  answer(ctx, again.id, exchangeResult(ctx, again.id, [
    { character_id: ctx.gob[1].id, attributes: { HP: { current: 1 }, psi_mind: { current: '{"state":"open"}' } } },
  ]));
  answer(ctx, late.id, exchangeResult(ctx, late.id, [
    { character_id: ctx.gob[0].id, attributes: { PSP: { current: 8 }, HP: { current: 6 } } },
    { character_id: ctx.gob[1].id, attributes: { HP: { current: 2 }, psi_mind: { current: '{"state":"closed"}' } } },
  ]));
  assert.equal(ctx.gob[1].get('bar1_value'), 1);
  assert.equal(ctx.sb.state.Mindscape.tokens[ctx.gob[1].id].psi_mind.current, '{"state":"open"}');
  assert.equal(ctx.gob[0].get('bar1_value'), 6);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'PSP'), 8);
  assert.match(whispersTo(ctx.sb, 'gm').find((w) => /late answer/.test(w)), /was applied\. Not written, .*\(the newest request wins\): Goblin 2: HP, psi_mind\.<\/div>$/);
});

test('a lone stale refusal (one bridge) is reported and resynced, and nothing else: no write, no card, no timeout whisper, a refresh right after takes the sheets, no request in flight at a restart, and the request is forgotten after its hour', () => {
  const ctx = encounterWithTwo();
  const resolve = resolveNow(ctx);
  const chats = ctx.sb.chats.length;
  answer(ctx, resolve.id, staleAnswer(resolve.id, 3));
  const said = ctx.sb.chats.slice(chats).map((c) => c.input);
  const markers = said.filter((text) => text.includes('MINDSCAPE-REQ'));
  assert.equal(requests(ctx.sb).at(-1).body.method, 'encounter.get');
  assert.equal(said.filter((text) => !text.includes('MINDSCAPE-REQ') && !/Mindscape request <b>/.test(text)).length, 1, said.join('\n'));
  assert.match(said[0], /so this answer changed nothing\. Resyncing.*still applied when it comes/);
  assert.ok(markers.length >= 1);
  const get = lastRequest(ctx.sb);
  answer(ctx, get.id, viewAt(ctx, get.id, 3));
  assert.equal(ctx.sb.workerWrites.length, 0);
  assert.equal(stepCards(ctx).length, 0);
  // It was relayed: a new pairing code does not count it among the requests still waiting.
  ctx.sb.chat({ playerid: GM, content: '!psi pair --new' });
  assert.doesNotMatch(whispersTo(ctx.sb, 'gm').at(-1), /still waiting/);
  const before = ctx.sb.chats.length;
  ctx.sb.advance(60000);
  assert.equal(ctx.sb.chats.length, before, 'no "no answer" whisper: the GM was told already');
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  assert.equal(refreshes(ctx.sb).length, 1);
  // A restart lists no request in flight: it had its answer.
  const saved = plain(ctx.sb.state.Mindscape);
  delete saved.pending[lastRequest(ctx.sb).id];
  const restarted = campaign({ before: (s) => { s.state.Mindscape = saved; } });
  assert.ok(whispersTo(restarted.sb, 'gm').every((w) => !/requests in flight/.test(w)));
  // Kept no longer than a timed-out request: an hour.
  assert.deepEqual(plain(restarted.sb.context.Mindscape.pendingIds()), [resolve.id]);
  restarted.sb.state.Mindscape.pending[resolve.id].at -= 61 * 60 * 1000;
  restarted.sb.chat({ playerid: GM, content: '!psi encounter status' });
  assert.ok(!plain(restarted.sb.context.Mindscape.pendingIds()).includes(resolve.id));
});

// The token's write through its HP bar linked to the Goblin's HP failed, the write tried
// again landed on the bar alone (the hold is over), a later step, answered by
// `heldAgain(ctx, step)`, held the token again, and the GM linked the bar again: the older
// answer for the character writes its HP.
const heldAgainThenRelinked = (heldAgain) => {
  const ctx = goblins();
  const late = unlinkedThenLandedOnBar(ctx);
  const step = roundAfterRefresh(ctx);
  heldAgain(ctx, step);
  assert.ok(held(ctx).includes(ctx.gob[1].id));
  linkToGoblinHp(ctx, ctx.gob[1]);
  olderAnswerWritesHp(ctx, late);
};

test('the newest request wins only while a held write still waits: the token\'s newer write through its HP bar linked to its character\'s HP failed, the write tried again landed on the bar alone (the hold is over), a later step of unknown fate held everyone, and the GM linked the bar again: the older answer for the character writes its HP', () => {
  heldAgainThenRelinked((ctx, step) => answer(ctx, step.id, lostAnswer(step.id)));
});

test('the newest request wins only while a held write still waits: the token\'s newer write through its HP bar linked to its character\'s HP failed, the write tried again landed on the bar alone (the hold is over), a later step\'s write-back the companion could not make held the token again with no write to try, and the GM linked the bar again: the older answer for the character writes its HP', () => {
  heldAgainThenRelinked((ctx, step) => roundAnswer(ctx, step, 2, 4, UNMADE));
});

test('the newest request wins only while a held write still waits: a step\'s write through the token\'s HP bar linked to its character\'s HP failed, a later write-back the companion could not make left it to be put by hand, and a later step wrote that HP on the bar alone (unlinked): the GM linked the bar again, and the older answer for the character writes its HP', () => {
  const ctx = goblins();
  const late = tokenLinkedThenStepFailed(ctx);
  const unmade = resolveNow(ctx);
  roundAnswer(ctx, unmade, 2, 4, UNMADE);
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  ctx.gob[1].set({ bar1_link: '' });
  const step = resolveNow(ctx);
  assert.equal(step.body.method, 'encounter.resolve');
  roundAnswer(ctx, step, 3, 5, { updates: [{ character_id: ctx.gob[1].id, attributes: { HP: { current: 4 } } }] });
  assert.equal(ctx.gob[1].get('bar1_value'), 4);
  linkToGoblinHp(ctx, ctx.gob[1]);
  olderAnswerWritesHp(ctx, late);
});

test('the newest request wins where a newer step\'s write that failed, tried again through a link the GM made since, writes its character\'s HP through the token\'s bar and then throws again: the older answer for the character leaves that HP to the write still waiting, which lands at the next try', () => {
  const ctx = goblins();
  const late = unlinkedThenStepFailed(ctx);
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  const token = ctx.gob[1];
  token.set({ bar1_link: hp.id });
  // Roll20 writes the linked attribute with the bar; the first try throws after that.
  const set = token.set.bind(token);
  let busy = true;
  token.set = (props) => {
    if ('bar1_value' in props) hp.set({ current: props.bar1_value });
    if (busy) { busy = false; throw new Error('busy once more'); }
    set(props);
  };
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
  assert.deepEqual(held(ctx), [ctx.gob[1].id]);
  olderAnswerLeavesHp(ctx, late, 1);
  // The round the first resolve sent (the token kept) writes nothing; the next one tries the write again.
  const round = lastRequest(ctx.sb);
  assert.equal(round.body.method, 'encounter.resolve');
  roundAnswer(ctx, round, 2, 4, { updates: [] });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.deepEqual(held(ctx), []);
  assert.equal(token.get('bar1_value'), 1);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), 1);
});

test('the newest request wins only while a held write still waits: a held write tried again through a link the GM made since threw before writing anything, and the GM\'s refresh let go of the fighter: the older answer for the character writes its HP', () => {
  const ctx = goblins();
  const late = unlinkedThenStepFailed(ctx);
  const token = ctx.gob[1];
  linkToGoblinHp(ctx, token);
  token.set = () => { delete token.set; throw new Error('busy again'); };
  ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' });
  assert.deepEqual(held(ctx), [token.id]);
  assert.equal(valueOf(ctx, ctx.goblin.id, 'HP'), '7');
  const round = lastRequest(ctx.sb);
  assert.equal(round.body.method, 'encounter.resolve');
  roundAnswer(ctx, round, 2, 4, { updates: [] });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 5);
  assert.deepEqual(held(ctx), []);
  olderAnswerWritesHp(ctx, late);
});

// The GM linked the token Goblin 3's HP bar, and Goblin 1's attack on it (so for the
// Goblin character) timed out; Goblin 2 (its HP bar linked to the Goblin's HP, 7) is held
// with no write to try (a step's write-back the companion could not make), and a later
// step's write of its HP 1 throws. The older request (its answer still to come) is returned.
const heldThenStepFailed = (ctx) => {
  const hp = ctx.sb.attribute(ctx.goblin.id, 'HP');
  ctx.gob[2].set({ bar1_link: hp.id });
  const late = attackGoblin(ctx, ctx.gob[2]);
  ctx.sb.advance(30000);
  encounterOf(ctx, [ctx.gob[1]]);
  const token = ctx.gob[1];
  linkToGoblinHp(ctx, token);
  const unmade = resolveNow(ctx);
  roundAnswer(ctx, unmade, 1, 3, UNMADE);
  assert.deepEqual(held(ctx), [token.id]);
  throwsOnce(token, 'set');
  const step = resolveNow(ctx);
  roundAnswer(ctx, step, 2, 4, { updates: [{ character_id: token.id, attributes: { HP: { current: 1 } } }] });
  assert.deepEqual(held(ctx), [token.id]);
  return late;
};

test('the newest request wins while a step\'s write that failed for a fighter held with no write to try is to be put on the sheet by hand: the older answer for the character leaves its HP, the bar still linked', () => {
  const ctx = goblins();
  const late = heldThenStepFailed(ctx);
  olderAnswerLeavesHp(ctx, late, '7');
});

test('the newest request wins only while a held write still waits: a step\'s write that failed for a fighter held with no write to try (a write-back the companion could not make before) was put on the bar by hand, unlinked, and the GM\'s refresh let go of it: the GM linked the bar again, and the older answer for the character writes its HP', () => {
  const ctx = goblins();
  const late = heldThenStepFailed(ctx);
  const token = ctx.gob[1];
  token.set({ bar1_link: '' });
  token.set({ bar1_value: 1 });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' });
  refreshAnswer(ctx, lastRequest(ctx.sb), 5);
  assert.deepEqual(held(ctx), []);
  linkToGoblinHp(ctx, token);
  olderAnswerWritesHp(ctx, late);
});

test('power-pool !psi join against a player\'s attack: the attacking player, a co-controller of the defender, is not told who joins (the defense is secret), and whether a creature it co-controls joins is its other controller\'s choice; as the creature\'s only controller it may still join it', () => {
  const ctx = seerCampaign();
  ctx.ogre.set('controlledby', ALICE);
  ctx.fenka.set('controlledby', `${ALICE},${BOB}`);
  ctx.seer.set('controlledby', `${ALICE},${BOB}`);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  const before = JSON.stringify(ctx.sb.state.Mindscape.exchanges);
  assert.match(join(ctx, ALICE, ctx.tokens.seer, xid), /whether Seer joins the defense against your own attack is chosen by its other controllers \(or the GM\), in secret\. Nothing was changed\./);
  assert.equal(JSON.stringify(ctx.sb.state.Mindscape.exchanges), before, 'nothing changed');
  const heard = whispersTo(ctx.sb, 'Alice').length;
  assert.match(join(ctx, BOB, ctx.tokens.seer, xid), /<b>Seer<\/b> joins the defense of Fenka/);
  assert.equal(whispersTo(ctx.sb, 'Alice').length, heard, 'the attacking player learned who joined the defense against its attack');
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.seer.id], content: `!psi join --req ${xid} --leave` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /whether Seer leaves the defense against your own attack is chosen by its other controllers/);
  assert.equal(ctx.sb.state.Mindscape.exchanges[xid].joined.length, 1);
  // Seer's only controller: Alice still chooses whether it joins.
  ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.seer.id], content: `!psi join --req ${xid} --leave` });
  ctx.seer.set('controlledby', ALICE);
  assert.match(join(ctx, ALICE, ctx.tokens.seer, xid), /<b>Seer<\/b> joins the defense of Fenka/);
});

test('power-pool !psi join in a player\'s psionic wave: the attacking player, a co-controller of the first mind, is not told that its creature was drawn in (the first mind\'s other controller chose it, in secret)', () => {
  const ctx = seerCampaign();
  ctx.ogre.set('controlledby', ALICE);
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ogre.id, 'psi_attacks').set({ current: 'Mental Stab, Psionic Wave' });
  ctx.fenka.set('controlledby', `${ALICE},${BOB}`);
  ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const xid = reqOf(whispersTo(ctx.sb, 'Bob').at(-1));
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode imagination-swarm --ally ${ctx.tokens.seer.id}` });
  const told = join(ctx, ALICE, ctx.tokens.seer, xid);
  assert.match(told, /refused<\/b><br>Seer cannot join this defense\. Nothing was changed\./);
  assert.doesNotMatch(told, /drawn|ally|Fenka|Imagination/);
});

test('a defender controlled by "all" and the attacker\'s player gets its defense from the GM, as one controlled by "all" alone: every player controls it, so the attacker\'s player is not its only controller', () => {
  for (const controlledby of [`all,${ALICE}`, 'all']) {
    const ctx = campaign();
    ctx.fenka.set('controlledby', controlledby);
    attack(ctx);
    assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/defend --req/.test(w)), `${controlledby}: the attacker's player got the defense buttons`);
    const prompt = whispersTo(ctx.sb, 'gm').find((w) => /defend --req/.test(w));
    assert.ok(prompt, `${controlledby}: the GM got no defense buttons`);
    const xid = /--req ([A-Za-z0-9]+)/.exec(prompt)[1];
    ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
    assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /the defense of Fenka against your own attack is chosen by its other controllers/);
    assert.equal(requestsBeyondChecks(ctx.sb).length, 0);
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mind-blank` });
    assert.equal(lastRequest(ctx.sb).body.params.defense.mode, 'mind-blank', `${controlledby}: another player (by "all") may choose`);
  }
});

test('a table where each player controls only its own characters and the GM the NPCs plays as before the rule that the attacking player does not choose the defense against its own attack: a plain attack, a psionic wave and a join', () => {
  const buttons = (sb, who) => whispersTo(sb, who).filter((w) => /defend --req/.test(w));
  // A plain attack by Alice's Ulcen on Bob's Fenka: Bob chooses, Alice neither sees nor sends it.
  const plainTable = campaign();
  attack(plainTable);
  const xid = reqOf(buttons(plainTable.sb, 'Bob').at(-1));
  assert.ok(buttons(plainTable.sb, 'gm').length, 'the GM got no defense buttons');
  plainTable.sb.chat({ playerid: ALICE, content: '!psi pending' });
  assert.equal(buttons(plainTable.sb, 'Alice').length, 0, 'the attacking player got the defense buttons');
  plainTable.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --mode none` });
  assert.match(whispersTo(plainTable.sb, 'Alice').at(-1), /only the controller of Fenka or the GM may choose this defense/);
  plainTable.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  assert.equal(lastRequest(plainTable.sb).body.params.defense.mode, 'mental-barrier');

  // power-pool: the GM's ogre attacks Fenka; Bob chooses, Alice's Seer joins by Alice's choice.
  const ctx = seerCampaign();
  const gmXid = ogreAttacksFenka(ctx);
  assert.equal(buttons(ctx.sb, 'Alice').length, 0, 'Alice got the buttons of Bob\'s defender');
  assert.match(join(ctx, ALICE, ctx.tokens.seer, gmXid), /<b>Seer<\/b> joins the defense of Fenka/);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /<b>Seer<\/b> joins the defense of Fenka/);
  const sent = requestsBeyondChecks(ctx.sb).length;
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${gmXid} --mode none` });
  assert.equal(requestsBeyondChecks(ctx.sb).length, sent + 1, 'Bob\'s defense was not sent');

  // A wave by Alice's ogre on Bob's Fenka and Alice's own Ulcen: each player chooses for
  // its own mind (Alice, Ulcen's only controller, too); Alice's Seer may join, and both hear it.
  const wave = seerCampaign();
  wave.ogre.set('controlledby', ALICE);
  wave.sb.attribute(wave.ulcen.id, 'psi_controlling').set({ current: '[]' });
  wave.sb.attribute(wave.thrall.id, 'psi_controlled_by').set({ current: '' });
  wave.sb.attribute(wave.ogre.id, 'psi_attacks').set({ current: 'Mental Stab, Psionic Wave' });
  wave.sb.chat({ playerid: ALICE, selected: [wave.tokens.ogre.id], content: `!psi attack --target ${wave.tokens.fenka.id} --target ${wave.tokens.ulcen.id} --mode psionic-wave` });
  const waveXid = reqOf(buttons(wave.sb, 'Bob').at(-1));
  assert.ok(buttons(wave.sb, 'Bob').every((w) => !w.includes(`--for ${wave.ulcen.id}`)), 'Bob got the buttons of Alice\'s Ulcen');
  assert.ok(buttons(wave.sb, 'Alice').some((w) => w.includes(`--for ${wave.ulcen.id}`)), 'Alice, Ulcen\'s only controller, got no buttons for it');
  assert.ok(buttons(wave.sb, 'Alice').every((w) => !w.includes(`--for ${wave.fenka.id}`)), 'Alice got the buttons of Bob\'s Fenka');
  const bobHeard = whispersTo(wave.sb, 'Bob').length;
  assert.match(join(wave, ALICE, wave.tokens.seer, waveXid), /<b>Seer<\/b> joins the defense of the group of Fenka/);
  assert.equal(whispersTo(wave.sb, 'Bob').length, bobHeard + 1, 'Bob, who chooses for the first mind, was not told who joined');
  const before = whispersTo(wave.sb, 'Alice').length;
  wave.sb.chat({ playerid: ALICE, content: `!psi defend --req ${waveXid} --for ${wave.ulcen.id} --mode none` });
  assert.ok(whispersTo(wave.sb, 'Alice').slice(before).every((w) => !/refused/.test(w)), 'Alice, Ulcen\'s only controller, may not choose its defense');
  assert.ok(Object.keys(wave.sb.state.Mindscape.exchanges[waveXid].choices).includes(wave.ulcen.id), 'Ulcen\'s choice was not kept');
});
