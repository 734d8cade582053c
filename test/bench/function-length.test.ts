import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * bench/ is read by whoever has to trust its figures: no function in it runs longer than 80 lines,
 * not counting lines that are pure data (an object, array or template literal holding no
 * function), so each step of a benchmark can be read on one screen.
 */
const MAX_LINES = 80;
const BENCH = new URL('../../../bench/', import.meta.url).pathname;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

const isFunction = (n: ts.Node): n is ts.FunctionLikeDeclaration & { body: ts.Node } =>
  (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) ||
    ts.isConstructorDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n)) && n.body !== undefined;

const isData = (n: ts.Node): boolean =>
  ts.isObjectLiteralExpression(n) || ts.isArrayLiteralExpression(n) || ts.isTemplateExpression(n) || ts.isNoSubstitutionTemplateLiteral(n);

function holdsFunction(n: ts.Node): boolean {
  return isFunction(n) || (ts.forEachChild(n, (c) => holdsFunction(c) || undefined) ?? false);
}

/** Lines of a function's body, less the lines only data literals without functions occupy. */
function codeLines(fn: ts.Node, file: ts.SourceFile): number {
  const line = (pos: number) => file.getLineAndCharacterOfPosition(pos).line;
  const first = line(fn.getStart(file));
  const last = line(fn.getEnd());
  const data = new Set<number>();
  const visit = (n: ts.Node): void => {
    if (isData(n) && !holdsFunction(n)) {
      // The literal's first and last lines usually carry code too (`const x = {`, `});`).
      for (let l = line(n.getStart(file)) + 1; l < line(n.getEnd()); l++) data.add(l);
      return;
    }
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(fn, visit);
  return last - first + 1 - data.size;
}

export function longFunctions(): { where: string; lines: number }[] {
  const found: { where: string; lines: number }[] = [];
  for (const path of files(BENCH)) {
    const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node): void => {
      if (isFunction(n)) {
        const lines = codeLines(n, file);
        const name = n.name?.getText(file) ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(file) : '(anonymous)');
        const at = file.getLineAndCharacterOfPosition(n.getStart(file)).line + 1;
        if (lines > MAX_LINES) found.push({ where: `bench/${relative(BENCH, path)}:${at} ${name}`, lines });
      }
      ts.forEachChild(n, visit);
    };
    visit(file);
  }
  return found;
}

t.test(`no function in bench/ is longer than ${MAX_LINES} lines of code`, async (t) => {
  const long = longFunctions();
  t.same(long.map((f) => `${f.where}: ${f.lines} lines`), [], 'split these into named steps');
});
