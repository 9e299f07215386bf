import { useState } from "preact/hooks";
import { ErrorNotice, NotAllowed, Page, Status, useAction, useLoad } from "../components/common.js";
import { href } from "../router.js";
import { can, type Session } from "../session.js";

type Channel = Awaited<ReturnType<Session["client"]["channels"]["get"]>>;

/** What each status means for the person reading it. */
function statusInWords(channel: Channel): string {
  if (channel.status === "active") return "Sending and receiving.";
  if (channel.status === "disconnected") {
    return `Disconnected: sends are refused and nothing is received until it is reconnected.${channel.status_reason ? ` ${channel.status_reason}` : ""}`;
  }
  return `Needs attention: the provider refused this channel's credentials, so messages are not going out. Update them (pnpm admin update-channel).${channel.status_reason ? ` The provider said: ${channel.status_reason}` : ""}`;
}

export function ChannelsView({ session }: { session: Session }) {
  const channels = useLoad(() => session.client.channels.list({ limit: 100 }), [session]);
  if (!can(session, "channels:read")) return <NotAllowed scope="channels:read" />;
  return (
    <Page title="Channels">
      <ErrorNotice error={channels.error} />
      {channels.data?.data.length === 0 && <p>No channel yet.</p>}
      <ul class="cards">
        {(channels.data?.data ?? []).map((channel) => (
          <li key={channel.id} class="card">
            <h2>
              {channel.name} <small>{channel.type}</small>{" "}
              {channel.sandbox && <span class="env env-test">sandbox</span>}
            </h2>
            <p>
              <Status value={channel.status} /> {statusInWords(channel)}
            </p>
            <p class="meta">
              <code>{channel.id}</code> · provider {channel.provider}
            </p>
            <p>
              Carries {channel.capabilities.message_types.join(", ")}; delivery receipts{" "}
              {channel.capabilities.delivery_receipts ? "yes" : "no"}, read receipts{" "}
              {channel.capabilities.read_receipts ? "yes" : "no"}
              {channel.capabilities.session_window
                ? `; free replies for ${channel.capabilities.session_window.hours} hours after the contact's last message`
                : ""}
              .
            </p>
            {channel.sandbox && can(session, "messages:write") && (
              <SimulateInbound session={session} channel={channel} />
            )}
          </li>
        ))}
      </ul>
    </Page>
  );
}

/** The sandbox's test helper: a message from a customer, as the channel would bring it. */
function SimulateInbound({ session, channel }: { session: Session; channel: Channel }) {
  const { client } = session;
  const [from, setFrom] = useState("");
  const [text, setText] = useState("Hello! Is my order on its way?");
  const [conversationId, setConversationId] = useState<string | undefined>();
  const { run, error, busy } = useAction();
  const sms = channel.type === "sms";
  const send = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      if (sms) {
        const message = await client.testHelpers.inboundMessages.create({
          channel_id: channel.id,
          from,
          type: "text",
          text,
        });
        setConversationId(message.conversation_id);
        return;
      }
      const contact = await client.contacts.create({ name: from || "Sandbox customer" });
      const conversation = await client.conversations.create({ contact_id: contact.id, channel_id: channel.id });
      await client.testHelpers.inboundMessages.create({ conversation_id: conversation.id, type: "text", text });
      setConversationId(conversation.id);
    });
  };
  const id = channel.id;
  return (
    <form class="simulate" onSubmit={send} aria-label={`Simulate a customer message on ${channel.name}`}>
      <span class="field">
        <label for={`from-${id}`}>{sms ? "From (phone)" : "Customer name"}</label>
        <input id={`from-${id}`} value={from} required={sms} onInput={(event) => setFrom(event.currentTarget.value)} />
      </span>
      <span class="field">
        <label for={`text-${id}`}>Message</label>
        <input id={`text-${id}`} value={text} required onInput={(event) => setText(event.currentTarget.value)} />
      </span>
      <button type="submit" disabled={busy}>
        Send as the customer
      </button>
      {conversationId && (
        <p>
          Received: <a href={href(`conversations/${conversationId}`)}>open the conversation</a>
        </p>
      )}
      <ErrorNotice error={error} />
    </form>
  );
}
