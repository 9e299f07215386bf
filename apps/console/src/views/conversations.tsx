import { useEffect, useState } from "preact/hooks";
import { ErrorNotice, NotAllowed, Page, Status, Time, useLoad, usePagedList } from "../components/common.js";
import { href, navigate, type Route } from "../router.js";
import { can, type Session } from "../session.js";

const FILTERS = ["status", "channel_id", "assigned_to", "team_id", "tag_id"] as const;
type Query = NonNullable<Parameters<Session["client"]["conversations"]["list"]>[0]>;
type Filters = Pick<Query, (typeof FILTERS)[number]>;

/** The options of each filter, as far as the key may read them (a restricted key gets fewer). */
function useFilterOptions(session: Session) {
  const { client } = session;
  return useLoad(async () => {
    const settle = <T,>(promise: PromiseLike<{ data: T[] }>) =>
      Promise.resolve(promise).then(
        (page) => page.data,
        () => [] as T[],
      );
    const [channels, users, teams, tags] = await Promise.all([
      settle(client.channels.list({ limit: 100 })),
      settle(client.users.list({ limit: 100 })),
      settle(client.teams.list({ limit: 100 })),
      settle(client.tags.list({ limit: 100 })),
    ]);
    return { channels, users, teams, tags };
  }, [session]);
}

/**
 * The names of the rows' contacts, read once each (the list names only `contact_id`); a key
 * without `contacts:read` shows the ids.
 */
function useContactNames(session: Session, ids: string[]): Map<string, string> {
  const [names, setNames] = useState(() => new Map<string, string>());
  const wanted = [...new Set(ids)].filter((id) => !names.has(id));
  const key = wanted.join(",");
  useEffect(() => {
    if (wanted.length === 0 || !can(session, "contacts:read")) return;
    let current = true;
    Promise.all(
      wanted.map((id) =>
        Promise.resolve(session.client.contacts.get(id)).then(
          (contact) => [id, contact.name ?? contact.email ?? contact.phone ?? id] as const,
          () => [id, id] as const,
        ),
      ),
    ).then((found) => {
      if (current) setNames((previous) => new Map([...previous, ...found]));
    });
    return () => {
      current = false;
    };
  }, [session, key]);
  return names;
}

export function ConversationsView({ session, route }: { session: Session; route: Route }) {
  // The query string as typed in the address: the API refuses a wrong value with its own message.
  const filters = Object.fromEntries(
    FILTERS.flatMap((name) => (route.query.get(name) ? [[name, route.query.get(name) as string]] : [])),
  ) as Filters;
  const options = useFilterOptions(session);
  const filterKey = JSON.stringify(filters);
  const list = usePagedList(
    (after) => session.client.conversations.list({ limit: 25, ...filters, ...(after ? { after } : {}) }),
    [session, filterKey],
  );
  const rows = list.rows;
  const contactNames = useContactNames(
    session,
    rows.map((row) => row.contact_id),
  );
  if (!can(session, "conversations:read")) return <NotAllowed scope="conversations:read" />;

  const setFilter = (name: keyof Filters, value: string) =>
    navigate("conversations", { ...(filters as Record<string, string>), [name]: value });
  const data = options.data;
  const label = (id: string | null | undefined, named: { id: string; name?: string | null }[] | undefined) =>
    named?.find((item) => item.id === id)?.name ?? id ?? "";

  return (
    <Page title="Conversations">
      <form class="filters" aria-label="Filters" onSubmit={(event) => event.preventDefault()}>
        <Select label="Status" value={filters.status} onChange={(v) => setFilter("status", v)}>
          {["open", "pending", "closed"].map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </Select>
        <Select label="Channel" value={filters.channel_id} onChange={(v) => setFilter("channel_id", v)}>
          {data?.channels.map((channel) => (
            <option key={channel.id} value={channel.id}>
              {channel.name} ({channel.type})
            </option>
          ))}
        </Select>
        <Select label="Assignee" value={filters.assigned_to} onChange={(v) => setFilter("assigned_to", v)}>
          {data?.users.map((user) => (
            <option key={user.id} value={user.id}>
              {user.name}
            </option>
          ))}
        </Select>
        <Select label="Team" value={filters.team_id} onChange={(v) => setFilter("team_id", v)}>
          {data?.teams.map((team) => (
            <option key={team.id} value={team.id}>
              {team.name}
            </option>
          ))}
        </Select>
        <Select label="Tag" value={filters.tag_id} onChange={(v) => setFilter("tag_id", v)}>
          {data?.tags.map((tag) => (
            <option key={tag.id} value={tag.id}>
              {tag.name}
            </option>
          ))}
        </Select>
      </form>
      <ErrorNotice error={list.error} />
      {list.loading && rows.length === 0 ? (
        <p class="loading">Loading…</p>
      ) : rows.length === 0 ? (
        <p>No conversation matches.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Contact</th>
              <th scope="col">Status</th>
              <th scope="col">Channel</th>
              <th scope="col">Assignee</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((conversation) => (
              <tr key={conversation.id}>
                <td>
                  <a href={href(`conversations/${conversation.id}`)}>
                    {contactNames.get(conversation.contact_id) ?? conversation.contact_id}
                  </a>
                </td>
                <td>
                  <Status value={conversation.status} />
                </td>
                <td>{conversation.channel_id ? label(conversation.channel_id, data?.channels) : "manual record"}</td>
                <td>{label(conversation.assigned_to, data?.users)}</td>
                <td>
                  <Time at={conversation.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.loadMore && (
        <button type="button" onClick={list.loadMore}>
          Load more
        </button>
      )}
    </Page>
  );
}

function Select(props: {
  label: string;
  value: string | undefined;
  onChange: (value: string) => void;
  children: preact.ComponentChildren;
}) {
  const id = `filter-${props.label.toLowerCase()}`;
  return (
    <span class="field">
      <label for={id}>{props.label}</label>
      <select id={id} value={props.value ?? ""} onChange={(event) => props.onChange(event.currentTarget.value)}>
        <option value="">Any</option>
        {props.children}
      </select>
    </span>
  );
}
