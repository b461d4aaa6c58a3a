// A small stand-in for the Roll20 Mod (API) sandbox, written after Roll20's published
// type declarations (shared fixtures/roll20/api-types.d.ts): Roll20Object with
// get/set/setWithWorker/remove, findObjs, filterObjs, getAllObjs, getObj, getAttrByName,
// createObj, sendChat, on, state, playerIsGM, log, randomInteger and Campaign. Scripts
// are loaded with node:vm into a context that has exactly these globals, plus a
// setTimeout the test advances by hand.
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

// Types that createObj may create, as the declarations' remarks list them.
const CREATABLE = new Set(['graphic', 'text', 'path', 'character', 'ability', 'attribute',
  'handout', 'rollabletable', 'tableitem', 'macro']);

/** Builds a fresh sandbox: an object bank, the API functions and the captured output. */
export function createSandbox({ players = [] } = {}) {
  const objects = [];
  const handlers = new Map();
  const chats = [];
  const logs = [];
  const workerWrites = [];
  const timers = [];
  let clock = 0;
  let counter = 0;
  const state = {};

  const nextId = () => {
    counter += 1;
    return `-Mfake${String(counter).padStart(6, '0')}`;
  };

  class Roll20Object {
    constructor(type, props) {
      const id = props._id || nextId();
      this.properties = { ...props, _id: id, _type: type, id };
      this.id = id;
    }

    get(property) {
      if (property === 'id') return this.id;
      if (property in this.properties) return this.properties[property];
      // Roll20 lets callers omit the underscore of read-only properties.
      return this.properties[`_${property}`];
    }

    set(properties, value) {
      const patch = typeof properties === 'string' ? { [properties]: value } : properties;
      const prev = { ...this.properties };
      for (const [key, val] of Object.entries(patch)) {
        if (key.startsWith('_')) continue; // read-only in Roll20
        this.properties[key] = val;
      }
      fire(`change:${this.properties._type}`, this, prev);
      return this;
    }

    remove() {
      const at = objects.indexOf(this);
      if (at >= 0) objects.splice(at, 1);
      fire(`destroy:${this.properties._type}`, this);
    }
  }

  class Roll20Attribute extends Roll20Object {
    // Like set, but sheet workers run; recorded so tests can tell the two apart.
    setWithWorker(properties) {
      workerWrites.push({ characterid: this.properties._characterid, name: this.properties.name, ...properties });
      return this.set(properties);
    }
  }

  const make = (type, props) => {
    const obj = type === 'attribute' ? new Roll20Attribute(type, props) : new Roll20Object(type, props);
    objects.push(obj);
    return obj;
  };

  function fire(event, ...args) {
    for (const callback of handlers.get(event) || []) callback(...args);
  }

  const matches = (obj, attrs, options = {}) => Object.entries(attrs).every(([key, want]) => {
    const have = obj.get(key);
    if (options.caseInsensitive && typeof have === 'string' && typeof want === 'string') {
      return have.toLowerCase() === want.toLowerCase();
    }
    return have === want;
  });

  const api = {
    state,
    log: (message) => { logs.push(message); },
    on: (event, callback) => {
      if (!handlers.has(event)) handlers.set(event, []);
      handlers.get(event).push(callback);
    },
    findObjs: (attrs, options) => objects.filter((obj) => matches(obj, attrs, options)),
    filterObjs: (callback) => objects.filter((obj) => callback(obj)),
    getAllObjs: () => objects.slice(),
    getObj: (type, id) => objects.find((obj) => obj.properties._type === type && obj.id === id) || null,
    getAttrByName: (characterId, name, valueType = 'current') => {
      const attr = objects.find((obj) => obj.properties._type === 'attribute'
        && obj.properties._characterid === characterId && obj.properties.name === name);
      return attr ? attr.get(valueType) : '';
    },
    createObj: (type, attributes) => {
      if (!CREATABLE.has(type)) throw new Error(`createObj cannot create ${type}`);
      if (type === 'attribute' && !attributes._characterid) throw new Error('an attribute needs _characterid');
      const obj = make(type, { ...attributes });
      fire(`add:${type}`, obj);
      return obj;
    },
    sendChat: (speakingAs, input, callback, options) => {
      chats.push({ speakingAs, input, options: options || {} });
      if (typeof callback === 'function') callback([{ who: speakingAs, content: input, playerid: 'API', type: 'general' }]);
    },
    playerIsGM: (playerid) => {
      const player = objects.find((obj) => obj.properties._type === 'player' && obj.id === playerid);
      return Boolean(player && player.properties.__gm);
    },
    randomInteger: (max) => 1 + Math.floor(Math.random() * max),
    Campaign: () => campaign,
    setTimeout: (callback, ms) => {
      const timer = { at: clock + ms, callback, cleared: false };
      timers.push(timer);
      return timer;
    },
    clearTimeout: (timer) => { if (timer) timer.cleared = true; },
  };

  // The defaults Roll20 documents (Mod:Objects, Campaign): an empty turn order, the Turn
  // Tracker closed (initiativepage false: it holds the page the tracker was opened on),
  // no player page.
  const campaign = make('campaign', {
    _id: 'root', turnorder: '', initiativepage: false, playerpageid: false, playerspecificpages: false,
  });
  for (const p of players) make('player', { _id: p.id, _displayname: p.name, __gm: Boolean(p.gm), _online: true });

  const context = vm.createContext({ ...api, console });

  return {
    context,
    state,
    objects,
    chats,
    logs,
    workerWrites,
    /** Runs a script file in the sandbox, as the API server does on start. */
    load(path) {
      vm.runInContext(readFileSync(path, 'utf8'), context, { filename: path });
    },
    /** Fires an event to every handler (e.g. "ready"). */
    fire,
    /** Delivers a chat message as Roll20 would (type "api" for "!" commands). */
    chat({ content, playerid, selected, who, type, inlinerolls }) {
      const player = api.getObj('player', playerid);
      const msg = {
        who: who || (player ? player.get('_displayname') : 'someone'),
        playerid,
        type: type || (String(content).startsWith('!') ? 'api' : 'general'),
        content,
      };
      if (inlinerolls) msg.inlinerolls = inlinerolls;
      if (selected) msg.selected = selected.map((id) => ({ _id: id, _type: 'graphic' }));
      fire('chat:message', msg);
    },
    /** Creates an object directly in the bank (the campaign's existing content). */
    add: (type, props) => make(type, props),
    /**
     * Moves the fake clock on and runs the timers that fall due; one cleared by a timer
     * that ran before it does not run, as with clearTimeout.
     */
    advance(ms) {
      clock += ms;
      for (const timer of timers.filter((t) => !t.cleared && t.at <= clock)) {
        if (timer.cleared) continue;
        timer.cleared = true;
        timer.callback();
      }
    },
    attribute(characterId, name) {
      return objects.find((obj) => obj.properties._type === 'attribute'
        && obj.properties._characterid === characterId && obj.properties.name === name) || null;
    },
    api,
  };
}
