import { eventTypes } from "@parley/schema/runtime";
import { useState } from "preact/hooks";
import { ErrorNotice, NotAllowed, Page, Time, useLoad } from "../components/common.js";
import { navigate, type Route } from "../router.js";
import { can, type Session } from "../session.js";

type Event = Awaited<ReturnType<Session["client"]["events"]["get"]>>;

export function EventsView({ session, route }: { session: Session; route: Route }) {
  const type = route.query.get("type") ?? "";
  const [pages, setPages] = useState<{ rows: Event[]; cursor: string | null; type: string }>({
    rows: [],
    cursor: null,
    type: "",
  });
  const [open, setOpen] = useState<string | undefined>();
  const first = useLoad(
    () => session.client.events.list({ limit: 25, ...(type ? { type: type as Event["type"] } : {}) }),
    [session, type],
  );
  if (!can(session, "webhooks:read")) return <NotAllowed scope="webhooks:read" />;
  const more = pages.type === type ? pages : { rows: [], cursor: null, type };
  const rows = [...(first.data?.data ?? []), ...more.rows];
  const cursor = more.rows.length > 0 ? more.cursor : (first.data?.nextCursor ?? null);
  const loadMore = async () => {
    if (!cursor) return;
    const page = await session.client.events.list({
      limit: 25,
      after: cursor,
      ...(type ? { type: type as Event["type"] } : {}),
    });
    setPages({ rows: [...more.rows, ...page.data], cursor: page.nextCursor, type });
  };
  return (
    <Page title="Events">
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <label for="event-type">Type</label>
        <select
          id="event-type"
          value={type}
          onChange={(event) => navigate("events", { type: event.currentTarget.value })}
        >
          <option value="">Any</option>
          {eventTypes.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </form>
      <ErrorNotice error={first.error} />
      <ol class="events">
        {rows.map((event) => (
          <li key={event.id}>
            <button
              type="button"
              class="link"
              aria-expanded={open === event.id}
              onClick={() => setOpen(open === event.id ? undefined : event.id)}
            >
              <strong>{event.type}</strong> <code>{event.id}</code>
            </button>{" "}
            <Time at={event.created_at} />
            {open === event.id && <pre class="excerpt">{JSON.stringify(event.data, null, 2)}</pre>}
          </li>
        ))}
      </ol>
      {cursor && (
        <button type="button" onClick={loadMore}>
          Load more
        </button>
      )}
    </Page>
  );
}
