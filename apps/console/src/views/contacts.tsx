import { useState } from "preact/hooks";
import { ErrorNotice, NotAllowed, Page, Status, Time, useAction, useLoad, usePagedList } from "../components/common.js";
import { href, navigate, type Route } from "../router.js";
import { can, type Session } from "../session.js";

type Contact = Awaited<ReturnType<Session["client"]["contacts"]["get"]>>;

export function ContactsView({ session, route }: { session: Session; route: Route }) {
  const search = route.query.get("query") ?? "";
  const [draft, setDraft] = useState(search);
  const list = usePagedList(
    (after) =>
      session.client.contacts.list({ limit: 25, ...(search ? { query: search } : {}), ...(after ? { after } : {}) }),
    [session, search],
  );
  if (!can(session, "contacts:read")) return <NotAllowed scope="contacts:read" />;
  const rows = list.rows;
  return (
    <Page title="Contacts">
      <form
        aria-label="Search contacts"
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          navigate("contacts", { query: draft.trim() });
        }}
      >
        <label for="contact-search">Search</label>
        <input
          id="contact-search"
          type="search"
          value={draft}
          placeholder="Name, email, phone or external id"
          onInput={(event) => setDraft(event.currentTarget.value)}
        />
        <button type="submit">Search</button>
      </form>
      <ErrorNotice error={list.error} />
      {rows.length === 0 && !list.loading ? (
        <p>No contact matches.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Phone</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((contact) => (
              <tr key={contact.id}>
                <td>
                  <a href={href(`contacts/${contact.id}`)}>{contact.name ?? contact.id}</a>
                </td>
                <td>{contact.email}</td>
                <td>{contact.phone}</td>
                <td>
                  <Time at={contact.created_at} />
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

const EDITABLE = ["name", "email", "phone", "external_id"] as const;

export function ContactView({ session, id }: { session: Session; id: string }) {
  const { client } = session;
  const contact = useLoad(() => client.contacts.get(id), [session, id]);
  const conversations = useLoad(
    async () =>
      can(session, "conversations:read") ? client.conversations.list({ contact_id: id, limit: 25 }) : undefined,
    [session, id],
  );
  const tags = useLoad(
    () =>
      client.tags.list({ limit: 100 }).then(
        (page) => page.data,
        () => [],
      ),
    [session],
  );
  const [editing, setEditing] = useState(false);
  if (!can(session, "contacts:read")) return <NotAllowed scope="contacts:read" />;
  if (contact.error) return <ErrorNotice error={contact.error} />;
  if (!contact.data) return <p class="loading">Loading…</p>;
  const current = contact.data;
  const tagName = (tagId: string) => tags.data?.find((tag) => tag.id === tagId)?.name ?? tagId;
  return (
    <Page
      title={current.name ?? current.id}
      actions={
        can(session, "contacts:write") && !editing ? (
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
        ) : undefined
      }
    >
      {editing ? (
        <ContactForm
          session={session}
          contact={current}
          tags={tags.data ?? []}
          onDone={() => {
            setEditing(false);
            contact.reload();
          }}
        />
      ) : (
        <dl class="fields">
          {EDITABLE.map((field) => (
            <div key={field}>
              <dt>{field.replace("_", " ")}</dt>
              <dd>{current[field] ?? "—"}</dd>
            </div>
          ))}
          <div>
            <dt>tags</dt>
            <dd>{current.tags.length ? current.tags.map(tagName).join(", ") : "—"}</dd>
          </div>
          {Object.entries(current.custom_fields).map(([key, value]) => (
            <div key={key}>
              <dt>{key}</dt>
              <dd>{value}</dd>
            </div>
          ))}
          <div>
            <dt>id</dt>
            <dd>
              <code>{current.id}</code>
            </dd>
          </div>
        </dl>
      )}
      <h2>Conversations</h2>
      <ErrorNotice error={conversations.error} />
      <ul class="plain">
        {(conversations.data?.data ?? []).map((conversation) => (
          <li key={conversation.id}>
            <a href={href(`conversations/${conversation.id}`)}>{conversation.id}</a>{" "}
            <Status value={conversation.status} /> {conversation.channel_type} · <Time at={conversation.updated_at} />
          </li>
        ))}
      </ul>
    </Page>
  );
}

function ContactForm(props: {
  session: Session;
  contact: Contact;
  tags: { id: string; name: string }[];
  onDone: () => void;
}) {
  const { session, contact, onDone } = props;
  const [tagIds, setTagIds] = useState<string[]>(contact.tags);
  const [values, setValues] = useState<Record<string, string>>(
    Object.fromEntries(EDITABLE.map((field) => [field, contact[field] ?? ""])),
  );
  const [custom, setCustom] = useState<Record<string, string>>({ ...contact.custom_fields });
  const { run, error, busy } = useAction();
  const save = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      // An emptied field is cleared (null); the name, which cannot be null, is left as it was.
      const body: Record<string, unknown> = {};
      for (const field of EDITABLE) {
        const value = values[field]?.trim() ?? "";
        if (value === (contact[field] ?? "")) continue;
        if (field === "name" && value === "") continue;
        body[field] = value === "" ? null : value;
      }
      const changed = Object.fromEntries(
        Object.entries(custom).flatMap(([key, value]) =>
          value === contact.custom_fields[key] ? [] : [[key, value === "" ? null : value]],
        ),
      );
      if (Object.keys(changed).length > 0) body.custom_fields = changed;
      if ([...tagIds].sort().join() !== [...contact.tags].sort().join()) body.tags = tagIds;
      await session.client.contacts.update(contact.id, body as Parameters<Session["client"]["contacts"]["update"]>[1]);
      onDone();
    });
  };
  return (
    <form class="edit" onSubmit={save} aria-label="Edit contact">
      {EDITABLE.map((field) => (
        <span class="field" key={field}>
          <label for={`contact-${field}`}>{field.replace("_", " ")}</label>
          <input
            id={`contact-${field}`}
            value={values[field]}
            onInput={(event) => setValues({ ...values, [field]: event.currentTarget.value })}
          />
        </span>
      ))}
      {Object.keys(custom).map((key) => (
        <span class="field" key={key}>
          <label for={`custom-${key}`}>{key}</label>
          <input
            id={`custom-${key}`}
            value={custom[key]}
            onInput={(event) => setCustom({ ...custom, [key]: event.currentTarget.value })}
          />
        </span>
      ))}
      {props.tags.length > 0 && (
        <fieldset class="tags">
          <legend>Tags</legend>
          {props.tags.map((tag) => (
            <label key={tag.id} class="check">
              <input
                type="checkbox"
                checked={tagIds.includes(tag.id)}
                onChange={(event) =>
                  setTagIds(event.currentTarget.checked ? [...tagIds, tag.id] : tagIds.filter((id) => id !== tag.id))
                }
              />{" "}
              {tag.name}
            </label>
          ))}
        </fieldset>
      )}
      <div class="row">
        <button type="submit" disabled={busy}>
          Save
        </button>
        <button type="button" class="link" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorNotice error={error} />
    </form>
  );
}
