// Writes the configuration table into docs/configuration.md from the built field table (run through `npm run docs:config`).
import { readFileSync, writeFileSync } from 'node:fs';
import { URL } from 'node:url';
import { withConfigurationTable } from '../dist/app/config-docs.js';

const page = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(page, withConfigurationTable(readFileSync(page, 'utf8')));
