/**
 * A stand-in of Leaf-snowflake's worker-id holder, its ZooKeeper calls
 * transcribed from Meituan-Dianping/Leaf SnowflakeZookeeperHolder.init():
 *
 *   stat = checkExists(PATH_FOREVER)                       PATH_FOREVER = /snowflake/{leaf.name}/forever
 *   if stat == null: zk_AddressNode = createNode(); workerID stays 0   (a fresh tree)
 *   else: for key in getChildren(PATH_FOREVER): nodeKey = key.split("-"); nodeMap[nodeKey[0]] = parseInt(nodeKey[1])
 *         own = nodeMap[ip:port]
 *         own: checkInitTimeStamp (getData: refuse when endpoint.timestamp > now); workerID = own
 *         none: createNode(); workerID = parseInt(newNode.split("-")[1])
 *   createNode = create().creatingParentsIfNeeded().withMode(PERSISTENT_SEQUENTIAL)
 *                  .forPath(PATH_FOREVER + "/" + ip:port + "-", {"ip","port","timestamp"})
 *   ScheduledUploadData: every 3 s (first after 1 s) setData(node, {"ip","port","timestamp": now})
 */
import zookeeper from 'node-zookeeper-client';

export interface LeafHolder {
  readonly workerId: number;
  readonly node: string;
  stop(): void;
}

function call<T>(f: (cb: (e: Error | zookeeper.Exception | null, r: T) => void) => void): Promise<T> {
  return new Promise((res, rej) => f((e, r) => (e ? rej(e instanceof Error ? e : new Error(e.toString())) : res(r))));
}

export async function startLeafHolder(connect: string, leafName: string, ip: string, port: string): Promise<LeafHolder> {
  const client = zookeeper.createClient(connect, { sessionTimeout: 6000, retries: 4 });
  await new Promise<void>((res) => {
    client.once('connected', () => res());
    client.connect();
  });
  const forever = `/snowflake/${leafName}/forever`;
  const listenAddress = `${ip}:${port}`;
  const buildData = () => Buffer.from(JSON.stringify({ ip, port, timestamp: Date.now() }));
  const createNode = async (): Promise<string> => {
    await call<string>((cb) => client.mkdirp(forever, cb)); // creatingParentsIfNeeded
    return call<string>((cb) => client.create(`${forever}/${listenAddress}-`, buildData(), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, cb));
  };
  let workerId = 0;
  let node: string;
  const stat = await call<zookeeper.Stat | null>((cb) => client.exists(forever, cb));
  if (stat === null) {
    node = await createNode();
  } else {
    const nodeMap = new Map<string, number>();
    const realNode = new Map<string, string>();
    for (const key of await call<string[]>((cb) => client.getChildren(forever, cb))) {
      const nodeKey = key.split('-');
      realNode.set(nodeKey[0] as string, key);
      nodeMap.set(nodeKey[0] as string, Number.parseInt(nodeKey[1] as string, 10));
    }
    const own = nodeMap.get(listenAddress);
    if (own !== undefined) {
      node = `${forever}/${realNode.get(listenAddress)}`;
      workerId = own;
      const data = await new Promise<Buffer>((res, rej) => client.getData(node, (e, d) => (e ? rej(new Error(e.toString())) : res(d))));
      if ((JSON.parse(data.toString()) as { timestamp: number }).timestamp > Date.now()) {
        client.close();
        throw new Error('init timestamp check error,forever node timestamp gt this node time');
      }
    } else {
      node = await createNode();
      workerId = Number.parseInt(node.split('-')[1] as string, 10);
    }
  }
  let lastUpdateTime = 0;
  const update = () => {
    if (Date.now() < lastUpdateTime) return;
    client.setData(node, buildData(), -1, (e) => {
      if (!e) lastUpdateTime = Date.now();
    });
  };
  let timer: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    update();
    timer = setInterval(update, 3000);
  }, 1000);
  return {
    workerId,
    node,
    stop: () => {
      clearTimeout(first);
      if (timer) clearInterval(timer);
      client.close();
    },
  };
}
