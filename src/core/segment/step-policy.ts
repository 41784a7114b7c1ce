/**
 * Leaf's dynamic step: a segment that lasted less than 15 minutes doubles the
 * next step (up to a cap), 15-30 minutes keeps it, longer halves it, and the
 * step stored for the tag is the floor. Busy tags thus load rarely; idle tags
 * waste little on restart.
 */
export const FIFTEEN_MINUTES_MS = 15 * 60_000;

export interface StepPolicyInput {
  /** Step of the segment loaded last time, or undefined on the first load. */
  readonly previousStep: number | undefined;
  /** Monotonic time (ms) of the previous load, or undefined on the first load: a wall clock stepped back must not pass for a long segment. */
  readonly previousLoadAt: number | undefined;
  readonly now: number;
  /** The tag's stored step: the minimum. */
  readonly storedStep: number;
  /** The cap for doubling (default 1,000,000). */
  readonly maxStep: number;
}

export function nextStep(input: StepPolicyInput): number {
  const { previousStep, previousLoadAt, now, storedStep, maxStep } = input;
  if (previousStep === undefined || previousLoadAt === undefined) return storedStep;
  const base = Math.max(previousStep, storedStep);
  const lasted = now - previousLoadAt;
  let step: number;
  if (lasted < FIFTEEN_MINUTES_MS) step = Math.min(base * 2, Math.max(maxStep, storedStep));
  else if (lasted < 2 * FIFTEEN_MINUTES_MS) step = base;
  else step = Math.floor(base / 2);
  return Math.max(step, storedStep);
}
