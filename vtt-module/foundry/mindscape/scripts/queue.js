/**
 * A queue of tasks keyed by the documents they touch. The daemon's write-backs are
 * absolute values ("flags.mindscape.revised-2e.psp": 38) computed from the actors' data
 * as they were imported, so two exchanges against one actor must not overlap: the second
 * would import the actor before the first wrote back, and overwrite it.
 */

export class KeyedQueue {
  constructor() {
    /** @type {Map<string, Promise<void>>} the last task queued for each key (never rejects) */
    this.tails = new Map();
  }

  /**
   * Run `task` after every task queued earlier that shares one of `keys` has settled;
   * tasks with no key in common run side by side. All keys are taken at once, when
   * `run` is called, so two tasks can never wait for each other (no deadlock), and tasks
   * on one key run in the order they were queued. A failed task does not stop the next.
   * @template T
   * @param {(string|null|undefined)[]} keys  document uuids; empty values are ignored
   * @param {() => Promise<T>|T} task
   * @returns {Promise<T>} the task's own result or error
   */
  run(keys, task) {
    const own = [...new Set(keys.filter(Boolean))];
    const before = own.map((k) => this.tails.get(k)).filter(Boolean);
    const result = Promise.all(before).then(() => task());
    const settled = result.then(() => undefined, () => undefined);
    for (const k of own) this.tails.set(k, settled);
    settled.then(() => {
      for (const k of own) if (this.tails.get(k) === settled) this.tails.delete(k);
    });
    return result;
  }

  /** Whether a task on `key` is queued or running. */
  busy(key) {
    return this.tails.has(key);
  }
}
