/**
 * A small tmpfs mounted for a test (a full disk under the state directory).
 * Needs the right to mount (root, or CAP_SYS_ADMIN): `canMount()` says whether
 * this machine allows it, so a suite can skip instead of failing elsewhere.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let allowed: boolean | undefined;

export function canMount(): boolean {
  if (allowed !== undefined) return allowed;
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    allowed = true;
  } catch {
    allowed = false;
  }
  rmSync(dir, { recursive: true, force: true });
  return allowed;
}

export interface SmallFs {
  readonly dir: string;
  /** Fills every free byte with a file of its own. */
  fill(): void;
  /** Removes the filler: the space is back. */
  free(): void;
  unmount(): void;
}

export function mountSmallFs(sizeKiB: number): SmallFs {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-smallfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir]);
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(4096, 0x5a);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
