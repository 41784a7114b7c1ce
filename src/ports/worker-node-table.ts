/**
 * uid-generator's `WORKER_NODE` table (baidu/uid-generator, WORKER_NODE.sql):
 * one row per start, its AUTO_INCREMENT `ID` the worker id. Sequoia inserts
 * its rows with the very insert of `WorkerNodeDAO.addWorkerNode`, so Baidu's
 * generators and Sequoia's servers draw worker ids from one sequence and
 * never get the same one.
 */
export interface WorkerNodeRow {
  /** HOST_NAME, VARCHAR(64). */
  readonly hostName: string;
  /** PORT, VARCHAR(64): uid-generator writes a port, or `millis-random` on a machine. */
  readonly port: string;
  /** TYPE: uid-generator's WorkerNodeType, CONTAINER 1, ACTUAL 2. */
  readonly type: 1 | 2;
  /** LAUNCH_DATE, a DATE: `YYYY-MM-DD`. */
  readonly launchDate: string;
}

export interface WorkerNodeTable {
  /** e.g. `mysql WORKER_NODE`: for logs and the provider's kind. */
  readonly kind: string;
  /** Inserts the row and answers its generated ID (text: a BIGINT). */
  addWorkerNode(row: WorkerNodeRow): Promise<string>;
  close(): Promise<void>;
}
