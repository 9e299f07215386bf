import { eventTypes } from "@parley/schema/runtime";
import { useState } from "preact/hooks";
import { ErrorNotice, NotAllowed, Page, Time, usePagedList } from "../components/common.js";
import { navigate, type Route } from "../router.js";
import { can, type Session } from "../session.js";

type Event = Awaited<ReturnType<Session["client"]["events"]["get"]>>;

export function EventsView({ session, route }: { session: Session; route: Route }) {
  const type = route.query.get("type") ?? "";
  const [open, setOpen] = useState<string | undefined>();
  const list = usePagedList(
    (after) =>
      session.client.events.list({
        limit: 25,
        ...(type ? { type: type as Event["type"] } : {}),
        ...(after ? { after } : {}),
      }),
    [session, type],
  );
  if (!can(session, "webhooks:read")) return <NotAllowed scope="webhooks:read" />;
  const rows = list.rows;
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
      <ErrorNotice error={list.error} />
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
      {list.loadMore && (
        <button type="button" onClick={list.loadMore}>
          Load more
        </button>
      )}
    </Page>
  );
}
