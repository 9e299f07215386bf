/**
 * Each message's answer as JSON (UTF-8 bytes, as a page is written), by the version of the
 * row it was written from: a page read again (an inbox polling a conversation's newest
 * messages) reads again and writes again only the messages that changed. A version is the
 * row's `xmin`, the transaction that wrote it: every UPDATE writes a new one, so a changed
 * message is never served from here, even one changed twice in a millisecond (`updated_at`
 * would not tell). Every page still reads its messages' versions from PostgreSQL; only
 * their content is read no more. A message with an attachment is never kept: its answer
 * holds the attachment's own row. One text per message, the last version's; at most
 * `maxEntries` messages, the first kept dropped first.
 *
 * Only a conversation read again soon is worth its texts (`admits`): one whose page was
 * read among this process's last `recentReads` pages. Traffic spread over more
 * conversations than the texts can hold would otherwise keep every page it reads and drop
 * it again before its next read: all of the upkeep, none of the hits (bench/notebook.md,
 * "the kept texts' admission").
 */
export class MessageTexts {
  /** By message id: the text of the last version written, first written first. */
  private readonly texts = new Map<string, { version: string; text: Buffer }>();
  /** The conversations of the last `recentReads` pages read, oldest first (a ring), and how often each is in it. */
  private readonly recent: (string | undefined)[];
  private recentNext = 0;
  private readonly recentCounts = new Map<string, number>();

  constructor(
    private readonly maxEntries = 10_000,
    recentReads = 256,
  ) {
    this.recent = new Array(recentReads);
  }

  /**
   * Records a read of the conversation's page; true when it was read among the last
   * `recentReads` pages before this one: its messages' texts are then worth keeping.
   */
  admits(conversationId: string): boolean {
    const seen = this.recentCounts.has(conversationId);
    const dropped = this.recent[this.recentNext];
    if (dropped !== undefined) {
      const count = (this.recentCounts.get(dropped) ?? 1) - 1;
      if (count === 0) this.recentCounts.delete(dropped);
      else this.recentCounts.set(dropped, count);
    }
    this.recent[this.recentNext] = conversationId;
    this.recentNext = (this.recentNext + 1) % this.recent.length;
    this.recentCounts.set(conversationId, (this.recentCounts.get(conversationId) ?? 0) + 1);
    return seen;
  }

  /**
   * How many of the last `recentReads` pages read were of this conversation. From two, its
   * page was admitted at least once since: its messages' texts are likely kept.
   */
  recentReadsOf(conversationId: string): number {
    return this.recentCounts.get(conversationId) ?? 0;
  }

  get(id: string, version: string): Buffer | undefined {
    const kept = this.texts.get(id);
    return kept?.version === version ? kept.text : undefined;
  }

  /** Keeps `text` for this version of the message, in place of an older version's. */
  set(id: string, version: string, text: Buffer): void {
    const kept = this.texts.get(id);
    if (kept) {
      kept.version = version;
      kept.text = text;
      return;
    }
    if (this.texts.size >= this.maxEntries) {
      const oldest = this.texts.keys().next();
      if (!oldest.done) this.texts.delete(oldest.value);
    }
    this.texts.set(id, { version, text });
  }

  get size(): number {
    return this.texts.size;
  }
}
