/**
 * How many images this process decodes and re-encodes at once. Decoding costs by pixels:
 * each image holds a core and up to a few hundred MB while it runs, so uploads beyond the
 * slots wait their turn, first come first served, instead of taking every core and all
 * the memory at once (`IMAGE_PROCESSING_CONCURRENCY`).
 */
export class ImageSlots {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(readonly size: number) {}

  /** Images being processed now: never more than `size`. */
  get inUse(): number {
    return this.running;
  }

  /** Images waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) {
      // The slot is handed over by `release`, which does not lower `running`.
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private release() {
    const next = this.queue.shift();
    if (next) next();
    else this.running--;
  }
}
