import { spawnSync } from 'node:child_process';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Lint what the project owns: files git does not track (a newcomer's scratch
 * files in the checkout) are ignored. A new file is linted once it is added
 * (`git add`); outside a git checkout nothing extra is ignored.
 */
function untracked() {
  const r = spawnSync('git', ['ls-files', '--others', '--exclude-standard', '-z'], { cwd: import.meta.dirname, encoding: 'utf8' });
  if (r.status !== 0 || typeof r.stdout !== 'string') return [];
  return r.stdout.split('\0').filter((f) => f !== '');
}

/**
 * The layers (docs/architecture.md): each folder may import only the layers
 * inward of it. A layer is recognised by its folder name in the import path,
 * relative or not, so '../adapters/x.js' and '../../adapters/x.js' are the same.
 */
const layer = (...names) => ({
  regex: `(^|/)(${names.join('|')})/`,
  message: `this layer may not import ${names.join(', ')} (see docs/architecture.md: dependencies point inward only)`,
});
/** Any relative import into a sibling adapter folder; the shared kit and the inner layers stay allowed. */
const siblingAdapter = {
  regex: '^\\.\\./(?!kit/|\\.\\./)',
  message: 'adapters never import each other: share code through src/adapters/kit/',
};
const restrict = (files, ...patterns) => ({
  files,
  ignores: ['**/*.test.ts'],
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

export const LAYER_RULES = [
  restrict(['src/core/**/*.ts'], layer('ports', 'adapters', 'service', 'app', 'server', 'cli', 'client')),
  restrict(['src/ports/**/*.ts'], layer('adapters', 'service', 'app', 'server', 'cli', 'client')),
  restrict(['src/service/**/*.ts'], layer('adapters', 'app', 'server', 'cli', 'client')),
  restrict(['src/adapters/**/*.ts'], layer('service', 'app', 'server', 'cli', 'client'), siblingAdapter),
  restrict(['src/server/**/*.ts'], layer('adapters', 'app', 'cli', 'client')),
  restrict(['src/cli/**/*.ts'], layer('adapters', 'server', 'client')),
  restrict(['src/client/**/*.ts'], layer('ports', 'adapters', 'service', 'app', 'server', 'cli')),
  // The library entry: generators, codecs, layouts, business numbers; no server or driver code.
  restrict(['src/index.ts'], layer('adapters', 'service', 'app', 'server', 'cli', 'client')),
  {
    // Ports are interfaces and types: no value may be defined or imported there.
    files: ['src/ports/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'VariableDeclaration', message: 'ports hold types only: put values in core or the adapter kit' },
        { selector: 'FunctionDeclaration', message: 'ports hold types only: put functions in core or the adapter kit' },
        { selector: 'ClassDeclaration', message: 'ports hold types only: put classes in core or an adapter' },
        { selector: 'ImportDeclaration[importKind="value"]', message: 'ports hold types only: use import type' },
      ],
    },
  },
];

export default tseslint.config(
  { ignores: untracked() },
  { ignores: ['dist/**', 'dist-bench/**', 'dist-bench-tmp/**', 'dist-all/**', 'dist-torture/**', 'dist-sim/**', 'torture-out/**', 'node_modules/**', 'data/**', 'test-artifacts/**', 'examples/*/dist/**', 'examples/*/data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  ...LAYER_RULES,
);
