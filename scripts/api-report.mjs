/**
 * The public API of the three entries, one line per export (kind and name),
 * from the TypeScript sources: `npm run api:report` writes api/exports.txt;
 * test/architecture/api-report.test.ts fails while the file differs, so a
 * change to what users can import is a visible diff in review.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
export const ENTRIES = [
  [pkg.name, 'src/index.ts'],
  [`${pkg.name}/server`, 'src/app/index.ts'],
  [`${pkg.name}/client`, 'src/client/index.ts'],
];
export const REPORT = join(ROOT, 'api', 'exports.txt');

function kindOf(checker, sym) {
  const s = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
  const f = s.flags;
  if (f & ts.SymbolFlags.Class) return 'class';
  if (f & ts.SymbolFlags.Function) return 'function';
  if (f & ts.SymbolFlags.Enum) return 'enum';
  if (f & (ts.SymbolFlags.Variable | ts.SymbolFlags.Property)) return 'const';
  if (f & ts.SymbolFlags.Interface) return 'interface';
  if (f & ts.SymbolFlags.TypeAlias) return 'type';
  return 'other';
}

export function report() {
  const program = ts.createProgram(
    ENTRIES.map(([, file]) => join(ROOT, file)),
    { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, noEmit: true, skipLibCheck: true },
  );
  const checker = program.getTypeChecker();
  const out = ['# The public API: every name each entry exports (npm run api:report).', ''];
  for (const [name, file] of ENTRIES) {
    const sf = program.getSourceFile(join(ROOT, file));
    const mod = sf && checker.getSymbolAtLocation(sf);
    if (!mod) throw new Error(`api-report: cannot read ${file}`);
    out.push(`## ${name}`, '');
    const lines = checker.getExportsOfModule(mod).map((s) => `${kindOf(checker, s)} ${s.name}`);
    out.push(...lines.sort((a, b) => a.split(' ')[1].localeCompare(b.split(' ')[1])), '');
  }
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(dirname(REPORT), { recursive: true });
  writeFileSync(REPORT, report());
  console.log(`api-report: wrote ${REPORT}`);
}
