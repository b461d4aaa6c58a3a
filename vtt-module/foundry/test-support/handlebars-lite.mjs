/**
 * A tiny Handlebars-compatible renderer for the module's templates in tests and in the
 * browser harness (Foundry ships real Handlebars; this covers the subset the templates
 * use): {{path}}, {{{raw}}}, {{#if}}/{{else}}, {{#unless}}, {{#each}} with `this`,
 * `@index` and `../`, and helpers called with string/number/path arguments and hash
 * arguments (`{{localize "KEY" name=value}}`). Unknown syntax throws, so a template that
 * strays outside the subset fails a test instead of rendering wrongly.
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

function splitArgs(body) {
  const out = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  let m;
  while ((m = re.exec(body))) {
    if (m[1] !== undefined) out.push({ str: m[1] });
    else if (m[2] !== undefined) out.push({ str: m[2] });
    else out.push(m[3]);
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
      if (typeof a === "string" && /^[\w-]+=/.test(a)) {
        const [k, v] = [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)];
        hash[k] = lookup(/^"(.*)"$/.test(v) ? { str: v.slice(1, -1) } : v, frames);
      } else positional.push(lookup(a, frames));
    }
    return helpers[head](...positional, { hash });
  }
  if (rest.length) throw new Error(`handlebars-lite: unknown helper ${head}`);
  return lookup(head, frames);
}

const truthy = (v) => (Array.isArray(v) ? v.length > 0 : Boolean(v));

function run(nodes, frames, helpers) {
  let out = "";
  for (const n of nodes) {
    if (n.type === "text") out += n.value;
    else if (n.type === "expr") {
      const v = evaluate(splitArgs(n.body), frames, helpers);
      out += n.raw ? (v ?? "") : escapeHtml(v);
    } else if (n.name === "if" || n.name === "unless") {
      let v = truthy(evaluate(n.args, frames, helpers));
      if (n.name === "unless") v = !v;
      out += run(v ? n.children : n.inverse, frames, helpers);
    } else if (n.name === "with") {
      const v = evaluate(n.args, frames, helpers);
      out += v ? run(n.children, [...frames, { ctx: v, data: {} }], helpers) : run(n.inverse, frames, helpers);
    } else if (n.name === "each") {
      const v = evaluate(n.args, frames, helpers);
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
