import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { operations } from "./catalogue.js";
import { buildOpenApiDocument } from "./openapi.js";
import { publicRoutes } from "./public-routes.js";
import { eventTypes } from "./resources/event-types.js";

type Document = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { operationId: string; "x-parley-scope": string; responses: Record<string, unknown> }>
  >;
};

describe("the OpenAPI document", () => {
  const document = buildOpenApiDocument({ serverUrl: "https://api.example.com/v1" }) as Document;

  it("validates as OpenAPI 3.1", async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("describes every operation of the catalogue with its scope and errors", () => {
    for (const operation of operations) {
      const described = document.paths[operation.path]?.[operation.method];
      expect(described?.operationId, operation.id).toBe(operation.id);
      expect(described?.["x-parley-scope"]).toBe(operation.scope ?? "none");
      expect(Object.keys(described?.responses ?? {})).toContain(String(operation.status));
      expect(Object.keys(described?.responses ?? {})).toContain("401");
    }
  });

  it("describes every webhook Parley sends: typed data, the signature header, a 2xx expected (issue 23, item 7)", () => {
    const full = document as unknown as {
      webhooks: Record<
        string,
        { post: { parameters: { name: string; required: boolean }[]; requestBody: any; responses: object } }
      >;
      components: { schemas: Record<string, any> };
    };
    expect(Object.keys(full.webhooks).sort()).toEqual([...eventTypes, "webhook.test"].sort());
    for (const [type, entry] of Object.entries(full.webhooks)) {
      expect(entry.post.parameters).toContainEqual(
        expect.objectContaining({ name: "X-Parley-Signature", required: true }),
      );
      expect(Object.keys(entry.post.responses)).toEqual(["2XX"]);
      const ref: string = entry.post.requestBody.content["application/json"].schema.$ref;
      const schema = full.components.schemas[ref.replace("#/components/schemas/", "")];
      expect(schema.properties.type.const, type).toBe(type);
      expect(schema.properties.data.type, type).toBe("object");
      expect(Object.keys(schema.properties.data.properties).length, type).toBeGreaterThan(0);
    }
    // message.received carries the message and the conversation as GET returns them.
    const received = full.components.schemas.MessageReceivedWebhook.properties.data;
    expect(received.required).toEqual(["message", "conversation"]);
  });

  it("types each event's data in GET /events (Event is a union discriminated by type)", () => {
    const schemas = (document as unknown as { components: { schemas: Record<string, any> } }).components.schemas;
    expect(schemas.Event.oneOf.length).toBe(eventTypes.length + 1);
  });

  it("describes the routes without an API key: web chat visitors and the Meta webhook, with their own tags and security (issue 23, item 8)", () => {
    const full = document as unknown as {
      paths: Record<string, Record<string, any>>;
      tags: { name: string }[];
      components: { securitySchemes: Record<string, unknown> };
    };
    for (const route of publicRoutes) {
      const described = full.paths[route.path]?.[route.method];
      expect(described?.operationId, route.id).toBe(route.id);
      expect(described.tags).toEqual([route.tag]);
      expect(described.security).toEqual(route.security === "none" ? [] : [{ [route.security]: [] }]);
    }
    expect(full.tags.map((tag) => tag.name)).toEqual(
      expect.arrayContaining(["Web chat visitors", "Provider webhooks"]),
    );
    expect(Object.keys(full.components.securitySchemes)).toEqual([
      "apiKey",
      "visitorToken",
      "metaSignature",
      "twilioSignature",
      "vonageSignature",
    ]);
    expect(full.paths["/webchat/{channel_id}"]?.servers).toEqual([{ url: "https://api.example.com" }]);
    expect(full.paths["/channels/webhooks/meta"]?.post.security).toEqual([{ metaSignature: [] }]);
    expect(full.paths["/channels/webhooks/twilio"]?.post.security).toEqual([{ twilioSignature: [] }]);
    for (const kind of ["inbound", "status"]) {
      expect(full.paths[`/channels/webhooks/vonage/${kind}`]?.post.security).toEqual([{ vonageSignature: [] }]);
    }
  });

  it("has one operation id per route", () => {
    const ids = operations.map((operation) => operation.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
