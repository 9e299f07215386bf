import { Parley, ParleyError } from "@parley/sdk";

/** The key lives in the tab's sessionStorage: gone when the tab closes, never in a URL or a log. */
const STORAGE_KEY = "parley.console.key";

export type ApiKeyInfo = Awaited<ReturnType<Parley["apiKeys"]["current"]>>;

export interface Session {
  client: Parley;
  key: ApiKeyInfo;
}

function clientFor(apiKey: string): Parley {
  return new Parley({ apiKey, baseUrl: `${location.origin}/v1`, maxRetries: 1 });
}

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

/** Checks the key with the API (`GET /v1/api-keys/current`), then keeps it for this tab. */
export async function signIn(apiKey: string): Promise<Session> {
  const client = clientFor(apiKey.trim());
  const key = await client.apiKeys.current();
  sessionStorage.setItem(STORAGE_KEY, apiKey.trim());
  return { client, key };
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

export function can(session: Session, scope: string): boolean {
  return session.key.scopes.includes(scope as never);
}

/** What the console shows of a failure: the API's own message, its code and request id. */
export interface ShownError {
  message: string;
  code?: string | undefined;
  requestId?: string | undefined;
}

export function shownError(error: unknown): ShownError {
  if (error instanceof ParleyError) return { message: error.message, code: error.code, requestId: error.requestId };
  return { message: error instanceof Error ? error.message : String(error) };
}
