import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Functions longer than a screen, found by parsing every file under a folder with the TypeScript
 * compiler. A function's length is its lines less those only data literals occupy (an object,
 * array or template literal holding no function): a table is read at a glance, code is not.
 */
export const MAX_LINES = 80;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'gen' || name === 'node_modules' ? [] : files(path);
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

/** Every function under `dir` past MAX_LINES, as `<label>/<file>:<line> <name>: <n> lines`. */
export function longFunctions(dir: string, label: string): string[] {
  const found: string[] = [];
  for (const path of files(dir)) {
    const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node): void => {
      if (isFunction(n)) {
        const lines = codeLines(n, file);
        const name = n.name?.getText(file) ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(file) : '(anonymous)');
        const at = file.getLineAndCharacterOfPosition(n.getStart(file)).line + 1;
        if (lines > MAX_LINES) found.push(`${label}/${relative(dir, path)}:${at} ${name}: ${lines} lines`);
      }
      ts.forEachChild(n, visit);
    };
    visit(file);
  }
  return found;
}
