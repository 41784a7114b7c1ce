/**
 * The command line of a single-member etcd (Debian's etcd-server) on its own
 * client and peer URLs: the TLS contract test and the torture harness each
 * start one (.ci/etcd.sh starts the shared one).
 */
export function etcdMemberArgs(name: string, dataDir: string, client: string, peer: string): string[] {
  return [
    '--name',
    name,
    '--data-dir',
    dataDir,
    '--listen-client-urls',
    client,
    '--advertise-client-urls',
    client,
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--initial-cluster',
    `${name}=${peer}`,
  ];
}
