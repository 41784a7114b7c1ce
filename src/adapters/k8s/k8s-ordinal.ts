/**
 * `k8s-ordinal`: a StatefulSet pod is named `<set>-<ordinal>` (its hostname),
 * stable across restarts. The worker id is the ordinal plus an offset (give
 * each StatefulSet sharing an id space its own offset range).
 */
import { InvalidArgumentError } from '../../core/errors.js';

export function k8sOrdinal(host: string, offset = 0): number {
  const m = /-([0-9]{1,9})$/.exec(host);
  if (!m)
    throw new InvalidArgumentError(`k8s-ordinal: hostname ${JSON.stringify(host)} does not end in -<ordinal> (is this a StatefulSet pod?)`);
  return Number(m[1]) + offset;
}
