// ==UserScript==
// @name         Mindscape Bridge for Roll20
// @namespace    mindscape
// @version      0.1.0
// @description  Relays the Mindscape Mod script's requests from the Roll20 chat to the Mindscape companion on this computer and types its answers back.
// @match        https://app.roll20.net/editor/*
// @grant        GM_xmlhttpRequest
// @grant        GM_getValue
// @grant        GM_setValue
// @connect      127.0.0.1
// @connect      localhost
// @run-at       document-idle
// ==/UserScript==

// Only the GM runs this. It watches the chat for the lines the Mod script whispers to
// the GM (MINDSCAPE-REQ <pairing code> <id> <part>/<parts> <base64url>), sends each
// complete request whose pairing code is the one pasted into its settings to the
// companion once, and types the companion's answer into the chat as
// `!psi-result <id> ...`, which the Mod script accepts because a GM sent it. The parts
// of a long answer carry this page's source tag (`<part>/<parts>/<tag>`), so that the
// Mod script never mixes them with those of another browser of the same GM account.
// It sends nothing else: no request of its own, no retry of old ids, and no retry of a
// call that changes an encounter (it answers those "uncertain" instead, see relay).
// With window.__mindscapeBridgeTest set before it loads, and no userscript manager
// running it, it exposes its parts as window.__mindscapeBridge for tests (docs/ROLL20.md).
(function mindscapeBridge(root) {
  'use strict';

  const VERSION = '0.1.0';
  // A marker is the whole text of a message, never a part of it: a name or a line typed
  // around it cannot make one. The pairing code is optional here only so that a marker
  // without one can be reported as unpaired rather than silently ignored.
  const MARKER = /^MINDSCAPE-REQ(?: ([A-Za-z0-9]{16,64}))? ([A-Za-z0-9]{6,32}) (\d{1,4})\/(\d{1,4}) ([A-Za-z0-9_-]+)$/;
  const INVISIBLE = /[\u00ad\u200b-\u200d\u2060\ufeff]/g;
  // The methods the Mod script asks for; anything else in a marker is not ours.
  // exchange.end_round and combatants.rest change nothing in the companion (the sheets
  // carry the state, and the Mod script applies one answer only), and
  // exchange.round_end_choices changes nothing at all, so like the other exchange.* calls
  // they may be retried, as may systems.house_rules (it only reads). encounter.refresh
  // stores a step: it is a changing call below.
  const ALLOWED_METHODS = new Set([
    'exchange.resolve', 'exchange.odds', 'exchange.end_round', 'exchange.round_end_choices',
    'combatants.rest', 'encounter.create', 'encounter.add', 'encounter.refresh', 'encounter.declare',
    'encounter.resolve', 'encounter.get', 'encounter.undo', 'systems.house_rules',
  ]);
  // Calls that change an encounter: one that may have run must never run again.
  const CHANGING_METHODS = new Set([
    'encounter.create', 'encounter.add', 'encounter.refresh', 'encounter.declare',
    'encounter.resolve', 'encounter.undo', 'encounter.delete',
  ]);
  // The error the Mod script gets when a changing call's fate is unknown (JSON-RPC's
  // server-error range; Mindscape.js BRIDGE_UNCERTAIN).
  const UNCERTAIN_CODE = -32001;
  // The error it gets when the call was certainly not carried out, or its answer cannot
  // reach it: the companion refused the HTTP request before running anything
  // (REFUSED_BEFORE_RUNNING), or the answer is too long to type back (Mindscape.js
  // BRIDGE_REFUSED, reported as a refusal). Only the outcome of a changing call whose
  // answer is lost stays uncertain.
  const REFUSED_CODE = -32002;
  // HTTP statuses with which the companion refuses a request before any JSON-RPC runs
  // (companion/security.py, app.py): a malformed request, a path it does not serve, a
  // body over its limit, a compressed body.
  const REFUSED_BEFORE_RUNNING = [400, 404, 413, 415];
  const DEFAULTS = { url: 'http://127.0.0.1:39393', token: '', pairing: '', sender: 'Mindscape', chunk: 1000 };
  const PAIR_HINT = 'pair the bridge: type !psi pair in the chat and paste the code into these settings';
  const HANDLED_MEMORY = 500;
  // The most parts of a request marker (findMarkers) and of an answer the Mod script
  // takes (Mindscape.js MAX_PARTS).
  const MAX_PARTS = 500;
  // The answer piece size (the `chunk` setting) is a whole number of characters in the
  // range of the Mod script's --chunk; anything else counts as DEFAULTS.chunk.
  const CHUNK_MIN = 100;
  const CHUNK_MAX = 10000;
  const RETRY_DELAY_MS = 1000;
  const TYPING_DELAY_MS = 150;
  // One tab per browser relays: the one holding the lease, renewed while it runs.
  const LEASE_MS = 5000;
  const LEASE_RENEW_MS = 1500;
  const LEASE_SETTLE_MS = 250;
  const STORAGE_PREFIX = 'mindscape.bridge.';

  // This page's source tag, in every part of a long answer (Mindscape.js SOURCE_TAG):
  // two browsers of one GM account that both relay a request each type their own answer,
  // and the Mod script puts the parts together per GM and tag, so the two never mix.
  // Random per page load: of the tabs of one browser only one relays (the lease), so
  // they need no tag apart. 6 random bytes, 8 base64url characters.
  const SOURCE = root.btoa(String.fromCharCode(...root.crypto.getRandomValues(new Uint8Array(6))))
    .replace(/\+/g, '-').replace(/\//g, '_');

  // ------------------------------------------------------------- storage

  /** The userscript manager's storage when granted, else the page's localStorage. */
  const defaultStorage = {
    get(key) {
      if (typeof GM_getValue === 'function') return GM_getValue(key, DEFAULTS[key]); // eslint-disable-line no-undef
      try {
        const raw = root.localStorage.getItem(STORAGE_PREFIX + key);
        return raw === null ? DEFAULTS[key] : JSON.parse(raw);
      } catch (err) {
        return DEFAULTS[key];
      }
    },
    set(key, value) {
      if (typeof GM_setValue === 'function') { GM_setValue(key, value); return; } // eslint-disable-line no-undef
      root.localStorage.setItem(STORAGE_PREFIX + key, JSON.stringify(value));
    },
  };

  // ----------------------------------------------------------- transport

  // How long one call to the companion may take before the bridge gives up on it.
  const TRANSPORT_TIMEOUT_MS = 15000;

  /**
   * POSTs a JSON text to the companion; resolves {status, text}, rejects on a network
   * failure or after `timeoutMs`. GM_xmlhttpRequest (no CORS) when the manager grants
   * it, else fetch (the companion must then allow this page's origin with
   * --allow-origin).
   */
  const defaultTransport = (url, token, bodyText, timeoutMs = TRANSPORT_TIMEOUT_MS) => {
    const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` };
    if (typeof GM_xmlhttpRequest === 'function') { // eslint-disable-line no-undef
      return new Promise((resolve, reject) => {
        GM_xmlhttpRequest({ // eslint-disable-line no-undef
          method: 'POST',
          url,
          headers,
          data: bodyText,
          timeout: timeoutMs,
          // The companion never redirects: whatever does is not it, and gets no second
          // request with the token (Tampermonkey 4.19+; others ignore the option). No
          // cookies either: the companion reads none.
          redirect: 'error',
          anonymous: true,
          onload: (res) => resolve({ status: res.status, text: res.responseText }),
          onerror: () => reject(new Error('network error')),
          ontimeout: () => reject(new Error('timed out')),
        });
      });
    }
    // Without GM_xmlhttpRequest, fetch gives up after the same time.
    const abort = typeof root.AbortController === 'function' ? new root.AbortController() : null;
    const timer = abort ? root.setTimeout(() => abort.abort(), timeoutMs) : null;
    return root.fetch(url, { method: 'POST', headers, body: bodyText, credentials: 'omit', redirect: 'error', ...(abort ? { signal: abort.signal } : {}) })
      .then((res) => res.text().then((text) => ({ status: res.status, text })))
      .catch((err) => { throw abort && abort.signal.aborted ? new Error('timed out') : err; })
      .finally(() => { if (timer !== null) root.clearTimeout(timer); });
  };

  // ---------------------------------------------------------- pure parts

  /** Unpadded base64url of the UTF-8 bytes of `text`. */
  const encodeBase64Url = (text) => {
    const bytes = new TextEncoder().encode(text);
    let binary = '';
    for (let i = 0; i < bytes.length; i += 1) binary += String.fromCharCode(bytes[i]);
    return root.btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  };

  /** Text from unpadded base64url; throws on anything else. */
  const decodeBase64Url = (code) => {
    if (!/^[A-Za-z0-9_-]*$/.test(code) || code.length % 4 === 1) throw new Error('not base64url');
    const binary = root.atob(code.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  };

  /**
   * The MINDSCAPE-REQ marker that is the whole of a message's text, as a list of none or
   * one: [{pairing, id, part, count, piece}] (pairing '' when the marker has none).
   * Invisible break opportunities (zero-width spaces, soft hyphens) a chat may add to
   * long words are dropped first.
   */
  const findMarkers = (text) => {
    const m = MARKER.exec(String(text).replace(INVISIBLE, '').replace(/\s+/g, ' ').trim());
    if (!m) return [];
    const marker = { pairing: m[1] || '', id: m[2], part: Number(m[3]), count: Number(m[4]), piece: m[5] };
    return marker.count >= 1 && marker.count <= MAX_PARTS && marker.part >= 1 && marker.part <= marker.count ? [marker] : [];
  };

  /** Whether a request (one call or a batch) holds a call that changes an encounter. */
  const isChanging = (body) => (Array.isArray(body) ? body : [body]).some((c) => c && CHANGING_METHODS.has(c.method));

  /** An error answer of the bridge's own for every call of `body` (one, or a batch). */
  const bridgeAnswer = (body, code, message, detail) => {
    const one = (call) => ({ jsonrpc: '2.0', id: call.id, error: { code, message, data: { detail } } });
    return JSON.stringify(Array.isArray(body) ? body.map(one) : one(body));
  };

  /** The answer that tells the Mod script a changing call may or may not have run. */
  const uncertainAnswer = (body, detail) => bridgeAnswer(body, UNCERTAIN_CODE, 'the bridge does not know whether the companion did this', detail);

  /** The answer that tells the Mod script a call was not carried out, or its answer cannot reach it. */
  const refusedAnswer = (body, detail) => bridgeAnswer(body, REFUSED_CODE, 'the bridge could not carry this out', detail);

  /** The `chunk` setting as a piece size: CHUNK_MIN to CHUNK_MAX characters, else the default. */
  const chunkSize = (value) => {
    const text = String(value === undefined || value === null ? '' : value).trim();
    const size = /^\d+$/.test(text) ? Number(text) : NaN;
    return size >= CHUNK_MIN && size <= CHUNK_MAX ? size : DEFAULTS.chunk;
  };

  /**
   * Checks a decoded request: one JSON-RPC call (or a batch) whose ids belong to the
   * marker's id and whose methods the Mod script uses. Returns a problem text or null.
   */
  const requestProblem = (body, id) => {
    const one = (call, expectedId) => {
      if (call === null || typeof call !== 'object' || Array.isArray(call)) return 'not a JSON-RPC call';
      if (call.jsonrpc !== '2.0') return 'jsonrpc is not "2.0"';
      if (call.id !== expectedId) return `id ${JSON.stringify(call.id)} does not match ${expectedId}`;
      if (!ALLOWED_METHODS.has(call.method)) return `method ${JSON.stringify(call.method)} is not one the Mod script uses`;
      return null;
    };
    if (Array.isArray(body)) {
      if (body.length < 1 || body.length > 100) return 'a batch holds 1 to 100 calls';
      for (let i = 0; i < body.length; i += 1) {
        const why = one(body[i], `${id}-${i}`);
        if (why) return why;
      }
      return null;
    }
    return one(body, id);
  };

  /**
   * The chat commands that carry `answerText` back for request `id`, in pieces of `size`
   * (chunkSize); each piece of a long answer names its number, their count and the
   * source tag `source` (this page's, SOURCE, unless given).
   */
  const answerCommands = (id, answerText, rawSize, source = SOURCE) => {
    const size = chunkSize(rawSize);
    const code = encodeBase64Url(answerText);
    if (code.length <= size) return [`!psi-result ${id} ${code}`];
    const pieces = [];
    for (let i = 0; i < code.length; i += size) pieces.push(code.slice(i, i + size));
    return pieces.map((piece, i) => `!psi-result ${id} ${i + 1}/${pieces.length}/${source} ${piece}`);
  };

  // Emotes and descriptions carry no speaker of their own (/em prints the name as
  // text, /desc none), so nothing in them, nor after them, is taken as the Mod script's.
  const NO_SENDER = ['emote', 'desc'];
  const hasNoSender = (node) => NO_SENDER.some((kind) => node.classList.contains(kind));

  // Roll20 prints the speaker once for a run of messages from the same sender, so the
  // speaker of a message is the nearest ".by" at or before it; a message without a
  // sender of its own ends the run.
  const senderOf = (message) => {
    for (let node = message; node; node = node.previousElementSibling) {
      if (!node.classList || !node.classList.contains('message')) continue;
      if (hasNoSender(node)) return '';
      const by = Array.from(node.children).find((child) => child.classList.contains('by'));
      if (by) return by.textContent.trim().replace(/^\((?:from|to)\s+/i, '').replace(/\)?\s*:?\s*$/, '').trim();
    }
    return '';
  };

  // A message's own text: without the speaker, time stamp and avatar Roll20 puts around it.
  const FRAME = ['by', 'tstamp', 'avatar', 'spacer', 'flyout'];
  const messageText = (message) => Array.from(message.childNodes)
    .filter((node) => !(node.nodeType === 1 && FRAME.some((c) => node.classList.contains(c))))
    .map((node) => node.textContent || '').join('');

  const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

  // --------------------------------------------------------------- bridge

  /** A bridge bound to one document; `start()` begins watching its chat. */
  const createBridge = ({
    doc = root.document, storage = defaultStorage, transport = defaultTransport,
    tab = Math.random().toString(36).slice(2, 12),
  } = {}) => {
    const partials = new Map();
    const seen = new WeakSet();
    const claimed = new Set();
    let handled = new Set(storage.get('handled') || []);
    let renewTimer = null;
    let typing = Promise.resolve();
    let status = { state: 'starting', detail: '' };
    let badge = null;
    let observer = null;
    const history = [];

    const setStatus = (state, detail = '') => {
      status = { state, detail };
      history.push(state);
      if (badge) {
        const colours = {
          connected: '#2e7d32', relaying: '#1565c0', starting: '#777', standby: '#777', offline: '#c62828', refused: '#c62828',
          'bad token': '#c62828', 'not paired': '#c62828', 'wrong pairing code': '#c62828', uncertain: '#c62828',
        };
        badge.textContent = `Mindscape: ${state}`;
        badge.title = detail || state;
        badge.style.background = colours[state] || '#ef6c00';
      }
    };

    // The ids handled here and in the other tabs that share this storage.
    const knownHandled = () => new Set([...(storage.get('handled') || []), ...handled]);

    const remember = (id) => {
      handled = knownHandled();
      handled.add(id);
      // Kept across reloads so that an old request still in the chat is never sent again.
      const list = Array.from(handled).slice(-HANDLED_MEMORY);
      handled = new Set(list);
      storage.set('handled', list);
    };

    const endpoint = () => `${String(storage.get('url') || DEFAULTS.url).replace(/\/+$/, '')}/rpc`;

    // The companion's words for an HTTP refusal (its body is {"error": text}), as ": text".
    const refusalText = (text) => {
      let said = String(text || '').trim();
      try {
        const parsed = JSON.parse(said);
        if (parsed && typeof parsed.error === 'string') said = parsed.error;
      } catch (err) {
        // Not JSON: the body as it came.
      }
      return said ? `: ${said.slice(0, 200)}` : '';
    };

    // One call to the companion. A call that changes nothing is retried once on a network
    // failure or a server fault. A changing call is sent once only: after a timeout, a
    // lost connection or a fault the companion may have done it, and a second try could
    // resolve or undo a step twice; such a failure comes back with `uncertain: true`.
    const call = async (bodyText, { changing = false } = {}) => {
      let lastError = '';
      const attempts = changing ? 1 : 2;
      for (let attempt = 0; attempt < attempts; attempt += 1) {
        if (attempt > 0) await sleep(RETRY_DELAY_MS);
        let res;
        try {
          res = await transport(endpoint(), storage.get('token') || '', bodyText);
        } catch (err) {
          lastError = `the companion at ${endpoint()} is not reachable (${err.message}); start it with "mindscape serve"`;
          continue;
        }
        if (res.status === 401) return { fail: 'bad token', detail: 'the companion refused the token; copy it again from the token file in its home folder' };
        if (res.status === 403) return { fail: 'refused', detail: 'the companion refused this page; start it with --allow-origin https://app.roll20.net' };
        if (res.status >= 500) { lastError = `the companion failed (HTTP ${res.status})`; continue; }
        if (REFUSED_BEFORE_RUNNING.includes(res.status)) {
          return { fail: 'refused', detail: `the companion refused the request before running it (HTTP ${res.status}${refusalText(res.text)})`, notRun: true };
        }
        if (res.status !== 200) return { fail: 'refused', detail: `the companion answered HTTP ${res.status}` };
        try {
          JSON.parse(res.text);
        } catch (err) {
          return { fail: 'refused', detail: 'the companion answered something that is not JSON', uncertain: changing };
        }
        return { text: res.text.trim() };
      }
      return { fail: 'offline', detail: lastError, uncertain: changing };
    };

    // Whether this tab is the one of this browser that relays. The lease sits in the
    // shared storage; a tab takes it when it is free or stale, then reads it back after a
    // pause, so that of two tabs taking it at once only the last writer goes on.
    const readLease = () => {
      const lease = storage.get('lease');
      return lease && typeof lease === 'object' ? lease : null;
    };
    const holdLease = async () => {
      const lease = readLease();
      const now = Date.now();
      if (lease && lease.tab !== tab && now - lease.at < LEASE_MS) return false;
      storage.set('lease', { tab, at: now });
      if (lease && lease.tab === tab) return true;
      await sleep(LEASE_SETTLE_MS);
      const after = readLease();
      return Boolean(after && after.tab === tab);
    };
    const renewLease = () => {
      const lease = readLease();
      if (lease && lease.tab === tab) storage.set('lease', { tab, at: Date.now() });
    };

    // Types one command into Roll20's chat box and presses Send, keeping whatever the
    // GM was writing. Commands go one after another, never interleaved. Resolves true
    // once it was sent, false when it could not be (no chat box, the send button
    // failing): the badge then says so, and whoever typed the answer stops there.
    const type = (command) => {
      typing = typing.then(async () => {
        const box = doc.querySelector('#textchat-input textarea');
        // The send button: #chatSendBtn where the page has that id; else the chat input's
        // button of class btn, which public Roll20 userscripts press (betteR20:
        // "#textchat-input button.btn"); else its first button. Roll20 documents none of
        // these, so the badge says so when no button is found.
        const button = doc.querySelector('#chatSendBtn') || doc.querySelector('#textchat-input button.btn')
          || doc.querySelector('#textchat-input button, #textchat-input .btn');
        if (!box || !button) throw new Error('Roll20 chat input not found');
        const draft = box.value;
        box.value = command;
        box.dispatchEvent(new Event('input', { bubbles: true }));
        button.click();
        await sleep(TYPING_DELAY_MS);
        if (!box.value) box.value = draft;
        return true;
      }).catch((err) => {
        setStatus('error', `could not type into the Roll20 chat: ${err.message}; the Mod script gets no answer and its timeout tells the GM`);
        return false;
      });
      return typing;
    };

    // Types every command of an answer, stopping at the first that fails (type); whether
    // all went.
    const typeAll = async (commands) => {
      for (const command of commands) if (!(await type(command))) return false;
      return true;
    };

    const relay = async (id, code) => {
      if (claimed.has(id) || knownHandled().has(id)) return;
      claimed.add(id);
      if (!(await holdLease())) {
        // Another tab of this browser relays; it sees the same chat.
        claimed.delete(id);
        setStatus('standby', 'another Roll20 tab of this browser relays the requests; this one stands by');
        return;
      }
      if (knownHandled().has(id)) return;
      remember(id);
      let body;
      try {
        body = JSON.parse(decodeBase64Url(code));
      } catch (err) {
        setStatus('refused', `request ${id} is not base64url JSON`);
        return;
      }
      const why = requestProblem(body, id);
      if (why) {
        setStatus('refused', `request ${id}: ${why}`);
        return;
      }
      setStatus('relaying', `request ${id}`);
      const changing = isChanging(body);
      const answer = await call(JSON.stringify(body), { changing });
      const size = storage.get('chunk');
      if (answer.fail && answer.uncertain) {
        // The Mod script hears of it at once and sends the GM to !psi encounter status.
        if (!(await typeAll(answerCommands(id, uncertainAnswer(body, answer.detail), size)))) return;
        setStatus('uncertain', `request ${id} may or may not have reached the companion: ${answer.detail}`);
        return;
      }
      if (answer.fail && answer.notRun) {
        // Certainly not carried out: the Mod script reports the refusal at once, rather
        // than its timeout saying the companion may have done it.
        if (!(await typeAll(answerCommands(id, refusedAnswer(body, answer.detail), size)))) return;
        setStatus('refused', `request ${id}: ${answer.detail}`);
        return;
      }
      if (answer.fail) {
        setStatus(answer.fail, answer.detail);
        return;
      }
      const commands = answerCommands(id, answer.text, size);
      if (commands.length > MAX_PARTS) {
        // The Mod script would refuse every part: it hears instead that the answer is lost
        // (for a changing call, that the companion did it or not).
        const detail = `the companion's answer would take ${commands.length} chat parts of ${chunkSize(size)} characters, `
          + `more than the ${MAX_PARTS} the Mod script takes`;
        if (!(await typeAll(answerCommands(id, changing ? uncertainAnswer(body, detail) : refusedAnswer(body, detail), size)))) return;
        setStatus(changing ? 'uncertain' : 'refused', `request ${id}: ${detail}`);
        return;
      }
      if (!(await typeAll(commands))) return;
      setStatus('connected', `answered ${id}`);
    };

    const handleMessage = (message) => {
      if (seen.has(message)) return;
      if (hasNoSender(message)) { seen.add(message); return; }
      const markers = findMarkers(messageText(message));
      // A message without a marker is read again when its text changes: Roll20 may put
      // a message into the chat before its text.
      if (!markers.length) return;
      seen.add(message);
      const expected = String(storage.get('sender') || DEFAULTS.sender).toLowerCase();
      if (senderOf(message).toLowerCase() !== expected) return;
      const pairing = String(storage.get('pairing') || '');
      for (const marker of markers) {
        // The pairing code is what makes a marker the Mod script's: a player can name
        // themselves "Mindscape", but only GMs ever see the code.
        if (!pairing) { setStatus('not paired', PAIR_HINT); continue; }
        if (!marker.pairing) { setStatus('not paired', `a request came without a pairing code (an older Mod script, or a forgery); ${PAIR_HINT}`); continue; }
        if (marker.pairing !== pairing) { setStatus('wrong pairing code', `a request came with another pairing code (renewed with !psi pair --new, or a forgery); ${PAIR_HINT}`); continue; }
        if (handled.has(marker.id)) continue;
        let partial = partials.get(marker.id);
        if (!partial || partial.count !== marker.count) {
          partial = { count: marker.count, pieces: [] };
          partials.set(marker.id, partial);
        }
        partial.pieces[marker.part - 1] = marker.piece;
        let complete = true;
        for (let i = 0; i < partial.count; i += 1) if (partial.pieces[i] === undefined) complete = false;
        if (complete) {
          partials.delete(marker.id);
          relay(marker.id, partial.pieces.join(''));
        }
      }
    };

    const messagesIn = (node) => {
      if (!node || node.nodeType !== 1) return node && node.parentElement ? messagesIn(node.parentElement.closest('.message')) : [];
      if (node.classList.contains('message')) return [node];
      const inside = Array.from(node.querySelectorAll('.message'));
      if (inside.length) return inside;
      const outer = node.closest('.message');
      return outer ? [outer] : [];
    };

    // What the badge says while no token is saved.
    const NO_TOKEN_HINT = 'click here and paste the companion\'s token';

    // Asks the companion who it is, to show whether URL and token work. Whatever comes
    // back, the badge says what it makes of it (an answer that is no companion.info is
    // no Mindscape companion), and nothing is thrown at the settings box's button.
    const check = async () => {
      const answer = await call(JSON.stringify({ jsonrpc: '2.0', id: 'bridge-check', method: 'companion.info' }));
      if (answer.fail) { setStatus(answer.fail, answer.detail); return false; }
      const parsed = JSON.parse(answer.text);
      const reply = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
      if (reply.error) {
        const said = typeof reply.error === 'object' && typeof reply.error.message === 'string' ? reply.error.message : 'an error';
        setStatus('refused', `the companion refused companion.info: ${said}`);
        return false;
      }
      const info = reply.result;
      if (info === null || typeof info !== 'object' || Array.isArray(info) || info.name !== 'mindscape' || typeof info.version !== 'string') {
        setStatus('refused', `${endpoint()} answered companion.info without its name and version: is it the Mindscape companion (mindscape serve)?`);
        return false;
      }
      if (!storage.get('pairing')) { setStatus('not paired', `the companion answers; now ${PAIR_HINT}`); return true; }
      setStatus('connected', `${info.name} ${info.version}`);
      return true;
    };

    const buildUi = () => {
      if (!doc.body || doc.getElementById('mindscape-bridge-badge')) return;
      badge = doc.createElement('div');
      badge.id = 'mindscape-bridge-badge';
      badge.style.cssText = 'position:fixed;left:8px;bottom:8px;z-index:100000;color:#fff;font:12px sans-serif;padding:3px 8px;border-radius:10px;cursor:pointer;';
      const panel = doc.createElement('div');
      panel.id = 'mindscape-bridge-settings';
      panel.style.cssText = 'display:none;position:fixed;left:8px;bottom:34px;z-index:100000;background:#fff;color:#222;border:1px solid #888;border-radius:4px;padding:8px;font:12px sans-serif;box-shadow:0 2px 8px rgba(0,0,0,.3);';
      const field = (id, text, kind) => {
        const wrap = doc.createElement('label');
        wrap.style.cssText = 'display:block;margin-bottom:4px;';
        wrap.textContent = text;
        const input = doc.createElement('input');
        input.id = id;
        input.type = kind;
        input.style.cssText = 'display:block;width:260px;';
        wrap.appendChild(input);
        panel.appendChild(wrap);
        return input;
      };
      const url = field('mindscape-bridge-url', 'Companion URL', 'text');
      const token = field('mindscape-bridge-token', 'Token (the file "token" in the companion\'s home folder)', 'password');
      const pairing = field('mindscape-bridge-pairing', 'Pairing code (type !psi pair in the chat)', 'password');
      const save = doc.createElement('button');
      save.id = 'mindscape-bridge-save';
      save.textContent = 'Save and test';
      panel.appendChild(save);
      // The box is part of Roll20's page, whose scripts (and any script injected into
      // it) can read every field: the saved token is never put back into it, and what
      // the GM typed there is cleared once saved or the box is closed. An empty token
      // field keeps the saved token.
      const tokenHint = () => { token.placeholder = storage.get('token') ? 'saved (leave empty to keep it)' : ''; };
      badge.addEventListener('click', () => {
        url.value = storage.get('url') || DEFAULTS.url;
        token.value = '';
        tokenHint();
        pairing.value = storage.get('pairing') || '';
        panel.style.display = panel.style.display === 'none' ? 'block' : 'none';
      });
      save.addEventListener('click', () => {
        storage.set('url', url.value.trim() || DEFAULTS.url);
        if (token.value.trim()) storage.set('token', token.value.trim());
        token.value = '';
        tokenHint();
        storage.set('pairing', pairing.value.trim());
        panel.style.display = 'none';
        // Nothing typed and none saved: there is no token to test (the companion would
        // only refuse the empty one, which the badge would tell as a wrong token).
        if (storage.get('token')) check();
        else setStatus('no token', NO_TOKEN_HINT);
      });
      doc.body.appendChild(panel);
      doc.body.appendChild(badge);
      setStatus(status.state, status.detail);
    };

    /** Watches `#textchat` from now on; messages already in the chat are history. */
    const start = () => {
      const chat = doc.querySelector('#textchat');
      if (!chat) throw new Error('#textchat not found');
      chat.querySelectorAll('.message').forEach((m) => seen.add(m));
      observer = new root.MutationObserver((records) => {
        for (const record of records) {
          for (const node of record.addedNodes) messagesIn(node).forEach(handleMessage);
          if (record.type === 'characterData') messagesIn(record.target).forEach(handleMessage);
        }
      });
      observer.observe(chat, { childList: true, characterData: true, subtree: true });
      buildUi();
      renewTimer = setInterval(renewLease, LEASE_RENEW_MS);
      if (storage.get('token')) check();
      else setStatus('no token', NO_TOKEN_HINT);
    };

    const stop = () => {
      if (observer) observer.disconnect();
      if (renewTimer) clearInterval(renewTimer);
      // Hand the relay to another tab at once rather than after the lease runs out.
      const lease = readLease();
      if (lease && lease.tab === tab) storage.set('lease', { tab: '', at: 0 });
    };

    return {
      start, stop, check, handleMessage, relay,
      status: () => Object.assign({}, status),
      history: () => history.slice(),
      handled: () => Array.from(handled),
      idle: () => typing,
    };
  };

  // ------------------------------------------------------------- startup

  const api = {
    VERSION, DEFAULTS, SOURCE, ALLOWED_METHODS, CHANGING_METHODS, findMarkers, requestProblem, answerCommands, chunkSize,
    encodeBase64Url, decodeBase64Url, senderOf, messageText, isChanging, uncertainAnswer, refusedAnswer, createBridge,
    storage: defaultStorage, transport: defaultTransport,
  };
  // The test switches are globals that Roll20's page may set as well (a manager's
  // sandboxed `window` reads the page's own). Under a userscript manager (GM_info, which
  // Tampermonkey, Violentmonkey and Greasemonkey always provide) they are ignored, so that
  // no script of the page can reach the storage with the token, a transport that sends it,
  // or a relay without the pairing check, nor keep the bridge from starting.
  const managed = typeof GM_info !== 'undefined'; // eslint-disable-line no-undef
  if (root.__mindscapeBridgeTest && !managed) root.__mindscapeBridge = api;

  // Roll20 builds its chat after the page loads: wait for it.
  const boot = () => {
    if (!root.document.querySelector('#textchat')) { setTimeout(boot, 500); return; }
    api.bridge = createBridge();
    api.bridge.start();
    root.addEventListener('pagehide', () => api.bridge.stop());
  };
  if (managed || !root.__mindscapeBridgeNoStart) boot();
}(typeof window !== 'undefined' ? window : globalThis));
