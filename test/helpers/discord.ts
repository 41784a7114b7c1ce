/**
 * Discord's published snowflake layout and example, the peer fixture of the
 * custom-layout tests: epoch 1420070400000, 42 bits of ms, 5 worker, 5
 * process, 12 increment; 175928847299117063 is 2016-04-30T11:18:25.796Z,
 * worker 1, process 0, increment 7.
 */
export const DISCORD = {
  epochMs: 1420070400000,
  timeBits: 42,
  fields: [
    { name: 'worker', bits: 5, role: 'node' },
    { name: 'process', bits: 5, role: 'node' },
    { name: 'increment', bits: 12, role: 'sequence' },
  ],
} as const;

/** What `explain` answers for Discord's example under the layout named `discord`. */
export const DISCORD_EXAMPLE = {
  id: '175928847299117063',
  kind: 'snowflake',
  layout: 'discord',
  time: '2016-04-30T11:18:25.796Z',
  timestampMs: 1462015105796,
  worker: 1,
  process: 0,
  sequence: 7,
} as const;
