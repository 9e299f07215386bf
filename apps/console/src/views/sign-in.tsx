import { useState } from "preact/hooks";
import { ErrorNotice, useAction } from "../components/common.js";
import { type Session, signIn } from "../session.js";

export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [key, setKey] = useState("");
  const { run, error, busy } = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void run(async () => onSignedIn(await signIn(key)));
  };
  return (
    <main id="main" class="sign-in">
      <h1>Parley console</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="parley_test_…"
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          required
        />
        <p class="hint">
          A test key shows the sandbox, a live key real conversations. The key stays in this tab only, and is forgotten
          when it closes or you sign out.
        </p>
        <button type="submit" disabled={busy || key.trim() === ""}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <ErrorNotice error={error} />
      </form>
    </main>
  );
}
