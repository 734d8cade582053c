/**
 * One way of reading a benchmark's settings: each reads its own once, into a frozen object, with
 * these; a value that is set but unusable stops the run at once, naming the variable, rather than
 * measuring something else than was asked.
 */

/** A positive number; `fallback` when unset or empty (without one, undefined: "unset" is a setting of its own). */
export function envNumber(name: string, fallback: number): number;
export function envNumber(name: string): number | undefined;
export function envNumber(name: string, fallback?: number): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

/** A comma-separated list; with `allowed`, each item must be one of them. */
export function envList<T extends string = string>(name: string, fallback: readonly T[], allowed?: readonly T[]): T[] {
  const raw = process.env[name];
  const items = raw ? raw.split(',').map((s) => s.trim()).filter(Boolean) : [...fallback];
  const bad = allowed ? items.filter((i) => !allowed.includes(i as T)) : [];
  if (bad.length) throw new Error(`${name} takes ${allowed!.join(', ')}; got "${bad.join(',')}"`);
  return items as T[];
}

/** A comma-separated list of positive numbers. */
export function envNumbers(name: string, fallback: readonly number[]): number[] {
  const items = envList(name, fallback.map(String));
  const bad = items.filter((i) => !(Number(i) > 0));
  if (bad.length) throw new Error(`${name} must list positive numbers, got "${bad.join(',')}"`);
  return items.map(Number);
}

/** on/off (also 1/0, yes/no, true/false). */
export function envFlag(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|on|yes|true)$/i.test(raw)) return true;
  if (/^(0|off|no|false)$/i.test(raw)) return false;
  throw new Error(`${name} must be on or off, got "${raw}"`);
}

/** A settings object frozen all the way down, so no part of a run can change what was asked. */
export function deepFreeze<T extends object>(o: T): Readonly<T> {
  for (const v of Object.values(o)) if (v && typeof v === 'object') deepFreeze(v);
  return Object.freeze(o);
}
