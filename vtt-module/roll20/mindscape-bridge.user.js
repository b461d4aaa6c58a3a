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
// the GM (MINDSCAPE-REQ <id> <part>/<parts> <base64url>), sends each complete request
// to the companion once, and types the companion's answer into the chat as
// `!psi-result <id> ...`, which the Mod script accepts because a GM sent it.
// It sends nothing else: no request of its own, no error text, no retry of old ids.
// With window.__mindscapeBridgeTest set before it loads, it exposes its parts as
// window.__mindscapeBridge for tests (docs/ROLL20.md).
(function mindscapeBridge(root) {
  'use strict';

  const VERSION = '0.1.0';
  const MARKER = /MINDSCAPE-REQ ([A-Za-z0-9]{6,32}) (\d{1,4})\/(\d{1,4}) ([A-Za-z0-9_-]+)/g;
  // The methods the Mod script asks for; anything else in a marker is not ours.
  const ALLOWED_METHODS = new Set([
    'exchange.resolve', 'exchange.odds', 'encounter.create', 'encounter.add',
    'encounter.declare', 'encounter.resolve', 'encounter.get', 'encounter.undo',
  ]);
  const DEFAULTS = { url: 'http://127.0.0.1:39393', token: '', sender: 'Mindscape', chunk: 1000 };
  const HANDLED_MEMORY = 500;
  const MAX_PARTS = 500;
  const RETRY_DELAY_MS = 1000;
  const TYPING_DELAY_MS = 150;
  const STORAGE_PREFIX = 'mindscape.bridge.';

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

  /**
   * POSTs a JSON text to the companion; resolves {status, text}, rejects on a network
   * failure. GM_xmlhttpRequest (no CORS) when the manager grants it, else fetch (the
   * companion must then allow this page's origin with --allow-origin).
   */
  const defaultTransport = (url, token, bodyText) => {
    const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` };
    if (typeof GM_xmlhttpRequest === 'function') { // eslint-disable-line no-undef
      return new Promise((resolve, reject) => {
        GM_xmlhttpRequest({ // eslint-disable-line no-undef
          method: 'POST',
          url,
          headers,
          data: bodyText,
          timeout: 15000,
          onload: (res) => resolve({ status: res.status, text: res.responseText }),
          onerror: () => reject(new Error('network error')),
          ontimeout: () => reject(new Error('timed out')),
        });
      });
    }
    return root.fetch(url, { method: 'POST', headers, body: bodyText, credentials: 'omit' })
      .then((res) => res.text().then((text) => ({ status: res.status, text })));
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
   * Every MINDSCAPE-REQ marker in a text: [{id, part, count, piece}]. Invisible break
   * opportunities (zero-width spaces, soft hyphens) a chat may add to long words are
   * dropped first.
   */
  const findMarkers = (text) => Array.from(String(text).replace(/[\u00ad\u200b-\u200d\u2060\ufeff]/g, '').matchAll(MARKER), (m) => ({
    id: m[1], part: Number(m[2]), count: Number(m[3]), piece: m[4],
  })).filter((m) => m.count >= 1 && m.count <= MAX_PARTS && m.part >= 1 && m.part <= m.count);

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

  /** The chat commands that carry `answerText` back for request `id`. */
  const answerCommands = (id, answerText, size) => {
    const code = encodeBase64Url(answerText);
    if (code.length <= size) return [`!psi-result ${id} ${code}`];
    const pieces = [];
    for (let i = 0; i < code.length; i += size) pieces.push(code.slice(i, i + size));
    return pieces.map((piece, i) => `!psi-result ${id} ${i + 1}/${pieces.length} ${piece}`);
  };

  // Roll20 prints the speaker once for a run of messages from the same sender, so the
  // speaker of a message is the nearest ".by" at or before it.
  const senderOf = (message) => {
    for (let node = message; node; node = node.previousElementSibling) {
      if (!node.classList || !node.classList.contains('message')) continue;
      const by = Array.from(node.children).find((child) => child.classList.contains('by'));
      if (by) return by.textContent.trim().replace(/^\((?:from|to)\s+/i, '').replace(/\)?\s*:?\s*$/, '').trim();
    }
    return '';
  };

  const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

  // --------------------------------------------------------------- bridge

  /** A bridge bound to one document; `start()` begins watching its chat. */
  const createBridge = ({ doc = root.document, storage = defaultStorage, transport = defaultTransport } = {}) => {
    const partials = new Map();
    const seen = new WeakSet();
    let handled = new Set(storage.get('handled') || []);
    let typing = Promise.resolve();
    let status = { state: 'starting', detail: '' };
    let badge = null;
    let observer = null;
    const history = [];

    const setStatus = (state, detail = '') => {
      status = { state, detail };
      history.push(state);
      if (badge) {
        const colours = { connected: '#2e7d32', relaying: '#1565c0', starting: '#777', offline: '#c62828', refused: '#c62828', 'bad token': '#c62828' };
        badge.textContent = `Mindscape: ${state}`;
        badge.title = detail || state;
        badge.style.background = colours[state] || '#ef6c00';
      }
    };

    const remember = (id) => {
      handled.add(id);
      // Kept across reloads so that an old request still in the chat is never sent again.
      const list = Array.from(handled).slice(-HANDLED_MEMORY);
      handled = new Set(list);
      storage.set('handled', list);
    };

    const endpoint = () => `${String(storage.get('url') || DEFAULTS.url).replace(/\/+$/, '')}/rpc`;

    // One call to the companion, retried once on a network failure or a server fault.
    const call = async (bodyText) => {
      let lastError = '';
      for (let attempt = 0; attempt < 2; attempt += 1) {
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
        if (res.status !== 200) return { fail: 'refused', detail: `the companion answered HTTP ${res.status}` };
        try {
          JSON.parse(res.text);
        } catch (err) {
          return { fail: 'refused', detail: 'the companion answered something that is not JSON' };
        }
        return { text: res.text.trim() };
      }
      return { fail: 'offline', detail: lastError };
    };

    // Types one command into Roll20's chat box and presses Send, keeping whatever the
    // GM was writing. Commands go one after another, never interleaved.
    const type = (command) => {
      typing = typing.then(async () => {
        const box = doc.querySelector('#textchat-input textarea');
        const button = doc.querySelector('#textchat-input button, #textchat-input .btn');
        if (!box || !button) throw new Error('Roll20 chat input not found');
        const draft = box.value;
        box.value = command;
        box.dispatchEvent(new Event('input', { bubbles: true }));
        button.click();
        await sleep(TYPING_DELAY_MS);
        if (!box.value) box.value = draft;
      }).catch((err) => setStatus('error', err.message));
      return typing;
    };

    const relay = async (id, code) => {
      if (handled.has(id)) return;
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
      const answer = await call(JSON.stringify(body));
      if (answer.fail) {
        setStatus(answer.fail, answer.detail);
        return;
      }
      const size = Number(storage.get('chunk')) || DEFAULTS.chunk;
      for (const command of answerCommands(id, answer.text, size)) await type(command);
      setStatus('connected', `answered ${id}`);
    };

    const handleMessage = (message) => {
      if (seen.has(message)) return;
      seen.add(message);
      const markers = findMarkers(message.textContent || '');
      if (!markers.length) return;
      const expected = String(storage.get('sender') || DEFAULTS.sender).toLowerCase();
      if (senderOf(message).toLowerCase() !== expected) return;
      for (const marker of markers) {
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

    // Asks the companion who it is, to show whether URL and token work.
    const check = async () => {
      const answer = await call(JSON.stringify({ jsonrpc: '2.0', id: 'bridge-check', method: 'companion.info' }));
      if (answer.fail) { setStatus(answer.fail, answer.detail); return false; }
      const parsed = JSON.parse(answer.text);
      if (parsed.error) { setStatus('refused', parsed.error.message); return false; }
      setStatus('connected', `${parsed.result.name || 'companion'} ${parsed.result.version || ''}`.trim());
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
      const save = doc.createElement('button');
      save.id = 'mindscape-bridge-save';
      save.textContent = 'Save and test';
      panel.appendChild(save);
      badge.addEventListener('click', () => {
        url.value = storage.get('url') || DEFAULTS.url;
        token.value = storage.get('token') || '';
        panel.style.display = panel.style.display === 'none' ? 'block' : 'none';
      });
      save.addEventListener('click', () => {
        storage.set('url', url.value.trim() || DEFAULTS.url);
        storage.set('token', token.value.trim());
        panel.style.display = 'none';
        check();
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
      observer.observe(chat, { childList: true, subtree: true });
      buildUi();
      if (storage.get('token')) check();
      else setStatus('no token', 'click here and paste the companion\'s token');
    };

    const stop = () => { if (observer) observer.disconnect(); };

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
    VERSION, DEFAULTS, ALLOWED_METHODS, findMarkers, requestProblem, answerCommands,
    encodeBase64Url, decodeBase64Url, senderOf, createBridge, storage: defaultStorage,
  };
  if (root.__mindscapeBridgeTest) root.__mindscapeBridge = api;

  // Roll20 builds its chat after the page loads: wait for it.
  const boot = () => {
    if (!root.document.querySelector('#textchat')) { setTimeout(boot, 500); return; }
    api.bridge = createBridge();
    api.bridge.start();
  };
  if (!root.__mindscapeBridgeNoStart) boot();
}(typeof window !== 'undefined' ? window : globalThis));
