/**
 * Gate for tests that need a real server (PostgreSQL, MariaDB, Redis,
 * ZooKeeper, Chromium...). When the service is absent, the suite is skipped
 * with a loud message, except under SEQUOIA_REQUIRE_SERVICES=1 (set by CI),
 * where absence is a failure.
 */
import { describe, it } from 'vitest';

export const servicesRequired = process.env.SEQUOIA_REQUIRE_SERVICES === '1';

/**
 * Runs `probe` once (at collection time). Returns a `describe` that runs the
 * suite when the probe succeeded; otherwise skips it with the reason, or, when
 * services are required, registers a failing suite naming the reason.
 */
export async function describeWithService(service: string, probe: () => Promise<unknown>): Promise<(name: string, fn: () => void) => void> {
  let reason: string | undefined;
  try {
    await probe();
  } catch (e) {
    reason = e instanceof Error ? e.message : String(e);
  }
  if (reason === undefined) return (name, fn) => describe(name, fn);
  if (servicesRequired) {
    return (name) =>
      describe(name, () => {
        it(`needs ${service}`, () => {
          throw new Error(`${service} is required (SEQUOIA_REQUIRE_SERVICES=1) but unreachable: ${reason}`);
        });
      });
  }
  console.warn(`[sequoia tests] SKIPPING ${service} suites: ${service} unreachable (${reason})`);
  return (name, fn) => describe.skipIf(true)(`${name} [skipped: ${service} unreachable]`, fn);
}
