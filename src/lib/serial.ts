/**
 * Runs tasks one after another per key, in the order given, with different
 * keys running side by side. A key is forgotten once its last task settles,
 * so the map holds only keys with work in flight.
 */
export class SerialByKey<K> {
  private readonly tails = new Map<K, Promise<unknown>>();

  run<T>(key: K, task: () => Promise<T> | T): Promise<T> {
    const prev = this.tails.get(key);
    const next = prev ? prev.then(task, task) : Promise.resolve().then(task);
    const tail = next.then(() => undefined, () => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves when every task queued so far has settled. */
  async idle(): Promise<void> {
    await Promise.all(this.tails.values());
  }
}

/** Maps over items with at most `limit` in flight; rejects with the first failure. */
export async function eachLimit<T>(items: Iterable<T>, limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  const it = items[Symbol.iterator]();
  const worker = async (): Promise<void> => {
    for (let n = it.next(); !n.done; n = it.next()) await fn(n.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}
