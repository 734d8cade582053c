/**
 * First in, first out. Maps keep insertion order too, but iterating one from
 * its start walks over every entry deleted since it last compacted: taking the
 * oldest that way costs more the longer a cache churns.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private first = 0;

  push(item: T): void {
    this.items.push(item);
  }

  get size(): number {
    return this.items.length - this.first;
  }

  peek(): T | undefined {
    return this.items[this.first];
  }

  shift(): void {
    this.items[this.first++] = undefined;
    if (this.first > 1024 && this.first * 2 > this.items.length) {
      this.items = this.items.slice(this.first);
      this.first = 0;
    }
  }

  clear(): void {
    this.items = [];
    this.first = 0;
  }
}
