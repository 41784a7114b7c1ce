// `node --import ./register.mjs …` traces which modules a command loads (see hooks.mjs).
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);
