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
/**
 * The kit is one shared folder split by concept: a module under kit/<concept>/
 * may import another concept's ('../sql/…'), never an engine adapter
 * ('../../postgres/…'); only the inner layers lie further out.
 */
const kitToAdapter = {
  regex: '^\\.\\./\\.\\./(?!\\.\\./)',
  message: 'the adapter kit never imports an adapter: engine adapters import kit, not the reverse',
};
const restrict = (files, ...patterns) => ({
  files,
  ignores: ['**/*.test.ts'],
  rules: { 'no-restricted-imports': ['error', { patterns, ...(files.some(isClocked) ? { paths: PORT_IMPORTS } : {}) }] },
});

/**
 * Time, timers and randomness are ports (docs/architecture.md): in these
 * folders they come only from an injected Clock, Timers or Random, so a
 * simulated scheduler can drive the code (issue 42). The system
 * implementations have one home each: src/core/clock.ts, timers.ts, random.ts.
 */
const CLOCKED = ['src/core/**/*.ts', 'src/service/**/*.ts', 'src/client/**/*.ts', 'src/adapters/state-dir/**/*.ts', 'src/adapters/lease/**/*.ts', 'src/adapters/multi/**/*.ts'];
function isClocked(glob) {
  return CLOCKED.includes(glob);
}
const PORTS_MESSAGE = 'take it from an injected port (Clock, Timers, Random; see docs/architecture.md "Time, timers and randomness are ports")';
const RANDOM_FUNCTIONS = ['randomBytes', 'randomFill', 'randomFillSync', 'randomInt', 'randomUUID', 'getRandomValues', 'webcrypto'];
const PORT_IMPORTS = [
  ...['node:timers', 'timers', 'node:timers/promises', 'timers/promises'].map((name) => ({ name, message: PORTS_MESSAGE })),
  ...['node:crypto', 'crypto'].map((name) => ({ name, importNames: RANDOM_FUNCTIONS, message: PORTS_MESSAGE })),
];
const PORT_RULES = {
  'no-restricted-globals': ['error', ...['setTimeout', 'setInterval', 'setImmediate'].map((name) => ({ name, message: PORTS_MESSAGE }))],
  'no-restricted-properties': [
    'error',
    ...[
      ['Date', 'now'],
      ['performance', 'now'],
      ['Math', 'random'],
      ['crypto', 'getRandomValues'],
      ['crypto', 'randomUUID'],
    ].map(([object, property]) => ({ object, property, message: PORTS_MESSAGE })),
  ],
  'no-restricted-syntax': [
    'error',
    { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: `new Date() reads the clock: ${PORTS_MESSAGE}` },
    { selector: 'MemberExpression[property.name=/^(setTimeout|setInterval|setImmediate)$/]', message: PORTS_MESSAGE },
    // Also through require/createRequire or a namespace: any use of node:crypto's random functions.
    { selector: `Identifier[name=/^(${RANDOM_FUNCTIONS.join('|')})$/]`, message: PORTS_MESSAGE },
  ],
};

export const LAYER_RULES = [
  restrict(['src/core/**/*.ts'], layer('ports', 'adapters', 'service', 'app', 'server', 'cli', 'client')),
  restrict(['src/ports/**/*.ts'], layer('adapters', 'service', 'app', 'server', 'cli', 'client')),
  restrict(['src/service/**/*.ts'], layer('adapters', 'app', 'server', 'cli', 'client')),
  restrict(['src/adapters/**/*.ts'], layer('service', 'app', 'server', 'cli', 'client'), siblingAdapter),
  restrict(['src/adapters/kit/*/**/*.ts'], layer('service', 'app', 'server', 'cli', 'client'), kitToAdapter),
  restrict(['src/server/**/*.ts'], layer('adapters', 'app', 'cli', 'client')),
  restrict(['src/cli/**/*.ts'], layer('adapters', 'server', 'client')),
  restrict(['src/client/**/*.ts'], layer('ports', 'adapters', 'service', 'app', 'server', 'cli')),
  // The library entry: generators, codecs, layouts, business numbers; no server or driver code.
  restrict(['src/index.ts'], layer('adapters', 'service', 'app', 'server', 'cli', 'client')),
  // Time, timers and randomness only through injected ports (CLOCKED above).
  { files: CLOCKED, ignores: ['**/*.test.ts'], rules: PORT_RULES },
  // adapters/** has one layer rule; its protocol folders also take the ports' import paths.
  restrict(['src/adapters/state-dir/**/*.ts'], layer('service', 'app', 'server', 'cli', 'client'), siblingAdapter),
  restrict(['src/adapters/lease/**/*.ts'], layer('service', 'app', 'server', 'cli', 'client'), siblingAdapter),
  restrict(['src/adapters/multi/**/*.ts'], layer('service', 'app', 'server', 'cli', 'client'), siblingAdapter),
  {
    // The one home of each system implementation: node's clock, timers and CSPRNG are read here and nowhere else.
    files: ['src/core/clock.ts', 'src/core/timers.ts', 'src/core/random.ts'],
    rules: { 'no-restricted-globals': 'off', 'no-restricted-properties': 'off', 'no-restricted-syntax': 'off' },
  },
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
