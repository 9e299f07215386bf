/** An attempt that takes this long marks its endpoint slow (receivers answer well within it). */
export const SLOW_ATTEMPT_MS = 1_000;
/** How long an endpoint stays slow after its last slow attempt, unless a quick one comes first. */
export const SLOW_MEMORY_MS = 60_000;

export interface EndpointLimits {
  /** Deliveries to one endpoint at once. */
  perEndpoint: number;
  /** Deliveries at once to an endpoint whose last attempt was slow (a timeout, a receiver that hangs). */
  perSlowEndpoint: number;
}

/**
 * How many deliveries to one webhook endpoint this worker runs at once. Without a cap, a
 * slow endpoint with a backlog (one that never answers holds a slot for the whole 10 s
 * timeout) takes every slot of the worker, and every other endpoint waits behind it.
 *
 * Every `deliver_webhook` job carries its endpoint id as its graphile-worker flag; while an
 * endpoint is at its cap, `full()` lists it and the worker does not fetch its jobs
 * (`forbiddenFlags`): they wait in the queue without holding a slot. Several idle slots
 * may fetch at the same moment, before any of them counts: a job that finds its endpoint
 * full when it starts is put back (`take()` is false) rather than run.
 */
export class EndpointSlots {
  private readonly running = new Map<string, number>();
  /** Endpoints whose last attempt was slow: until when they count as slow. */
  private readonly slowUntil = new Map<string, number>();

  constructor(
    readonly limits: EndpointLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes a slot for the endpoint; false when it already has as many deliveries running as it may. */
  take(endpointId: string): boolean {
    const running = this.running.get(endpointId) ?? 0;
    if (running >= this.capOf(endpointId)) return false;
    this.running.set(endpointId, running + 1);
    return true;
  }

  /** Gives the slot back, with how long the attempt took. */
  release(endpointId: string, durationMs: number): void {
    const running = (this.running.get(endpointId) ?? 1) - 1;
    if (running > 0) this.running.set(endpointId, running);
    else this.running.delete(endpointId);
    if (durationMs >= SLOW_ATTEMPT_MS) this.slowUntil.set(endpointId, this.now() + SLOW_MEMORY_MS);
    else this.slowUntil.delete(endpointId);
  }

  /** The endpoints at their cap: the flags whose jobs this worker does not fetch now. */
  full(): string[] {
    const ids: string[] = [];
    for (const [endpointId, running] of this.running) if (running >= this.capOf(endpointId)) ids.push(endpointId);
    return ids;
  }

  private capOf(endpointId: string): number {
    const until = this.slowUntil.get(endpointId);
    if (until === undefined) return this.limits.perEndpoint;
    if (until > this.now()) return this.limits.perSlowEndpoint;
    this.slowUntil.delete(endpointId);
    return this.limits.perEndpoint;
  }
}

/**
 * By default one endpoint may hold all of the worker's slots but a fifth (8 of 10), so a
 * single fast endpoint keeps most of the throughput and others always find a slot; a slow
 * endpoint a fifth (2 of 10), so several slow ones still leave room.
 */
export function defaultEndpointLimits(concurrency: number): EndpointLimits {
  const fifth = Math.max(1, Math.floor(concurrency / 5));
  return { perEndpoint: Math.max(1, concurrency - fifth), perSlowEndpoint: fifth };
}
