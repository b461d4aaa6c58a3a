/**
 * The daemon's dice as Foundry rolls. The daemon already rolled (or was given) every die;
 * these functions only *describe* those results as evaluated Roll data, so Foundry shows
 * them, Dice So Nice animates exactly those faces, and nothing is rolled twice.
 */

/**
 * The purposes whose dice the rules add up into one figure (revised-2e's damage, one die
 * a step of the multiplier; combat-strength's penetrating damage dice; a power-pool
 * side's pool), from a system's `systems.describe` answer: `dice_purposes` entries with
 * `summed` true. Every other die is a check, a save or a table roll of its own: four
 * Wisdom checks are four rolls, not one of their sum. Without a description (or for a
 * plugin's purpose that does not say), each die is shown alone.
 * @param {{dice_purposes?: any}|null|undefined} description
 * @returns {Set<string>}
 */
export function summedPurposes(description) {
  const purposes = description?.dice_purposes;
  return new Set((Array.isArray(purposes) ? purposes : []).filter((p) => p && typeof p.purpose === "string" && p.summed === true).map((p) => p.purpose));
}

/**
 * Group the daemon's rolls into Foundry rolls, in rolling order: the dice of a purpose
 * that is `summed` into one roll per purpose and roller; any other die into a roll of its
 * own. A penetrating die's follow-ups (same purpose, `follows` set) stay with the die
 * they follow.
 * @param {{purpose:string, sides:number, value:number, by?:string|null, follows?:any}[]} rolls
 * @param {Set<string>} [summed]  `summedPurposes(description)`
 */
export function groupRolls(rolls, summed = new Set()) {
  const groups = [];
  const last = new Map();
  for (const r of rolls ?? []) {
    const key = `${r.purpose}\u0000${r.by ?? ""}`;
    const follows = r.follows !== null && r.follows !== undefined;
    let group = summed.has(r.purpose) || follows ? last.get(key) : null;
    if (!group) {
      group = { purpose: r.purpose, by: r.by ?? null, dice: [] };
      last.set(key, group);
      groups.push(group);
    }
    group.dice.push({ sides: Number(r.sides), value: Number(r.value), follows: r.follows ?? null });
  }
  return groups;
}

function dieTerm(sides, values, flavor) {
  return {
    class: "Die",
    options: { flavor },
    evaluated: true,
    number: values.length,
    faces: sides,
    modifiers: [],
    results: values.map((v) => ({ result: v, active: true })),
  };
}

/**
 * Serialized Roll data (for `Roll.fromData`) for one group: a Die term per run of dice
 * with the same faces, joined by "+", then what the rules make of those dice without
 * another die, so that the total is the figure the card shows: less 1 for each follow-up
 * of a penetrating die (each counts its value − 1, engine/dice.py `roll_penetrating`),
 * and `added`, points the rules add to them (combat-strength's table value added to its
 * damage dice). Other arithmetic (multipliers, modifiers) is the daemon's and appears in
 * the card's summary, not here.
 * @param {{purpose:string, by:string|null, dice:{sides:number, value:number, follows?:any}[]}} group
 * @param {string} flavor  the label shown beside the roll
 * @param {{added?:number, labels?:{penetration?:string, added?:string}}} [more]
 *   `labels`: the flavors of the penetration's and the added points' terms
 */
export function rollDataForGroup(group, flavor, { added = 0, labels = {} } = {}) {
  const runs = [];
  for (const d of group.dice) {
    const last = runs[runs.length - 1];
    if (last && last.sides === d.sides) last.values.push(d.value);
    else runs.push({ sides: d.sides, values: [d.value] });
  }
  const terms = [];
  const parts = [];
  runs.forEach((run, i) => {
    if (i > 0) terms.push(operator("+"));
    terms.push(dieTerm(run.sides, run.values, flavor));
    parts.push(`${i > 0 ? " + " : ""}${run.values.length}d${run.sides}`);
  });
  const followUps = group.dice.filter((d) => d.follows !== null && d.follows !== undefined).length;
  const constant = (sign, n, label) => {
    terms.push(operator(sign), { class: "NumericTerm", options: label ? { flavor: label } : {}, evaluated: true, number: n });
    parts.push(` ${sign} ${n}${label ? `[${label}]` : ""}`);
  };
  if (followUps) constant("-", followUps, labels.penetration);
  if (added > 0) constant("+", added, labels.added);
  if (added < 0) constant("-", -added, labels.added);
  const total = group.dice.reduce((s, d) => s + d.value, 0) - followUps + added;
  return { class: "Roll", options: { flavor }, dice: [], formula: parts.join(""), terms, total, evaluated: true };
}

function operator(op) {
  return { class: "OperatorTerm", options: {}, evaluated: true, operator: op };
}

/**
 * Roll data for every group of a result's rolls (`groupRolls`).
 * @param {object[]} rolls  the result's `rolls`
 * @param {(purpose:string, by:string|null)=>string} flavorOf
 * @param {{summed?:Set<string>, addedTo?:Record<string, number>, labels?:{penetration?:string, added?:string}}} [more]
 *   `summed`: the purposes whose dice are added up (`summedPurposes`); `addedTo`: the
 *   points the rules add to the dice of a purpose (`rollDataForGroup`)
 */
export function rollDataFromDaemon(rolls, flavorOf = (p) => p, { summed = new Set(), addedTo = {}, labels = {} } = {}) {
  return groupRolls(rolls, summed).map((g) => rollDataForGroup(g, flavorOf(g.purpose, g.by), { added: Number(addedTo[g.purpose] ?? 0), labels }));
}
