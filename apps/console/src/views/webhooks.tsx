import { useState } from "preact/hooks";
import { ErrorNotice, NotAllowed, Page, Status, Time, useAction, useLoad } from "../components/common.js";
import { href } from "../router.js";
import { can, type Session } from "../session.js";

type Client = Session["client"];
type Endpoint = Awaited<ReturnType<Client["webhooks"]["get"]>>;
type Delivery = Awaited<ReturnType<Client["webhooks"]["deliveries"]["list"]>>["data"][number];

/** A secret shown once (on create or rotation): gone from the page when it is dismissed. */
function SecretOnce({ secret, onDismiss }: { secret: string; onDismiss: () => void }) {
  return (
    <div class="secret" role="status">
      <p>
        The endpoint's signing secret, shown this once: keep it where your receiver reads it, with{" "}
        <code>@parley/webhook-verify</code>.
      </p>
      <p>
        <code class="select">{secret}</code>
      </p>
      <button type="button" onClick={onDismiss}>
        I have kept it
      </button>
    </div>
  );
}

export function WebhooksView({ session }: { session: Session }) {
  const { client } = session;
  const endpoints = useLoad(() => client.webhooks.list({ limit: 100 }), [session]);
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState("*");
  const [secret, setSecret] = useState<string | undefined>();
  const { run, error, busy } = useAction();
  if (!can(session, "webhooks:read")) return <NotAllowed scope="webhooks:read" />;
  const create = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      const names = events
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean);
      const created = await client.webhooks.create({ url, events: names as Endpoint["events"] });
      setSecret(created.secret);
      setUrl("");
      endpoints.reload();
    });
  };
  return (
    <Page title="Webhooks">
      {secret && <SecretOnce secret={secret} onDismiss={() => setSecret(undefined)} />}
      <ErrorNotice error={endpoints.error} />
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col">Events</th>
            <th scope="col">State</th>
            <th scope="col">Failures</th>
          </tr>
        </thead>
        <tbody>
          {(endpoints.data?.data ?? []).map((endpoint) => (
            <tr key={endpoint.id}>
              <td>
                <a href={href(`webhooks/${endpoint.id}`)}>{endpoint.url}</a>
              </td>
              <td>{endpoint.events.join(", ")}</td>
              <td>
                <Status value={endpoint.enabled ? "enabled" : "disabled"} />
                {endpoint.disabled_reason && <span class="meta"> {endpoint.disabled_reason}</span>}
              </td>
              <td>{endpoint.failure_count}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {can(session, "webhooks:write") && (
        <form class="edit" onSubmit={create} aria-label="Add an endpoint">
          <h2>Add an endpoint</h2>
          <span class="field">
            <label for="webhook-url">URL</label>
            <input id="webhook-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
          </span>
          <span class="field">
            <label for="webhook-events">Events (comma-separated, * for all)</label>
            <input id="webhook-events" required value={events} onInput={(e) => setEvents(e.currentTarget.value)} />
          </span>
          <button type="submit" disabled={busy}>
            Add endpoint
          </button>
          <ErrorNotice error={error} />
        </form>
      )}
    </Page>
  );
}

export function WebhookView({ session, id }: { session: Session; id: string }) {
  const { client } = session;
  const endpoint = useLoad(() => client.webhooks.get(id), [session, id]);
  const deliveries = useLoad(() => client.webhooks.deliveries.list(id, { limit: 50 }), [session, id]);
  const [secret, setSecret] = useState<string | undefined>();
  const { run, error, busy } = useAction();
  if (!can(session, "webhooks:read")) return <NotAllowed scope="webhooks:read" />;
  if (endpoint.error) return <ErrorNotice error={endpoint.error} />;
  if (!endpoint.data) return <p class="loading">Loading…</p>;
  const current = endpoint.data;
  const writable = can(session, "webhooks:write");
  const toggle = () => run(() => client.webhooks.update(id, { enabled: !current.enabled })).then(endpoint.reload);
  const rotate = () =>
    run(async () => {
      const rotated = await client.webhooks.rotateSecret(id);
      setSecret(rotated.secret);
    });
  return (
    <Page title={current.url}>
      {secret && <SecretOnce secret={secret} onDismiss={() => setSecret(undefined)} />}
      <p class="meta">
        <code>{current.id}</code> · <Status value={current.enabled ? "enabled" : "disabled"} /> · events{" "}
        {current.events.join(", ")} · secret <code>{current.secret}</code>
      </p>
      {writable && (
        <div class="actions">
          <button type="button" disabled={busy} onClick={toggle}>
            {current.enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" disabled={busy} onClick={rotate}>
            Rotate the secret
          </button>
          <button
            type="button"
            disabled={busy}
            onClick={() => run(() => client.webhooks.test(id)).then(deliveries.reload)}
          >
            Send a test event
          </button>
        </div>
      )}
      <ErrorNotice error={error} />
      <h2>Deliveries</h2>
      <p>
        <button type="button" class="link" onClick={deliveries.reload}>
          Refresh
        </button>
      </p>
      <ErrorNotice error={deliveries.error} />
      <ol class="deliveries">
        {(deliveries.data?.data ?? []).map((delivery) => (
          <DeliveryItem
            key={delivery.id}
            session={session}
            endpointId={id}
            delivery={delivery}
            onRetried={deliveries.reload}
          />
        ))}
      </ol>
    </Page>
  );
}

function DeliveryItem(props: { session: Session; endpointId: string; delivery: Delivery; onRetried: () => void }) {
  const { client } = props.session;
  const { delivery } = props;
  const [open, setOpen] = useState(false);
  const event = useLoad(
    async () => (open ? client.events.get(delivery.event_id) : undefined),
    [props.session, open, delivery.event_id],
  );
  const { run, error, busy } = useAction();
  const retry = () => run(() => client.webhooks.deliveries.retry(props.endpointId, delivery.id)).then(props.onRetried);
  return (
    <li class={`delivery ${delivery.status}`}>
      <p>
        <Status value={delivery.status} /> <strong>{delivery.event_type}</strong> attempt {delivery.attempt} ·{" "}
        {delivery.response_status === null ? "no answer" : `HTTP ${delivery.response_status}`} · {delivery.duration_ms}{" "}
        ms · <Time at={delivery.created_at} />
        {delivery.next_retry_at && (
          <>
            {" "}
            · next try <Time at={delivery.next_retry_at} />
          </>
        )}
      </p>
      {delivery.error && <p class="provider-error">{delivery.error}</p>}
      {delivery.response_body && <pre class="excerpt">{delivery.response_body}</pre>}
      <div class="row">
        <button type="button" class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? "Hide the request" : "Show the request"}
        </button>
        {delivery.status === "failed" && can(props.session, "webhooks:write") && (
          <button type="button" disabled={busy} onClick={retry}>
            Retry
          </button>
        )}
      </div>
      {open && (
        <>
          <ErrorNotice error={event.error} />
          {event.data && <pre class="excerpt">{JSON.stringify(event.data, null, 2)}</pre>}
        </>
      )}
      <ErrorNotice error={error} />
    </li>
  );
}
