import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { type ShownError, shownError } from "../session.js";

/** An API failure as the API put it: its message, code and request id (for support). */
export function ErrorNotice({ error }: { error: ShownError | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <p>{error.message}</p>
      {(error.code || error.requestId) && (
        <p class="meta">
          {error.code && <code>{error.code}</code>}
          {error.requestId && (
            <>
              {" "}
              request id <code>{error.requestId}</code>
            </>
          )}
        </p>
      )}
    </div>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: ShownError | undefined;
  loading: boolean;
  reload: () => void;
}

/** Loads once per change of `deps`; `reload()` loads again. */
export function useLoad<T>(load: () => PromiseLike<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: ShownError; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    Promise.resolve(load()).then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => current && setState({ error: shownError(error), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** One page of a list, as the SDK answers it. */
interface ListPage<T> {
  data: T[];
  nextCursor: string | null;
}

export interface PagedList<T> {
  rows: T[];
  error: ShownError | undefined;
  loading: boolean;
  /** The next page, appended; undefined at the end of the list. */
  loadMore: (() => void) | undefined;
}

/**
 * A list read a page at a time (cursor pages, "Load more"), read again from its first page
 * whenever `deps` change (another filter, another search).
 */
export function usePagedList<T>(load: (after?: string) => PromiseLike<ListPage<T>>, deps: unknown[]): PagedList<T> {
  const first = useLoad(() => load(), deps);
  const [more, setMore] = useState<{ first: unknown; rows: T[]; cursor: string | null }>({
    first: undefined,
    rows: [],
    cursor: null,
  });
  const [error, setError] = useState<ShownError | undefined>();
  // Pages loaded after another first page belong to another list.
  const extra = more.first === first.data ? more : { first: first.data, rows: [], cursor: null };
  const cursor = extra.rows.length > 0 ? extra.cursor : (first.data?.nextCursor ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    try {
      const page = await load(cursor);
      setMore({ first: first.data, rows: [...extra.rows, ...page.data], cursor: page.nextCursor });
      setError(undefined);
    } catch (caught) {
      setError(shownError(caught));
    }
  };
  return {
    rows: [...(first.data?.data ?? []), ...extra.rows],
    error: first.error ?? error,
    loading: first.loading,
    loadMore: cursor ? () => void loadMore() : undefined,
  };
}

/** Runs an action (a click, a form), keeping its failure to show beside it. */
export function useAction(): {
  run: (action: () => PromiseLike<unknown>) => Promise<boolean>;
  error: ShownError | undefined;
  busy: boolean;
} {
  const [error, setError] = useState<ShownError | undefined>();
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (action: () => PromiseLike<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (caught) {
      setError(shownError(caught));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { run, error, busy };
}

export function Status({ value }: { value: string | null | undefined }) {
  if (!value) return null;
  return <span class={`status status-${value}`}>{value.replace(/_/g, " ")}</span>;
}

export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return null;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

/** What a restricted key cannot show: said, not hidden. */
export function NotAllowed({ scope }: { scope: string }) {
  return (
    <p class="notice" role="note">
      This key has no <code>{scope}</code> scope: the console cannot show this. Sign in with a key that has it.
    </p>
  );
}

export function Page({
  title,
  children,
  actions,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  useEffect(() => {
    document.title = `${title} · Parley console`;
  }, [title]);
  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {actions}
      </div>
      {children}
    </section>
  );
}
