import { useEffect, useState } from "preact/hooks";
import { type Route, useRoute } from "./router.js";
import { type Session, signIn, signOut, storedKey } from "./session.js";
import { ChannelsView } from "./views/channels.js";
import { ContactsView, ContactView } from "./views/contacts.js";
import { ConversationView } from "./views/conversation.js";
import { ConversationsView } from "./views/conversations.js";
import { EventsView } from "./views/events.js";
import { SignIn } from "./views/sign-in.js";
import { WebhooksView, WebhookView } from "./views/webhooks.js";

const SECTIONS = [
  { path: "conversations", label: "Conversations" },
  { path: "contacts", label: "Contacts" },
  { path: "channels", label: "Channels" },
  { path: "webhooks", label: "Webhooks" },
  { path: "events", label: "Events" },
];

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedKey() !== null);
  useEffect(() => {
    const key = storedKey();
    if (!key) return;
    // A key kept by this tab: checked again, and forgotten when the API refuses it.
    signIn(key)
      .then(setSession, () => signOut())
      .finally(() => setRestoring(false));
  }, []);
  if (restoring) return <p class="loading">Signing in…</p>;
  if (!session) return <SignIn onSignedIn={setSession} />;
  const leave = () => {
    signOut();
    setSession(null);
    location.hash = "";
  };
  return <Shell session={session} onSignOut={leave} />;
}

function Shell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const route = useRoute();
  const section = route.path[0] ?? "conversations";
  const test = session.key.environment === "test";
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class={test ? "top test" : "top"}>
        <span class="brand">Parley</span>
        <span class="org">{session.key.organization.name}</span>
        <span class={test ? "env env-test" : "env env-live"} title={`Signed in with ${session.key.redacted_key}`}>
          {test ? "TEST" : "LIVE"}
        </span>
        <nav aria-label="Sections">
          {SECTIONS.map((item) => (
            <a key={item.path} href={`#/${item.path}`} aria-current={section === item.path ? "page" : undefined}>
              {item.label}
            </a>
          ))}
        </nav>
        <button type="button" class="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main">
        <View route={route} session={session} />
      </main>
    </>
  );
}

function View({ route, session }: { route: Route; session: Session }) {
  const [section = "conversations", id] = route.path;
  switch (section) {
    case "conversations":
      return id ? (
        <ConversationView session={session} id={id} />
      ) : (
        <ConversationsView session={session} route={route} />
      );
    case "contacts":
      return id ? <ContactView session={session} id={id} /> : <ContactsView session={session} route={route} />;
    case "channels":
      return <ChannelsView session={session} />;
    case "webhooks":
      return id ? <WebhookView session={session} id={id} /> : <WebhooksView session={session} />;
    case "events":
      return <EventsView session={session} route={route} />;
    default:
      return <p>No such page.</p>;
  }
}
