/** The benchmarks' reports: numbers as people read them, markdown tables, result files. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULTS } from './paths.js';

export function fmt(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return '–';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function mdTable(head: string[], rows: (string | number)[][], align?: ('l' | 'r')[]): string {
  const a = align ?? head.map((_, i) => (i === 0 ? 'l' : 'r'));
  const line = (cells: (string | number)[]) => '| ' + cells.join(' | ') + ' |';
  return [line(head), line(a.map((x) => (x === 'l' ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

export function writeResults(name: string, json: unknown, md: string): { json: string; md: string } {
  mkdirSync(RESULTS, { recursive: true });
  const j = join(RESULTS, `${name}.json`);
  const m = join(RESULTS, `${name}.md`);
  writeFileSync(j, JSON.stringify(json, null, 2) + '\n');
  writeFileSync(m, md + '\n');
  return { json: j, md: m };
}
