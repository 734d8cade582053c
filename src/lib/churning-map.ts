/** Sets between copies, at least; a larger map is copied after as many sets as it holds, so a copy costs O(1) per set. */
const RENEW_AFTER = 1024;

/**
 * A Map whose keys come and go all the time: a cache's. V8 allocates the table
 * a Map grows or rehashes into in the generation of the table it replaces, and
 * leaves the replaced table's entries in place. Once a busy Map's table has
 * reached the old generation (it need only outlive two young collections, as
 * in a quiet minute), every table it drops there keeps what it held reachable
 * to the young-generation collector until the next full collection: keys and
 * values long evicted are copied, then promoted, at each one. On REST cache
 * misses that was about 700 KB per young collection and a quarter of the
 * CPU. Copied into a new Map every so often, the table starts young again.
 */
export class ChurningMap<K, V> {
  private map = new Map<K, V>();
  private sets = 0;

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): this {
    if (++this.sets >= RENEW_AFTER && this.sets >= this.map.size) {
      this.sets = 0;
      this.map = new Map(this.map);
    }
    this.map.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  clear(): void {
    this.map = new Map();
    this.sets = 0;
  }
}
