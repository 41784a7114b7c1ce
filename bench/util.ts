/** Shared benchmark helpers: medians, formatting, child servers. */
import { type ChildProcess, spawn } from 'node:child_process';

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

export const fmt = (n: number): string => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : n.toFixed(1));
export const pct = (a: number, b: number): string => `${((a / b) * 100).toFixed(0)}%`;

/** Starts a node process and resolves with its URL once it prints `"url":"…"` or `LISTENING <url>`. */
export async function startChild(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`child did not start: ${out}`)), 20_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:[^"]+)"|LISTENING (http:\S+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve((m[1] ?? m[2]) as string);
      }
    });
    child.on('exit', (c) => reject(new Error(`child exited ${c}: ${out}`)));
  });
  child.stdout?.resume();
  return { child, url };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((r) => {
    child.once('exit', () => r());
    child.kill('SIGTERM');
  });
}
