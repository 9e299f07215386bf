/**
 * Waits for `work` to settle, but no longer than `ms`: for closing what a dead runner may
 * never hand back. Its failure is not the caller's concern (the thing is being left behind),
 * and the timer is cleared, so a close that settles at once keeps no process alive.
 */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([work.catch(() => {}), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
