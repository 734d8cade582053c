/**
 * A small typed event emitter that runs anywhere (Node's EventEmitter is
 * Node-only, and a browser's EventTarget carries one payload per event).
 * `Events` maps each event name to its listener's arguments.
 */
export class Emitter<Events extends { [name: string]: unknown[] }> {
  private readonly listeners = new Map<keyof Events, Set<unknown>>();

  /** Adds a listener; returns the function that removes it. */
  on<K extends keyof Events>(name: K, listener: (...args: Events[K]) => void): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => this.off(name, listener);
  }

  off<K extends keyof Events>(name: K, listener: (...args: Events[K]) => void): void {
    this.listeners.get(name)?.delete(listener);
  }

  /**
   * Calls each listener in the order added. One that throws does not stop the
   * others or the caller (a frame must still reach the book): its error is
   * rethrown on its own, where the host reports uncaught errors.
   */
  protected emit<K extends keyof Events>(name: K, ...args: Events[K]): void {
    const set = this.listeners.get(name);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as (...a: Events[K]) => void)(...args);
      } catch (err) {
        setTimeout(() => {
          throw err;
        }, 0);
      }
    }
  }
}
