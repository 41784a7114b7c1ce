/**
 * Issue 41: no function over 70 lines in src/ unless a comment right above it
 * says why it must be "one piece", and at most three such. Long functions hide
 * seams; this holds the line the refactor drew. Every function, method, accessor,
 * constructor and arrow of src/'s non-test files is measured from its first line
 * to its last.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');
const LIMIT = 70;
const MAX_EXCEPTIONS = 3;

interface LongFunction {
  where: string;
  name: string;
  lines: number;
  justified: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name !== undefined && !ts.isComputedPropertyName(node.name)) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) &&
    parent.name !== undefined
  ) {
    return parent.name.getText();
  }
  return '(anonymous)';
}

/** The comment lines just above `line` (0-based), joined; '' when the line above is code. */
function commentAbove(lines: string[], line: number): string {
  const block: string[] = [];
  for (let i = line - 1; i >= 0; i--) {
    const text = lines[i]!.trim();
    if (!(text.startsWith('//') || text.startsWith('/*') || text.startsWith('*'))) break;
    block.unshift(text);
  }
  return block.join(' ');
}

function longFunctions(): LongFunction[] {
  const found: LongFunction[] = [];
  for (const path of sourceFiles(SRC)) {
    const text = readFileSync(path, 'utf8');
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const lines = text.split('\n');
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
        const fn = node as ts.FunctionLikeDeclaration;
        const start = file.getLineAndCharacterOfPosition(fn.getStart(file)).line;
        const end = file.getLineAndCharacterOfPosition(fn.getEnd()).line;
        const length = end - start + 1;
        if (length > LIMIT) {
          found.push({
            where: `${relative(ROOT, path)}:${start + 1}`,
            name: nameOf(fn),
            lines: length,
            justified: /one piece/i.test(commentAbove(lines, start)),
          });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

describe(`functions in src/ over ${LIMIT} lines`, () => {
  const long = longFunctions();
  const listing = long.map((f) => `${f.where} ${f.name} (${f.lines} lines)${f.justified ? '' : ' — no "one piece" comment'}`);

  it(`are at most ${MAX_EXCEPTIONS}`, () => {
    expect(listing.length, listing.join('\n')).toBeLessThanOrEqual(MAX_EXCEPTIONS);
  });

  it('each say, in a comment right above, why they must be one piece', () => {
    expect(listing.filter((l) => l.includes('no "one piece"'))).toEqual([]);
  });
});
