// The userscript in headless Chromium, end to end: the Mod script (in the fake
// sandbox) whispers a request; its whisper HTML goes into a page that imitates Roll20's
// chat markup; the userscript relays it to the real companion daemon and types the
// answer into the chat box; that command goes back into the sandbox, which writes the
// attributes. Needs MINDSCAPE_BIN (the `mindscape` console script) and Chromium
// (/usr/bin/chromium or MINDSCAPE_CHROMIUM).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { campaign, psionicControl, decode, MARKER, whispersTo, GM, BOB, ALICE } from './campaign.mjs';

const USERSCRIPT = fileURLToPath(new URL('../mindscape-bridge.user.js', import.meta.url));
// The pairing code the GM pastes into the bridge; every campaign below uses it.
const PAIRED = 'BrowserPairingCode0123456';
const BIN = process.env.MINDSCAPE_BIN || '';
const CHROMIUM = process.env.MINDSCAPE_CHROMIUM || '/usr/bin/chromium';
// scripts/test.sh (what CI runs) sets MINDSCAPE_REQUIRE_E2E=1: there a missing daemon or
// Chromium fails the run, where a bare `npm test` skips these tests with a warning.
const REQUIRED = !['', '0'].includes(process.env.MINDSCAPE_REQUIRE_E2E ?? '');
const unavailable = !BIN ? 'MINDSCAPE_BIN is not set, so the real daemon cannot be started'
  : !existsSync(BIN) ? `MINDSCAPE_BIN is "${BIN}", which does not exist, so the real daemon cannot be started`
    : !existsSync(CHROMIUM) ? `Chromium is not at "${CHROMIUM}" (MINDSCAPE_CHROMIUM, default /usr/bin/chromium)`
      : null;
const missing = REQUIRED ? Boolean(unavailable) : !BIN || !existsSync(BIN);
const SKIP = missing && (REQUIRED ? `${unavailable}: see the failed test "the Roll20 bridge browser tests can run"` : 'MINDSCAPE_BIN missing');
if (REQUIRED && unavailable) {
  test('the Roll20 bridge browser tests can run: MINDSCAPE_REQUIRE_E2E is set, so the real daemon and Chromium must be there', () => {
    assert.fail(`${unavailable}. MINDSCAPE_REQUIRE_E2E=${process.env.MINDSCAPE_REQUIRE_E2E} forbids skipping the Roll20 bridge browser tests: `
      + 'set MINDSCAPE_BIN to the mindscape console script (.venv/bin/mindscape) and MINDSCAPE_CHROMIUM to a Chromium, '
      + 'as scripts/test.sh does, or unset MINDSCAPE_REQUIRE_E2E to skip them.');
  });
} else if (missing) {
  // Loud on purpose: this is the only test of the whole relay against the daemon.
  process.stderr.write(`\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n`
    + `!!! SKIPPING the Roll20 bridge browser test: MINDSCAPE_BIN is ${BIN ? `"${BIN}", which does not exist` : 'not set'}.\n`
    + '!!! Set MINDSCAPE_BIN to the mindscape console script (scripts/test.sh does).\n'
    + '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n');
}

// Roll20's chat as the userscript sees it: #textchat .content with message divs,
// #textchat-input with a textarea and the send button, #chatSendBtn. The page records
// every send.
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Roll20 (imitation)</title></head>
<body>
<div id="textchat"><div class="content"></div></div>
<div id="textchat-input"><textarea title="Text Chat Input"></textarea><button id="chatSendBtn" class="btn">Send</button></div>
<script>
  window.__sent = [];
  document.querySelector('#chatSendBtn').addEventListener('click', () => {
    const box = document.querySelector('#textchat-input textarea');
    window.__sent.push(box.value);
    box.value = '';
  });
  let counter = 0;
  // Roll20 prints the speaker only on the first of consecutive messages by one sender.
  window.__addMessage = (by, html, kind) => {
    const div = document.createElement('div');
    counter += 1;
    div.className = 'message ' + (kind || 'private');
    div.setAttribute('data-messageid', '-Nmsg' + counter);
    div.innerHTML = '<div class="spacer"></div>' + (by ? '<span class="by">' + by + '</span>' : '') + html;
    document.querySelector('#textchat .content').appendChild(div);
  };
</script>
<script src="/mindscape-bridge.user.js"></script>
</body></html>`;

const freePort = () => new Promise((resolve, reject) => {
  const probe = net.createServer();
  probe.once('error', reject);
  probe.listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});

const waitFor = async (what, check, ms = 15000) => {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => { setTimeout(r, 100); });
  }
};

let server;
let daemon;
let daemonLog = '';
let browser;
let page;
let home;
let token;
let pagePort;
let daemonPort;

before(async () => {
  if (missing) return;
  server = createServer((req, res) => {
    if (req.url === '/mindscape-bridge.user.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(readFileSync(USERSCRIPT));
    } else if (req.url.startsWith('/editor/')) {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(PAGE);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => { server.listen(0, '127.0.0.1', resolve); });
  pagePort = server.address().port;
  daemonPort = await freePort();
  home = mkdtempSync(join(tmpdir(), 'mindscape-roll20-'));
  daemon = spawn(BIN, ['serve', '--home', home, '--port', String(daemonPort),
    '--allow-origin', `http://127.0.0.1:${pagePort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  daemon.stdout.on('data', (d) => { daemonLog += d; });
  daemon.stderr.on('data', (d) => { daemonLog += d; });
  await waitFor(`the daemon on port ${daemonPort}\n${daemonLog}`, async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${daemonPort}/healthz`);
      return res.ok;
    } catch (err) {
      return false;
    }
  });
  token = readFileSync(join(home, 'token'), 'utf8').trim();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  page = await browser.newPage();
  await page.addInitScript(() => { window.__mindscapeBridgeTest = true; });
  await page.goto(`http://127.0.0.1:${pagePort}/editor/`);
});

after(async () => {
  if (browser) await browser.close();
  if (daemon) {
    daemon.kill('SIGTERM');
    await new Promise((resolve) => { if (daemon.exitCode !== null) resolve(); else daemon.once('exit', resolve); });
  }
  if (server) await new Promise((resolve) => { server.close(resolve); });
  if (home) rmSync(home, { recursive: true, force: true });
});

// Puts every whisper the Mod script sent the GM since `from` into the page, as Roll20
// shows them: "(From Mindscape):" on the first, no speaker on the ones that follow.
const showWhispers = async (sb, from) => {
  const html = sb.chats.slice(from).filter((c) => c.input.startsWith('/w gm ')).map((c) => c.input.slice('/w gm '.length));
  for (const [i, h] of html.entries()) await page.evaluate(([by, text]) => window.__addMessage(by, text), [i === 0 ? '(From Mindscape):' : '', h]);
};

const sentCommands = () => page.evaluate(() => window.__sent.slice());

// Sets up the bridge in `page` as the GM leaves it after the settings box (the daemon's
// URL, or `url`, its token, the campaign's pairing code) with answers typed in parts of
// 400 characters: every test that relays through `page` starts with it, so that each
// passes run alone (--test-name-pattern), not only after the settings test.
const pairedBridge = ({ url = `http://127.0.0.1:${daemonPort}` } = {}) => page.evaluate((settings) => {
  Object.entries(settings).forEach(([k, v]) => localStorage.setItem(`mindscape.bridge.${k}`, JSON.stringify(v)));
}, { url, token, pairing: PAIRED, chunk: 400 });

// The complete answer commands the page has sent for request `id`, or null.
const answerFor = async (id) => {
  const mine = (await sentCommands()).filter((c) => c.startsWith(`!psi-result ${id} `));
  if (!mine.length) return null;
  const numbered = /^!psi-result \S+ (\d+)\/(\d+)\/[A-Za-z0-9_-]+ /.exec(mine[0]);
  return mine.length === (numbered ? Number(numbered[2]) : 1) ? mine : null;
};

// Runs `act` (commands into the sandbox), shows the resulting whispers in the page,
// waits for the userscript to answer every request they hold, and feeds the answers
// back into the sandbox as the GM; requests an answer leads to (the next refresh of a
// run, the resolve after it) are followed the same way until none is left. Returns the
// decoded answers in request order.
const roundTrip = async (ctx, act) => {
  let from = ctx.sb.chats.length;
  act();
  const answers = [];
  const done = new Set();
  for (;;) {
    const ids = [...new Set(ctx.sb.chats.slice(from).flatMap((c) => [...c.input.matchAll(MARKER)].map((m) => m[1])))].filter((id) => !done.has(id));
    if (!ids.length) break;
    await showWhispers(ctx.sb, from);
    from = ctx.sb.chats.length;
    for (const id of ids) {
      const commands = await waitFor(`the answer to ${id}`, () => answerFor(id));
      for (const command of commands) ctx.sb.chat({ playerid: GM, content: command });
      answers.push(decode(commands.map((c) => c.split(' ').at(-1)).join('')));
      done.add(id);
    }
  }
  assert.ok(answers.length, 'the command made a request');
  // The last part of an answer is clicked before the bridge's typing pause ends and it
  // sets its badge; relays overlap (the next request arrives during that pause), so
  // without this a following test could see the badge of a relay still finishing.
  await page.evaluate(() => window.__mindscapeBridge.bridge.idle());
  return answers;
};

// Makes an attack (`message`, a `!psi attack` without --defense) and relays its check
// through the userscript and the real companion (exchange.odds, with no defense): its
// answer, the check allowing the attack, whispers the defense buttons. Returns that answer.
const checkedAttack = async (ctx, message) => {
  const [check] = await roundTrip(ctx, () => ctx.sb.chat(message));
  assert.ok(check.result, `the companion refused the check: ${JSON.stringify(check.error)}\n${daemonLog}`);
  return check;
};

test('the settings box stores URL and token and the badge shows the connection', { skip: SKIP }, async () => {
  // A bridge with nothing stored, as the GM first meets it.
  await page.evaluate(() => localStorage.clear());
  await page.reload();
  assert.match(await page.textContent('#mindscape-bridge-badge'), /no token/);
  await page.click('#mindscape-bridge-badge');
  await page.fill('#mindscape-bridge-url', `http://127.0.0.1:${daemonPort}`);
  await page.fill('#mindscape-bridge-token', 'wrong-token');
  await page.click('#mindscape-bridge-save');
  await waitFor('the badge to refuse a wrong token', async () => /bad token/.test(await page.textContent('#mindscape-bridge-badge')));
  await page.click('#mindscape-bridge-badge');
  await page.fill('#mindscape-bridge-token', token);
  await page.click('#mindscape-bridge-save');
  // The companion answers, but without the Mod script's pairing code nothing is relayed.
  await waitFor('the badge to ask for pairing', async () => /not paired/.test(await page.textContent('#mindscape-bridge-badge')));
  assert.match(await page.getAttribute('#mindscape-bridge-badge', 'title'), /type !psi pair in the chat and paste the code/);
  await page.click('#mindscape-bridge-badge');
  await page.fill('#mindscape-bridge-pairing', PAIRED);
  await page.click('#mindscape-bridge-save');
  await waitFor('the badge to say connected', async () => /connected/.test(await page.textContent('#mindscape-bridge-badge')));
  const stored = await page.evaluate(() => ['url', 'token', 'pairing'].map((k) => localStorage.getItem(`mindscape.bridge.${k}`)));
  assert.deepEqual(stored, [JSON.stringify(`http://127.0.0.1:${daemonPort}`), JSON.stringify(token), JSON.stringify(PAIRED)]);
});

test('a Mod script request travels through the chat, the userscript and the daemon, and its answer is written to the sheets', { skip: SKIP }, async () => {
  // Small answer chunks (400 characters), so that the Mod script reassembles a real
  // multi-part answer.
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  await checkedAttack(ctx, { playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 3 --range short` });
  const start = ctx.sb.chats.length;
  const sentBefore = (await sentCommands()).length;
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
  const requestChats = ctx.sb.chats.slice(start).filter((c) => /MINDSCAPE-REQ/.test(c.input));
  const id = [...requestChats[0].input.matchAll(MARKER)][0][1];

  // A player whispering a look-alike request to the GM is not relayed.
  const forged = requestChats[0].input.slice('/w gm '.length).replaceAll(id, 'Forged000001');
  await page.evaluate((html) => window.__addMessage('(From Alice):', html), forged);
  await showWhispers(ctx.sb, start);

  const commands = await waitFor('the answer in the chat box', async () => {
    const sent = await sentCommands();
    const mine = sent.filter((c) => c.startsWith(`!psi-result ${id} `));
    const parts = mine.length ? (/^!psi-result \S+ (\d+)\/(\d+)\/[A-Za-z0-9_-]+ /.exec(mine[0]) || [0, 1, 1])[2] : 0;
    return mine.length && mine.length === Number(parts) ? mine : null;
  });
  assert.ok(commands.length > 1, `a multi-part answer: ${JSON.stringify(decode(commands.map((c) => c.split(' ').at(-1)).join('')))}`);
  // Every part carries the page's source tag, one for the whole answer, so that the Mod
  // script never puts them together with another browser's (docs/ROLL20.md).
  const source = await page.evaluate(() => window.__mindscapeBridge.SOURCE);
  assert.match(source, /^[A-Za-z0-9_-]{8}$/);
  assert.deepEqual(commands.map((c) => c.split(' ')[2]), commands.map((c, i) => `${i + 1}/${commands.length}/${source}`));
  assert.deepEqual((await sentCommands()).slice(sentBefore).filter((c) => !c.startsWith(`!psi-result ${id} `)), [], 'nothing but the answer is sent');

  const answer = decode(commands.map((c) => c.split(' ').at(-1)).join(''));
  assert.equal(answer.id, id);
  assert.ok(answer.result, `the daemon answered an error: ${JSON.stringify(answer.error)}\n${daemonLog}`);
  assert.equal(answer.result.system, 'revised-2e');

  const psp = Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current'));
  for (const command of commands) ctx.sb.chat({ playerid: GM, content: command });
  assert.match(ctx.sb.chats.at(-1).input, /^&\{template:default\} \{\{name=Ego Whip: Ulcen of Tyr vs\. Fenka\}\}/);
  assert.ok(answer.result.updates.length > 0, 'the exchange changed the sheets');
  for (const update of answer.result.updates) {
    for (const [name, value] of Object.entries(update.attributes)) {
      const attr = ctx.sb.attribute(update.character_id, name)
        || ctx.sb.objects.find((o) => o.get('_characterid') === update.character_id && String(o.get('name')).toLowerCase() === name.toLowerCase());
      assert.ok(attr, `attribute ${name} written`);
      if ('current' in value) assert.equal(attr.get('current'), value.current);
      if ('max' in value) assert.equal(attr.get('max'), value.max);
    }
  }
  // An ego whip costs PSPs whatever the dice say (RULES.md 1.2: a failed attack costs half).
  assert.ok(Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current')) < psp);
  assert.equal(ctx.sb.workerWrites.length, answer.result.updates.reduce((n, u) => n + Object.keys(u.attributes).length, 0));

  // The same request shown again (a reload, a second tab's echo) is not relayed twice.
  const before = (await sentCommands()).length;
  await showWhispers(ctx.sb, start);
  await new Promise((r) => { setTimeout(r, 1500); });
  assert.equal((await sentCommands()).length, before);
  const handled = await page.evaluate(() => window.__mindscapeBridge.bridge.handled());
  assert.ok(handled.includes(id));
  assert.ok(!handled.includes('Forged000001'));
});

// A second browser of the GM's account (its own storage, so its own lease), set up like
// the first (pairedBridge); both type answers in parts of 400 characters.
const secondBrowser = async () => {
  const other = await browser.newPage();
  try {
    await other.addInitScript(([settings]) => {
      window.__mindscapeBridgeTest = true;
      Object.entries(settings).forEach(([k, v]) => localStorage.setItem(`mindscape.bridge.${k}`, JSON.stringify(v)));
    }, [{ url: `http://127.0.0.1:${daemonPort}`, token, pairing: PAIRED, chunk: 400 }]);
    await other.goto(`http://127.0.0.1:${pagePort}/editor/`);
  } catch (error) {
    await other.close();
    throw error;
  }
  return other;
};

// Both browsers see the whispers since `start`; the commands each types back for request
// `id`, once all its parts are typed: [the first browser's, the second's].
const bothAnswers = async (ctx, other, start, id) => {
  await showWhispers(ctx.sb, start);
  const html = ctx.sb.chats.slice(start).filter((c) => c.input.startsWith('/w gm ')).map((c) => c.input.slice('/w gm '.length));
  for (const [i, h] of html.entries()) await other.evaluate(([by, text]) => window.__addMessage(by, text), [i === 0 ? '(From Mindscape):' : '', h]);
  const whole = (sent) => {
    const mine = sent.filter((c) => c.startsWith(`!psi-result ${id} `));
    const numbered = mine.length && /^!psi-result \S+ (\d+)\/(\d+)\/[A-Za-z0-9_-]+ /.exec(mine[0]);
    return mine.length && mine.length === (numbered ? Number(numbered[2]) : 1) ? mine : null;
  };
  return [await waitFor('the first browser\'s answer', () => answerFor(id)),
    await waitFor('the second browser\'s answer', async () => whole(await other.evaluate(() => window.__sent.slice())))];
};

// The sheet writes since `writesBefore` are those of `updates`, each value on its sheet.
const assertWrittenOnly = (ctx, updates, writesBefore) => {
  const written = ctx.sb.workerWrites.slice(writesBefore);
  assert.equal(written.length, updates.reduce((n, u) => n + Object.keys(u.attributes).length, 0));
  for (const update of updates) {
    for (const [name, value] of Object.entries(update.attributes)) {
      const attr = ctx.sb.objects.find((o) => o.get('_type') === 'attribute' && o.get('_characterid') === update.character_id && String(o.get('name')).toLowerCase() === name.toLowerCase());
      if ('current' in value) assert.equal(String(attr.get('current')), String(value.current), name);
    }
  }
};

test('two browsers of one GM account both relay an exchange: each types its own answer in parts under its own source tag, and interleaved in the chat the Mod script applies the first whole one, whole, once; the other is already answered', { skip: SKIP }, async () => {
  await pairedBridge();
  const other = await secondBrowser();
  try {
    const ctx = campaign({ pairing: PAIRED });
    await checkedAttack(ctx, { playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 3 --range short` });
    const start = ctx.sb.chats.length;
    const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
    ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` });
    const id = [...ctx.sb.chats.slice(start).filter((c) => /MINDSCAPE-REQ/.test(c.input))[0].input.matchAll(MARKER)][0][1];
    const [a, b] = await bothAnswers(ctx, other, start, id);
    const tagOf = (commands) => [...new Set(commands.map((c) => c.split(' ')[2].split('/')[2]))];
    assert.equal(tagOf(a).length, 1, JSON.stringify(a.map((c) => c.split(' ')[2])));
    assert.equal(tagOf(b).length, 1, JSON.stringify(b.map((c) => c.split(' ')[2])));
    assert.notEqual(tagOf(a)[0], tagOf(b)[0], 'two page loads, two source tags');
    assert.ok(a.length > 1 && b.length > 1, 'two multi-part answers');
    const answers = { a: decode(a.map((c) => c.split(' ').at(-1)).join('')), b: decode(b.map((c) => c.split(' ').at(-1)).join('')) };
    assert.ok(answers.a.result && answers.b.result, `${JSON.stringify(answers)}\n${daemonLog}`);
    // Typed at once, the parts interleave: all of b's but its first, then a's, then b's
    // first. Put together per GM alone, a's first part would complete a mix with b's.
    const order = [...b.slice(1), ...a, b[0]];
    const winner = 'a';
    const cardsBefore = ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).length;
    const writesBefore = ctx.sb.workerWrites.length;
    for (const command of order) ctx.sb.chat({ playerid: GM, content: command });
    const cards = ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).slice(cardsBefore);
    assert.equal(cards.length, 1, cards.map((c) => c.input).join('\n'));
    assert.match(cards[0].input, /^&\{template:default\} \{\{name=Ego Whip: Ulcen of Tyr vs\. Fenka\}\}/);
    assertWrittenOnly(ctx, answers[winner].result.updates, writesBefore);
    const refusals = whispersTo(ctx.sb, 'gm').filter((w) => /answer refused/.test(w));
    assert.ok(refusals.length >= 1 && refusals.every((w) => /that request was already answered/.test(w)), refusals.join('\n'));
  } finally {
    await other.close();
  }
  await page.evaluate(() => window.__mindscapeBridge.bridge.idle());
});

test('two browsers of one GM account both relay a resolve: the companion carries out one run and refuses the other as stale (4009); that refusal typed first is reported, and the success after it is still applied once, card and sheets', { skip: SKIP }, async () => {
  await pairedBridge();
  const other = await secondBrowser();
  try {
    const ctx = campaign({ pairing: PAIRED });
    await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter create' }));
    await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' }));
    await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1` }));
    const start = ctx.sb.chats.length;
    ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force --no-refresh' });
    const id = [...ctx.sb.chats.slice(start).filter((c) => /MINDSCAPE-REQ/.test(c.input))[0].input.matchAll(MARKER)][0][1];
    const typed = await bothAnswers(ctx, other, start, id);
    const answers = typed.map((commands) => decode(commands.map((c) => c.split(' ').at(-1)).join('')));
    const stale = answers.findIndex((a) => a.error && a.error.code === 4009);
    assert.notEqual(stale, -1, JSON.stringify(answers));
    const done = answers[1 - stale];
    assert.ok(done.result && done.result.updates.length, JSON.stringify(done));
    const cardsBefore = ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).length;
    const writesBefore = ctx.sb.workerWrites.length;
    for (const command of typed[stale]) ctx.sb.chat({ playerid: GM, content: command });
    assert.ok(whispersTo(ctx.sb, 'gm').some((w) => /moved on \(now at revision \d+\) before this request reached the companion, so this answer changed nothing\. Resyncing/.test(w)));
    assert.equal(ctx.sb.workerWrites.length, writesBefore);
    for (const command of typed[1 - stale]) ctx.sb.chat({ playerid: GM, content: command });
    assert.ok(ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).length > cardsBefore, 'the step\'s card is posted');
    assertWrittenOnly(ctx, done.result.updates, writesBefore);
    assert.equal(ctx.sb.state.Mindscape.encounter.revision, done.result.revision);
    assert.match(whispersTo(ctx.sb, 'gm').find((w) => /relayed twice/.test(w)), new RegExp(`Request <b>${id}</b> .*the companion carried it out once`));
  } finally {
    await other.close();
  }
  await page.evaluate(() => window.__mindscapeBridge.bridge.idle());
});

test('the real companion\'s check refuses an attack its attacker cannot make (multiplier-above-level): no defender is asked, the attacker\'s player reads why', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  // Ulcen is level 4 (RULES.md 1.4: the multiplier is at most the attacker's level).
  const [check] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 9 --range short` }));
  assert.equal(check.error?.data?.rule, 'multiplier-above-level', JSON.stringify(check));
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Refused: Ego Whip: Ulcen of Tyr vs\. Fenka<\/b><br>Multiplier 9 is above Ulcen of Tyr&#39;s level 4\. The attack was not made: nobody was asked for a defense\./);
  assert.deepEqual(whispersTo(ctx.sb, 'Bob'), []);
  assert.ok(ctx.sb.chats.every((c) => !/!psi defend --req/.test(c.input)), 'no defense buttons');
  assert.deepEqual(JSON.parse(JSON.stringify(ctx.sb.state.Mindscape.exchanges)), {});
});

test('when the daemon is unreachable the userscript retries once, shows it, and sends nothing', { skip: SKIP }, async () => {
  const deadPort = await freePort();
  await pairedBridge({ url: `http://127.0.0.1:${deadPort}` });
  const ctx = campaign({ pairing: PAIRED });
  const start = ctx.sb.chats.length;
  ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mind-thrust` });
  const before = (await sentCommands()).length;
  await showWhispers(ctx.sb, start);
  await waitFor('the badge to say offline', async () => /offline/.test(await page.textContent('#mindscape-bridge-badge')), 10000);
  assert.equal((await sentCommands()).length, before);
  // The Mod script then tells the GM to start the relay when its timeout runs out.
  ctx.sb.advance(30000);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Start the relay/);
});

test('an encounter runs through the relay: create, add as a batch, secret declarations, resolve with write-back', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  const [created] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Dune duel' }));
  assert.ok(created.result, JSON.stringify(created.error));
  assert.equal(ctx.sb.state.Mindscape.encounter.id, created.result.id);

  const [added] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' }));
  assert.ok(Array.isArray(added) && added.length === 2, 'one batch answer with two responses');
  assert.ok(added.every((r) => r.result), JSON.stringify(added));
  const combatants = JSON.parse(JSON.stringify(ctx.sb.state.Mindscape.encounter.combatants));
  assert.deepEqual(Object.keys(combatants).sort(), [ctx.ulcen.id, ctx.fenka.id].sort());

  const [declared] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 2 --defense thought-shield` }));
  assert.ok(declared.result, JSON.stringify(declared.error));
  await roundTrip(ctx, () => ctx.sb.chat({ playerid: BOB, selected: [ctx.tokens.fenka.id], content: '!psi encounter declare --defense mental-barrier' }));

  const psp = Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current'));
  // The resolve takes both sheets again first (unchanged here), then resolves.
  const answers = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force' }));
  assert.equal(answers.length, 3);
  assert.deepEqual(answers.slice(0, 2).map((a) => a.result && a.result.changed), [[], []], JSON.stringify(answers.slice(0, 2)));
  const resolved = answers[2];
  assert.ok(resolved.result, JSON.stringify(resolved.error));
  assert.ok(resolved.result.updates.length > 0);
  assert.ok(Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current')) < psp, 'the ego whip cost PSPs');
  assert.match(ctx.sb.chats.filter((c) => c.input.includes('&{template:default}')).at(-1).input, /\{\{name=Dune duel: round 1\}\}/);

  const [undone] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter undo' }));
  assert.ok(undone.result, JSON.stringify(undone.error));
  assert.equal(Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current')), psp, 'undo wrote the PSPs back');
});

test('!psi round goes through the relay to exchange.end_round: a stun that has run out ends on the sheet, then nothing changes', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  // Ulcen was stunned with no round left after this one (COMBATANTS.md condition_rounds).
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'stunned', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_condition_rounds', current: '{"stunned":0}', max: '' });
  ctx.sb.api.Campaign().set({
    playerpageid: '-Page',
    turnorder: JSON.stringify([ctx.tokens.fenka, ctx.tokens.ogre, ctx.tokens.ulcen].map((t) => ({ id: t.id, pr: '1', custom: '', _pageid: '-Page' }))),
  });
  const [ended] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi round' }));
  assert.ok(ended.result, `the daemon answered an error: ${JSON.stringify(ended.error)}\n${daemonLog}`);
  assert.deepEqual(ended.result.combatants.map((c) => c.id), [ctx.fenka.id, ctx.ulcen.id]);
  assert.deepEqual(ended.result.events, [{ type: 'condition-ended', combatant: ctx.ulcen.id, condition: 'stunned' }]);
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'psi_conditions').get('current'), '');
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'psi_condition_rounds').get('current'), '{}');
  assert.match(ctx.sb.chats.at(-1).input, /^&\{template:default\} \{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr is no longer stunned\.\}\}/);

  const [quiet] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi round' }));
  assert.ok(quiet.result, JSON.stringify(quiet.error));
  assert.deepEqual(quiet.result.events, []);
  assert.match(ctx.sb.chats.at(-1).input, /^\/w gm .*End of the round: nothing changes\./);
});

test('!psi round asks the real companion what closing a mind costs, and the GM\'s button pays it', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  // A critical hit opened Fenka's mind last round through her mental barrier (5 PSPs):
  // RULES.md §1.5, closing costs twice that.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: JSON.stringify({ state: 'open', opened_by: 'critical', locked_rounds: 0, last_defense: 'mental-barrier', used_power: false, may_pay_to_close: true, rounds_open: 1 }), max: '' });
  const [offered] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' }));
  assert.ok(offered.result, `the daemon answered an error: ${JSON.stringify(offered.error)}\n${daemonLog}`);
  assert.deepEqual(offered.result.combatants.map((c) => [c.id, c.choices.close.cost, c.choices.close.payable]), [[ctx.fenka.id, 10, true]]);
  const question = whispersTo(ctx.sb, 'gm').at(-1);
  const pay = question.match(/\[Fenka pays 10 PSPs\]\((![^)]+)\)/);
  assert.ok(pay, question);
  const [ended] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: pay[1] }));
  assert.ok(ended.result, JSON.stringify(ended.error));
  assert.deepEqual(ended.result.events.filter((e) => e.combatant === ctx.fenka.id).map((e) => e.type), ['psp-spent', 'mind-closed']);
  assert.equal(Number(ctx.sb.attribute(ctx.fenka.id, 'PSP').get('current')), 20);
  assert.equal(JSON.parse(ctx.sb.attribute(ctx.fenka.id, 'psi_mind').get('current')).state, 'closed');
});

test('power-pool through the relay: an attack on a puppet strikes its controller in the real companion, and the sheets follow whoever wins', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --defense pinnacle-of-will` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  const result = resolved.result;
  // Seed 001: the attack on Fenka strikes Ulcen, who controls her.
  assert.deepEqual(result.redirected, [{ from: ctx.fenka.id, to: ctx.ulcen.id }]);
  const state = (charId, name) => ctx.sb.attribute(charId, name)?.get('current') ?? '';
  if (result.winner === 'attacker') {
    // Ulcen falls under the ogre's control, and the control he held ends: his puppets are free.
    assert.equal(state(ctx.ulcen.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
    assert.equal(state(ctx.fenka.id, 'psi_controlled_by'), '');
    assert.equal(state(ctx.thrall.id, 'psi_controlled_by'), '');
  } else {
    // The ogre is rebuffed: Ulcen keeps both.
    assert.equal(state(ctx.fenka.id, 'psi_controlled_by'), ctx.ulcen.id);
    assert.equal(state(ctx.thrall.id, 'psi_controlled_by'), ctx.ulcen.id);
  }
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('a power-pool psionic wave through the relay: two minds choose their defenses and the real companion resolves one exchange against both', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  // Nobody under control: Fenka and Ulcen each answer for themselves.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_pool').set({ current: '3' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_dedicated').set({ current: '[]' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_pool').set({ current: '4' });
  ctx.sb.attribute(ctx.ogre.id, 'psi_attacks').set({ current: 'Mental Stab, Psionic Wave' });
  await checkedAttack(ctx, { playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id} --mode psionic-wave` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --for ${ctx.fenka.id} --mode none` });
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, content: `!psi defend --req ${xid} --for ${ctx.ulcen.id} --mode pinnacle-of-will` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  const members = resolved.result.defense.members.map((m) => m.id).sort();
  assert.deepEqual(members, [ctx.fenka.id, ctx.ulcen.id].sort());
  // A wave's targets fall together, under one link of the ogre's, or stay free together.
  const controller = resolved.result.winner === 'attacker' ? ctx.tokens.ogre.id : '';
  assert.equal(ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').get('current'), controller);
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'psi_controlled_by')?.get('current') ?? '', controller);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=Psionic Wave: Ogre vs\. Fenka, Ulcen of Tyr\}\}/);
});

test('a power-pool imagination swarm through the relay: Fenka draws in a non-psionic ally, the group loses to the real companion, and both sheets are written', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  // Fenka is free and knows the swarm: 1d4 of her own and 1d4 of Porter's, at most 8,
  // against the ogre's ten dice (d8 raised to d12 by Mental Stab), at least 10: she loses.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_pool').set({ current: '1', max: '1' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_die').set({ current: '4' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psionic', current: '1', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_defenses', current: 'Imagination Swarm', max: '' });
  ctx.sb.attribute(ctx.ogre.id, 'psi_pool').set({ current: '10', max: '10' });
  const porter = ctx.sb.add('character', { name: 'Porter', controlledby: BOB });
  for (const [name, current, max] of [['psi_pool', '1', '1'], ['psi_die', '4', ''], ['HP', '6', '6'], ['level-class1', '1', '']]) {
    ctx.sb.add('attribute', { _characterid: porter.id, name, current, max });
  }
  await checkedAttack(ctx, { playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab --keep-by die` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${porter.id}` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  const result = resolved.result;
  assert.equal(result.winner, 'attacker');
  assert.deepEqual(result.defense.members.map((m) => [m.id, m.role, m.mode]), [[ctx.fenka.id, 'defender', 'imagination-swarm'], [porter.id, 'ally', null]]);
  assert.equal(result.attack.keep_by, 'die');
  const state = (charId, name) => ctx.sb.attribute(charId, name)?.get('current') ?? '';
  // Both fall under the ogre's control (an unlinked token: its ref is the token's id), kept by a die each.
  assert.equal(state(ctx.fenka.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.equal(state(porter.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.match(state(porter.id, 'psi_conditions'), /dazed/);
  const held = JSON.parse(ctx.sb.state.Mindscape.tokens[ctx.tokens.ogre.id].psi_controlling.current);
  assert.deepEqual(held.map((l) => [l.id, l.kept_by]), [[ctx.fenka.id, 'die'], [porter.id, 'die']]);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Allies=Porter \(drawn in, dazed, 1d4\)\}\}/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('a power-pool swarm through the relay: the real companion refuses a psionic ally (ally-psionic), nothing is written, and the attack waiting again is answered', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  // Fenka and Ulcen are free; Ulcen is psionic (psi_psionic), so Fenka may not draft him.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_pool').set({ current: '1', max: '1' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_psionic', current: '1', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_defenses', current: 'Imagination Swarm', max: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_dedicated').set({ current: '[]' });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  await checkedAttack(ctx, { playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  const sheets = JSON.stringify(ctx.sb.objects.filter((o) => o.get('_type') === 'attribute').map((o) => [o.get('name'), o.get('current'), o.get('max')]));
  const [refused] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode imagination-swarm --ally ${ctx.tokens.ulcen.id}` }));
  assert.equal(refused.error?.data?.rule, 'ally-psionic', JSON.stringify(refused));
  assert.equal(JSON.stringify(ctx.sb.objects.filter((o) => o.get('_type') === 'attribute').map((o) => [o.get('name'), o.get('current'), o.get('max')])), sheets, 'nothing was written');
  const bob = whispersTo(ctx.sb, 'Bob');
  assert.match(bob.at(-2), /<b>Ulcen of Tyr<\/b> is psionic: a defender draws in only allied non-psionic creatures\..*Fenka chooses the defense again\./);
  const again = /--req ([A-Za-z0-9]+)/.exec(bob.at(-1))[1];
  assert.notEqual(again, xid);
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${again} --mode imagination-swarm` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  assert.deepEqual(resolved.result.defense.members.map((m) => [m.id, m.role]), [[ctx.fenka.id, 'defender']]);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=Mental Stab: Ogre vs\. Fenka\}\}/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('a power-pool join through the relay: Alice\'s psionic Seer joins Fenka\'s defense by its own choice, the real companion takes it as an ally with its own Imagination Swarm, and its sheet is written', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  // Fenka is free, 1d4; Seer (psionic, 2d6) knows Imagination Swarm. The ogre's twenty
  // dice (d8 raised to d12 by Mental Stab), at least 20, beat the group's 16 at most.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_pool').set({ current: '1', max: '1' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_die').set({ current: '4' });
  ctx.sb.attribute(ctx.ogre.id, 'psi_pool').set({ current: '20', max: '20' });
  const seer = ctx.sb.add('character', { name: 'Seer', controlledby: ALICE });
  // The companion reads a power-pool creature's modes from psi_defenses, and so does the
  // Mod script's check (knownDefenses).
  for (const [name, current, max] of [['psi_pool', '2', '2'], ['psi_die', '6', ''], ['psi_psionic', '1', ''], ['HP', '9', '9'], ['level-class1', '2', ''],
    ['psi_defenses', 'Imagination Swarm', '']]) {
    ctx.sb.add('attribute', { _characterid: seer.id, name, current, max });
  }
  const seerToken = ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: seer.id, name: 'Seer', bar1_link: ctx.sb.attribute(seer.id, 'HP').id });
  await checkedAttack(ctx, { playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'Bob').at(-1))[1];
  assert.match(whispersTo(ctx.sb, 'gm').filter((w) => /defend!/.test(w)).at(-1), new RegExp(`\\[Join the defense\\]\\(!psi join --req ${xid}\\)`));
  // The GM passes the id on; Alice joins with Seer's token selected.
  ctx.sb.chat({ playerid: ALICE, selected: [seerToken.id], content: `!psi join --req ${xid}` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /<b>Seer<\/b> joins the defense of Fenka/);
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode none` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  const result = resolved.result;
  assert.equal(result.winner, 'attacker');
  // Seed 001: "Psionically active creatures may also use this defence mode to participate in
  // a psionic combat that is targeting an ally they can see": its own mode and pool.
  assert.deepEqual(result.defense.members.map((m) => [m.id, m.role, m.mode, m.dice, m.sides]),
    [[ctx.fenka.id, 'defender', null, 1, 4], [seer.id, 'ally', 'imagination-swarm', 2, 6]]);
  const state = (charId, name) => ctx.sb.attribute(charId, name)?.get('current') ?? '';
  assert.equal(state(seer.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  assert.equal(String(state(seer.id, 'psi_pool')), '0');
  assert.equal(state(ctx.fenka.id, 'psi_controlled_by'), ctx.tokens.ogre.id);
  const held = JSON.parse(ctx.sb.state.Mindscape.tokens[ctx.tokens.ogre.id].psi_controlling.current);
  assert.deepEqual(held.map((l) => l.id), [ctx.fenka.id, seer.id]);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{Allies=Seer \(defends with Imagination Swarm, 2d6\)\}\}/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('a power-pool refusal through the relay names its creature: of three tokens all named Goblin, the real companion\'s defender-unaware is about the sleeping one that joined, which is left out, and the defense chosen again is resolved', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  ctx.sb.chat({ playerid: GM, content: '!psi config --system power-pool' });
  const goblin = ctx.sb.add('character', { name: 'Goblin', controlledby: '' });
  for (const [name, current, max] of [['psi_psionic', '1', ''], ['psi_pool', '2', '2'], ['psi_die', '6', ''], ['HP', '7', '7'],
    ['psi_attacks', 'Mental Stab', ''], ['psi_defenses', 'Imagination Swarm', '']]) {
    ctx.sb.add('attribute', { _characterid: goblin.id, name, current, max });
  }
  // Three unlinked tokens, as Roll20 names copies; Alice controls the third, which sleeps.
  const token = (controlledby = '') => ctx.sb.add('graphic', { _subtype: 'token', _pageid: '-Page', represents: goblin.id, name: 'Goblin', controlledby,
    bar1_link: '', bar2_link: '', bar3_link: '', bar1_value: '7', bar1_max: '7' });
  const [g1, g2, g3] = [token(), token(), token(ALICE)];
  ctx.sb.state.Mindscape.tokens[g3.id] = { conditions: { name: 'psi_conditions', current: 'asleep', max: '' } };
  await checkedAttack(ctx, { playerid: GM, selected: [g1.id], content: `!psi attack --target ${g2.id} --mode mental-stab` });
  const xid = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'gm').filter((w) => /defend!/.test(w)).at(-1))[1];
  ctx.sb.chat({ playerid: ALICE, selected: [g3.id], content: `!psi join --req ${xid}` });
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /<b>Goblin<\/b> joins the defense of Goblin/);
  const [refused] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${xid} --mode none` }));
  assert.deepEqual([refused.error?.data?.rule, refused.error?.data?.combatant], ['defender-unaware', g3.id], JSON.stringify(refused));
  const again = /--req ([A-Za-z0-9]+)/.exec(whispersTo(ctx.sb, 'gm').at(-1))[1];
  assert.notEqual(again, xid);
  assert.deepEqual(JSON.parse(JSON.stringify(ctx.sb.state.Mindscape.exchanges[again].joined)), []);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /<b>Goblin<\/b> cannot join the defense: Goblin is asleep.* It is left out/);
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: `!psi defend --req ${again} --mode none` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  assert.deepEqual(resolved.result.defense.members.map((m) => [m.id, m.role]), [[g2.id, 'defender']]);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('a power-pool encounter through the relay: allies declared by a wave\'s second mind are refused by the real companion (allies-first-mind-only) and nothing is recorded; once the view names the minds struck, the Mod script refuses it itself', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  // Everyone free; the ogre knows the wave; the thrall (no pool) could be drawn in.
  ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.fenka.id, 'psi_pool').set({ current: '1', max: '1' });
  ctx.sb.attribute(ctx.thrall.id, 'psi_controlled_by').set({ current: '' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').set({ current: '[]' });
  ctx.sb.attribute(ctx.ulcen.id, 'psi_dedicated').set({ current: '[]' });
  ctx.sb.attribute(ctx.ogre.id, 'psi_attacks').set({ current: 'Mental Stab, Psionic Wave' });
  // Ulcen knows the swarm that draws allies in (--ally with another defense is refused
  // before anything is sent, as on !psi attack).
  ctx.sb.attribute(ctx.ulcen.id, 'psi_defenses').set({ current: 'Pinnacle of Will, Imagination Swarm' });
  const [created] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Wave' }));
  assert.ok(created.result, JSON.stringify(created.error));
  const members = [ctx.tokens.fenka.id, ctx.tokens.ulcen.id, ctx.tokens.ogre.id, ctx.thrall.id];
  const [added] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: `!psi encounter add ${members.map((id) => `--token ${id}`).join(' ')}` }));
  assert.ok(added.every((r) => r.result), JSON.stringify(added));
  const [wave] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ogre.id], content: `!psi encounter declare --attack psionic-wave --target ${ctx.tokens.fenka.id} --target ${ctx.tokens.ulcen.id}` }));
  assert.ok(wave.result, `the daemon answered an error: ${JSON.stringify(wave.error)}\n${daemonLog}`);
  const ulcenDraws = () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --defense imagination-swarm --ally ${ctx.thrall.id}` });
  const revision = ctx.sb.state.Mindscape.encounter.revision;
  const [refused] = await roundTrip(ctx, ulcenDraws);
  assert.deepEqual([refused.error?.data?.rule, refused.error?.data?.combatant], ['allies-first-mind-only', ctx.ulcen.id], JSON.stringify(refused));
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Nothing was recorded\. In a psionic wave only the mind struck first draws allies into the group's defense: declare this defense again without <code>--ally<\/code>/);
  const [status] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter status' }));
  assert.deepEqual(status.result.struck, [ctx.fenka.id, ctx.ulcen.id]);
  assert.equal(status.result.revision, revision, 'nothing was recorded');
  const sent = ctx.sb.chats.filter((c) => /MINDSCAPE-REQ/.test(c.input)).length;
  ulcenDraws();
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /in this psionic wave only the mind struck first, Fenka, draws allies into the group's defense: declare the defense of Ulcen of Tyr without --ally\. Nothing was sent\./);
  assert.equal(ctx.sb.chats.filter((c) => /MINDSCAPE-REQ/.test(c.input)).length, sent);
  const [declared] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: '!psi encounter declare --defense pinnacle-of-will' }));
  assert.ok(declared.result, `the daemon answered an error: ${JSON.stringify(declared.error)}\n${daemonLog}`);
});

test('power-pool control at a round\'s end through the relay: the real companion offers Ulcen\'s control, the GM\'s button releases Fenka, both sheets are freed; a keep the companion refuses changes nothing', { skip: SKIP }, async () => {
  await pairedBridge();
  // Ulcen holds Fenka by a die and the thrall by an action (campaign.mjs psionicControl).
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  const [offered] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: '!psi round' }));
  assert.ok(offered.result, `the daemon answered an error: ${JSON.stringify(offered.error)}\n${daemonLog}`);
  const fenka = { targets: [ctx.fenka.id], kept_by: 'die', wave: null };
  const thrall = { targets: [ctx.thrall.id], kept_by: 'action', wave: null };
  assert.deepEqual(offered.result.combatants.map((c) => [c.id, c.choices]), [[ctx.ulcen.id, {
    release: [fenka, thrall], keep: [{ ...fenka, by: 'action' }, { ...thrall, by: 'die' }], cannot_perceive: [thrall] }]]);
  const question = whispersTo(ctx.sb, 'gm').at(-1);
  const release = question.match(/<b>Fenka<\/b> by a die from its pool: \[Release\]\((![^)]+)\)/);
  assert.ok(release, question);
  // Fenka's round does not end here (only Ulcen's token is chosen): her sheet goes along.
  const [ended] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: release[1] }));
  assert.ok(ended.result, `the daemon answered an error: ${JSON.stringify(ended.error)}\n${daemonLog}`);
  assert.deepEqual(ended.result.others.map((o) => o.id), [ctx.fenka.id]);
  assert.deepEqual(ended.result.events.map((e) => [e.type, e.combatant, e.reason]), [['control-ended', ctx.fenka.id, 'released']]);
  const state = (charId, name) => ctx.sb.attribute(charId, name)?.get('current') ?? '';
  assert.equal(state(ctx.fenka.id, 'psi_controlled_by'), '');
  assert.deepEqual(JSON.parse(state(ctx.ulcen.id, 'psi_controlling')).map((l) => l.id), [ctx.thrall.id]);
  assert.equal(Number(state(ctx.ulcen.id, 'psi_pool')), 4, 'the die kept for Fenka returns');
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr releases Fenka\.\}\}/);
  // With no die left in his pool, keeping the thrall by a die is refused: nothing is written.
  ctx.sb.attribute(ctx.ulcen.id, 'psi_pool').set({ current: '0' });
  const writes = ctx.sb.workerWrites.length;
  const [refused] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi round --keep ${ctx.thrall.id} --by die` }));
  assert.equal(refused.error && refused.error.data.rule, 'no-die-to-dedicate', JSON.stringify(refused));
  assert.equal(ctx.sb.workerWrites.length, writes);
  // The companion's reason in words; its code and rule only in the GM's small print.
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: End of the round<\/b><br>Ulcen of Tyr has no die in its pool to keep control with\.<br>Nothing was changed: the round has not ended\. The choices sent: Ulcen of Tyr keeps Thrall by a die\..*<span[^>]*>companion: 4001 no-die-to-dedicate<\/span><\/div>$/);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('a power-pool encounter through the relay: a release declared by the controller is written to both sheets at once, and the next resolve keeps it', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = psionicControl(campaign({ pairing: PAIRED }));
  const [created] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Thrall pit' }));
  assert.ok(created.result, JSON.stringify(created.error));
  const [added] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id, ctx.tokens.ogre.id], content: '!psi encounter add' }));
  assert.ok(added.every((r) => r.result), JSON.stringify(added));
  const [released] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --release ${ctx.tokens.fenka.id}` }));
  assert.ok(released.result, `the daemon answered an error: ${JSON.stringify(released.error)}\n${daemonLog}`);
  assert.ok(released.result.updates.length > 0);
  assert.equal(ctx.sb.attribute(ctx.fenka.id, 'psi_controlled_by').get('current'), '');
  assert.deepEqual(JSON.parse(ctx.sb.attribute(ctx.ulcen.id, 'psi_controlling').get('current')).map((l) => l.id), [ctx.thrall.id]);
  // The refresh before the next resolve takes the sheets as they now are: nothing differs.
  const answers = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force' }));
  const refreshed = answers.filter((a) => a.result && Array.isArray(a.result.changed));
  assert.equal(refreshed.length, 3, JSON.stringify(answers));
  assert.deepEqual(refreshed.map((a) => a.result.changed), [[], [], []]);
  const [status] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter status' }));
  assert.equal(status.result.combatants[ctx.fenka.id].controlled_by, null);
});

test('!psi house switches a real house rule through the relay, and the next request is resolved under it', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  const [rules] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi house --set H-2E-CLOSE-LAST-PSP=off' }));
  assert.ok(rules.result, `the daemon answered an error: ${JSON.stringify(rules.error)}\n${daemonLog}`);
  assert.ok(rules.result.house_rules.length >= 10);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /<b>H-2E-CLOSE-LAST-PSP<\/b>: <b>off<\/b> \(default on\) \[on\]/);
  // Fenka holds exactly the 10 PSPs closing costs: under the default she could not pay
  // her last PSPs (RULES.md §1.5 errata); with the rule off she may.
  ctx.sb.attribute(ctx.fenka.id, 'PSP').set({ current: '10' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_mind', current: JSON.stringify({ state: 'open', opened_by: 'critical', locked_rounds: 0, last_defense: 'mental-barrier', used_power: false, may_pay_to_close: true, rounds_open: 1 }), max: '' });
  const [offered] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.fenka.id], content: '!psi round' }));
  assert.ok(offered.result, JSON.stringify(offered.error));
  assert.deepEqual(offered.result.combatants.map((c) => [c.id, c.choices.close.cost, c.choices.close.payable]), [[ctx.fenka.id, 10, true]]);
  // A rule the companion does not know changes nothing.
  await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi house --set H-2E-CLOSE-LAST-PSP=on --set H-2E-NOT-A-RULE=on' }));
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Nothing was changed: H-2E-NOT-A-RULE is not a house rule of revised-2e/);
  assert.deepEqual(JSON.parse(JSON.stringify(ctx.sb.state.Mindscape.config.house)), { 'revised-2e': { 'H-2E-CLOSE-LAST-PSP': false } });
});

test('!psi rest goes through the relay to combatants.rest: 2 hours give back ceil(40/8) PSPs an hour on the sheet', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').set({ current: '5' });
  const [rested] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi rest --hours 2' }));
  assert.ok(rested.result, `the daemon answered an error: ${JSON.stringify(rested.error)}\n${daemonLog}`);
  assert.deepEqual(rested.result.combatants.map((c) => c.id), [ctx.ulcen.id, ctx.fenka.id]);
  // RULES.md 1.8: ceil(40 / 8) = 5 PSPs an hour; Fenka is at her maximum and gets none.
  assert.deepEqual(rested.result.events, [{ type: 'psp-regained', combatant: ctx.ulcen.id, amount: 10, hours: 2 }]);
  assert.equal(Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current')), 15);
  assert.equal(ctx.sb.attribute(ctx.fenka.id, 'PSP').get('current'), '30');
  assert.equal(ctx.sb.chats.at(-1).input, '&{template:default} {{name=Rest: 2 hours}} {{Summary=After the rest: Ulcen of Tyr regains 10 PSPs (15 of 40).}}');
});

test('power-pool control kept by an action through the relay: a long rest ends it in the real companion (seed 001: "Powers can\'t be maintained when a creature rests"), and so does a round\'s end the controller sleeps through; the thrall\'s sheet is freed each time, Fenka held by a die stays', { skip: SKIP }, async () => {
  await pairedBridge();
  const state = (ctx, charId, name) => ctx.sb.attribute(charId, name)?.get('current') ?? '';
  const freed = (ctx, answer, reason, summary) => {
    assert.ok(answer.result, `the daemon answered an error: ${JSON.stringify(answer.error)}\n${daemonLog}`);
    assert.deepEqual(answer.result.others.map((o) => o.id), [ctx.thrall.id]);
    assert.deepEqual(answer.result.events.filter((e) => e.type === 'control-ended').map((e) => [e.combatant, e.reason]), [[ctx.thrall.id, reason]]);
    assert.equal(state(ctx, ctx.thrall.id, 'psi_controlled_by'), '');
    assert.equal(state(ctx, ctx.fenka.id, 'psi_controlled_by'), ctx.ulcen.id);
    assert.deepEqual(JSON.parse(state(ctx, ctx.ulcen.id, 'psi_controlling')).map((l) => l.id), [ctx.fenka.id]);
    assert.match(ctx.sb.chats.at(-1).input, summary);
    assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
  };
  // Ulcen holds Fenka by a die and the thrall by an action (campaign.mjs psionicControl).
  const resting = psionicControl(campaign({ pairing: PAIRED }));
  const [rested] = await roundTrip(resting, () => resting.sb.chat({ playerid: GM, selected: [resting.tokens.ulcen.id], content: '!psi rest' }));
  freed(resting, rested, 'rest', /\{\{name=Long rest\}\} \{\{Summary=After the rest: Ulcen of Tyr rests and spends no action to keep its control of Thrall: the control ends\./);
  // Asleep at the round's end, Ulcen spends no action: no choice is needed.
  const sleeping = psionicControl(campaign({ pairing: PAIRED }));
  sleeping.sb.add('attribute', { _characterid: sleeping.ulcen.id, name: 'psi_conditions', current: 'asleep', max: '' });
  const [ended] = await roundTrip(sleeping, () => sleeping.sb.chat({ playerid: GM, selected: [sleeping.tokens.ulcen.id], content: '!psi round --keep-all' }));
  freed(sleeping, ended, 'controller-cannot-act', /\{\{name=End of the round\}\} \{\{Summary=End of the round: Ulcen of Tyr is asleep and cannot spend the action that keeps its control of Thrall: the control ends\./);
});

test('!psi encounter refresh takes a sheet changed outside the encounter, so the next write-back starts from it', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = campaign({ pairing: PAIRED });
  await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter create' }));
  await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' }));
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 2);
  // Ulcen spends 10 PSPs on a power outside psionic combat: the encounter still holds 40.
  ctx.sb.attribute(ctx.ulcen.id, 'PSP').set({ current: '30' });
  const [first, second] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter refresh' }));
  assert.ok(first.result && second.result, JSON.stringify([first, second]));
  assert.deepEqual([first.result.combatant_id, first.result.changed, first.result.revision], [ctx.ulcen.id, ['psp'], 3]);
  assert.deepEqual([second.result.combatant_id, second.result.changed, second.result.revision], [ctx.fenka.id, [], 3]);
  assert.equal(ctx.sb.state.Mindscape.encounter.revision, 3);
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ulcen of Tyr: psp taken again from the sheet\.<br>Unchanged: Fenka\./);

  // The step's write-back now starts from 30: without the refresh it would have written
  // 40 less the attack's cost, giving back the PSPs spent on the sheet.
  await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi encounter declare --attack ego-whip --target ${ctx.tokens.fenka.id} --mult 1` }));
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve --force --no-refresh' }));
  assert.ok(resolved.result, JSON.stringify(resolved.error));
  assert.ok(Number(ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current')) < 30, `PSP written: ${ctx.sb.attribute(ctx.ulcen.id, 'PSP').get('current')}`);
});

test('a marker for a method the Mod script never uses is not relayed', { skip: SKIP }, async () => {
  await pairedBridge();
  const code = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'Delete000001', method: 'encounter.delete', params: { id: 'x' } })).toString('base64url');
  // The last answer of the test before sets the badge once its typing pause is over: wait
  // for that, or it can overwrite the refusal this test reads.
  await waitFor('the bridge to finish relaying', async () => !/relaying/.test(await page.textContent('#mindscape-bridge-badge')), 5000);
  const before = (await sentCommands()).length;
  await page.evaluate(([text, pairing]) => window.__addMessage('(From Mindscape):', `<div>MINDSCAPE-REQ ${pairing} Delete000001 1/1 ${text}</div>`), [code, PAIRED]);
  await waitFor('the badge to refuse it', async () => /refused/.test(await page.textContent('#mindscape-bridge-badge')), 5000);
  assert.match(await page.getAttribute('#mindscape-bridge-badge', 'title'), /encounter\.delete/);
  assert.equal((await sentCommands()).length, before);
});

test('with a userscript manager the bridge uses GM_xmlhttpRequest and GM_setValue, not fetch and localStorage', { skip: SKIP }, async () => {
  const managed = await browser.newPage();
  try {
    await managed.addInitScript(([url, key]) => {
      window.__mindscapeBridgeTest = true;
      window.__gm = { calls: 0, values: { url, token: key, pairing: 'BrowserPairingCode0123456' } };
      // What Tampermonkey and Violentmonkey provide, played by XMLHttpRequest here.
      window.GM_getValue = (k, fallback) => (k in window.__gm.values ? window.__gm.values[k] : fallback);
      window.GM_setValue = (k, v) => { window.__gm.values[k] = v; };
      window.GM_xmlhttpRequest = (details) => {
        window.__gm.calls += 1;
        window.__gm.options = { redirect: details.redirect, anonymous: details.anonymous };
        const xhr = new XMLHttpRequest();
        xhr.open(details.method, details.url);
        Object.entries(details.headers).forEach(([h, v]) => xhr.setRequestHeader(h, v));
        xhr.onload = () => details.onload({ status: xhr.status, responseText: xhr.responseText });
        xhr.onerror = () => details.onerror();
        xhr.send(details.data);
      };
      window.fetch = () => { throw new Error('fetch must not be used under a userscript manager'); };
    }, [`http://127.0.0.1:${daemonPort}`, token]);
    await managed.goto(`http://127.0.0.1:${pagePort}/editor/`);
    await waitFor('the badge to say connected', async () => /connected/.test(await managed.textContent('#mindscape-bridge-badge')));
    const ctx = campaign({ pairing: PAIRED });
    const from = ctx.sb.chats.length;
    ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode ego-whip --mult 2` });
    const id = ctx.sb.chats.slice(from).flatMap((c) => [...c.input.matchAll(MARKER)])[0][1];
    const html = ctx.sb.chats.slice(from).map((c) => c.input.slice('/w gm '.length));
    for (const [i, h] of html.entries()) await managed.evaluate(([by, text]) => window.__addMessage(by, text), [i === 0 ? '(From Mindscape):' : '', h]);
    const commands = await waitFor('the odds answer', async () => {
      const sent = await managed.evaluate(() => window.__sent.slice());
      const mine = sent.filter((c) => c.startsWith(`!psi-result ${id} `));
      const numbered = mine.length && /^!psi-result \S+ (\d+)\/(\d+)\/[A-Za-z0-9_-]+ /.exec(mine[0]);
      return mine.length && mine.length === (numbered ? Number(numbered[2]) : 1) ? mine : null;
    });
    for (const command of commands) ctx.sb.chat({ playerid: GM, content: command });
    assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Ego Whip odds: Ulcen of Tyr vs\. Fenka.*Hit \d+\.\d%/);
    const gm = await managed.evaluate(() => ({ calls: window.__gm.calls, handled: window.__gm.values.handled, options: window.__gm.options }));
    assert.ok(gm.calls >= 2, 'companion.info and the odds went through GM_xmlhttpRequest');
    // No redirect followed with the token (Tampermonkey 4.19+), no cookies sent.
    assert.deepEqual(gm.options, { redirect: 'error', anonymous: true });
    assert.ok(gm.handled.includes(id), 'handled ids kept with GM_setValue');
    assert.equal(await managed.evaluate(() => localStorage.length), 0);
  } finally {
    await managed.close();
  }
});

// The settings box is part of Roll20's page, which Roll20's scripts (and any script
// injected into it) can read; the token kept with GM_setValue is out of their reach, and
// must not be put back into the box where they can read it (SECURITY.md, threat 1).
test('the saved token is never put back into the settings box, where the page\'s scripts could read it', { skip: SKIP }, async () => {
  const managed = await browser.newPage();
  try {
    await managed.addInitScript(() => {
      window.__gm = { values: { token: 'Saved-Secret-Token', pairing: 'BrowserPairingCode0123456' }, tokens: [] };
      window.GM_getValue = (k, fallback) => (k in window.__gm.values ? window.__gm.values[k] : fallback);
      window.GM_setValue = (k, v) => { window.__gm.values[k] = v; };
      // A companion that answers companion.info to the right token only.
      window.GM_xmlhttpRequest = (details) => {
        const sent = details.headers.Authorization;
        window.__gm.tokens.push(sent);
        const ok = sent === `Bearer ${window.__gm.values.token}` && window.__gm.values.token !== '';
        setTimeout(() => details.onload(ok
          ? { status: 200, responseText: JSON.stringify({ jsonrpc: '2.0', id: 'bridge-check', result: { name: 'mindscape', version: '0.1.0' } }) }
          : { status: 401, responseText: '{"error": "unauthorized"}' }), 0);
      };
    });
    await managed.goto(`http://127.0.0.1:${pagePort}/editor/`);
    await waitFor('the badge to say connected', async () => /connected/.test(await managed.textContent('#mindscape-bridge-badge')));
    // What a script of the page reads of the box, open and closed.
    const field = () => managed.evaluate(() => {
      const input = document.querySelector('#mindscape-bridge-token');
      return { value: input.value, placeholder: input.placeholder };
    });
    await managed.click('#mindscape-bridge-badge');
    assert.deepEqual(await field(), { value: '', placeholder: 'saved (leave empty to keep it)' });
    // Saving with the field empty keeps the saved token, and the companion still takes it.
    await managed.click('#mindscape-bridge-save');
    await waitFor('the check after saving', async () => (await managed.evaluate(() => window.__gm.tokens.length)) >= 2);
    assert.equal(await managed.evaluate(() => window.__gm.values.token), 'Saved-Secret-Token');
    assert.match(await managed.textContent('#mindscape-bridge-badge'), /connected/);
    // A new token typed in is saved, then gone from the box.
    await managed.click('#mindscape-bridge-badge');
    await managed.fill('#mindscape-bridge-token', 'Rotated-Secret-Token');
    await managed.click('#mindscape-bridge-save');
    assert.equal(await managed.evaluate(() => window.__gm.values.token), 'Rotated-Secret-Token');
    assert.deepEqual(await field(), { value: '', placeholder: 'saved (leave empty to keep it)' });
    await waitFor('the badge to say connected', async () => /connected/.test(await managed.textContent('#mindscape-bridge-badge')));
    // Typed but not saved: closing the box clears it as well.
    await managed.click('#mindscape-bridge-badge');
    await managed.fill('#mindscape-bridge-token', 'Half-Typed-Token');
    await managed.click('#mindscape-bridge-badge');
    assert.equal((await field()).value, '');
    assert.equal(await managed.evaluate(() => window.__gm.values.token), 'Rotated-Secret-Token');
    // Nowhere in the page's markup either.
    const html = await managed.evaluate(() => document.documentElement.outerHTML);
    assert.doesNotMatch(html, /Secret-Token|Half-Typed/);
  } finally {
    await managed.close();
  }
});


// An empty token field keeps the saved token; with none saved yet (the first pairing)
// there is nothing to test: the badge keeps saying so rather than sending no token and
// telling the companion's refusal of it as a wrong token.
test('"Save and test" with no token typed and none saved says there is no token and sends nothing; the first token typed is saved and tested', { skip: SKIP }, async () => {
  const managed = await browser.newPage();
  try {
    await managed.addInitScript(() => {
      window.__gm = { values: {}, tokens: [] };
      window.GM_getValue = (k, fallback) => (k in window.__gm.values ? window.__gm.values[k] : fallback);
      window.GM_setValue = (k, v) => { window.__gm.values[k] = v; };
      window.GM_xmlhttpRequest = (details) => {
        const sent = details.headers.Authorization;
        window.__gm.tokens.push(sent);
        const ok = sent === 'Bearer First-Secret-Token';
        setTimeout(() => details.onload(ok
          ? { status: 200, responseText: JSON.stringify({ jsonrpc: '2.0', id: 'bridge-check', result: { name: 'mindscape', version: '0.1.0' } }) }
          : { status: 401, responseText: '{"error": "unauthorized"}' }), 0);
      };
    });
    await managed.goto(`http://127.0.0.1:${pagePort}/editor/`);
    await waitFor('the badge to say no token', async () => /no token/.test((await managed.textContent('#mindscape-bridge-badge').catch(() => '')) || ''));
    await managed.click('#mindscape-bridge-badge');
    assert.equal(await managed.getAttribute('#mindscape-bridge-token', 'placeholder'), '');
    await managed.fill('#mindscape-bridge-pairing', 'BrowserPairingCode0123456');
    await managed.click('#mindscape-bridge-save');
    // Give a check, had one been sent, the time to answer.
    await new Promise((resolve) => { setTimeout(resolve, 300); });
    assert.equal(await managed.textContent('#mindscape-bridge-badge'), 'Mindscape: no token');
    assert.match(await managed.getAttribute('#mindscape-bridge-badge', 'title'), /paste the companion's token/);
    assert.deepEqual(await managed.evaluate(() => window.__gm.tokens), []);
    // The first token typed is saved and tested.
    await managed.click('#mindscape-bridge-badge');
    await managed.fill('#mindscape-bridge-token', 'First-Secret-Token');
    await managed.click('#mindscape-bridge-save');
    await waitFor('the badge to say connected', async () => /connected/.test(await managed.textContent('#mindscape-bridge-badge')));
    assert.equal(await managed.evaluate(() => window.__gm.values.token), 'First-Secret-Token');
    assert.equal(await managed.getAttribute('#mindscape-bridge-token', 'placeholder'), 'saved (leave empty to keep it)');
  } finally {
    await managed.close();
  }
});
// Roll20's page can set globals before the userscript runs (document-idle); under a
// manager its test switches must do nothing, or a script of the page would get the
// storage holding the token, a transport that sends it, and a relay without the pairing
// check (window.__mindscapeBridge), or keep the bridge from starting.
test('under a userscript manager the page cannot turn on the test hook nor keep the bridge from starting', { skip: SKIP }, async () => {
  const managed = await browser.newPage();
  try {
    await managed.addInitScript(() => {
      // What a script of Roll20's page would set.
      window.__mindscapeBridgeTest = true;
      window.__mindscapeBridgeNoStart = true;
      // What the manager provides.
      window.GM_info = { script: { name: 'Mindscape Bridge for Roll20' } };
      const values = { token: 'Saved-Secret-Token' };
      window.GM_getValue = (k, fallback) => (k in values ? values[k] : fallback);
      window.GM_setValue = (k, v) => { values[k] = v; };
      window.GM_xmlhttpRequest = (details) => {
        setTimeout(() => details.onload({ status: 200, responseText: JSON.stringify({ jsonrpc: '2.0', id: 'bridge-check', result: { name: 'mindscape', version: '0.1.0' } }) }), 0);
      };
    });
    await managed.goto(`http://127.0.0.1:${pagePort}/editor/`);
    // It started all the same: the badge is there and the check went through.
    await waitFor('the badge to say not paired', async () => /not paired/.test((await managed.textContent('#mindscape-bridge-badge').catch(() => '')) || ''));
    assert.equal(await managed.evaluate(() => typeof window.__mindscapeBridge), 'undefined');
  } finally {
    await managed.close();
  }
});

test('the userscript reads markers through invisible breaks, finds the speaker of collapsed messages and cuts answers into parts', { skip: SKIP }, async () => {
  const checks = await page.evaluate(() => {
    const b = window.__mindscapeBridge;
    const markers = b.findMarkers('MINDSCAPE-REQ BrowserPairingCode0123456 abcDEF123456 2/3 eyJq\u200bc29u\u00adIjoi');
    const list = document.createElement('div');
    list.innerHTML = '<div class="message"><span class="by">(From Mindscape):</span>one</div>'
      + '<div class="message">two</div><div class="message"><span class="by">Alice:</span>three</div><div class="message">four</div>';
    const speakers = Array.from(list.children).map((m) => b.senderOf(m));
    const commands = b.answerCommands('abcDEF123456', JSON.stringify({ jsonrpc: '2.0', id: 'abcDEF123456', result: { text: 'é'.repeat(300) } }), 100);
    const joined = b.decodeBase64Url(commands.map((c) => c.split(' ').at(-1)).join(''));
    return {
      markers,
      speakers,
      parts: commands.map((c) => c.split(' ')[2]),
      source: b.SOURCE,
      given: b.answerCommands('abcDEF123456', 'x'.repeat(200), 100, 'Tag_-9').map((c) => c.split(' ')[2]),
      joined: JSON.parse(joined).result.text.length,
      problems: [
        b.requestProblem({ jsonrpc: '2.0', id: 'abcDEF123456', method: 'exchange.resolve' }, 'abcDEF123456'),
        b.requestProblem({ jsonrpc: '2.0', id: 'other', method: 'exchange.resolve' }, 'abcDEF123456'),
        b.requestProblem({ jsonrpc: '2.0', id: 'abcDEF123456', method: 'rpc.discover' }, 'abcDEF123456'),
        b.requestProblem([{ jsonrpc: '2.0', id: 'abcDEF123456-0', method: 'encounter.add' }], 'abcDEF123456'),
        b.requestProblem([], 'abcDEF123456'),
      ],
    };
  });
  assert.deepEqual(checks.markers, [{ pairing: PAIRED, id: 'abcDEF123456', part: 2, count: 3, piece: 'eyJqc29uIjoi' }]);
  assert.deepEqual(checks.speakers, ['Mindscape', 'Mindscape', 'Alice', 'Alice']);
  // Each part names its number, their count and the page's source tag.
  assert.ok(checks.parts.length > 1 && checks.parts.every((p, i) => p === `${i + 1}/${checks.parts.length}/${checks.source}`), JSON.stringify(checks.parts));
  assert.deepEqual(checks.given, ['1/3/Tag_-9', '2/3/Tag_-9', '3/3/Tag_-9']);
  assert.equal(checks.joined, 300);
  assert.equal(checks.problems[0], null);
  assert.match(checks.problems[1], /does not match/);
  assert.match(checks.problems[2], /not one the Mod script uses/);
  assert.equal(checks.problems[3], null);
  assert.match(checks.problems[4], /1 to 100/);
});

test('the userscript takes only what the Mod script sends: no marker of more than 500 parts or of a part beyond its count, no call that is no object or not JSON-RPC 2.0, no batch of more than 100, no bytes that are not UTF-8, no piece size but whole digits; an answer that fits one piece is one unnumbered command', { skip: SKIP }, async () => {
  const checks = await page.evaluate(() => {
    const b = window.__mindscapeBridge;
    const marker = (part, count) => b.findMarkers(`MINDSCAPE-REQ BrowserPairingCode0123456 abcDEF123456 ${part}/${count} eyJq`).length;
    const call = (id) => ({ jsonrpc: '2.0', id, method: 'exchange.odds' });
    const batch = (n) => Array.from({ length: n }, (_, i) => call(`abcDEF123456-${i}`));
    // A JSON string holding the byte 0xff, which is no UTF-8.
    const notUtf8 = btoa(String.fromCharCode(0x22, 0xff, 0x22)).replace(/=+$/, '');
    let decoded;
    try {
      decoded = { text: b.decodeBase64Url(notUtf8) };
    } catch (err) {
      decoded = { threw: true };
    }
    // 'x' * 75 is 100 characters of base64url: one piece of 100 exactly.
    const exact = b.answerCommands('abcDEF123456', 'x'.repeat(75), 100);
    return {
      markers: [marker(500, 500), marker(1, 501), marker(2, 1), marker(1, 1)],
      problems: [
        b.requestProblem('a text', 'abcDEF123456'),
        b.requestProblem([[call('abcDEF123456-0')]], 'abcDEF123456'),
        b.requestProblem({ ...call('abcDEF123456'), jsonrpc: '1.0' }, 'abcDEF123456'),
        b.requestProblem(batch(100), 'abcDEF123456'),
        b.requestProblem(batch(101), 'abcDEF123456'),
      ],
      decoded,
      sizes: ['2e3', '150.0', ' 150 '].map((v) => b.chunkSize(v)),
      exact,
    };
  });
  assert.deepEqual(checks.markers, [1, 0, 0, 1]);
  assert.equal(checks.problems[0], 'not a JSON-RPC call');
  assert.equal(checks.problems[1], 'not a JSON-RPC call');
  assert.equal(checks.problems[2], 'jsonrpc is not "2.0"');
  assert.equal(checks.problems[3], null);
  assert.equal(checks.problems[4], 'a batch holds 1 to 100 calls');
  assert.deepEqual(checks.decoded, { threw: true });
  assert.deepEqual(checks.sizes, [1000, 1000, 150]);
  assert.deepEqual(checks.exact, [`!psi-result abcDEF123456 ${'eHh4'.repeat(25)}`]);
});

// A page of its own whose bridge does not start, for bridges built by hand with an
// in-memory storage and a fake transport: `run` is evaluated in it with `arg`.
const inIsolatedPage = async (run, arg) => {
  const isolated = await browser.newPage();
  try {
    await isolated.addInitScript(() => { window.__mindscapeBridgeTest = true; window.__mindscapeBridgeNoStart = true; });
    await isolated.goto(`http://127.0.0.1:${pagePort}/editor/`);
    await isolated.evaluate(() => {
      // Shared by every bridge made with it, as two tabs share localStorage.
      window.__memoryStorage = (values) => {
        const mem = { url: 'http://127.0.0.1:1', token: 't', sender: 'Mindscape', chunk: 1000, ...values };
        return { get: (k) => mem[k], set: (k, v) => { mem[k] = v; } };
      };
      // A transport that answers every call with `result`, noting in `calls` the ids of
      // all but the bridge's own connection check.
      window.__answering = (calls, result) => async (url, key, body) => {
        const { id } = JSON.parse(body);
        if (id !== 'bridge-check') calls.push(id);
        return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id, result }) };
      };
      window.__settle = async (bridges) => {
        await new Promise((r) => { setTimeout(r, 800); });
        for (const b of bridges) await b.idle();
      };
    });
    return await isolated.evaluate(run, arg);
  } finally {
    await isolated.close();
  }
};

test('without a userscript manager a call that hangs gives up after the timeout, as GM_xmlhttpRequest does', { skip: SKIP }, async () => {
  // A server that takes the request and never answers.
  const held = [];
  const server = createServer((req) => { held.push(req); });
  await new Promise((r) => { server.listen(0, '127.0.0.1', r); });
  try {
    const url = `http://127.0.0.1:${server.address().port}/rpc`;
    const out = await inIsolatedPage(async (target) => {
      const started = Date.now();
      try {
        await window.__mindscapeBridge.transport(target, 't', '{}', 300);
        return { ok: true };
      } catch (err) {
        return { ok: false, message: String(err.message), ms: Date.now() - started };
      }
    }, url);
    assert.equal(out.ok, false);
    assert.equal(out.message, 'timed out');
    assert.ok(out.ms >= 250 && out.ms < 5000, String(out.ms));
  } finally {
    held.forEach((req) => req.socket.destroy());
    await new Promise((r) => { server.close(r); });
  }
});

test('without a userscript manager a redirect is not followed: the request with its token goes nowhere else', { skip: SKIP }, async () => {
  // As the companion allows a page (CORS), then a redirect to a second server that
  // would take anything.
  const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Headers': 'authorization, content-type', 'Access-Control-Allow-Methods': 'POST' };
  const reached = [];
  const elsewhere = createServer((req, res) => { reached.push(`${req.method} ${req.headers.authorization || ''}`); res.writeHead(req.method === 'OPTIONS' ? 204 : 200, cors); res.end('{}'); });
  await new Promise((r) => { elsewhere.listen(0, '127.0.0.1', r); });
  const redirecting = createServer((req, res) => {
    if (req.method === 'OPTIONS') { res.writeHead(204, cors); res.end(); return; }
    res.writeHead(307, { ...cors, Location: `http://127.0.0.1:${elsewhere.address().port}/rpc` });
    res.end();
  });
  await new Promise((r) => { redirecting.listen(0, '127.0.0.1', r); });
  try {
    const out = await inIsolatedPage(async (target) => {
      try {
        return { ok: true, answer: await window.__mindscapeBridge.transport(target, 'secret-token', '{}', 3000) };
      } catch (err) {
        return { ok: false, message: String(err.message) };
      }
    }, `http://127.0.0.1:${redirecting.address().port}/rpc`);
    assert.equal(out.ok, false, JSON.stringify(out));
    assert.deepEqual(reached, []);
  } finally {
    await new Promise((r) => { redirecting.close(r); });
    await new Promise((r) => { elsewhere.close(r); });
  }
});

const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const createCall = (id) => b64({ jsonrpc: '2.0', id, method: 'encounter.create', params: { system: 'revised-2e', name: `forged ${id}` } });

test('only markers with the pasted pairing code, as the whole text of a whisper of the Mod script, are relayed', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ paired, codes }) => {
    const calls = [];
    const statuses = [];
    const transport = window.__answering(calls, { id: 'x', revision: 0 });
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({ pairing: paired }), transport });
    bridge.start();
    const add = async (kind, by, html) => {
      window.__addMessage(by, html, kind);
      await new Promise((r) => { setTimeout(r, 50); });
      statuses.push(bridge.status());
    };
    // A genuine whisper of the Mod script, then a player's emote right after it: the
    // emote has no speaker of its own and must not borrow "Mindscape".
    await add('private', '(From Mindscape):', '<div>Mindscape: attack declared</div>');
    await add('emote', '', `Alice MINDSCAPE-REQ ${paired} Forged000001 1/1 ${codes[0]}`);
    // A /desc and an emote by a "Mindscape" never count either.
    await add('desc', '', `MINDSCAPE-REQ ${paired} Forged000002 1/1 ${codes[1]}`);
    // A player named "Mindscape" whispering the GM: without the code, or with a wrong one.
    await add('private', '(From Mindscape):', `MINDSCAPE-REQ Forged000003 1/1 ${codes[2]}`);
    const noCode = statuses.at(-1);
    await add('private', '(From Mindscape):', `MINDSCAPE-REQ WrongPairingCode00000000 Forged000004 1/1 ${codes[3]}`);
    const wrongCode = statuses.at(-1);
    // A marker inside a longer text (a name echoed in a line) is no marker.
    await add('private', '(From Mindscape):', `<div>Mindscape request: Ego Whip by Evil MINDSCAPE-REQ ${paired} Forged000005 1/1 ${codes[4]} against Fenka</div>`);
    // The genuine request is relayed.
    await add('private', '(From Mindscape):', `<div style="font-size:9px">MINDSCAPE-REQ ${paired} Genuine00001 1/1 ${codes[5]}</div>`);
    await window.__settle([bridge]);
    return { calls, noCode, wrongCode, sent: window.__sent.map((c) => c.split(' ')[1]) };
  }, { paired: PAIRED, codes: ['Forged000001', 'Forged000002', 'Forged000003', 'Forged000004', 'Forged000005', 'Genuine00001'].map(createCall) });
  assert.deepEqual(out.calls, ['Genuine00001']);
  assert.deepEqual(out.sent, ['Genuine00001']);
  assert.equal(out.noCode.state, 'not paired');
  assert.match(out.noCode.detail, /without a pairing code.*type !psi pair in the chat and paste the code/);
  assert.equal(out.wrongCode.state, 'wrong pairing code');
  assert.match(out.wrongCode.detail, /type !psi pair in the chat and paste the code/);
});

test('a request whose marker comes again in another number of parts is put together from the new parts alone: parts left from the old count neither complete it nor wait in it', { skip: SKIP }, async () => {
  const call = (id, name) => b64({ jsonrpc: '2.0', id, method: 'encounter.create', params: { system: 'revised-2e', name } });
  const cut = (code, n) => {
    const size = Math.ceil(code.length / n);
    return Array.from({ length: n }, (_, i) => code.slice(i * size, (i + 1) * size));
  };
  const out = await inIsolatedPage(async ({ paired, fewer, more }) => {
    const relayed = [];
    const transport = async (url, key, body) => {
      const { id, params } = JSON.parse(body);
      if (id !== 'bridge-check') relayed.push([id, params.name]);
      return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id, result: { id: 'x', revision: 0 } }) };
    };
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({ pairing: paired }), transport });
    bridge.start();
    const add = async (id, part, count, piece) => {
      window.__addMessage('(From Mindscape):', `<div style="font-size:9px">MINDSCAPE-REQ ${paired} ${id} ${part}/${count} ${piece}</div>`, 'private');
      await new Promise((r) => { setTimeout(r, 50); });
    };
    // Three parts of which the third never came, then the request again in two.
    await add('Resent000001', 1, 3, fewer.before[0]);
    await add('Resent000001', 2, 3, fewer.before[1]);
    await add('Resent000001', 1, 2, fewer.again[0]);
    await add('Resent000001', 2, 2, fewer.again[1]);
    // Two parts of which the second never came, then the request again in three: its
    // first two parts are not a whole request.
    await add('Resent000002', 1, 2, more.before[0]);
    await add('Resent000002', 1, 3, more.again[0]);
    await add('Resent000002', 2, 3, more.again[1]);
    await window.__settle([bridge]);
    const beforeTheLast = relayed.slice();
    await add('Resent000002', 3, 3, more.again[2]);
    await window.__settle([bridge]);
    return { beforeTheLast, relayed };
  }, {
    paired: PAIRED,
    fewer: { before: cut(call('Resent000001', 'first sending'), 3), again: cut(call('Resent000001', 'sent again'), 2) },
    more: { before: cut(call('Resent000002', 'first sending'), 2), again: cut(call('Resent000002', 'sent again'), 3) },
  });
  assert.deepEqual(out.beforeTheLast, [['Resent000001', 'sent again']]);
  assert.deepEqual(out.relayed, [['Resent000001', 'sent again'], ['Resent000002', 'sent again']]);
});

test('a call that changes an encounter is never retried: after a timeout the Mod script is told it is uncertain', { skip: SKIP }, async () => {
  const code = b64({ jsonrpc: '2.0', id: 'Resolve00001', method: 'encounter.resolve', params: { id: 'E1', revision: 4 } });
  const out = await inIsolatedPage(async ({ code: c }) => {
    const received = [];
    // The companion got the call and did it, but its answer came too late.
    const transport = async (url, key, body) => { received.push(JSON.parse(body).method); throw new Error('timed out'); };
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    await bridge.relay('Resolve00001', c);
    await bridge.idle();
    return { received, sent: window.__sent.slice(), status: bridge.status() };
  }, { code });
  assert.deepEqual(out.received, ['encounter.resolve']);
  assert.equal(out.sent.length, 1);
  assert.equal(out.status.state, 'uncertain');
  // The typed answer is an error the Mod script reports as uncertain; for a create, which
  // has no encounter for status to show yet, it says to create it again.
  const ctx = campaign({ pairing: PAIRED });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = [...ctx.sb.chats.at(-1).input.matchAll(MARKER)][0][1];
  const typed = out.sent[0].split(' ').at(-1);
  assert.deepEqual(decode(typed).error.code, -32001);
  assert.match(decode(typed).error.data.detail, /timed out/);
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${create} ${Buffer.from(JSON.stringify({ ...decode(typed), id: create })).toString('base64url')}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /could not tell whether the companion carried this out: .*timed out.*No other answer will come for it: run <code>!psi encounter create<\/code> again/);
});

test('encounter.refresh is a changing call and is never retried; combatants.rest changes nothing and is retried once', { skip: SKIP }, async () => {
  const refresh = b64({ jsonrpc: '2.0', id: 'Refresh00001', method: 'encounter.refresh', params: { id: 'E1', combatant_id: 'c', combatant: {}, revision: 2 } });
  const rest = b64({ jsonrpc: '2.0', id: 'Rest00000001', method: 'combatants.rest', params: { system: 'power-pool', combatants: [] } });
  const out = await inIsolatedPage(async ({ codes }) => {
    const received = [];
    // The first call of each fails as a lost connection does; a second would succeed.
    const transport = async (url, key, body) => {
      const call = JSON.parse(body);
      received.push(call.method);
      if (received.filter((m) => m === call.method).length === 1) throw new Error('connection reset');
      return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { events: [] } }) };
    };
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    await bridge.relay('Refresh00001', codes[0]);
    await bridge.relay('Rest00000001', codes[1]);
    await bridge.idle();
    return { received, sent: window.__sent.slice() };
  }, { codes: [refresh, rest] });
  assert.deepEqual(out.received, ['encounter.refresh', 'combatants.rest', 'combatants.rest']);
  const typed = out.sent.map((c) => decode(c.split(' ').at(-1)));
  assert.deepEqual(typed.map((a) => [a.id, a.error ? a.error.code : 'result']), [['Refresh00001', -32001], ['Rest00000001', 'result']]);
});

test('a batch add that fails uncertainly answers every call of the batch', { skip: SKIP }, async () => {
  const body = [0, 1].map((i) => ({ jsonrpc: '2.0', id: `AddBatch0001-${i}`, method: 'encounter.add', params: { id: 'E1', combatant: {} } }));
  const out = await inIsolatedPage(async ({ code }) => {
    let calls = 0;
    const transport = async () => { calls += 1; return { status: 502, text: '' }; };
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    await bridge.relay('AddBatch0001', code);
    await bridge.idle();
    return { calls, sent: window.__sent.slice() };
  }, { code: b64(body) });
  assert.equal(out.calls, 1);
  const answer = decode(out.sent[0].split(' ').at(-1));
  assert.deepEqual(answer.map((r) => [r.id, r.error.code]), [['AddBatch0001-0', -32001], ['AddBatch0001-1', -32001]]);
});

test('a call the companion refuses before running it (HTTP 400, 404, 413, 415) is answered at once with the bridge\'s -32002 and the companion\'s words, which the Mod script reports as refused, for each call of a batch', { skip: SKIP }, async () => {
  const resolve = b64({ jsonrpc: '2.0', id: 'Refused00001', method: 'encounter.resolve', params: { id: 'E1', revision: 4 } });
  const odds = b64({ jsonrpc: '2.0', id: 'Refused00002', method: 'exchange.odds', params: {} });
  const add = b64([0, 1].map((i) => ({ jsonrpc: '2.0', id: `Refused00003-${i}`, method: 'encounter.add', params: { id: 'E1', combatant: {} } })));
  const out = await inIsolatedPage(async ({ codes }) => {
    const refusals = [[413, '{"error": "the request body exceeds 1048576 bytes"}'], [400, ''], [415, '{"error": "compressed request bodies are not accepted"}']];
    let calls = 0;
    const transport = async () => { const [status, text] = refusals[calls]; calls += 1; return { status, text }; };
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    const statuses = [];
    for (const [id, code] of codes) {
      await bridge.relay(id, code);
      await bridge.idle();
      statuses.push(bridge.status());
    }
    return { calls, statuses, sent: window.__sent.slice() };
  }, { codes: [['Refused00001', resolve], ['Refused00002', odds], ['Refused00003', add]] });
  // Sent once each: a refusal is not retried.
  assert.equal(out.calls, 3);
  const typed = out.sent.map((c) => decode(c.split(' ').at(-1)));
  assert.deepEqual(typed[0].error, { code: -32002, message: 'the bridge could not carry this out',
    data: { detail: 'the companion refused the request before running it (HTTP 413: the request body exceeds 1048576 bytes)' } });
  assert.equal(typed[1].error.data.detail, 'the companion refused the request before running it (HTTP 400)');
  assert.deepEqual(typed[2].map((r) => [r.id, r.error.code]), [['Refused00003-0', -32002], ['Refused00003-1', -32002]]);
  assert.deepEqual(out.statuses.map((st) => st.state), ['refused', 'refused', 'refused']);
  assert.match(out.statuses[0].detail, /request Refused00001: the companion refused the request before running it \(HTTP 413/);
  // The Mod script reads it as the refusal it is: nothing happened, nothing to resync.
  const ctx = campaign({ pairing: PAIRED });
  ctx.sb.chat({ playerid: GM, content: '!psi encounter create' });
  const create = [...ctx.sb.chats.at(-1).input.matchAll(MARKER)][0][1];
  ctx.sb.chat({ playerid: GM, content: `!psi-result ${create} ${Buffer.from(JSON.stringify({ ...typed[0], id: create })).toString('base64url')}` });
  assert.match(whispersTo(ctx.sb, 'gm').at(-1), /Refused: new encounter<\/b><br>The companion refused the request before running it \(HTTP 413: the request body exceeds 1048576 bytes\)\./);
});

test('when the answer cannot be typed (no chat box, the send button failing) the badge keeps saying so, and a multi-part answer stops there', { skip: SKIP }, async () => {
  const codes = ['NoChatBox001', 'SendFails001'].map((id) => b64({ jsonrpc: '2.0', id, method: 'exchange.odds', params: {} }));
  const out = await inIsolatedPage(async ([noBox, failing]) => {
    const transport = async (url, key, body) => ({ status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { outcomes: {}, pad: 'p'.repeat(3000) } }) });
    const input = document.querySelector('#textchat-input');
    const holder = input.parentNode;
    input.remove();
    const first = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    await first.relay('NoChatBox001', noBox);
    await first.idle();
    holder.appendChild(input);
    let clicks = 0;
    document.querySelector('#chatSendBtn').click = () => { clicks += 1; throw new Error('Roll20 is reconnecting'); };
    const second = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    await second.relay('SendFails001', failing);
    await second.idle();
    return { statuses: [first.status(), second.status()], histories: [first.history(), second.history()], clicks };
  }, codes);
  for (const [i, status] of out.statuses.entries()) {
    assert.equal(status.state, 'error', JSON.stringify(out.histories[i]));
    assert.ok(!out.histories[i].includes('connected'), `the badge said connected after the error: ${JSON.stringify(out.histories[i])}`);
  }
  assert.match(out.statuses[0].detail, /could not type into the Roll20 chat: Roll20 chat input not found/);
  assert.match(out.statuses[1].detail, /Roll20 is reconnecting/);
  // The answer needs 4 parts of 1000 characters: the first failed, the others were not tried.
  assert.equal(out.clicks, 1);
});

test('"Save and test" against a server whose companion.info answer has no result, a null one or an error of another shape says so on the badge, never throws', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async () => {
    const results = [];
    for (const text of ['{"jsonrpc":"2.0","id":"bridge-check"}', 'null', '[]', '{"jsonrpc":"2.0","id":"bridge-check","result":null}',
      '{"jsonrpc":"2.0","id":"bridge-check","error":"no"}', '{"jsonrpc":"2.0","id":"bridge-check","result":{"name":"mindscape","version":"0.1.0"}}']) {
      const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({ pairing: 'P'.repeat(24) }), transport: async () => ({ status: 200, text }) });
      try {
        results.push({ ok: await bridge.check(), status: bridge.status() });
      } catch (err) {
        results.push({ threw: String(err.message), status: bridge.status() });
      }
    }
    return results;
  });
  out.slice(0, 4).forEach((r) => {
    assert.deepEqual([r.threw, r.ok, r.status.state], [undefined, false, 'refused'], JSON.stringify(r));
    assert.match(r.status.detail, /answered companion\.info without its name and version: is it the Mindscape companion \(mindscape serve\)\?/);
  });
  assert.deepEqual([out[4].ok, out[4].status.state, out[4].status.detail], [false, 'refused', 'the companion refused companion.info: an error']);
  assert.deepEqual([out[5].ok, out[5].status], [true, { state: 'connected', detail: 'mindscape 0.1.0' }]);
});

test('the answer piece size is a whole number from 100 to 10000 characters (the Mod script\'s --chunk), else 1000; an answer of more than 500 parts is not typed, the Mod script is told instead', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ first, odds, resolve }) => {
    const b = window.__mindscapeBridge;
    const sizes = [-1, 0.5, '0x10', 'abc', 99, 20000, 100, '250', 10000].map((v) => b.chunkSize(v));
    const pieces = b.answerCommands('Chunk0000001', 'x'.repeat(2500), 0.5).map((c) => c.split(' ').at(-1).length);
    // A stored 20000, beyond what the Mod script's --chunk takes, answers in pieces of 1000.
    const transport = async (url, key, body) => ({ status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { outcomes: {}, pad: 'p'.repeat(2500) } }) });
    const bridge = b.createBridge({ storage: window.__memoryStorage({ chunk: 20000 }), transport });
    await bridge.relay('Chunk0000001', first);
    await bridge.idle();
    const typed = window.__sent.length;
    // At 100 characters a piece, an answer of 60 000 would take 800 parts.
    const huge = async (url, key, body) => ({ status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { pad: 'q'.repeat(60000) } }) });
    window.__sent.length = 0;
    const small = b.createBridge({ storage: window.__memoryStorage({ chunk: 100 }), transport: huge });
    await small.relay('Chunk0000002', odds);
    await small.idle();
    const refused = window.__sent.slice();
    window.__sent.length = 0;
    await small.relay('Chunk0000003', resolve);
    await small.idle();
    return { sizes, pieces, typed, refused, uncertain: window.__sent.slice(), status: small.status() };
  }, {
    first: b64({ jsonrpc: '2.0', id: 'Chunk0000001', method: 'exchange.odds', params: {} }),
    odds: b64({ jsonrpc: '2.0', id: 'Chunk0000002', method: 'exchange.odds', params: {} }),
    resolve: b64({ jsonrpc: '2.0', id: 'Chunk0000003', method: 'encounter.resolve', params: { id: 'E1' } }),
  });
  assert.deepEqual(out.sizes, [1000, 1000, 1000, 1000, 1000, 1000, 100, 250, 10000]);
  assert.ok(out.pieces.every((n) => n > 0 && n <= 1000), JSON.stringify(out.pieces));
  assert.equal(out.typed, 4);
  // Odds: a refusal of the bridge's own; a changing call: uncertain (the companion did it).
  // (Itself in a few parts of 100 characters.)
  const joined = (commands) => decode(commands.map((c) => c.split(' ').at(-1)).join(''));
  assert.ok(out.refused.length < 10);
  assert.equal(joined(out.refused).error.code, -32002);
  assert.match(joined(out.refused).error.data.detail, /the companion's answer would take \d{3} chat parts of 100 characters, more than the 500 the Mod script takes/);
  assert.equal(joined(out.uncertain).error.code, -32001);
  assert.equal(out.status.state, 'uncertain');
});

test('of two tabs of one browser only the one holding the lease relays a request', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ paired, codes }) => {
    const calls = [];
    const transport = window.__answering(calls, { outcomes: {} });
    const storage = window.__memoryStorage({ pairing: paired });
    const tabA = window.__mindscapeBridge.createBridge({ storage, transport, tab: 'A' });
    const tabB = window.__mindscapeBridge.createBridge({ storage, transport, tab: 'B' });
    tabA.start();
    tabB.start();
    // Both tabs see the same whisper at the same moment.
    window.__addMessage('(From Mindscape):', `<div>MINDSCAPE-REQ ${paired} TwoTabs00001 1/1 ${codes[0]}</div>`);
    await window.__settle([tabA, tabB]);
    const first = calls.slice();
    const holder = storage.get('lease').tab;
    // The holder's tab closes: the other takes over for the next request.
    (holder === 'A' ? tabA : tabB).stop();
    window.__addMessage('', `<div>MINDSCAPE-REQ ${paired} TwoTabs00002 1/1 ${codes[1]}</div>`);
    await window.__settle([tabA, tabB]);
    return { first, calls, holder, after: storage.get('lease').tab, standby: [tabA.status(), tabB.status()].map((s) => s.state) };
  }, { paired: PAIRED, codes: ['TwoTabs00001', 'TwoTabs00002'].map((id) => b64({ jsonrpc: '2.0', id, method: 'exchange.odds', params: {} })) });
  assert.deepEqual(out.first, ['TwoTabs00001']);
  assert.deepEqual(out.calls, ['TwoTabs00001', 'TwoTabs00002']);
  assert.notEqual(out.after, out.holder);
});

test('the userscript presses Roll20\'s send button, #chatSendBtn, also when another button comes first in the chat input; without that id the input\'s button of class btn, else its first button', { skip: SKIP }, async () => {
  const codes = ['SendButton01', 'SendButton02', 'SendButton03'].map((id) => b64({ jsonrpc: '2.0', id, method: 'exchange.odds', params: {} }));
  const out = await inIsolatedPage(async ([withId, withoutId, withClass]) => {
    const clicks = [];
    const input = document.querySelector('#textchat-input');
    // Records which button was pressed, and with what in the chat box; only a send empties it.
    const layout = (html) => {
      input.innerHTML = html;
      input.querySelectorAll('button').forEach((button) => button.addEventListener('click', () => {
        const box = input.querySelector('textarea');
        clicks.push([button.dataset.role, box.value.split(' ').slice(0, 2).join(' ')]);
        if (button.dataset.role === 'send') box.value = '';
      }));
    };
    const transport = async (url, key, body) => ({ status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { outcomes: {} } }) });
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    layout('<textarea></textarea><button class="btn" data-role="other">Roll as</button><button id="chatSendBtn" class="btn" data-role="send">Send</button>');
    await bridge.relay('SendButton01', withId);
    await bridge.idle();
    layout('<textarea></textarea><button class="btn" data-role="send">Send</button>');
    await bridge.relay('SendButton02', withoutId);
    await bridge.idle();
    // Without the id, the button of class btn, as public Roll20 userscripts press it.
    layout('<textarea></textarea><button data-role="other">Emoji</button><button class="btn" data-role="send">Send</button>');
    await bridge.relay('SendButton03', withClass);
    await bridge.idle();
    return { clicks, status: bridge.status().state };
  }, codes);
  assert.deepEqual(out.clicks, [['send', '!psi-result SendButton01'], ['send', '!psi-result SendButton02'], ['send', '!psi-result SendButton03']]);
  assert.equal(out.status, 'connected');
});

test('with a userscript manager a call gives GM_xmlhttpRequest its timeout and the token, and a timeout or a network failure rejects it', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async () => {
    const seen = [];
    // What Tampermonkey does when the call times out, then when the network fails.
    window.GM_xmlhttpRequest = (details) => {
      seen.push({ timeout: details.timeout, authorization: details.headers.Authorization });
      if (seen.length === 1) details.ontimeout();
      else details.onerror();
    };
    const failures = [];
    for (let i = 0; i < 2; i += 1) {
      try {
        await window.__mindscapeBridge.transport('http://127.0.0.1:1/rpc', 'secret-token', '{}', 300);
        failures.push('resolved');
      } catch (err) {
        failures.push(String(err.message));
      }
    }
    return { seen, failures };
  });
  assert.deepEqual(out.seen, [{ timeout: 300, authorization: 'Bearer secret-token' }, { timeout: 300, authorization: 'Bearer secret-token' }]);
  assert.deepEqual(out.failures, ['timed out', 'network error']);
});

test('a marker whispered by anyone but the Mod script is not relayed, even with the pairing code; nor a /desc right after a whisper of the Mod script, nor a message without a speaker that follows it: the /desc ends the Mod script\'s run', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ paired, codes }) => {
    const calls = [];
    const transport = window.__answering(calls, { id: 'x', revision: 0 });
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({ pairing: paired }), transport });
    bridge.start();
    window.__addMessage('(From Alice):', `<div>MINDSCAPE-REQ ${paired} Forged000010 1/1 ${codes[2]}</div>`);
    window.__addMessage('(From Mindscape):', '<div>Mindscape: attack declared</div>');
    window.__addMessage('', `MINDSCAPE-REQ ${paired} Forged000011 1/1 ${codes[0]}`, 'desc');
    window.__addMessage('', `<div>MINDSCAPE-REQ ${paired} Forged000012 1/1 ${codes[1]}</div>`);
    await window.__settle([bridge]);
    return { calls, sent: window.__sent.slice() };
  }, { paired: PAIRED, codes: ['Forged000011', 'Forged000012', 'Forged000010'].map(createCall) });
  assert.deepEqual(out.calls, []);
  assert.deepEqual(out.sent, []);
});

test('a whisper of the Mod script that Roll20 shows with its time stamp and avatar is relayed: those are no part of its text', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ paired, code }) => {
    const calls = [];
    const transport = window.__answering(calls, { outcomes: {} });
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({ pairing: paired }), transport });
    bridge.start();
    window.__addMessage('(From Mindscape):', `<div class="avatar"><img src=""></div><span class="tstamp">9:41PM</span><div>MINDSCAPE-REQ ${paired} Stamped00001 1/1 ${code}</div>`);
    await window.__settle([bridge]);
    return { calls };
  }, { paired: PAIRED, code: b64({ jsonrpc: '2.0', id: 'Stamped00001', method: 'exchange.odds', params: {} }) });
  assert.deepEqual(out.calls, ['Stamped00001']);
});

test('a whisper of the Mod script that Roll20 puts into the chat before its text is relayed once the text comes, whether added or changed in place', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ paired, codes }) => {
    const calls = [];
    const transport = window.__answering(calls, { outcomes: {} });
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({ pairing: paired }), transport });
    bridge.start();
    const pause = () => new Promise((r) => { setTimeout(r, 50); });
    window.__addMessage('(From Mindscape):', '<div></div>');
    const added = document.querySelector('#textchat .content').lastElementChild;
    await pause();
    added.lastElementChild.appendChild(document.createTextNode(`MINDSCAPE-REQ ${paired} LateText0001 1/1 ${codes[0]}`));
    window.__addMessage('(From Mindscape):', '<div>Mindscape: one moment</div>');
    const changed = document.querySelector('#textchat .content').lastElementChild;
    await pause();
    changed.lastElementChild.firstChild.data = `MINDSCAPE-REQ ${paired} LateText0002 1/1 ${codes[1]}`;
    await pause();
    // Once relayed, a change to its text does not relay it again.
    changed.lastElementChild.firstChild.data += ' ';
    await window.__settle([bridge]);
    return { calls };
  }, { paired: PAIRED, codes: ['LateText0001', 'LateText0002'].map((id) => b64({ jsonrpc: '2.0', id, method: 'exchange.odds', params: {} })) });
  assert.deepEqual(out.calls.sort(), ['LateText0001', 'LateText0002']);
});

test('a request one tab of a browser relayed is not relayed again by another, and the 500 handled ids kept are the newest', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ codes }) => {
    const calls = [];
    const transport = async (url, key, body) => {
      calls.push(JSON.parse(body).id);
      return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { outcomes: {} } }) };
    };
    const old = Array.from({ length: 500 }, (_, i) => `Old${String(i).padStart(9, '0')}`);
    const storage = window.__memoryStorage({ handled: old });
    const tabA = window.__mindscapeBridge.createBridge({ storage, transport, tab: 'A' });
    const tabB = window.__mindscapeBridge.createBridge({ storage, transport, tab: 'B' });
    await tabA.relay('Handled00001', codes[0]);
    await tabA.idle();
    tabA.stop();
    // Roll20 draws the same whisper again in the other tab, once the first has closed.
    await tabB.relay('Handled00001', codes[0]);
    await tabB.idle();
    const kept = storage.get('handled');
    return { calls, count: kept.length, newest: kept.includes('Handled00001'), oldest: kept.includes(old[0]) };
  }, { codes: [b64({ jsonrpc: '2.0', id: 'Handled00001', method: 'exchange.odds', params: {} })] });
  assert.deepEqual(out.calls, ['Handled00001']);
  assert.deepEqual([out.count, out.newest, out.oldest], [500, true, false]);
});

test('what the companion answers over HTTP: a server fault is retried for a call that changes nothing, 404 is a refusal before running, 403 and other statuses go to the badge only, a changing call answered with no JSON is uncertain, a long refusal is cut to 200 characters, an answer is typed without its surrounding blanks', { skip: SKIP }, async () => {
  const calls = {
    Fault0000001: { method: 'exchange.odds', replies: [[500, ''], [200, '{"jsonrpc":"2.0","id":"Fault0000001","result":{"outcomes":{}}}']] },
    NotFound0001: { method: 'exchange.odds', replies: [[404, '']] },
    Forbidden001: { method: 'exchange.odds', replies: [[403, '']] },
    NoContent001: { method: 'exchange.odds', replies: [[204, '']] },
    NotJson00001: { method: 'encounter.resolve', replies: [[200, '<html>proxy</html>']] },
    LongWords001: { method: 'exchange.odds', replies: [[413, JSON.stringify({ error: 'w'.repeat(300) })]] },
    Blanks000001: { method: 'exchange.odds', replies: [[200, '\n {"jsonrpc":"2.0","id":"Blanks000001","result":{"outcomes":{}}} \n']] },
  };
  const codes = Object.entries(calls).map(([id, { method }]) => [id, b64({ jsonrpc: '2.0', id, method, params: {} })]);
  const out = await inIsolatedPage(async ({ replies, codes: list }) => {
    const received = [];
    const transport = async (url, key, body) => {
      const { id } = JSON.parse(body);
      received.push(id);
      const [status, text] = replies[id].shift();
      return { status, text };
    };
    const bridge = window.__mindscapeBridge.createBridge({ storage: window.__memoryStorage({}), transport });
    const results = {};
    for (const [id, code] of list) {
      window.__sent.length = 0;
      await bridge.relay(id, code);
      await bridge.idle();
      results[id] = { status: bridge.status(), sent: window.__sent.slice() };
    }
    return { received, results };
  }, { replies: Object.fromEntries(Object.entries(calls).map(([id, c]) => [id, c.replies])), codes });
  const typed = (id) => out.results[id].sent.map((c) => decode(c.split(' ').at(-1)));
  assert.deepEqual(out.received, ['Fault0000001', 'Fault0000001', 'NotFound0001', 'Forbidden001', 'NoContent001', 'NotJson00001', 'LongWords001', 'Blanks000001']);
  assert.deepEqual(typed('Fault0000001'), [{ jsonrpc: '2.0', id: 'Fault0000001', result: { outcomes: {} } }]);
  assert.deepEqual(typed('NotFound0001').map((a) => a.error.code), [-32002]);
  assert.match(typed('NotFound0001')[0].error.data.detail, /refused the request before running it \(HTTP 404\)/);
  assert.deepEqual(out.results.Forbidden001, { sent: [], status: { state: 'refused', detail: 'the companion refused this page; start it with --allow-origin https://app.roll20.net' } });
  assert.deepEqual(out.results.NoContent001, { sent: [], status: { state: 'refused', detail: 'the companion answered HTTP 204' } });
  assert.deepEqual(typed('NotJson00001').map((a) => [a.error.code, a.error.data.detail]), [[-32001, 'the companion answered something that is not JSON']]);
  assert.equal(out.results.NotJson00001.status.state, 'uncertain');
  assert.equal(typed('LongWords001')[0].error.data.detail, `the companion refused the request before running it (HTTP 413: ${'w'.repeat(200)})`);
  assert.equal(Buffer.from(out.results.Blanks000001.sent[0].split(' ').at(-1), 'base64url').toString('utf8'), '{"jsonrpc":"2.0","id":"Blanks000001","result":{"outcomes":{}}}');
});

test('what the GM was writing in the chat box is put back once the answer is sent, and a request another tab handled while this one took the lease is not relayed', { skip: SKIP }, async () => {
  const out = await inIsolatedPage(async ({ codes }) => {
    const calls = [];
    const transport = async (url, key, body) => {
      calls.push(JSON.parse(body).id);
      return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { outcomes: {} } }) };
    };
    const storage = window.__memoryStorage({});
    const bridge = window.__mindscapeBridge.createBridge({ storage, transport, tab: 'A' });
    const box = document.querySelector('#textchat-input textarea');
    box.value = 'Ulcen sneers at the';
    await bridge.relay('Draft0000001', codes[0]);
    await bridge.idle();
    const draft = box.value;
    // Another tab takes the lease back and relays the next request while this one waits to hold it.
    storage.set('lease', { tab: 'B', at: 0 });
    const relayed = bridge.relay('Raced0000001', codes[1]);
    storage.set('handled', [...storage.get('handled'), 'Raced0000001']);
    await relayed;
    await bridge.idle();
    return { calls, draft, sent: window.__sent.map((c) => c.split(' ')[1]) };
  }, { codes: ['Draft0000001', 'Raced0000001'].map((id) => b64({ jsonrpc: '2.0', id, method: 'exchange.odds', params: {} })) });
  assert.equal(out.draft, 'Ulcen sneers at the');
  assert.deepEqual(out.calls, ['Draft0000001']);
  assert.deepEqual(out.sent, ['Draft0000001']);
});

// A combat-strength campaign (RULES.md §2): Ulcen (Alice's) and Fenka (Bob's) are psionic
// minds with attack and defense strength on their sheets (psi_attack_strength,
// psi_defense_strength: current and maximum). Returns `ctx`.
const strengthCampaign = (ctx, { ulcen = [60, 60, 50, 50], fenka = [40, 40, 30, 30] } = {}) => {
  const { sb } = ctx;
  sb.chat({ playerid: GM, content: '!psi config --system combat-strength' });
  for (const [who, [as, asMax, ds, dsMax]] of [[ctx.ulcen, ulcen], [ctx.fenka, fenka]]) {
    sb.add('attribute', { _characterid: who.id, name: 'psi_attack_strength', current: String(as), max: String(asMax) });
    sb.add('attribute', { _characterid: who.id, name: 'psi_defense_strength', current: String(ds), max: String(dsMax) });
    sb.add('attribute', { _characterid: who.id, name: 'psi_psionic', current: '1', max: '' });
  }
  return ctx;
};

const strengthOf = (ctx, charId) => ['psi_attack_strength', 'psi_defense_strength'].map((name) => {
  const attr = ctx.sb.attribute(charId, name);
  return [attr.get('current'), attr.get('max')].map(String);
});

// The whispers and cards since chat `from`, without the request markers.
const chatsSince = (ctx, from) => ctx.sb.chats.slice(from).map((c) => c.input).filter((t) => !/MINDSCAPE-REQ/.test(t));

test('combat-strength through the relay: a single Mind Thrust, the defense chosen secretly by Bob, resolved by the real companion and written to both sheets (RULES.md 2.3, 2.4)', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = strengthCampaign(campaign({ pairing: PAIRED }));
  await checkedAttack(ctx, { playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi attack --target ${ctx.tokens.fenka.id} --mode mind-thrust --range short` });
  const bob = whispersTo(ctx.sb, 'Bob').at(-1);
  // A psionic combat-strength mind with no list of modes knows all five (RULES.md 2.2).
  assert.deepEqual([...bob.matchAll(/--mode ([a-z-]+)\)/g)].map((m) => m[1]),
    ['mind-blank', 'shield-thoughts', 'mental-barrier', 'intellect-fortress', 'tower-of-iron-will', 'none']);
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /Waiting for Fenka to choose a defense\./);
  const xid = /--req ([A-Za-z0-9]+)/.exec(bob)[1];
  const from = ctx.sb.chats.length;
  const [resolved] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: BOB, content: `!psi defend --req ${xid} --mode mental-barrier` }));
  assert.ok(resolved.result, `the daemon answered an error: ${JSON.stringify(resolved.error)}\n${daemonLog}`);
  const result = resolved.result;
  assert.equal(result.system, 'combat-strength');
  // Combat Strength 60 + 50 = 110: four full 25s, +4d6 (RULES.md 2.4); Mind Thrust
  // against Mental Barrier is 0 on table A (2.5), and costs 4 attack strength (2.2).
  assert.deepEqual([result.table, result.table_value, result.bonus_dice, result.attack_cost, result.defense_mode], ['combat', 0, 4, 4, 'mental-barrier']);
  assert.equal(result.damage, result.bonus_rolls.reduce((a, b) => a + b, 0));
  // Nobody but Bob (and the GM) learnt the defense before the card.
  const before = chatsSince(ctx, from).slice(0, -1);
  assert.ok(before.every((t) => t.startsWith('/w "Bob" ') || t.startsWith('/w gm ')), before.join('\n'));
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/Mental Barrier/.test(w)));
  const card = ctx.sb.chats.at(-1).input;
  assert.match(card, /^&\{template:default\} \{\{name=Mind Thrust: Ulcen of Tyr vs\. Fenka\}\} \{\{Outcome=Damage\}\} \{\{Damage=(\d+)\}\} \{\{Summary=Ulcen of Tyr attacks Fenka with Mind Thrust against Mental Barrier/);
  assert.equal(Number(/\{\{Damage=(\d+)\}\}/.exec(card)[1]), result.damage);
  const left = Math.max(0, 30 - result.damage);
  assert.deepEqual(result.updates, [
    { character_id: ctx.ulcen.id, attributes: { psi_attack_strength: { current: 56 } } },
    { character_id: ctx.fenka.id, attributes: { psi_defense_strength: { current: left } } },
  ]);
  assert.deepEqual([strengthOf(ctx, ctx.ulcen.id), strengthOf(ctx, ctx.fenka.id)], [[['56', '60'], ['50', '50']], [['40', '40'], [String(left), '30']]]);
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)));
});

test('combat-strength odds through the relay come in a few lines, for the GM and for a player who asks', { skip: SKIP }, async () => {
  await pairedBridge();
  // Combat Strength 30 + 10 = 40: one bonus die (RULES.md 2.4), a short answer.
  const ctx = strengthCampaign(campaign({ pairing: PAIRED }), { ulcen: [30, 30, 10, 10] });
  const [odds] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: ALICE, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode mind-thrust --defense mind-blank` }));
  assert.ok(odds.result, `the daemon answered an error: ${JSON.stringify(odds.error)}\n${daemonLog}`);
  assert.deepEqual([odds.result.table, odds.result.bonus_dice, odds.result.outcome], ['combat', 1, { damage: 1 }]);
  const told = whispersTo(ctx.sb, 'Alice').at(-1);
  // Mind Thrust against Mind Blank is 12 (2.5), plus one penetrating d6: 13 to 17, or 17
  // and more after a 6 (6, 6, 6, ... reaches Fenka's 30 now and then).
  assert.match(told, /<br>Damage 100\.0%<br>Defense strength falls to 0: \d\.\d%<br>Damage when dealt: \d+\.\d on average, median 1[3-7], 8 times in 10 from 1[3-7] to (1[3-9]|2\d)\.<br>/);
  assert.ok(odds.result.defense_zero > 0 && odds.result.defense_zero < 0.01, JSON.stringify(odds.result.defense_zero));
  // Alice does not control Fenka: the odds assume the defense, and say so; in
  // combat-strength a defense costs nothing (RULES.md 2.2), so there is nothing to pay.
  assert.match(told, /<i>As if Fenka knew Mind Blank: which defenses a mind knows only its controllers and the GM see\.<\/i><\/div>$/);
  const [defenseless] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id], content: `!psi odds --target ${ctx.tokens.fenka.id} --mode psionic-wave` }));
  assert.ok(defenseless.result, JSON.stringify(defenseless.error));
  assert.equal(defenseless.result.table, 'defenseless');
  const gm = whispersTo(ctx.sb, 'gm').at(-1);
  const conditions = Object.keys(defenseless.result.conditions);
  assert.ok(conditions.length > 0, JSON.stringify(defenseless.result));
  assert.match(gm, /A condition 100\.0%<br>Conditions: /);
});

test('a combat-strength encounter through the relay: stances at the intent, a segment of secret attacks and defenses, resolved by the real companion, attack and defense strength written back', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = strengthCampaign(campaign({ pairing: PAIRED }));
  const [created] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter create --name Mind duel' }));
  assert.equal(created.result?.system, 'combat-strength', JSON.stringify(created));
  const [added] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi encounter add' }));
  assert.ok(added.every((r) => r.result), JSON.stringify(added));
  // The intent (RULES.md 2.3.1): both enter a trance.
  const declare = async (who, token, rest) => {
    const [answer] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: who, selected: [token.id], content: `!psi encounter declare ${rest}` }));
    assert.ok(answer.result, JSON.stringify(answer.error));
  };
  await declare(ALICE, ctx.tokens.ulcen, '--stance trance');
  await declare(BOB, ctx.tokens.fenka, '--stance trance');
  const intent = (await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' }))).at(-1);
  assert.ok(intent.result, JSON.stringify(intent.error));
  assert.deepEqual([intent.result.phase, intent.result.combat_strength], ['intent', { [ctx.ulcen.id]: 110, [ctx.fenka.id]: 70 }]);
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=Mind duel: round 1\}\} \{\{Summary=Round 1, intent: Ulcen of Tyr enters a psychic trance \(Combat Strength 110\); Fenka enters a psychic trance \(Combat Strength 70\)\.\}\}/);

  // Segment 1: each attacks and defends, in secret.
  const from = ctx.sb.chats.length;
  await declare(ALICE, ctx.tokens.ulcen, `--attack ego-whip --target ${ctx.tokens.fenka.id} --range short --defense mind-blank`);
  await declare(BOB, ctx.tokens.fenka, `--attack mind-thrust --target ${ctx.tokens.ulcen.id} --range medium --defense intellect-fortress`);
  const secret = chatsSince(ctx, from);
  assert.ok(secret.every((t) => t.startsWith('/w ')), secret.join('\n'));
  assert.match(whispersTo(ctx.sb, 'Alice').at(-1), /recorded in secret: Ego Whip at Fenka, short range; defense Mind Blank\./);
  assert.match(whispersTo(ctx.sb, 'Bob').at(-1), /recorded in secret: Mind Thrust at Ulcen of Tyr, medium range; defense Intellect Fortress\./);
  assert.ok(whispersTo(ctx.sb, 'Bob').every((w) => !/Ego Whip|Mind Blank/.test(w)), 'Bob reads nothing of Alice\'s choice');
  assert.ok(whispersTo(ctx.sb, 'Alice').every((w) => !/Mind Thrust|Intellect Fortress/.test(w)), 'Alice reads nothing of Bob\'s choice');
  assert.ok(whispersTo(ctx.sb, 'gm').slice(-4).every((w) => !/Ego Whip|Mind Thrust|Mind Blank|Intellect Fortress/.test(w.replace(/MINDSCAPE-REQ.*/, ''))));

  const step = (await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, content: '!psi encounter resolve' }))).at(-1);
  assert.ok(step.result, JSON.stringify(step.error));
  assert.deepEqual([step.result.round, step.result.segment], [1, 1]);
  const [whip, thrust] = step.result.results;
  // Ego Whip against Intellect Fortress is 0, with +4d6 (Combat Strength 110); Mind
  // Thrust against Mind Blank is 12, with +2d6 −1d6 at medium range (RULES.md 2.4, 2.5).
  assert.deepEqual([whip.mode, whip.defense_mode, whip.table_value, whip.bonus_dice], ['ego-whip', 'intellect-fortress', 0, 4]);
  assert.deepEqual([thrust.mode, thrust.defense_mode, thrust.table_value, thrust.bonus_dice], ['mind-thrust', 'mind-blank', 12, 1]);
  const ulcenDs = Math.max(0, 50 - thrust.damage);
  const fenkaDs = Math.max(0, 30 - whip.damage);
  assert.deepEqual([strengthOf(ctx, ctx.ulcen.id), strengthOf(ctx, ctx.fenka.id)],
    [[['53', '60'], [String(ulcenDs), '50']], [['36', '40'], [String(fenkaDs), '30']]]);
  const cards = ctx.sb.chats.slice(-3).map((c) => c.input);
  assert.match(cards[0], /\{\{name=Mind duel: round 1, segment 1\}\} \{\{Summary=Round 1, segment 1: Ulcen of Tyr attacks Fenka with Ego Whip against Intellect Fortress/);
  assert.match(cards[0], new RegExp(`Now: Ulcen of Tyr attack 53, defense ${ulcenDs}; Fenka attack 36, defense ${fenkaDs}\\.\\}\\}`));
  assert.match(cards[1], new RegExp(`\\{\\{Outcome=Damage\\}\\} \\{\\{Damage=${whip.damage}\\}\\}`));
  assert.match(cards[2], new RegExp(`\\{\\{Outcome=Damage\\}\\} \\{\\{Damage=${thrust.damage}\\}\\}`));
  assert.ok(whispersTo(ctx.sb, 'gm').every((w) => !/answer refused|sheets not updated/.test(w)), whispersTo(ctx.sb, 'gm').join('\n'));
});

test('!psi round in combat-strength through the relay: a timed condition counts down on the sheet and ends (RULES.md 2.6, engine/combat_strength/README.md)', { skip: SKIP }, async () => {
  await pairedBridge();
  const ctx = strengthCampaign(campaign({ pairing: PAIRED }));
  // Fenka is dazed for 2 more rounds, Ulcen stunned with none left after this one.
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_conditions', current: 'dazed', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.fenka.id, name: 'psi_condition_rounds', current: '{"dazed":2}', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_conditions', current: 'stunned', max: '' });
  ctx.sb.add('attribute', { _characterid: ctx.ulcen.id, name: 'psi_condition_rounds', current: '{"stunned":0}', max: '' });
  const [ended] = await roundTrip(ctx, () => ctx.sb.chat({ playerid: GM, selected: [ctx.tokens.ulcen.id, ctx.tokens.fenka.id], content: '!psi round' }));
  assert.ok(ended.result, `the daemon answered an error: ${JSON.stringify(ended.error)}\n${daemonLog}`);
  assert.deepEqual(ended.result.events.filter((e) => e.type === 'condition-ended'), [{ type: 'condition-ended', combatant: ctx.ulcen.id, condition: 'stunned' }]);
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'psi_conditions').get('current'), '');
  assert.equal(ctx.sb.attribute(ctx.ulcen.id, 'psi_condition_rounds').get('current'), '{}');
  assert.equal(ctx.sb.attribute(ctx.fenka.id, 'psi_conditions').get('current'), 'dazed');
  assert.deepEqual(JSON.parse(ctx.sb.attribute(ctx.fenka.id, 'psi_condition_rounds').get('current')), { dazed: 1 });
  assert.match(ctx.sb.chats.at(-1).input, /\{\{name=End of the round\}\} \{\{Summary=End of the round: .*Ulcen of Tyr is no longer stunned\./);
  // The attack and defense strength are not touched by a round's end.
  assert.deepEqual([strengthOf(ctx, ctx.ulcen.id), strengthOf(ctx, ctx.fenka.id)], [[['60', '60'], ['50', '50']], [['40', '40'], ['30', '30']]]);
});
