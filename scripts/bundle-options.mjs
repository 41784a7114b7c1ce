// esbuild options that scripts/bundle.mjs gives `serve`'s entry, and bench/startup-floor.ts gives the floor under it
// (the parts serve needs, bundled as serve bundles them), so the two are built alike.
//
// Whitespace and syntax minified: a start compiles about 0.7 MB instead of 1.1 MB of the HTTP chunk (fastify, pino,
// prom-client and the routes), and reached /readyz about 3% sooner (16 interleaved pairs, BENCHMARKS.md "Start-up").
// Identifiers are kept: a stack trace in the log still names its functions.
export const serveMinify = { minifyWhitespace: true, minifySyntax: true };
