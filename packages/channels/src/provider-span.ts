import { hostOf, withSpan } from "@parley/tracing";

/** What a provider's refusal says, for its span: the HTTP status and the provider's own code. */
export interface ProviderRefusal {
  status: number | null;
  code: string;
}

/**
 * One call to a provider's API in a client span: the method, the host and, when it fails,
 * the provider's answer (`refusalOf` reads its error class); never the path (it may hold
 * an account id), the query, a credential, a number or a body.
 */
export function providerCallSpan<T>(
  name: string,
  method: string,
  url: string,
  refusalOf: (error: unknown) => ProviderRefusal | undefined,
  call: () => Promise<T>,
): Promise<T> {
  const attributes = () => ({ "http.request.method": method, "server.address": hostOf(url) });
  return withSpan(name, { kind: "client", attributes }, async (span) => {
    try {
      return await call();
    } catch (error) {
      const refusal = refusalOf(error);
      if (refusal?.status != null) span.setAttribute("http.response.status_code", refusal.status);
      if (refusal) span.setAttribute("parley.provider.error_code", refusal.code);
      throw error;
    }
  });
}
