/** One value's place in an InFlightList; `remove` takes it out. */
export interface InFlightEntry<T extends object> {
  value: T | undefined;
  prev: InFlightEntry<T> | undefined;
  next: InFlightEntry<T> | undefined;
}

/**
 * The values of a long-lived process's work in flight (requests, writes), for structures
 * that see one added and removed per request: a doubly linked list whose removed entries
 * keep no reference at all.
 *
 * Not a Set or a Map: as one churns, V8 rebuilds its table every few dozen changes and
 * leaves the old table pointing at the new one (for iterators still on it). An old table
 * that lived long enough to be promoted (a quiet moment) then holds every later table
 * through each scavenge, and with them the values each held when it was rebuilt: every
 * request's objects survived the young generation and were promoted. Measured on a page
 * load: 5 to 6 MB promoted per scavenge, scavenges of 8 ms and four mark-compacts a
 * second (bench/notebook.md, "2026-11-29, evening").
 */
export class InFlightList<T extends object> {
  #first: InFlightEntry<T> | undefined;
  #last: InFlightEntry<T> | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(value: T): InFlightEntry<T> {
    const entry: InFlightEntry<T> = { value, prev: this.#last, next: undefined };
    if (this.#last) this.#last.next = entry;
    else this.#first = entry;
    this.#last = entry;
    this.#size++;
    return entry;
  }

  /** Takes the entry out and clears it; removing it again does nothing. */
  remove(entry: InFlightEntry<T>): void {
    if (entry.value === undefined) return;
    if (entry.prev) entry.prev.next = entry.next;
    else this.#first = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else this.#last = entry.prev;
    entry.value = undefined;
    entry.prev = undefined;
    entry.next = undefined;
    this.#size--;
  }

  /** Calls `visit` with each value, in the order they were added (the callback may remove the one it is given). */
  forEach(visit: (value: T) => void): void {
    let entry = this.#first;
    while (entry) {
      const { value, next } = entry;
      if (value !== undefined) visit(value);
      entry = next;
    }
  }
}
