import { setTimeout as sleep } from "node:timers/promises";

/**
 * Paces the sends of this worker on each channel to its provider's rate (WhatsApp: the
 * messages a second of a business phone number): sends on one channel leave at least
 * 1/rate s apart, whichever of the worker's jobs makes them, so no second holds more than
 * `rate` of them. Each worker paces its own sends: with several workers, a channel's
 * provider may see up to their number times the rate, and answers the excess with a
 * temporary fault (WhatsApp's 130429), which is retried.
 */
export class ChannelPace {
  /** Per channel, when its next send may leave (ms, `now()`'s clock). */
  private readonly nextAt = new Map<string, number>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Resolves when a send on the channel may leave; at once for a channel without a rate. */
  async take(channelId: string, messagesPerSecond: number | undefined): Promise<void> {
    if (!messagesPerSecond || messagesPerSecond <= 0) return;
    const now = this.now();
    const at = Math.max(now, this.nextAt.get(channelId) ?? now);
    this.nextAt.set(channelId, at + 1000 / messagesPerSecond);
    this.forgetIdle(now);
    if (at > now) await sleep(at - now);
  }

  /** Channels whose pace lies in the past hold nothing: dropped once the map grows. */
  private forgetIdle(now: number) {
    if (this.nextAt.size < 1_000) return;
    for (const [channelId, at] of this.nextAt) if (at < now) this.nextAt.delete(channelId);
  }
}
