/** Wall-clock milliseconds since the Unix epoch. Injected so tests can freeze, jump or rewind time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
