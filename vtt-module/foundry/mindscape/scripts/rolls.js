/**
 * The daemon's dice as Foundry rolls. The daemon already rolled (or was given) every die;
 * these functions only *describe* those results as evaluated Roll data, so Foundry shows
 * them, Dice So Nice animates exactly those faces, and nothing is rolled twice.
 */

/**
 * Group the daemon's rolls into one roll per purpose and roller, in rolling order.
 * A penetrating die's follow-ups (same purpose, `follows` set) stay in the same group.
 * @param {{purpose:string, sides:number, value:number, by?:string|null, follows?:any}[]} rolls
 */
export function groupRolls(rolls) {
  const groups = [];
  const byKey = new Map();
  for (const r of rolls ?? []) {
    const key = `${r.purpose}\u0000${r.by ?? ""}`;
    let group = byKey.get(key);
    if (!group) {
      group = { purpose: r.purpose, by: r.by ?? null, dice: [] };
      byKey.set(key, group);
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
 * with the same faces, joined by "+". The total is the sum of the faces shown; rule
 * arithmetic (penetration's −1, multipliers, modifiers) is the daemon's and appears in
 * the card's summary, not here.
 * @param {{purpose:string, by:string|null, dice:{sides:number, value:number}[]}} group
 * @param {string} flavor  the label shown beside the roll
 */
export function rollDataForGroup(group, flavor) {
  const runs = [];
  for (const d of group.dice) {
    const last = runs[runs.length - 1];
    if (last && last.sides === d.sides) last.values.push(d.value);
    else runs.push({ sides: d.sides, values: [d.value] });
  }
  const terms = [];
  runs.forEach((run, i) => {
    if (i > 0) terms.push({ class: "OperatorTerm", options: {}, evaluated: true, operator: "+" });
    terms.push(dieTerm(run.sides, run.values, flavor));
  });
  const formula = runs.map((r) => `${r.values.length}d${r.sides}`).join(" + ");
  const total = group.dice.reduce((s, d) => s + d.value, 0);
  return { class: "Roll", options: { flavor }, dice: [], formula, terms, total, evaluated: true };
}

/**
 * Roll data for every group of a result's rolls.
 * @param {object[]} rolls  the result's `rolls`
 * @param {(purpose:string, by:string|null)=>string} flavorOf
 */
export function rollDataFromDaemon(rolls, flavorOf = (p) => p) {
  return groupRolls(rolls).map((g) => rollDataForGroup(g, flavorOf(g.purpose, g.by)));
}
