/** `npm start`: the short-link service, configured from the environment (see start.ts). */
import { ConfigError, startShortlink } from './start.js';

try {
  const running = await startShortlink(process.env);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void running.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} catch (e) {
  console.error(`shortlink: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(e instanceof ConfigError ? 2 : 1);
}
