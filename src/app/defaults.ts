/** Defaults the field table and the CLI's help both show; light, so the CLI can name them without loading the config schema. */
export const DEFAULT_STORE_URL = 'sqlite:./data/sequoia.db';
export const DEFAULT_STATE_DIR = './data';

/** The worker-id-provider grammar as the help texts show it (parsed in worker-id-provider-spec.ts, which quotes this). */
export const WORKER_ID_PROVIDER_SPECS =
  'lease, static:N, k8s-ordinal[:OFFSET], worker-node[:SQL_URL[?table=NAME]], zookeeper:HOST:PORT[,HOST:PORT…][/ROOT][?reclaim-after=SECONDS&node=NAME&report-interval=MS&leaf=NAME] or etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…][/PREFIX][?cacert=PATH&cert=PATH&key=PATH]';
