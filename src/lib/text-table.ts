import { randomInt } from 'node:crypto';

/** Slots are at most half full, so a probe for an absent key stops after a few. */
const MAX_LOAD = 0.5;
const MIN_SLOTS = 16;

/**
 * A map from strings that can also be asked with a stretch of a longer string,
 * `slotOf(text, start, end)`, without cutting that stretch out as a string of
 * its own. A REST read names up to 50 market IDs in its query string: with a
 * Map each had to be sliced out (a new string) and hashed before the lookup,
 * which was half of a results answer's own CPU; here the ID's characters are
 * hashed and compared where they lie.
 *
 * Open addressing with linear probing over an array of slots, removal by
 * shifting the entries that follow back (no tombstones, so a table that churns
 * keeps its probes short). The hash is seeded per process, so which keys
 * collide cannot be worked out from outside.
 */
export class TextTable<V> implements Iterable<[string, V]> {
  /**
   * Slot s holds its key at 2s and its value at 2s + 1, one beside the other: a lookup costs
   * the reads of the slot, the key and the value, and on this hardware each read from a
   * table bigger than the cache costs more than hashing the ID. No hashes are kept for the
   * same reason: comparing the key's length and characters reads the key, which a hit reads
   * anyway; with the table at most half full, a miss mostly stops at an empty slot.
   */
  private cells: unknown[] = new Array<unknown>(2 * MIN_SLOTS).fill(undefined);
  private mask = MIN_SLOTS - 1;
  private count = 0;

  /** `seed`: the hash's, random unless a test fixes it to replay the same collisions. */
  constructor(private readonly seed = randomInt(0x7fffffff)) {}

  get size(): number {
    return this.count;
  }

  /** The slot holding the key written in `text` from `start` to `end`, or -1. */
  slotOf(text: string, start: number, end: number): number {
    const length = end - start;
    for (let s = this.hash(text, start, end) & this.mask; ; s = (s + 1) & this.mask) {
      const key = this.cells[2 * s] as string | undefined;
      if (key === undefined) return -1;
      if (key.length === length && sameText(key, text, start)) return s;
    }
  }

  /** The value in a slot `slotOf` returned, before the table changes. */
  valueAt(slot: number): V {
    return this.cells[2 * slot + 1] as V;
  }

  get(key: string): V | undefined {
    const s = this.slotOf(key, 0, key.length);
    return s < 0 ? undefined : this.valueAt(s);
  }

  has(key: string): boolean {
    return this.slotOf(key, 0, key.length) >= 0;
  }

  set(key: string, value: V): this {
    const s = this.slotOf(key, 0, key.length);
    if (s >= 0) {
      this.cells[2 * s + 1] = value;
      return this;
    }
    if (this.count + 1 > (this.cells.length / 2) * MAX_LOAD) this.resize(this.cells.length);
    this.place(key, value);
    this.count++;
    return this;
  }

  delete(key: string): boolean {
    let gap = this.slotOf(key, 0, key.length);
    if (gap < 0) return false;
    // Entries after the gap that were placed past their home slot move back into it, so every
    // key stays reachable from its home without a break in between.
    for (let s = (gap + 1) & this.mask; this.cells[2 * s] !== undefined; s = (s + 1) & this.mask) {
      const moved = this.cells[2 * s] as string;
      const home = this.hash(moved, 0, moved.length) & this.mask;
      const between = gap <= s ? home > gap && home <= s : home > gap || home <= s;
      if (between) continue;
      this.cells[2 * gap] = moved;
      this.cells[2 * gap + 1] = this.cells[2 * s + 1];
      gap = s;
    }
    this.cells[2 * gap] = undefined;
    this.cells[2 * gap + 1] = undefined;
    this.count--;
    return true;
  }

  *[Symbol.iterator](): IterableIterator<[string, V]> {
    for (let s = 0; s < this.cells.length; s += 2) {
      const key = this.cells[s] as string | undefined;
      if (key !== undefined) yield [key, this.cells[s + 1] as V];
    }
  }

  private place(key: string, value: V): void {
    let s = this.hash(key, 0, key.length) & this.mask;
    while (this.cells[2 * s] !== undefined) s = (s + 1) & this.mask;
    this.cells[2 * s] = key;
    this.cells[2 * s + 1] = value;
  }

  private resize(slots: number): void {
    const old = this.cells;
    this.cells = new Array<unknown>(2 * slots).fill(undefined);
    this.mask = slots - 1;
    for (let s = 0; s < old.length; s += 2) if (old[s] !== undefined) this.place(old[s] as string, old[s + 1] as V);
  }

  private hash(text: string, start: number, end: number): number {
    return textHash(this.seed, text, start, end);
  }
}

/** FNV-1a over the UTF-16 units from `seed`, then a finaliser so the low bits a mask keeps depend on every unit. */
export function textHash(seed: number, text: string, start: number, end: number): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  return h ^ (h >>> 13);
}

function sameText(key: string, text: string, start: number): boolean {
  for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) !== text.charCodeAt(start + i)) return false;
  return true;
}
