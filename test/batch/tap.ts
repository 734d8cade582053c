/**
 * The `tap` a test file imports inside a batch (hook.ts sends it here): every use goes to the
 * subtest main.ts runs the file in, so the file's root-level tests, hooks, plan and teardowns are
 * its own, as they are when the file is a process of its own.
 */
import tap from 'tap';

let current: object = tap;

/** From here on, `t` in a test file is this test. */
export function within(test: object): void {
  current = test;
}

const get = (key: string | symbol): unknown => {
  const value = Reflect.get(current, key);
  return typeof value === 'function' ? value.bind(current) : value;
};

export default new Proxy({}, {
  get: (_, key) => get(key),
  set: (_, key, value) => Reflect.set(current, key, value),
  has: (_, key) => key in current,
}) as typeof tap;
