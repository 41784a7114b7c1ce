/**
 * Time, injected so tests can freeze, jump or rewind it. Two readings:
 * - `now()`: wall-clock milliseconds since the Unix epoch. For what is a
 *   date (IDs' time bits, timestamps shown or stored, leases other processes
 *   read). It steps when NTP or an operator sets the clock.
 * - `monotonic()`: milliseconds from an arbitrary origin that never steps.
 *   For every interval and timeout inside a process (rate limits, retry
 *   delays, caches, "at most once a second"): a wall clock stepped back a day
 *   would otherwise hold such a wait for a day.
 */
export interface Clock {
  now(): number;
  /** Monotonic ms (arbitrary origin). Optional for custom clocks: `monotonicMs` falls back to performance.now(). */
  monotonic?(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

/** The clock's monotonic reading (performance.now() for a clock that has none). Use it for every interval and timeout. */
export function monotonicMs(clock: Clock): number {
  return clock.monotonic ? clock.monotonic() : performance.now();
}
