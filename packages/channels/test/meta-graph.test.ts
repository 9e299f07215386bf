import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TemporaryChannelError } from "../src/adapter.js";
import { graphFailure, MetaGraphError } from "../src/meta/errors.js";
import { createGraphClient, graphUrl } from "../src/meta/graph-client.js";
import { type MetaSimulator, metaError, startMetaSimulator } from "../testing/meta-simulator.js";

describe("graphFailure", () => {
  it.each([1, 2, 4, 17, 32, 341, 613, 80007, 130429, 131016, 131048, 131056, 133004])(
    "treats code %i as temporary, even with an HTTP 400",
    (code) => {
      const { status, body } = metaError(code, `(#${code}) Temporary`);
      expect(() => graphFailure(status, body)).toThrow(TemporaryChannelError);
    },
  );

  it.each([500, 502, 503, 504, 429, 408])("treats HTTP %i as temporary whatever the body", (status) => {
    expect(() => graphFailure(status, metaError(100, "(#100) Invalid parameter").body)).toThrow(TemporaryChannelError);
    expect(() => graphFailure(status, "<html>oops</html>")).toThrow(TemporaryChannelError);
  });

  it("treats 131000 as temporary only with a 5xx", () => {
    const { body } = metaError(131000, "(#131000) Something went wrong");
    expect(graphFailure(400, body)).toEqual({ code: "131000", message: "(#131000) Something went wrong" });
    expect(() => graphFailure(500, body)).toThrow(TemporaryChannelError);
  });

  it.each([
    [100, "(#100) Invalid parameter"],
    [190, "Error validating access token: Session has expired"],
    [10, "(#10) This message is sent outside of allowed window."],
    [131026, "(#131026) Message Undeliverable."],
    [131047, "Re-engagement message"],
    [368, "Temporarily blocked for policies violations"],
  ])("keeps code %i permanent, with Meta's message untranslated", (code, message) => {
    expect(graphFailure(400, metaError(code, message, { details: "More words" }).body)).toEqual({
      code: String(code),
      message,
    });
  });

  it("names the HTTP status when the answer is not a Graph error", () => {
    expect(graphFailure(403, "<html>Forbidden</html>")).toEqual({
      code: "http_403",
      message: "Meta answered HTTP 403",
    });
    expect(graphFailure(400, { error: "nope" })).toEqual({ code: "http_400", message: "Meta answered HTTP 400" });
  });

  it("puts Meta's message and code in the temporary fault, for the final provider_unavailable", () => {
    const { body } = metaError(130429, "(#130429) Rate limit hit");
    expect(() => graphFailure(400, body)).toThrow("(#130429) Rate limit hit (code 130429)");
  });
});

describe("graphUrl", () => {
  it.each([
    ["https://graph.facebook.com", "123/messages"],
    ["https://graph.facebook.com/", "/123/messages"],
  ])("joins %s, the version and %s", (graphBaseUrl, path) => {
    expect(graphUrl({ graphBaseUrl, apiVersion: "v23.0", timeoutMs: 1 }, path)).toBe(
      "https://graph.facebook.com/v23.0/123/messages",
    );
  });
});

describe("createGraphClient", () => {
  let simulator: MetaSimulator;
  beforeAll(async () => {
    simulator = await startMetaSimulator();
  });
  afterAll(() => simulator.close());
  beforeEach(() => simulator.reset());

  it("GETs with the token in the Authorization header and no body", async () => {
    const { id } = simulator.addMedia(Buffer.from("x"), "image/png");
    const answer = await createGraphClient(simulator.options(), simulator.accessToken).get(id);

    expect(answer).toMatchObject({ id, mime_type: "image/png", messaging_product: "whatsapp" });
    expect(simulator.requests).toMatchObject([{ method: "GET", path: `/v23.0/${id}`, body: null }]);
    expect(simulator.requests[0]?.headers.authorization).toBe(`Bearer ${simulator.accessToken}`);
  });

  it("throws a MetaGraphError with Meta's code when the token is refused, never naming the token", async () => {
    const token = "EAAthis-is-not-the-token";
    const error = await createGraphClient(simulator.options(), token)
      .post("123/messages", { messaging_product: "whatsapp" })
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );

    expect(error).toBeInstanceOf(MetaGraphError);
    expect(error).toMatchObject({ code: "190", status: 401 });
    expect(String((error as Error).message)).not.toContain(token);
  });

  it("throws a MetaGraphError for a 2xx answer that is not JSON", async () => {
    simulator.failNext(1, { status: 200, body: "<html>ok</html>" });
    await expect(createGraphClient(simulator.options(), simulator.accessToken).get("1")).rejects.toMatchObject({
      code: "unexpected_response",
    });
  });
});
