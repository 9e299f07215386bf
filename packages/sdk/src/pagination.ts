import type { APIPromise } from "./core.js";

export interface ListEnvelope<T> {
  object: "list";
  data: T[];
  pagination: { has_more: boolean; next_cursor: string | null };
}

/** One page of a list, with the way to the next. */
export class Page<T> {
  readonly data: T[];
  readonly hasMore: boolean;
  readonly nextCursor: string | null;

  constructor(
    envelope: ListEnvelope<T>,
    private readonly fetchPage: (after: string) => Promise<Page<T>>,
  ) {
    this.data = envelope.data;
    this.hasMore = envelope.pagination.has_more;
    this.nextCursor = envelope.pagination.next_cursor;
  }

  /** The next page, or null at the end. */
  async nextPage(): Promise<Page<T> | null> {
    if (!this.hasMore || !this.nextCursor) return null;
    return this.fetchPage(this.nextCursor);
  }
}

/**
 * A list call: await it for the first page, or iterate it for every item across pages
 * (`for await (const contact of parley.contacts.list({ limit: 100 }))`).
 */
export class PagePromise<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  private readonly first: Promise<Page<T>>;

  constructor(load: (after?: string) => APIPromise<ListEnvelope<T>>) {
    const fetchPage = async (after?: string): Promise<Page<T>> =>
      new Page(await load(after), (next) => fetchPage(next));
    this.first = fetchPage();
  }

  // biome-ignore lint/suspicious/noThenProperty: awaitable by design, as a Promise is (await client.x.get(...)).
  then<A = Page<T>, B = never>(
    onfulfilled?: ((value: Page<T>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.first.then(onfulfilled, onrejected);
  }

  /** Every page, in order. */
  async *pages(): AsyncGenerator<Page<T>> {
    let page: Page<T> | null = await this.first;
    while (page) {
      yield page;
      page = await page.nextPage();
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item into an array, at most `max` (10,000 by default) so a huge list cannot exhaust memory. */
  async toArray(options: { max?: number } = {}): Promise<T[]> {
    const max = options.max ?? 10_000;
    const items: T[] = [];
    for await (const item of this) {
      if (items.length >= max) break;
      items.push(item);
    }
    return items;
  }
}
