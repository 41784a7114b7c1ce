/**
 * Processes this harness started and has not seen exit: killed when the
 * harness itself exits, however it ends (an exception, Ctrl-C, SIGTERM from
 * CI), so no server or private store outlives a run. Only pids recorded here,
 * i.e. only processes this run started.
 */
const live = new Map<number, boolean>();
let listener: ((targets: readonly number[]) => void) | undefined;

/** Told the kill targets (negative for a process group) whenever they change: the watchdog kills them if it must end the run. */
export function onTargets(fn: (targets: readonly number[]) => void): void {
  listener = fn;
}

const changed = (): void => listener?.([...live].map(([pid, group]) => (group ? -pid : pid)));

export function track(pid: number | undefined, group: boolean): void {
  if (pid === undefined) return;
  live.set(pid, group);
  changed();
}

export function untrack(pid: number | undefined): void {
  if (pid === undefined) return;
  live.delete(pid);
  changed();
}

function reap(): void {
  for (const [pid, group] of live) {
    try {
      process.kill(group ? -pid : pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

process.once('exit', reap);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    reap();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  });
}
