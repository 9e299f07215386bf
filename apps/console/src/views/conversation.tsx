import { cannotCarryMessage, mediaKindOf } from "@parley/schema/runtime";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { ErrorNotice, type Loaded, NotAllowed, Page, Status, Time, useAction, useLoad } from "../components/common.js";
import { href } from "../router.js";
import { can, type Session, type ShownError, shownError } from "../session.js";

type Client = Session["client"];
type Message = Awaited<ReturnType<Client["messages"]["get"]>>;
type Note = Awaited<ReturnType<Client["conversations"]["notes"]["list"]>>["data"][number];

/** How often the open conversation asks for what changed (new messages, statuses moving). */
const POLL_MS = 2_000;
const PAGE = 50;

export function ConversationView({ session, id }: { session: Session; id: string }) {
  const { client } = session;
  const conversation = useLoad(() => client.conversations.get(id), [session, id]);
  const channelId = conversation.data?.channel_id;
  const channel = useLoad(
    async () => (channelId && can(session, "channels:read") ? client.channels.get(channelId) : undefined),
    [session, channelId],
  );
  const contactId = conversation.data?.contact_id;
  const contact = useLoad(
    async () => (contactId && can(session, "contacts:read") ? client.contacts.get(contactId) : undefined),
    [session, contactId],
  );
  const people = usePeople(session);
  const [version, setVersion] = useState(0);
  const changed = () => {
    conversation.reload();
    setVersion((value) => value + 1);
  };
  if (!can(session, "conversations:read")) return <NotAllowed scope="conversations:read" />;
  if (conversation.error) return <ErrorNotice error={conversation.error} />;
  if (!conversation.data) return <p class="loading">Loading…</p>;
  const current = conversation.data;
  const title = contact.data?.name ?? contact.data?.email ?? contact.data?.phone ?? current.id;
  return (
    <Page title={title}>
      <p class="meta">
        <Status value={current.status} /> {current.channel_type ?? "manual record"}
        {channel.data && <> · {channel.data.name}</>} · <code>{current.id}</code>
        {contactId && (
          <>
            {" "}
            · <a href={href(`contacts/${contactId}`)}>contact</a>
          </>
        )}
      </p>
      <Actions session={session} conversation={current} people={people} onChange={changed} />
      {can(session, "messages:read") ? (
        <Timeline session={session} conversationId={id} people={people} version={version} />
      ) : (
        <NotAllowed scope="messages:read" />
      )}
      {can(session, "messages:write") && (
        <Reply
          session={session}
          conversationId={id}
          messageTypes={channel.data?.capabilities.message_types}
          channelType={current.channel_type}
        />
      )}
      {can(session, "notes:write") && <AddNote session={session} conversationId={id} onAdded={changed} />}
    </Page>
  );
}

type People = Loaded<{ users: { id: string; name: string }[]; teams: { id: string; name: string }[] }>;

/** The organization's agents and teams, as far as the key may read them: for names and the selectors. */
function usePeople(session: Session): People {
  const { client } = session;
  return useLoad(async () => {
    const [users, teams] = await Promise.all([
      client.users.list({ limit: 100 }).then(
        (page) => page.data,
        () => [],
      ),
      client.teams.list({ limit: 100 }).then(
        (page) => page.data,
        () => [],
      ),
    ]);
    return { users, teams };
  }, [session]);
}

function Actions(props: {
  session: Session;
  conversation: Awaited<ReturnType<Client["conversations"]["get"]>>;
  people: People;
  onChange: () => void;
}) {
  const { client } = props.session;
  const { id, status, assigned_to, team_id } = props.conversation;
  const { run, error, busy } = useAction();
  const options = props.people;
  if (!can(props.session, "conversations:write")) return null;
  const act = (action: () => PromiseLike<unknown>) => run(action).then((done) => done && props.onChange());
  return (
    <div class="actions">
      {status === "closed" ? (
        <button type="button" disabled={busy} onClick={() => act(() => client.conversations.reopen(id))}>
          Reopen
        </button>
      ) : (
        <button type="button" disabled={busy} onClick={() => act(() => client.conversations.close(id))}>
          Close
        </button>
      )}
      <span class="field">
        <label for="assign-user">Agent</label>
        <select
          id="assign-user"
          value={assigned_to ?? ""}
          disabled={busy}
          onChange={(event) => {
            const userId = event.currentTarget.value;
            void act(() =>
              userId ? client.conversations.assign(id, { user_id: userId }) : client.conversations.unassign(id),
            );
          }}
        >
          <option value="">Nobody</option>
          {options.data?.users.map((user) => (
            <option key={user.id} value={user.id}>
              {user.name}
            </option>
          ))}
        </select>
      </span>
      <span class="field">
        <label for="assign-team">Team</label>
        <select
          id="assign-team"
          value={team_id ?? ""}
          disabled={busy}
          onChange={(event) => {
            const teamId = event.currentTarget.value;
            void act(() => client.conversations.update(id, { team_id: teamId || null }));
          }}
        >
          <option value="">No team</option>
          {options.data?.teams.map((team) => (
            <option key={team.id} value={team.id}>
              {team.name}
            </option>
          ))}
        </select>
      </span>
      <ErrorNotice error={error} />
    </div>
  );
}

/**
 * The conversation's messages, oldest at the top. The newest page is read again every
 * POLL_MS (new messages, statuses moving); older pages load as the reader scrolls up.
 */
type Activity = { id: string; created_at: string; text: string };

/**
 * What happened to the conversation besides its messages: assignments, closing and
 * reopening, from the events (a key with `webhooks:read`), the newest 100 of each kind.
 */
function useActivity(session: Session, conversationId: string, people: People, version: number) {
  const { client } = session;
  return useLoad(async () => {
    if (!can(session, "webhooks:read")) return [] as Activity[];
    const kinds = ["conversation.assigned", "conversation.closed", "conversation.reopened"] as const;
    const pages = await Promise.all(kinds.map((type) => client.events.list({ type, limit: 100 })));
    const name = (list: { id: string; name: string }[] | undefined, id: string) =>
      list?.find((item) => item.id === id)?.name ?? id;
    return pages
      .flatMap((page) => page.data)
      .flatMap((event): Activity[] => {
        const data = event.data as {
          conversation?: { id: string; assigned_to: string | null; team_id: string | null };
        };
        const conversation = data.conversation;
        if (conversation?.id !== conversationId) return [];
        const at = { id: event.id, created_at: event.created_at };
        if (event.type === "conversation.closed") return [{ ...at, text: "Closed" }];
        if (event.type === "conversation.reopened") return [{ ...at, text: "Reopened" }];
        const agent = conversation.assigned_to ? name(people.data?.users, conversation.assigned_to) : "nobody";
        const team = conversation.team_id ? `, team ${name(people.data?.teams, conversation.team_id)}` : "";
        return [{ ...at, text: `Assigned to ${agent}${team}` }];
      });
  }, [session, conversationId, version, people.data]);
}

function Timeline(props: { session: Session; conversationId: string; people: People; version: number }) {
  const { session, conversationId } = props;
  const { client } = session;
  const notes = useLoad(
    async () =>
      can(session, "notes:read") ? (await client.conversations.notes.list(conversationId, { limit: 100 })).data : [],
    [session, conversationId, props.version],
  );
  const activity = useActivity(session, conversationId, props.people, props.version);
  const [messages, setMessages] = useState<Message[]>([]);
  const [older, setOlder] = useState<string | null | undefined>(undefined);
  const [error, setError] = useState<ShownError | undefined>();
  const list = useRef<HTMLOListElement>(null);
  const top = useRef<HTMLLIElement>(null);
  const keepBottom = useRef(true);
  const heightBefore = useRef<number | null>(null);

  const merge = useCallback((incoming: Message[]) => {
    setMessages((current) => {
      const byId = new Map(current.map((message) => [message.id, message]));
      for (const message of incoming) byId.set(message.id, message);
      return [...byId.values()].sort((a, b) =>
        a.created_at === b.created_at ? a.id.localeCompare(b.id) : a.created_at < b.created_at ? -1 : 1,
      );
    });
  }, []);

  useEffect(() => {
    let stopped = false;
    setMessages([]);
    setOlder(undefined);
    const poll = async (first: boolean) => {
      try {
        const page = await client.messages.list(conversationId, { limit: first ? PAGE : 25 });
        if (stopped) return;
        const box = list.current;
        keepBottom.current = !box || box.scrollHeight - box.scrollTop - box.clientHeight < 40;
        merge(page.data);
        if (first) setOlder(page.hasMore ? page.nextCursor : null);
        setError(undefined);
      } catch (caught) {
        if (!stopped) setError(shownError(caught));
      }
    };
    void poll(true);
    const timer = setInterval(() => void poll(false), POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [client, conversationId, merge]);

  const loadOlder = useCallback(async () => {
    if (!older) return;
    const cursor = older;
    setOlder(undefined);
    try {
      const page = await client.messages.list(conversationId, { limit: PAGE, after: cursor });
      heightBefore.current = list.current?.scrollHeight ?? null;
      keepBottom.current = false;
      merge(page.data);
      setOlder(page.hasMore ? page.nextCursor : null);
    } catch (caught) {
      setError(shownError(caught));
      setOlder(cursor);
    }
  }, [client, conversationId, older, merge]);

  // Older pages load when the top of the list comes into view.
  useEffect(() => {
    const sentinel = top.current;
    if (!sentinel || !older) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) void loadOlder();
    });
    observer.observe(sentinel);
    return () => observer.disconnect();
  }, [older, loadOlder]);

  // New messages keep the reader at the bottom; an older page keeps what they were reading in place.
  useLayoutEffect(() => {
    const box = list.current;
    if (!box) return;
    if (heightBefore.current !== null) {
      box.scrollTop += box.scrollHeight - heightBefore.current;
      heightBefore.current = null;
    } else if (keepBottom.current) {
      box.scrollTop = box.scrollHeight;
    }
  }, [messages]);

  return (
    <>
      <ErrorNotice error={error} />
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take the focus, for the arrow keys to scroll it. */}
      <ol class="timeline" ref={list} aria-label="Messages" tabIndex={0}>
        <li ref={top} class="older">
          {older ? (
            <button type="button" class="link" onClick={loadOlder}>
              Load older messages
            </button>
          ) : older === null ? (
            "The start of the conversation"
          ) : (
            ""
          )}
        </li>
        {interleaved(messages, notes.data ?? [], activity.data ?? [], older === null).map((item) =>
          item.kind === "message" ? (
            <MessageItem key={item.value.id} session={session} message={item.value} />
          ) : item.kind === "note" ? (
            <li key={item.value.id} class="note">
              <p>
                <strong>Note</strong> {item.value.body}
              </p>
              <p class="meta">
                <Time at={item.value.created_at} />
              </p>
            </li>
          ) : (
            <li key={item.value.id} class="activity">
              {item.value.text} · <Time at={item.value.created_at} />
            </li>
          ),
        )}
      </ol>
      <ErrorNotice error={notes.error ?? activity.error} />
    </>
  );
}

type TimelineItem =
  | { kind: "message"; at: string; value: Message }
  | { kind: "note"; at: string; value: Note }
  | { kind: "activity"; at: string; value: Activity };

/**
 * Messages, notes and activity in the order they happened. Notes and activity older than
 * the oldest message loaded wait until its page is loaded (or the start is reached).
 */
function interleaved(messages: Message[], notes: Note[], activity: Activity[], atStart: boolean): TimelineItem[] {
  const oldest = atStart ? "" : (messages[0]?.created_at ?? "");
  const items: TimelineItem[] = [
    ...messages.map((value) => ({ kind: "message" as const, at: value.created_at, value })),
    ...notes
      .filter((note) => note.created_at >= oldest)
      .map((value) => ({ kind: "note" as const, at: value.created_at, value })),
    ...activity
      .filter((item) => item.created_at >= oldest)
      .map((value) => ({ kind: "activity" as const, at: value.created_at, value })),
  ];
  return items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

function MessageItem({ session, message }: { session: Session; message: Message }) {
  return (
    <li class={`message ${message.direction}`}>
      <div class="bubble">
        {message.attachment && <AttachmentView session={session} attachment={message.attachment} type={message.type} />}
        {message.text && <p class="text">{message.text}</p>}
      </div>
      <p class="meta">
        <Time at={message.created_at} /> {message.direction === "outbound" && <Status value={message.status} />}
        {message.error && (
          <span class="provider-error">
            {" "}
            <code>{message.error.code}</code> {message.error.message}
          </span>
        )}
      </p>
    </li>
  );
}

/** Images are shown, other files offered for download: both read with the key, never by a bare URL. */
function AttachmentView(props: { session: Session; attachment: NonNullable<Message["attachment"]>; type: string }) {
  const { client } = props.session;
  const [url, setUrl] = useState<string | undefined>();
  const [error, setError] = useState<ShownError | undefined>();
  const isImage = props.type === "image";
  const fetchFile = useCallback(async () => {
    const file = await client.attachments.download(props.attachment.id);
    const blob = await new Response(file.stream).blob();
    return URL.createObjectURL(blob);
  }, [client, props.attachment.id]);
  useEffect(() => {
    if (!isImage) return;
    let made: string | undefined;
    fetchFile().then(
      (objectUrl) => {
        made = objectUrl;
        setUrl(objectUrl);
      },
      (caught: unknown) => setError(shownError(caught)),
    );
    return () => {
      if (made) URL.revokeObjectURL(made);
    };
  }, [isImage, fetchFile]);
  const download = async () => {
    try {
      const objectUrl = await fetchFile();
      const link = document.createElement("a");
      link.href = objectUrl;
      link.download = props.attachment.filename;
      link.click();
      setTimeout(() => URL.revokeObjectURL(objectUrl), 10_000);
    } catch (caught) {
      setError(shownError(caught));
    }
  };
  return (
    <div class="attachment">
      {isImage && url && <img src={url} alt={props.attachment.filename} loading="lazy" />}
      <button type="button" class="link" onClick={download}>
        Download {props.attachment.filename}
      </button>
      <ErrorNotice error={error} />
    </div>
  );
}

/** The reply box: refuses, before sending, a file the channel cannot carry, in the API's own words. */
function Reply(props: {
  session: Session;
  conversationId: string;
  channelType: string | null;
  messageTypes: readonly string[] | undefined;
}) {
  const { client } = props.session;
  const [text, setText] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [refusedToSend, setRefusedToSend] = useState(false);
  const { run, error, busy } = useAction();
  const fileInput = useRef<HTMLInputElement>(null);

  const typeOf = (chosen: File | null) => (chosen ? (mediaKindOf(chosen.type) ?? "document") : "text");
  const check = (chosen: File | null): ShownError | undefined => {
    const type = typeOf(chosen);
    if (props.channelType && props.messageTypes && !props.messageTypes.includes(type)) {
      return { message: cannotCarryMessage(props.channelType, type), code: "unsupported_message_type" };
    }
    return undefined;
  };
  // Worked out at every render: a file chosen before the channel's capabilities arrived is
  // refused as soon as they do.
  const refusal = file || refusedToSend ? check(file) : undefined;
  const submit = (event: Event) => {
    event.preventDefault();
    const refused = check(file);
    setRefusedToSend(refused !== undefined);
    if (refused) return;
    void run(async () => {
      const type = typeOf(file);
      if (file) {
        const attachment = await client.uploads.create(file, { filename: file.name, contentType: file.type });
        await client.messages.send({
          conversation_id: props.conversationId,
          type: type as "image",
          attachment_id: attachment.id,
          ...(text ? { text } : {}),
        });
      } else {
        await client.messages.send({ conversation_id: props.conversationId, type: "text", text });
      }
      setText("");
      setFile(null);
      if (fileInput.current) fileInput.current.value = "";
    });
  };
  return (
    <form class="reply" onSubmit={submit} aria-label="Reply">
      <label for="reply-text">Reply</label>
      <textarea
        id="reply-text"
        rows={3}
        value={text}
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) submit(event);
        }}
      />
      <div class="row">
        <label for="reply-file">Attachment</label>
        <input
          id="reply-file"
          type="file"
          ref={fileInput}
          onChange={(event) => {
            const chosen = event.currentTarget.files?.[0] ?? null;
            setFile(chosen);
            setRefusedToSend(false);
          }}
        />
        <button type="submit" disabled={busy || (!file && text.trim() === "")}>
          {busy ? "Sending…" : "Send"}
        </button>
      </div>
      <ErrorNotice error={refusal ?? error} />
    </form>
  );
}

function AddNote(props: { session: Session; conversationId: string; onAdded: () => void }) {
  const [body, setBody] = useState("");
  const { run, error, busy } = useAction();
  const add = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      await props.session.client.conversations.notes.create(props.conversationId, { body });
      setBody("");
      props.onAdded();
    });
  };
  return (
    <form class="notes" onSubmit={add} aria-label="Add a note">
      <label for="note-body">Add a note (seen by your team, never by the contact)</label>
      <textarea id="note-body" rows={2} value={body} onInput={(event) => setBody(event.currentTarget.value)} />
      <button type="submit" disabled={busy || body.trim() === ""}>
        Add note
      </button>
      <ErrorNotice error={error} />
    </form>
  );
}
