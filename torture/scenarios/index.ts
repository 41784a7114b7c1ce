/** Every scenario, in the order the sets run them. */
import type { Scenario } from '../harness/context.js';
import { restorePostgresSkewed, restoreSqlite, restoreSqliteSkewed } from './restore.js';

export const SCENARIOS: readonly Scenario[] = [restoreSqlite, restoreSqliteSkewed, restorePostgresSkewed];
