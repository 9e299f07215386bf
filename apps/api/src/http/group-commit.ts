import type { Database, Queryable } from "@parley/db";
import { postgresClientOf } from "@parley/db";

/** The most requests one shared transaction carries. */
export const GROUP_MAX_MEMBERS = 16;

/** The shared transaction did not commit: its members' work is undone and each must run alone. */
export class GroupAborted extends Error {
  constructor(cause: unknown) {
    super("the shared transaction did not commit", { cause });
    this.name = "GroupAborted";
  }
}

interface Group {
  /** The open transaction, once BEGIN has a connection. */
  transaction: Promise<Queryable>;
  /** Settles when the transaction has committed (or failed to). */
  committed: Promise<void>;
  members: Promise<unknown>[];
  /** Keys of the members: two requests with one key never share a transaction. */
  keys: Set<string>;
  size: number;
  open: boolean;
}

export interface TransactionGroupOptions {
  /** GROUP_MAX_MEMBERS unless told. */
  maxMembers?: number;
  /** Told of every group once it has committed or not (the API's metrics). */
  onSettled?: (members: number, committed: boolean) => void;
}

/**
 * Group commit: the requests that arrive together (in one turn of the event loop, up to
 * GROUP_MAX_MEMBERS) run in one transaction, each its own work, and commit together. Under
 * load this shares BEGIN, COMMIT, the WAL flush and the socket writes of a transaction
 * among its members, and their statements go out together on one connection; an idle
 * server's groups have one member and wait for nothing.
 *
 * Only for work that refuses before it writes: a member that throws (a refusal) does not
 * undo the others', so anything it wrote first would commit with them. A failed statement
 * is another matter: it aborts the transaction for every member, so each member learns
 * `GroupAborted` from `run`, and `runOrAlone` runs it again in a transaction of its own
 * (the group checks the transaction with one last statement, sent with COMMIT, as a
 * failure a member caught would otherwise go unseen).
 */
export class TransactionGroups {
  #open: Group | undefined;
  private readonly maxMembers: number;
  private readonly onSettled: TransactionGroupOptions["onSettled"];

  constructor(
    private readonly db: Database,
    options: TransactionGroupOptions = {},
  ) {
    this.maxMembers = options.maxMembers ?? GROUP_MAX_MEMBERS;
    this.onSettled = options.onSettled;
  }

  /**
   * Runs `work` in the shared transaction (`key`: an idempotency key, which no other member
   * of the group may have); resolves with its result once that transaction
   * has committed. Rejects with what `work` threw (its refusal, the group committed
   * nonetheless), or with GroupAborted when the transaction did not commit.
   */
  async run<T>(key: string | undefined, work: (tx: Queryable) => Promise<T>): Promise<T> {
    const group = this.#groupFor(key);
    if (key !== undefined) group.keys.add(key);
    group.size += 1;
    if (group.size >= this.maxMembers) this.#close(group);
    const result = group.transaction.then(work);
    group.members.push(result);
    result.catch(() => {});
    try {
      await group.committed;
    } catch (error) {
      throw new GroupAborted(error);
    }
    return result;
  }

  /** `run`, and when the group did not commit, `work` again in a transaction of its own. */
  async runOrAlone<T>(key: string | undefined, work: (tx: Queryable) => Promise<T>): Promise<T> {
    try {
      return await this.run(key, work);
    } catch (error) {
      if (error instanceof GroupAborted) return this.db.transaction(work);
      throw error;
    }
  }

  /** The group forming, unless it has this key already: then a new one, as two transactions would be. */
  #groupFor(key: string | undefined): Group {
    const current = this.#open;
    if (current?.open && (key === undefined || !current.keys.has(key))) return current;
    const group = this.#start();
    this.#open = group;
    return group;
  }

  #close(group: Group) {
    group.open = false;
    if (this.#open === group) this.#open = undefined;
  }

  #start(): Group {
    let begun!: (tx: Queryable) => void;
    let notBegun!: (error: unknown) => void;
    const transaction = new Promise<Queryable>((resolve, reject) => {
      begun = resolve;
      notBegun = reject;
    });
    transaction.catch(() => {});
    let closed!: () => void;
    const whenClosed = new Promise<void>((resolve) => (closed = resolve));
    const members: Promise<unknown>[] = [];
    const committed = this.db
      .transaction(async (tx) => {
        begun(tx);
        await whenClosed;
        await Promise.allSettled(members);
        // Behind every member's statements on the connection, with COMMIT right behind it in
        // the same round trip: it fails if any of them failed, and PostgreSQL then turns the
        // COMMIT into a ROLLBACK. Awaited once the transaction has ended.
        const check = postgresClientOf(tx)`select 1`;
        check.catch(() => {});
        return { check };
      })
      .then(({ check }) => check)
      .then(() => {});
    const group: Group = { transaction, committed, members, keys: new Set(), size: 0, open: true };
    // The requests of this turn of the event loop join; the next turn's start another group.
    setImmediate(() => {
      this.#close(group);
      closed();
    });
    group.committed.then(
      () => this.onSettled?.(group.size, true),
      () => this.onSettled?.(group.size, false),
    );
    group.committed.catch(notBegun);
    return group;
  }
}
