/**
 * The package version. A literal, not read from package.json at run time:
 * the library entry is bundled and must not find files by relative path.
 * src/version.test.ts fails when it drifts from package.json.
 */
export const VERSION = '0.1.0';
