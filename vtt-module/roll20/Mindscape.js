// Mindscape: psionic combat for Roll20, resolved by the Mindscape companion.
//
// The Mod sandbox has no network access, so this script never talks to the companion
// itself. It whispers each request to the GM as machine-readable lines, one a part,
//     MINDSCAPE-REQ <pairing code> <id> <part>/<parts> <base64url chunk of the JSON-RPC body>
// which the Mindscape Bridge userscript in the GM's browser relays to the companion
// (only when the pairing code is the one it was given: !psi pair),
// typing the answer back as
//     !psi-result <id> <base64url JSON-RPC response>          (one part)
//     !psi-result <id> <part>/<parts>/<tag> <base64url chunk> (long answers)
// where <tag> is the bridge page's own random source tag: two browsers of one GM account
// both relaying a request type parts that are put together apart, never mixed. Parts
// without a tag (an older bridge) are put together per GM.
// Only answers typed by a GM are accepted, only once, and only for requests this
// script made. See docs/ROLL20.md for installation and every command.
/* global on, log, state, sendChat, findObjs, getObj, createObj, playerIsGM, randomInteger, Campaign */

// eslint-disable-next-line no-var
var Mindscape = Mindscape || (() => {
  'use strict';

  const scriptName = 'Mindscape';
  const version = '0.1.0';
  // Schema history of state.Mindscape:
  //   1  prototype: {version, system, rollMode} at the top level
  //   2  {config: {system, rollMode}, characters: {}}
  //   3  adds config.timeout and config.chunk, exchanges, encounter, answered
  //   4  adds pairing: the code every request marker carries (!psi pair)
  //   5  adds config.hpBar / config.pspBar, pending (requests awaiting an answer, kept
  //      across restarts) and tokens (what unlinked tokens keep apart from their sheet)
  const SCHEMA_VERSION = 5;
  const REQUEST_MARKER = 'MINDSCAPE-REQ';
  const RESULT_COMMAND = '!psi-result';
  const REQUEST_ID = /^[A-Za-z0-9]{6,32}$/;
  // The pairing code is the bridge's proof that a marker comes from this script: only
  // GMs ever see it (in whispers), so a player cannot write a marker the bridge relays.
  const PAIRING_LENGTH = 24;
  const PAIRING_CODE = /^[A-Za-z0-9]{16,64}$/;
  const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  // Roll20 does not publish a chat size limit; 1000 characters a line keeps every
  // whisper and every typed command far below anything the chat has been seen to cut.
  const DEFAULT_CHUNK = 1000;
  // The most parts of a request marker or of an answer: the bridge's MAX_PARTS
  // (mindscape-bridge.user.js findMarkers drops, without a word, a marker of more).
  const MAX_PARTS = 500;
  // The source tag a bridge page puts in every part of a long answer (the userscript's
  // SOURCE): the parts of one request are put together per GM and tag.
  const SOURCE_TAG = /^[A-Za-z0-9_-]{1,16}$/;
  // The tagged sources of one GM whose parts of one answer are kept at once: each
  // browser of that GM's account relaying the request is one; parts from a further one
  // are refused, so that what is kept stays bounded whatever tags come.
  const SOURCES_PER_GM = 4;
  // The largest request body the companion takes (API.md Limits; companion/settings.py
  // max_body): a larger one gets HTTP 413.
  const MAX_BODY_BYTES = 1024 * 1024;
  const ANSWERED_MEMORY = 200;
  const EXCHANGE_LIFETIME_MS = 60 * 60 * 1000;
  // Requests kept (in state) for an answer, also a late one, for an hour: above 50, the
  // oldest that only read (odds, an encounter's status) are let go; above 500, any.
  const PENDING_MEMORY = 50;
  const PENDING_CEILING = 500;
  // The requests that only read: the only ones let go to keep state small.
  const READ_ONLY_KINDS = ['odds', 'encounter.get'];
  // A player's own requests (odds, an encounter's status, an attack's check) still
  // waiting for their answers: at most this many, so that no player can crowd the rest out.
  const PLAYER_WAITING = 4;
  const PENDING_LIFETIME_MS = 60 * 60 * 1000;
  // Token bars a setting may name; 'none' keeps that field on the character's sheet.
  const BARS = ['1', '2', '3'];
  const BAR_SETTINGS = BARS.concat(['none']);
  const HELP_HANDOUT = 'Help: Mindscape';
  const ROLL_MODES = ['public', 'gm', 'private'];
  // The most pool dice one side rolls (engine/dice.py MAX_DICE_PER_POOL; tests/adapters
  // checks the two agree): --dice and --defense-dice above it are refused here, naming
  // the option, where the companion's refusal would only give the number. 0 is a choice
  // (seed 001: a side may roll only part of its pool, none to keep a die for control).
  const MAX_POOL_DICE = 100;
  // Requests that change an encounter: after a timeout the companion may still have done
  // them, so the GM is sent to !psi encounter status rather than told to repeat them.
  const CHANGING_KINDS = ['encounter.create', 'encounter.add', 'encounter.refresh', 'encounter.declare', 'encounter.resolve', 'encounter.undo'];
  // The request that checks an attack with the companion before any defender is asked
  // (checkTheAttacker).
  const CHECK_KIND = 'attack-check';
  const STALE_REVISION = 4009;
  // JSON-RPC's invalid params: the companion's schema refused a field (error.data.errors).
  const INVALID_PARAMS = -32602;
  const RULES_VIOLATION = 4001;
  // What the bridge answers when it cannot tell whether the companion ran a changing
  // call (a timeout or a lost connection after sending): JSON-RPC's server-error range.
  const BRIDGE_UNCERTAIN = -32001;
  // What the bridge answers when a call was certainly not carried out (the companion
  // refused the HTTP request before running it: 400, 404, 413, 415), or when the answer
  // is too long to type back: a refusal like the companion's, its reason in data.detail.
  const BRIDGE_REFUSED = -32002;

  // The mode ids of each system (RULES.md 1.2, 2.2, 3.3).
  const SYSTEMS = {
    'revised-2e': {
      attacks: ['ego-whip', 'id-insinuation', 'mind-thrust', 'psionic-blast', 'psychic-crush'],
      defenses: ['intellect-fortress', 'mental-barrier', 'mind-blank', 'thought-shield', 'tower-of-iron-will'],
      ranges: ['short', 'medium', 'long'],
    },
    'combat-strength': {
      attacks: ['psionic-wave', 'mind-thrust', 'ego-whip', 'id-insinuation', 'psychic-implosion'],
      defenses: ['mind-blank', 'shield-thoughts', 'mental-barrier', 'intellect-fortress', 'tower-of-iron-will'],
      ranges: ['short', 'medium', 'long'],
      // What a combatant declares at a round's intent (RULES.md 2.3); no other system has stances.
      stances: ['trance', 'discipline', 'wave', 'normal'],
    },
    'power-pool': {
      attacks: ['mental-stab', 'personality-invasion', 'psionic-wave', 'subconscious-subversion', 'synaptic-overload'],
      // The modes that strike several targets at once (RULES.md 3.3).
      waves: ['psionic-wave'],
      defenses: ['barrier-mantra', 'blank-mind', 'cognitive-labyrinth', 'imagination-swarm', 'pinnacle-of-will'],
      // The defenses that draw allies in (RULES.md 3.3: the tables' draws_allies).
      swarms: ['imagination-swarm'],
      ranges: [],
    },
  };
  // The companion's Roll20 adapters (adapters/roll20.py). The AD&D 2E Revised one reads
  // that sheet for any of the three systems; the generic one reads the attributes a
  // mapping names. Both keep state the sheet has no field for in psi_* attributes.
  const ADAPTERS = ['roll20.adnd2e-revised', 'roll20.generic'];
  const STATE_ATTRIBUTE = /^psi_/i;

  // What the AD&D 2E Revised adapter reads besides psi_* (adapters/roll20.py,
  // Adnd2eRevised.attributes_read), and nothing more. The sheet holds hundreds of
  // attributes (weapons, spells, gear, and per psionic power a row whose macro box a
  // sheet worker fills with the power's whole roll template, about 2 KB), and the
  // bridge drops a request of more than 500 chat parts. Names match case-insensitively.
  // tests/fixtures/roll20/adnd2e-revised-attributes.json sorts the sheet's psionics
  // attributes into those the adapter reads and those it does not: tests/adapters
  // checks the list against the adapter, test/mindscape.test.mjs this pattern against it.
  const ADND2E_READ = new RegExp(`^(?:${[
    // PSP, MThAC0 and its adjustment, MAC; the scores and the Psionics Core tab's
    // temporary psionic modifiers; hit points; the points kept beside HP and PSP
    'psp|psp_max|mthac0|mthac0adj|selfmac|temp-selfmac',
    'intelligence|wisdom|constitution|psion-(?:int|wis|con)-mod',
    'hp|hp_max|temphp|temppsp|storedpsp',
    // class levels and the classes named beside them; the Monster Sheet's Hit Dice and
    // Intelligence, and the page shown (tab11, 2: the Monster Sheet)
    'level-class\\d{1,2}|class\\d{1,2}|hitdice|monsterintelligence|tab11',
    // the Psionics Revised tab's attack and defense rows (the first outside the
    // repeating ones), with an attack row's own MThAC0 and adjustment
    'psionic-attack-name|psionic-defense-name',
    'repeating_psionic-attacks_.+_(?:psionic-attack-name|mthac0|mthac0adj)',
    'repeating_psionic-defenses_.+_psionic-defense-name',
    // the names of the Psionics Core tab's Attack Modes and Defense Modes rows (with
    // psion- twice: the name earlier versions read, still read by the adapter)
    'repeating_psion-(?:psion-)?attack5_.+_psionattacking',
    'repeating_psion-(?:psion-)?defense5_.+_psiondefending',
  ].join('|')})$`, 'i');

  // The sheet's defense and attack rows the adapter reads modes from (adapters/roll20.py
  // _SECTIONS): the Psionics Revised tab's, the Psionics Core tab's Defense and Attack Modes.
  const DEFENSE_ROW = /^(?:psionic-defense-name|repeating_psionic-defenses_.+_psionic-defense-name|repeating_psion-(?:psion-)?defense5_.+_psiondefending)$/i;
  const ATTACK_ROW = /^(?:psionic-attack-name|repeating_psionic-attacks_.+_psionic-attack-name|repeating_psion-(?:psion-)?attack5_.+_psionattacking)$/i;

  // The timeout of each request, by id: timers cannot survive a restart, so they are held
  // here while the requests themselves are kept in state (store().pending).
  const timers = new Map();
  // The early word that no part of a request's answer has come yet (hintLater), by id:
  // held here too, so a request restored after a restart, long past its first seconds,
  // never gets one.
  const hints = new Map();

  // ---------------------------------------------------------------- utilities

  const utf8Encode = (text) => {
    const bytes = [];
    for (const ch of String(text)) {
      let cp = ch.codePointAt(0);
      if (cp < 0x80) bytes.push(cp);
      else if (cp < 0x800) bytes.push(0xc0 | (cp >> 6), 0x80 | (cp & 63));
      else if (cp < 0x10000) {
        if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
        bytes.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
      } else {
        bytes.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
      }
    }
    return bytes;
  };

  // Strict, as the bridge's TextDecoder and the companion read UTF-8: an overlong form, a
  // surrogate (U+D800..U+DFFF, which UTF-8 never encodes) or a cut sequence is refused.
  const utf8Decode = (bytes) => {
    let out = '';
    let i = 0;
    const cont = (k) => {
      const b = bytes[i + k];
      if (b === undefined || (b & 0xc0) !== 0x80) throw new Error('invalid UTF-8');
      return b & 63;
    };
    while (i < bytes.length) {
      const b = bytes[i];
      let cp;
      let n;
      if (b < 0x80) { cp = b; n = 1; }
      else if ((b & 0xe0) === 0xc0) { cp = ((b & 31) << 6) | cont(1); n = 2; if (cp < 0x80) throw new Error('invalid UTF-8'); }
      else if ((b & 0xf0) === 0xe0) { cp = ((b & 15) << 12) | (cont(1) << 6) | cont(2); n = 3; if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) throw new Error('invalid UTF-8'); }
      else if ((b & 0xf8) === 0xf0) { cp = ((b & 7) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3); n = 4; if (cp < 0x10000 || cp > 0x10ffff) throw new Error('invalid UTF-8'); }
      else throw new Error('invalid UTF-8');
      out += String.fromCodePoint(cp);
      i += n;
    }
    return out;
  };

  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

  /** Encodes text as unpadded base64url of its UTF-8 bytes (no btoa in the sandbox). */
  const encodeBase64Url = (text) => {
    const bytes = utf8Encode(text);
    let out = '';
    for (let i = 0; i < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
      if (i + 1 < bytes.length) out += B64[(n >> 6) & 63];
      if (i + 2 < bytes.length) out += B64[n & 63];
    }
    return out;
  };

  /** Decodes unpadded base64url into text; throws on any character outside the alphabet. */
  const decodeBase64Url = (code) => {
    const text = String(code);
    if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw new Error('not base64url');
    const bytes = [];
    for (let i = 0; i < text.length; i += 4) {
      const quad = text.slice(i, i + 4);
      let n = 0;
      for (let k = 0; k < 4; k += 1) n = (n << 6) | (k < quad.length ? B64.indexOf(quad[k]) : 0);
      bytes.push((n >> 16) & 255);
      if (quad.length > 2) bytes.push((n >> 8) & 255);
      if (quad.length > 3) bytes.push(n & 255);
    }
    return utf8Decode(bytes);
  };

  /** Splits text into pieces of at most `size` characters (at least one piece). */
  const chunk = (text, size) => {
    const parts = [];
    for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
    return parts.length ? parts : [''];
  };

  // The bridge drops these before it looks for a marker, so a name must not hide one
  // behind them either.
  const INVISIBLE = /[\u00ad\u200b-\u200d\u2060\ufeff]/g;
  const MARKER_LIKE = /MINDSCAPE-REQ/gi;

  // A name or a summary must never read as a request marker, even with invisible
  // characters inside: such text loses them and its marker word is broken up.
  const defuseMarkers = (text) => {
    const bare = text.replace(INVISIBLE, '');
    return bare.search(MARKER_LIKE) < 0 ? text : bare.replace(MARKER_LIKE, 'MINDSCAPE_REQ');
  };

  // Everything shown in chat goes through here: names and summaries come from
  // players and from the companion, and Roll20 would otherwise expand @{..}, [[..]],
  // &{..}, markdown and HTML inside them.
  const chatSafe = (value) => defuseMarkers(String(value === undefined || value === null ? '' : value))
    .replace(/&/g, '&amp;')
    .replace(/[<>"'[\]{}@*`\\]/g, (c) => `&#${c.charCodeAt(0)};`)
    .replace(/\r?\n/g, ' ');

  // What a refusal quotes back of what was typed (an option's name, a value, an id), cut
  // to ECHO_LENGTH characters with an ellipsis: a whole paragraph pasted by mistake is
  // not whispered back whole. `echo` makes it ready for the chat as chatSafe does.
  const ECHO_LENGTH = 80;
  const clipped = (value) => {
    const chars = Array.from(String(value === undefined || value === null ? '' : value));
    return chars.length > ECHO_LENGTH ? `${chars.slice(0, ECHO_LENGTH - 1).join('')}\u2026` : chars.join('');
  };
  const echo = (value) => chatSafe(clipped(value));

  const randomText = (length) => {
    let id = '';
    for (let i = 0; i < length; i += 1) id += ID_ALPHABET[randomInteger(ID_ALPHABET.length) - 1];
    return id;
  };

  const newId = () => randomText(12);

  const newPairingCode = () => randomText(PAIRING_LENGTH);

  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

  // The member `key` of `table` when it is the table's own, else undefined. Every lookup by
  // a key someone typed (a command, a request id, a system) or the companion sent (a rule,
  // a path, an outcome) goes through here: `table[key]` would find what every object
  // inherits (constructor, toString, __proto__, hasOwnProperty) and take it for an entry.
  const ownMember = (table, key) => (table !== null && typeof table === 'object' && Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined);

  // The word of `words` that an option's value names in any case, or undefined: the
  // options that name one of a fixed set of words (--system, --adapter, --rollmode,
  // --hpbar, --pspbar) take "GM" as gm, and the word stored is the list's own.
  const fixedWord = (words, text) => {
    const wanted = String(text === undefined || text === null ? '' : text).trim().toLowerCase();
    return words.find((word) => word === wanted);
  };

  // A mode's or a field's id in the game's words: "tower-of-iron-will" reads "Tower of Iron
  // Will", "mind_opened" "Mind opened" (its first word only capitalised, as a phrase).
  const SMALL_WORDS = ['of', 'the', 'a', 'an', 'to', 'by'];
  const label = (modeId) => {
    const text = String(modeId || '');
    if (text.includes('_')) return text.charAt(0).toUpperCase() + text.slice(1).replace(/_/g, ' ');
    return text.split('-').map((w, i) => (i > 0 && SMALL_WORDS.includes(w) ? w : w.charAt(0).toUpperCase() + w.slice(1))).join(' ');
  };

  // A mode name as the companion's mode_id (adapters/core.py) reads it: NFKC first (full-width
  // letters are the mode they spell), then every run of characters other than a-z and 0-9
  // one hyphen. Digits are kept: "Ego Whip 2" is no mode, for the script as for the
  // companion (tests/adapters/test_roll20.py checks the two agree).
  const normaliseMode = (text) => String(text || '').normalize('NFKC').trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

  // A number typed in an option (--mult, --dice, --defense-dice, a --sacrifice level,
  // --hours, --timeout, --chunk): digits only, or null. Number() alone would take an empty
  // value as 0 and "0x3", "1e1" or "0b11" as numbers nobody typed.
  const wholeNumber = (text) => {
    const digits = String(text === undefined || text === null ? '' : text).trim();
    const value = Number(digits);
    return /^\d+$/.test(digits) && Number.isSafeInteger(value) ? value : null;
  };

  // ----------------------------------------------------------- state handling

  const defaultState = () => ({
    version: SCHEMA_VERSION,
    config: {
      system: 'revised-2e', rollMode: 'public', timeout: 30, chunk: DEFAULT_CHUNK, adapter: ADAPTERS[0], attributes: {}, hpBar: '1', pspBar: 'none',
    },
    characters: {},
    exchanges: {},
    encounter: null,
    answered: [],
    pairing: newPairingCode(),
    pending: {},
    tokens: {},
    questions: {},
  });

  const MIGRATIONS = {
    // 1 -> 2: the campaign settings moved under `config`; per-character settings began.
    1: (old) => ({
      version: 2,
      config: {
        system: ownMember(SYSTEMS, old.system) ? old.system : 'revised-2e',
        rollMode: ROLL_MODES.includes(old.rollMode) ? old.rollMode : 'public',
      },
      characters: {},
    }),
    // 2 -> 3: request timeout, chunk size and a campaign-wide adapter and attribute
    // mapping became settings; pending attacks, the current encounter and the answered
    // request ids are kept across restarts.
    2: (old) => ({
      version: 3,
      config: Object.assign({ timeout: 30, chunk: DEFAULT_CHUNK, adapter: ADAPTERS[0], attributes: {} }, old.config || {}),
      characters: isObject(old.characters) ? old.characters : {},
      exchanges: {},
      encounter: null,
      answered: [],
    }),
    // 3 -> 4: request markers carry a pairing code the bridge checks (!psi pair).
    3: (old) => Object.assign({}, old, { version: 4, pairing: newPairingCode() }),
    // 4 -> 5: token bars for unlinked tokens (HP on bar 1, PSP on none, as new campaigns
    // get); requests awaiting an answer and unlinked tokens' own values move into state.
    4: (old) => Object.assign({}, old, {
      version: 5,
      config: Object.assign({ hpBar: '1', pspBar: 'none' }, old.config || {}),
      pending: {},
      tokens: {},
    }),
  };

  /** Brings a stored state object up to SCHEMA_VERSION, one migration at a time. */
  const migrate = (stored) => {
    if (!isObject(stored) || !Number.isInteger(stored.version) || stored.version < 1) return defaultState();
    let current = stored;
    while (current.version < SCHEMA_VERSION) {
      const step = MIGRATIONS[current.version];
      if (!step) return defaultState();
      current = step(current);
    }
    return current;
  };

  const store = () => state[scriptName];

  // Forgets a request (and its timer): answered, too old, or beyond PENDING_MEMORY.
  // Attacks still waiting for a defense are kept an hour: one older is forgotten (at a
  // restart, and whenever an attack is stored or answered), and its buttons do nothing.
  const pruneExchanges = (now) => {
    const exchanges = store().exchanges;
    Object.keys(exchanges).forEach((xid) => {
      if (!(now - exchanges[xid].at < EXCHANGE_LIFETIME_MS)) delete exchanges[xid];
    });
  };

  const dropHint = (id) => {
    if (hints.has(id)) { clearTimeout(hints.get(id)); hints.delete(id); }
  };

  const forgetRequest = (id) => {
    delete store().pending[id];
    if (timers.has(id)) { clearTimeout(timers.get(id)); timers.delete(id); }
    dropHint(id);
  };

  // Starts (or starts again) the time request `id` waits for its answer: the configured
  // timeout from now. An answer long enough to come in many chat parts (a large
  // encounter's step, any answer at a small --chunk) starts it again with each part, so
  // an answer still arriving is not called lost while it arrives.
  const waitForAnswer = (id) => {
    if (timers.has(id)) clearTimeout(timers.get(id));
    timers.set(id, setTimeout(guarded(`when request ${id} timed out`, () => expire(id)), (store().config.timeout || 30) * 1000));
  };

  // A relay that works types the first part of an answer within a second or two, so a
  // request with nothing back after HINT_MS most likely went nowhere (no bridge tab, the
  // companion not started, the bridge not paired): the GM is told then, not only at the
  // timeout. Half the timeout at most, so that the word still comes well before it.
  const HINT_MS = 6000;

  // Starts the wait for the early word on request `id` (noAnswerYet); the first part of
  // its answer from a GM (handleResult), its end or its timeout calls it off (dropHint).
  const hintLater = (id) => {
    const seconds = store().config.timeout || 30;
    const delay = Math.min(HINT_MS, (seconds * 1000) / 2);
    dropHint(id);
    hints.set(id, setTimeout(guarded(`when request ${id} had no answer yet`, () => noAnswerYet(id, delay, seconds)), delay));
  };

  // Tells the GM that request `id` has had no part of its answer in `delay` ms and what
  // to check, once. The requests sent in the same go or since, still waiting for a word
  // of their own (nothing of their answers come either), are named in it and get none:
  // one word about a silent relay is enough, however many requests it left waiting.
  const noAnswerYet = (id, delay, seconds) => {
    hints.delete(id);
    const job = ownMember(store().pending, id);
    if (!job || job.late || !timers.has(id)) return;
    const others = Array.from(hints.keys());
    others.forEach(dropHint);
    const also = others.length ? `, nor to ${others.length > 1 ? 'requests' : 'request'} ${others.map((other) => `<b>${other}</b>`).join(', ')}` : '';
    whisperGM(box('still waiting for the bridge', `No part of an answer has come in ${delay / 1000} s to request <b>${id}</b> (${chatSafe(job.description || job.kind)})${also}; `
      + 'a relay that works answers within a second or two. Check the relay: <code>mindscape serve</code> running on this computer, and this Roll20 tab open '
      + 'with the Mindscape Bridge userscript enabled (its badge must say connected, in green; "not paired": paste the code <code>!psi pair</code> whispers; '
      + 'no badge at all: turn on <i>Allow User Scripts</i> for your userscript manager). '
      + `${others.length ? 'They keep' : 'The request keeps'} waiting for an answer until the timeout (${seconds} s).`), TRANSIENT);
  };

  // Keeps state bounded: no request older than an hour; above PENDING_MEMORY the oldest
  // requests that only read are let go (their answers, should they come, are refused and
  // change nothing), and only above PENDING_CEILING any: an attack, a step or a round's
  // end is never dropped because others came after it.
  const prunePending = (now) => {
    const jobs = store().pending;
    Object.keys(jobs).forEach((id) => { if (!(now - jobs[id].at < PENDING_LIFETIME_MS)) forgetRequest(id); });
    const ids = Object.keys(jobs).sort((a, b) => jobs[a].at - jobs[b].at);
    const reads = ids.filter((id) => READ_ONLY_KINDS.includes(jobs[id].kind));
    let count = ids.length;
    while (count > PENDING_MEMORY && reads.length) { forgetRequest(reads.shift()); count -= 1; }
    const left = Object.keys(jobs).sort((a, b) => jobs[a].at - jobs[b].at);
    while (left.length > PENDING_CEILING) forgetRequest(left.shift());
  };

  // Whether `job` is a player's own request while PLAYER_WAITING of theirs still wait
  // for an answer (not yet timed out): then it is refused, and they are told so.
  const tooManyWaiting = (job) => {
    const kinds = READ_ONLY_KINDS.concat([CHECK_KIND]);
    const who = job.requester;
    if (!kinds.includes(job.kind) || !who || who === 'API' || playerIsGM(who)) return false;
    const jobs = store().pending;
    const waiting = Object.keys(jobs).filter((id) => timers.has(id) && jobs[id].requester === who && kinds.includes(jobs[id].kind)).length;
    if (waiting < PLAYER_WAITING) return false;
    refuse(who, `${waiting} of your requests still wait for the companion's answer: ask again once they are answered (or have timed out). Nothing was sent.`);
    return true;
  };

  // After a restart no timer runs for the requests still in state: the GM learns which
  // ones were in flight, and their answers, should they come, are applied as late ones.
  // A request refused as stale (keptAfterStale) got its answer: it is not in flight,
  // only kept for a second bridge's answer, as it was before the restart.
  const reportInFlight = () => {
    const jobs = store().pending;
    const ids = Object.keys(jobs).filter((id) => !jobs[id].stale).sort((a, b) => jobs[a].at - jobs[b].at);
    if (!ids.length) return;
    const lines = ids.map((id) => {
      const job = jobs[id];
      job.late = true;
      return `<b>${id}</b>: ${chatSafe(job.description || job.kind)}`;
    });
    const changing = ids.some((id) => CHANGING_KINDS.includes(jobs[id].kind) && jobs[id].kind !== 'encounter.create');
    const creating = ids.some((id) => jobs[id].kind === 'encounter.create');
    const question = ids.some((id) => jobs[id].kind === 'round-choices');
    const house = ids.some((id) => jobs[id].kind === 'house');
    const checks = ids.filter((id) => jobs[id].kind === CHECK_KIND);
    whisperGM(box('requests in flight', `These requests were waiting for an answer when the Mod sandbox restarted:<br>${lines.join('<br>')}<br>`
      + 'An answer that still comes within the hour is applied, and you are told so.'
      + (changing ? ' Run <code>!psi encounter status</code> before you repeat an encounter command.' : '')
      + (creating ? ' A late answer to <code>encounter create</code> makes that encounter the current one here, unless another was created meanwhile; '
        + 'if none comes, run <code>!psi encounter create</code> again (an encounter the companion made without its answer reaching here is only left unused).' : '')
      + (question ? ' A question before a round\'s end only reports when answered late: run <code>!psi round</code> again to end that round.' : '')
      + (house ? ' A change of the house rules answered late is not made: run <code>!psi house</code> again.' : '')
      + (checks.length ? ' An attack that was being checked before anyone was asked for a defense was not made, and its answer changes nothing: '
        + 'nobody was asked, and its player attacks again.' : '')));
    // Their attackers' players would wait for a defense nobody will be asked for.
    checks.map((id) => jobs[id]).filter((job) => job.requester && !playerIsGM(job.requester)).forEach((job) => {
      tell(job.requester, 'attack not made', `The Mod sandbox restarted while your attack was being checked (${chatSafe(job.title)}): `
        + 'nobody was asked for a defense. Attack again.');
    });
  };

  /**
   * Creates or migrates state.Mindscape, drops attacks and requests left waiting for an
   * hour and the stored values of tokens that are gone, and tells the GM of requests
   * still in flight from before the restart.
   */
  const checkInstall = () => {
    log(`-=> ${scriptName} v${version} (state schema ${SCHEMA_VERSION}) <=-`);
    const before = state[scriptName];
    if (isObject(before) && before.version > SCHEMA_VERSION) {
      log(`${scriptName}: state schema ${before.version} is newer than this script understands; left untouched.`);
      return;
    }
    if (!isObject(before) || before.version !== SCHEMA_VERSION) {
      const from = isObject(before) ? before.version : 'nothing';
      state[scriptName] = migrate(before);
      log(`${scriptName}: state migrated from ${from} to ${SCHEMA_VERSION}.`);
    }
    if (!PAIRING_CODE.test(String(store().pairing || ''))) store().pairing = newPairingCode();
    const now = Date.now();
    pruneExchanges(now);
    if (!isObject(store().pending)) store().pending = {};
    if (!isObject(store().tokens)) store().tokens = {};
    // The questions before a round's end (!psi round): a state saved before there were
    // any gets an empty set, as a new campaign does; an hour-old one is dropped.
    if (!isObject(store().questions)) store().questions = {};
    pruneQuestions(now);
    Object.keys(store().tokens).forEach((tokenId) => { if (!getObj('graphic', tokenId)) delete store().tokens[tokenId]; });
    prunePending(now);
    reportInFlight();
  };

  const rememberAnswered = (id, how) => {
    const answered = store().answered;
    answered.push({ id, how });
    while (answered.length > ANSWERED_MEMORY) answered.shift();
  };

  const answeredEntry = (id) => store().answered.find((entry) => entry.id === id);

  // ----------------------------------------------------------------- chat out

  const playerName = (playerid) => {
    const player = getObj('player', playerid);
    return player ? String(player.get('_displayname') || '') : '';
  };

  const box = (title, body) => `<div style="border:1px solid #6a4c93;border-radius:4px;padding:4px;background:#f4effa;">`
    + `<b>Mindscape: ${title}</b><br>${body}</div>`;

  // Roll20 keeps a message in the chat archive, which is all a page reloaded (or a
  // player joining late) shows, unless it is sent with noarchive. So whatever someone
  // needs after a reload is kept: a prompt with buttons (the only copy of a secret
  // choice), a result card, a refusal or an explanation. Only `transient` whispers are
  // not: the request markers, which a replayed history must never show the bridge again,
  // and lines worth nothing a moment later (a request announced, a command echoed back).
  const whisperTo = (name, html, { transient = false } = {}) => {
    const options = { noarchive: transient };
    if (name === 'gm') return sendChat(scriptName, `/w gm ${html}`, null, options);
    const display = String(name);
    // /w "Name" cannot escape a double quote, so such a name matches no player and the
    // whisper would vanish without a trace: the GM gets it instead, and why.
    if (display.includes('"')) {
      return whisperTo('gm', `<div>Mindscape could not whisper this to <b>${chatSafe(display)}</b>: Roll20 cannot whisper a player `
        + 'whose display name holds a double quote (&quot;). Ask them to rename themselves without one, and pass this on meanwhile.</div>'
        + html, { transient });
    }
    return sendChat(scriptName, `/w "${display}" ${html}`, null, options);
  };

  const whisperGM = (html, options) => whisperTo('gm', html, options);

  // GMs get the answer through /w gm already; whisper players by display name.
  const whisperPlayer = (playerid, html, options) => {
    if (!playerid || playerid === 'API' || playerIsGM(playerid)) return whisperGM(html, options);
    const name = playerName(playerid);
    return name ? whisperTo(name, html, options) : whisperGM(html, options);
  };

  const tell = (playerid, title, body, options) => whisperPlayer(playerid, box(title, body), options);

  // A whisper that only echoes what its reader just did, or announces what comes next:
  // worth nothing after a reload, so not kept in the chat archive (whisperTo).
  const TRANSIENT = { transient: true };

  // An error thrown out of a callback that Roll20 or a timer runs takes the whole Mod
  // sandbox down: every script of the game stops until the API is restarted. So each such
  // callback (a timeout, an event handler) runs through here: the error goes to the API
  // console and the GM is told, and the sandbox goes on.
  const guarded = (when, callback) => (...args) => {
    try {
      return callback(...args);
    } catch (err) {
      log(`${scriptName}: internal error ${when}: ${err && err.stack ? err.stack : err}`);
      try {
        whisperGM(box('internal error', `An internal error happened ${chatSafe(when)}; the API console has the details. `
          + 'The Mod sandbox goes on: other requests and commands are not affected.'));
      } catch (ignored) {
        // Telling the GM failed too: the console has it.
      }
      return undefined;
    }
  };

  const refuse = (playerid, why) => tell(playerid, 'refused', why);

  // Everyone listed as controlling a fighter: its character's controllers and, for a
  // token that fights as itself, the token's own (Roll20 lets either grant control).
  const ownersOf = (ref) => {
    const listed = [];
    const add = (obj) => { if (obj) listed.push(...String(obj.get('controlledby') || '').split(',').map((s) => s.trim())); };
    add(getObj('character', fighterCharacter(ref)));
    if (ref !== fighterCharacter(ref)) add(getObj('graphic', ref));
    return Array.from(new Set(listed.filter(Boolean)));
  };

  // Controllers of a fighter, as player ids (never "all": a secret choice must not be
  // shown to everybody). NPCs have none, and their choices go to the GM.
  const controllersOf = (ref) => ownersOf(ref).filter((pid) => pid !== 'all');

  const mayControl = (playerid, ref) => {
    if (playerIsGM(playerid)) return true;
    const owners = ownersOf(ref);
    return owners.includes(playerid) || owners.includes('all');
  };

  // The players who choose the defense of `ref` against an attack player `by` made: its
  // controllers but the GMs (whispered apart), and not `by` while another player controls
  // it, or the attacker's player would choose the defense against its own attack. As its
  // only controller `by` still chooses: that player knows both sides anyway. A mind
  // controlled by "all" has other controllers, every player, but none of them can be
  // whispered: the GM chooses, as for one controlled by "all" alone.
  const answerersOf = (ref, by) => {
    const players = controllersOf(ref).filter((pid) => !playerIsGM(pid));
    const others = players.filter((pid) => pid !== by);
    return others.length || (players.includes(by) && ownersOf(ref).includes('all')) ? others : players;
  };

  // Whether a choice for `ref` that is part of the defense against an attack player `by`
  // made (the defense itself, a creature joining or leaving it) is not `playerid`'s though
  // it may control `ref`: `playerid` made the attack, and answerersOf leaves it out. The
  // one place the defense commands (!psi defend, --defense, !psi join) read the rule.
  const leftToOthers = (playerid, ref, by) => playerid === by && !playerIsGM(playerid) && !answerersOf(ref, by).includes(playerid);

  // Why `playerid` may not choose the defense of `ref` against an attack `by` made, or null.
  const defendProblem = (playerid, ref, by) => {
    if (!mayControl(playerid, ref)) return `only the controller of ${chatSafe(fighterName(ref))} or the GM may choose this defense.`;
    if (!leftToOthers(playerid, ref, by)) return null;
    return `the defense of ${chatSafe(fighterName(ref))} against your own attack is chosen by its other controllers (or the GM), in secret. Nothing was sent.`;
  };

  // --------------------------------------------------------- command grammar

  /**
   * Parses `!psi <verb> [words] --key value --key value` into
   * {command, verb, words, options: [[key, value]], get(key), all(key), has(key)}.
   * Arguments are split on `--` as TokenMod and ChatSetAttr do; keys are lower case.
   */
  const parseCommand = (content) => {
    const pieces = String(content || '').split(/\s+--|^--/);
    const head = pieces.shift().trim().split(/\s+/).filter(Boolean);
    const command = (head.shift() || '').toLowerCase();
    const verb = (head.shift() || '').toLowerCase();
    const options = pieces.map((piece) => {
      const text = piece.trim();
      const space = text.search(/\s/);
      return space < 0 ? [text.toLowerCase(), ''] : [text.slice(0, space).toLowerCase(), text.slice(space + 1).trim()];
    }).filter(([key]) => key);
    return {
      command,
      verb,
      words: head,
      options,
      has: (key) => options.some(([k]) => k === key),
      get: (key) => {
        const found = options.filter(([k]) => k === key);
        return found.length ? found[found.length - 1][1] : undefined;
      },
      all: (key) => options.filter(([k]) => k === key).map(([, v]) => v),
    };
  };

  // ------------------------------------------------------ characters & tokens

  // A *fighter* is what takes part in an exchange or an encounter, named by a `ref`:
  // the character's id for a character (and for its tokens whose bars are linked to its
  // sheet), or the token's id for an unlinked token, which fights as itself: three
  // Goblin tokens of one Goblin character are three goblins, each with the HP and PSP
  // of its own bars. The ref is also the combatant id the companion gets (Roll20 ids are
  // a '-' and 19 letters, digits, '-' or '_': within the companion's 1-64 of those), and
  // the character_id of its write-back updates. Roll20 ids are unique across all object
  // types, so a ref names a token exactly when a graphic has that id.

  const characterOfToken = (tokenId) => {
    const token = getObj('graphic', tokenId);
    if (!token) return null;
    const charId = token.get('represents');
    return charId && getObj('character', charId) ? charId : null;
  };

  const barOf = (field) => {
    const bar = String(store().config[`${field}Bar`] || 'none');
    return BARS.includes(bar) ? bar : null;
  };

  // A token is unlinked when none of the bars Mindscape uses (with none configured, none
  // of the three) is linked to an attribute: its barN_link is empty.
  const isUnlinked = (token) => {
    const used = [barOf('hp'), barOf('psp')].filter(Boolean);
    return (used.length ? used : BARS).every((n) => !token.get(`bar${n}_link`));
  };

  const fighterOfToken = (tokenId) => {
    const charId = characterOfToken(tokenId);
    if (!charId) return null;
    return isUnlinked(getObj('graphic', tokenId)) ? tokenId : charId;
  };

  // The character a fighter reads its sheet from (null when it is gone).
  const fighterCharacter = (ref) => {
    if (getObj('character', ref)) return ref;
    return characterOfToken(ref);
  };

  // The token of a fighter that fights as itself, else null.
  const ownToken = (ref) => (getObj('character', ref) ? null : getObj('graphic', ref));

  // A --char value may name a token (as @{target|token_id} gives) or a character id;
  // settings belong to the character either way.
  const resolveCharacter = (id) => {
    const text = String(id || '').trim();
    if (!text) return null;
    return characterOfToken(text) || (getObj('character', text) ? text : null);
  };

  // A --target/--token value: a token (its fighter) or a character id.
  const resolveFighter = (id) => {
    const text = String(id || '').trim();
    if (!text) return null;
    return fighterOfToken(text) || (getObj('character', text) ? text : null);
  };

  const selectedTokens = (msg) => (msg.selected || []).filter((sel) => sel && sel._type === 'graphic').map((sel) => sel._id);

  const selectedCharacters = (msg) => selectedTokens(msg).map(characterOfToken).filter(Boolean);

  // The selected tokens that represent no character (a lamp, a door, a token whose
  // character was deleted), as "Lamp (represents no character)" for a reply.
  const unrepresented = (tokens) => tokens.filter((id) => getObj('graphic', id) && !characterOfToken(id)).map((id) => {
    const name = getObj('graphic', id).get('name');
    return `${name ? chatSafe(name) : 'a token without a name'} (represents no character)`;
  });

  const selectedFighters = (msg) => selectedTokens(msg).map(fighterOfToken).filter(Boolean);

  const characterName = (charId) => {
    const character = getObj('character', charId);
    return character ? String(character.get('name') || charId) : charId;
  };

  // A token fighting as itself goes by the token's name (Goblin 2), else its character's.
  const fighterName = (ref) => {
    const token = ownToken(ref);
    if (token && token.get('name')) return String(token.get('name'));
    const charId = fighterCharacter(ref);
    return charId ? characterName(charId) : ref;
  };

  // The companion's summary in the table's words: a creature it was not given names it by
  // its combatant id, in quotes ("-Mx1" was not given: ...), which is this campaign's
  // character or token id, or an encounter's combatant id: the fighter's name instead.
  const namedSummary = (text) => String(text || '').replace(/"([A-Za-z0-9_-]{1,64})"/g, (whole, id) => {
    const enc = store().encounter;
    const ref = enc && isObject(enc.combatants) ? Object.keys(enc.combatants).find((r) => enc.combatants[r] === id) : undefined;
    if (ref !== undefined) return fighterName(ref);
    return fighterCharacter(id) ? fighterName(id) : whole;
  });

  const characterConfig = (charId) => store().characters[charId] || {};

  const systemOf = (ref) => characterConfig(fighterCharacter(ref)).system || store().config.system;

  const attributesOf = (charId) => findObjs({ _type: 'attribute', _characterid: charId });

  const findAttribute = (charId, name) => {
    const wanted = String(name).toLowerCase();
    return attributesOf(charId).find((attr) => String(attr.get('name')).toLowerCase() === wanted);
  };

  // The attribute mapping of a character: the campaign's, overridden field by field by
  // the character's own (`!psi config --attr field=Attribute`).
  const mappingOf = (charId) => Object.assign({}, store().config.attributes || {}, characterConfig(charId).attributes || {});

  // The adapter: the character's, else the generic one when a mapping exists, else the
  // campaign's (AD&D 2E Revised unless configured).
  const adapterOf = (charId) => {
    const cfg = characterConfig(charId);
    if (cfg.adapter) return cfg.adapter;
    if (Object.keys(cfg.attributes || {}).length) return 'roll20.generic';
    return store().config.adapter || ADAPTERS[0];
  };

  // Where a character's sheet keeps HP and PSP, as [{attr, part, field, bar}]: `bar`
  // says which part of the token bar (value or max) stands for that attribute part.
  // The AD&D 2E Revised adapter reads HP, PSP (and PSP|max, or PSP_max); the generic
  // one the attributes its mapping names for hp, psp and psp_max.
  const barBindings = (charId) => {
    if (adapterOf(charId) !== 'roll20.generic') {
      return [
        { attr: 'HP', part: 'current', field: 'hp', bar: 'value' },
        { attr: 'HP', part: 'max', field: 'hp', bar: 'max' },
        { attr: 'PSP', part: 'current', field: 'psp', bar: 'value' },
        { attr: 'PSP', part: 'max', field: 'psp', bar: 'max' },
        { attr: 'PSP_max', part: 'current', field: 'psp', bar: 'max', optional: true },
      ];
    }
    const mapping = mappingOf(charId);
    return [['hp', 'hp', 'value'], ['psp', 'psp', 'value'], ['psp_max', 'psp', 'max']]
      .filter(([name]) => mapping[name])
      .map(([name, field, bar]) => {
        const [attr, part] = String(mapping[name]).split('|');
        return { attr, part: /^max$/i.test(part || '') ? 'max' : 'current', field, bar };
      });
  };

  const sameName = (a, b) => String(a).toLowerCase() === String(b).toLowerCase();

  // An unlinked token's attributes: its character's, with what the token keeps apart
  // (store().tokens) over them, and HP and PSP read from its bars where a bar is set
  // and holds a value (a wounded goblin fights with its own HP).
  const tokenAttribs = (charId, token, attribs) => {
    const out = attribs.map((a) => Object.assign({}, a));
    const entry = (name, create) => {
      let found = out.find((a) => sameName(a.name, name));
      if (!found && create) { found = { name, current: '', max: '' }; out.push(found); }
      return found;
    };
    const own = store().tokens[token.id] || {};
    Object.keys(own).forEach((key) => Object.assign(entry(own[key].name, true), { current: own[key].current, max: own[key].max }));
    barBindings(charId).forEach((b) => {
      const bar = barOf(b.field);
      if (!bar) return;
      const value = token.get(`bar${bar}_${b.bar}`);
      if (value === undefined || value === null || value === '') return;
      const target = entry(b.attr, !b.optional);
      if (target) target[b.part] = value;
    });
    return out;
  };

  // What a fighter's sheet shows, as [{name, current, max}]: its character's attributes
  // (those `wanted` names, or all), and an unlinked token's own values over them.
  const sheetAttribs = (ref, wanted = () => true) => {
    const charId = fighterCharacter(ref);
    const token = ownToken(ref);
    const sheet = attributesOf(charId)
      .filter((attr) => wanted(attr.get('name')))
      .map((attr) => ({ name: attr.get('name'), current: attr.get('current'), max: attr.get('max') }));
    return token ? tokenAttribs(charId, token, sheet) : sheet;
  };

  /**
   * The `{adapter, data}` combatant the companion imports for one fighter:
   * `{id, name, controlledby, attribs}` for the AD&D 2E Revised adapter, and
   * `{mapping: {version: 1, fields}, character: {...}}` for the generic one. `id` is the
   * fighter's ref; an unlinked token sends its character's sheet with its own values.
   */
  const combatantOf = (ref) => {
    const charId = fighterCharacter(ref);
    const token = ownToken(ref);
    const character = getObj('character', charId);
    // Callers leave out the fighters deleted since they were named (withoutGone); one that
    // slips through is refused here in words, not by a TypeError further on.
    if (!character) throw new Error(`fighter ${ref} is no longer in the game (its token or character was deleted)`);
    const adapter = adapterOf(charId);
    const mapping = mappingOf(charId);
    const mapped = new Set(Object.values(mapping).map((n) => String(n).replace(/\|max$/i, '').toLowerCase()));
    const wanted = (name) => {
      const lower = String(name).toLowerCase();
      if (mapped.has(lower) || STATE_ATTRIBUTE.test(lower)) return true;
      return adapter === 'roll20.adnd2e-revised' && ADND2E_READ.test(lower);
    };
    const data = {
      id: ref,
      name: token ? fighterName(ref) : character.get('name'),
      controlledby: token ? ownersOf(ref).join(',') : character.get('controlledby'),
      attribs: sheetAttribs(ref, wanted),
    };
    if (adapter === 'roll20.generic') return { adapter, data: { mapping: { version: 1, fields: mapping }, character: data } };
    return { adapter, data };
  };

  // The names in a stored list of modes: a JSON array of strings, or text separated by
  // commas, semicolons or lines (as the companion's adapters read it).
  const storedNames = (value) => {
    const text = String(value === undefined || value === null ? '' : value).trim();
    if (text.startsWith('[')) {
      try {
        const list = JSON.parse(text);
        return Array.isArray(list) ? list.filter((x) => typeof x === 'string') : [];
      } catch (err) {
        return [];
      }
    }
    return text.split(/[,;\n]/);
  };

  // A sheet's defense mode names as the companion's adapters take them (adapters/core.py
  // ALIASES): "Shield Thoughts" is revised-2e's thought-shield, "Thought Shield"
  // combat-strength's shield-thoughts. Only the defense aliases: the script reads a sheet's
  // attack modes in revised-2e alone (hasPsionics), which has no attack alias, and a mode
  // typed in a command is the companion's mode id, as docs/ROLL20.md lists them, as the
  // companion takes it.
  const DEFENSE_ALIASES = {
    'revised-2e': { 'shield-thoughts': 'thought-shield', thoughtshield: 'thought-shield' },
    'combat-strength': { 'thought-shield': 'shield-thoughts' },
  };

  // Whether an attribute's value is there at all: the adapters take an empty one as
  // absent. For a list, a flag or a choice (TEXT_FIELDS) that is all: spaces are a value
  // there (a list naming no mode); a number, a ref or JSON needs more (filled, givesField).
  const holds = (value) => value !== undefined && value !== null && value !== '';

  // Text without the spaces at its ends, as the adapters' Python str.strip() takes them
  // (str.isspace): JavaScript's trim() also strips U+FEFF, which Python keeps (a number
  // so written is refused), and keeps U+001C..U+001F and U+0085, which Python strips.
  // tests/adapters/test_roll20.py checks SPACE against str.isspace.
  const SPACE = /[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
  const EDGE_SPACES = new RegExp(`^${SPACE.source}+|${SPACE.source}+$`, 'g');
  const strip = (text) => String(text).replace(EDGE_SPACES, '');

  // Whether an attribute's value holds more than spaces: what a number, a ref or JSON
  // needs to be there for the adapters (adapters/core.py to_int, to_text stripped,
  // parse_json_text read text of only spaces as no value).
  const filled = (value) => holds(value) && strip(value) !== '';

  // PSPs or an attack or defense strength as the adapters' to_int reads an attribute's
  // value (adapters/core.py): a number that is whole, or text that, stripped, is a sign
  // and 1 to 9 digits of any script (_INT_TEXT: Python's \d and int() read U+0665 and
  // U+FF15 as 5), from 0 to POINTS_MOST (_INT0). undefined where it holds none (nothing,
  // or only spaces); null where to_int refuses it ("5.0", "1e1", "0x10", "Infinity", ten
  // digits, a fraction, a boolean, -5, 200000), and with it the companion the sheet.
  // Number() would read those texts as numbers, and other scripts' digits as none.
  // tests/adapters/test_roll20.py checks INT_TEXT against _INT_TEXT, digitValue's rule
  // against int() for every digit Python knows, and POINTS_MOST against the fields'
  // bounds. A digit of a script Unicode added after the companion's Python reads here
  // and is refused there: that sheet is refused anyway.
  const INT_TEXT = /^[+-]?\p{Nd}{1,9}$/u;
  const POINTS_MOST = 100000;
  const DIGIT = /^\p{Nd}$/u;
  // Unicode keeps each script's digits 0 to 9 in a run of ten, and runs side by side
  // (the mathematical digits) each start where the one before ends: a digit's value is
  // its distance from the first digit of its block of digits, modulo ten.
  const digitValue = (digit) => {
    const at = digit.codePointAt(0);
    let first = at;
    while (DIGIT.test(String.fromCodePoint(first - 1))) first -= 1;
    return (at - first) % 10;
  };
  const sheetPoints = (value) => {
    if (value === undefined || value === null) return undefined;
    let number = typeof value === 'number' && Number.isInteger(value) ? value : null;
    if (typeof value === 'string') {
      const text = strip(value);
      if (text === '') return undefined;
      if (INT_TEXT.test(text)) {
        number = Array.from(text.replace(/^[+-]/, '')).reduce((sum, digit) => sum * 10 + digitValue(digit), 0);
        if (text[0] === '-') number = -number;
      }
    }
    return number !== null && number >= 0 && number <= POINTS_MOST ? number : null;
  };

  // The combatant fields whose text of only spaces the adapters take as given (holds):
  // a list of modes, conditions or spell levels (split_names: then a list naming none),
  // a flag or a choice (then refused, as no such value). Any other field (a number, a
  // ref, JSON) has a value only where the text holds more than spaces (filled). Kept by
  // hand: tests/adapters/test_roll20.py checks it against the adapters' decode.
  const TEXT_FIELDS = new Set(['attacks', 'defenses', 'conditions', 'spell_levels', 'psionic', 'mindless', 'kind', 'class_group', 'die']);

  // The combatant fields kept as JSON text: the JSON null, `null` (with JSON's spaces
  // around it), holds no value there either (parse_json_text), so the mapped attribute
  // counts. Kept by hand, checked as TEXT_FIELDS is.
  const JSON_FIELDS = new Set(['mind', 'condition_rounds', 'lost_powers', 'quick_mac', 'dedicated', 'controlling']);
  const JSON_NULL = /^[ \t\n\r]*null[ \t\n\r]*$/;
  // The longest JSON text the companion takes in one attribute (adapters/core.py MAX_TEXT;
  // tests/adapters/test_roll20.py checks it). Counted in UTF-16 units here, in characters
  // there: never fewer here, so a text the companion refuses is never taken for no state.
  const MAX_JSON_TEXT = 100000;

  // Whether `value` gives combatant field `field` a value as the adapters read it.
  const givesField = (field, value) => {
    if (TEXT_FIELDS.has(field)) return holds(value);
    return filled(value) && !(JSON_FIELDS.has(field) && typeof value === 'string' && JSON_NULL.test(value));
  };

  // The psi_* attribute (and part) that keeps a combatant field, as adapters/roll20.py
  // state_attribute has it: current and maximum pairs share one attribute.
  const STATE_PAIRS = {
    psp: ['psi_psp', 'current'],
    psp_max: ['psi_psp', 'max'],
    attack_strength: ['psi_attack_strength', 'current'],
    attack_strength_max: ['psi_attack_strength', 'max'],
    defense_strength: ['psi_defense_strength', 'current'],
    defense_strength_max: ['psi_defense_strength', 'max'],
    pool: ['psi_pool', 'current'],
    hit_dice: ['psi_pool', 'max'],
  };

  // What the companion reads for a combatant field from `sent` (combatantOf): its psi_*
  // attribute when that gives the field a value (givesField: for a number, more than
  // spaces), else the attribute a generic mapping names for it (the adapters read the
  // mapping, then the psi_* store over it where that reads as a value); undefined when
  // neither gives one. Names match in any case, and of attributes sharing a name the
  // first counts, as there.
  const storedField = (sent, field) => storedSource(sent, field).value;

  // storedField's value with the attribute it was read from: `{value, name}`, `name` the
  // psi_* attribute when neither gives a value (where the companion would write it), and
  // "NAME (max)" for an attribute's maximum.
  const storedSource = (sent, field) => {
    const generic = sent.adapter === 'roll20.generic';
    const attribs = generic ? sent.data.character.attribs : sent.data.attribs;
    const read = ([name, part]) => {
      const max = /^max$/i.test(part || '');
      const attr = attribs.find((a) => sameName(a.name, name));
      const value = attr ? attr[max ? 'max' : 'current'] : undefined;
      return givesField(field, value) ? { value, name: max ? `${name} (max)` : name } : undefined;
    };
    const pair = STATE_PAIRS[field] || [`psi_${field}`, 'current'];
    const own = read(pair);
    if (own !== undefined) return own;
    const mapped = generic && isObject(sent.data.mapping.fields) ? sent.data.mapping.fields[field] : undefined;
    return (mapped && read(String(mapped).split('|'))) || { value: undefined, name: pair[0] };
  };

  // combat-strength: whether the companion counts a fighter psionic: psi_psionic (or its
  // mapped attribute) when it says so, else any attack or defense strength (adapters/core.py
  // finish: the maxima, else the current values), each read as to_int reads it (sheetPoints).
  // A strength the companion refuses counts as none: it then refuses the sheet whatever
  // is offered, and its refusal names the attribute when a button is pressed.
  const psionicStrength = (sent) => {
    const said = storedField(sent, 'psionic');
    const flag = said === undefined ? '' : strip(said).toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(flag)) return true;
    if (['0', 'false', 'no', 'off'].includes(flag)) return false;
    const strength = (field) => {
      const most = storedField(sent, `${field}_max`);
      const value = most === undefined ? storedField(sent, field) : most;
      return sheetPoints(value) || 0;
    };
    return strength('attack_strength') + strength('defense_strength') > 0;
  };

  /**
   * The defense modes a fighter knows, as mode ids, read as the companion's adapters read
   * them (adapters/roll20.py): `psi_defenses` whenever it holds anything; else, with the
   * generic adapter, the attribute its mapping names for `defenses`; else, with the AD&D
   * 2E Revised adapter and in revised-2e only, the sheet's psionic-defense rows (those of
   * its Psionics Revised tab and the Defense Modes rows of its Psionics Core tab) when any
   * is filled. A list naming no mode of the system knows none. Where nothing lists modes,
   * the companion's defaults hold: none in revised-2e and power-pool, all five for a
   * psionic combat-strength mind (engine/combat_strength/combatant.py). So a button never
   * offers a mode the companion would refuse as not known.
   */
  const knownDefenses = (ref, system) => {
    const all = SYSTEMS[system].defenses;
    const aliases = DEFENSE_ALIASES[system] || {};
    const known = (names) => Array.from(new Set(names.map(normaliseMode).map((mode) => aliases[mode] || mode).filter((mode) => all.includes(mode))));
    if (!fighterCharacter(ref)) return [];
    const sent = combatantOf(ref);
    const listed = storedField(sent, 'defenses');
    if (listed !== undefined) return known(storedNames(listed));
    if (system === 'revised-2e' && sent.adapter === 'roll20.adnd2e-revised') {
      const rows = rowTexts(sent.data.attribs, DEFENSE_ROW);
      if (rows.length) return known(rows);
    }
    return system === 'combat-strength' && psionicStrength(sent) ? all.slice() : [];
  };

  // The texts of the AD&D sheet's rows whose names `pattern` matches (DEFENSE_ROW,
  // ATTACK_ROW) that hold something; of attributes sharing a name the first counts, as
  // for any other.
  const rowTexts = (attribs, pattern) => attribs.filter((a, i) => pattern.test(a.name)
    && attribs.findIndex((b) => sameName(a.name, b.name)) === i && holds(a.current)).map((a) => String(a.current));

  // Whether the AD&D sheet gives a revised-2e fighter a mode it knows: its psionic attack
  // or defense rows name one, and no psi_attacks or psi_defenses stands in their place.
  // With no PSPs and no psi_* state the companion takes such a fighter as nonpsionic and
  // refuses it ("a nonpsionic mind knows no psionic modes"): hasPsionics sends it, so
  // that the refusal names it for the GM.
  const sheetKnowsModes = (ref) => {
    const sent = combatantOf(ref);
    if (sent.adapter !== 'roll20.adnd2e-revised' || systemOf(ref) !== 'revised-2e') return false;
    if (knownDefenses(ref, 'revised-2e').length) return true;
    if (storedField(sent, 'attacks') !== undefined) return false;
    return rowTexts(sent.data.attribs, ATTACK_ROW).map(normaliseMode).some((mode) => SYSTEMS['revised-2e'].attacks.includes(mode));
  };

  // --------------------------------------------------------- requests out

  // Why a request whose body is `payload` (its base64url) cannot reach the companion in
  // parts of `size` characters, with what to do, or null: the bridge would drop it
  // unsaid (more than MAX_PARTS parts), or the companion refuse it (over MAX_BODY_BYTES).
  const tooLong = (payload, size) => {
    const bytes = Math.floor((payload.length * 3) / 4);
    if (bytes > MAX_BODY_BYTES) {
      return `its body is ${Math.ceil(bytes / 1024)} KiB, and the companion takes at most ${MAX_BODY_BYTES / 1024} KiB: select fewer tokens (end a round or a rest in smaller groups)`;
    }
    const parts = Math.ceil(payload.length / size);
    if (parts <= MAX_PARTS) return null;
    return `it would take ${parts} chat parts of ${size} characters, and the bridge relays at most ${MAX_PARTS}: raise the part size with `
      + `<code>!psi config --chunk ${Math.ceil(payload.length / MAX_PARTS)}</code> or more (up to 10000), or select fewer tokens`;
  };

  // The order requests are sent in (a request's `seq`, kept with it in state): of two
  // requests waiting at once, the one sent later has the higher. One more than any still
  // waiting is enough, and needs no counter of its own: only requests waiting at once are
  // ever compared (rememberWrites). A request kept from before there were any counts as
  // the first sent.
  const seqOf = (job) => (Number.isInteger(job.seq) ? job.seq : 0);
  const nextSeq = () => 1 + Object.values(store().pending).reduce((most, job) => Math.max(most, seqOf(job)), 0);

  // Whether request `a` was sent before `b`: by their seq; two kept from before there was
  // one (both 0) by the time each was sent.
  const sentBefore = (a, b) => seqOf(a) < seqOf(b) || (seqOf(a) === 0 && seqOf(b) === 0 && a.at < b.at);

  /**
   * Whispers one JSON-RPC body to the GM as MINDSCAPE-REQ lines and starts its timeout;
   * returns the request's id. `job` says what to do with the answer: {kind, requester,
   * involved: [ref], ...}; it is kept in state until answered (also late, or after a
   * restart), for an hour at most. Each marker is a whisper of its own, holding nothing
   * but the marker (the bridge relays only a message that is one whole marker), and
   * carries the pairing code. A request too long for the bridge or the companion
   * (tooLong) is refused instead, before anything is whispered or kept, and null
   * returned: `before` (what the caller changes only once the request goes out) runs
   * only when it does go, before anything else.
   */
  const postRequest = (body, job, description, before) => {
    if (tooManyWaiting(job)) return null;
    const id = body.id !== undefined ? String(body.id) : job.id;
    const payload = encodeBase64Url(JSON.stringify(body));
    const size = store().config.chunk || DEFAULT_CHUNK;
    const why = tooLong(payload, size);
    if (why) {
      whisperGM(box('refused', `Request ${id} (${chatSafe(description)}) was not sent: ${why}. Nothing was sent.`));
      // The players waiting for it (who asked, who chose the defense, a wave's choosers)
      // learn only that: the description may name what they are not to know.
      const waiting = [job.requester, job.chooser].concat(Array.isArray(job.told) ? job.told : []);
      Array.from(new Set(waiting.filter((pid) => pid && pid !== 'API' && !playerIsGM(pid)))).forEach((pid) => refuse(pid,
        'this request is too long to go through the chat to the companion; the GM has been told what to do. Nothing was sent.'));
      return null;
    }
    if (before) before();
    const parts = chunk(payload, size);
    const now = Date.now();
    prunePending(now);
    // The revision the request names (a step's guard), should its fate be unknown (holdUncertain).
    const sentRevision = isObject(body.params) && Number.isInteger(body.params.revision) ? body.params.revision : null;
    store().pending[id] = Object.assign({}, job, { id, description: String(description), partsBy: {}, sentRevision, seq: nextSeq(), at: now });
    prunePending(now);
    hintLater(id);
    waitForAnswer(id);
    whisperGM(`<div>Mindscape request <b>${id}</b>: ${chatSafe(description)}. Waiting for the bridge&hellip;</div>`, TRANSIENT);
    // Never archived: the bridge relays what shows in the chat, and Roll20 replays the
    // archive into it (a reload, a reconnect), so an archived marker would be relayed again.
    parts.forEach((piece, i) => {
      whisperGM(`<div style="font-size:9px;color:#888;word-break:break-all;">${REQUEST_MARKER} ${store().pairing} ${id} ${i + 1}/${parts.length} ${piece}</div>`, TRANSIENT);
    });
    return id;
  };

  const rpcBody = (id, method, params) => ({ jsonrpc: '2.0', id, method, params });

  // The request stays in state: an answer that still comes is applied (handleResult).
  const expire = (id) => {
    timers.delete(id);
    dropHint(id);
    const entry = store().pending[id];
    if (!entry || entry.late) return;
    entry.late = true;
    const seconds = store().config.timeout || 30;
    // With no badge at all, the browser is not running userscripts (Chrome 138+ asks for
    // "Allow User Scripts" on the manager's details page): a companion already running is
    // then not the problem.
    const relay = 'Start the relay: run <code>mindscape serve</code> on this computer and keep this Roll20 tab open '
      + 'with the Mindscape Bridge userscript enabled (its badge must say connected; no badge at all: turn on '
      + '<i>Allow User Scripts</i> for your userscript manager in <code>chrome://extensions</code>, or Developer mode before Chrome 138)';
    if (entry.kind === CHECK_KIND) return checkUnanswered(id, entry, seconds, relay);
    // A changing call may have reached the companion and only its answer be missing:
    // repeating it blindly could add, declare, resolve or undo twice.
    // A create has no encounter here yet for status to show (it would say "no current
    // encounter"): what its late answer does is what helps.
    const next = entry.kind === 'encounter.create' ? `. ${CREATE_LATE}`
      : CHANGING_KINDS.includes(entry.kind)
        ? '. The companion may have done it all the same: run <code>!psi encounter status</code> to see where the encounter stands before you repeat anything.'
        : ', then repeat the command.';
    // A relay that was only slow may still deliver: that answer is applied then.
    // An exchange, a round's end or a rest repeated as well as answered late is applied
    // twice, two cards. A rest, or a round's end that asks nothing first, reads the sheets
    // when typed, so both are computed from the same sheets, which end a mix of the two
    // (the newer request's value stands where both wrote one: rememberWrites). An attack
    // reads them once its defense is chosen, a round's end that asks a question first once
    // the companion's answer to it comes or, where someone may choose, the GM chooses: a
    // late answer that came before then has written them, and the repeat counts again
    // (PSPs paid twice).
    const again = { exchange: 'repeat the attack', round: 'end the round again', rest: 'run the rest again' }[entry.kind];
    const late = entry.kind === 'encounter.create' ? '' : ' Should its answer still arrive (within the hour), it is applied and you are told so'
      + (again ? `: if the badge shows the bridge relayed this request, wait for it rather than ${again}.` : '.');
    // The question before a round's end is new: a bridge userscript older than it does
    // not relay it, and repeating the command would only time out again.
    const without = entry.system === 'power-pool'
      ? '<code>!psi round --keep-all</code> (or name the changes: <code>--release TOKEN</code>, <code>--keep TOKEN --by die</code>, <code>--cannot-perceive TOKEN</code>)'
      : '<code>!psi round --pay-none</code> (or <code>--close TOKEN</code>)';
    const question = entry.kind === 'round-choices'
      ? ` To end the round without the question, run ${without}. `
        + 'A Mindscape Bridge userscript older than this script does not relay the question: update it.'
      : entry.kind === 'house' ? ' A Mindscape Bridge userscript older than this script does not relay <code>!psi house</code>: update it. '
        + 'A late answer only shows the house rules: any change it carried is not made.' : '';
    whisperGM(box('no answer', `Request <b>${id}</b> got no answer from the companion in ${seconds} s. ${relay}${next}${late}${question}${refreshStopped(entry.run)}`));
    if (entry.requester && !playerIsGM(entry.requester)) {
      tell(entry.requester, 'no answer', 'The companion did not answer in time; the GM has been told.');
    }
  };

  // A check of an attack (checkTheAttacker) that got no answer in time: the defenders are
  // asked all the same. A bridge that is down fails the exchange itself as surely (its
  // resolve gets no answer either, and the GM is told then), and one that was only slow
  // must not cost the attack: the check only spares a defender a choice made for nothing,
  // it is no rule of the game. Its answer, should it still come, changes nothing
  // (checkAnswered), so the defenders are never asked twice.
  const checkUnanswered = (id, entry, seconds, relay) => {
    entry.wentOn = true;
    // An attack called off meanwhile (a fighter deleted) asks nobody: askDefenders says why.
    const goesOn = !withoutGone(entry.exchange).off;
    whisperGM(box('no answer', `Request <b>${id}</b> (${chatSafe(entry.description)}) got no answer from the companion in ${seconds} s`
      + `${goesOn ? `, so the defense is asked without it. ${relay}, or the exchange gets no answer either.` : `. ${relay}.`}`));
    return askDefenders(entry.exchange, entry.requester);
  };

  // ------------------------------------------------------------ !psi attack

  // `key` is the option that names the attack mode: --mode in !psi attack and odds,
  // --attack in an encounter's declaration (--attack2 for revised-2e's second attack of a
  // round, whose --mult2 and --range2 are read with `suffix` '2').
  const attackFromOptions = (args, system, key = 'mode', suffix = '') => {
    const modes = SYSTEMS[system];
    const mode = normaliseMode(args.get(key));
    if (!modes.attacks.includes(mode)) {
      return { error: `--${key} must be one of ${modes.attacks.join(', ')} for ${system} (got "${echo(args.get(key))}").` };
    }
    const attack = { mode };
    const multKey = `mult${suffix}`;
    const rangeKey = `range${suffix}`;
    // Each system's attack object has its own fields (API.md): refuse the others here
    // with a plain message rather than a schema error from the companion.
    if (args.has(multKey) && system !== 'revised-2e') return { error: `--${multKey} is a revised-2e option.` };
    if (args.has('dice') && system !== 'power-pool') return { error: '--dice is a power-pool option.' };
    if (args.has('keep-by') && system !== 'power-pool') return { error: '--keep-by is a power-pool option.' };
    if (args.has(multKey)) {
      const mult = wholeNumber(args.get(multKey));
      if (mult === null || mult < 1) return { error: `--${multKey} must be a whole number of 1 or more.` };
      attack.multiplier = mult;
    } else if (system === 'revised-2e') {
      attack.multiplier = 1;
    }
    if (args.has(rangeKey)) {
      const range = String(args.get(rangeKey)).toLowerCase();
      if (!modes.ranges.includes(range)) return { error: `--${rangeKey} must be one of ${modes.ranges.join(', ') || '(none in this system)'}.` };
      attack.range = range;
    }
    if (args.has('dice')) {
      const dice = wholeNumber(args.get('dice'));
      if (dice === null || dice > MAX_POOL_DICE) return { error: `--dice must be a whole number of pool dice from 0 to ${MAX_POOL_DICE}.` };
      attack.pool_dice = dice;
    }
    // power-pool: how control is kept if the attack wins (the companion's default: action).
    if (args.has('keep-by')) {
      const by = String(args.get('keep-by')).trim().toLowerCase();
      if (!['die', 'action'].includes(by)) return { error: '--keep-by must be die (a pool die kept for the control) or action (an action each round).' };
      attack.keep_by = by;
    }
    // power-pool: an effect the attacker chooses not to use (seed 001: Subconscious
    // Subversion "may" frighten); which mode has one is the companion's to judge.
    if (args.has('decline')) {
      if (system !== 'power-pool') return { error: '--decline is a power-pool option.' };
      const effects = args.all('decline').map((text) => String(text).trim().toLowerCase());
      if (effects.some((e) => !/^[a-z][a-z-]*$/.test(e))) return { error: '--decline names an effect to spare, such as --decline frightened.' };
      attack.decline = Array.from(new Set(effects));
    }
    return { attack };
  };

  // `key` is the option that names the defense: --mode for !psi defend, --defense elsewhere.
  // Only the word none is no defense: the option left out, empty or holding no letter is
  // refused, so that a button cut short or a typo never becomes "No defense" (`absentIsNone`:
  // odds asked without --defense are the chances against no defense).
  // No defense mode is null, but power-pool's pool dice and spells sacrificed still go
  // with it (a mind with no mode still rolls its pool): then an object without a mode.
  const defenseFromOptions = (args, system, key, absentIsNone = false) => {
    const modes = SYSTEMS[system].defenses;
    if (!args.has(key) && !absentIsNone) return { error: `--${key} is missing: name the defense, one of ${modes.join(', ')}, or none for no defense.` };
    const text = args.has(key) ? normaliseMode(args.get(key)) : 'none';
    const none = text === 'none';
    if (!none && !modes.includes(text)) {
      return { error: `--${key} must be one of ${modes.join(', ')}, or none for no defense (got "${echo(args.get(key))}").` };
    }
    const defense = none ? {} : { mode: text };
    // In !psi defend --dice is the defender's; where the attacker's --dice may stand
    // beside it (attack, odds, declare) the defender's pool dice are --defense-dice.
    const diceKey = key === 'mode' ? 'dice' : 'defense-dice';
    if ((args.has('sacrifice') || args.has(diceKey)) && system !== 'power-pool') {
      return { error: `--sacrifice and --${diceKey} are power-pool options.` };
    }
    if (args.has('sacrifice')) {
      // Spell levels given up: "3" is one 3rd-level spell, "3,1" two spells.
      const levels = String(args.get('sacrifice')).split(',').map(wholeNumber);
      if (!levels.every((n) => n !== null && n >= 1 && n <= 9)) {
        return { error: '--sacrifice wants spell levels 1-9, separated by commas.' };
      }
      defense.sacrifice = levels.length === 1 ? levels[0] : levels;
    }
    if (args.has(diceKey)) {
      const dice = wholeNumber(args.get(diceKey));
      if (dice === null || dice > MAX_POOL_DICE) return { error: `--${diceKey} must be a whole number of pool dice from 0 to ${MAX_POOL_DICE}.` };
      defense.pool_dice = dice;
    }
    return { defense: Object.keys(defense).length ? defense : null };
  };

  // What the one choosing a defense is told it chose, with the creatures that joined it.
  const defenseText = (defense, allies = [], joined = []) => (defense && defense.mode ? label(defense.mode) : 'No defense')
    + (allies.length ? `, drawing in ${allies.map(fighterName).map(chatSafe).join(', ')}` : '')
    + (joined.length ? `; joined by ${joined.map((j) => fighterName(j.ref)).map(chatSafe).join(', ')}` : '');

  const ALLY_WITHOUT_DEFENSE = '--ally goes with --defense imagination-swarm, which settles the defense at once '
    + '(without --defense the defender\'s controllers name the allies when they choose the defense). Nothing was sent.';

  // Why `attacker` cannot strike `targets` in `system`, or null: the same for an attack,
  // odds and an encounter's declaration (there the combatant ids of the encounter).
  const targetsProblem = (system, attacker, targets) => {
    if (targets.includes(attacker)) return 'a mind cannot attack itself.';
    if (new Set(targets).size !== targets.length) return 'name each --target once.';
    if (targets.length > 1 && system !== 'power-pool') return `${system} attacks one --target at a time (only power-pool's psionic wave strikes several).`;
    return null;
  };

  // The two sides of an attack or odds question: the selected token attacks the target.
  const sides = (msg, args) => {
    const attackers = selectedFighters(msg);
    if (attackers.length !== 1) return { error: 'select exactly one token that represents the attacking character.' };
    const attacker = attackers[0];
    if (!mayControl(msg.playerid, attacker)) return { error: `you do not control ${chatSafe(fighterName(attacker))}.` };
    // power-pool: a psionic wave names several --target (the first is struck first).
    const targets = args.all('target').map(resolveFighter);
    if (!targets.length || targets.some((t) => !t)) return { error: '--target must name a token that represents a character (use @{target|token_id}).' };
    const system = systemOf(attacker);
    const wrong = targetsProblem(system, attacker, targets);
    if (wrong) return { error: wrong };
    const other = targets.find((t) => systemOf(t) !== system);
    if (other) {
      return { error: `${chatSafe(fighterName(attacker))} uses ${system} but ${chatSafe(fighterName(other))} uses ${systemOf(other)}; configure both alike with !psi config.` };
    }
    return { attacker, defender: targets[0], targets, system };
  };

  // ------------------------------------------ power-pool: psionic control (§3.4)

  // The value a fighter's sheet keeps for a combatant field that the companion's adapters
  // keep in a psi_* attribute (or in the attribute a generic mapping names for it), read
  // as the companion reads it (storedField: a psi_* attribute giving a value wins);
  // undefined when there is none.
  // A fighter deleted meanwhile keeps nothing: it controls nobody and nobody controls it.
  const sheetState = (ref, field) => (fighterCharacter(ref) ? storedField(combatantOf(ref), field) : undefined);

  // power-pool control as the companion wrote it on the sheets: the ref of a fighter's
  // controller (psi_controlled_by), or null.
  const controllerOf = (ref) => {
    const value = sheetState(ref, 'controlled_by');
    return filled(value) ? strip(value) : null;
  };

  // The entries of a fighter's psi_controlling ([{id, kept_by, wave}]) that name a
  // creature; none when the attribute is empty or not JSON.
  const controlEntries = (ref) => {
    let entries;
    try {
      entries = JSON.parse(String(sheetState(ref, 'controlling') || '[]'));
    } catch (err) {
      return [];
    }
    return Array.isArray(entries) ? entries.filter((entry) => isObject(entry) && typeof entry.id === 'string') : [];
  };

  // The refs of the creatures a fighter controls.
  const puppetsOf = (ref) => controlEntries(ref).map((entry) => entry.id);

  // The creatures `fighters` hold by an action (a psionic wave's all), as their sheets
  // say or as a round's `choices` keep them from now on: a controller that spends no
  // action (seed 001: a resting one, or one that cannot act at the round's end) loses
  // them, and only the companion judges which of them that is.
  const heldByAction = (fighters, choices = {}) => fighters.flatMap((ref) => {
    const switched = ((choices[ref] || {}).keep || []).filter((k) => k.by === 'action').map((k) => k.target);
    return controlLinks(ref)
      .filter((link) => link.kept_by === 'action' || link.targets.some((t) => switched.includes(t)))
      .flatMap((link) => link.targets);
  });

  // The creatures of `refs` that can go along with `fighters` as `puppets`: once each,
  // none of the fighters, and only those whose character or token is here (for one that
  // is not, the companion's summary says its sheet still shows the control).
  const puppetsHere = (refs, fighters) => Array.from(new Set(refs))
    .filter((ref) => !fighters.includes(ref) && fighterCharacter(ref));

  // The most puppets the companion takes in a round's end or a rest (its schema's maxItems,
  // engine/system.py MAX_ROUND_COMBATANTS): one more and it refuses the whole request.
  // Fixed in its schema, unlike MAX_ROUND_FIGHTERS (its max_combatants setting).
  const MAX_PUPPETS = 64;

  // The puppets a round's end or a rest sends: puppetsHere of `refs` (most needed first),
  // none the companion refused before (`refused`: sendWithoutPuppets), and at most
  // MAX_PUPPETS. One left out is safe: the companion still ends the control the rules
  // end, and its summary says that the puppet's sheet still shows it.
  const puppetsToSend = (refs, fighters, refused = []) => puppetsHere(refs, fighters)
    .filter((ref) => !refused.includes(ref)).slice(0, MAX_PUPPETS);

  // Puts `puppets` in the request's `params`, and where each was sent in `paths` (for the
  // companion's sheet warnings); returns `paths`.
  const sendPuppets = (params, paths, puppets) => {
    if (puppets.length) params.puppets = puppets.map(combatantOf);
    puppets.forEach((ref, i) => { paths[`/puppets/${i}`] = ref; });
    return paths;
  };

  // A fighter's control links as the companion counts them (RULES.md §3.4: a psionic
  // wave's creatures are one link, kept one way and released together): [{targets: [id],
  // kept_by, wave}], in the order taken.
  const controlLinks = (ref) => {
    const found = new Map();
    controlEntries(ref).forEach((entry) => {
      const key = entry.wave ? `wave:${entry.wave}` : `id:${entry.id}`;
      if (!found.has(key)) found.set(key, { targets: [], kept_by: entry.kept_by, wave: entry.wave || null });
      found.get(key).targets.push(entry.id);
    });
    return Array.from(found.values());
  };

  // Who answers an attack on `defender` (power-pool, seed 001: "Psionically attacking a
  // creature under psionic control automatically attacks the controller"): its
  // controller, or null when it answers for itself. What the rules then say (an attack on
  // one's own puppet, a controller itself controlled) is the companion's to judge.
  const struckFor = (system, defender) => (system === 'power-pool' ? controllerOf(defender) : null);

  // power-pool: the creatures a defense that draws allies in (imagination-swarm) brings
  // into the defending group, from the --ally options (token or character ids), or
  // {error} naming the creature. `key` is the option naming the defense (--mode in !psi
  // defend, --defense elsewhere). Refused here, before anything is sent: the attacker,
  // a creature the attack strikes already (a target, or a controller in its puppet's
  // place), one named twice, one of another system and one under psionic control (the
  // companion's ally-controlled). Whether the others may join is the companion's to judge:
  // a defender draws in non-psionic creatures only (seed 001), and which creature counts
  // as psionic is its adapter's reading of the sheet, so a psionic one (ally-psionic) or a
  // mindless one is refused there, and the attack waits for another choice (chooseAgain).
  // `chooser` (a player id; the GM when left out) is told which named creature joined by
  // its own choice only where it may know of it (mayKnowJoiner). Else a creature that
  // joined and one that could (it knows a defense by which a psionic creature joins) are
  // refused here in the same words, that it is psionic, or the refusal would tell the
  // attacking player who joined; the GM is told why (`member`: the mind whose defense it
  // chooses).
  const alliesFromOptions = (args, exchange, defense, key, chooser, member) => {
    const named = args.all('ally');
    if (!named.length) return { allies: [] };
    const { system } = exchange;
    const wrongDefense = allyDefenseProblem(system, defense, key);
    if (wrongDefense) return { error: wrongDefense };
    const allies = named.map(resolveFighter);
    if (allies.some((ref) => !ref)) return { error: '--ally must name a token that represents a character (use &#64;&#123;target&#124;token_id&#125;). Nothing was sent.' };
    const targets = exchange.targets || [exchange.defender];
    const struck = new Set(targets.concat(targets.map((t) => struckFor(system, t)).filter(Boolean)));
    const joined = (ref) => joinedRefs(exchange).includes(ref);
    const mayJoin = (ref) => joined(ref) || (SYSTEMS[system].swarms || []).some((mode) => knownDefenses(ref, system).includes(mode));
    const secret = chooser ? allies.find((ref) => ref !== exchange.attacker && !struck.has(ref) && mayJoin(ref) && !mayKnowJoiner(exchange, chooser, ref)) : null;
    if (secret) {
      const name = chatSafe(fighterName(secret));
      if (joined(secret)) {
        whisperGM(box('ally refused', `${name} has joined this defense by its own choice already, so it cannot be drawn in as an ally; the player choosing the defense of `
          + `${chatSafe(fighterName(member))} was told only that it is psionic (who joined stays secret from the attacking player until the card).`));
      }
      return { error: `${name} is psionic, and a psionic creature joins a defense by its own choice: it cannot be drawn into the defense as an ally. Nothing was sent.` };
    }
    const error = alliesProblem(allies, (ref) => {
      if (ref === exchange.attacker) return 'makes this attack';
      if (struck.has(ref)) return 'is struck by this attack already';
      if (joinedRefs(exchange).includes(ref)) return 'has joined this defense by its own choice already';
      if (systemOf(ref) !== system) return `uses ${systemOf(ref)}, not ${system}`;
      if (controllerOf(ref)) return `is under the psionic control of ${chatSafe(fighterName(controllerOf(ref)))}`;
      return null;
    });
    return error ? { error } : { allies };
  };

  // Why --ally cannot go with `defense` in `system` (`key`: the option naming the defense),
  // or null: only a defense that draws allies in (imagination-swarm) takes them.
  const allyDefenseProblem = (system, defense, key) => {
    const swarms = SYSTEMS[system].swarms || [];
    if (!swarms.length) return '--ally is a power-pool option.';
    if (defense && swarms.includes(defense.mode)) return null;
    return `--ally goes with --${key} ${swarms.join(' or ')}: only ${swarms.map(label).join(' or ')} draws allies into the defense, `
      + `not ${defense && defense.mode ? label(defense.mode) : 'no defense'}. Nothing was sent.`;
  };

  // The first of the allies `refs` that cannot be drawn in, as a refusal naming it: one
  // named twice, or one `whyOf(ref)` gives a reason for. Null when each may go.
  const alliesProblem = (refs, whyOf) => {
    for (const [i, ref] of refs.entries()) {
      const why = refs.indexOf(ref) < i ? 'is named twice' : whyOf(ref);
      if (why) return `${chatSafe(fighterName(ref))} ${why}: it cannot be drawn into the defense as an ally. Nothing was sent.`;
    }
    return null;
  };

  // The line under the defense buttons that says how to draw allies in: a button cannot
  // pick tokens, so it shows the command to type (Roll20 asks for the token when a typed
  // command holds @{target|...}). Empty when the chooser knows no defense that draws allies.
  // Seed 001: "The defender may choose draw allied non-psionic creatures into the psionic
  // combat"; a psionic creature joins by its own choice (joinHint, commandJoin).
  const allyHint = (system, chooser, command) => {
    const swarm = (SYSTEMS[system].swarms || []).find((mode) => knownDefenses(chooser, system).includes(mode));
    if (!swarm) return '';
    return `<br>${label(swarm)} may draw allied non-psionic creatures into the defense: type <code>${command} --mode ${swarm} --ally &#64;&#123;target&#124;Ally&#124;token_id&#125;</code> `
      + '(for each further ally add <code>--ally &#64;&#123;target&#124;Ally 2&#124;token_id&#125;</code> and so on). '
      + 'Each adds a die (its whole pool under the house rule H-PP-GROUP all-dice) and is dazed, and falls with the group. A psionic creature is not drawn in: it joins by its own choice.';
  };

  // power-pool: the creatures that joined a defense by their own choice (commandJoin), as
  // [{ref, mode}], and their refs.
  const joinedOf = (exchange) => (Array.isArray(exchange.joined) ? exchange.joined : []);
  const joinedRefs = (exchange) => joinedOf(exchange).map((j) => j.ref);

  // Whether `playerid` may learn that the creature `ref` joined (or left) the defense
  // against `exchange`: who joins is the defending side's secret until the card. Any
  // player but the attacking one may (it is told only as one of that side: joinAudience);
  // the attacking player where it chooses for the creature itself (answerersOf), or, in a
  // single attack, where it chooses the defense (its own mind attacked: it knows both
  // sides). Not for choosing a struck mind's defense in a psionic wave: a wave may strike
  // the attacking player's own creature in range, and the group it defends with is the
  // others' too.
  const mayKnowJoiner = (exchange, playerid, ref) => playerIsGM(playerid) || playerid !== exchange.by
    || answerersOf(ref, exchange.by).includes(playerid)
    || (!Array.isArray(exchange.members) && answerersOf(exchange.struck || exchange.defender, exchange.by).includes(playerid));

  // The creatures that joined the defense against `exchange` that `reader` may learn of
  // (mayKnowJoiner): every one for the GM (a null reader).
  const joinedKnownTo = (exchange, reader) => joinedOf(exchange).filter((j) => reader === null || mayKnowJoiner(exchange, reader, j.ref));

  // The line under an attack's defense buttons that says how a psionic creature joins the
  // defense (seed 001: "Psionically active creatures may also use this defence mode to
  // participate in a psionic combat that is targeting an ally they can see"): its own
  // choice, so it is its controller's command, not the defender's. The players of other
  // creatures do not see this whisper: the GM (or the defender's player) passes it on.
  // Empty outside power-pool. It names the creatures that joined so far that `reader` may
  // learn of (joinedKnownTo; null: the GM).
  const joinHint = (xid, exchange, reader) => {
    const swarm = (SYSTEMS[exchange.system].swarms || [])[0];
    if (!swarm) return '';
    const wave = Array.isArray(exchange.members);
    const seen = wave ? 'a mind this wave strikes' : chatSafe(fighterName(exchange.defender));
    const group = wave ? ` (it joins the group of ${chatSafe(fighterName(exchange.members[0]))}, struck first)` : '';
    const joined = joinedKnownTo(exchange, reader).map((j) => j.ref);
    return `<br>A psionic creature that can see ${seen} may join the defense by its own choice, with ${label(swarm)}${group}: `
      + `its controller or the GM selects its token and sends [Join the defense](!psi join --req ${xid}) (<code>!psi join --req ${xid}</code>) `
      + `before the defense is chosen.${joined.length ? ` Joined: ${joined.map(fighterName).map(chatSafe).join(', ')}.` : ''}`;
  };

  // An exchange's params and the fighters it involves (whose sheets its answer may
  // write). power-pool: the controller a controlled defender's attack strikes, and every
  // creature a participant controls (control may end, and their sheets with it).
  const exchangeRequest = (exchange, defense, defenses = {}) => {
    const targets = exchange.targets || [exchange.defender];
    const params = {
      system: exchange.system,
      attacker: combatantOf(exchange.attacker),
      defender: combatantOf(targets[0]),
      attack: exchange.attack,
      defense,
    };
    const involved = [exchange.attacker, ...targets];
    // Where each fighter beyond the two sides was sent, for the companion's warnings.
    const paths = {};
    const missing = [];
    if (targets.length > 1) {
      params.defenders = targets.slice(1).map(combatantOf);
      targets.slice(1).forEach((ref, i) => { paths[`/defenders/${i}`] = ref; });
    }
    // power-pool: the allies an imagination swarm draws in defend and fall with the group,
    // so their sheets are written too (and their own puppets go along, below); so do the
    // psionic creatures that joined by their own choice, each with its own defense.
    const joined = joinedOf(exchange);
    const allies = (exchange.allies || []).concat(joined.map((j) => j.ref));
    if (allies.length) {
      params.allies = allies.map(combatantOf);
      allies.forEach((ref, i) => { paths[`/allies/${i}`] = ref; });
      involved.push(...allies);
    }
    // The controllers the attack strikes in their puppets' place, also one that is itself a
    // target (the companion finds a controller among these only); never the attacker.
    const controllers = Array.from(new Set(targets.map((t) => struckFor(exchange.system, t))))
      .filter((ref) => ref && ref !== exchange.attacker && fighterCharacter(ref));
    if (controllers.length === 1) {
      params.controller = combatantOf(controllers[0]);
      paths['/controller'] = controllers[0];
    } else if (controllers.length > 1) {
      params.controllers = controllers.map(combatantOf);
      controllers.forEach((ref, i) => { paths[`/controllers/${i}`] = ref; });
    }
    involved.push(...controllers.filter((ref) => !involved.includes(ref)));
    const allDefenses = Object.assign({}, defenses, Object.fromEntries(joined.map((j) => [j.ref, { mode: j.mode }])));
    if (Object.keys(allDefenses).length) params.defenses = allDefenses;
    if (exchange.system === 'power-pool') {
      const named = Array.from(new Set(involved.flatMap(puppetsOf))).filter((ref) => !involved.includes(ref));
      const puppets = named.filter((ref) => fighterCharacter(ref));
      missing.push(...named.filter((ref) => !fighterCharacter(ref)));
      sendPuppets(params, paths, puppets);
      involved.push(...puppets);
    }
    return { params: withHouse(exchange.system, params), involved, paths, missing };
  };

  // Why an attack on a controlled creature cannot go to the companion: its controller is
  // not here. Null when nothing stops it.
  const strikeProblem = (system, defender) => {
    const struck = struckFor(system, defender);
    if (!struck) return null;
    const ref = resolveFighter(struck);
    if (ref && ref === struck) return null;
    // Where the sheet keeps it: psi_controlled_by, or the attribute a generic mapping names.
    const attr = chatSafe(storedSource(combatantOf(defender), 'controlled_by').name);
    // The companion knows each fighter by its ref only (a linked token's is its character's).
    if (ref) {
      return `${chatSafe(fighterName(defender))}'s ${attr} names its controller ${chatSafe(fighterName(ref))} as "${chatSafe(struck)}", `
        + `but the companion knows that fighter as "${chatSafe(ref)}": put that in ${attr}. Nothing was sent.`;
    }
    return `${chatSafe(fighterName(defender))} is under the psionic control of "${chatSafe(struck)}", which is no character or token here: `
      + `an attack on it strikes its controller (power-pool). Put the controller's ref right in its ${attr}, or clear it. Nothing was sent.`;
  };

  // Keeps an attack waiting for a defense, under a new id: its buttons work once (the
  // exchange is taken out of the store when a defense is chosen) and for an hour from the
  // attack (pruneExchanges).
  const waitForDefense = (exchange) => {
    const xid = newId();
    pruneExchanges(Date.now());
    store().exchanges[xid] = exchange;
    return xid;
  };

  // What the mind choosing a defense against the attack waiting as `xid` clicks: a button
  // per defense it knows (as the companion reads them: knownDefenses) and No defense
  // (`--for` it in a psionic wave) and, for the mind that leads the defending group, how to
  // draw allies in. A mind that knows none is told so, for the GM to put its sheet right.
  const defenseButtons = (xid, exchange, chooser) => {
    const wave = Array.isArray(exchange.members);
    const command = `!psi defend --req ${xid}${wave ? ` --for ${chooser}` : ''}`;
    const modes = knownDefenses(chooser, exchange.system);
    const buttons = modes
      .map((mode) => `[${label(mode)}](${command} --mode ${mode})`)
      .concat([`[No defense](${command} --mode none)`]).join(' ')
      + (modes.length ? '' : `<br>The companion knows no defense mode of ${chatSafe(fighterName(chooser))} (the help handout says where it reads them): No defense only.`);
    // The mind struck first leads the group: only its defense draws allies in (as in an
    // encounter, whose exchange takes the allies of that mind's defense only).
    const leads = !wave || chooser === exchange.members[0];
    return `${buttons}${leads ? allyHint(exchange.system, chooser, command) : ''}`;
  };

  // Whispers `textFor(reader)` to the players who choose a mind's defense against an
  // attack player `by` made (answerersOf) and the GM (who always sees a secret choice;
  // reader null).
  const whisperSide = (ref, textFor, by) => {
    answerersOf(ref, by).forEach((pid) => whisperPlayer(pid, textFor(pid)));
    whisperGM(textFor(null));
  };

  // The prompt (with its buttons) of the mind `chooser` asked for its defense against the
  // attack waiting as `xid`: in a single attack the defender, or the controller that
  // answers in its place; in a psionic wave each mind it strikes. As `reader` (a player
  // id; null: the GM) reads it (joinHint).
  const defensePrompt = (xid, exchange, chooser, reader) => {
    const attacker = chatSafe(fighterName(exchange.attacker));
    if (Array.isArray(exchange.members)) {
      const names = exchange.targets.map(fighterName).map(chatSafe).join(', ');
      return box('defend!', `${attacker} strikes the minds of <b>${names}</b> at once. `
        + `<b>${chatSafe(fighterName(chooser))}</b>, choose a defense:<br>${defenseButtons(xid, exchange, chooser)}${joinHint(xid, exchange, reader)}`);
    }
    const { struck, defender } = exchange;
    const target = struck
      ? `<b>${chatSafe(fighterName(defender))}</b>, whom <b>${chatSafe(fighterName(struck))}</b> controls: the attack strikes `
        + `${chatSafe(fighterName(struck))}, who chooses the defense`
      : `<b>${chatSafe(fighterName(defender))}</b>. Choose a defense`;
    return box('defend!', `${attacker} attacks the mind of ${target}:<br>${defenseButtons(xid, exchange, chooser)}${joinHint(xid, exchange, reader)}`);
  };

  // Asks for the defense against a single attack waiting as `xid` (a controlled defender's
  // controller chooses in its place).
  const askSingle = (xid, exchange) => {
    const chooser = exchange.struck || exchange.defender;
    whisperSide(chooser, (reader) => defensePrompt(xid, exchange, chooser, reader), exchange.by);
  };

  // Asks every mind a psionic wave waiting as `xid` strikes for its defense.
  const askWave = (xid, exchange) => {
    exchange.members.forEach((member) => whisperSide(member, (reader) => defensePrompt(xid, exchange, member, reader), exchange.by));
  };

  // `requester` made the attack; `chooser` picked the defense (the same player when the
  // attacker also controls the defender). The job keeps the exchange, so that a defense
  // the companion refuses can be chosen again (chooseAgain). `told` learn only that it
  // failed, should it fail: a wave's choosers, and the players of creatures that joined.
  // `before` as for postRequest: what the caller changes only once the exchange goes out.
  const resolveExchange = (exchange, defense, requester, chooser, defenses = {}, told = [], before) => {
    const { params, involved, paths, missing } = exchangeRequest(exchange, defense, defenses);
    const joiners = joinedRefs(exchange).flatMap(controllersOf).filter((pid) => !playerIsGM(pid));
    const id = newId();
    return postRequest(rpcBody(id, 'exchange.resolve', params), {
      kind: 'exchange',
      requester,
      chooser,
      told: Array.from(new Set(told.concat(joiners))),
      involved,
      paths,
      exchange,
      title: `${label(exchange.attack.mode)}: ${fighterName(exchange.attacker)} vs. ${(exchange.targets || [exchange.defender]).map(fighterName).join(', ')}`,
    }, `${label(exchange.attack.mode)} by ${fighterName(exchange.attacker)} against ${(exchange.targets || [exchange.defender]).map(fighterName).join(', ')}`, () => {
      if (before) before();
      // A puppet that is no fighter here cannot be sent: its sheet will not follow.
      if (missing.length) {
        whisperGM(box('psionic control', `Under psionic control in this exchange but no character or token here: ${missing.map(chatSafe).join(', ')}. `
          + 'If the control ends, their sheets will not show it.'));
      }
    });
  };

  // The minds asked for a defense against `exchange`: a wave's members, else the defender
  // (or its controller in its place).
  const asked = (exchange) => (Array.isArray(exchange.members) ? exchange.members : [exchange.struck || exchange.defender]);

  // Asks for the defense against an attack the companion's check let through (or could not
  // judge): the buttons go to the minds struck, secretly, and the attacker waits. This
  // comes a while after the attack (the check's answer, or its timeout), so a fighter may
  // have been deleted meanwhile: the attack goes on without it, or is called off
  // (withoutGone).
  const askDefenders = (given, requester) => {
    const settled = withoutGone(given);
    if (settled.off) return callOff(given, settled.off, { requester });
    const { exchange } = settled;
    if (settled.gone.length) reportLeftOut(given, settled);
    const xid = waitForDefense(exchange);
    if (Array.isArray(exchange.members)) askWave(xid, exchange);
    else askSingle(xid, exchange);
    return tell(requester, 'attack declared', `Waiting for ${asked(exchange).map(fighterName).map(chatSafe).join(', ')} to choose a defense.`, TRANSIENT);
  };

  // ------------------------------------------ fighters deleted while an attack waits

  // An attack waits a while (for its check, then for its defense), and the GM may delete a
  // token or a character meanwhile (a dead monster taken off the map). Every step that
  // takes a waiting attack up again first takes the fighters gone out of it: building a
  // request for a fighter that is gone would throw, and an error thrown outside a command
  // (from a timeout) stops the whole Mod sandbox.

  // The names of an attack's fighters when it was made, kept with it: one deleted since
  // is still named in words (fighterName has only its id then).
  const withNames = (exchange, refs) => {
    const names = isObject(exchange.names) ? exchange.names : {};
    refs.filter(Boolean).forEach((ref) => { names[ref] = fighterName(ref); });
    exchange.names = names;
    return exchange;
  };

  const nameIn = (exchange, ref) => (isObject(exchange.names) && exchange.names[ref]) || fighterName(ref);

  // Whether a fighter is gone: its character deleted, or the unlinked token that fights as
  // itself. `destroyed` is the id of an object whose deletion is being handled, which
  // Roll20 may still return while it tells of it.
  const isGone = (ref, destroyed) => {
    const charId = fighterCharacter(ref);
    return !charId || (destroyed !== undefined && (ref === destroyed || charId === destroyed));
  };

  const GONE = 'no longer in the game (its token or character was deleted)';

  // An attack as a GM would have it once the fighters gone are taken out of it:
  // {exchange (a copy), gone (their refs), notes} or {off: why}. It is off when its
  // attacker is gone, or the one mind it strikes (a single attack's defender, or the
  // controller answering in its place), or every target of a psionic wave: there is no
  // exchange left to make. Otherwise it goes on without them: a wave without the targets
  // gone or whose answering mind is gone (a mind no longer struck drops its choice, and
  // the allies drawn in by a first mind that is dropped go with its choice), and without
  // allies or creatures that joined that are gone.
  const withoutGone = (given, destroyed) => {
    const gone = (ref) => isGone(ref, destroyed);
    const name = (ref) => chatSafe(nameIn(given, ref));
    if (gone(given.attacker)) return { off: `${name(given.attacker)}, the attacker, is ${GONE}` };
    const exchange = Object.assign({}, given);
    const lost = [];
    const notes = [];
    if (Array.isArray(given.members)) {
      // A target goes with the mind answering for it: itself, or its controller.
      const answering = (t) => struckFor(given.system, t) || t;
      const targets = given.targets.filter((t) => !gone(t) && !gone(answering(t)));
      given.targets.forEach((t) => [t, answering(t)].filter(gone).forEach((ref) => lost.push(ref)));
      if (!targets.length) return { off: `every mind it strikes (${Array.from(new Set(lost)).map(name).join(', ')}) is ${GONE}` };
      // The minds still struck once those targets are out; a control changed meanwhile
      // is defendWave's to find, as ever.
      const still = targets.length < given.targets.length ? choosersOf(given.system, given.attacker, targets) : given.members;
      const members = given.members.filter((m) => still.includes(m));
      if (!members.length) return { off: `none of the minds asked for a defense is still struck by it (${Array.from(new Set(lost)).map(name).join(', ')}: ${GONE})` };
      exchange.targets = targets;
      exchange.defender = targets[0];
      exchange.members = members;
      exchange.choices = Object.fromEntries(Object.keys(given.choices || {}).filter((m) => members.includes(m)).map((m) => [m, given.choices[m]]));
      if (members[0] !== given.members[0] && (given.allies || []).length) {
        notes.push(`The allies ${name(given.members[0])} drew in (${given.allies.map(name).join(', ')}) go with its choice: `
          + `${name(members[0])}, now struck first, leads the defending group.`);
        delete exchange.allies;
      }
    } else {
      const defender = [given.defender, given.struck].filter(Boolean).find(gone);
      if (defender === given.defender) return { off: `${name(defender)}, the mind attacked, is ${GONE}` };
      if (defender) return { off: `${name(defender)}, which controls ${name(given.defender)} and answers the attack in its place, is ${GONE}` };
    }
    if (exchange.allies) {
      lost.push(...exchange.allies.filter(gone));
      exchange.allies = exchange.allies.filter((ref) => !gone(ref));
    }
    lost.push(...joinedRefs(exchange).filter(gone));
    if (Array.isArray(exchange.joined)) exchange.joined = exchange.joined.filter((j) => !gone(j.ref));
    return { exchange, gone: Array.from(new Set(lost)), notes };
  };

  // "Ego Whip attack of Ulcen of Tyr on Fenka", or without the mode for the defending
  // side, who choose a defense without knowing it.
  const attackTitle = (exchange, withMode) => `${withMode ? `${label(exchange.attack.mode)} ` : ''}attack of `
    + `${chatSafe(nameIn(exchange, exchange.attacker))} on ${(exchange.targets || [exchange.defender]).map((t) => chatSafe(nameIn(exchange, t))).join(', ')}`;

  // Tells the GM who was left out of a waiting attack (withoutGone) and that it goes on.
  // Only the GM: the creatures that joined or were drawn in are the defending side's secret.
  const reportLeftOut = (given, settled) => {
    const { exchange } = settled;
    const wave = Array.isArray(exchange.members) ? ` against ${exchange.targets.map((t) => chatSafe(nameIn(exchange, t))).join(', ')}` : '';
    whisperGM(box('attack goes on', `Left out of the ${attackTitle(given, true)}, as ${GONE}: `
      + `${settled.gone.map((ref) => chatSafe(nameIn(given, ref))).join(', ')}. ${settled.notes.join(' ')} The attack goes on${wave}.`));
  };

  // Calls off an attack that cannot go on (withoutGone's `off`): the GM, the attacker's
  // player (`requester`) and, when the defense buttons were out already (`asked`), the
  // players of the minds asked that are still here learn why; so does `also`, who
  // clicked something of it. Nothing was sent to the companion, nothing is written.
  const callOff = (exchange, why, { requester, asked = false, also } = {}) => {
    const after = asked ? 'Its defense buttons do nothing now.' : 'Nobody was asked for a defense.';
    whisperGM(box('attack called off', `The ${attackTitle(exchange, true)} was called off: ${why}. ${after} Nothing was written to any sheet.`));
    const choosers = asked ? (Array.isArray(exchange.members) ? exchange.members : [exchange.struck || exchange.defender]) : [];
    const players = new Set([requester].concat(choosers.filter((ref) => fighterCharacter(ref)).flatMap(controllersOf), [also])
      .filter((pid) => pid && pid !== 'API' && !playerIsGM(pid)));
    players.forEach((pid) => tell(pid, 'attack called off', pid === requester
      ? `Your ${attackTitle(exchange, true)} was called off: ${why}. ${after}`
      : `The ${attackTitle(exchange, false)} was called off: ${why}. ${after}`));
    return undefined;
  };

  // Takes the fighters gone out of the attack waiting as `xid` (withoutGone) and keeps
  // what is left under the same id, so its buttons still work; `also` clicked something of
  // it. Returns the attack as it stands now, or null when it was called off (and
  // forgotten: its buttons answer that no attack waits).
  const settleWaiting = (xid, destroyed, also) => {
    const given = store().exchanges[xid];
    const settled = withoutGone(given, destroyed);
    if (settled.off) {
      delete store().exchanges[xid];
      callOff(given, settled.off, { requester: given.by, asked: true, also });
      return null;
    }
    if (!settled.gone.length) return given;
    store().exchanges[xid] = settled.exchange;
    reportLeftOut(given, settled);
    return settled.exchange;
  };

  // A fighter deleted while attacks wait for their defense: each goes on without it or is
  // called off at once, not when someone next clicks (a wave whose other minds have all
  // chosen would otherwise wait for a choice nobody can make: it is sent now).
  const fighterDeleted = (obj) => {
    const exchanges = store().exchanges;
    if (!obj || !Object.keys(exchanges).length) return;
    pruneExchanges(Date.now());
    Object.keys(exchanges).forEach((xid) => {
      const exchange = settleWaiting(xid, obj.id);
      if (exchange && Array.isArray(exchange.members) && exchange.members.every((m) => m in exchange.choices)) sendWave(xid, exchange);
    });
  };

  // What the GM reads of an attack being checked (the request's description, and the
  // requests in flight after a restart).
  const checkDescription = (exchange) => `check of ${label(exchange.attack.mode)} by ${fighterName(exchange.attacker)} against `
    + `${(exchange.targets || [exchange.defender]).map(fighterName).join(', ')}, before ${asked(exchange).map(fighterName).join(', ')} `
    + `${asked(exchange).length > 1 ? 'are' : 'is'} asked for a defense`;

  // An attack the attacker cannot make (too few PSPs, a multiplier above its level, a mode
  // it does not know, no psionic mind, pool dice beyond its pool, too little attack
  // strength) would have its defender choose for nothing, and learn that an attack was
  // coming. So before anyone is asked the attack goes to the companion as exchange.odds,
  // built as its exchange.resolve will be (exchangeRequest: every target of a wave, the
  // controllers struck, the puppets, the house rules) with no defense assumed. Its answer
  // (checkAnswered) asks the defenders, or tells the attacker's player why the attack
  // cannot be made; a check that gets no answer in time asks them all the same (expire).
  // The check is whispered to the GM only, as every request is: no defender sees it.
  const checkTheAttacker = (exchange, requester) => {
    const { params, involved, paths } = exchangeRequest(exchange, null);
    // Only whether the companion allows the attack matters here (and its sheet warnings):
    // least_chance 1 leaves every chance below certainty out of the answer's lists, so it
    // comes back in one chat part before the defender is asked (with no defense the
    // built-in systems' lists are short anyway: a few KB at most; a plugin's need not be).
    params.least_chance = 1;
    const id = newId();
    return postRequest(rpcBody(id, 'exchange.odds', params), {
      kind: CHECK_KIND,
      requester,
      // The exchange's fighters and where they were sent, so that a refusal names them
      // as the exchange's own would (refusalContext); the odds write no sheet.
      involved,
      paths,
      exchange,
      title: `${label(exchange.attack.mode)}: ${fighterName(exchange.attacker)} vs. ${(exchange.targets || [exchange.defender]).map(fighterName).join(', ')}`,
    }, checkDescription(exchange));
  };

  // Whether the companion refused an exchange (or its check) for the attacker's own sake,
  // which no defense mends and which its player may read, not the defender's: a rule about
  // the attacker (aboutTheAttacker), or params refused in the attacker's sheet or its
  // attack only.
  const refusesTheAttacker = (job, error) => {
    if (aboutTheAttacker(job, error)) return true;
    const errors = error.code === INVALID_PARAMS && isObject(error.data) && Array.isArray(error.data.errors) ? error.data.errors : [];
    return errors.length > 0 && errors.every((e) => isObject(e) && /^\/(attacker|attack)(\/|$)/.test(String(e.path)));
  };

  // The companion's answer to the check of an attack. Allowed: the defenders are asked.
  // Refused for the attacker's sake: nobody is asked, and the attacker's player (and the
  // GM) read why. Any other refusal may be about a defender (a mindless one, its sheet,
  // its state), which is that defender's secret and may not stop the exchange it will
  // choose for: the defenders are asked as if there had been no check, and the exchange's
  // own answer says what the companion makes of it. So is an answer the bridge could not
  // get (BRIDGE_UNCERTAIN, BRIDGE_REFUSED): exchange.odds changes nothing, so the resolve
  // simply tries again, and fails as it would have, should the bridge still be down. A
  // late answer (after the attack went on without it, or after a restart) does nothing.
  const checkAnswered = (job, answer) => {
    if (job.late) {
      const why = job.wentOn ? 'the defense was asked without it, when it got no answer in time' : 'the Mod sandbox restarted meanwhile, so the attack was not made';
      return whisperGM(box('late answer', `The answer to request <b>${chatSafe(job.id)}</b> (${chatSafe(job.description)}) came after ${why}: it changes nothing.`));
    }
    if (isObject(answer.result)) sheetWarnings(job, answer.result);
    const error = answer.error;
    if (!error) return askDefenders(job.exchange, job.requester);
    if (refusesTheAttacker(job, error)) {
      const refused = `Refused: ${titleOf(job)}`;
      const text = `${refusalReason(job, error)} The attack was not made: nobody was asked for a defense.`;
      whisperGM(box(refused, text + refusalNote(error)));
      if (job.requester && !playerIsGM(job.requester)) tell(job.requester, refused, text);
      return undefined;
    }
    const how = [BRIDGE_UNCERTAIN, BRIDGE_REFUSED].includes(error.code) ? 'The bridge could not get the companion\'s check of this attack'
      : 'The companion\'s check of this attack refused it for a reason not the attacker\'s own (it may be a defender\'s secret)';
    whisperGM(box(titleOf(job), `${how}: ${refusalReason(job, error)} The defense is asked all the same; the exchange's own answer will say what comes of it.${refusalNote(error)}`));
    return askDefenders(job.exchange, job.requester);
  };

  // Why several `targets` cannot go with the attack mode `mode` in `system`, or null.
  const severalProblem = (system, targets, mode) => {
    const waves = SYSTEMS[system].waves || [];
    if (targets.length < 2 || waves.includes(mode)) return null;
    return `${label(mode)} strikes one --target (only ${waves.map(label).join(', ') || 'a wave'} strikes several). Nothing was sent.`;
  };

  // The minds that choose a defense against an attack on `targets`: each target, or its
  // controller in its place (power-pool), once each, in the order of the targets; not an
  // attacker's own puppet (the companion refuses that attack by its rule).
  const choosersOf = (system, attacker, targets) => Array.from(new Set(targets.map((t) => struckFor(system, t) || t)))
    .filter((ref) => ref !== attacker);

  // power-pool: a psionic wave at several targets (`!psi attack --target A --target B`) is
  // one exchange; every mind it strikes (a controller in its puppet's place) chooses its own
  // defense with buttons of its own (`--for`), and the exchange goes to the companion once
  // all have chosen: the first as `defense`, the others as `defenses`. The companion
  // refuses several targets for a mode that strikes one.
  const declareWave = (msg, args, who, built) => {
    for (const t of who.targets) {
      const stopped = strikeProblem(who.system, t);
      if (stopped) return refuse(msg.playerid, stopped);
    }
    // The defense options (--defense, --defense-dice, --sacrifice) are each mind's own.
    const defenseOption = ['defense', 'defense-dice', 'sacrifice'].find((key) => args.has(key));
    if (defenseOption) return refuse(msg.playerid, `with several targets each mind struck chooses its own defense: leave out --${defenseOption}. Nothing was sent.`);
    const members = choosersOf(who.system, who.attacker, who.targets);
    const exchange = withNames({ system: who.system, attacker: who.attacker, defender: who.targets[0], targets: who.targets, attack: built.attack, members, choices: {}, by: msg.playerid, at: Date.now() },
      [who.attacker].concat(who.targets, members));
    // A wave at the attacker's own puppet: the companion says what the rules make of it,
    // before anyone is asked.
    if (!members.length || who.targets.some((t) => struckFor(who.system, t) === who.attacker)) return resolveExchange(exchange, null, msg.playerid, msg.playerid);
    return checkTheAttacker(exchange, msg.playerid);
  };

  // One mind's defense against a wave; the exchange goes once every mind has chosen.
  const defendWave = (msg, args, xid, exchange) => {
    const named = args.has('for') ? resolveFighter(args.get('for')) : (exchange.members.length === 1 ? exchange.members[0] : null);
    const member = exchange.members.find((ref) => ref === named);
    if (!member) return refuse(msg.playerid, `--for must name the mind whose defense this is: one of ${exchange.members.map(fighterName).map(chatSafe).join(', ')}.`);
    const barred = defendProblem(msg.playerid, member, exchange.by);
    if (barred) return refuse(msg.playerid, barred);
    if (member in exchange.choices) return refuse(msg.playerid, `${chatSafe(fighterName(member))} has chosen its defense already.`);
    const chosen = defenseFromOptions(args, exchange.system, 'mode');
    if (chosen.error) return refuse(msg.playerid, chosen.error);
    if (args.has('ally') && member !== exchange.members[0]) {
      return refuse(msg.playerid, `in a psionic wave only the mind struck first, ${chatSafe(fighterName(exchange.members[0]))}, draws allies into the group's defense. Nothing was sent.`);
    }
    const drawn = alliesFromOptions(args, exchange, chosen.defense, 'mode', msg.playerid, member);
    if (drawn.error) return refuse(msg.playerid, drawn.error);
    if (JSON.stringify(choosersOf(exchange.system, exchange.attacker, exchange.targets)) !== JSON.stringify(exchange.members)) {
      delete store().exchanges[xid];
      const why = 'the psionic control of a target changed since the attack was declared, so other minds answer it now. Nothing was sent: attack again.';
      if (exchange.by && exchange.by !== msg.playerid && !playerIsGM(exchange.by)) refuse(exchange.by, why);
      return refuse(msg.playerid, why);
    }
    // No defense mode is a defense without one: the pool is still rolled. The last choice
    // is kept only once the wave goes out (a request too long to go leaves it to choose).
    const next = Object.assign({}, exchange, { choices: Object.assign({}, exchange.choices, { [member]: chosen.defense || {} }) });
    if (drawn.allies.length) withNames(next, drawn.allies).allies = drawn.allies;
    const told = () => tell(msg.playerid, 'defense chosen',
      `${chatSafe(fighterName(member))}: ${defenseText(chosen.defense, drawn.allies, member === exchange.members[0] ? joinedKnownTo(exchange, msg.playerid) : [])}`, TRANSIENT);
    const left = next.members.filter((ref) => !(ref in next.choices));
    if (!left.length) return sendWave(xid, next, told);
    store().exchanges[xid] = next;
    told();
    return whisperGM(box('psionic wave', `Still to choose a defense: ${left.map(fighterName).map(chatSafe).join(', ')}.`));
  };

  // Sends the psionic wave waiting as `xid` once every mind it strikes has chosen: the
  // choice of the mind struck first as `defense`, the others' as `defenses`.
  // `before` as for postRequest.
  const sendWave = (xid, exchange, before) => {
    const [first, ...rest] = exchange.members;
    // A refusal's detail may be about any of the minds: the GM gets it, each chooser only
    // that the exchange failed.
    return resolveExchange(exchange, exchange.choices[first], exchange.by, null, Object.fromEntries(rest.map((ref) => [ref, exchange.choices[ref]])),
      Array.from(new Set(exchange.members.flatMap(controllersOf))).filter((pid) => !playerIsGM(pid)), () => {
        // Good once: should the companion refuse a defense, chooseAgain stores the wave anew.
        delete store().exchanges[xid];
        if (before) before();
      });
  };


  const commandAttack = (msg, args) => {
    const who = sides(msg, args);
    if (who.error) return refuse(msg.playerid, who.error);
    const built = attackFromOptions(args, who.system);
    if (built.error) return refuse(msg.playerid, built.error);
    const several = severalProblem(who.system, who.targets, built.attack.mode);
    if (several) return refuse(msg.playerid, several);
    if (args.has('ally') && !args.has('defense')) return refuse(msg.playerid, ALLY_WITHOUT_DEFENSE);
    if (who.targets.length > 1) return declareWave(msg, args, who, built);
    const stopped = strikeProblem(who.system, who.defender);
    if (stopped) return refuse(msg.playerid, stopped);
    // power-pool: the controller of a controlled defender answers in its place.
    const struck = struckFor(who.system, who.defender);
    const exchange = withNames({ system: who.system, attacker: who.attacker, defender: who.defender, attack: built.attack, by: msg.playerid, at: Date.now() },
      [who.attacker, who.defender, struck]);
    if (struck) exchange.struck = struck;
    // An attack on one's own puppet: the companion says what the rules make of it.
    if (struck === who.attacker) return resolveExchange(exchange, null, msg.playerid, msg.playerid);
    const chooser = struck || who.defender;
    // The defender's options settle its defense: they are not the attacker's to give.
    const defenseOnly = ['defense-dice', 'sacrifice'].find((key) => args.has(key) && !args.has('defense'));
    if (defenseOnly) return refuse(msg.playerid, `--${defenseOnly} goes with --defense (the defender's choice). Nothing was sent.`);
    if (args.has('defense') && defendProblem(msg.playerid, chooser, msg.playerid)) {
      const others = mayControl(msg.playerid, chooser) ? 'its other controllers' : 'its controllers';
      return refuse(msg.playerid, `--defense settles the defense of ${chatSafe(fighterName(chooser))}, which only ${others} or the GM choose: `
        + 'attack without it, and they choose in secret. Nothing was sent.');
    }
    // Whoever chooses the defender's defense (or the GM) may fix it at once.
    if (args.has('defense')) {
      const chosen = defenseFromOptions(args, who.system, 'defense');
      if (chosen.error) return refuse(msg.playerid, chosen.error);
      const drawn = alliesFromOptions(args, exchange, chosen.defense, 'defense');
      if (drawn.error) return refuse(msg.playerid, drawn.error);
      if (drawn.allies.length) exchange.allies = drawn.allies;
      return resolveExchange(exchange, chosen.defense, msg.playerid, msg.playerid);
    }
    return checkTheAttacker(exchange, msg.playerid);
  };

  // `!psi pending`: whispers again the defense prompts still waiting for the caller: for a
  // player those of the minds it controls (as they were whispered: never to "all"), for
  // the GM every one, and how many questions before a round's end wait for the GM. The
  // chat archive keeps them, but a reload may leave them far up the chat.
  const commandPending = (msg) => {
    pruneExchanges(Date.now());
    const gm = playerIsGM(msg.playerid);
    const prompts = [];
    Object.keys(store().exchanges).forEach((xid) => {
      // Not told of an attack called off here: the caller may have nothing to do with it.
      const exchange = settleWaiting(xid);
      if (!exchange) return;
      const chosen = isObject(exchange.choices) ? exchange.choices : {};
      asked(exchange).filter((ref) => !(ref in chosen) && (gm || answerersOf(ref, exchange.by).includes(msg.playerid)))
        .forEach((ref) => prompts.push(defensePrompt(xid, exchange, ref, msg.playerid)));
    });
    prompts.forEach((html) => whisperPlayer(msg.playerid, html));
    pruneQuestions(Date.now());
    const questions = gm ? Object.keys(store().questions).length : 0;
    const rounds = questions ? ` ${questions === 1 ? 'A question' : `${questions} questions`} before a round's end wait${questions === 1 ? 's' : ''} for your answer: `
      + 'the buttons are in the chat (or run <code>!psi round</code> again to be asked anew).' : '';
    if (!prompts.length) return tell(msg.playerid, 'pending', `No attack waits for a defense ${gm ? 'now' : 'of yours'}.${rounds}`, TRANSIENT);
    return rounds ? tell(msg.playerid, 'pending', rounds.trim(), TRANSIENT) : undefined;
  };

  // What an old defense button (the chat archive keeps them) answers once its attack no
  // longer waits.
  const NO_LONGER_WAITING = '(already defended, called off, or more than an hour old)';

  const commandDefend = (msg, args) => {
    const xid = String(args.get('req') || '');
    pruneExchanges(Date.now());
    if (!ownMember(store().exchanges, xid)) return refuse(msg.playerid, `there is no attack waiting with id ${echo(xid)} ${NO_LONGER_WAITING}. Nothing was done.`);
    const exchange = settleWaiting(xid, undefined, msg.playerid);
    if (!exchange) return undefined;
    if (Array.isArray(exchange.members)) return defendWave(msg, args, xid, exchange);
    if (args.has('for')) {
      return refuse(msg.playerid, '--for names the mind whose defense it is in a psionic wave, and this attack strikes one mind: leave it out. Nothing was sent.');
    }
    const chooser = exchange.struck || exchange.defender;
    const barred = defendProblem(msg.playerid, chooser, exchange.by);
    if (barred) return refuse(msg.playerid, barred);
    const chosen = defenseFromOptions(args, exchange.system, 'mode');
    if (chosen.error) return refuse(msg.playerid, chosen.error);
    const drawn = alliesFromOptions(args, exchange, chosen.defense, 'mode');
    if (drawn.error) return refuse(msg.playerid, drawn.error);
    // Control changed hands since the attack: the defense came from the wrong side.
    const now = struckFor(exchange.system, exchange.defender);
    if ((now || null) !== (exchange.struck || null)) {
      delete store().exchanges[xid];
      const attacker = exchange.by && exchange.by !== msg.playerid && !playerIsGM(exchange.by) ? [exchange.by] : [];
      const why = `the psionic control of ${chatSafe(fighterName(exchange.defender))} changed since the attack was declared, so another `
        + 'mind answers it now. Nothing was sent: attack again.';
      attacker.forEach((pid) => refuse(pid, why));
      return refuse(msg.playerid, why);
    }
    // Good once: should the companion refuse this defense, chooseAgain stores the attack
    // anew. Only once it goes out: a request too long to go leaves the attack waiting.
    const sending = drawn.allies.length ? Object.assign({}, exchange, { allies: drawn.allies }) : exchange;
    return resolveExchange(sending, chosen.defense, exchange.by, msg.playerid, {}, [], () => {
      delete store().exchanges[xid];
      tell(msg.playerid, 'defense chosen', defenseText(chosen.defense, drawn.allies, joinedOf(exchange)), TRANSIENT);
    });
  };

  // Why the creature `ref` cannot join the defense against the attack `exchange`, or null.
  // The rest is the companion's to judge: whether it is psionic at all, mindless, awake.
  // One the first mind of a wave drew in as an ally is not named here: that is that mind's
  // secret choice until the card (commandJoin).
  const joinProblem = (exchange, ref) => {
    const { system } = exchange;
    const swarms = SYSTEMS[system].swarms;
    const targets = exchange.targets || [exchange.defender];
    if (ref === exchange.attacker) return 'makes this attack';
    if (targets.includes(ref)) return 'is a target of this attack';
    if (targets.some((t) => struckFor(system, t) === ref)) return 'is struck by this attack already, in its puppet\'s place';
    if (joinedRefs(exchange).includes(ref)) return 'has joined this defense already';
    if (systemOf(ref) !== system) return `uses ${systemOf(ref)}, not ${system}`;
    if (controllerOf(ref)) return `is under the psionic control of ${chatSafe(fighterName(controllerOf(ref)))}`;
    if (!swarms.some((mode) => knownDefenses(ref, system).includes(mode))) {
      return `does not know ${swarms.map(label).join(' or ')}, the defense by which a psionic creature joins`;
    }
    return null;
  };

  // The players told that a creature joins or leaves the defense against `exchange`: those
  // who choose for the minds choosing it and for the creature (answerersOf: not the
  // attacking player while another player controls the mind, as the rest of the defense),
  // and the sender (the GM is whispered apart). In a psionic wave not the attacking player
  // for a struck mind of its own (mayKnowJoiner): only where the creature is its own to
  // choose for, or it sent the command.
  const joinAudience = (exchange, ref, sender) => {
    const choosers = Array.isArray(exchange.members) ? exchange.members : [exchange.struck || exchange.defender];
    return new Set(choosers.concat([ref]).flatMap((one) => answerersOf(one, exchange.by)).filter((pid) => mayKnowJoiner(exchange, pid, ref))
      .concat([sender]).filter((pid) => !playerIsGM(pid)));
  };

  // power-pool, seed 001: "Psionically active creatures may also use this defence mode to
  // participate in a psionic combat that is targeting an ally they can see". `!psi join
  // --req ID` with the creature's token selected, by its controller or the GM, while the
  // defense against the attack waiting as ID is being chosen: when it is chosen, the
  // creature goes to the companion as an ally with its own defense (defenses), and its
  // sheet is written as an ally's. Whether it can see the ally is the table's call. In a
  // psionic wave it joins the group of the mind struck first (the companion's allies).
  // The defending side and the GM are told; the attacker is not (it is part of the
  // defense, which stays secret until the card). `--leave` takes it out again: its own
  // choice, and the way out should the companion keep refusing the defense over it.
  const commandJoin = (msg, args) => {
    const leave = args.has('leave');
    const fighters = selectedFighters(msg);
    if (fighters.length !== 1) {
      return refuse(msg.playerid, `select the token of the one psionic creature that ${leave ? 'leaves' : 'joins'} the defense (it must represent a character). Nothing was changed.`);
    }
    const ref = fighters[0];
    const name = chatSafe(fighterName(ref));
    if (!mayControl(msg.playerid, ref)) {
      return refuse(msg.playerid, `you do not control ${name}: only its controller or the GM may make it ${leave ? 'leave' : 'join'} a defense. Nothing was changed.`);
    }
    const xid = String(args.get('req') || '');
    pruneExchanges(Date.now());
    if (!ownMember(store().exchanges, xid)) {
      return refuse(msg.playerid, `${name} cannot ${leave ? 'leave' : 'join'}: there is no attack waiting for a defense with id ${echo(xid)} ${NO_LONGER_WAITING}. Nothing was changed.`);
    }
    const exchange = settleWaiting(xid, undefined, msg.playerid);
    if (!exchange) return undefined;
    // Whether a creature joins is part of the defense: not the attacking player's to
    // choose while another player controls the creature (leftToOthers).
    if (leftToOthers(msg.playerid, ref, exchange.by)) {
      return refuse(msg.playerid, `whether ${name} ${leave ? 'leaves' : 'joins'} the defense against your own attack is chosen by its other controllers (or the GM), in secret. Nothing was changed.`);
    }
    if (!SYSTEMS[exchange.system].swarms) {
      return refuse(msg.playerid, `${name} cannot join: this attack is ${exchange.system}'s, and only power-pool lets a psionic creature join a defense `
        + '(with Imagination Swarm). Nothing was changed.');
    }
    const choosers = Array.isArray(exchange.members) ? exchange.members : [exchange.struck || exchange.defender];
    const whose = Array.isArray(exchange.members)
      ? `the group of ${chatSafe(fighterName(choosers[0]))} (struck first by the psionic wave of ${chatSafe(fighterName(exchange.attacker))})`
      : `${chatSafe(fighterName(exchange.defender))} against the attack of ${chatSafe(fighterName(exchange.attacker))}`;
    if (leave) {
      if (!joinedRefs(exchange).includes(ref)) return refuse(msg.playerid, `${name} has not joined this defense: there is nothing to leave. Nothing was changed.`);
      exchange.joined = joinedOf(exchange).filter((j) => j.ref !== ref);
      const gone = `<b>${name}</b> leaves the defense of ${whose}: it no longer goes with the defending group (it may join again before the defense is chosen: `
        + `<code>!psi join --req ${xid}</code>).`;
      joinAudience(exchange, ref, msg.playerid).forEach((pid) => tell(pid, 'left', gone));
      return whisperGM(box('left', gone));
    }
    const why = joinProblem(exchange, ref);
    if (why) return refuse(msg.playerid, `${name} ${why}: it cannot join this defense. Nothing was changed.`);
    // In a wave the first mind's allies are its secret choice until the card: its side and
    // the GM know them; anyone else learns only that the creature cannot join.
    if ((exchange.allies || []).includes(ref)) {
      const drawnWhy = `${name} is drawn into this defense already, as an ally`;
      if (playerIsGM(msg.playerid) || answerersOf(choosers[0], exchange.by).includes(msg.playerid)) {
        return refuse(msg.playerid, `${drawnWhy}: it cannot join this defense. Nothing was changed.`);
      }
      whisperGM(box('join refused', `${drawnWhy}, so it cannot join this defense; its player was told only that it cannot join (the drawing in stays secret until the card).`));
      return refuse(msg.playerid, `${name} cannot join this defense. Nothing was changed.`);
    }
    const mode = SYSTEMS[exchange.system].swarms.find((m) => knownDefenses(ref, exchange.system).includes(m));
    withNames(exchange, [ref]).joined = joinedOf(exchange).concat([{ ref, mode }]);
    const text = `<b>${name}</b> joins the defense of ${whose} by its own choice, with ${label(mode)}: it rolls its own pool with the defending group, `
      + 'and falls with the group should the attack win. It goes to the companion when the defense is chosen.';
    joinAudience(exchange, ref, msg.playerid).forEach((pid) => tell(pid, 'joined', text));
    return whisperGM(box('joined', text));
  };

  // exchange.odds' least_chance for !psi odds: less likely than this reads 0.0% (percent).
  const ODDS_LEAST_CHANCE = 0.0005;

  const commandOdds = (msg, args) => {
    const who = sides(msg, args);
    if (who.error) return refuse(msg.playerid, who.error);
    const built = attackFromOptions(args, who.system);
    if (built.error) return refuse(msg.playerid, built.error);
    const chosen = defenseFromOptions(args, who.system, 'defense', true);
    if (chosen.error) return refuse(msg.playerid, chosen.error);
    const stopped = severalProblem(who.system, who.targets, built.attack.mode) || who.targets.map((t) => strikeProblem(who.system, t)).find(Boolean);
    if (stopped) return refuse(msg.playerid, stopped);
    const exchange = { system: who.system, attacker: who.attacker, defender: who.defender, targets: who.targets, attack: built.attack };
    const drawn = alliesFromOptions(args, exchange, chosen.defense, 'defense');
    if (drawn.error) return refuse(msg.playerid, drawn.error);
    if (drawn.allies.length) exchange.allies = drawn.allies;
    const { params, involved, paths } = exchangeRequest(exchange, chosen.defense);
    const struck = involved.filter((ref) => ref !== who.attacker);
    // Odds for a defense, or a refusal of it, would tell which defenses a mind the asker
    // does not control knows and can pay for (its sheet's secret): for such a player the
    // companion answers as if each such mind knew the defense it is given and could pay
    // for it (assume_known), whichever it knows, and the answer says so.
    const places = Object.assign({ '/defender': who.defender }, paths);
    const hidden = chosen.defense && chosen.defense.mode && !playerIsGM(msg.playerid)
      ? assumedPlaces(places, (ref) => !mayControl(msg.playerid, ref)) : [];
    if (hidden.length) params.assume_known = hidden;
    // A chance that would read 0.0% here stays out of the answer (the companion sums what
    // it left out): combat-strength's penetrating damage has hundreds of values, 120 KB and
    // more to type through the bridge, and these lines sum its damage up from damage.dealt.
    params.least_chance = ODDS_LEAST_CHANCE;
    const hiddenNames = Array.from(new Set(hidden.map((place) => fighterName(places[place]))));
    const id = newId();
    return postRequest(rpcBody(id, 'exchange.odds', params), {
      kind: 'odds',
      system: who.system,
      requester: msg.playerid,
      involved: [],
      // Where each fighter was sent, so that the companion's sheet warnings name it.
      paths: Object.assign({ '/attacker': who.attacker, '/defender': who.defender }, paths),
      // Whose secrets a refusal may tell (oddsHiddenFrom): every mind but the attacker's.
      attacker: who.attacker,
      struck,
      title: `${label(built.attack.mode)} odds: ${fighterName(who.attacker)} vs. ${fighterName(who.defender)}`,
      // Said with the odds: they assume what the asker may not see.
      // Only revised-2e's defenses cost something (PSPs); combat-strength's cost nothing
      // (RULES.md 2.2) and power-pool's have no cost: there is nothing to pay.
      assumed: !hidden.length ? null : who.system !== 'revised-2e'
        ? `As if ${hiddenNames.join(', ')} knew ${label(chosen.defense.mode)}: which defenses a mind knows only its controllers and the GM see.`
        : `As if ${hiddenNames.join(', ')} knew ${label(chosen.defense.mode)} `
          + 'and could pay for it: which defenses a mind knows, and what it can pay, only its controllers and the GM see.',
    }, `odds of ${label(built.attack.mode)} by ${fighterName(who.attacker)} against ${fighterName(who.defender)}`);
  };

  // The places of exchange.odds' params (paths: JSON Pointer → fighter) of the minds that
  // may defend (the defender, a wave's other targets, allies, the controllers struck) for
  // which hiddenFrom says yes: its assume_known.
  const DEFENDING_PLACE = /^\/(defender|controller|(defenders|allies|controllers)\/\d+)$/;
  const assumedPlaces = (paths, hiddenFrom) => Object.keys(paths)
    .filter((place) => DEFENDING_PLACE.test(place) && hiddenFrom(paths[place]));

  // ------------------------------------------------------------- !psi round

  // The companion's limit on one exchange.end_round (max_combatants, API.md).
  const MAX_ROUND_FIGHTERS = 64;
  // power-pool's choices for a controller's psionic control at a round's end (RULES.md
  // §3.4), the encounter's --release, --keep --by and --cannot-perceive, and --keep-all.
  const CONTROL_OPTIONS = ['release', 'keep', 'by', 'cannot-perceive', 'keep-all'];
  // Each option that names a control, as the member of exchange.end_round's choices.
  const CONTROL_CHOICES = { release: 'release', keep: 'keep', 'cannot-perceive': 'cannot_perceive' };
  // Fields of a generic mapping that every character has, psionic or not.
  const COMMON_FIELDS = ['hp', 'int', 'wis', 'con', 'level', 'hit_dice'];

  // The fields whose text of only spaces the adapters read as a list naming nothing
  // (split_names): the rest of TEXT_FIELDS, a flag or a choice, refuse it. Kept by hand:
  // tests/adapters/test_roll20.py checks it against decode.
  const LIST_FIELDS = new Set(['attacks', 'defenses', 'conditions', 'spell_levels']);
  // The JSON fields whose empty object or list is what the engine takes for no state at
  // all (a closed mind; no condition rounds, lost powers, dedicated dice or controls). The
  // companion writes "{}" in psi_condition_rounds once a daze's rounds are out and "[]"
  // once a list is emptied; a mind it closes it writes out whole, as CLOSED_MIND below.
  // quick_mac's empty object is refused. Kept by hand, checked as LIST_FIELDS is.
  const EMPTY_STATE = { mind: '{}', condition_rounds: '{}', lost_powers: '[]', dedicated: '[]', controlling: '[]' };
  // The engine's default mind (revised-2e's closed_mind): closed, nothing pending, as the
  // companion writes it in psi_mind once a mind a psionic attack opened closes again. The
  // engine fills in each member a mind leaves out from it, so a mind of only its members
  // with its values, in any order and spacing ({} too), is the same as no psi_mind:
  // isClosedMind. Kept by hand: tests/adapters/test_roll20.py checks it against the engine.
  const CLOSED_MIND = '{"state":"closed","opened_by":null,"locked_rounds":0,"last_defense":null,"used_power":false,"may_pay_to_close":false,"rounds_open":0}';
  const CLOSED_MIND_MEMBERS = JSON.parse(CLOSED_MIND);
  // Whether `mind`, a parsed psi_mind, is the default closed mind: an object each of whose
  // members is one of CLOSED_MIND's with its value (JSON holds no undefined, so a member
  // CLOSED_MIND lacks never matches). Any other member, or another value (rounds open, a
  // lock, a last defense), is a mind the engine keeps, or refuses.
  const isClosedMind = (mind) => isObject(mind)
    && Object.keys(mind).every((key) => ownMember(mind, key) === ownMember(CLOSED_MIND_MEMBERS, key));

  // The combatant field that part `part` of psi_* attribute `name` keeps, as the
  // companion's adapters look it up (adapters/roll20.py state_attribute): a pair's
  // current or maximum (psi_pool's maximum is hit_dice), else psi_FIELD's current.
  // undefined where they read nothing: any other maximum, and psi_FIELD for a field a
  // pair keeps (psi_psp_max, psi_hit_dice).
  const stateField = (name, part) => {
    const lower = String(name).toLowerCase();
    const paired = Object.keys(STATE_PAIRS).find((field) => STATE_PAIRS[field][0] === lower && STATE_PAIRS[field][1] === part);
    if (paired) return paired;
    const field = lower.replace(STATE_ATTRIBUTE, '');
    return part === 'current' && !STATE_PAIRS[field] ? field : undefined;
  };

  // Whether `value`, read for combatant field `field`, is something psionic for a round's
  // end: a value the companion reads, or one it refuses (the fighter is then sent, so that
  // the refusal names the attribute for the GM to put right, where leaving it out would
  // say nothing): what gives the field a value (givesField), but a list of only spaces,
  // which names nothing (LIST_FIELDS), an empty JSON state (EMPTY_STATE) and a mind that
  // is the default closed mind (isClosedMind). A flag or a choice of only spaces is
  // refused, and so counts, as does a JSON state longer than MAX_JSON_TEXT.
  const psionicValue = (field, value) => {
    if (LIST_FIELDS.has(field)) return filled(value);
    // A JSON state longer than MAX_JSON_TEXT the companion refuses before it parses it,
    // JSON null or a closed mind padded with spaces too: it counts.
    if (JSON_FIELDS.has(field) && typeof value === 'string' && value.length > MAX_JSON_TEXT && filled(value)) return true;
    if (!givesField(field, value)) return false;
    if (!JSON_FIELDS.has(field) || typeof value !== 'string') return true;
    let parsed;
    try {
      parsed = JSON.parse(value);
    } catch (err) {
      return true; // no JSON: refused
    }
    if (field === 'mind' && isClosedMind(parsed)) return false;
    return JSON.stringify(parsed) !== EMPTY_STATE[field];
  };

  // Whether a fighter has anything psionic for a round's end to look at: settings of its
  // own, psionic state in psi_* attributes (also a nonpsionic mind a psionic attack
  // dazed), PSPs on the AD&D sheet (read as to_int reads them; a box the companion
  // refuses, "1e1" or 200000, counts too: the fighter is sent, and the companion's refusal
  // names the box for the GM to put right, where leaving it out would say nothing), in
  // revised-2e an attack or defense row of the AD&D sheet naming a mode (sheetKnowsModes:
  // with no PSPs the companion refuses it, naming it), or a psionic field its generic
  // mapping names. Each attribute is read as the companion
  // reads it: the first of its name in any case, psi_* ones by the field each part keeps
  // (stateField), every value by psionicValue (no JSON null, no empty state, no default
  // closed mind: what the companion writes once a mind a psionic attack opened closes
  // again). The fighter, the orc and the torch-bearer in the Turn Tracker have none and
  // stay out.
  // It reads the attributes combatantOf sends, so an unlinked token is judged by its own.
  const hasPsionics = (ref) => {
    if (characterConfig(fighterCharacter(ref)).system) return true;
    const { adapter, data } = combatantOf(ref);
    const generic = adapter === 'roll20.generic';
    const attribs = generic ? data.character.attribs : data.attribs;
    const first = (name) => attribs.find((a) => sameName(a.name, name));
    const names = Array.from(new Set(attribs.map((a) => String(a.name).toLowerCase())));
    const stored = names.filter((name) => STATE_ATTRIBUTE.test(name)).some((name) => ['current', 'max'].some((part) => {
      const field = stateField(name, part);
      return field !== undefined && psionicValue(field, first(name)[part]);
    }));
    if (stored) return true;
    if (generic) {
      const mapping = data.mapping.fields;
      return Object.keys(mapping).filter((field) => !COMMON_FIELDS.includes(field)).some((field) => {
        const [name, part] = String(mapping[field]).split('|');
        const attr = first(name);
        return attr !== undefined && psionicValue(field, attr[/^max$/i.test(part || '') ? 'max' : 'current']);
      });
    }
    // PSPs above 0, or a box the companion refuses (null).
    const points = (value) => {
      const read = sheetPoints(value);
      return read === null || read > 0;
    };
    return ['PSP', 'PSP_max'].map(first).some((a) => a !== undefined && (points(a.current) || points(a.max)))
      || sheetKnowsModes(ref);
  };

  // Whether the companion is asked, before a round's end, whether a fighter's mind may
  // pay to close (revised-2e, RULES.md §1.5): its psi_mind holds a mind a critical hit
  // opened, either this round (rounds_open 0: it pays once this round's end is counted,
  // and starts the next round closed) or earlier with the previous round's end's word
  // that it still may (may_pay_to_close); or a generic mapping keeps its mind in an
  // attribute of its own, which only the companion reads. What closing costs and
  // whether it can pay are the companion's to say (exchange.round_end_choices).
  const mayPayToClose = (ref) => {
    const { adapter, data } = combatantOf(ref);
    if (adapter === 'roll20.generic' && isObject(data.mapping.fields) && data.mapping.fields.mind) return true;
    const value = sheetState(ref, 'mind');
    let mind;
    try {
      mind = JSON.parse(value === undefined ? 'null' : String(value));
    } catch (err) {
      return false;
    }
    if (!isObject(mind) || mind.state !== 'open' || mind.opened_by !== 'critical') return false;
    return mind.may_pay_to_close === true || !(Number(mind.rounds_open) > 0);
  };

  // The tokens of the Turn Tracker, in turn order. Roll20's turn order holds the objects
  // of one page, the campaign's initiativepage (the page the tracker was opened on; false
  // while it is closed): tokens of other pages are left out, as are custom entries (id
  // "-1") and tokens gone. With the tracker closed, the player page stands in for it; with
  // neither set, every page counts.
  const turnOrderTokens = () => {
    const raw = Campaign().get('turnorder');
    let order;
    try {
      order = Array.isArray(raw) ? raw : JSON.parse(raw || '[]');
    } catch (err) {
      return [];
    }
    if (!Array.isArray(order)) return [];
    const page = Campaign().get('initiativepage') || Campaign().get('playerpageid');
    return order.filter(isObject)
      .map((entry) => getObj('graphic', String(entry.id)))
      .filter((token) => token && (!page || token.get('_pageid') === page))
      .map((token) => token.id);
  };

  // The fighters of `tokens`, once each (linked tokens of one character are one; an
  // unlinked token is itself), that a command outside the encounter acts on: those with
  // something psionic and not in the current encounter, which holds its own copy of
  // them. `left` names the others for the GM, an encounter's with `inEncounterWhy`, and
  // first the tokens that represent no character.
  const fightersOutsideEncounter = (tokens, inEncounterWhy) => {
    const found = fightersOutside(tokens.map(fighterOfToken), inEncounterWhy);
    return { fighters: found.fighters, left: unrepresented(tokens).concat(found.left) };
  };

  // fightersOutsideEncounter for fighters given as refs (those gone are left out).
  const fightersOutside = (refs, inEncounterWhy) => {
    const all = Array.from(new Set(refs.filter((ref) => ref && fighterCharacter(ref))));
    const enc = store().encounter;
    const inEncounter = (ref) => Boolean(enc && enc.combatants[ref]);
    const fighters = all.filter((ref) => !inEncounter(ref) && hasPsionics(ref));
    const left = all.filter((ref) => !fighters.includes(ref))
      .map((ref) => `${chatSafe(fighterName(ref))} (${inEncounter(ref) ? inEncounterWhy : 'nothing psionic'})`);
    return { fighters, left };
  };

  // The one system all `fighters` use, or an error naming who uses which: several are
  // refused rather than split, so that one command is one request and one card.
  const sharedSystem = (fighters) => {
    const bySystem = {};
    fighters.forEach((ref) => {
      const used = systemOf(ref);
      bySystem[used] = (bySystem[used] || []).concat([ref]);
    });
    const systems = Object.keys(bySystem);
    if (systems.length === 1) return { system: systems[0] };
    const who = systems.map((s) => `${s}: ${bySystem[s].map(fighterName).map(chatSafe).join(', ')}`).join('; ');
    return { error: `these characters use different systems (${who})` };
  };

  /**
   * `!psi round [--close TOKEN] [--pay-none] [--release TOKEN] [--keep TOKEN --by die|action]
   * [--cannot-perceive TOKEN] [--keep-all]` (GM only): the end of a psionic round for
   * fighters of single exchanges, by exchange.end_round. It takes the selected tokens, or
   * else every token in the Turn Tracker (on its page), once per fighter (linked
   * tokens of one character are one; an unlinked token is itself), and leaves out those
   * with nothing psionic and those in the current encounter (which ends its own rounds).
   * The rest must share one system: several are refused rather than split, so that one
   * round's end is one request and one card. Roll20 fires no event at a round's end the
   * script could trust (the Turn Tracker is sorted, edited and restarted by hand), so the
   * GM runs it.
   *
   * revised-2e: when a mind a critical hit opened may pay to close this round and the GM
   * said nothing of it (neither `--close` nor `--pay-none`), the companion is asked first
   * what closing costs (exchange.round_end_choices) and the GM gets buttons for each that
   * can pay, all of them, and nobody (`--answer QUESTION`, good once); the round ends when
   * one is pressed. When nobody can pay, the round ends at once, saying why.
   *
   * power-pool: when a fighter controls creatures (psi_controlling) and the GM chose
   * nothing for that control (neither --release, --keep, --cannot-perceive nor
   * --keep-all), the companion is asked first what each control may do and the GM gets
   * a line per control link with a button for each offer and one to keep everything as
   * it is, in the same way. Creatures set free whose own round does not end here go
   * along as `puppets`, so that their sheets are freed too.
   */
  const commandRound = (msg, args) => {
    if (!playerIsGM(msg.playerid)) return refuse(msg.playerid, 'only a GM may end the psionic round.');
    if (args.has('answer')) return answerRoundQuestion(msg, args);
    const picked = selectedTokens(msg);
    const fromSelection = picked.length > 0;
    const { fighters, left } = fightersOutsideEncounter(fromSelection ? picked : turnOrderTokens(), 'in the encounter, which ends its own rounds');
    if (fromSelection && left.length) whisperGM(box('end of the round', `Left out: ${left.join(', ')}.`));
    if (!fighters.length) {
      return refuse(msg.playerid, fromSelection
        ? 'none of the selected tokens represents a character with psionics outside the current encounter.'
        : 'no token in the Turn Tracker (on its page) represents a character with psionics outside the current encounter; select the tokens instead.');
    }
    if (fighters.length > MAX_ROUND_FIGHTERS) return refuse(msg.playerid, `at most ${MAX_ROUND_FIGHTERS} characters end a round together; select fewer tokens.`);
    const shared = sharedSystem(fighters);
    if (shared.error) return refuse(msg.playerid, `${shared.error}; select the tokens of one system and run !psi round for each.`);
    const { system } = shared;
    const decided = roundChoices(args, system, fighters);
    if (decided.error) return refuse(msg.playerid, decided.error);
    if (decided.decided) return postEndRound(msg.playerid, fighters, system, decided.choices);
    return askOrEndRound(msg.playerid, fighters, system);
  };

  // Whom the companion is asked about before a round's end, and what: revised-2e, the
  // minds that may pay to close; power-pool, the fighters that control creatures. `gone`
  // tells the GM that fighters chosen by a button may no longer choose (`more`: others
  // still may).
  const ROUND_QUESTIONS = {
    'revised-2e': {
      about: (ref) => mayPayToClose(ref),
      what: 'what closing a mind costs',
      gone: (names, more) => `The mind of ${names} may no longer pay to close${more ? '.' : ': the round ends without anyone paying.'}`,
    },
    'power-pool': {
      about: (ref) => controlEntries(ref).length > 0,
      what: 'what control may be kept or let go',
      gone: (names, more) => `The sheet of ${names} shows no creature under control any more${more ? '.' : ': the round ends with no change of control.'}`,
    },
  };

  // Ask the companion first when a fighter has something to choose at the round's end
  // (ROUND_QUESTIONS; handleRoundChoices takes its answer); else end the round now.
  // `chosen`: the fighters a button chose for when it led here (their sheets changed
  // since the question); when none of them has anything to choose any more, the GM is told.
  const askOrEndRound = (requester, fighters, system, chosen = []) => {
    const question = ROUND_QUESTIONS[system];
    const asked = question ? fighters.filter(question.about) : [];
    const gone = chosen.filter((ref) => !asked.includes(ref));
    if (gone.length) whisperGM(box('before the round ends', question.gone(gone.map(fighterName).map(chatSafe).join(', '), asked.length > 0)));
    if (!asked.length) return postEndRound(requester, fighters, system, {});
    const id = newId();
    return postRequest(rpcBody(id, 'exchange.round_end_choices', withHouse(system, { system, combatants: asked.map(combatantOf) })), {
      kind: 'round-choices', requester, involved: fighters, sent: asked, system, title: 'Before the round ends',
    }, `ask ${question.what} before the round ends for ${fighters.map(fighterName).join(', ')}`, () => supersedeQuestions(fighters));
  };

  // What the GM decided in the options of a round's end, as exchange.end_round's
  // `choices`: {choices, decided (an option said it: nobody is asked), named (power-pool:
  // each control chosen for, as controlChoices gives it)}, or {error}. `heldBy` finds the
  // control an option names (controlChoices).
  const roundChoices = (args, system, fighters, heldBy) => {
    const closing = closeChoices(args, system, fighters);
    if (closing.error) return closing;
    const control = controlChoices(args, system, fighters, heldBy);
    if (control.error) return control;
    const decided = ['close', 'pay-none'].concat(CONTROL_OPTIONS).some((key) => args.has(key));
    return { choices: Object.assign({}, closing.choices, control.choices), named: control.named, decided };
  };

  // The control one of `fighters` holds over the creature `text` names (its token or
  // character, or the id its controller's psi_controlling gives, for one that is no
  // character or token here): {controller, link, target (that id)}, or {error}.
  const controlHeldBy = (text, fighters) => {
    const raw = String(text || '').trim();
    if (!raw) return { error: 'name the token or character of a creature under psionic control.' };
    const wanted = Array.from(new Set([resolveFighter(raw), raw].filter(Boolean)));
    const found = [];
    fighters.forEach((controller) => controlLinks(controller).forEach((link) => {
      const target = wanted.find((ref) => link.targets.includes(ref));
      if (target) found.push({ controller, link, target });
    }));
    const name = echo(fighterName(wanted[0]));
    if (found.length > 1) {
      return { error: `${found.map((f) => chatSafe(fighterName(f.controller))).join(' and ')} each name ${name} in psi_controlling: put their sheets right first.` };
    }
    return found[0] || {
      error: `none of those whose round ends here controls ${name} (no psi_controlling of theirs names it): select the controller's token too (or none, for the Turn Tracker's).`,
    };
  };

  // power-pool: the options for a controller's control at a round's end (`--release
  // TOKEN`, `--keep TOKEN --by die|action`, `--cannot-perceive TOKEN`, each repeatable, or
  // `--keep-all`), as exchange.end_round's choices by controller: {choices, named:
  // [{controller, member, target, targets, by?}]} or {error}. Each names a creature, and so
  // its whole control link (a psionic wave's creatures are one): once each. A --by belongs
  // to the --keep right before it, so several --keep in one command cannot be mixed up.
  // `heldBy(text)` finds the control a creature is under (controlHeldBy, by default).
  const controlChoices = (args, system, fighters, heldBy = (text) => controlHeldBy(text, fighters)) => {
    const used = CONTROL_OPTIONS.filter((key) => args.has(key));
    if (!used.length) return { choices: {}, named: [] };
    if (system !== 'power-pool') return { error: `--${used[0]} is a power-pool option (psionic control). Nothing was sent.` };
    if (args.has('keep-all') && used.length > 1) {
      return { error: `--keep-all keeps every control as it is, and --${used.find((key) => key !== 'keep-all')} changes one: give one or the other. Nothing was sent.` };
    }
    const choices = {};
    const named = [];
    const seen = new Map();
    const { options } = args;
    for (let i = 0; i < options.length; i += 1) {
      const [key, text] = options[i];
      if (key === 'by' && !(i > 0 && options[i - 1][0] === 'keep')) {
        return { error: '--by goes right after the --keep it belongs to: --keep TOKEN --by die|action. Nothing was sent.' };
      }
      if (!CONTROL_CHOICES[key]) continue;
      let by;
      if (key === 'keep') {
        const next = options[i + 1];
        by = next && next[0] === 'by' ? String(next[1]).trim().toLowerCase() : '';
        if (!['die', 'action'].includes(by)) {
          return { error: '--keep TOKEN wants --by die (a die of the pool kept for the control) or --by action (an action each round) right after it. Nothing was sent.' };
        }
      }
      const held = heldBy(text);
      if (held.error) return { error: `--${key}: ${held.error} Nothing was sent.` };
      const linkKey = `${held.controller} ${held.link.targets[0]}`;
      if (seen.has(linkKey)) {
        const earlier = seen.get(linkKey);
        const who = earlier === held.target ? `${chatSafe(fighterName(held.target))} is named twice`
          : `${chatSafe(fighterName(earlier))} and ${chatSafe(fighterName(held.target))} are creatures of one psionic wave, held by one control`;
        return { error: `${who}: each control takes one choice at a round's end. Nothing was sent.` };
      }
      seen.set(linkKey, held.target);
      const member = CONTROL_CHOICES[key];
      const mine = choices[held.controller] || {};
      mine[member] = (mine[member] || []).concat([key === 'keep' ? { target: held.target, by } : held.target]);
      choices[held.controller] = mine;
      named.push(Object.assign({ controller: held.controller, member, target: held.target, targets: held.link.targets }, by ? { by } : {}));
    }
    return { choices, named };
  };

  // The `--close TOKEN` choices of a round's end (revised-2e; a token or character id of
  // one whose round ends), as exchange.end_round's `choices`, or an error to refuse with.
  const closeChoices = (args, system, fighters) => {
    const choices = {};
    const named = args.all('close');
    if (named.length && args.has('pay-none')) return { error: '--close and --pay-none contradict each other. Nothing was sent.' };
    if (args.has('pay-none') && system !== 'revised-2e') {
      return { error: `--pay-none is a revised-2e option: no mind pays to close in ${system}`
        + `${system === 'power-pool' ? ' (--keep-all ends the round keeping every control as it is)' : ''}. Nothing was sent.` };
    }
    for (const text of named) {
      if (system !== 'revised-2e') return { error: '--close is a revised-2e option.' };
      const ref = resolveFighter(text);
      if (!ref || !fighters.includes(ref)) {
        return { error: `--close must name the token or character of one whose round ends here (got "${echo(text)}").` };
      }
      choices[ref] = { close: true };
    }
    return { choices };
  };

  // Ends the round: a question still open for any of these fighters is answered by it
  // (its buttons must not end the round again). power-pool: the creatures its choices
  // set free, and those held by an action (a controller that cannot act loses them
  // without a choice: controller-cannot-act), whose own round does not end here go
  // along as `puppets` (their updates are checked and written as the fighters' are);
  // one that is no character or token here cannot, and the companion's summary says its
  // sheet still shows the control. Those set free go first should there be more than
  // MAX_PUPPETS. `again`: a request sent again without puppets (sendWithoutPuppets).
  const postEndRound = (requester, fighters, system, choices, again = {}) => {
    const params = { system, combatants: fighters.map(combatantOf) };
    if (Object.keys(choices).length) params.choices = choices;
    const refused = again.refused || [];
    const puppets = system === 'power-pool'
      ? puppetsToSend(freedPuppets(choices).concat(heldByAction(fighters, choices)), fighters, refused) : [];
    const paths = sendPuppets(params, {}, puppets);
    withHouse(system, params, again.options);
    const said = controlSaid(choices);
    const id = newId();
    return postRequest(rpcBody(id, 'exchange.end_round', params), Object.assign({
      kind: 'round', requester, involved: fighters.concat(puppets), sent: fighters, paths, said, title: 'End of the round',
    }, resendable(params, refused)), `end the round for ${fighters.map(fighterName).join(', ')}${said ? ` (${said})` : ''}`, () => {
      dropQuestionsFor(fighters);
      supersedeQuestions(fighters);
    });
  };

  // What the job of a round's end or a rest keeps to send it again without puppets the
  // companion refuses (sendWithoutPuppets): the choices, hours and house options sent,
  // and the puppets refused so far; refs and small values only, no sheet, for the job
  // is kept in state (also across a restart) and the sheets are read again.
  const resendable = (params, refused) => ({
    system: params.system, choices: params.choices || {}, hours: params.hours, options: params.options || {}, refused,
  });

  // The names of the creatures of the control link `controller` holds over `target` (a
  // psionic wave's all), or of `target` alone when its sheet names no such link.
  const linkNames = (controller, target) => {
    const link = controlLinks(controller).find((l) => l.targets.includes(target));
    return (link ? link.targets : [target]).map(fighterName).join(', ');
  };

  // power-pool choices in words (plain text): "Ulcen of Tyr releases Fenka; Ulcen of Tyr
  // keeps Thrall by a die".
  const controlSaid = (choices) => Object.keys(choices).flatMap((controller) => {
    const choice = choices[controller];
    const who = fighterName(controller);
    return (choice.release || []).map((t) => `${who} releases ${linkNames(controller, t)}`)
      .concat((choice.keep || []).map((k) => `${who} keeps ${linkNames(controller, k.target)} by ${k.by === 'die' ? 'a die' : 'an action each round'}`))
      .concat((choice.cannot_perceive || []).map((t) => `${who} loses sight of ${linkNames(controller, t)}`));
  }).join('; ');

  // The creatures a round's choices set free (released, or lost from sight while kept by
  // an action; a psionic wave's all together).
  const freedPuppets = (choices) => {
    const freed = [];
    Object.keys(choices).forEach((controller) => {
      const links = controlLinks(controller);
      const ending = (choices[controller].release || []).map((target) => [target, false])
        .concat((choices[controller].cannot_perceive || []).map((target) => [target, true]));
      ending.forEach(([target, bySight]) => {
        const link = links.find((l) => l.targets.includes(target));
        // A control kept by a die needs no sight: losing sight of it ends nothing.
        if (link && !(bySight && link.kept_by !== 'action')) freed.push(...link.targets);
      });
    });
    return freed;
  };

  // The most questions before a round's end kept at once (older ones are dropped).
  const MAX_QUESTIONS = 20;

  // A fighter's sheet as sent to the companion, reduced to a short fingerprint: a
  // question remembers it for each fighter offered closing, so that a sheet changed
  // before the button is pressed (another defense raised meanwhile) is priced again.
  const sheetPrint = (ref) => {
    const text = JSON.stringify(combatantOf(ref));
    let hash = 5381;
    for (let i = 0; i < text.length; i += 1) hash = ((hash * 33) ^ text.charCodeAt(i)) >>> 0;
    return `${text.length}:${hash.toString(36)}`;
  };

  // A question still on its way to the companion for any of these fighters is answered
  // by what the GM does now (a round ended, a new question): its answer only reports.
  const supersedeQuestions = (fighters) => {
    const jobs = store().pending;
    Object.keys(jobs).forEach((id) => {
      const job = jobs[id];
      if (job.kind === 'round-choices' && (job.involved || []).some((ref) => fighters.includes(ref))) job.superseded = true;
    });
  };

  const dropQuestionsFor = (fighters) => {
    const questions = store().questions;
    Object.keys(questions).forEach((qid) => {
      if ((questions[qid].fighters || []).some((ref) => fighters.includes(ref))) delete questions[qid];
    });
  };

  // No question older than an hour, at most the newest MAX_QUESTIONS.
  const pruneQuestions = (now) => {
    const questions = store().questions;
    Object.keys(questions).forEach((qid) => { if (!(now - questions[qid].at < EXCHANGE_LIFETIME_MS)) delete questions[qid]; });
    const ids = Object.keys(questions).sort((x, y) => questions[x].at - questions[y].at);
    while (ids.length > MAX_QUESTIONS) delete questions[ids.shift()];
  };

  // A button of the question before a round's end: `!psi round --answer QID` and the
  // options it answers with.
  const answerButton = (text, qid, options) => `[${text}](!psi round --answer ${qid}${options})`;

  // revised-2e: the button for the fighters who pay (none: --pay-none).
  const roundButton = (text, qid, payers) => answerButton(text, qid, payers.length ? payers.map((ref) => ` --close ${ref}`).join('') : ' --pay-none');

  // The answer to exchange.round_end_choices: the GM chooses who pays to close (buttons),
  // or, when nobody can, the round ends at once and the GM is told why. A late answer
  // only reports: the GM may have ended the round another way meanwhile.
  const handleRoundChoices = (job, result) => {
    const summary = chatSafe(result.summary || '');
    if (job.late || job.superseded) {
      const why = job.late ? 'This answer came late' : 'The round was ended, or asked about again, before this answer came';
      return whisperGM(box('before the round ends', `${summary} ${why}, so the round was not ended from it: `
        + 'if it has not ended yet, run <code>!psi round</code> again.'));
    }
    // Fighters deleted or gone into the encounter while the companion was asked are left out.
    const { fighters, left } = fightersOutside(job.involved, 'joined the encounter since, which ends its own rounds');
    if (left.length) whisperGM(box('end of the round', `Left out: ${left.join(', ')}.`));
    if (!fighters.length) return whisperGM(box('before the round ends', `${summary} None of these fighters is left outside the current encounter; nothing was sent.`));
    if (job.system === 'power-pool') return askAboutControl(job, result, fighters, summary);
    const sent = job.sent || job.involved;
    const offers = (Array.isArray(result.combatants) ? result.combatants : [])
      .filter((c) => isObject(c) && sent.includes(String(c.id)) && fighters.includes(String(c.id)) && isObject(c.choices) && isObject(c.choices.close));
    const payers = offers.filter((c) => c.choices.close.payable === true && Number.isInteger(c.choices.close.cost));
    if (!payers.length) {
      whisperGM(box('before the round ends', `${summary} The round ends without anyone paying.`));
      return postEndRound(job.requester, fighters, job.system, {});
    }
    const now = Date.now();
    dropQuestionsFor(fighters);
    pruneQuestions(now);
    const qid = newId();
    const payerRefs = payers.map((c) => String(c.id));
    store().questions[qid] = {
      fighters, system: job.system, payers: payerRefs, at: now,
      sheets: Object.fromEntries(payerRefs.map((ref) => [ref, sheetPrint(ref)])),
    };
    pruneQuestions(now);
    const buttons = payers.map((c) => roundButton(`${chatSafe(fighterName(String(c.id)))} pays ${c.choices.close.cost} PSPs`, qid, [String(c.id)]));
    if (payers.length > 1) buttons.push(roundButton('All of them pay', qid, payerRefs));
    buttons.push(roundButton('Nobody pays', qid, []));
    return whisperGM(box('before the round ends', `${summary}<br>Ask the player if you like; the round ends when you choose:<br>${buttons.join(' ')}`));
  };

  // A control link of the companion's offer, checked: {targets: [id, ...], kept_by, wave}.
  const isLink = (link) => isObject(link) && Array.isArray(link.targets) && link.targets.length > 0
    && link.targets.every((t) => typeof t === 'string' && t !== '') && ['die', 'action'].includes(link.kept_by);

  // Whether two links of one controller are the same (a creature is in one link only).
  const sameLink = (a, b) => a.targets.includes(b.targets[0]);

  // One line of the power-pool question: a control link, its creatures and how it is
  // kept, with a button for each thing the companion offers it (`keep`, `lost`: those
  // offers, or undefined). Any creature of a link names it in a command.
  const controlLine = (qid, controller, link, keep, lost) => {
    const several = link.targets.length > 1;
    const it = several ? 'them' : 'it';
    // a wave held by dice takes one for each creature; one action holds it all
    const die = several ? 'a die each' : 'a die';
    const how = link.kept_by === 'die' ? `by ${die} from its pool` : 'by an action each round';
    const wave = several || link.wave ? ', one psionic wave (kept and let go together)' : '';
    const text = `<b>${chatSafe(fighterName(controller))}</b> controls <b>${link.targets.map(fighterName).map(chatSafe).join(', ')}</b> ${how}${wave}:`;
    const target = link.targets[0];
    if (!BUTTON_SAFE.test(target)) return `${text} (no buttons: its id cannot stand in a command)`;
    const buttons = [answerButton(several ? 'Release them' : 'Release', qid, ` --release ${target}`)];
    if (keep) buttons.push(answerButton(`Keep ${it} by ${keep.by === 'die' ? die : 'an action'} instead`, qid, ` --keep ${target} --by ${keep.by}`));
    if (lost) buttons.push(answerButton('Lost sight', qid, ` --cannot-perceive ${target}`));
    return `${text} ${buttons.join(' ')}`;
  };

  // power-pool: the answer to exchange.round_end_choices for the controllers among the
  // fighters. The GM gets a line per control link with a button for each offer, and one
  // to keep everything as it is; a button ends the round with that one change, and
  // several changes go in one typed command. The question keeps what was offered, for
  // whom, and each controller's sheet as it was. When nobody holds any control now, the
  // round ends at once.
  const askAboutControl = (job, result, fighters, summary) => {
    const sent = job.sent || job.involved;
    const offers = (Array.isArray(result.combatants) ? result.combatants : [])
      .filter((c) => isObject(c) && sent.includes(String(c.id)) && fighters.includes(String(c.id)) && isObject(c.choices)
        && Array.isArray(c.choices.release) && c.choices.release.some(isLink));
    if (!offers.length) {
      whisperGM(box('before the round ends', `${summary} Nobody holds a control to keep or let go: the round ends with none chosen.`));
      return postEndRound(job.requester, fighters, job.system, {});
    }
    const now = Date.now();
    dropQuestionsFor(fighters);
    pruneQuestions(now);
    const qid = newId();
    const offered = {};
    const lines = [];
    offers.forEach((c) => {
      const ref = String(c.id);
      const list = (member) => (Array.isArray(c.choices[member]) ? c.choices[member].filter(isLink) : []);
      const release = list('release');
      const keep = list('keep').filter((link) => ['die', 'action'].includes(link.by));
      const lost = list('cannot_perceive');
      offered[ref] = {
        release: release.map((l) => l.targets), keep: keep.map((l) => ({ targets: l.targets, by: l.by })), cannot_perceive: lost.map((l) => l.targets),
      };
      release.forEach((link) => lines.push(controlLine(qid, ref, link, keep.find((k) => sameLink(k, link)), lost.find((l) => sameLink(l, link)))));
    });
    const controllers = Object.keys(offered);
    store().questions[qid] = {
      fighters, system: job.system, controllers, offered, at: now,
      sheets: Object.fromEntries(controllers.map((ref) => [ref, sheetPrint(ref)])),
    };
    pruneQuestions(now);
    return whisperGM(box('before the round ends', 'Psionic control at the end of this round (ask the players if you like). '
      + `Each button ends the round with that one change, every other control holding as it is:<br>${lines.join('<br>')}<br>`
      + `${answerButton('Keep everything as it is', qid, ' --keep-all')}<br>`
      + `For several changes at once, type them in one command: <code>!psi round --answer ${qid} --release TOKEN --keep TOKEN --by die `
      + '--cannot-perceive TOKEN</code> (each repeatable).'));
  };

  // power-pool: the control `text` names among those a question offered (any creature of
  // a link names it), for controlChoices: the controller it was offered to, as the
  // question has it (its sheet may have changed since: answerRoundQuestion asks again).
  const offeredControl = (question) => (text) => {
    const raw = String(text || '').trim();
    const wanted = Array.from(new Set([resolveFighter(raw), raw].filter(Boolean)));
    const offered = isObject(question.offered) ? question.offered : {};
    for (const controller of Object.keys(offered)) {
      const mine = isObject(offered[controller]) ? offered[controller] : {};
      const links = Array.isArray(mine.release) ? mine.release : [];
      for (const targets of links) {
        const target = wanted.find((ref) => Array.isArray(targets) && targets.includes(ref));
        if (target) return { controller, link: { targets }, target };
      }
    }
    return { error: `${echo(fighterName(wanted[0] || raw))} is under none of the controls this question offered.` };
  };

  // Why an answer to a power-pool question chooses what it did not offer, or null.
  const strayControl = (question, named) => {
    const miss = named.find((n) => {
      const mine = isObject(question.offered[n.controller]) ? question.offered[n.controller] : {};
      const entries = Array.isArray(mine[n.member]) ? mine[n.member] : [];
      return !entries.some((entry) => (n.member === 'keep'
        ? isObject(entry) && Array.isArray(entry.targets) && entry.targets.includes(n.target) && entry.by === n.by
        : Array.isArray(entry) && entry.includes(n.target)));
    });
    if (!miss) return null;
    const whom = chatSafe(fighterName(miss.target));
    const what = { release: `releasing ${whom}`, keep: `keeping ${whom} by ${miss.by === 'die' ? 'a die' : 'an action'}`, cannot_perceive: `losing sight of ${whom}` }[miss.member];
    return `${chatSafe(fighterName(miss.controller))} was not offered ${what} this round.`;
  };

  // `!psi round --answer QID [--close REF ...] [--pay-none]` (revised-2e) or `[--release
  // REF] [--keep REF --by die|action] [--cannot-perceive REF] [--keep-all]` (power-pool): a
  // button of the question before a round's end (or several of its offers typed), good
  // once and for an hour, and only for what it offered. The round ends for the fighters
  // it was asked for that are still outside the encounter; when the sheet of one it
  // chooses for changed since (its price, or its control, may have too), the companion
  // is asked again instead.
  const answerRoundQuestion = (msg, args) => {
    const qid = String(args.get('answer') || '');
    const questions = store().questions;
    const question = REQUEST_ID.test(qid) ? ownMember(questions, qid) || null : null;
    if (question && !(Date.now() - question.at < EXCHANGE_LIFETIME_MS)) delete questions[qid];
    if (!question || !questions[qid]) return refuse(msg.playerid, `there is no round waiting for that answer (${echo(qid)}): it was answered already, the round was ended another way, or the question is more than an hour old. Run !psi round again if the round has not ended.`);
    const pool = question.system === 'power-pool';
    if (pool && !isObject(question.offered)) question.offered = {};
    const decided = roundChoices(args, question.system, question.fighters, pool ? offeredControl(question) : undefined);
    if (decided.error) return refuse(msg.playerid, decided.error);
    const chosen = pool ? Array.from(new Set(decided.named.map((n) => n.controller))) : Object.keys(decided.choices);
    const stray = pool ? strayControl(question, decided.named)
      : chosen.filter((ref) => !(question.payers || []).includes(ref)).map((ref) => `${chatSafe(fighterName(ref))} was not offered closing its mind this round.`)[0];
    if (stray) return refuse(msg.playerid, stray);
    delete store().questions[qid];
    // A request too long to go (postRequest) ends nothing: the question may be answered again.
    const sent = (id) => {
      if (id === null) store().questions[qid] = question;
      return id;
    };
    const { fighters, left } = fightersOutside(question.fighters, 'joined the encounter since, which ends its own rounds');
    if (left.length) whisperGM(box('end of the round', `Left out: ${left.join(', ')}.`));
    if (!fighters.length) return refuse(msg.playerid, 'none of the fighters of that question is left outside the current encounter; nothing was sent.');
    const changed = chosen.filter((ref) => fighters.includes(ref) && question.sheets && question.sheets[ref] !== sheetPrint(ref));
    if (changed.length) {
      whisperGM(box('before the round ends', `The sheet of ${changed.map(fighterName).map(chatSafe).join(', ')} changed since the question, `
        + `and so may ${pool ? 'the control it holds' : 'the price'}: asking the companion again.`));
      return sent(askOrEndRound(msg.playerid, fighters, question.system, changed));
    }
    const kept = Object.fromEntries(chosen.filter((ref) => fighters.includes(ref)).map((ref) => [ref, decided.choices[ref]]));
    return sent(postEndRound(msg.playerid, fighters, question.system, kept));
  };

  // -------------------------------------------------------------- !psi rest

  const MAX_REST_HOURS = 1000;

  /**
   * `!psi rest [--hours N]` (GM only): a rest outside encounters for the fighters of the
   * selected tokens, by combatants.rest. There is no Turn Tracker fallback: a rest is not
   * a round of combat, so the GM says who rests. Fighters are picked as for !psi round
   * (once each, psionic, not in the current encounter: it holds its own copy) and must
   * share one system. revised-2e needs --hours (RULES.md 1.8: PSPs by the hour of sleep
   * or meditation); power-pool is one long rest and takes none; combat-strength's source
   * has no rest at all. Each is checked here, before anything is sent. power-pool: a
   * resting controller keeps no control by an action (seed 001: "Powers can't be
   * maintained when a creature rests"), so the creatures it holds by an action that do
   * not rest with it go along as `puppets`, their sheets written as the fighters' are.
   */
  const commandRest = (msg, args) => {
    if (!playerIsGM(msg.playerid)) return refuse(msg.playerid, 'only a GM may let characters rest.');
    const picked = selectedTokens(msg);
    if (!picked.length) {
      return refuse(msg.playerid, 'select the tokens of the characters who rest (a rest is not a round of combat: the Turn Tracker is not used). Nothing was sent.');
    }
    const { fighters, left } = fightersOutsideEncounter(picked, 'in the encounter, which keeps its own copy');
    if (left.length) whisperGM(box('rest', `Left out: ${left.join(', ')}.`));
    if (!fighters.length) return refuse(msg.playerid, 'none of the selected tokens represents a character with psionics outside the current encounter. Nothing was sent.');
    if (fighters.length > MAX_ROUND_FIGHTERS) return refuse(msg.playerid, `at most ${MAX_ROUND_FIGHTERS} characters rest together; select fewer tokens.`);
    const shared = sharedSystem(fighters);
    if (shared.error) return refuse(msg.playerid, `${shared.error}; select the tokens of one system and run !psi rest for each.`);
    const { system } = shared;
    if (system === 'combat-strength') {
      return refuse(msg.playerid, 'combat-strength has no rest: its rules say nothing of what a rest gives back, so there is nothing to apply. Nothing was sent.');
    }
    if (system !== 'revised-2e') {
      if (args.has('hours')) return refuse(msg.playerid, `${system} has one long rest, not hours: leave out --hours. Nothing was sent.`);
      return postRest(msg.playerid, fighters, system);
    }
    if (!args.has('hours')) {
      return refuse(msg.playerid, `revised-2e regains PSPs by the hour of sleep or meditation: give --hours N (a whole number from 1 to ${MAX_REST_HOURS}). Nothing was sent.`);
    }
    const hours = wholeNumber(args.get('hours'));
    if (hours === null || hours < 1 || hours > MAX_REST_HOURS) {
      return refuse(msg.playerid, `--hours must be a whole number of hours from 1 to ${MAX_REST_HOURS} (got "${echo(String(args.get('hours')).trim())}"). Nothing was sent.`);
    }
    return postRest(msg.playerid, fighters, system, hours);
  };

  // Sends combatants.rest for `fighters`, their sheets as they are now, for `hours`
  // (revised-2e; none: power-pool's long rest); in power-pool the creatures they hold by
  // an action go along (at most MAX_PUPPETS). `again` as for postEndRound.
  const postRest = (requester, fighters, system, hours, again = {}) => {
    const params = { system, combatants: fighters.map(combatantOf) };
    if (hours) params.hours = hours;
    const refused = again.refused || [];
    const puppets = system === 'power-pool' ? puppetsToSend(heldByAction(fighters), fighters, refused) : [];
    const paths = sendPuppets(params, {}, puppets);
    withHouse(system, params, again.options);
    const span = hours ? `${hours} hour${hours === 1 ? '' : 's'}` : '';
    const id = newId();
    return postRequest(rpcBody(id, 'combatants.rest', params), Object.assign({
      kind: 'rest', requester, involved: fighters.concat(puppets), sent: fighters, paths, title: span ? `Rest: ${span}` : 'Long rest',
    }, resendable(params, refused)), `${span ? `rest ${span}` : 'a long rest'} for ${fighters.map(fighterName).join(', ')}`);
  };

  // ------------------------------------------------------------ !psi house

  // The house rules (RULES.md's H-… defaults) the campaign switched, by system:
  // state.Mindscape.config.house = {system: {rule id: value}}, only values other than
  // the default. Every request of that system carries them as its `options`; an
  // encounter takes them when it is created and keeps them. Only the companion knows the
  // rules: !psi house asks it (systems.house_rules), and a change is checked against its
  // answer before anything is stored.

  const houseOf = (system) => {
    const house = store().config.house;
    return isObject(house) && isObject(house[system]) ? house[system] : {};
  };

  // `params` with the campaign's house rules of `system` as its options, when it has any
  // (`options`: those a refused request carried, to send it again as it was).
  const withHouse = (system, params, options = houseOf(system)) => (Object.keys(options).length
    ? Object.assign(params, { options: Object.assign({}, options) }) : params);

  const houseValueText = (value) => (value === true ? 'on' : value === false ? 'off' : String(value));

  // A rule id or value that may stand in a button's command as it is (a ')' or a
  // bracket would end the button early; anything else is listed without a button).
  const BUTTON_SAFE = /^[A-Za-z0-9_.-]{1,64}$/;

  // Whether a rule takes a run of whole numbers (H-CS-PEN-CAP: 0 to 100): too many for a
  // button each.
  const numberRange = (rule) => {
    const numbers = rule.choices.filter((c) => Number.isInteger(c));
    if (numbers.length !== rule.choices.length || numbers.length <= 6) return null;
    const min = Math.min(...numbers);
    const max = Math.max(...numbers);
    return max - min + 1 === numbers.length ? { min, max } : null;
  };

  // What a rule takes, in words: "on or off", "listed or initiative", "a whole number
  // from 0 to 100".
  const choicesText = (rule) => {
    const range = numberRange(rule);
    return range ? `a whole number from ${range.min} to ${range.max}` : rule.choices.map(houseValueText).join(' or ');
  };

  // The choice of `rule` that `text` names (on/off, true/false, yes/no for a switch; a
  // choice's own text in any case), or undefined.
  const houseValue = (rule, text) => {
    const wanted = String(text).trim().toLowerCase();
    return rule.choices.find((choice) => {
      if (choice === true) return ['on', 'true', 'yes'].includes(wanted);
      if (choice === false) return ['off', 'false', 'no'].includes(wanted);
      return String(choice).toLowerCase() === wanted;
    });
  };

  const RULE_ID = /^[A-Za-z0-9_.-]{1,64}$/;

  const commandHouse = (msg, args) => {
    if (!playerIsGM(msg.playerid)) return refuse(msg.playerid, 'only a GM may see or change the house rules.');
    const system = args.has('system') ? fixedWord(Object.keys(SYSTEMS), args.get('system')) : store().config.system;
    if (!ownMember(SYSTEMS, system)) return refuse(msg.playerid, `--system must be one of ${Object.keys(SYSTEMS).join(', ')}.`);
    const set = [];
    for (const pair of args.all('set')) {
      const match = /^([^=\s]+)\s*=\s*(.*\S)\s*$/.exec(pair);
      if (!match || !RULE_ID.test(match[1])) return refuse(msg.playerid, `--set wants RULE=VALUE, as H-2E-STUN=off (got "${echo(pair)}"). Nothing was changed.`);
      set.push([match[1].toUpperCase(), match[2]]);
    }
    const defaults = args.all('default').map((text) => text.trim().toUpperCase());
    if (defaults.some((text) => !RULE_ID.test(text))) {
      return refuse(msg.playerid, '--default wants a rule id, as H-2E-STUN, or ALL. Nothing was changed.');
    }
    const twice = set.map(([rid]) => rid).find((rid, i, all) => all.indexOf(rid) !== i);
    if (twice) return refuse(msg.playerid, `${echo(twice)} is set twice: say it once. Nothing was changed.`);
    const both = set.map(([rid]) => rid).filter((rid) => defaults.includes(rid));
    if (both.length) return refuse(msg.playerid, `${echo(both[0])} is both --set and --default: say one. Nothing was changed.`);
    const id = newId();
    return postRequest(rpcBody(id, 'systems.house_rules', { system }), {
      kind: 'house', requester: msg.playerid, involved: [], system, set, defaults, title: `House rules of ${system}`,
    }, `${set.length || defaults.length ? 'change' : 'read'} the house rules of ${system}`);
  };

  // The companion's house rules of a system, checked: [{id, text, default, choices}].
  const houseRulesIn = (result) => (Array.isArray(result.house_rules) ? result.house_rules : [])
    .filter((r) => isObject(r) && typeof r.id === 'string' && Array.isArray(r.choices) && r.choices.length);

  // A button that sets `rule` to `value` (a Roll20 query for a number range), or ''
  // when the id or the value cannot stand in a command.
  const houseButton = (system, rule, value) => {
    if (!BUTTON_SAFE.test(rule.id)) return '';
    const range = numberRange(rule);
    if (range) return `[set](!psi house --system ${system} --set ${rule.id}=?{${rule.id}: ${range.min} to ${range.max}|${value}})`;
    const text = houseValueText(value);
    return BUTTON_SAFE.test(text) ? `[${text}](!psi house --system ${system} --set ${rule.id}=${text})` : '';
  };

  // The rules and the campaign's values, with a button for every other choice (one that
  // asks for the number, for a number range).
  const houseList = (system, rules, values) => {
    if (!rules.length) return `The companion lists no house rules for ${chatSafe(system)}.`;
    const lines = rules.map((rule) => {
      const value = rule.id in values ? values[rule.id] : rule.default;
      const buttons = numberRange(rule) ? [houseButton(system, rule, value)]
        : rule.choices.filter((choice) => choice !== value).map((choice) => houseButton(system, rule, choice));
      const taken = rule.choices.includes(value) ? '' : `, which this companion does not take (it takes ${chatSafe(choicesText(rule))})`;
      const state = rule.id in values ? `<b>${chatSafe(houseValueText(value))}</b> (default ${chatSafe(houseValueText(rule.default))}${taken})`
        : `${chatSafe(houseValueText(value))} (default)`;
      return `<b>${chatSafe(rule.id)}</b>: ${state} ${buttons.filter(Boolean).join(' ')}<br>${chatSafe(rule.text)}`;
    });
    const known = new Set(rules.map((rule) => rule.id));
    const stale = Object.keys(values).filter((rid) => !known.has(rid));
    if (stale.length) {
      lines.push(`Set here but unknown to this companion (its requests are refused until you clear them): ${stale.map((rid) => `${chatSafe(rid)}`
        + (BUTTON_SAFE.test(rid) ? ` [clear](!psi house --system ${system} --default ${rid})` : '')).join(', ')}`);
    }
    return lines.join('<br>');
  };

  // Whether two sets of values hold the same rules at the same values.
  const sameHouse = (a, b) => Object.keys(a).length === Object.keys(b).length
    && Object.keys(a).every((rid) => rid in b && a[rid] === b[rid]);

  // The companion's answer: the changes asked for are checked against its rules and made
  // all together, or none is. An answer that comes late (after the timeout or a restart)
  // only shows the rules: the GM may have gone on meanwhile.
  const handleHouse = (job, result) => {
    const rules = houseRulesIn(result);
    const byId = new Map(rules.map((rule) => [rule.id.toUpperCase(), rule]));
    const before = houseOf(job.system);
    const title = `house rules: ${job.system}`;
    if (job.late && (job.set.length || job.defaults.length)) {
      return whisperGM(box(title, 'This answer came late, so the changes were not made: repeat them if you still want them.<br>'
        + `${houseList(job.system, rules, before)}`));
    }
    const values = Object.assign({}, before);
    const problems = [];
    job.defaults.forEach((text) => {
      if (text === 'ALL') { Object.keys(values).forEach((rid) => { delete values[rid]; }); return; }
      const rule = byId.get(text);
      const stored = Object.keys(values).find((rid) => rid.toUpperCase() === text);
      if (rule) delete values[rule.id];
      else if (stored) delete values[stored];
      else problems.push(`${echo(text)} is not a house rule of ${job.system}`);
    });
    job.set.forEach(([text, valueText]) => {
      const rule = byId.get(text);
      if (!rule) { problems.push(`${echo(text)} is not a house rule of ${job.system}`); return; }
      const value = houseValue(rule, valueText);
      if (value === undefined) {
        problems.push(`${chatSafe(rule.id)} takes ${chatSafe(choicesText(rule))}, not "${echo(valueText)}"`);
        return;
      }
      if (value === rule.default) delete values[rule.id];
      else values[rule.id] = value;
    });
    if (problems.length) {
      return whisperGM(box(title, `Nothing was changed: ${problems.join('; ')}.<br>${houseList(job.system, rules, before)}`));
    }
    const changed = !sameHouse(values, before);
    if (changed) {
      const house = Object.assign({}, isObject(store().config.house) ? store().config.house : {});
      if (Object.keys(values).length) house[job.system] = values;
      else delete house[job.system];
      store().config.house = house;
    }
    const enc = store().encounter;
    const kept = changed && enc && enc.system === job.system
      ? '<br>The current encounter keeps the house rules it was created with; a new one takes these.' : '';
    return whisperGM(box(title, `${changed ? 'Changed. ' : ''}Every ${chatSafe(job.system)} request of this campaign is resolved with these `
      + `(the buttons switch a rule):<br>${houseList(job.system, rules, values)}${kept}`));
  };

  // ------------------------------------------------------------ !psi config

  // What a generic mapping may hold (adapters/data/mapping.schema.json, $defs fields and
  // path): the combatant fields it names, and the attribute each is read from, with |max
  // for the attribute's maximum. The companion refuses every other mapping (so its every
  // request would fail), so !psi config --attr refuses it first; test/mindscape.test.mjs
  // checks these against the schema, so that they cannot drift apart.
  const MAPPING_FIELDS = ['kind', 'level', 'class_group', 'psp', 'psp_max', 'mthac0', 'int', 'wis', 'con', 'mac', 'mental_armor',
    'save_paralyzation', 'attacks', 'defenses', 'mind', 'conditions', 'condition_rounds', 'lost_powers', 'quick_mac', 'hp',
    'attack_strength', 'attack_strength_max', 'defense_strength', 'defense_strength_max', 'original_total', 'psionic', 'hit_dice',
    'die', 'pool', 'dedicated', 'mindless', 'controlled_by', 'controlling', 'spell_levels', 'blank_mind_save'];
  const MAPPING_PATH = /^[^.|]+(\.[^.|]+)*(\|max)?$/;
  const MAPPING_PATH_LENGTH = 200;

  const describeConfig = () => {
    const s = store();
    const campaignAttrs = Object.keys(s.config.attributes || {}).map((f) => `${f}=${chatSafe(s.config.attributes[f])}`).join(', ');
    const lines = [
      `Default system: <b>${s.config.system}</b>; adapter <b>${s.config.adapter}</b>${campaignAttrs ? `; ${campaignAttrs}` : ''}`,
      `Roll mode: <b>${s.config.rollMode}</b>`,
      `Request timeout: <b>${s.config.timeout} s</b>; chunk: <b>${s.config.chunk}</b> characters`,
      `Unlinked tokens: HP on bar <b>${s.config.hpBar || 'none'}</b>, PSP on bar <b>${s.config.pspBar || 'none'}</b>`,
    ];
    Object.keys(SYSTEMS).forEach((system) => {
      const values = houseOf(system);
      const set = Object.keys(values).map((rid) => `${chatSafe(rid)}=${chatSafe(houseValueText(values[rid]))}`);
      if (set.length) lines.push(`House rules of ${system} (<code>!psi house</code>): ${set.join(', ')}`);
    });
    Object.keys(s.characters).forEach((charId) => {
      const cfg = s.characters[charId];
      const attrs = Object.keys(cfg.attributes || {}).map((f) => `${f}=${chatSafe(cfg.attributes[f])}`).join(', ');
      lines.push(`${chatSafe(characterName(charId))}: ${cfg.system || '(default)'}, ${cfg.adapter || '(default adapter)'}${attrs ? `, ${attrs}` : ''}`);
    });
    return lines.join('<br>');
  };

  // Applies --adapter and --attr to a settings object ({adapter?, attributes}); returns
  // an error text or null.
  const applyMappingOptions = (args, target) => {
    if (args.has('adapter')) {
      const adapter = fixedWord(ADAPTERS, args.get('adapter'));
      if (!adapter) return `--adapter must be one of ${ADAPTERS.join(', ')}.`;
      target.adapter = adapter;
    }
    target.attributes = Object.assign({}, target.attributes || {});
    const given = new Set();
    for (const pair of args.all('attr')) {
      const match = /^([^=\s]+)\s*=\s*(.*)$/.exec(pair);
      if (!match) return `--attr wants field=attribute (got "${echo(pair)}").`;
      const [, field, path] = match;
      if (!MAPPING_FIELDS.includes(field)) {
        return `--attr: "${echo(field)}" is no combatant field the companion maps; the fields are ${MAPPING_FIELDS.join(', ')} (docs/COMBATANTS.md).`;
      }
      if (given.has(field)) return `--attr names ${field} twice: give each field once.`;
      given.add(field);
      if (path !== '' && !(Array.from(path).length <= MAPPING_PATH_LENGTH && MAPPING_PATH.test(path))) {
        return `--attr ${field}: "${echo(path)}" is no attribute the companion reads: a name without | (nor a dot at either end or two in a row), `
          + `with |max after it for the attribute's maximum, at most ${MAPPING_PATH_LENGTH} characters.`;
      }
      if (path === '') delete target.attributes[field];
      else target.attributes[field] = path;
    }
    if (args.has('system')) {
      const system = fixedWord(Object.keys(SYSTEMS), args.get('system'));
      if (!system) return `--system must be one of ${Object.keys(SYSTEMS).join(', ')}.`;
      target.system = system;
    }
    return null;
  };

  const CAMPAIGN_ONLY = ['rollmode', 'timeout', 'chunk', 'hpbar', 'pspbar'];
  const CHARACTER_OPTIONS = ['system', 'adapter', 'attr', 'reset'];

  /**
   * `!psi config`: with --char or selected tokens it sets those characters' system,
   * adapter and attribute names; otherwise the campaign's. GM only; whispers the result.
   * Every option is checked before anything is stored: one bad option, or a campaign
   * option given for characters, changes nothing.
   */
  const commandConfig = (msg, args) => {
    if (!playerIsGM(msg.playerid)) return refuse(msg.playerid, 'only a GM may change Mindscape settings.');
    const s = store();
    // Which characters the options are for is never guessed: with --char and a selection
    // both, or a selected token of no character, the campaign would be changed (or
    // another character) where the GM meant a character.
    const picked = selectedTokens(msg);
    if (args.has('char') && picked.length) {
      return refuse(msg.playerid, '--char names the character, and tokens are selected too: deselect the tokens, or leave out --char. Nothing was changed.');
    }
    const blank = unrepresented(picked);
    if (blank.length && args.options.length) {
      return refuse(msg.playerid, `Selected: ${blank.join(', ')}, which has no settings: select only tokens of characters, `
        + 'or none to change the campaign. Nothing was changed.');
    }
    if (args.has('reset') && args.options.some(([key]) => !['reset', 'char'].includes(key))) {
      return refuse(msg.playerid, `--reset forgets the character's settings, and --${args.options.map(([key]) => key).find((key) => !['reset', 'char'].includes(key))} `
        + 'would change them: give --reset alone (with --char or the tokens selected), then the new settings. Nothing was changed.');
    }
    const targets = args.has('char') ? [resolveCharacter(args.get('char'))] : selectedCharacters(msg);
    if (args.has('char') && !targets[0]) return refuse(msg.playerid, '--char must name a character or a token that represents one. Nothing was changed.');
    if (targets.length) {
      const campaignOnly = CAMPAIGN_ONLY.filter((key) => args.has(key));
      if (campaignOnly.length) {
        return refuse(msg.playerid, `--${campaignOnly.join(', --')} ${campaignOnly.length > 1 ? 'are campaign settings' : 'is a campaign setting'}, `
          + 'not a character\'s: deselect the tokens (and leave out --char) to change it. Nothing was changed.');
      }
      // Without a character option this only shows the settings: no empty entry is kept.
      if (!CHARACTER_OPTIONS.some((key) => args.has(key))) return whisperGM(box('settings', describeConfig()));
      const changed = {};
      for (const charId of targets) {
        if (args.has('reset')) continue;
        const cfg = Object.assign({}, s.characters[charId] || {});
        const error = applyMappingOptions(args, cfg);
        if (error) return refuse(msg.playerid, `${error} Nothing was changed.`);
        changed[charId] = cfg;
      }
      targets.forEach((charId) => {
        if (args.has('reset')) delete s.characters[charId];
        else s.characters[charId] = changed[charId];
      });
      return whisperGM(box('settings', describeConfig()));
    }
    if (args.has('reset')) return refuse(msg.playerid, '--reset forgets a character\'s settings: select its token or name it with --char. Nothing was changed.');
    const cfg = Object.assign({}, s.config);
    const error = applyMappingOptions(args, cfg);
    if (error) return refuse(msg.playerid, `${error} Nothing was changed.`);
    if (args.has('rollmode')) {
      const mode = fixedWord(ROLL_MODES, args.get('rollmode'));
      if (!mode) return refuse(msg.playerid, `--rollmode must be one of ${ROLL_MODES.join(', ')}. Nothing was changed.`);
      cfg.rollMode = mode;
    }
    if (args.has('timeout')) {
      const seconds = wholeNumber(args.get('timeout'));
      if (seconds === null || seconds < 5 || seconds > 600) return refuse(msg.playerid, '--timeout must be 5 to 600 seconds. Nothing was changed.');
      cfg.timeout = seconds;
    }
    if (args.has('chunk')) {
      const size = wholeNumber(args.get('chunk'));
      if (size === null || size < 100 || size > 10000) return refuse(msg.playerid, '--chunk must be 100 to 10000 characters. Nothing was changed.');
      cfg.chunk = size;
    }
    for (const [key, field] of [['hpbar', 'hpBar'], ['pspbar', 'pspBar']]) {
      if (!args.has(key)) continue;
      const bar = fixedWord(BAR_SETTINGS, args.get(key));
      if (!bar) return refuse(msg.playerid, `--${key} must be one of ${BAR_SETTINGS.join(', ')}. Nothing was changed.`);
      cfg[field] = bar;
    }
    if (cfg.hpBar !== 'none' && cfg.hpBar === cfg.pspBar) return refuse(msg.playerid, 'HP and PSP cannot share one bar. Nothing was changed.');
    // Nothing is stored unless every option was valid.
    s.config = cfg;
    return whisperGM(box('settings', describeConfig()));
  };

  // --------------------------------------------------------- !psi encounter

  // Changing calls name the revision this script last saw, so that a call replayed by a
  // second relay, or sent after the encounter moved on, is refused (4009) instead of
  // running twice. encounter.add needs none: a replayed add is refused as "already in the
  // encounter", so it cannot add anyone twice.
  const withRevision = (enc, params) => (Number.isInteger(enc.revision) ? Object.assign(params, { revision: enc.revision }) : params);

  // Asks the companion where the encounter stands; its answer refreshes the revision and
  // the combatants here (HANDLERS['encounter.get']).
  const resync = (requester) => {
    const enc = store().encounter;
    if (!enc) return undefined;
    const id = newId();
    return postRequest(rpcBody(id, 'encounter.get', { id: enc.id }), { kind: 'encounter.get', requester, involved: [] }, 'resync the encounter');
  };

  const encounterRequest = (msg, method, params, job, description) => {
    const id = newId();
    return postRequest(rpcBody(id, method, params), Object.assign({ requester: msg.playerid, involved: [] }, job), description);
  };

  const sendResolve = (requester, force) => {
    const enc = store().encounter;
    const params = withRevision(enc, { id: enc.id });
    if (force) params.force = true;
    return postRequest(rpcBody(newId(), 'encounter.resolve', params), {
      kind: 'encounter.resolve', requester, involved: Object.keys(enc.combatants), title: enc.name || 'Encounter', encounter: enc.id,
    }, 'resolve the next step of the encounter');
  };

  // ------------------------------------------------------ held combatants

  // A step (a resolve or an undo) is stored in the companion before its write-back
  // reaches the sheets. When the write-back never gets there (the companion could not
  // make it: updates_failed; or writing it here failed), the sheet is stale and the
  // encounter's copy of that combatant is the true one: the refresh before the next
  // resolve would put the stale sheet back into the encounter and lose the step. Such a
  // combatant is *held*: that refresh leaves it out until the GM has brought the sheet in
  // line and run !psi encounter refresh. `enc.held` lists the refs; `enc.holds` counts
  // the holds made, so that a refresh run that sees it change knows a sheet it read may
  // lack the step (the GM cannot have put it right yet). An encounter saved before holds
  // existed has neither: nobody is held.
  //
  // A fighter held because writing its sheet failed here keeps that write in
  // `enc.writes[ref]`: {attributes (as in an update), expect: {name: {part: what the
  // sheet showed when it failed}}, older: {name: {part: [request id]}}}. The refresh
  // before a resolve tries it again while the sheet still shows exactly that (never over
  // the GM's hand), and a write that lands ends the hold. `older` lists, for each part,
  // the requests still waiting when the step that wrote it failed that were sent before
  // it (rememberWrites' olderWriters): where the write lands, those still waiting then
  // remember the places it wrote, which may be others than it reached when it failed
  // (the GM linked a bar, or set it to none, since). Request ids, not seqs: a seq is
  // used again once its request is answered. A write kept from before `older` existed
  // remembers nothing where it lands. A later step that writes the same values takes
  // them off the waiting write, and one that leaves nothing waiting ends the hold. A
  // fighter held because the companion could not make the write-back has no waiting
  // write: nothing to try again. The parts a waiting write of its had then are kept in
  // `enc.byHand[ref]` ({name: {part: value}}), the GM's to put by hand, until the hold
  // ends or a later step's write of them lands (stillWaits); so are those of a later
  // step's write that fails while it is held with no write to try (settleWrites).

  const heldOf = (enc) => (enc && Array.isArray(enc.held) ? enc.held.filter((ref) => enc.combatants[ref]) : []);

  const writesOf = (enc) => {
    if (!isObject(enc.writes)) enc.writes = {};
    return enc.writes;
  };

  // A fighter whose character or token is gone is never held: it is out of the fight.
  const holdFighters = (enc, refs) => {
    enc.held = Array.from(new Set(heldOf(enc).concat(refs.filter((ref) => enc.combatants[ref] && fighterCharacter(ref)))));
    enc.holds = (Number.isInteger(enc.holds) ? enc.holds : 0) + 1;
  };

  // How the GM is told of a step (isStep): "the undo", "the action" (a public one), "the step".
  const stepWords = (job) => (job.kind === 'encounter.undo' ? 'the undo' : job.kind === 'encounter.declare' ? 'the action' : 'the step');

  // A step whose answer the bridge could not give (BRIDGE_UNCERTAIN: a timeout, a
  // dropped connection) may be stored in the companion all the same, its write-back
  // never made: the refresh before the next resolve would then take the stale sheets
  // back and lose it. So every combatant is held until the companion's view tells
  // (settleUncertain): still at the revision the step named, it was not stored and the
  // holds it made end; past it, it was, and they stay until the GM has brought the
  // sheets in line. After a second bridge's copy of the step was refused as stale (4009:
  // the companion was past that revision already) the view cannot tell: past it is
  // what it then is either way. `enc.uncertain`: {revision, refs (those it held), what,
  // stale}. The GM's note, or ''.
  const holdUncertain = (job) => {
    const enc = isStep(job) ? jobEncounter(job) : null;
    if (!enc || !Number.isInteger(job.sentRevision)) return '';
    const all = Object.keys(enc.combatants);
    const before = heldOf(enc);
    holdFighters(enc, all);
    const refs = heldOf(enc).filter((ref) => !before.includes(ref));
    const earlier = isObject(enc.uncertain) ? enc.uncertain.refs : [];
    enc.uncertain = { revision: job.sentRevision, refs: Array.from(new Set(earlier.concat(refs))), what: stepWords(job), stale: job.stale === true };
    return `<br>Until the companion's view tells whether it was stored, the encounter keeps its own copy of every combatant${all.length ? ` (${namesOf(all)})` : ''}: `
      + 'the refresh before a resolve leaves them out, so that a step stored without its write-back is not lost.';
  };

  // The companion's view after a step of unknown fate (holdUncertain): the GM's note.
  const settleUncertain = (enc, view) => {
    const doubt = enc.uncertain;
    if (!isObject(doubt) || !Number.isInteger(view.revision)) return '';
    delete enc.uncertain;
    const what = chatSafe(doubt.what);
    if (view.revision === doubt.revision) {
      (Array.isArray(doubt.refs) ? doubt.refs : []).forEach((ref) => releaseFighter(enc, ref));
      return `The companion did not store ${what} whose answer was lost (it is still at revision ${doubt.revision}): nobody is held for it; repeat it if it still fits.`;
    }
    const keep = `The encounter keeps its own copy of those held (below) until you have put those values on their sheets and ${REFRESH_TO_RELEASE}`;
    if (doubt.stale) {
      return `The companion's view cannot tell whether it stored ${what} whose answer was lost: a second bridge's copy of it was refused as stale, the companion being past `
        + `revision ${doubt.revision} already (now ${chatSafe(view.revision)}), as it is when the other copy was stored, and also when another call got there first. `
        + `If it was stored, its write-back never reached the sheets, and no card was posted for it. ${keep}`;
    }
    return `The companion stored ${what} whose answer was lost (it was at revision ${doubt.revision}, now ${chatSafe(view.revision)}): its write-back never reached the sheets, `
      + `and no card was posted for it. ${keep}`;
  };

  // Leaves fighter `ref`'s attribute parts `attributes` to the GM to put by hand
  // (`enc.byHand`, stillWaits), over those already left.
  const leaveByHand = (enc, ref, attributes) => {
    if (!isObject(enc.byHand)) enc.byHand = {};
    enc.byHand[ref] = mergeParts(isObject(enc.byHand[ref]) ? enc.byHand[ref] : {}, attributes);
  };

  const releaseFighter = (enc, ref) => {
    enc.held = heldOf(enc).filter((held) => held !== ref);
    delete writesOf(enc)[ref];
    if (isObject(enc.byHand)) delete enc.byHand[ref];
  };

  // How a value shows on a sheet, for comparing: a missing attribute shows as empty.
  const shown = (value) => (value === undefined || value === null ? '' : String(value));

  // What a fighter's sheet shows now for each attribute part an update sets.
  const shownFor = (ref, attributes) => {
    const sheet = sheetAttribs(ref);
    const out = {};
    Object.keys(attributes).forEach((name) => {
      const attr = sheet.find((a) => sameName(a.name, name));
      out[name] = {};
      Object.keys(attributes[name]).forEach((part) => { out[name][part] = shown(attr && attr[part]); });
    });
    return out;
  };

  // Each attribute part of `b` over `a` ({name: {part: value}}).
  const mergeParts = (a, b) => {
    const out = {};
    [a, b].forEach((parts) => Object.keys(parts).forEach((name) => {
      out[name] = Object.assign({}, out[name] || {}, parts[name]);
    }));
    return out;
  };

  // `parts` without the attribute parts `written` set.
  const partsLeft = (parts, written) => {
    const out = {};
    Object.keys(parts).forEach((name) => {
      const setName = Object.keys(written).find((w) => sameName(w, name));
      const left = Object.keys(parts[name]).filter((part) => !(setName && part in written[setName]));
      if (left.length) out[name] = Object.fromEntries(left.map((part) => [part, parts[name][part]]));
    });
    return out;
  };

  // A waiting write (writesOf) without the attribute parts `placed`, now in place: its
  // attributes, expect and older (where it has them) for the parts still to write.
  const waitingWithout = (waiting, placed) => {
    const rest = { attributes: partsLeft(waiting.attributes, placed), expect: partsLeft(waiting.expect, placed) };
    if (isObject(waiting.older)) rest.older = partsLeft(waiting.older, placed);
    return rest;
  };

  // Whether a fighter's sheet no longer shows, for some part of its waiting write, what
  // it showed when the write failed nor the value to be written: the GM's hand, which a
  // retry does not write over (retryWrite). A part that already shows the value to be
  // written counts as unchanged (a write that threw may have put it in place all the
  // same, or the GM put it right).
  const sheetMoved = (ref, waiting) => {
    const now = shownFor(ref, waiting.expect);
    return !Object.keys(waiting.expect).every((name) => Object.keys(waiting.expect[name])
      .every((part) => [waiting.expect[name][part], (waiting.attributes[name] || {})[part]].map(shown).includes(now[name][part])));
  };

  // A fighter's waiting write rebuilt by a later step (`next`) keeps the `changed` of the
  // one it replaces (retryWrite) while the sheet still differs for the parts left: a
  // step that wrote over the very parts the GM changed leaves the rest to be tried again.
  const keepChanged = (ref, waiting, next) => (waiting.changed && sheetMoved(ref, next) ? Object.assign(next, { changed: true }) : next);

  // After a step's (or undo's) updates were applied, in their order: what an update put
  // in place takes those parts off the fighter's waiting write (all of it: the hold ends);
  // what it missed (`missedAt`: the update's index to its parts not in place, applyUpdates'
  // failed) joins the waiting write (its newer values win, the older expectations stay,
  // and its parts list `older`, the ids of the requests sent before the step), unless
  // the fighter is held with no write to try (the companion's failure, a step of unknown
  // fate): then its parts join `byHand`, the GM's to put by hand. An update that threw
  // after some of its writes does both, what it missed first.
  // Returns the refs whose sheets this answer left behind: a missed part that a later
  // update of the same answer wrote leaves nothing behind.
  const settleWrites = (enc, updates, missedAt, older) => {
    const writes = writesOf(enc);
    const missed = {};
    // Parts `attributes` of fighter `ref` missed their place.
    const missing = (ref, attributes) => {
      if (!fighterCharacter(ref)) return;
      const waiting = writes[ref];
      missed[ref] = mergeParts(missed[ref] || {}, attributes);
      // Held with no write to try (the companion's failure, a step of unknown fate): the
      // GM's to put by hand with the rest, until the hold ends (`byHand`, stillWaits).
      if (heldOf(enc).includes(ref) && !waiting) {
        leaveByHand(enc, ref, attributes);
        return;
      }
      const expect = shownFor(ref, attributes);
      const before = Object.fromEntries(Object.keys(attributes)
        .map((name) => [name, Object.fromEntries(Object.keys(attributes[name]).map((part) => [part, older]))]));
      writes[ref] = waiting
        ? keepChanged(ref, waiting, { attributes: mergeParts(waiting.attributes, attributes), expect: mergeParts(expect, waiting.expect),
          older: mergeParts(isObject(waiting.older) ? waiting.older : {}, before) })
        : { attributes, expect, older: before };
    };
    // Parts `attributes` of fighter `ref` are in place.
    const placed = (ref, attributes) => {
      const waiting = writes[ref];
      if (missed[ref]) missed[ref] = partsLeft(missed[ref], attributes);
      if (missed[ref] && !Object.keys(missed[ref]).length) delete missed[ref];
      // What it wrote is no longer the GM's to put by hand either (stillWaits).
      if (isObject(enc.byHand) && isObject(enc.byHand[ref])) {
        const left = partsLeft(enc.byHand[ref], attributes);
        if (Object.keys(left).length) enc.byHand[ref] = left;
        else delete enc.byHand[ref];
      }
      if (!waiting) return;
      const rest = waitingWithout(waiting, attributes);
      if (Object.keys(rest.attributes).length) writes[ref] = keepChanged(ref, waiting, rest);
      else releaseFighter(enc, ref);
    };
    updates.forEach((update, i) => {
      const ref = update.character_id;
      // (an update that wrote nothing, every part left to a newer answer: applyUpdates)
      if (!enc.combatants[ref] || !Object.keys(update.attributes).length) return;
      const lacks = missedAt.has(i) ? missedAt.get(i) : {};
      if (Object.keys(lacks).length) missing(ref, lacks);
      const landed = partsLeft(update.attributes, lacks);
      if (Object.keys(landed).length) placed(ref, landed);
    });
    return new Set(Object.keys(missed));
  };

  // Tries a held fighter's waiting write again (the refresh before a resolve): 'written'
  // (the hold is over), 'changed' (its sheet no longer shows what it showed when the
  // write failed, nor what is to be written: the GM's hand is not written over; marked
  // `changed` for status, sheetMoved), 'failed' (again), or null (no waiting write).
  // Where it lands, the requests of each part's `older` still waiting remember the
  // places it wrote; where it throws again, those it may have reached (rememberFailed).
  const retryWrite = (enc, ref) => {
    const waiting = writesOf(enc)[ref];
    if (!waiting) return null;
    if (sheetMoved(ref, waiting)) { waiting.changed = true; return 'changed'; }
    delete waiting.changed;
    // Where each part lands, taken before writing (writing links and unlinks no bar).
    const tokens = waitingTokens();
    const landing = Object.keys(waiting.attributes).flatMap((name) => Object.keys(waiting.attributes[name])
      .map((part) => ({ ids: ownMember(ownMember(waiting.older, name), part), name, part, where: placesOf(ref, name, part, tokens) })));
    const olderOf = (ids) => (Array.isArray(ids) ? ids.map((id) => ownMember(store().pending, String(id))).filter(Boolean) : []);
    const wrote = (ids, where) => olderOf(ids).forEach((job) => rememberIn(job, Object.fromEntries(landedAt(where).map((place) => [place, true]))));
    const { failed } = applyUpdates([{ character_id: ref, attributes: waiting.attributes }]);
    if (failed.length) {
      // The parts it put in place before the throw leave the waiting write, as a step's
      // write that lands takes them off (settleWrites).
      const missed = failed[0].attributes;
      writesOf(enc)[ref] = waitingWithout(waiting, partsLeft(waiting.attributes, missed));
      // A part it missed may have been written in part before the throw, where it did not
      // reach when its step failed (a bar linked since): those requests remember it as
      // applyUpdates remembers a write that throws, the write still waiting (markWaiting).
      landing.forEach(({ ids, name, part, where }) => {
        if (!(isObject(missed[name]) && part in missed[name])) { wrote(ids, where); return; }
        const places = {};
        rememberFailed(places, ref, name, part, missed[name][part], where);
        markWaiting(enc, places);
        olderOf(ids).forEach((job) => rememberIn(job, places));
      });
      return 'failed';
    }
    releaseFighter(enc, ref);
    landing.forEach(({ ids, where }) => wrote(ids, where));
    return 'written';
  };

  // The current encounter when a request was made for it (a job from before requests
  // recorded their encounter counts as the current one's), else null.
  const jobEncounter = (job) => {
    const enc = store().encounter;
    return enc && (job.encounter === undefined || job.encounter === enc.id) ? enc : null;
  };

  // An answer's revision moves the encounter its request was made for, and no other; only
  // a revision that is one (another would drop the guard of every later call).
  const takeRevision = (job, result) => {
    const enc = jobEncounter(job);
    // Revisions only grow: a late answer does not take the encounter back to its own
    // (a resync or a later step moved it on meanwhile), as a refresh's does not.
    if (enc && Number.isInteger(result.revision) && !(enc.revision > result.revision)) enc.revision = result.revision;
  };

  const STEP_KINDS = ['encounter.resolve', 'encounter.undo'];

  // Whether a request stores something in an encounter before its write-back reaches the
  // sheets: a resolve, an undo, or a public action (power-pool: release, rest ...).
  const isStep = (job) => STEP_KINDS.includes(job.kind) || (job.kind === 'encounter.declare' && job.public === true);

  const RETRY_NOTE = 'Before the next resolve, the write it missed is tried again (the hold ends when it lands) as long as the sheet still shows what it showed when writing failed:';

  const CHANGED_NOTE = 'Not written again, the sheet has changed since writing failed:';

  // encounter status: what a held token's own record (store().tokens) holds comes only
  // from an answer's write (applyTokenUpdate writes it first, so a write that fails here
  // still puts it there; a write-back the companion could not make, or a step whose
  // answer was lost, never reached it), and a refresh takes the token with it.
  const OWN_RECORD_NOTE = 'No command sets Mindscape\'s own record of a token: a write that failed here put its values there all the same, '
    + 'but a write-back the companion could not make, or a step whose answer was lost, did not, and the refresh that lets go of the token takes it '
    + 'with what that record holds:';

  const REFRESH_TO_RELEASE = 'run <code>!psi encounter refresh</code> (until then, the refresh before a resolve leaves them out).';

  // A step's write-back that the companion could not make (updates_failed, API.md): the
  // step is done there all the same, so every combatant of the encounter is held.
  const reportUnmadeWriteBack = (job, result) => {
    const failure = result.updates_failed;
    const errorId = ['string', 'number'].includes(typeof failure.error_id) ? chatSafe(failure.error_id) : 'none given';
    const undo = job.kind === 'encounter.undo';
    const enc = jobEncounter(job);
    const words = stepWords(job);
    const what = words[0].toUpperCase() + words.slice(1);
    const lines = [`${what} is stored in the companion, but the companion could not write it to the sheets `
      + `(error id <b>${errorId}</b>; the companion's log has the cause). The sheets still show the state before it`
      + `${undo ? ', with the undone step\'s changes' : ''}.`];
    if (enc) {
      const all = Object.keys(enc.combatants);
      holdFighters(enc, all);
      // Nothing to try again: the companion never made the write. The parts a waiting
      // write still had are now the GM's to put by hand (`byHand`, stillWaits).
      all.forEach((ref) => {
        const waiting = writesOf(enc)[ref];
        if (isObject(waiting) && isObject(waiting.attributes)) leaveByHand(enc, ref, waiting.attributes);
        delete writesOf(enc)[ref];
      });
      lines.push(`The encounter keeps its own copy of every combatant${all.length ? ` (${namesOf(all)})` : ''} until you have brought `
        + `the sheets in line by hand (from the card, or <code>!psi encounter status</code>) and ${REFRESH_TO_RELEASE}`);
    } else {
      lines.push('That encounter is no longer the current one here: bring the sheets in line by hand.');
    }
    whisperGM(box('sheets not updated', lines.join('<br>')));
  };

  // Where the GM is to put an attribute part of an unlinked token (reportMissedWrites,
  // encounter status), as applyTokenUpdate puts it, given its character's barBindings:
  // 'own' for the part kept in store().tokens, which no command sets.
  const missedPlace = (bindings, name, part) => {
    const place = tokenPlace(bindings, name, part);
    if (place === 'own') return 'own';
    if (place === 'sheet') return 'its character\'s sheet, shared by every token of it';
    // PSP_max's current is the bar's max: named so, as a max without "max" would read as the value.
    return `its token's bar ${place.bar}${(place.side === 'max') === (part === 'max') ? '' : ` ${place.side}`}`;
  };

  // A fighter's values for the GM to put by hand (f: {ref, attributes, gone?}): "HP 2, max
  // 20; psi_mind open", and for an unlinked token each with where it belongs ("HP 2 (its
  // token's bar 1)"), one attribute split where its parts land in different places.
  // {text, token: whether it is an unlinked token still there, own: whether any part
  // belongs in Mindscape's record of it}. A failed write has none there
  // (applyTokenUpdate writes the record first); the encounter's copy of a held token
  // (encounter status) may.
  const missedValues = (f) => {
    const token = f.gone ? null : ownToken(f.ref);
    const bindings = token ? barBindings(fighterCharacter(f.ref)) : [];
    const items = [];
    Object.keys(f.attributes).forEach((name) => ['current', 'max'].filter((part) => part in f.attributes[name]).forEach((part) => {
      const place = token ? missedPlace(bindings, name, part) : '';
      let item = items.find((i) => i.name === name && i.place === place);
      if (!item) {
        item = { name, place, parts: [] };
        items.push(item);
      }
      item.parts.push(`${part === 'max' ? 'max ' : ''}${chatSafe(f.attributes[name][part])}`);
    }));
    const where = (place) => (place === 'own' ? 'Mindscape\'s own record of this token' : place);
    return {
      text: items.map((i) => `${chatSafe(i.name)} ${i.parts.join(', ')}${i.place ? ` (${where(i.place)})` : ''}`).join('; '),
      token: Boolean(token),
      own: items.some((i) => i.place === 'own'),
    };
  };

  // The fighters whose write-back failed here (applyUpdates), with the values they
  // missed: the GM learns whose sheet lacks what, and for an unlinked token where each
  // value belongs; after an encounter's step, those in the encounter it left behind
  // (`behind`, settleWrites) are held.
  const reportMissedWrites = (job, failed, othersWritten, behind) => {
    const enc = isStep(job) ? jobEncounter(job) : null;
    const inEncounter = enc ? Array.from(new Set(failed.map((f) => f.ref))).filter((ref) => enc.combatants[ref] && behind.has(ref)) : [];
    if (inEncounter.length) holdFighters(enc, inEncounter);
    const values = failed.map(missedValues);
    const lines = failed.map((f, i) => `<b>${chatSafe(fighterName(f.ref))}</b> (${f.gone ? 'its character or token is gone' : 'writing failed; the API console has the details'}): `
      + `${values[i].text}`);
    const retrying = inEncounter.filter((ref) => writesOf(enc)[ref]);
    const byHand = inEncounter.filter((ref) => !retrying.includes(ref));
    const notes = [];
    if (byHand.length) notes.push(`The encounter keeps its own copy of ${namesOf(byHand)} until you have brought the sheet in line by hand and ${REFRESH_TO_RELEASE}`);
    if (retrying.length) {
      notes.push(`The encounter keeps its own copy of ${namesOf(retrying)} until the write lands or you have brought the sheet in line by hand and `
        + `run <code>!psi encounter refresh</code>. ${RETRY_NOTE} ${namesOf(retrying)}.`);
    }
    const left = enc && failed.some((f) => enc.combatants[f.ref] && !f.gone) && !inEncounter.length
      ? ['A later change of the same answer wrote over what was missed: nobody is held.'] : [];
    // (a character's values, or a gone fighter's, are all the sheet's)
    const byHandNote = values.some((v) => v.token)
      ? 'Put the values for a sheet or a token\'s bar there by hand if it is still needed.'
      : 'Put these values on the sheet by hand if it is still needed.';
    const next = notes.concat(left).join('<br>') || byHandNote;
    whisperGM(box('sheets not updated', `These sheets missed the changes of this answer (${chatSafe(job.title || job.description || job.kind)}); `
      + `${othersWritten ? 'the other changes were written' : 'nothing was written'}:<br>${lines.join('<br>')}<br>${next}`));
  };

  // ------------------------------------------- taking the sheets again (refresh)

  // An encounter keeps its own copy of each combatant from the moment it joined, and its
  // write-backs write absolute values: a change made on the sheet since (a sword's HP,
  // PSPs spent on a power) would be put back by the next one. encounter.refresh takes
  // the sheet again. A *run* does it for every combatant of the encounter, one request at
  // a time, each naming the revision the answer before it gave (a refresh that changed
  // something is a step of its own, so a second request sent beside it would be stale).
  // The run travels from request to request in the pending job: `run` is
  // {encounter, requester, ref (being refreshed), queue (still to do), done: [{ref,
  // changed, dropped, held}], gone, kept, holds, resolve: null | {force}}. It stops at
  // the first error and at a late answer (after a timeout or a restart the GM may have
  // gone on: nothing follows unasked); a run made for !psi encounter resolve sends the
  // resolve only at its end. It leaves out (`kept`) the combatants held (above): a run
  // for a resolve all of them, the GM's own !psi encounter refresh only those held while
  // it ran (`holds`: enc.holds when it began); it takes the others and lets go of them.

  const refreshUnderWay = (enc) => Object.values(store().pending)
    .some((job) => job.kind === 'encounter.refresh' && !job.late && isObject(job.run) && job.run.encounter === enc.id);

  const namesOf = (refs) => refs.map(fighterName).map(chatSafe).join(', ');

  // What a run found, one line each: the combatants whose fields changed, those whose
  // sheet matched, those held and left out, those whose token or character is gone, and
  // whom it let go of. `complete`: the run ended.
  const refreshReport = (run, complete) => {
    const changed = run.done.filter((d) => d.changed.length);
    const same = run.done.filter((d) => !d.changed.length).map((d) => d.ref);
    const kept = run.kept || [];
    const lines = changed.map((d) => `${chatSafe(fighterName(d.ref))}: ${d.changed.map(chatSafe).join(', ')} taken again from the sheet.`);
    if (same.length) lines.push(`${changed.length || kept.length || !complete ? 'Unchanged' : 'Every sheet matches the encounter'}: ${namesOf(same)}.`);
    if (kept.length && run.stepPending === 'stale') {
      lines.push(`A step or undo of this encounter was refused as stale, but a second bridge's answer to it is still arriving, which would write the sheets after they were read: `
        + `the encounter kept its own copy of ${namesOf(kept)}. Once that answer is in (or its parts stop coming for the timeout), run <code>!psi encounter refresh</code>.`);
    } else if (kept.length && run.stepPending) {
      lines.push(`A step or undo of this encounter is still waiting for its answer, which would write the sheets after they were read: `
        + `the encounter kept its own copy of ${namesOf(kept)}. Once that answer is in (or its hour is over), run <code>!psi encounter refresh</code>.`);
    } else if (kept.length && run.resolve) lines.push(`Kept the encounter's copy of ${namesOf(kept)} (${kept.length > 1 ? 'their sheets' : 'its sheet'} missed a write-back).`);
    const retried = (how) => Object.keys(run.retried || {}).filter((ref) => run.retried[ref] === how);
    if (retried('written').length) lines.push(`Wrote again what ${namesOf(retried('written'))} missed (the sheet still showed what it showed when writing failed): no longer held.`);
    if (retried('failed').length) lines.push(`Writing what ${namesOf(retried('failed'))} missed failed again (the API console has the details).`);
    if (retried('changed').length) {
      lines.push(`${CHANGED_NOTE} ${namesOf(retried('changed'))}. `
        + 'Bring it in line (<code>!psi encounter status</code> gives the encounter\'s copy) and run <code>!psi encounter refresh</code>.');
    }
    if (run.gone.length) lines.push(`Not taken again, their token or character is gone: ${namesOf(run.gone)}.`);
    const released = run.done.filter((d) => d.held === 'released').map((d) => d.ref);
    if (released.length) lines.push(`No longer held (the encounter has taken the sheet): ${namesOf(released)}.`);
    const still = (run.resolve || run.stepPending ? [] : kept).concat(run.done.filter((d) => d.held === 'still').map((d) => d.ref));
    if (still.length) {
      lines.push(`Still held, a write-back failed while this refresh ran: ${namesOf(still)}. `
        + 'Bring the sheet in line and run <code>!psi encounter refresh</code> again.');
    }
    // A declared choice the sheets no longer allow was dropped by the companion: name
    // who must declare again (combatant ids back to fighters).
    const enc = store().encounter;
    const ids = new Set(run.done.flatMap((d) => d.dropped || []));
    const again = enc ? Object.keys(enc.combatants).filter((ref) => ids.has(String(enc.combatants[ref]))) : [];
    if (again.length) lines.push(`Must declare again (the sheets no longer allow the choice they declared): ${namesOf(again)}.`);
    return lines;
  };

  // Why a run ends early, for the GM: who was not taken again, and what to do next.
  const refreshStopped = (run) => {
    if (!isObject(run)) return '';
    const rest = Array.isArray(run.queue) && run.queue.length ? `; not taken again: ${namesOf(run.queue)}` : '';
    return ` The refresh stopped at ${chatSafe(fighterName(run.ref))}${rest}.`
      + (run.resolve ? ' The step was not resolved: run <code>!psi encounter resolve</code> again once the encounter is where you expect.'
        : ' Run <code>!psi encounter refresh</code> again once the encounter is where you expect.');
  };

  const finishRefresh = (run) => {
    const lines = refreshReport(run, true);
    if (lines.length) whisperGM(box(run.resolve ? 'before resolving' : 'encounter refresh', lines.join('<br>')));
    else if (!run.resolve) whisperGM(box('encounter refresh', 'The encounter has no combatant to take again from a sheet.'));
    return run.resolve ? sendResolve(run.requester, run.resolve.force) : undefined;
  };

  // Sends the refresh of the next combatant still in the encounter whose sheet is still
  // here, or ends the run.
  const refreshNext = (run) => {
    const enc = store().encounter;
    const queue = run.queue.slice();
    const gone = run.gone.slice();
    const kept = (run.kept || []).slice();
    const retried = Object.assign({}, run.retried || {});
    while (queue.length) {
      const ref = queue.shift();
      // A resync (!psi encounter status) may have dropped it meanwhile.
      if (!enc.combatants[ref]) continue;
      // Gone: out of the fight, and so out of any hold.
      if (!fighterCharacter(ref)) { releaseFighter(enc, ref); gone.push(ref); continue; }
      // A step whose answer has not come yet would write these sheets after they were
      // read: every combatant keeps the encounter's copy this time.
      if (run.stepPending) { kept.push(ref); continue; }
      // Its sheet lacks a stored step: taking it would lose that step. Before a resolve,
      // the write it missed is tried again first; taken when it lands.
      if (heldOf(enc).includes(ref) && (run.resolve || heldSinceStart(enc, run))) {
        const retry = run.resolve ? retryWrite(enc, ref) : null;
        if (retry) retried[ref] = retry;
        if (retry !== 'written') { kept.push(ref); continue; }
      }
      const params = withRevision(enc, { id: enc.id, combatant_id: enc.combatants[ref], combatant: combatantOf(ref) });
      const step = run.done.length + 1;
      return postRequest(rpcBody(newId(), 'encounter.refresh', params), {
        kind: 'encounter.refresh',
        requester: run.requester,
        involved: [],
        title: `Refresh of ${fighterName(ref)}`,
        run: Object.assign({}, run, { ref, queue, gone, kept, retried }),
      }, `take ${fighterName(ref)} again from the sheet (${step} of ${step + queue.length})`);
    }
    return finishRefresh(Object.assign({}, run, { ref: null, queue, gone, kept, retried }));
  };

  const startRefresh = (requester, enc, resolve) => refreshNext({
    encounter: enc.id, requester, ref: null, queue: Object.keys(enc.combatants), done: [], gone: [], kept: [], holds: enc.holds, resolve,
    stepPending: stepUnderWay(enc),
  });

  const stepsOf = (enc) => Object.values(store().pending)
    .filter((job) => isStep(job) && (job.encounter === undefined || job.encounter === enc.id));

  // Whether a resolve or an undo of `enc` still waits for its answer (late ones too: an
  // answer may still come and write the sheets). One refused as stale (keptAfterStale)
  // counts, as 'stale', only while parts of a second bridge's answer to it are arriving
  // (its timer runs on with them): with one bridge no other answer comes, and a refresh
  // right after the refusal takes the sheets as before.
  const stepUnderWay = (enc) => {
    const steps = stepsOf(enc);
    if (steps.some((job) => !job.stale)) return true;
    const arriving = (job) => timers.has(job.id) && isObject(job.partsBy) && Object.keys(job.partsBy).length > 0;
    return steps.some(arriving) ? 'stale' : false;
  };

  // Whether anyone was held since the run began (a run kept from before holds existed
  // counts as such when anyone is held: the cautious answer).
  const heldSinceStart = (enc, run) => enc.holds !== run.holds;

  // The answer to one refresh of a run: the revision it gives is the one the next
  // request names (never going back: a declaration answered meanwhile may be newer).
  // The GM's own refresh lets go of a held combatant it took (a late answer too: the
  // companion took the sheet), unless someone was held after the run began: the sheet
  // was then read before the GM could put it right.
  const handleRefresh = (job, answer) => {
    const run = job.run;
    if (answer.error) {
      whisperGM(box('encounter refresh', [].concat(refreshReport(run), [refreshStopped(run).trim()]).join('<br>')));
      return reportError(job, answer.error);
    }
    const result = answer.result;
    const enc = store().encounter;
    const current = Boolean(enc && enc.id === run.encounter);
    if (current && Number.isInteger(result.revision) && !(enc.revision > result.revision)) enc.revision = result.revision;
    const dropped = Array.isArray(result.dropped_choices) ? result.dropped_choices.map(String) : [];
    const entry = { ref: run.ref, changed: result.changed.map(String), dropped };
    if (current && !run.resolve && heldOf(enc).includes(run.ref)) {
      const readBefore = heldSinceStart(enc, run);
      if (!readBefore) releaseFighter(enc, run.ref);
      entry.held = readBefore ? 'still' : 'released';
    }
    const done = Object.assign({}, run, { done: run.done.concat([entry]) });
    if (!current || job.late) {
      const why = !current ? 'The current encounter changed here meanwhile, so nothing more was sent.'
        : job.stale ? 'This answer came after the stale refusal that stopped the run, so nothing more was sent.' : 'This answer came late, so nothing more was sent.';
      const rest = done.queue.length ? ` Not taken again: ${namesOf(done.queue)}.` : '';
      return whisperGM(box('encounter refresh', `${refreshReport(done).join('<br>')}<br>${why}${rest}`
        + (done.resolve ? ' The step was not resolved.' : '')));
    }
    return refreshNext(done);
  };

  // power-pool's public actions (they apply when declared, in everyone's sight) and the
  // options that only power-pool's choices take.
  const PUBLIC_ACTIONS = ['pass', 'release', 'keep', 'cannot_perceive', 'rest'];
  // revised-2e's second attack of a round in a declaration.
  const SECOND_ATTACK_OPTIONS = ['attack2', 'target2', 'mult2', 'range2'];
  const POOL_OPTIONS = ['pass', 'rest', 'release', 'keep', 'by', 'cannot-perceive', 'keep-by', 'ally'];

  // A public action in words: "releases Fenka", "passes this round".
  const publicActionText = (enc, choice) => {
    const name = (cid) => {
      const ref = Object.keys(enc.combatants).find((r) => enc.combatants[r] === cid);
      return ref ? fighterName(ref) : cid;
    };
    if (choice.pass) return 'passes this round';
    if (choice.rest) return 'takes a long rest';
    if (choice.release) return `lets ${name(choice.release)} go`;
    if (choice.cannot_perceive) return `can no longer perceive ${name(choice.cannot_perceive)}`;
    if (choice.keep) return `keeps ${name(choice.keep.target)} under control by ${choice.keep.by === 'die' ? 'a pool die' : 'an action each round'}`;
    return 'acts';
  };

  // The combatant id of the fighter an option names, when it is in the encounter.
  const encounterMember = (enc, text) => {
    const ref = resolveFighter(text);
    return ref && enc.combatants[ref] ? enc.combatants[ref] : null;
  };

  // power-pool: the name of the mind struck first when `choice` draws allies in for another
  // mind the wave strikes (the companion refuses that: allies-first-mind-only), else null.
  // Known only from a view of the encounter (!psi encounter status) still current: else the
  // companion judges, and its refusal says the same (declareRefusal).
  const firstMindInstead = (enc, cid, choice) => {
    const allies = isObject(choice.defense) && Array.isArray(choice.defense.allies) ? choice.defense.allies : [];
    const struck = isObject(enc.struck) && enc.struck.revision === enc.revision && Array.isArray(enc.struck.ids) ? enc.struck.ids : [];
    if (!allies.length || !struck.includes(String(cid)) || struck[0] === String(cid)) return null;
    const ref = Object.keys(enc.combatants).find((r) => enc.combatants[r] === struck[0]);
    return ref ? fighterName(ref) : struck[0];
  };

  // The choice `!psi encounter declare` asks for, as encounter.declare takes it, or
  // {error}. The targets and the allies are checked as an attack checks them (`actor`:
  // the fighter declaring); which choices go together, and when, is the companion's to judge.
  const declaredChoice = (args, enc, actor) => {
    const pool = enc.system === 'power-pool';
    const poolOnly = POOL_OPTIONS.filter((key) => args.has(key));
    if (!pool && poolOnly.length) return { error: `--${poolOnly[0]} is a power-pool choice; this encounter plays ${enc.system}.` };
    const notMember = (key) => ({ error: `--${key} must be a token of a combatant in the current encounter.` });
    // revised-2e: a psionicist may make a second attack in some rounds (by its level, which
    // the companion judges): --attack2 with its own --target2, --mult2 and --range2.
    const second = SECOND_ATTACK_OPTIONS.filter((key) => args.has(key));
    if (second.length && enc.system !== 'revised-2e') {
      return { error: `--${second[0]} is a revised-2e option: ${enc.system} has no second attack in a declaration. Nothing was sent.` };
    }
    if (args.has('attack2') && !args.has('attack')) {
      return { error: '--attack2 is the second attack of the round: declare the first with --attack MODE --target TOKEN as well. Nothing was sent.' };
    }
    const secondOnly = second.find((key) => key !== 'attack2' && !args.has('attack2'));
    if (secondOnly) return { error: `--${secondOnly} goes with --attack2 MODE (the second attack declared). Nothing was sent.` };
    // An option of the attack or of the defense without it would be dropped unsaid.
    const attackOnly = ['target', 'mult', 'range', 'dice', 'keep-by', 'decline'].find((key) => args.has(key) && !args.has('attack'));
    if (attackOnly) return { error: `--${attackOnly} goes with --attack MODE (the attack declared). Nothing was sent.` };
    const defenseOnly = ['defense-dice', 'sacrifice'].find((key) => args.has(key) && !args.has('defense'));
    if (defenseOnly) return { error: `--${defenseOnly} goes with --defense MODE (or none). Nothing was sent.` };
    const choice = {};
    if (args.has('attack')) {
      const built = attackFromOptions(args, enc.system, 'attack');
      if (built.error) return built;
      // power-pool: a psionic wave names several --target (the first is struck first).
      const targets = args.all('target').map((text) => encounterMember(enc, text));
      if (!targets.length || targets.some((t) => !t)) return notMember('target');
      const wrong = targetsProblem(enc.system, enc.combatants[actor], targets) || severalProblem(enc.system, targets, built.attack.mode);
      if (wrong) return { error: wrong };
      choice.attack = Object.assign(built.attack, { target: targets[0] });
      if (targets.length > 1) choice.attack.targets = targets.slice(1);
    }
    if (args.has('attack2')) {
      const built = attackFromOptions(args, enc.system, 'attack2', '2');
      if (built.error) return built;
      if (!args.has('target2')) return { error: '--target2 is missing: name the token the second attack strikes (--attack2 MODE --target2 TOKEN). Nothing was sent.' };
      const target = encounterMember(enc, args.get('target2'));
      if (!target) return notMember('target2');
      const wrong = targetsProblem(enc.system, enc.combatants[actor], [target]);
      if (wrong) return { error: wrong };
      // Both attacks go as `attacks` (the companion takes attack or attacks, not both).
      choice.attacks = [choice.attack, Object.assign(built.attack, { target })];
      delete choice.attack;
    }
    if (args.has('defense')) {
      const chosen = defenseFromOptions(args, enc.system, 'defense');
      if (chosen.error) return chosen;
      // No defense mode: null, but an object without a mode in power-pool (which still
      // rolls its pool).
      choice.defense = chosen.defense || (pool ? {} : null);
      const allies = args.all('ally').map(resolveFighter);
      if (allies.some((ref) => !ref || !enc.combatants[ref])) return notMember('ally');
      const wrongAllies = allies.length ? allyDefenseProblem(enc.system, chosen.defense, 'defense')
        || alliesProblem(allies, (ref) => (ref === actor ? 'declares this defense' : null)) : null;
      if (wrongAllies) return { error: wrongAllies };
      if (allies.length) choice.defense.allies = allies.map((ref) => enc.combatants[ref]);
    } else if (args.has('ally')) {
      return { error: '--ally goes with --defense (imagination-swarm draws allies in).' };
    }
    if (args.has('stance')) {
      const stances = SYSTEMS[enc.system].stances || [];
      if (!stances.length) return { error: `--stance is a combat-strength choice; this encounter plays ${enc.system}.` };
      choice.stance = normaliseMode(args.get('stance'));
      if (!stances.includes(choice.stance)) return { error: `--stance must be one of ${stances.join(', ')} (got "${echo(args.get('stance'))}").` };
    }
    if (args.has('close')) choice.close = true;
    if (args.has('pass')) choice.pass = true;
    if (args.has('rest')) choice.rest = true;
    for (const [key, field] of [['release', 'release'], ['cannot-perceive', 'cannot_perceive']]) {
      if (!args.has(key)) continue;
      const member = encounterMember(enc, args.get(key));
      if (!member) return notMember(key);
      choice[field] = member;
    }
    if (args.has('keep')) {
      const member = encounterMember(enc, args.get('keep'));
      if (!member) return notMember('keep');
      const by = String(args.get('by') || '').trim().toLowerCase();
      if (!['die', 'action'].includes(by)) return { error: '--keep wants --by die or --by action: how the control goes on being kept.' };
      choice.keep = { target: member, by };
    } else if (args.has('by')) {
      return { error: '--by goes with --keep.' };
    }
    if (!Object.keys(choice).length) return { error: 'declare what? --attack, --defense, --stance, --close, or in power-pool --pass, --release, --keep, --cannot-perceive, --rest.' };
    // A power-pool step is one exchange: the attacker declares its attack, the minds it
    // strikes their defenses, and an action stands alone (engine/power_pool: one choice).
    if (pool && Object.keys(choice).length > 1) {
      return { error: 'in power-pool a declaration is one choice: --attack when you attack, --defense when you are struck (or join a defense), '
        + 'or one action (--pass, --release, --keep, --cannot-perceive, --rest). Declare them one at a time. Nothing was sent.' };
    }
    return { choice };
  };

  // A secret choice in words, for the one who declared it: "Ego Whip ×2 at Fenka, short
  // range; defense Mind Blank"; two attacks of a round (revised-2e) "first attack Ego Whip
  // at Fenka; second attack Mind Thrust at Ogre; …".
  const choiceText = (enc, choice) => {
    const name = (cid) => {
      const ref = Object.keys(enc.combatants).find((r) => enc.combatants[r] === cid);
      return ref ? fighterName(ref) : cid;
    };
    const attackText = (a) => `${label(a.mode)}${a.multiplier > 1 ? ` ×${a.multiplier}` : ''} at ${[a.target].concat(a.targets || []).map(name).join(', ')}`
      + `${a.range ? `, ${a.range} range` : ''}${Number.isInteger(a.pool_dice) ? `, ${a.pool_dice} pool dice` : ''}`;
    const parts = [];
    if (choice.stance) parts.push(`stance ${choice.stance}`);
    if (isObject(choice.attack)) parts.push(attackText(choice.attack));
    if (Array.isArray(choice.attacks)) {
      const ordinal = ['first', 'second', 'third', 'fourth'];
      choice.attacks.filter(isObject).forEach((a, i) => parts.push(`${ordinal[i] ? `${ordinal[i]} attack` : `attack ${i + 1}`} ${attackText(a)}`));
    }
    if ('defense' in choice) {
      const d = choice.defense;
      parts.push(`defense ${d && d.mode ? label(d.mode) : 'none'}${d && Array.isArray(d.allies) && d.allies.length ? `, drawing in ${d.allies.map(name).join(', ')}` : ''}`);
    }
    if (choice.close) parts.push('pay to close the mind');
    return parts.join('; ');
  };

  const commandEncounter = (msg, args) => {
    const s = store();
    const action = (args.words[0] || '').toLowerCase();
    // What only a GM may do, as the refusal says it.
    const gmOnly = {
      create: 'create an encounter', add: 'add tokens to an encounter', refresh: 'refresh an encounter',
      resolve: 'resolve an encounter', undo: "undo an encounter's step", end: 'end an encounter',
    };
    // A word it does not know is named as such, whether or not an encounter is going on.
    if (!ownMember(ENCOUNTER_OPTIONS, action)) {
      const known = Object.keys(ENCOUNTER_OPTIONS).join(', ');
      return refuse(msg.playerid, action ? `unknown encounter command "${echo(args.words[0])}"; encounter wants one of ${known}.` : `encounter wants one of ${known}.`);
    }
    if (ownMember(gmOnly, action) && !playerIsGM(msg.playerid)) return refuse(msg.playerid, `only a GM may ${gmOnly[action]}.`);
    if (action === 'create') {
      const system = args.has('system') ? fixedWord(Object.keys(SYSTEMS), args.get('system')) : s.config.system;
      if (!ownMember(SYSTEMS, system)) return refuse(msg.playerid, `--system must be one of ${Object.keys(SYSTEMS).join(', ')}.`);
      const params = withHouse(system, { system });
      if (args.get('name')) params.name = args.get('name');
      return encounterRequest(msg, 'encounter.create', params, { kind: 'encounter.create', system, name: params.name || '' }, `create a ${system} encounter`);
    }
    if (action === 'end') {
      s.encounter = null;
      return whisperGM(box('encounter', 'The current encounter is forgotten here (the companion keeps its log).'));
    }
    const enc = s.encounter;
    if (!enc) return refuse(msg.playerid, 'there is no current encounter; a GM starts one with !psi encounter create.');
    if (action === 'add') {
      const tokenIds = args.all('token');
      const found = (tokenIds.length ? tokenIds.map(resolveFighter) : selectedFighters(msg));
      // Selected tokens of no character are left out, and the GM told so.
      const skipped = tokenIds.length ? [] : unrepresented(selectedTokens(msg));
      const leftOut = skipped.length ? ` Left out: ${skipped.join(', ')}.` : '';
      if (!found.length || found.some((c) => !c)) return refuse(msg.playerid, `select the tokens to add, or name them with --token.${leftOut}`);
      // Two linked tokens of one character are one fighter: it joins once.
      const chars = Array.from(new Set(found));
      // The companion's default limit of an encounter (its max_combatants setting); a
      // batch of more than 100 calls would be refused whole, unsaid which.
      if (chars.length > MAX_ROUND_FIGHTERS) return refuse(msg.playerid, `an encounter holds at most ${MAX_ROUND_FIGHTERS} combatants; select fewer tokens. Nothing was sent.`);
      const id = newId();
      // One JSON-RPC batch, so that the whole group joins with one relay round trip.
      const body = chars.map((ref, i) => rpcBody(`${id}-${i}`, 'encounter.add', { id: enc.id, combatant: combatantOf(ref) }));
      return postRequest(body, { id, kind: 'encounter.add', requester: msg.playerid, involved: chars, batch: chars.map((c, i) => [`${id}-${i}`, c]), encounter: enc.id },
        `add ${chars.map(fighterName).join(', ')} to the encounter`, () => { if (leftOut) whisperGM(box('encounter', leftOut.trim())); });
    }
    if (action === 'declare') {
      const mine = selectedFighters(msg).filter((c) => enc.combatants[c]);
      if (mine.length !== 1) return refuse(msg.playerid, 'select exactly one token of a combatant in the current encounter.');
      const charId = mine[0];
      if (!mayControl(msg.playerid, charId)) return refuse(msg.playerid, `you do not control ${chatSafe(fighterName(charId))}.`);
      const built = declaredChoice(args, enc, charId);
      if (built.error) return refuse(msg.playerid, built.error);
      const { choice } = built;
      const drawn = firstMindInstead(enc, enc.combatants[charId], choice);
      if (drawn) return refuse(msg.playerid, `in this psionic wave only the mind struck first, ${chatSafe(drawn)}, draws allies into the group's defense: `
        + `declare the defense of ${chatSafe(fighterName(charId))} without --ally. Nothing was sent.`);
      // A public action (power-pool) applies at once and may write any combatant's sheet:
      // not while a refresh reads them.
      const open = PUBLIC_ACTIONS.some((key) => key in choice);
      if (open && refreshUnderWay(enc)) {
        return refuse(msg.playerid, 'the sheets of the encounter are being taken again (encounter.refresh) right now; declare this once that is over.');
      }
      const said = open ? `${fighterName(charId)} ${publicActionText(enc, choice)}` : `${fighterName(charId)} declares a choice (hidden)`;
      return encounterRequest(msg, 'encounter.declare', withRevision(enc, { id: enc.id, combatant_id: enc.combatants[charId], choice }),
        { kind: 'encounter.declare', involved: open ? Object.keys(enc.combatants) : [charId], public: open, encounter: enc.id, actor: charId, said, chose: open ? '' : choiceText(enc, choice), system: enc.system }, said);
    }
    // A refresh run reads the sheets one after the other: a second run or a resolve would
    // race its revisions, and an undo writes every combatant's sheet while it reads them.
    if (['refresh', 'resolve', 'undo'].includes(action) && refreshUnderWay(enc)) {
      return refuse(msg.playerid, 'the sheets of the encounter are being taken again (encounter.refresh) right now; wait for that to end, or for its timeout.');
    }
    if (action === 'refresh' || action === 'resolve') {
      if (action === 'refresh') return startRefresh(msg.playerid, enc, null);
      // Every sheet is taken again first, so that the step's write-back does not put
      // back what the sheets lost or gained outside the encounter.
      if (args.has('no-refresh')) return sendResolve(msg.playerid, args.has('force'));
      return startRefresh(msg.playerid, enc, { force: args.has('force') });
    }
    if (action === 'get' || action === 'status') {
      return encounterRequest(msg, 'encounter.get', { id: enc.id }, { kind: 'encounter.get' }, 'show the encounter and resync');
    }
    if (action === 'undo') {
      return encounterRequest(msg, 'encounter.undo', withRevision(enc, { id: enc.id }), { kind: 'encounter.undo', involved: Object.keys(enc.combatants), title: 'Encounter: last step undone', encounter: enc.id }, 'undo the last step of the encounter');
    }
    return undefined; // every word of ENCOUNTER_OPTIONS is handled above
  };

  // --------------------------------------------------------------- !psi pair

  /**
   * `!psi pair [--new]` (GM only): whispers the pairing code the bridge needs, or makes a
   * new one first. The code never goes to a player.
   */
  const commandPair = (msg, args) => {
    if (!playerIsGM(msg.playerid)) return refuse(msg.playerid, 'only a GM may see or change the pairing code.');
    const s = store();
    const fresh = args.has('new');
    if (fresh) s.pairing = newPairingCode();
    // (a request refused as stale was relayed already: keptAfterStale)
    const count = Object.keys(s.pending).filter((id) => !s.pending[id].stale).length;
    const waiting = fresh && count ? ` The ${count} request(s) still waiting carry the old code and will not be relayed.` : '';
    // Not archived: a secret is best kept in as few places as possible, and !psi pair
    // whispers it again.
    return whisperGM(box('pairing', `${fresh ? 'New pairing code' : 'Pairing code'}: <code>${s.pairing}</code><br>`
      + 'Click the Mindscape badge (bottom left, in the GM\'s tab with the bridge userscript), paste it under "Pairing code" and press "Save and test". '
      + `The bridge relays only requests that carry this code. <code>!psi pair --new</code> makes a new one.${waiting}`), TRANSIENT);
  };

  // --------------------------------------------------------------- !psi help

  const helpHtml = () => [
    `<h3>Mindscape v${version}</h3>`,
    '<p>Psionic combat resolved by the Mindscape companion on the GM\'s computer. The GM\'s browser must run the Mindscape Bridge userscript and <code>mindscape serve</code>.</p>',
    '<ul>',
    '<li><code>!psi attack --target &#64;&#123;target&#124;token_id&#125; --mode ego-whip --mult 3 --range short</code>: the selected token attacks. The companion checks the attack first: one the attacker cannot make (too few PSPs, a multiplier above its level, a mode it does not know, pool dice beyond its pool, too little attack strength) is refused to you with the reason, and nobody is asked. Otherwise the defender\'s controllers (the GM for NPCs; not you while another player controls it too) get buttons to choose a defense in secret (also when the check gets no answer in time). Whoever chooses the defender\'s defense (or the GM) may add <code>--defense thought-shield</code> to settle it at once (power-pool: with the defender\'s <code>--defense-dice N</code> and <code>--sacrifice 3,1</code>). power-pool: <code>--dice N</code> rolls N (0 to 100) of the attacker\'s pool dice; <code>--target</code> again for a psionic wave, one exchange in which each mind struck chooses its own defense (its buttons say <code>--for</code> whom); <code>--keep-by die|action</code>: how control is kept if the attack wins (default action); <code>--decline frightened</code> spares the target Subconscious Subversion\'s Fear (the attacker may choose); with <code>--defense imagination-swarm</code>, <code>--ally TOKEN</code> (repeatable) draws allied non-psionic creatures into the defense.</li>',
    '<li><code>!psi defend --req ID --mode thought-shield</code> (or <code>none</code>): what the buttons send. power-pool: <code>--dice N</code> (pool dice to roll) and <code>--sacrifice 3,1</code> (spell levels given up), with a mode or with <code>none</code>; <code>--mode imagination-swarm --ally &#64;&#123;target&#124;Ally&#124;token_id&#125;</code> (repeatable) draws allied non-psionic creatures into the defense, typed, since a button cannot pick tokens: each adds a die (its whole pool under H-PP-GROUP all-dice) and is dazed, and allies fall with the group. A psionic creature is not drawn in: it joins by its own choice (<code>!psi join</code>). In a psionic wave only the mind struck first draws allies in. When the companion refuses the allies or the defense (a psionic or mindless ally, a mode not known), nothing is written and the attack still waits: the defense buttons come again (a wave\'s minds all choose again).</li>',
    '<li>The defense buttons offer the modes the companion knows, read where it reads them: <code>psi_defenses</code> when it holds anything (in every system); else, with a generic mapping, the attribute it names for <code>defenses</code>; else, on the AD&amp;D 2E Revised sheet in revised-2e only, the psionic-defense rows. A list naming none of the system\'s modes knows none. Where nothing lists modes, revised-2e and power-pool know none (only No defense is offered) and a psionic combat-strength mind knows all five.</li>',
    '<li><code>!psi join --req ID</code> with a psionic creature\'s token selected (its controller or the GM; power-pool): while the defense against the attack waiting as ID is being chosen, the creature joins it by its own choice with Imagination Swarm, if it can see the ally attacked (seed 001). It rolls its own pool with the defending group and falls with it; in a psionic wave it joins the group of the mind struck first. The GM\'s whisper of the defense buttons has the id and a Join button; other players do not see it, so the GM tells them. Refused, and nothing changed, for the attacker, a creature struck already, one joined or drawn in already (of one that a wave\'s first mind drew in, its player learns only that it cannot join: the drawing in stays secret), one under psionic control, one that does not know Imagination Swarm (where the companion reads its modes, above), a creature you do not control, or, against your own attack, one another player controls too (its other controllers choose). Should the companion refuse the defense, those that joined stay joined, but one the refusal is about is left out. <code>!psi join --req ID --leave</code> takes a creature that joined out again (its controller or the GM).</li>',
    '<li><code>!psi odds --target &#64;&#123;target&#124;token_id&#125; --mode mind-thrust --mult 2 --defense mental-barrier</code>: exact chances, whispered to you (power-pool also <code>--dice</code>, <code>--defense-dice</code>, <code>--sacrifice</code>, <code>--keep-by</code>, <code>--decline</code> and <code>--ally</code>; combat-strength sums its damage up: mean, median and the range 8 times in 10 fall in).</li>',
    '<li><code>!psi round</code> (GM): ends the psionic round for the selected tokens, or for every token in the Turn Tracker: timed conditions (stunned, dazed&hellip;) count down, open minds are checked. Run it at the end of each round of the table\'s combat. revised-2e: when a mind a critical hit opened may pay to close, you are first shown what it costs, with a button for each who can pay and one for nobody; <code>--close TOKEN</code> (repeatable) or <code>--pay-none</code> decides at once. power-pool: when a fighter controls creatures, you are first shown each control, how it is kept, and a button for each thing it may do (release; keep it by a die or by an action instead; lost sight) and one to keep everything as it is; <code>--release TOKEN</code>, <code>--keep TOKEN --by die|action</code>, <code>--cannot-perceive TOKEN</code> (each repeatable, in one command) or <code>--keep-all</code> decides at once. A controller that cannot act (asleep, unconscious, stunned, at 0 HP or fewer) loses the control it keeps by an action and cannot keep a control another way. A creature set free whose own round does not end there has its sheet freed too.</li>',
    '<li><code>!psi config</code> (GM): <code>--system revised-2e|combat-strength|power-pool</code>, <code>--rollmode public|gm|private</code>, <code>--timeout 30</code>, <code>--chunk 1000</code>, <code>--hpbar 1|2|3|none</code> and <code>--pspbar 1|2|3|none</code> (the bars of unlinked tokens); per character (selected or <code>--char ID</code>): <code>--system</code>, <code>--adapter roll20.adnd2e-revised|roll20.generic</code>, <code>--attr psp=PSP</code> (repeatable), <code>--reset</code>. The words of <code>--system</code>, <code>--adapter</code>, <code>--rollmode</code> and the bars are taken in any case.</li>',
    '<li><code>!psi rest --hours N</code> (GM): the selected tokens rest outside encounters. revised-2e: N hours (1-1000) of sleep or meditation give back PSPs; power-pool: one long rest, no <code>--hours</code>; a resting controller loses the control it keeps by an action, and a creature so set free that does not rest has its sheet freed too. combat-strength has no rest.</li>',
    '<li><code>!psi encounter create|add|declare|refresh|resolve|get|status|undo|end</code>: multi-step rounds. <code>create --system S --name N</code> (GM) starts one; <code>add</code> (GM) adds the selected tokens, or each <code>--token ID</code> named; <code>resolve --force</code> (GM) counts missing choices as none. <code>declare --attack MODE --target TOKEN --mult N --range R --defense MODE</code> with your token selected (declaring again replaces your whole choice: give the attack and the defense in one command), <code>--attack2 MODE --target2 TOKEN</code> (with <code>--mult2</code>, <code>--range2</code>) for a revised-2e psionicist\'s second attack of a round, which the companion allows by level, <code>--stance trance|discipline|wave|normal</code> at a combat-strength round\'s intent, <code>--close</code> (revised-2e) to pay to close an open mind; power-pool one choice per declaration, also <code>--target</code> again for a psionic wave, <code>--dice</code>, <code>--keep-by die|action</code> and <code>--decline</code> with the attack as on <code>!psi attack</code>, <code>--defense-dice</code> and <code>--sacrifice</code> with the defense, <code>--ally TOKEN</code> (imagination swarm; in a wave only the mind struck first draws allies in, and another mind\'s <code>--ally</code> is refused with nothing recorded), and the public actions <code>--pass</code>, <code>--release TOKEN</code>, <code>--keep TOKEN --by die|action</code>, <code>--cannot-perceive TOKEN</code>, <code>--rest</code>, which apply at once. <code>refresh</code> (GM) takes every combatant again from its sheet, so that changes made outside the encounter (HP from a sword, PSPs spent) are kept; <code>resolve</code> does it first by itself (<code>--no-refresh</code> skips it). When a step\'s changes could not be written to a sheet, you are told, and that combatant is held: <code>resolve</code> keeps the encounter\'s copy of it until you have put the sheet right and run <code>refresh</code> (a write that failed here is tried again before each <code>resolve</code>, as long as the sheet still shows what it showed then; the hold ends when it lands). <code>!psi encounter status</code> asks the companion where the encounter stands, lists who is held, and resyncs; in revised-2e it also lists who may pay to close its mind this round (<code>declare --close</code>) and for how many PSPs: the GM reads every offer, a player only those of the minds it controls (an offer tells that a mind holds at least that many PSPs).</li>',
    '<li><code>!psi house</code> (GM): the house rules of the campaign\'s system (<code>--system S</code> for another), each with its text and a button for every other value; <code>--set H-2E-STUN=off</code> switches one, <code>--default H-2E-STUN</code> (or <code>ALL</code>) puts it back. The companion checks every change first; every request of that system then carries them, and an encounter keeps those it was created with.</li>',
    '<li><code>!psi pending</code>: whispers you again the defense buttons still waiting for a mind you control, not those against your own attack that its other controllers choose (the GM: every one). The chat archive keeps them too; an old button whose attack no longer waits only says so.</li>',
    '<li><code>!psi pair</code> (GM): whispers the pairing code to paste into the bridge\'s settings; <code>--new</code> makes a new one.</li>',
    '<li><code>!psi --help</code>: this handout.</li>',
    '</ul>',
  ].join('');

  const commandHelp = (msg) => {
    let handout = findObjs({ _type: 'handout', name: HELP_HANDOUT })[0];
    if (!handout) handout = createObj('handout', { name: HELP_HANDOUT, inplayerjournals: 'all', archived: false });
    handout.set({ notes: helpHtml() });
    return tell(msg.playerid, 'help', `[Open the help handout](http://journal.roll20.net/handout/${handout.id})`, TRANSIENT);
  };

  // ------------------------------------------------------------- answers in

  const problem = (text) => ({ problem: text });

  // Checks one JSON-RPC response object against the request id it must answer.
  const responseProblem = (response, id) => {
    if (!isObject(response)) return 'the answer is not a JSON-RPC response object';
    if (response.jsonrpc !== '2.0') return 'the answer lacks "jsonrpc": "2.0"';
    if (response.id !== id) return `the answer's id ${clipped(String(JSON.stringify(response.id)))} is not ${id}`;
    const hasResult = Object.prototype.hasOwnProperty.call(response, 'result');
    const hasError = Object.prototype.hasOwnProperty.call(response, 'error');
    if (hasResult === hasError) return 'the answer must hold exactly one of result and error';
    if (hasError && (!isObject(response.error) || !Number.isInteger(response.error.code) || typeof response.error.message !== 'string')) {
      return 'the error object lacks a numeric code and a message';
    }
    return null;
  };

  // Every `updates` list in a result (an exchange result, a list of them, or an
  // encounter step that holds them), flattened: {updates}, or {problem} naming an
  // `updates` that is there but no list (none of it may be applied then).
  const collectUpdates = (result) => {
    const found = [];
    let wrong = null;
    const visit = (value, depth, at) => {
      if (depth > 3 || value === null || typeof value !== 'object') return;
      if (Array.isArray(value)) { value.forEach((v, i) => visit(v, depth + 1, `${at}${i}/`)); return; }
      if (Array.isArray(value.updates)) found.push(...value.updates);
      else if (value.updates !== undefined && !wrong) wrong = `${at}updates is not a list`;
      ['results', 'steps', 'step', 'exchanges', 'resolutions'].forEach((key) => visit(value[key], depth + 1, `${at}${key}/`));
    };
    visit(result, 0, '');
    return wrong ? problem(wrong) : { updates: found };
  };

  // Any name a sheet or a mapping may use, but nothing with control characters.
  const ATTRIBUTE_NAME = /^[^\u0000-\u001f\u007f]{1,200}$/;

  // Validates the write-back patches before any is applied: all or nothing. A fighter
  // deleted since the request is no fault of the answer (the companion may have stored
  // the step already): applyUpdates skips it and the GM is told.
  const updatesProblem = (updates, involved) => {
    for (const [i, update] of updates.entries()) {
      if (!isObject(update) || typeof update.character_id !== 'string') return `updates/${i} lacks a character_id`;
      if (!involved.includes(update.character_id)) return `updates/${i} names character ${update.character_id}, which this request did not involve`;
      if (!isObject(update.attributes)) return `updates/${i}/attributes is not an object`;
      for (const name of Object.keys(update.attributes)) {
        const value = update.attributes[name];
        if (!ATTRIBUTE_NAME.test(name)) return `updates/${i}/attributes has an unusable attribute name`;
        if (!isObject(value) || !('current' in value || 'max' in value)) return `updates/${i}/attributes/${name} needs current or max`;
        for (const key of Object.keys(value)) {
          if (key !== 'current' && key !== 'max') return `updates/${i}/attributes/${name}/${key} is not current or max`;
          if (!['string', 'number'].includes(typeof value[key])) return `updates/${i}/attributes/${name}/${key} is not a number or text`;
        }
      }
    }
    return null;
  };

  // Writes one attribute with setWithWorker (so sheet workers run), creating it if missing.
  const writeAttribute = (charId, name, patch) => {
    let attr = findAttribute(charId, name);
    if (!attr) attr = createObj('attribute', { _characterid: charId, name, current: '', max: '' });
    attr.setWithWorker(patch);
  };

  // Where an unlinked token's attribute part lands (applyTokenUpdate), given its
  // character's barBindings: {bar, side} (the token's barN_value or max) for HP and PSP
  // where a bar is set, 'sheet' (its character's attribute) where it is `none`, and
  // 'own' (store().tokens, kept for that token alone) for anything else.
  const tokenPlace = (bindings, name, part) => {
    const binding = bindings.find((b) => sameName(b.attr, name) && b.part === part);
    if (!binding) return 'own';
    const bar = barOf(binding.field);
    return bar ? { bar, side: binding.bar } : 'sheet';
  };

  // Adds attribute `name`'s parts `parts` ({current?, max?}) to `landed` ({name: {part:
  // value}}), the parts a write has put in place so far (applyUpdates).
  const land = (landed, name, parts) => {
    landed[name] = Object.assign({}, landed[name] || {}, parts);
  };

  // An unlinked token's update: HP and PSP onto its bars (where a bar is set, else onto
  // its character's attributes, as `none` means), everything else it changes (psi_*
  // state, mapped fields) into store().tokens, so that its copies do not share it.
  // store().tokens is written first, by a plain assignment that cannot throw, so its
  // parts land even when a write to the sheet or the bars throws after it. Each part
  // that landed is added to `landed` as its write returns (the record's, each
  // attribute's, the bars' at once, or where their set throws, those it put in place),
  // so that a throw leaves there just what is in place.
  const applyTokenUpdate = (token, charId, attributes, landed) => {
    const bindings = barBindings(charId);
    const bars = {};
    const barParts = [];
    const sheet = [];
    const own = Object.assign({}, store().tokens[token.id] || {});
    const ownParts = [];
    Object.keys(attributes).forEach((name) => {
      const value = attributes[name];
      const toSheet = {};
      ['current', 'max'].filter((part) => part in value).forEach((part) => {
        const place = tokenPlace(bindings, name, part);
        if (place === 'sheet') {
          toSheet[part] = value[part];
          return;
        }
        if (place !== 'own') {
          const key = `bar${place.bar}_${place.side}`;
          bars[key] = value[part];
          barParts.push([name, part, key]);
          return;
        }
        const key = name.toLowerCase();
        own[key] = Object.assign({ name, current: '', max: '' }, own[key] || {}, { [part]: value[part] });
        ownParts.push([name, part]);
      });
      if (Object.keys(toSheet).length) sheet.push([name, toSheet]);
    });
    if (ownParts.length) store().tokens[token.id] = own;
    ownParts.forEach(([name, part]) => land(landed, name, { [part]: attributes[name][part] }));
    sheet.forEach(([name, toSheet]) => {
      writeAttribute(charId, name, toSheet);
      land(landed, name, toSheet);
    });
    if (!Object.keys(bars).length) return;
    const landBar = ([name, part]) => land(landed, name, { [part]: attributes[name][part] });
    try {
      token.set(bars);
    } catch (err) {
      // A set of several bar keys may throw after it put some in place: the keys the
      // token shows now landed (one that showed its value already is in place all the
      // same), the others did not. Read at once, nothing else set them meanwhile.
      barParts.filter(([, , key]) => shown(token.get(key)) === shown(bars[key])).forEach(landBar);
      throw err;
    }
    barParts.forEach(landBar);
  };

  // newest-wins' key of an attribute part of a fighter or a character (its name in any case).
  const partKey = (id, name, part) => `${id}|${String(name).toLowerCase()}|${part}`;

  // The keys newest-wins remembers (rememberWrites) and compares for one part of a
  // fighter's update (applyTokenUpdate says where it lands):
  //  - always the fighter's own part, ref|name|part (in any case of its name), so that a
  //    write moved since (--hpbar, --pspbar, --attr changed) is still that fighter's;
  //  - a token's part that has a bar field: tok|bar|field|value or max, the field by what
  //    it shows, not its bar's number (PSP max and PSP_max share it), bar set or none;
  //  - a token's part on a bar: if the bar is linked now, the attribute it shows
  //    (writing one writes the other), also as `through` ({key, attr, part}: where the
  //    write fails, that key is remembered on a condition, remember);
  //  - a part on the sheet (a character's, or a token's whose bar is set to none):
  //    char|name|part, shared by every copy.
  // `bar` (tok|barN_value or max) is only compared: requests kept from before this
  // version remembered just that. It is no longer remembered, as after a swap of
  // --hpbar and --pspbar the bar shows something else.
  // `shown` is only remembered: where the part lands on an attribute, the bar field of
  // each of `waiting` (waitingTokens) whose HP or PSP bar is linked to it now, as that
  // token's own part there gives it (tok|bar|field|value or max). The bar keeps what
  // was written through it when the GM unlinks it again, and the token's older answer
  // is not to write over it. It is not compared: a token's bar linked since a newer
  // answer wrote it shows the attribute already, not what that answer wrote. Where the
  // write fails, these bars are remembered on a condition (remember), read on `token`
  // (newerAt) where the part is on a token's bar, which shows `now`.
  const placesOf = (ref, name, part, waiting) => {
    const charId = fighterCharacter(ref);
    const token = ownToken(ref);
    const own = partKey(ref, name, part);
    const sheet = partKey(charId, name, part);
    if (!token) return { keys: Array.from(new Set([sheet, own])), shown: shownOn(findAttribute(charId, name), part, waiting) };
    const binding = barBindings(charId).find((b) => sameName(b.attr, name) && b.part === part);
    if (!binding) return { keys: [own], shown: [] };
    const field = `${token.id}|bar|${binding.field}|${binding.bar}`;
    const bar = barOf(binding.field);
    if (!bar) return { keys: [sheet, own, field], shown: shownOn(findAttribute(charId, name), part, waiting) };
    const keys = [own, field];
    const linked = getObj('attribute', String(token.get(`bar${bar}_link`) || ''));
    const linkedPart = binding.bar === 'max' ? 'max' : 'current';
    const through = linked ? { key: partKey(linked.get('_characterid'), linked.get('name'), linkedPart), attr: linked.id, part: linkedPart } : null;
    if (through) keys.push(through.key);
    return { keys, through, bar: `${token.id}|bar${bar}_${binding.bar}`, token, now: token.get(`bar${bar}_${binding.bar}`), shown: shownOn(linked, linkedPart, waiting) };
  };

  // The places a part's write reaches where it lands (placesOf's `where`): applyUpdates
  // remembers these as written.
  const landedAt = (where) => where.keys.concat(where.shown.map(({ place }) => place));

  // Adds to a table of places (remember) those of fighter `ref`'s write of an attribute
  // part that threw, `where` it was to land (placesOf): it may have written some before
  // the throw, and the rest waits to be tried again (a step's hold) or put on the sheet
  // by hand, on the attribute, which reaches a bar only while it is linked, or on a
  // token's bar, which reaches an attribute only while it is linked.
  const rememberFailed = (places, ref, name, part, value, where) => {
    const { through } = where;
    where.keys.filter((key) => !through || key !== through.key).forEach((place) => remember(places, place, true));
    if (through) {
      remember(places, through.key, { reaches: [{ write: [ref, name, part], attribute: [through.attr, through.part, shown(value)] }] });
    }
    where.shown.forEach(({ place, prop }) => remember(places, place, { shows: [[prop, shown(value)]] }));
  };

  // The tokens of the requests still waiting: placesOf's `shown` looks at these, not at
  // every graphic, as only an older request's answer ever compares those keys, and only
  // for its own fighters. Taken once per answer: writing it links and unlinks no bar.
  const waitingTokens = () => {
    const refs = new Set(Object.values(store().pending).flatMap((job) => (Array.isArray(job.involved) ? job.involved : [])));
    return Array.from(refs).map(ownToken).filter(Boolean);
  };

  // placesOf's `shown` of an attribute's part (none for no attribute): [{place, prop}],
  // `prop` the token's bar property showing it (barN_value or max), for a condition.
  const shownOn = (attr, part, waiting) => {
    if (!attr) return [];
    const end = part === 'max' ? 'max' : 'value';
    return ['hp', 'psp'].flatMap((field) => {
      const bar = barOf(field);
      if (!bar) return [];
      return waiting.filter((token) => token.get(`bar${bar}_link`) === attr.id)
        .map((token) => ({ place: `${token.id}|bar|${field}|${end}`, prop: `bar${bar}_${end}` }));
    });
  };

  // Adds `how` at `place` of a table of places (applyUpdates' places, a request's
  // newerWrote): true (written, or to be where the write failed) or a condition, for a
  // place a failed write reaches only through a bar's link (the write tried again, or
  // put on the sheet by hand, reaches it only while the bar is linked):
  //  - {shows: [[prop, value]]}, a bar linked to the attribute the write lands on: a
  //    newer answer's place only while that bar (its barN_value or max, `prop`: the bar
  //    it was then, though --hpbar or --pspbar move the part since) shows what that
  //    write meant to put there (written before the throw, or when it is tried again,
  //    while linked; the bar keeps it when the GM unlinks it);
  //  - {reaches: [{write: [ref, name, part], attribute: [id, current or max, value],
  //    held?: encounter id}]}, the attribute a token's bar the write lands on is linked
  //    to: a newer answer's place only while that write (of fighter `ref`'s attribute
  //    part) still reaches it (placesOf: the token's bar for that part is linked to it,
  //    or with that bar set to none the part lands on it) and, for a step's write left
  //    waiting in that encounter, or left to the GM to put by hand while its fighter is
  //    held there with no write to try (`held`, markWaiting), still waits there
  //    (stillWaits), or while the attribute shows what the write meant to put there
  //    (written through the link before the throw, or when it is tried again while
  //    linked; the attribute keeps it when the GM unlinks the bar). Any other write the
  //    GM is told to put on the sheet by hand (not a held combatant's step write) has
  //    no `held`: it may come any time.
  // True wins (another newer answer wrote it); conditions add up, and one holds where
  // any of its entries does.
  const remember = (table, place, how) => {
    const was = ownMember(table, place);
    if (was === true || how === true) { table[place] = true; return; }
    const made = {};
    ['shows', 'reaches'].forEach((kind) => {
      const all = [was, how].flatMap((c) => (isObject(c) && Array.isArray(c[kind]) ? c[kind] : []));
      if (all.length) made[kind] = all.filter((s, i) => all.findIndex((t) => JSON.stringify(t) === JSON.stringify(s)) === i);
    });
    table[place] = made;
  };

  // Whether `newerWrote` has `key` of a part at `where` (placesOf): a condition holds
  // while its bar of the token shows its value (a bare value, as remembered before the
  // bar was, is read on the bar the part is on now), or while its write still reaches
  // the attribute `key` names or that attribute shows its value (remember).
  const newerAt = (newerWrote, key, where) => {
    const how = ownMember(newerWrote, key);
    if (!isObject(how)) return Boolean(how);
    const shows = Array.isArray(how.shows) && where.token ? how.shows : [];
    const reaches = Array.isArray(how.reaches) ? how.reaches : [];
    return shows.some((s) => (Array.isArray(s) ? shown(where.token.get(String(s[0]))) === s[1] : shown(where.now) === s))
      || reaches.some((r) => stillReaches(r, key));
  };

  // One `reaches` entry of a condition at `key` (remember).
  const stillReaches = (entry, key) => {
    if (!isObject(entry) || !Array.isArray(entry.write) || !Array.isArray(entry.attribute)) return false;
    const [ref, name, part] = entry.write.map(String);
    const [id, its, value] = entry.attribute.map(String);
    const attr = getObj('attribute', id);
    if (attr && shown(attr.get(its === 'max' ? 'max' : 'current')) === value) return true;
    if (entry.held !== undefined && !stillWaits(String(entry.held), ref, name, part)) return false;
    return Boolean(fighterCharacter(ref)) && placesOf(ref, name, part, []).keys.includes(key);
  };

  // Whether a step's write of fighter `ref`'s attribute part, left waiting in encounter
  // `id` or to the GM to put by hand there (markWaiting), still waits: that encounter
  // is the current one and still holds the fighter, with that part in its waiting
  // write, or in the parts left to the GM to put by hand (`byHand`: of a waiting write
  // a later step's write-back the companion could not make dropped,
  // reportUnmadeWriteBack, or of a step's write that failed while the fighter was held
  // with no write to try, settleWrites). The hold over (the write tried again landed, the GM's
  // refresh let go of it, the encounter ended), or the part taken off by a later step
  // that wrote it, it no longer does, though the fighter is held again since for
  // another reason (a step of unknown fate, a later write-back not made).
  const stillWaits = (id, ref, name, part) => {
    const enc = store().encounter;
    if (!enc || enc.id !== id || !heldOf(enc).includes(ref)) return false;
    return waitsIn(enc, ref, name, part);
  };

  // Whether encounter `enc` keeps fighter `ref`'s attribute part in its waiting write or
  // in the parts left to the GM to put by hand (`byHand`).
  const waitsIn = (enc, ref, name, part) => {
    const has = (parts) => isObject(parts) && Object.keys(parts).some((n) => sameName(n, name) && isObject(parts[n]) && part in parts[n]);
    const waiting = ownMember(enc.writes, ref);
    return has(isObject(waiting) ? waiting.attributes : undefined) || has(ownMember(enc.byHand, ref));
  };

  // Marks the {reaches} entries of an answer's places (applyUpdates) whose write the
  // step left waiting in encounter `enc`, or to the GM to put by hand while its fighter
  // is held with no write to try (settleWrites): `held`, its id (stillWaits). Entries of
  // writes not left so (not a combatant's, a failed update a later one of the answer
  // wrote over) are left as they are.
  const markWaiting = (enc, places) => {
    Object.values(places).filter((how) => isObject(how) && Array.isArray(how.reaches)).forEach((how) => how.reaches.forEach((entry) => {
      const [ref, name, part] = entry.write;
      if (waitsIn(enc, ref, name, part)) entry.held = enc.id;
    }));
  };

  /**
   * Writes the updates: a character's attributes, or an unlinked token's bars and values,
   * but no attribute part one of whose places (placesOf) `newerWrote` holds (newerAt: a
   * place kept on a condition, a bar or an attribute a failed write reaches only through
   * a bar's link, only while it holds): an answer to a request sent later wrote
   * it already (or is to, where its write failed), and the newest request wins. Each fighter is written on its own: one whose
   * character or token is gone, or whose write throws, is listed in `failed` ({ref, gone,
   * attributes, at: its index}) and the others are still written. A write that throws
   * lists in `failed` only the parts it had not put in place yet (an unlinked token's
   * own record always is, applyTokenUpdate), and those it had are `written`. Returns {written:
   * ["name: attribute"], failed, skipped: [{ref, name, parts, left}] (`left` of the
   * update's `parts` of that attribute left out for newerWrote), places
   * (written, or meant to be where a write threw: remember), applied (the updates
   * as written, index for index)}.
   */
  const applyUpdates = (updates, newerWrote = {}) => {
    const written = [];
    const failed = [];
    const skipped = [];
    const places = {};
    const waiting = waitingTokens();
    const applied = updates.map((update, at) => {
      const ref = update.character_id;
      if (!fighterCharacter(ref)) { failed.push({ ref, gone: true, attributes: update.attributes, at }); return update; }
      const attributes = {};
      // The kept parts and where each lands: [{name, part, value, where}] (placesOf).
      const keptParts = [];
      Object.keys(update.attributes).forEach((name) => {
        const value = update.attributes[name];
        const parts = ['current', 'max'].filter((part) => part in value);
        const where = Object.fromEntries(parts.map((part) => [part, placesOf(ref, name, part, waiting)]));
        const kept = parts.filter((part) => !where[part].keys.concat(where[part].bar || []).some((key) => newerAt(newerWrote, key, where[part])));
        if (kept.length < parts.length) skipped.push({ ref, name, parts, left: parts.filter((part) => !kept.includes(part)) });
        if (!kept.length) return;
        attributes[name] = Object.fromEntries(kept.map((part) => [part, value[part]]));
        kept.forEach((part) => keptParts.push({ name, part, value: value[part], where: where[part] }));
      });
      const made = { character_id: ref, attributes };
      if (!Object.keys(attributes).length) return made;
      // The parts in place so far: where a write throws, those before it landed.
      const landed = {};
      try {
        const token = ownToken(ref);
        if (token) applyTokenUpdate(token, fighterCharacter(ref), attributes, landed);
        else {
          Object.keys(attributes).forEach((name) => {
            writeAttribute(ref, name, attributes[name]);
            land(landed, name, attributes[name]);
          });
        }
      } catch (err) {
        log(`${scriptName}: writing the update of ${ref} failed: ${err && err.stack ? err.stack : err}`);
        failed.push({ ref, gone: false, attributes: partsLeft(attributes, landed), at });
        Object.keys(landed).forEach((name) => written.push(`${fighterName(ref)}: ${name}`));
        keptParts.forEach(({ name, part, value, where }) => {
          if (isObject(landed[name]) && part in landed[name]) landedAt(where).forEach((place) => remember(places, place, true));
          else rememberFailed(places, ref, name, part, value, where);
        });
        return made;
      }
      Object.keys(attributes).forEach((name) => written.push(`${fighterName(ref)}: ${name}`));
      keptParts.forEach(({ where }) => landedAt(where).forEach((place) => remember(places, place, true)));
      return made;
    });
    return { written, failed, skipped, places, applied };
  };

  // An answer's sheet writes (applyUpdates' places) are remembered by every request
  // still waiting that was sent before it and may write sheets: should its answer come
  // later (a late one, or a second bridge's after a stale refusal), it leaves those
  // places as the newer answer wrote them. Kept with the request in state, so what is
  // remembered survives a restart and is forgotten with the request.
  const rememberWrites = (job, places) => {
    if (!Object.keys(places).length) return;
    olderWriters(job).forEach((older) => rememberIn(older, places));
  };

  // The requests still waiting that were sent before `job` and may write sheets.
  const olderWriters = (job) => Object.values(store().pending)
    .filter((older) => sentBefore(older, job) && !older.batch && Array.isArray(older.involved) && older.involved.length);

  // Adds a table of places (applyUpdates' places) to what request `older` remembers.
  const rememberIn = (older, places) => {
    const wrote = Object.assign({}, isObject(older.newerWrote) ? older.newerWrote : {});
    Object.keys(places).forEach((place) => remember(wrote, place, places[place]));
    older.newerWrote = wrote;
  };

  // What the GM reads of the writes an answer left out (applyUpdates' skipped), or ''.
  // An attribute whose current this answer would have written but not its max (or the
  // other way round) is named with the part left out: "PSP (current)".
  const skippedNote = (skipped) => {
    const refs = Array.from(new Set(skipped.map((s) => s.ref)));
    if (!refs.length) return '';
    const named = (ref) => {
      const mine = skipped.filter((s) => s.ref === ref);
      return Array.from(new Set(mine.map((s) => s.name))).map((name) => {
        const same = mine.filter((s) => s.name === name);
        const left = new Set(same.flatMap((s) => s.left));
        const wanted = new Set(same.flatMap((s) => s.parts));
        return chatSafe(left.size < wanted.size ? `${name} (${Array.from(left).join(', ')})` : name);
      }).join(', ');
    };
    const names = refs.map((ref) => `${chatSafe(fighterName(ref))}: ${named(ref)}`);
    return ` Not written, because an answer to a request sent later wrote these or, where its write failed, is to (the newest request wins): ${names.join('; ')}.`;
  };

  // `whose` names the fighter a die was rolled for, where several fighters roll alike.
  const diceText = (rolls, whose) => (Array.isArray(rolls) ? rolls : [])
    .filter(isObject)
    .map((r) => `${r.purpose} d${r.sides}: ${r.value}${r.follows !== null && r.follows !== undefined ? ' (penetrating)' : ''}`
      + (whose && r.by !== undefined && r.by !== null ? ` (${whose(String(r.by))})` : ''))
    .join(', ');

  const percent = (p) => `${(Number(p) * 100).toFixed(1)}%`;

  // combat-strength's odds in a few lines. Its `outcomes` are the damage values, hundreds
  // of them once penetrating dice chain, so these lines show its exclusive results
  // (`outcome`: damage, a crushed mind, a condition, a save, no effect), the conditions it
  // may leave, the chance the defense strength falls to 0, and the damage as the companion
  // sums it up (`damage.dealt`: given that some is dealt, its mean, median, and the values
  // between which 8 in 10 fall, its 10th and 90th percentiles; null when none ever is).
  const STRENGTH_OUTCOMES = { damage: 'Damage', crushed: 'Mind crushed', condition: 'A condition', saved: 'Saved', 'no-effect': 'No effect' };
  const strengthOdds = (result) => {
    const chances = (map, words) => (isObject(map) ? Object.keys(map) : [])
      .filter((k) => Number(map[k]) > 0).map((k) => `${ownMember(words, k) || label(k)} ${percent(map[k])}`);
    const lines = [chances(result.outcome, STRENGTH_OUTCOMES).join(', ')];
    const conditions = chances(result.conditions, {});
    if (conditions.length) lines.push(`Conditions: ${conditions.join(', ')}`);
    if (Number(result.defense_zero) > 0) lines.push(`Defense strength falls to 0: ${percent(result.defense_zero)}`);
    const dealt = isObject(result.damage) && isObject(result.damage.dealt) ? result.damage.dealt : null;
    // How often it is dealt is the Damage chance above (a crushed mind takes none).
    if (dealt && dealt.least === dealt.most) lines.push(`Damage when dealt: ${dealt.least}.`);
    else if (dealt) {
      lines.push(`Damage when dealt: ${Number(dealt.mean).toFixed(1)} on average, median ${dealt.median}, `
        + `8 times in 10 from ${dealt.p10} to ${dealt.p90}.`);
    }
    return lines.filter(Boolean);
  };

  // power-pool's outcomes name the side that won the contest.
  const OUTCOME_WORDS = { attacker: 'The attacker wins', defender: 'The defender holds' };

  const resultCard = (title, result, whose) => {
    const fields = [`{{name=${chatSafe(title)}}}`];
    const field = (name, value) => {
      if (value === undefined || value === null || value === '') return;
      fields.push(`{{${chatSafe(name)}=${chatSafe(value)}}}`);
    };
    field('Outcome', ownMember(OUTCOME_WORDS, result.outcome) || label(result.outcome));
    if (isObject(result.roll)) field('Roll', `${result.roll.natural} + ${result.roll.modifier} = ${result.roll.modified} (needed ${result.needed})`);
    if (typeof result.damage === 'number') field('Damage', result.damage);
    if (typeof result.psp_spent === 'number') field('PSP spent', result.psp_spent);
    // power-pool: an attack that fails outright (a failed save against Blank Mind) rolls
    // no contest, so it has no totals; the winner is the outcome already.
    if (typeof result.attack_total === 'number' && typeof result.defense_total === 'number') field('Totals', `${result.attack_total} vs. ${result.defense_total}`);
    if (result.winner && result.winner !== result.outcome) field('Winner', label(result.winner));
    // power-pool: who an imagination swarm drew in, and how each defended (a non-psionic
    // one with a die, and dazed; a psionic creature that joined by its own choice, with its
    // own mode).
    const allies = isObject(result.defense) && Array.isArray(result.defense.members)
      ? result.defense.members.filter((m) => isObject(m) && m.role === 'ally') : [];
    field('Allies', allies.map((m) => `${fighterName(String(m.id))} (${m.mode ? `defends with ${label(m.mode)}` : 'drawn in, dazed'}, `
      + `${m.rolls === false ? 'rolls nothing' : `${m.dice}d${m.sides}`})`).join(', '));
    field('Summary', namedSummary(result.summary));
    field('Dice', diceText(result.rolls, whose));
    return `&{template:default} ${fields.join(' ')}`;
  };

  // Posts a card for everyone, the GM only, or the GM and the controllers involved,
  // as the campaign's Mindscape roll mode says.
  const postCard = (card, involved) => {
    const mode = store().config.rollMode;
    if (mode === 'public') return sendChat(scriptName, card);
    whisperGM(card);
    if (mode === 'private') {
      const seen = new Set();
      involved.forEach((charId) => controllersOf(charId).forEach((pid) => {
        if (!seen.has(pid) && !playerIsGM(pid)) { seen.add(pid); whisperPlayer(pid, card); }
      }));
    }
    return undefined;
  };

  const stepResults = (result) => {
    if (Array.isArray(result)) return result;
    for (const key of ['results', 'steps', 'exchanges', 'resolutions']) if (Array.isArray(result[key])) return result[key];
    if (isObject(result.step)) return [result.step];
    return result.outcome !== undefined ? [result] : [];
  };

  // ------------------------------------------------- refusals in the table's words

  // The companion words a refusal for programs: an error code, a rule id, JSON paths into
  // the request, mode ids, combatant ids and the source it follows ("(seed step 3.i)").
  // Players, and the GM at the table, read it in the game's words: fighters by name,
  // modes by label, a field of the request as the field in words. The GM gets the code
  // and the rule id apart, in small print (refusalNote), to report a bug with.
  const NOT_FOUND = 4004;
  const DICE_NEEDED = 4002;
  const STORE_UNAVAILABLE = 5003;
  const INTERNAL_ERROR = -32603;
  const MODE_IDS = Array.from(new Set(Object.values(SYSTEMS).flatMap((s) => s.attacks.concat(s.defenses))));
  // The parts of a path that only hold others (the choice, a list, a sheet's value).
  const PATH_HOLDERS = ['choice', 'choices', 'data', 'current', 'params', 'combatant', 'id'];
  const PATH_WORDS = { attribs: 'sheet', options: 'house rule', max: 'maximum', pool_dice: 'pool dice', puppets: 'puppet', combatants: 'fighter' };

  const escapeRegExp = (text) => String(text).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  // Replaces each whole `word` of `text` (not inside another id: ids hold "-" and "_")
  // that `map` names, the longest first, also one in double quotes.
  const replaceIds = (text, map) => Object.keys(map).filter(Boolean).sort((a, b) => b.length - a.length)
    .reduce((out, id) => out.replace(new RegExp(`(^|[^A-Za-z0-9_-])"?${escapeRegExp(id)}"?(?![A-Za-z0-9_-])`, 'g'),
      (whole, before) => `${before}${map[id]}`), text);

  // What a refusal of `job` may name, for plainWords: `names`, each combatant id of the
  // current encounter and each fighter of the request by the fighter's name; `places`,
  // where in the request a fighter was sent (/attacker, /combatants/2, /puppets/0 …).
  const refusalContext = (job) => {
    const names = {};
    const enc = store().encounter;
    if (enc && isObject(enc.combatants)) {
      Object.keys(enc.combatants).forEach((ref) => { names[ref] = fighterName(ref); names[enc.combatants[ref]] = fighterName(ref); });
    }
    const involved = isObject(job) && Array.isArray(job.involved) ? job.involved : [];
    involved.forEach((ref) => { names[ref] = fighterName(ref); });
    const places = {};
    if (isObject(job) && isObject(job.exchange)) Object.assign(places, { '/attacker': involved[0], '/defender': involved[1] });
    // A round's end or a rest sends its fighters as /combatants/N, in order (sheetWarnings).
    if (isObject(job) && ['round', 'rest', 'round-choices'].includes(job.kind)) (job.sent || involved).forEach((ref, i) => { places[`/combatants/${i}`] = ref; });
    if (isObject(job) && isObject(job.run) && job.run.ref) places['/combatant'] = job.run.ref;
    if (isObject(job) && job.actor) places['/combatant'] = job.actor;
    if (isObject(job) && isObject(job.paths)) Object.assign(places, job.paths);
    return { names, places };
  };

  // A JSON path of the request as the field in words: "/choice/attack/multiplier" is
  // "attack multiplier", "/puppets/1/data/attribs/0/current" "Thrall's sheet", "/puppets/1"
  // "Thrall", "/combatants/<Fenka's combatant id>/controlled_by" "Fenka's controlled by";
  // `lead` puts "the" before a field of nobody's ("the attack multiplier").
  // A member name holding "/" or "~" is written "~1" or "~0" in the path (RFC 6901), so
  // it is split on "/" first and each part unescaped after, "~1" before "~0"; `places`
  // are paths, matched as written.
  const fieldWords = (path, context, lead = '') => {
    const written = String(path).split('/').filter(Boolean);
    const segments = written.map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
    let who = null;
    let rest = segments;
    for (let n = written.length; n > 0 && !who; n -= 1) {
      const ref = context.places[`/${written.slice(0, n).join('/')}`];
      if (ref) { who = fighterName(ref); rest = segments.slice(n); }
    }
    const words = [];
    const names = (segment) => segment !== undefined && Boolean(ownMember(context.names, segment) || fighterCharacter(segment));
    rest.forEach((segment, i) => {
      if (ownMember(context.names, segment)) { who = context.names[segment]; return; }
      if (fighterCharacter(segment)) { who = fighterName(segment); return; }
      if (/^\d+$/.test(segment) || PATH_HOLDERS.includes(segment)) return;
      // "/combatants/<id>" is that fighter: "Fenka's controlled by", not "Fenka's fighter …".
      if (segment === 'combatants' && names(rest[i + 1])) return;
      words.push(ownMember(PATH_WORDS, segment) || (/^H-/.test(segment) ? segment : segment.replace(/[_-]+/g, ' ')));
    });
    const what = words.join(' ');
    if (who) return what ? `${who}'s ${what}` : who;
    return what ? `${lead}${what}` : 'request';
  };

  // The companion's words in the game's (plain text, not yet chatSafe): a path that
  // opens the text goes (the text names what is wrong), one in brackets or after "in"
  // too (it tells a program where to put a value), any other becomes the field in
  // words; the source a rule follows goes, a
  // house rule's id is said to be one; combatant ids become fighters' names, mode ids
  // their labels, a list its items.
  const plainWords = (text, context) => {
    let out = String(text === undefined || text === null ? '' : text)
      .replace(/^\/[^\s:]*:\s*/, '')
      .replace(/\s*\((?:[a-z]+ )?\/[^\s()]*\)/g, '')
      .replace(/\s+in\s+\/[^\s,;:()]*/g, '')
      .replace(/\s*\((?:seed|RULES\.md)\b[^)]*\)/g, '')
      .replace(/\((H-[A-Z0-9-]+)\)/g, '(a house rule)')
      .replace(/(^|[\s(])(\/[A-Za-z_][^\s,;:()]*)/g, (whole, before, path) => `${before}${fieldWords(path, context, 'the ')}`);
    out = replaceIds(out, context.names);
    out = replaceIds(out, Object.fromEntries(MODE_IDS.map((id) => [id, label(id)])));
    out = out.replace(/\[([^[\]]*)\]/g, (whole, items) => items.replace(/["']/g, '').trim() || 'none');
    return out.replace(/\s+/g, ' ').trim();
  };

  // A reason as a sentence: its first letter capital, a full stop at its end.
  const sentence = (text) => {
    const t = String(text).trim();
    if (!t) return '';
    return `${t.charAt(0).toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? '' : '.'}`;
  };

  // Why the companion refused a request of `job`, in the game's words, ready for the chat
  // (no error code, rule id or path: refusalNote has those for the GM).
  const refusalReason = (job, error) => {
    const context = refusalContext(job);
    const data = isObject(error.data) ? error.data : {};
    const say = (text) => chatSafe(sentence(plainWords(text, context)));
    if (error.code === RULES_VIOLATION && (data.detail || data.rule)) return say(data.detail || label(String(data.rule)));
    if (error.code === INVALID_PARAMS && Array.isArray(data.errors) && data.errors.some(isObject)) {
      return data.errors.filter(isObject).map((e) => {
        const message = plainWords(e.message, context);
        const field = e.path ? fieldWords(e.path, context) : '';
        // A message that already names its field ("multiplier 9 is above …") needs no more.
        const last = field.split(/\s+/).pop();
        const named = !field || field === 'request' || (last && new RegExp(`\\b${escapeRegExp(last)}\\b`, 'i').test(message));
        return chatSafe(sentence(named ? message : `${field}: ${message}`));
      }).join('<br>');
    }
    if (error.code === DICE_NEEDED) {
      return chatSafe(`The companion needs ${data.needed || 'more'} more d${data.sides || '?'} for ${plainWords(data.purpose || 'a roll', context)}.`);
    }
    if (error.code === NOT_FOUND) {
      const id = String(data.id || '');
      const enc = store().encounter;
      if ((enc && id === enc.id) || (isObject(job) && id === job.encounter)) return 'The companion does not know this encounter (it may have been deleted): a GM starts a new one with <code>!psi encounter create</code>.';
      const who = ownMember(context.names, id) || (fighterCharacter(id) ? fighterName(id) : '');
      if (who) return `The companion does not know ${chatSafe(who)} as a combatant of this encounter: a GM adds it with <code>!psi encounter add</code>.`;
      return 'The companion does not know the encounter or a combatant this names (it may have been deleted or never added).';
    }
    if (error.code === BRIDGE_UNCERTAIN) return say(data.detail || 'the bridge lost the answer');
    if (error.code === BRIDGE_REFUSED) return say(data.detail || 'the bridge could not carry this out');
    // retry: false: the store's files were deleted or replaced under the running companion,
    // and only a restart helps; true or absent (an older companion): the disk refused.
    // A player reads this too, and no error id: the GM finds it in refusalNote's small print.
    if (error.code === STORE_UNAVAILABLE && data.retry === false) return 'The companion\'s store files were moved or deleted while it ran, so nothing was saved: put them back if they were moved, then restart <code>mindscape serve</code> on the GM\'s computer (without them it starts a new, empty store; its log there says more).';
    if (error.code === STORE_UNAVAILABLE) return 'The companion could not save (its disk may be full or its folder read-only), so nothing was changed.';
    if (error.code === INTERNAL_ERROR) return 'The companion failed unexpectedly; its log on the GM\'s computer says why.';
    return 'The companion could not carry this out.';
  };

  // The companion's own words for the GM, in small print apart from the reason: the code,
  // the rule id, the paths, an error id (companion: 4001 attack-not-known).
  const refusalNote = (error) => {
    const data = isObject(error.data) ? error.data : {};
    const parts = [String(error.code)];
    if (data.rule) parts.push(String(data.rule));
    if (Array.isArray(data.errors)) parts.push(...data.errors.filter(isObject).map((e) => String(e.path || '/')));
    if (error.code === NOT_FOUND && data.id) parts.push(String(data.id));
    if (data.error_id || (error.code === INTERNAL_ERROR && data.id)) parts.push(`error id ${data.error_id || data.id}`);
    if (![RULES_VIOLATION, INVALID_PARAMS, NOT_FOUND, DICE_NEEDED, BRIDGE_UNCERTAIN, BRIDGE_REFUSED].includes(error.code) && error.message) parts.push(String(error.message));
    const by = [BRIDGE_UNCERTAIN, BRIDGE_REFUSED].includes(error.code) ? 'bridge' : 'companion';
    return `<br><span style="font-size:9px;color:#888;">${by}: ${chatSafe(parts.join(' '))}</span>`;
  };

  // A request's title in words, for its boxes: "Ulcen of Tyr's declaration", not the method.
  const JOB_TITLES = {
    'encounter.create': 'new encounter', 'encounter.add': 'joining the encounter', 'encounter.get': 'encounter status',
    'encounter.declare': 'declaration', 'encounter.undo': 'undoing the last step', 'encounter.resolve': 'encounter step',
    'encounter.refresh': 'refresh', exchange: 'attack', [CHECK_KIND]: 'attack', odds: 'odds', round: 'end of the round', rest: 'rest', house: 'house rules',
  };
  const titleOf = (job) => {
    if (job.title) return chatSafe(job.title);
    if (job.kind === 'encounter.declare' && job.actor) return chatSafe(`${fighterName(job.actor)}'s declaration`);
    return chatSafe(JOB_TITLES[job.kind] || 'request');
  };

  // Who rolled a die of a round's end or a rest: the fighter's name when it is one of the
  // job's, else the id the companion gave.
  const rollerOf = (job) => (ref) => (job.involved.includes(ref) ? fighterName(ref) : ref);

  // The handler of a request that changes sheets outside any encounter and need not be
  // announced when nothing happened (`exchange.end_round`, `combatants.rest`). It speaks
  // of those whose round ended or who rested (`sent`), and of the power-pool puppets that
  // went along only when the answer changed them (`others`): one whose control held is
  // none of its players' business.
  const shownWhenSomethingHappened = (heading, nothing) => (job, result) => {
    const rolls = Array.isArray(result.rolls) ? result.rolls : [];
    const events = Array.isArray(result.events) ? result.events : [];
    const sent = job.sent || job.involved;
    if (!rolls.length && !events.length) {
      return whisperGM(box(heading, `${chatSafe(namedSummary(result.summary) || nothing)} `
        + `(${sent.map(fighterName).map(chatSafe).join(', ')})`));
    }
    const changed = (Array.isArray(result.others) ? result.others : [])
      .map((other) => (isObject(other) ? String(other.id) : '')).filter((ref) => job.involved.includes(ref));
    return postCard(resultCard(job.title, { summary: result.summary, rolls }, rollerOf(job)), sent.concat(changed));
  };

  // What each kind of request does with a successful result.
  const HANDLERS = {
    house: handleHouse,
    exchange: (job, result) => {
      postCard(resultCard(job.title, result), job.involved);
    },
    odds: (job, result) => {
      const assumed = typeof job.assumed === 'string' ? `<br><i>${chatSafe(job.assumed)}</i>` : '';
      if (job.system === 'combat-strength') return tell(job.requester, chatSafe(job.title), `${strengthOdds(result).map(chatSafe).join('<br>')}${assumed}`);
      const outcomes = isObject(result.outcomes) ? Object.keys(result.outcomes).map((k) => `${label(k)} ${percent(result.outcomes[k])}`) : [];
      const extra = ['critical', 'mind_opened', 'control']
        .filter((k) => typeof result[k] === 'number').map((k) => `${label(k)} ${percent(result[k])}`);
      // power-pool's contests deal no damage but synaptic overload's: a mean of 0 says nothing.
      const mean = isObject(result.damage) && typeof result.damage.mean === 'number' && result.damage.mean > 0
        ? `<br>Mean damage ${result.damage.mean.toFixed(2)}` : '';
      return tell(job.requester, chatSafe(job.title), `${outcomes.concat(extra).map(chatSafe).join(', ')}${mean}${assumed}`);
    },
    // A round's end or a rest is shown to the table only when it did something (a
    // condition ended, a mind opened, closed or was checked, PSPs or pool dice came back,
    // dice were rolled, each naming its roller): else it is a word to the GM (timers
    // counting down on the sheets are written all the same).
    round: shownWhenSomethingHappened('end of the round', 'End of the round: nothing changes.'),
    'round-choices': (job, result) => handleRoundChoices(job, result),
    rest: shownWhenSomethingHappened('rest', 'After the rest: nothing changes.'),
    'encounter.create': (job, result) => {
      // A late answer must not replace an encounter the GM has gone on with meanwhile.
      const current = store().encounter;
      if (job.late && current && current.id !== String(result.id)) {
        return whisperGM(box('encounter', `The companion created encounter <b>${chatSafe(result.id)}</b> after all; `
          + `<b>${chatSafe(current.id)}</b> stays the current one here.`));
      }
      store().encounter = { id: String(result.id), system: job.system, name: job.name, revision: result.revision, combatants: {}, held: [] };
      return whisperGM(box('encounter', `Encounter <b>${chatSafe(result.id)}</b> (${job.system}) created. Select tokens and use <code>!psi encounter add</code>.`));
    },
    'encounter.declare': (job, result) => {
      takeRevision(job, result);
      const waiting = Array.isArray(result.waiting_for) ? result.waiting_for.length : '?';
      if (job.public) {
        // The companion says what the action did ("Ix regains 3 dice (5 in the pool).").
        const did = typeof result.summary === 'string' && result.summary ? `${chatSafe(namedSummary(result.summary))} ` : '';
        const text = `${chatSafe(job.said)}: done at once (everyone may know it). ${did}Still to choose: ${waiting}.`;
        tell(job.requester, 'declared', text, TRANSIENT);
        if (!playerIsGM(job.requester)) whisperGM(box('encounter', text));
        return;
      }
      // Declaring again replaces the whole choice (the companion keeps the last one): an
      // attack declared alone and then a defense alone would lose the attack.
      const together = job.system === 'power-pool' ? '' : ', so declare your attack and your defense together';
      const chose = job.chose ? `: ${chatSafe(job.chose)}. A new declaration replaces all of it${together}` : '';
      tell(job.requester, 'declared', `Your choice is recorded in secret${chose}. Still to choose: ${waiting}.`, TRANSIENT);
      if (!playerIsGM(job.requester)) whisperGM(box('encounter', `${chatSafe(fighterName(job.involved[0]))} has declared. Still to choose: ${waiting}.`));
    },
    // A step holds its exchanges under `results` and its own summary (a round, a
    // segment): one card per exchange, or one for the step when nothing was exchanged.
    'encounter.resolve': (job, result) => {
      const when = ['round', 'segment', 'exchange'].filter((k) => result[k] !== undefined).map((k) => `${k} ${result[k]}`).join(', ');
      const title = when ? `${job.title}: ${when}` : job.title;
      const exchanges = stepResults(result).filter(isObject);
      // What the step did beside its exchanges (defenses raised and paid at the round's
      // start, minds closed, conditions run out) is in its own summary only: without it the
      // cards would not add up to the PSPs written. It goes first, the exchanges' own
      // summaries taken out of it.
      const own = exchanges.reduce((text, step) => (typeof step.summary === 'string' && step.summary ? text.replace(step.summary, '') : text),
        typeof result.summary === 'string' ? result.summary : '').replace(/\s+/g, ' ').trim();
      if (exchanges.length && own && !/^[^.]*:$/.test(own)) postCard(resultCard(title, { summary: own }), job.involved);
      if (exchanges.length) exchanges.forEach((step) => postCard(resultCard(title, step), job.involved));
      else postCard(resultCard(title, { summary: result.summary, rolls: result.rolls }), job.involved);
      takeRevision(job, result);
    },
    'encounter.get': (job, result) => {
      const enc = store().encounter;
      const mine = enc && (result.id === undefined || String(result.id) === enc.id);
      if (mine) refreshEncounter(enc, result);
      const settled = mine ? settleUncertain(enc, result) : '';
      if (settled) whisperGM(box('encounter', settled));
      const names = {};
      const refs = {};
      if (enc) Object.keys(enc.combatants).forEach((c) => { names[enc.combatants[c]] = fighterName(c); refs[enc.combatants[c]] = c; });
      const waiting = (Array.isArray(result.waiting_for) ? result.waiting_for : []).map((c) => ownMember(names, c) || c);
      const phase = isObject(result.phase) ? JSON.stringify(result.phase) : result.phase;
      const joined = enc ? Object.keys(enc.combatants).map(fighterName) : [];
      // revised-2e: who may declare --close this round, at the companion's price. An offer
      // tells that mind's PSPs (it holds at least the price): only the GM and the mind's
      // controllers read it.
      const offers = isObject(result.close_offers) ? result.close_offers : {};
      const reader = job.requester && !playerIsGM(job.requester) ? job.requester : null;
      const closing = Object.keys(offers).filter((c) => isObject(offers[c]) && offers[c].payable === true)
        .filter((c) => !reader || (ownMember(refs, c) !== undefined && mayControl(reader, refs[c])))
        .map((c) => `${chatSafe(ownMember(names, c) || c)} (${chatSafe(offers[c].cost)} PSPs)`);
      const close = closing.length ? `<br>May pay to close their minds (declare --close): ${closing.join(', ')}` : '';
      // What to put on a held sheet: the encounter's copy of what the sheets hold, named
      // as a missed write names it (copyValues), for an unlinked token each value with
      // where it belongs. It tells that fighter's PSPs, hit points and conditions: only
      // the GM and its controllers read it, as the sheet itself.
      // A token whose character is gone is out of the fight (its values have no place to
      // go, and the refresh lets go of it without taking it), as missedValues says a
      // gone fighter's write.
      const held = heldOf(enc).filter((ref) => !reader || mayControl(reader, ref));
      const said = held.map((ref) => copyValues(ref, viewCombatant(result, enc.combatants[ref])));
      const copies = held.map((ref, i) => `${chatSafe(fighterName(ref))}: ${said[i].text || 'no values in the view'}`);
      const recorded = held.filter((ref, i) => said[i].own);
      const retrying = (changed) => held.filter((ref) => writesOf(enc)[ref] && Boolean(writesOf(enc)[ref].changed) === changed);
      const holding = held.length ? `<br>Held, the encounter keeps its own copy (their sheets missed a write-back; put these values `
        + `${said.some((v) => v.token) ? 'where each belongs' : 'on them'}, then <code>!psi encounter refresh</code>):<br>${copies.join('<br>')}`
        + (recorded.length ? `<br>${OWN_RECORD_NOTE} ${namesOf(recorded)}.` : '')
        + (retrying(false).length ? `<br>${RETRY_NOTE} ${namesOf(retrying(false))}.` : '')
        + (retrying(true).length ? `<br>${CHANGED_NOTE} ${namesOf(retrying(true))}.` : '') : '';
      tell(job.requester, 'encounter', `Phase: ${chatSafe(phase)}; revision ${chatSafe(result.revision)}<br>`
        + `Combatants: ${joined.map(chatSafe).join(', ') || 'none'}<br>Still to choose: ${waiting.map(chatSafe).join(', ') || 'nobody'}${close}${holding}`);
    },
    'encounter.undo': (job, result) => {
      takeRevision(job, result);
      whisperGM(box('encounter', 'The last step was undone.'));
    },
  };

  // One combatant of an encounter.get view (a map by id, or a list), or null.
  const viewCombatant = (view, cid) => {
    if (Array.isArray(view.combatants)) return view.combatants.find((c) => isObject(c) && String(c.id) === String(cid)) || null;
    return isObject(view.combatants) && isObject(view.combatants[cid]) ? view.combatants[cid] : null;
  };

  // The values of a combatant a sheet holds: [[what, {current, max?}]], "psp" {19, 30},
  // "hp" {11}, "conditions" {"stunned (1 more)"}, "mind" {"open"}.
  const copyParts = (c) => {
    if (!isObject(c)) return [];
    const pair = (now, most) => Object.assign({ current: c[now] }, c[most] !== undefined && c[most] !== null ? { max: c[most] } : {});
    const parts = [];
    if (c.psp !== undefined) parts.push(['psp', pair('psp', 'psp_max')]);
    if (c.attack_strength !== undefined) parts.push(['attack strength', pair('attack_strength', 'attack_strength_max')]);
    if (c.defense_strength !== undefined) parts.push(['defense strength', pair('defense_strength', 'defense_strength_max')]);
    if (c.pool !== undefined) parts.push(['pool', pair('pool', 'hit_dice')]);
    if (c.hp !== undefined && c.hp !== null) parts.push(['hp', { current: c.hp }]);
    const conditions = Array.isArray(c.conditions) ? c.conditions : [];
    const rounds = isObject(c.condition_rounds) ? c.condition_rounds : {};
    if (conditions.length) parts.push(['conditions', { current: conditions.map((x) => (rounds[x] ? `${x} (${rounds[x]} more)` : x)).join(', ') }]);
    if (isObject(c.mind) && c.mind.state) parts.push(['mind', { current: c.mind.state }]);
    return parts;
  };

  // Where the companion's write-back puts part `part` (current or max) of HP or PSP
  // (`what`: hp or psp) of fighter `ref`, as [attribute, current or max], or null where
  // it puts none, read off `sheet`, the fighter's attributes as combatantOf sends them
  // (sheetAttribs: an unlinked token's bars and own record over its character's). As
  // the adapters (adapters/roll20.py) read a sheet, the first attribute of a name counts,
  // a number is there only where the part holds more than spaces (to_int), and an
  // attribute the sheet has is named as the sheet spells it:
  //  - for PSP, psi_psp's part when it holds a number (STATE_PAIRS: the psionic state
  //    store is read over the sheet, so its place wins);
  //  - else, with the generic adapter, the attribute its mapping names, whether or not
  //    the sheet has it (the companion binds a mapped field to its place even while
  //    empty);
  //  - else, with the AD&D 2E Revised adapter: HP on HP where the sheet has HP or a
  //    number in HP_max (a full HP box is written back to HP); PSP the same way on PSP
  //    (PSP_max); the PSP maximum on PSP_max where the sheet has that and no number in
  //    PSP's max, else on PSP's max where it has PSP;
  //  - else, for PSP, psi_psp's part (STATE_PAIRS: "psi_psp 19, max 30"), and for HP
  //    none (the adapters write HP only where the sheet keeps it).
  // With no sheet (a fighter whose character is gone) the first barBindings name is taken.
  const writtenAt = (ref, what, part, sheet) => {
    const charId = fighterCharacter(ref);
    const side = part === 'max' ? 'max' : 'value';
    const find = (name) => sheet.find((a) => sameName(a.name, name));
    const number = (name, of) => filled((find(name) || {})[of]);
    const at = (name, of) => [find(name) ? find(name).name : name, of];
    const stored = what === 'psp' ? STATE_PAIRS[part === 'max' ? 'psp_max' : 'psp'] : null;
    if (stored && number(...stored)) return at(...stored);
    if (!charId || adapterOf(charId) === 'roll20.generic') {
      const binding = barBindings(charId).find((b) => b.field === what && b.bar === side);
      return binding ? at(binding.attr, binding.part) : stored;
    }
    const box = what === 'psp' ? 'PSP' : 'HP';
    if (side === 'value') return find(box) || number(`${box}_max`, 'current') ? at(box, 'current') : stored;
    if (what === 'psp' && find('PSP_max') && !number('PSP', 'max')) return at('PSP_max', 'current');
    return find(box) ? at(box, 'max') : stored;
  };

  // A held fighter's copy (copyParts) as missedValues says a missed write: HP and PSP
  // (value, and maximum) as the attributes the companion's write-back puts them on
  // (writtenAt: "PSP 19, max 30; HP 11; mind open", or "psi_psp 19, max 30" where the
  // sheet keeps PSP in no attribute of its own; HP where it keeps none is left out), and
  // for an unlinked token each value with where it belongs ("PSP 19, max 30 (its
  // token's bar 2)"), anything but HP and PSP, as applyTokenUpdate keeps it, in
  // Mindscape's own record of the token; none for a token whose character is gone (out
  // of the fight, as a missed write of it). missedValues' {text, token, own}.
  const copyValues = (ref, c) => {
    const sheet = fighterCharacter(ref) ? sheetAttribs(ref) : [];
    const attributes = {};
    copyParts(c).forEach(([what, value]) => Object.keys(value).forEach((part) => {
      const place = ['hp', 'psp'].includes(what) ? writtenAt(ref, what, part, sheet) : [what, part];
      if (!place) return;
      const [name, side] = place;
      attributes[name] = Object.assign(attributes[name] || {}, { [side]: value[part] });
    }));
    return missedValues({ ref, attributes, gone: !fighterCharacter(ref) });
  };

  // The combatant ids in an encounter.get view (a map by id, or a list), or null.
  const viewCombatantIds = (view) => {
    if (Array.isArray(view.combatants)) return view.combatants.filter(isObject).map((c) => String(c.id));
    if (isObject(view.combatants)) return Object.keys(view.combatants);
    return null;
  };

  // Takes the companion's word for the revision and for who is in the encounter: after a
  // lost or late answer this script's view may lag behind. The Roll20 adapters use the
  // id they are sent as the combatant id, so a combatant named after a character, or
  // after an unlinked token, is that fighter.
  const refreshEncounter = (enc, view) => {
    if (Number.isInteger(view.revision)) enc.revision = view.revision;
    // power-pool: the minds struck in the defense phase, the one leading the group first, as
    // of this revision: a declaration checks its allies against them while nothing moved.
    enc.struck = Array.isArray(view.struck) && Number.isInteger(view.revision) ? { revision: view.revision, ids: view.struck.map(String) } : null;
    const ids = viewCombatantIds(view);
    if (!ids) return;
    const fresh = {};
    Object.keys(enc.combatants).forEach((charId) => {
      if (ids.includes(enc.combatants[charId])) fresh[charId] = enc.combatants[charId];
    });
    const known = Object.values(fresh);
    ids.forEach((cid) => { if (!known.includes(cid) && fighterCharacter(cid)) fresh[cid] = cid; });
    // A fighter the companion no longer has is out of any hold: should it join again,
    // it comes with its sheet as it is then, and nothing from before is written over it.
    Object.keys(enc.combatants).filter((ref) => !fresh[ref]).forEach((ref) => releaseFighter(enc, ref));
    enc.combatants = fresh;
  };

  // The companion refuses a second add of the same combatant; its id is the character's.
  const alreadyJoined = (error) => isObject(error) && error.code === INVALID_PARAMS && isObject(error.data)
    && Array.isArray(error.data.errors)
    && error.data.errors.some((e) => isObject(e) && e.path === '/combatant/id' && /already in the encounter/.test(String(e.message)));

  const STATUS_HINT = 'Run <code>!psi encounter status</code> to see where the encounter stands before you repeat anything.';

  // After a create that got no answer in time there is no current encounter here for
  // status to show (it only says so); its answer, should it still come, is applied
  // (HANDLERS['encounter.create']).
  const CREATE_LATE = 'The companion may have created it all the same: should its answer still arrive (within the hour), '
    + 'that encounter becomes the current one here, unless you have created another meanwhile, and you are told so. If no answer comes, '
    + 'run <code>!psi encounter create</code> again once the bridge relays (an encounter the companion made without its answer reaching here is only left unused).';

  // What to do after the bridge answered that it cannot tell whether the companion did a
  // changing request (BRIDGE_UNCERTAIN): that answer is the last, so for a create no late
  // one will make the encounter current; for the others status shows where it stands.
  const uncertainHint = (kind) => (kind === 'encounter.create'
    ? 'No other answer will come for it: run <code>!psi encounter create</code> again (an encounter the companion may have made meanwhile is only left unused).'
    : STATUS_HINT);

  // encounter.add answers a batch: one response per token, each may fail alone. The
  // fighters join the encounter the add was sent for: once another is the current one
  // here (ended, or created anew, while the add was on its way), the current one gains
  // nobody and the GM is told where they joined.
  const handleBatch = (job, responses) => {
    const enc = jobEncounter(job);
    const elsewhere = enc || job.encounter === undefined ? '' : ` encounter <b>${chatSafe(job.encounter)}</b>, which is no longer the current one here`;
    const lines = [];
    let uncertain = false;
    job.batch.forEach(([rid, charId]) => {
      const response = responses.find((r) => r.id === rid);
      const name = chatSafe(fighterName(charId));
      if (response.error && alreadyJoined(response.error)) {
        // A replayed or repeated add (after a lost answer): the combatant is in already.
        if (enc) enc.combatants[charId] = charId;
        lines.push(elsewhere ? `${name} was already in${elsewhere}.` : `${name} was already in the encounter: joined.`);
      } else if (response.error) {
        if (response.error.code === BRIDGE_UNCERTAIN) uncertain = true;
        const one = Object.assign({}, job, { involved: [charId], actor: charId });
        lines.push(`${name} did not join: ${refusalReason(one, response.error)}${refusalNote(response.error)}`);
      } else {
        if (enc) {
          enc.combatants[charId] = String(response.result.combatant_id);
          if (Number.isInteger(response.result.revision) && !(enc.revision > response.result.revision)) enc.revision = response.result.revision;
        }
        lines.push(elsewhere ? `${name} joined${elsewhere}.` : `${name} joined.`);
      }
    });
    if (uncertain) lines.push(STATUS_HINT);
    whisperGM(box('encounter', lines.join('<br>')));
  };

  // Who hears of a refused request: the GM always, with the detail. A refused exchange
  // can name the defender's secret choice and resources, so its detail goes to the player
  // who chose the defense, and the attacker learns only that it failed (a defense refused
  // for the defender's own choice is chosen again instead: chooseAgain).
  const reportError = (job, error) => {
    const title = titleOf(job);
    const requester = job.requester && !playerIsGM(job.requester) ? job.requester : null;
    if (error.code === STALE_REVISION && store().encounter) {
      const now = isObject(error.data) && error.data.revision !== undefined ? ` (now at revision ${chatSafe(error.data.revision)})` : '';
      // Not "nothing changed": a second bridge may have relayed the request too, and its
      // run been carried out (keptAfterStale).
      whisperGM(box(title, `The encounter moved on${now} before this request reached the companion, so this answer changed nothing. Resyncing with the companion&hellip; `
        + 'Should a second bridge (another GM\'s, or another browser) have relayed it too, that answer is still applied when it comes.'));
      if (requester) {
        tell(requester, title, 'The encounter moved on before your request arrived, so this answer recorded nothing (should it be recorded all the same, you are told so). '
          + 'Look at the encounter (below) and repeat your command if it still fits.');
      }
      return resync(requester || job.requester);
    }
    if (error.code === BRIDGE_UNCERTAIN) {
      whisperGM(box(title, `The bridge could not tell whether the companion carried this out: ${refusalReason(job, error)}<br>${uncertainHint(job.kind)}${holdUncertain(job)}${refusalNote(error)}`));
      if (requester) tell(requester, title, 'Your request may not have arrived; the GM has been told.');
      return undefined;
    }
    // The title says it was refused; the reason is the companion's, in the game's words.
    // A step is titled with the encounter's name: say that it is its next step.
    const refused = job.kind === 'encounter.resolve' ? `Refused: the next step of ${title}` : `Refused: ${title}`;
    const text = refusalReason(job, error);
    // A house rule this campaign set that the companion no longer takes.
    const house = isObject(error.data) && Array.isArray(error.data.errors)
      && error.data.errors.some((e) => isObject(e) && /^\/options\//.test(String(e.path)))
      ? '<br>The campaign\'s house rules are sent as <code>options</code>: <code>!psi house</code> shows them, and <code>--default RULE</code> clears one.' : '';
    if (job.kind === 'exchange' && refusesTheDefense(job, error)) return chooseAgain(job, error);
    const puppets = refusedPuppets(job, error);
    if (puppets.length) return sendWithoutPuppets(job, puppets, error);
    const declared = job.kind === 'encounter.declare' ? declareRefusal(error) : '';
    whisperGM(box(refused, text + house + declared + (job.kind === 'round' ? roundRefusal(job, error) : '') + refusalNote(error)));
    if (job.kind === 'exchange') {
      const chooser = job.chooser && !playerIsGM(job.chooser) ? job.chooser : null;
      // A refusal of the attacker's own attack (its PSPs, its pool, the modes it knows) is
      // its player's to read, not the defender's; any other, the chooser's (it may tell the
      // defense and the defender's resources). Everyone else learns only that it failed,
      // under a title without the attack mode, which the defense was chosen without.
      const reader = refusesTheAttacker(job, error) ? requester : chooser;
      if (reader) tell(reader, reader === requester ? refused : `Refused: ${sidesTitle(job)}`, text);
      // A wave's choosers (job.told) learn only that it failed.
      const others = [requester, chooser].concat(Array.isArray(job.told) ? job.told : [])
        .filter((pid, i, all) => pid && pid !== reader && all.indexOf(pid) === i);
      others.forEach((pid) => tell(pid, pid === requester ? refused : `Refused: ${sidesTitle(job)}`, 'The exchange failed; the GM has been told why.'));
      return undefined;
    }
    if (job.kind === 'odds' && oddsHiddenFrom(requester, job, error)) return tell(requester, title, ODDS_HIDDEN);
    if (requester) tell(requester, refused, text + declared);
    return undefined;
  };

  // Rules that refuse the attacker's own attack in a single exchange, whatever the defense:
  // revised-2e's (RULES.md 1.4: the PSPs declared, the multiplier, a mode not known, a mind
  // that cannot attack) and combat-strength's (its modes, its attack strength, its range).
  const ATTACKER_RULES = ['not-enough-psp', 'attack-not-known', 'multiplier-above-level', 'nonpsionic-cannot-attack',
    'attacker-cannot-act', 'attack-mode-not-known', 'attack-strength-too-low', 'attacker-incapacitated', 'range-beyond-mode'];

  // Whether the companion refused an exchange for the attacker's own sake: the creature
  // it names (power-pool) is the attacker, or the rule is one of ATTACKER_RULES.
  const aboutTheAttacker = (job, error) => {
    const attacker = isObject(job.exchange) ? job.exchange.attacker : null;
    if (!attacker || error.code !== RULES_VIOLATION || !isObject(error.data)) return false;
    if (typeof error.data.combatant === 'string') return error.data.combatant === attacker;
    // A companion that names no creature: power-pool's mode-not-known about the attack mode
    // names that mode in its detail (attack and defense modes have different ids).
    const attackMode = isObject(job.exchange.attack) ? String(job.exchange.attack.mode) : '';
    if (error.data.rule === 'mode-not-known') return String(error.data.detail || '').split(/\s+/).includes(attackMode);
    return ATTACKER_RULES.includes(String(error.data.rule || ''));
  };

  // An exchange's title without its attack mode: "Ulcen of Tyr vs. Fenka".
  const sidesTitle = (job) => {
    const exchange = isObject(job.exchange) ? job.exchange : null;
    if (!exchange) return titleOf(job);
    return chatSafe(`${fighterName(exchange.attacker)} vs. ${(exchange.targets || [exchange.defender]).map(fighterName).join(', ')}`);
  };

  const ODDS_HIDDEN = 'No odds for this choice: the companion refused it because of a mind the attack would strike '
    + '(its defense, its sheet or its state), which only its controllers and the GM may see. The GM has been told why; '
    + 'the attack itself may still be made, and the defender chooses its own defense.';

  // Whether the refusal of an odds question is to be kept from the player who asked: it
  // speaks of a mind the attack would strike (a defense's rule, another fighter named, a
  // sheet or choice refused outside the attacker and its attack), whose PSPs or known
  // defenses its detail may tell, and the player does not control every such mind. An
  // attack refused so tells its player only that it failed (reportError); so do its odds.
  const oddsHiddenFrom = (requester, job, error) => {
    if (!requester || !Array.isArray(job.struck) || job.struck.every((ref) => mayControl(requester, ref))) return false;
    const data = isObject(error.data) ? error.data : {};
    if (error.code === RULES_VIOLATION) {
      return DEFENSE_RULES.includes(String(data.rule || '')) || (typeof data.combatant === 'string' && data.combatant !== job.attacker);
    }
    if (error.code === INVALID_PARAMS && Array.isArray(data.errors)) {
      return data.errors.some((e) => !/^\/(attacker|attack)(\/|$)/.test(String(isObject(e) ? e.path : '')));
    }
    return false;
  };

  // What a refused declaration means, in the table's words, beyond the companion's.
  const declareRefusal = (error) => {
    const rule = isObject(error.data) ? String(error.data.rule || '') : '';
    // revised-2e: a second attack (--attack2) in a round that allows one.
    if (rule === 'too-many-attacks') {
      return '<br>Nothing was recorded. A psionicist makes a second attack only in the rounds its level allows: '
        + 'declare again with one attack (without <code>--attack2</code>).';
    }
    if (rule !== 'allies-first-mind-only') return '';
    return '<br>Nothing was recorded. In a psionic wave only the mind struck first draws allies into the group\'s defense: '
      + 'declare this defense again without <code>--ally</code> (that mind\'s controller names the allies).';
  };

  // Rules that refuse only the defense a single attack's defender chose, where the rule's
  // id alone tells it from the attack's: revised-2e's (a mode not known, a mind that has no
  // psionic mind or cannot act, too few PSPs to raise it: RULES.md 1.2, 1.4) and
  // combat-strength's (a mode not known; Shield Thoughts only, which its exchanges do not
  // check today). No defense is never refused by them, so another choice always does.
  const DEFENSE_RULES = ['defense-not-known', 'nonpsionic-cannot-defend', 'defender-cannot-act', 'not-enough-psp-for-defense',
    'defense-mode-not-known', 'defense-shield-thoughts-only'];
  // power-pool's rules about a defending mind's choice (a mode that does not work while it
  // is unaware, pool dice beyond its pool, a spell to sacrifice it has not memorised).
  // They may be about another creature (pool-dice-exceed-pool also refuses the attacker's
  // dice), so another choice mends them only when the mind they are about is one that chose.
  const CHOOSER_RULES = ['defender-unaware', 'pool-dice-exceed-pool', 'spell-not-memorised'];

  // Whether the companion refused an exchange for the defense chosen, which may be chosen
  // again: power-pool's allies (its ally-* rules: a psionic creature, a mindless one, one
  // under control), any rule about a creature that joined by its own choice (asleep, say:
  // it is left out), a defense mode a mind does not know, a rule of DEFENSE_RULES, or one
  // of CHOOSER_RULES about a mind that chose. mode-not-known also refuses an attack mode
  // the attacker does not know, which no other defense mends: the companion names the
  // creature a refusal is about (refusedFighter); one older than that is told apart by the
  // attack mode its detail names (attack and defense modes have different ids). Not an
  // attack an hour old: that one would be forgotten at once.
  const refusesTheDefense = (job, error) => {
    const exchange = job.exchange;
    if (!isObject(exchange) || error.code !== RULES_VIOLATION || !isObject(error.data)) return false;
    if (!(Date.now() - exchange.at < EXCHANGE_LIFETIME_MS)) return false;
    // A wave at the attacker's own puppet, or an attack on it, had nobody to choose.
    const choosers = Array.isArray(exchange.members) ? exchange.members : [exchange.struck || exchange.defender];
    if (!choosers.length || choosers.includes(exchange.attacker)) return false;
    const rule = String(error.data.rule || '');
    if (rule.startsWith('ally-')) return true;
    const about = refusedFighter(job, error);
    if (about && joinedRefs(exchange).includes(about)) return true;
    if (DEFENSE_RULES.includes(rule)) return true;
    if (CHOOSER_RULES.includes(rule)) return choosers.includes(about);
    if (rule !== 'mode-not-known') return false;
    if (typeof error.data.combatant === 'string') return Boolean(about) && about !== exchange.attacker;
    const attackMode = isObject(exchange.attack) ? String(exchange.attack.mode) : '';
    return !String(error.data.detail || '').split(/\s+/).includes(attackMode);
  };

  // The fighter a refusal is about: the one the companion names in its error data
  // (`combatant`, the id it was sent: the fighter's ref) when it is one of this request's.
  // A companion older than that names it only in its detail: then the ally at the
  // /allies/N the detail starts with, or the one fighter of the request whose name it
  // starts with (the companion names creatures as they were sent: fighterName; the
  // longest name wins, Goblin 2 before Goblin). Null when none fits (renamed since) or
  // when several fighters share that name (five Goblins): better nobody than the wrong one.
  const refusedFighter = (job, error) => {
    const data = isObject(error.data) ? error.data : {};
    const involved = Array.isArray(job.involved) ? job.involved : [];
    if (typeof data.combatant === 'string') return involved.includes(data.combatant) ? data.combatant : null;
    const detail = String(data.detail || '');
    const at = /^(\/allies\/\d+)\b/.exec(detail);
    if (at && isObject(job.paths) && job.paths[at[1]]) return job.paths[at[1]];
    const fits = Array.from(new Set(involved.filter((ref) => detail.startsWith(fighterName(ref)))));
    const longest = Math.max(0, ...fits.map((ref) => fighterName(ref).length));
    const best = fits.filter((ref) => fighterName(ref).length === longest);
    return best.length === 1 ? best[0] : null;
  };

  // Why the companion refused a defense, in the table's words, naming the creature; `xid`
  // is the id the attack waits under again, `joined` whether the creature had joined by
  // its own choice (and is left out now); `said`, the companion's detail in the game's
  // words (plainWords, chatSafe), for a refusal not worded here.
  const defenseRefusalText = (rule, detail, ref, xid, joined, said) => {
    const name = ref ? `<b>${chatSafe(fighterName(ref))}</b>` : null;
    if (!name) return `The companion refused the defense: ${said}.`;
    const join = `<code>!psi join --req ${xid}</code> with its token selected`;
    if (joined) {
      const mode = /does not know ([a-z-]+)/.exec(detail);
      const why = ownMember({
        'ally-mindless': `${name} has no mind, so it cannot join the defense.`,
        'ally-controlled': `${name} is under psionic control, so it cannot join the defense.`,
        // A creature the companion reads as non-psionic: it has no defense of its own to join with.
        'ally-not-psionic': `The companion reads ${name} as non-psionic: it cannot join a defense by its own choice `
          + '(only a defender\'s Imagination Swarm draws in non-psionic allies).',
        'mode-not-known': `${name} does not know ${mode ? label(mode[1]) : 'Imagination Swarm'}, so it cannot join the defense.`,
      }, rule) || `${name} cannot join the defense: ${said}.`;
      return `${why} It is left out (should that change, it may join again: ${join}).`;
    }
    if (rule === 'ally-psionic') {
      return `${name} is psionic: a defender draws in only allied non-psionic creatures. A psionic creature joins a defense by its own `
        + `choice: its controller or the GM sends ${join}.`;
    }
    if (rule === 'ally-mindless') return `${name} has no mind, so it cannot be drawn into the defense.`;
    if (rule === 'ally-controlled') return `${name} is under psionic control, so it cannot be drawn into the defense.`;
    if (rule === 'ally-needs-imagination-swarm') return `${name} can be drawn into the defense only by Imagination Swarm.`;
    if (rule === 'mode-not-known') {
      if (/\bis not psionic\b/.test(detail)) return `${name} is not psionic and uses no defense mode: it may choose No defense only.`;
      const mode = /does not know ([a-z-]+)/.exec(detail);
      return `${name} does not know ${mode ? label(mode[1]) : 'the defense chosen'}.`;
    }
    if (DEFENSE_RULES.includes(rule) || CHOOSER_RULES.includes(rule)) return chosenRefusalText(rule, detail, name, said);
    return `${name} cannot be drawn into the defense: ${said}.`;
  };

  // Why the defense a mind chose was refused (DEFENSE_RULES, CHOOSER_RULES), naming it
  // (`name`, ready for the chat) and what will do instead; a detail not worded as the
  // companion words it is passed on in the game's words (`said`).
  const chosenRefusalText = (rule, detail, name, said) => {
    const known = /does not know (.+)$/.exec(detail);
    const unaware = /\bis ([a-z ,-]+): it /.exec(detail);
    const psp = /needs (\d+) PSPs for ([a-z-]+) but holds (\d+)/.exec(detail);
    const dice = /has (\d+) (?:die|dice) to roll/.exec(detail);
    if ((rule === 'defense-not-known' || rule === 'defense-mode-not-known') && known) return `${name} does not know ${chatSafe(label(known[1]))}.`;
    if (rule === 'nonpsionic-cannot-defend') return `${name} has no psionic mind and raises no defense mode: it may choose No defense only.`;
    if (rule === 'defender-cannot-act') return `${name} cannot act, so it cannot raise a defense now: it may choose No defense only.`;
    if (rule === 'not-enough-psp-for-defense' && psp) {
      return `${name} needs ${psp[1]} PSPs for ${label(psp[2])} but holds ${psp[3]}: a defense it can pay for, or No defense, will do.`;
    }
    // (Its other wording, pool dice or spells with No defense, is not sent from here: No
    // defense drops them.)
    if (rule === 'defender-unaware' && unaware && /may defend only/.test(detail)) {
      return `${name} is ${unaware[1]}: it may defend only with a mode that works while unaware (Cognitive Labyrinth); with No defense it rolls nothing.`;
    }
    if (rule === 'pool-dice-exceed-pool' && dice) {
      return `${name} has only ${dice[1] === '1' ? '1 die' : `${dice[1]} dice`} to roll: choose ${dice[1]} or fewer (or leave the dice out: the whole pool).`;
    }
    // "sacrifices 3 level-3 spells but has only 2 memorised" for each level short, and
    // what is memorised: the count may be short where the level is memorised.
    const spells = /: \S.*? ((?:sacrifices (?:a level-\d spell|\d+ level-\d spells) but has (?:none|only \d+) memorised(?:, and )?)+) \(memorised: \[([\d, ]*)\]\)$/.exec(detail);
    if (rule === 'spell-not-memorised' && spells) {
      const held = spells[2].trim() ? `memorised: level ${spells[2]}` : 'no spell memorised';
      return `${name} ${spells[1]} (${held}): sacrifice spells it holds, or none.`;
    }
    return `The companion refused the defense of ${name}: ${said}.`;
  };

  // The companion refused the defense chosen (refusesTheDefense): nothing was written, and
  // instead of being lost the attack waits again, under a new id, for a defense chosen
  // anew; allies named before are dropped, and in a psionic wave every mind chooses again
  // (its choices went to the companion together, and the refusal may concern any of them).
  // The creatures that joined by their own choice stay joined (their choice was their own,
  // not the one refused), but for one the refusal is about: that one is left out, or it
  // would be refused again. Why goes to the GM and to the side whose choice it was (the
  // chooser's, in a wave the controllers of the mind it is about, the first mind for
  // allies; a joiner's controllers); the others learn only that a defense could not be
  // used, the attacker only that it is chosen again.
  const chooseAgain = (job, error) => {
    // A fighter deleted while the companion judged the defense: the attack is chosen again
    // without it, or called off (withoutGone).
    const settled = withoutGone(job.exchange);
    if (settled.off) return callOff(job.exchange, settled.off, { requester: job.requester, asked: true, also: job.chooser });
    if (settled.gone.length) reportLeftOut(job.exchange, settled);
    const exchange = Object.assign({}, settled.exchange);
    delete exchange.allies;
    const wave = Array.isArray(exchange.members);
    if (wave) exchange.choices = {};
    const rule = String(error.data.rule || '');
    const detail = String(error.data.detail || '');
    const about = refusedFighter(job, error);
    const joiner = about && joinedRefs(exchange).includes(about) ? about : null;
    if (joiner) exchange.joined = joinedOf(exchange).filter((j) => j.ref !== joiner);
    const xid = waitForDefense(exchange);
    const why = defenseRefusalText(rule, detail, about, xid, Boolean(joiner), chatSafe(plainWords(detail, refusalContext(job))));
    const choosers = wave ? exchange.members : [exchange.struck || exchange.defender];
    // Whose choice it was: the creature that joined, the mind the refusal names, the one
    // that drew the allies in, or the one defender of a revised-2e or combat-strength attack.
    const owner = joiner || (choosers.includes(about) ? about
      : (rule.startsWith('ally-') || DEFENSE_RULES.includes(rule) ? choosers[0] : null));
    const again = wave ? 'every mind it strikes chooses its defense again' : `${chatSafe(fighterName(choosers[0]))} chooses the defense again`;
    const waits = `Nothing was written to any sheet, and the attack of ${chatSafe(fighterName(exchange.attacker))} still waits: ${again}.`;
    const kept = joinedRefs(exchange);
    const leave = `<code>!psi join --req ${xid} --leave</code> with its token selected`;
    // A refusal the script cannot pin on a creature (an older companion's, naming one of
    // several Goblins) may be about one still joined: it would come again, so say how to
    // leave it out.
    const unsure = !about && kept.length
      ? `<br>Should the refusal be about ${namesOf(kept)}, which joined by its own choice, leave it out (its controller or the GM): ${leave}.` : '';
    whisperGM(box('defense refused', `${why}<br>${waits}${unsure}<br>The companion said: ${refusalReason(job, error)}${refusalNote(error)}`));
    const players = (refs) => refs.flatMap((ref) => answerersOf(ref, exchange.by));
    // A refusal not pinned on a creature may be about one still joined: why goes only to
    // those who may know of each (mayKnowJoiner; not the attacking player for its own mind
    // struck first by its wave); the others learn that a defense could not be used.
    const toldWhy = new Set(players(owner ? [owner] : []).concat(!wave && job.chooser && !playerIsGM(job.chooser) ? [job.chooser] : [])
      .filter((pid) => about || kept.every((ref) => mayKnowJoiner(exchange, pid, ref))));
    toldWhy.forEach((pid) => tell(pid, 'defense refused', `${why}<br>${waits}`));
    const others = new Set(players(choosers).filter((pid) => !toldWhy.has(pid)));
    others.forEach((pid) => tell(pid, 'defense refused', `A defense chosen against this attack could not be used (the GM has been told why). ${waits}`));
    // Each is told of those still joined it may know of (mayKnowJoiner: the attacking
    // player, of its own creatures only).
    const keptPlayers = new Set(players(kept).filter((pid) => !toldWhy.has(pid) && !others.has(pid)));
    keptPlayers.forEach((pid) => tell(pid, 'defense refused', `A defense chosen against this attack could not be used (the GM has been told why). ${waits} `
      + `Still joined: ${namesOf(kept.filter((ref) => mayKnowJoiner(exchange, pid, ref)))} (to leave the defense: ${leave}).`));
    const requester = job.requester && !playerIsGM(job.requester) ? job.requester : null;
    if (requester && !toldWhy.has(requester) && !others.has(requester) && !keptPlayers.has(requester)) {
      tell(requester, 'defense refused', `The defense chosen against your attack could not be used, so ${wave ? 'every mind it strikes' : chatSafe(fighterName(choosers[0]))} `
        + 'chooses again. Nothing was written to any sheet.');
    }
    return wave ? askWave(xid, exchange) : askSingle(xid, exchange);
  };

  // What a refused round's end means: nothing changed, the choices sent (power-pool's,
  // in words), and what to do about the companion's reason.
  const roundRefusal = (job, error) => {
    const data = isObject(error.data) ? error.data : {};
    const atChoices = Array.isArray(data.errors) && data.errors.some((e) => isObject(e) && /^\/choices\//.test(String(e.path)));
    const why = ownMember({
      'not-controlling': ' A sheet changed since the choice was made (that control may have ended, or passed to another mind): '
        + 'run <code>!psi round</code> again to be asked what each controller holds now.',
      'no-die-to-dedicate': ' Keeping control by a die needs a die in the controller\'s pool for each creature held (a psionic wave: one each): keep it by an action, or release it.',
      'controller-cannot-act': ' A controller that cannot act (asleep, unconscious, stunned, at 0 HP or fewer) keeps its control as it is: run <code>!psi round</code> again without <code>--keep</code> for it.',
    }, data.rule) || (atChoices ? ' Each control takes one choice (a psionic wave\'s creatures share one): name it once.' : '');
    const said = job.said ? ` The choices sent: ${chatSafe(job.said)}.` : '';
    return `<br>Nothing was changed: the round has not ended.${said}${why}`;
  };

  // The puppets a round's end or a rest was refused for, when every error of the refusal
  // is about a puppet's sheet (/puppets/N, or a field below it): their refs, by where the
  // request sent them (job.paths). None for any other refusal, which is reported.
  const refusedPuppets = (job, error) => {
    const errors = isObject(error.data) && Array.isArray(error.data.errors) ? error.data.errors : [];
    if (!['round', 'rest'].includes(job.kind) || error.code !== INVALID_PARAMS || !errors.length || !isObject(job.paths)) return [];
    const refs = errors.map((e) => {
      const at = isObject(e) ? /^(\/puppets\/\d+)(\/|$)/.exec(String(e.path)) : null;
      return at ? job.paths[at[1]] : undefined;
    });
    return refs.every(Boolean) ? Array.from(new Set(refs)) : [];
  };

  // One bad puppet sheet (a hand-edited attribute) would otherwise stop a round's end or a
  // rest altogether: the companion refused the whole request and changed nothing, so it
  // is sent again as it was (the fighters' sheets read again), without `refused` and the
  // puppets refused before it, and the GM is told to put those sheets right. Each time one
  // more is left out, so it ends. A late answer is not sent again: the GM may have
  // repeated the command meanwhile, and the round would end (or the rest count) twice.
  const sendWithoutPuppets = (job, refused, error) => {
    const title = titleOf(job);
    const several = refused.length > 1;
    const sheets = `the sheet${several ? 's' : ''} of ${refused.map(fighterName).map(chatSafe).join(', ')}`;
    const said = `The companion refused ${sheets} (under psionic control, sent along as puppets): ${refusalReason(job, error)}${refusalNote(error)}<br>`;
    if (job.late) {
      const [undone, command] = job.kind === 'round' ? ['the round has not ended', 'round'] : ['the rest has not been taken', 'rest'];
      return whisperGM(box(title, `${said}Nothing was changed. This answer came late, so the request is not sent again (the command may have been repeated meanwhile): `
        + `if ${undone}, run <code>!psi ${command}</code> again (a puppet sheet refused again is then left out).`));
    }
    const { fighters, left } = fightersOutside(job.sent, 'joined the encounter since, which keeps its own copy');
    if (left.length) whisperGM(box(title, `Left out: ${left.join(', ')}.`));
    if (!fighters.length) return whisperGM(box(title, `${said}Nothing was changed, and none of its fighters is left outside the current encounter: nothing was sent again.`));
    whisperGM(box(title, `${said}Nothing was changed: the request is sent again without ${several ? 'them' : 'it'}. `
      + `The control over ${several ? 'them' : 'it'} may end while ${sheets} still show${several ? '' : 's'} it: put ${several ? 'those sheets' : 'that sheet'} right.`));
    const again = { options: isObject(job.options) ? job.options : {}, refused: (job.refused || []).concat(refused) };
    if (job.kind === 'rest') return postRest(job.requester, fighters, job.system, job.hours, again);
    const choices = Object.fromEntries(Object.entries(job.choices || {}).filter(([ref]) => fighters.includes(ref)));
    return postEndRound(job.requester, fighters, job.system, choices, again);
  };

  // The GM's word that a late answer (after its timeout, or a restart) was applied, with
  // `also` (skippedNote) after it.
  const tellLateApplied = (job, also = '') => {
    whisperGM(box('late answer', `A late answer for request <b>${job.id}</b> (${chatSafe(job.description || job.kind)}) was applied.${also}`));
  };

  // A changing call that named a revision and was refused as stale (4009) changed nothing
  // by that answer, but it need not be the request's last: two bridges relaying one
  // request (two GMs, two browsers of one GM account) each ask the companion, which
  // carries out the first run and refuses the second as stale, and that short refusal
  // may come before the first run's long answer. So the refusal is reported and resynced
  // as any 4009 is, but does not settle the request: it stays pending as a late one
  // (`stale`; a refresh's run ends there, as at a timeout), and a success still to come
  // is applied once, as a late answer is (handleResult). Its timer runs on, restarted by
  // each part that comes: while parts of that answer arrive a refresh keeps the
  // encounter's copies (stepUnderWay), as it would write the sheets after they were read.
  // After the timer the request is only kept for its hour, silently (expire), then
  // forgotten (prunePending), as a timed-out one is.
  const keptAfterStale = (job, answer) => {
    const late = job.late;
    job.stale = true;
    job.late = true;
    if (late) tellLateApplied(job);
    return job.kind === 'encounter.refresh' ? handleRefresh(job, answer) : reportError(job, answer.error);
  };

  // The players who are no GM whose typed answer the GM was told of in the last minute
  // (handleResult).
  const answerAttempts = new Set();

  const refuseAnswer = (id, why) => {
    whisperGM(box('answer refused', `The answer to request <b>${echo(id)}</b> was refused and nothing changed: ${chatSafe(why)}.`));
  };

  // Accepts one `!psi-result` line: only from a GM, only for a request this script made
  // and has not applied yet (also one that timed out, or was made before a restart: a
  // late answer), and only when the whole answer is well-formed; otherwise nothing changes.
  const handleResult = (msg) => {
    const words = String(msg.content).trim().split(/\s+/);
    const id = words[1] || '';
    if (!playerIsGM(msg.playerid)) {
      // Told once a minute per player, and not kept in the archive: a player typing
      // these by the hundred would otherwise fill the GM's chat for good.
      if (!answerAttempts.has(msg.playerid)) {
        answerAttempts.add(msg.playerid);
        setTimeout(guarded('when a refused answer was forgotten', () => answerAttempts.delete(msg.playerid)), 60000);
        whisperGM(box('answer refused', `${chatSafe(playerName(msg.playerid) || msg.playerid)} is not a GM and tried to answer request ${echo(id)}; ignored.`), TRANSIENT);
      }
      return;
    }
    // Any part from a GM, well-formed or not, shows that the relay works.
    dropHint(id);
    if (!REQUEST_ID.test(id)) return refuseAnswer(id, 'the request id is malformed');
    const done = answeredEntry(id);
    if (done) return refuseAnswer(id, done.how === 'expired' ? 'it came after the request had timed out' : 'that request was already answered');
    const job = ownMember(store().pending, id);
    if (!job) return refuseAnswer(id, 'no request with that id is waiting');
    if (!(Date.now() - job.at < PENDING_LIFETIME_MS)) {
      forgetRequest(id);
      return refuseAnswer(id, 'the request is more than an hour old');
    }
    let code;
    // Whose parts these are: the GM's, or of one source tag of the GM's (a browser).
    let source = msg.playerid;
    if (words.length === 3) {
      code = words[2];
    } else if (words.length === 4 && /^\d+\/\d+(?:\/|$)/.test(words[2])) {
      const [partText, countText, tag, ...more] = words[2].split('/');
      const [part, count] = [partText, countText].map(Number);
      if (count < 1 || count > MAX_PARTS || part < 1 || part > count) return refuseAnswer(id, 'the part number is out of range');
      if (tag !== undefined && (more.length || !SOURCE_TAG.test(tag))) {
        return refuseAnswer(id, `the source tag "${clipped([tag, ...more].join('/'))}" after the part number is malformed (1 to 16 letters, digits, - or _)`);
      }
      // Each bridge sends its own answer (two GMs, or two browsers of one GM, relaying one
      // request each ask the companion, with their own dice): the parts are put together
      // per sender and source tag, never mixed, and the first whole answer is the one
      // applied. Untagged parts (an older bridge) are put together per sender.
      if (!isObject(job.partsBy)) job.partsBy = {};
      if (tag !== undefined) source = `${msg.playerid} ${tag}`;
      if (!ownMember(job.partsBy, source) && tag !== undefined
        && Object.keys(job.partsBy).filter((key) => key.startsWith(`${msg.playerid} `)).length >= SOURCES_PER_GM) {
        return refuseAnswer(id, `this GM's parts of it already come from ${SOURCES_PER_GM} sources (browsers), so those of source tag "${tag}" are not kept`);
      }
      const mine = ownMember(job.partsBy, source) || (job.partsBy[source] = { count, parts: [] });
      if (mine.count !== count) return refuseAnswer(id, 'the parts disagree on their count');
      mine.parts[part - 1] = words[3];
      if (timers.has(id)) waitForAnswer(id);
      // (a part not yet come is a hole, or null once the state was saved and read again)
      for (let i = 0; i < count; i += 1) if (mine.parts[i] == null) return undefined;
      code = mine.parts.join('');
    } else {
      return refuseAnswer(id, 'expected "!psi-result ID PAYLOAD" or "!psi-result ID PART/PARTS/TAG CHUNK"');
    }
    const resetParts = () => { if (isObject(job.partsBy)) delete job.partsBy[source]; };
    // A one-piece answer has no parts kept: those under its GM's name are another's.
    const dropParts = () => { if (words.length === 4) resetParts(); };
    let answer;
    try {
      answer = JSON.parse(decodeBase64Url(code));
    } catch (err) {
      resetParts();
      return refuseAnswer(id, 'the payload is not base64url-encoded JSON');
    }
    const outcome = checkAnswer(job, answer);
    if (outcome.problem) { resetParts(); return refuseAnswer(id, outcome.problem); }
    // After a stale refusal only the success of another bridge's run is still taken, or
    // that bridge's word that it cannot tell whether the companion ran it: then, as when
    // it comes alone, the run may have been stored without its write-back (holdUncertain).
    const uncertain = isObject(answer.error) && answer.error.code === BRIDGE_UNCERTAIN;
    if (job.stale && answer.error && !uncertain) {
      dropParts();
      return refuseAnswer(id, 'that request was already answered (the encounter had moved on); only another bridge\'s success, or its word that it cannot tell whether the companion ran it, is still taken');
    }
    if (!job.batch && isObject(answer.error) && answer.error.code === STALE_REVISION && Number.isInteger(job.sentRevision)) {
      dropParts();
      return keptAfterStale(job, answer);
    }
    // From here on the answer is accepted: it can no longer be replayed.
    forgetRequest(id);
    rememberAnswered(id, 'answered');
    // The check of an attack writes nothing and says itself what a late answer does.
    if (job.kind === CHECK_KIND) return checkAnswered(job, answer);
    // Told before anything the answer makes the handlers say, with the sheet writes it
    // left out (skippedNote) when there are any.
    const tellApplied = (note) => {
      const what = `Request <b>${id}</b> (${chatSafe(job.description || job.kind)})`;
      // An uncertain answer after a stale refusal is neither late nor a run carried out:
      // reportError says what it says of a lone one.
      if (job.stale && !uncertain) {
        whisperGM(box('late answer', `${what} was relayed twice: the companion carried it out once, and this answer, of the run carried out, `
          + `was applied (the stale refusal before it was the other run's).${note}`));
      } else if (job.late && !job.stale && job.kind !== 'house') {
        // A late answer about the house rules says itself what it does (it changes nothing).
        tellLateApplied(job, note);
      } else if (note) whisperGM(box('answer', `${what} was applied.${note}`));
    };
    if (job.batch || job.kind === 'encounter.refresh' || answer.error) tellApplied('');
    if (job.batch) return handleBatch(job, answer);
    if (job.kind === 'encounter.refresh') return handleRefresh(job, answer);
    if (answer.error) return reportError(job, answer.error);
    const { written, failed, skipped, places, applied } = applyUpdates(outcome.updates, isObject(job.newerWrote) ? job.newerWrote : {});
    tellApplied(skippedNote(skipped));
    if (written.length) log(`${scriptName}: ${id} wrote ${written.join('; ')}`);
    // Before the handler, so that a hold is kept even should the card fail.
    const stepOf = isStep(job) ? jobEncounter(job) : null;
    // A step the companion took at the revision a lost one named: that one was not stored.
    const settled = stepOf && Number.isInteger(job.sentRevision) && isObject(stepOf.uncertain) && stepOf.uncertain.revision === job.sentRevision
      ? settleUncertain(stepOf, { revision: job.sentRevision }) : '';
    if (settled) whisperGM(box('encounter', settled));
    let behind = new Set(failed.map((f) => f.ref));
    try {
      if (stepOf) {
        behind = settleWrites(stepOf, applied, new Map(failed.map((f) => [f.at, f.attributes])), olderWriters(job).map((older) => older.id));
        markWaiting(stepOf, places);
      }
    } catch (err) {
      // Only the writes to try again are lost: the holds below are still made.
      log(`${scriptName}: keeping the missed writes of ${id} failed: ${err && err.stack ? err.stack : err}`);
    }
    // After the writes left waiting are marked (markWaiting).
    rememberWrites(job, places);
    if (isStep(job) && isObject(answer.result) && isObject(answer.result.updates_failed)) reportUnmadeWriteBack(job, answer.result);
    if (failed.length) reportMissedWrites(job, failed, written.length > 0, behind);
    sheetWarnings(job, answer.result);
    return HANDLERS[job.kind](job, answer.result);
  };

  // The sheet warnings already whispered since the sandbox started (sheetWarnings).
  const warned = new Set();

  // What the companion's adapter warned about the sheets it read (a field it had to
  // assume), whispered to the GM with the fighter's name, each line once per sandbox
  // session: a sheet read at every round's end would otherwise repeat it every round.
  // A warning names where the fighter was sent: /attacker, /defender (an exchange's
  // involved, in that order) or /combatants/N (a round's end or a rest, in order; the
  // question before a round's end sends only some of them: `sent`).
  const sheetWarnings = (job, result) => {
    if (!isObject(result) || !Array.isArray(result.warnings)) return;
    const involved = job.sent || job.involved || [];
    // power-pool's controller and puppets, where the exchange sent them (job.paths).
    const at = Object.assign({ '/attacker': involved[0], '/defender': involved[1] }, isObject(job.paths) ? job.paths : {});
    const lines = result.warnings.map(String).map((text) => {
      const placed = /^(\/[^:\s]*): (.*)$/.exec(text);
      if (!placed) return text;
      const numbered = /^\/combatants\/(\d+)$/.exec(placed[1]);
      const ref = numbered ? involved[Number(numbered[1])] : at[placed[1]];
      return ref ? `${fighterName(ref)}: ${placed[2]}` : text;
    }).filter((line) => !warned.has(line));
    if (!lines.length) return;
    // Lines with changing numbers ("…PSPs, 30") are new each time: keep the memory small.
    if (warned.size > 500) warned.clear();
    lines.forEach((line) => warned.add(line));
    whisperGM(box('sheet warnings', `The companion had to assume this reading the sheets:<br>${lines.map(chatSafe).join('<br>')}`));
  };

  // What the result of each kind of request must hold before any of it is applied, as the
  // companion's result schemas have it (companion/methods): [member, test, in words].
  // Without it a card would show only its title, or an encounter be stored with an id of
  // nothing; the answer is refused as malformed instead, and the request keeps waiting.
  const isText = (value) => typeof value === 'string';
  // An id: text, or a whole number.
  const isId = (value) => (typeof value === 'string' && value !== '') || Number.isInteger(value);
  const RESULT_NEEDS = {
    exchange: [['outcome', isText, 'its outcome'], ['summary', isText, 'its summary']],
    odds: [['outcomes', isObject, 'the chances (outcomes)']],
    [CHECK_KIND]: [['outcomes', isObject, 'the chances (outcomes)']],
    round: [['summary', isText, 'its summary']],
    rest: [['summary', isText, 'its summary']],
    'round-choices': [['combatants', Array.isArray, 'the combatants asked about']],
    'encounter.create': [['id', isId, 'the encounter id (text or a whole number)'], ['revision', Number.isInteger, 'the revision']],
    'encounter.refresh': [['changed', Array.isArray, 'the list of changed fields']],
    house: [['house_rules', Array.isArray, 'the house rules']],
  };

  const checkAnswer = (job, answer) => {
    if (job.batch) {
      if (!Array.isArray(answer) || answer.length !== job.batch.length) return problem('a batch answer must hold one response per request');
      for (const [rid] of job.batch) {
        const response = answer.find((r) => isObject(r) && r.id === rid);
        const why = responseProblem(response, rid);
        if (why) return problem(why);
        if (response.result !== undefined && (!isObject(response.result) || !isId(response.result.combatant_id))) {
          return problem(`the result for ${rid} lacks combatant_id`);
        }
      }
      return { updates: [] };
    }
    const why = responseProblem(answer, job.id);
    if (why) return problem(why);
    if (answer.error) return { updates: [] };
    const result = answer.result;
    // Only an encounter's step may be a list of exchange results (API.md).
    if (!isObject(result) && !(job.kind === 'encounter.resolve' && Array.isArray(result))) return problem('the result is not an object');
    const lacking = (ownMember(RESULT_NEEDS, job.kind) || []).find(([member, fits]) => !fits(result[member]));
    if (lacking) return problem(`the result lacks ${lacking[2]}`);
    if (result.updates_failed !== undefined && !isObject(result.updates_failed)) return problem('updates_failed is not an object');
    const collected = collectUpdates(result);
    if (collected.problem) return collected;
    const wrong = updatesProblem(collected.updates, job.involved || []);
    if (wrong) return problem(wrong);
    return collected;
  };

  // ------------------------------------------------------------- dispatch

  const VERBS = {
    attack: commandAttack,
    defend: commandDefend,
    join: commandJoin,
    odds: commandOdds,
    round: commandRound,
    rest: commandRest,
    config: commandConfig,
    house: commandHouse,
    encounter: commandEncounter,
    help: commandHelp,
    pair: commandPair,
    pending: commandPending,
  };

  // How a command takes each of its options: ONE a value, once; MANY a value each time it
  // is given (repeatable); FLAG no value, once. Everything else is refused before the
  // command runs (optionProblem), so that nothing typed is dropped unsaid: an option the
  // command does not take (a typo such as --mul would make the attack at its default),
  // one of ONE or FLAG given twice (only the last would count), a value after a flag
  // (--force no would force), an option without its value, and words that are no option
  // (!psi pair new would whisper the old code).
  const ONE = 'one';
  const MANY = 'many';
  const FLAG = 'flag';
  const ATTACK_OPTIONS = {
    target: MANY, mode: ONE, mult: ONE, range: ONE, dice: ONE, 'keep-by': ONE, decline: MANY, defense: ONE, 'defense-dice': ONE, sacrifice: ONE, ally: MANY,
  };
  const COMMAND_OPTIONS = {
    attack: ATTACK_OPTIONS,
    odds: ATTACK_OPTIONS,
    defend: { req: ONE, for: ONE, mode: ONE, dice: ONE, sacrifice: ONE, ally: MANY },
    join: { req: ONE, leave: FLAG },
    // power-pool's --release, --keep (each with the --by right after it) and
    // --cannot-perceive name one control each, in one command (controlChoices).
    round: {
      close: MANY, answer: ONE, 'pay-none': FLAG, release: MANY, keep: MANY, by: MANY, 'cannot-perceive': MANY, 'keep-all': FLAG,
    },
    rest: { hours: ONE },
    config: {
      system: ONE, adapter: ONE, attr: MANY, rollmode: ONE, timeout: ONE, chunk: ONE, hpbar: ONE, pspbar: ONE, reset: FLAG, char: ONE,
    },
    house: { system: ONE, set: MANY, default: MANY },
    pair: { new: FLAG },
    pending: {},
  };
  const ENCOUNTER_OPTIONS = {
    create: { system: ONE, name: ONE },
    add: { token: MANY },
    // A declaration is one choice: one attack (power-pool: a wave names several --target;
    // revised-2e: a second attack of the round with --attack2), one defense, one public action.
    declare: {
      attack: ONE, target: MANY, mult: ONE, range: ONE, dice: ONE, 'keep-by': ONE, decline: MANY, defense: ONE, 'defense-dice': ONE, sacrifice: ONE, ally: MANY,
      attack2: ONE, target2: ONE, mult2: ONE, range2: ONE,
      stance: ONE, close: FLAG, pass: FLAG, rest: FLAG, release: ONE, keep: ONE, by: ONE, 'cannot-perceive': ONE,
    },
    refresh: {},
    resolve: { force: FLAG, 'no-refresh': FLAG },
    get: {},
    status: {},
    undo: {},
    end: {},
  };
  // What a refusal of a command's options says was not done (else "Nothing was done.").
  const NOTHING_DONE = {
    round: 'Nothing was sent.', rest: 'Nothing was sent.', house: 'Nothing was changed.', config: 'Nothing was changed.',
  };

  // Why the command's words and options are not as it takes them (ONE, MANY, FLAG), or null.
  const optionProblem = (args) => {
    const action = (args.words[0] || '').toLowerCase();
    const encounter = args.verb === 'encounter';
    const known = encounter ? ownMember(ENCOUNTER_OPTIONS, action) : ownMember(COMMAND_OPTIONS, args.verb);
    if (!known) return null;
    const verb = encounter ? `encounter ${action}` : args.verb;
    const nothing = ownMember(NOTHING_DONE, args.verb) || 'Nothing was done.';
    const names = Object.keys(known);
    const takes = `${verb} takes ${names.length ? `--${names.join(', --')}` : 'no options'}`;
    const stray = encounter ? args.words.slice(1) : args.words;
    if (stray.length) return `"${echo(stray.join(' '))}" is no option (an option begins with --); ${takes}. ${nothing}`;
    const seen = new Map();
    for (const [key, value] of args.options) {
      const how = ownMember(known, key);
      if (!how) return `unknown option --${echo(key)}; ${takes}. ${nothing}`;
      if (how === FLAG && value !== '') return `--${key} takes no value (got "${echo(value)}"): give --${key} alone, or leave it out. ${nothing}`;
      if (how !== FLAG && value === '') return `--${key} needs a value. ${nothing}`;
      if (how !== MANY && seen.has(key)) {
        const both = how === FLAG ? '' : ` ("${echo(seen.get(key))}", then "${echo(value)}")`;
        return `--${key} is given twice${both}: ${verb} takes it once. ${nothing}`;
      }
      seen.set(key, value);
    }
    return null;
  };

  // Roll20 hands a command its inline rolls as $[[0]], $[[1]], … and their results in
  // msg.inlinerolls: `--mult [[1d4]]` means the total rolled (as TokenMod does it).
  const expandInlineRolls = (content, rolls) => {
    if (!Array.isArray(rolls) || !rolls.length) return content;
    return content.replace(/\$\[\[(\d+)\]\]/g, (whole, n) => {
      const roll = rolls[Number(n)];
      return roll && isObject(roll.results) && roll.results.total !== undefined ? String(roll.results.total) : whole;
    });
  };

  const handleInput = (msg) => {
    if (msg.type !== 'api') return;
    const content = String(msg.content || '');
    if (/^!psi-result(\s|$)/i.test(content)) {
      // An answer is applied inside a guard too: a document deleted meanwhile must not
      // take the sandbox down (the GM is told instead).
      try {
        handleResult(msg);
      } catch (err) {
        log(`${scriptName}: ${err && err.stack ? err.stack : err}`);
        whisperGM(box('answer', 'An internal error happened while applying an answer; the API console has the details.'));
      }
      return;
    }
    if (!/^!psi(\s|$)/i.test(content)) return;
    const args = parseCommand(expandInlineRolls(content, msg.inlinerolls));
    try {
      if (args.has('help') || args.verb === '' || args.verb === 'help') {
        commandHelp(msg);
        return;
      }
      const handler = ownMember(VERBS, args.verb);
      if (!handler) {
        refuse(msg.playerid, `unknown command "${echo(args.verb)}"; try !psi --help.`);
        return;
      }
      const wrong = optionProblem(args);
      if (wrong) {
        refuse(msg.playerid, wrong);
        return;
      }
      handler(msg, args);
    } catch (err) {
      log(`${scriptName}: ${err && err.stack ? err.stack : err}`);
      refuse(msg.playerid, 'an internal error happened; the API console has the details.');
    }
  };

  /**
   * Subscribes to chat and to deletions; called once from on("ready"). Every handler is
   * guarded: an error thrown out of one would stop the whole Mod sandbox.
   */
  const registerEventHandlers = () => {
    on('chat:message', guarded('reading a chat message', handleInput));
    on('destroy:character', guarded('after a character was deleted', fighterDeleted));
    on('destroy:graphic', guarded('after a token was deleted', fighterDeleted));
  };

  return {
    checkInstall: guarded('starting (checkInstall)', checkInstall),
    registerEventHandlers,
    version,
    SCHEMA_VERSION,
    // For tests and other scripts: pure helpers with no effect on the campaign.
    parseCommand,
    MAPPING_FIELDS: MAPPING_FIELDS.slice(),
    MAPPING_PATH,
    MAPPING_PATH_LENGTH,
    // How each command takes its options (ONE, MANY, FLAG), for the test that holds
    // docs/ROLL20.md to them.
    COMMAND_OPTIONS: JSON.parse(JSON.stringify(COMMAND_OPTIONS)),
    ENCOUNTER_OPTIONS: JSON.parse(JSON.stringify(ENCOUNTER_OPTIONS)),
    encodeBase64Url,
    decodeBase64Url,
    migrate,
    pendingIds: () => Object.keys(store().pending),
  };
})();

on('ready', () => {
  'use strict';

  Mindscape.checkInstall();
  Mindscape.registerEventHandlers();
});
