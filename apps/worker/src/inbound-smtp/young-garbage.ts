import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type Collect = (options: { type: "minor" }) => void;

/**
 * A counter of bytes read that collects V8's young generation (a scavenge, a millisecond
 * or two) every `intervalBytes`. Node reads a socket into a new buffer per read (64 KiB)
 * and smtp-server's parser copies each into another: outside the heap, so V8 only collects
 * them once 64 MB of such buffers were made since its last full collection: 100 MB of
 * DATA, refused and kept nowhere, still raised the process's RSS by 32 to 48 MB. Each is
 * garbage once read (or written to the message's temporary file), still young: a
 * scavenge frees them all, and every 4 MiB the rise was 8 to 11 MB.
 */
export function scavengeEvery(intervalBytes: number): (bytes: number) => void {
  const collect = youngCollection();
  let since = 0;
  return (bytes) => {
    since += bytes;
    if (since < intervalBytes) return;
    since = 0;
    collect({ type: "minor" });
  };
}

/** V8's `gc` function: the global one under `--expose-gc`, else one exposed to a new context only. */
function youngCollection(): Collect {
  const exposed = (globalThis as { gc?: Collect }).gc;
  if (exposed) return exposed;
  setFlagsFromString("--expose-gc");
  try {
    return runInNewContext("gc") as Collect;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
}
