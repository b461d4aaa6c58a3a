/**
 * A tiny Handlebars-compatible renderer for the module's templates in tests and in the
 * browser harness (Foundry ships real Handlebars; this covers the subset the templates
 * use): {{path}}, {{{raw}}}, {{#if}}/{{else}}, {{#unless}}, {{#each}} with `this`,
 * `@index` and `../`, and helpers called with string/number/path arguments and hash
 * arguments (`{{localize "KEY" name=value}}`, a value quoted in either kind of quote).
 * Unknown syntax throws (subexpressions, `./` and `@root` paths, partials, `else if`
 * chains, block arguments beyond one, `#each` over a Map or a Set), so a template that
 * strays outside the subset fails a test instead of rendering otherwise than in Foundry.
 */

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;", "`": "&#x60;", "=": "&#x3D;" };
export function escapeHtml(value) {
  if (value === null || value === undefined) return "";
  return String(value).replace(/[&<>"'`=]/g, (c) => ESC[c]);
}

function tokenize(src) {
  const tokens = [];
  const re = /{{(~?)({)?\s*([\s\S]*?)\s*(})?(~?)}}/g;
  let last = 0;
  let m;
  while ((m = re.exec(src))) {
    if (m.index > last) tokens.push({ type: "text", value: src.slice(last, m.index) });
    const raw = Boolean(m[2]);
    const body = m[3];
    if (body.startsWith("!")) { /* comment */ }
    else if (body.startsWith("#")) tokens.push({ type: "open", body: body.slice(1) });
    else if (body.startsWith("/")) tokens.push({ type: "close", name: body.slice(1).trim() });
    else if (body === "else") tokens.push({ type: "else" });
    // Real Handlebars chains `{{else if x}}`; read as an expression here it would render
    // nothing, silently.
    else if (/^else\s/.test(body)) throw new Error(`handlebars-lite: unsupported {{${body}}} (an else chain)`);
    else tokens.push({ type: "expr", body, raw });
    last = re.lastIndex;
  }
  if (last < src.length) tokens.push({ type: "text", value: src.slice(last) });
  return tokens;
}

function parse(tokens) {
  const root = { name: "(root)", children: [] };
  const stack = [{ node: root, list: root.children }];
  for (const t of tokens) {
    const top = stack[stack.length - 1];
    if (t.type === "open") {
      const [name, ...rest] = splitArgs(t.body);
      if (!["if", "unless", "each", "with"].includes(name)) throw new Error(`handlebars-lite: unsupported block ${name}`);
      const node = { type: "block", name, args: rest, children: [], inverse: [] };
      top.list.push(node);
      stack.push({ node, list: node.children });
    } else if (t.type === "else") {
      if (top.node === root) throw new Error("handlebars-lite: else outside a block");
      top.list = top.node.inverse;
    } else if (t.type === "close") {
      if (top.node === root || top.node.name !== t.name) throw new Error(`handlebars-lite: unexpected /${t.name}`);
      stack.pop();
    } else {
      top.list.push(t);
    }
  }
  if (stack.length !== 1) throw new Error(`handlebars-lite: unclosed block ${stack[stack.length - 1].node.name}`);
  return root.children;
}

// What real Handlebars reads differently from this subset, refused rather than rendered
// wrongly: subexpressions `(helper x)`, `./path`, `@root`, partials, a hash value
// quoted after its `=` is kept as a string (both quote kinds, as Handlebars takes them).
const UNSUPPORTED = [
  [/^\(|^[\w-]+=\(/, "a subexpression"],
  [/^\.\//, "a ./ path"],
  [/^@root\b/, "@root"],
  [/^>/, "a partial"],
];

function splitArgs(body) {
  const out = [];
  const re = /"([^"]*)"|'([^']*)'|([\w-]+=)(?:"([^"]*)"|'([^']*)')|(\S+)/g;
  let m;
  while ((m = re.exec(body))) {
    if (m[1] !== undefined) out.push({ str: m[1] });
    else if (m[2] !== undefined) out.push({ str: m[2] });
    else if (m[3] !== undefined) out.push({ key: m[3].slice(0, -1), value: { str: m[4] ?? m[5] } });
    else {
      const word = m[6];
      const refused = UNSUPPORTED.find(([pattern]) => pattern.test(word));
      if (refused) throw new Error(`handlebars-lite: unsupported ${refused[1]} in {{${body}}}`);
      out.push(word);
    }
  }
  return out;
}

function lookup(path, frames) {
  if (typeof path === "object") return path.str;
  if (/^-?\d+(\.\d+)?$/.test(path)) return Number(path);
  if (path === "true") return true;
  if (path === "false") return false;
  let depth = frames.length - 1;
  let p = path;
  while (p.startsWith("../")) { depth = Math.max(0, depth - 1); p = p.slice(3); }
  const frame = frames[depth];
  if (p === "this" || p === ".") return frame.ctx;
  if (p.startsWith("@")) return frame.data[p.slice(1)];
  if (p.startsWith("this.")) p = p.slice(5);
  let value = frame.ctx;
  for (const part of p.split(".")) {
    if (value === null || value === undefined) return undefined;
    value = value[part];
  }
  return value;
}

function evaluate(args, frames, helpers) {
  const [head, ...rest] = args;
  if (typeof head === "string" && helpers[head]) {
    const positional = [];
    const hash = {};
    for (const a of rest) {
      if (a?.key !== undefined) hash[a.key] = a.value.str;
      else if (typeof a === "string" && /^[\w-]+=/.test(a)) hash[a.slice(0, a.indexOf("="))] = lookup(a.slice(a.indexOf("=") + 1), frames);
      else positional.push(lookup(a, frames));
    }
    return helpers[head](...positional, { hash });
  }
  if (rest.length) throw new Error(`handlebars-lite: unknown helper ${head}`);
  return lookup(head, frames);
}

// Handlebars' `isEmpty`: what `#with` and `#each` skip, and `#if` too but for 0 (which
// `#if` takes as false unless `includeZero`, refused below).
const isEmpty = (v) => (!v && v !== 0) || (Array.isArray(v) && v.length === 0);
const truthy = (v) => Boolean(v) && !isEmpty(v);

// Block helpers here take one argument and no hash (`includeZero=true`, `as |x|`...).
function blockValue(n, frames, helpers) {
  if (n.args.length !== 1 || (typeof n.args[0] === "object" && n.args[0].key !== undefined)) {
    throw new Error(`handlebars-lite: {{#${n.name}}} takes one argument here`);
  }
  return evaluate(n.args, frames, helpers);
}

function run(nodes, frames, helpers) {
  let out = "";
  for (const n of nodes) {
    if (n.type === "text") out += n.value;
    else if (n.type === "expr") {
      const v = evaluate(splitArgs(n.body), frames, helpers);
      out += n.raw ? (v ?? "") : escapeHtml(v);
    } else if (n.name === "if" || n.name === "unless") {
      let v = truthy(blockValue(n, frames, helpers));
      if (n.name === "unless") v = !v;
      out += run(v ? n.children : n.inverse, frames, helpers);
    } else if (n.name === "with") {
      const v = blockValue(n, frames, helpers);
      out += isEmpty(v) ? run(n.inverse, frames, helpers) : run(n.children, [...frames, { ctx: v, data: {} }], helpers);
    } else if (n.name === "each") {
      const v = blockValue(n, frames, helpers);
      // Handlebars 4.6+ walks a Map or a Set (and any iterable); this subset does not.
      if (v instanceof Map || v instanceof Set) throw new Error("handlebars-lite: {{#each}} over a Map or a Set is unsupported");
      const items = Array.isArray(v) ? v.map((x, i) => [i, x]) : (v && typeof v === "object" ? Object.entries(v) : []);
      if (!items.length) out += run(n.inverse, frames, helpers);
      items.forEach(([key, item], i) => {
        out += run(n.children, [...frames, { ctx: item, data: { index: i, key, first: i === 0, last: i === items.length - 1 } }], helpers);
      });
    }
  }
  return out;
}

/**
 * Compile a template to a function of (context) -> HTML string.
 * @param {string} source
 * @param {Record<string, Function>} helpers
 */
export function compile(source, helpers = {}) {
  const tree = parse(tokenize(source));
  return (context) => run(tree, [{ ctx: context, data: {} }], helpers);
}
