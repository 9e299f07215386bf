import { describe, expect, it } from "vitest";
import {
  type ApiResponse,
  as,
  type Client,
  createTestOrganization,
  expectError,
  useTestApi,
} from "../../test/harness.js";

const api = useTestApi();

interface Listed {
  id: string;
  created_at: string;
}

const MAX_CURSOR_LENGTH = 80;

function expectInvalidCursor(response: ApiResponse) {
  expectError(response, 422, "invalid_cursor");
  expect(response.body.error.param).toBe("after");
}

/** Creates contacts one after the other and returns their ids, oldest first. */
async function createContacts(client: Client, count: number, label = "Contact"): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await client.post("/contacts", { body: { name: `${label} ${i}` } });
    expect(response.status).toBe(201);
    ids.push(response.body.id);
  }
  return ids;
}

function expectListEnvelope(response: ApiResponse) {
  expect(response.status).toBe(200);
  expect(Object.keys(response.body).sort()).toEqual(["data", "object", "pagination"]);
  expect(response.body.object).toBe("list");
  expect(Object.keys(response.body.pagination).sort()).toEqual(["has_more", "next_cursor"]);
  const cursor = response.body.pagination.next_cursor;
  if (response.body.pagination.has_more) {
    expect(typeof cursor).toBe("string");
    expect(cursor.length).toBeGreaterThan(0);
    expect(cursor.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
  } else {
    expect(cursor).toBeNull();
  }
}

/** Follows `next_cursor` page by page; `between` runs after each page but the last. */
async function walk(client: Client, path: string, limit: number, between: () => Promise<unknown> = async () => {}) {
  const pages: ApiResponse[] = [];
  let after: string | undefined;
  for (let page = 0; page < 100; page++) {
    const response = await client.get(path, { query: { limit, after } });
    expectListEnvelope(response);
    pages.push(response);
    if (!response.body.pagination.has_more) return pages;
    after = response.body.pagination.next_cursor;
    await between();
  }
  throw new Error("the list did not end");
}

function idsOf(pages: ApiResponse[]): string[] {
  return pages.flatMap((page) => page.body.data.map((item: Listed) => item.id));
}

/** Any valid cursor of a list, from a page of one item. */
async function cursorOf(client: Client, path: string): Promise<string> {
  const response = await client.get(path, { query: { limit: 1 } });
  expectListEnvelope(response);
  expect(response.body.pagination.has_more).toBe(true);
  return response.body.pagination.next_cursor;
}

describe("limit", () => {
  it("defaults to 25 and accepts 1 to 100", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const ids = await createContacts(client, 26);
    const newestFirst = [...ids].reverse();

    const byDefault = await client.get("/contacts");
    expectListEnvelope(byDefault);
    expect(byDefault.body.data.map((contact: Listed) => contact.id)).toEqual(newestFirst.slice(0, 25));
    expect(byDefault.body.pagination.has_more).toBe(true);

    const one = await client.get("/contacts", { query: { limit: 1 } });
    expectListEnvelope(one);
    expect(one.body.data.map((contact: Listed) => contact.id)).toEqual(newestFirst.slice(0, 1));
    expect(one.body.pagination.has_more).toBe(true);

    const hundred = await client.get("/contacts", { query: { limit: 100 } });
    expectListEnvelope(hundred);
    expect(hundred.body.data.map((contact: Listed) => contact.id)).toEqual(newestFirst);
    expect(hundred.body.pagination).toEqual({ has_more: false, next_cursor: null });
  });

  it("refuses 0, 101 and anything that is not an integer with 422 validation_error", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    for (const limit of ["0", "101", "-1", "1000", "2.5", "ten", ""]) {
      const response = await client.get("/contacts", { query: { limit } });
      expectError(response, 422, "validation_error");
      expect(response.body.error.param).toBe("limit");
      expect(response.body.error.details.map((detail: { param: string }) => detail.param)).toEqual(["limit"]);
    }
    expectError(await client.get("/tags", { query: { limit: 101 } }), 422, "validation_error");
    expectError(await client.get("/custom-fields", { query: { limit: 0 } }), 422, "validation_error");
  });
});

describe("walking the pages", () => {
  it("returns every contact exactly once, newest first", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    const ids = await createContacts(client, 7);

    const pages = await walk(client, "/contacts", 2);

    expect(pages.map((page) => page.body.data.length)).toEqual([2, 2, 2, 1]);
    expect(idsOf(pages)).toEqual([...ids].reverse());
    const times = pages.flatMap((page) => page.body.data.map((item: Listed) => Date.parse(item.created_at)));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("ends with has_more false and next_cursor null, even on a full last page", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    expect((await client.get("/contacts")).body.pagination).toEqual({ has_more: false, next_cursor: null });
    const ids = await createContacts(client, 4);

    const pages = await walk(client, "/contacts", 2);

    expect(pages).toHaveLength(2);
    expect(pages.map((page) => page.body.pagination.has_more)).toEqual([true, false]);
    expect(pages[1]?.body.pagination.next_cursor).toBeNull();
    expect(idsOf(pages)).toEqual([...ids].reverse());
  });

  it("is not shifted by contacts created after a cursor was issued", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    const originals = await createContacts(client, 6, "Original");
    const added: string[] = [];

    const pages = await walk(client, "/contacts", 2, async () => {
      added.push(...(await createContacts(client, 2, "Late")));
    });

    const walked = idsOf(pages);
    expect(walked).toEqual([...originals].reverse());
    expect(new Set(walked).size).toBe(walked.length);
    expect(added).toHaveLength(4);
    const fresh = await client.get("/contacts", { query: { limit: 4 } });
    expect(fresh.body.data.map((contact: Listed) => contact.id)).toEqual([...added].reverse());
  });

  it("goes on after the contact a cursor points at was deleted", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    const newestFirst = (await createContacts(client, 5)).reverse();
    const firstPage = await client.get("/contacts", { query: { limit: 2 } });
    expect((await client.delete(`/contacts/${newestFirst[1]}`)).status).toBe(200);

    const rest = await client.get("/contacts", { query: { limit: 2, after: firstPage.body.pagination.next_cursor } });

    expectListEnvelope(rest);
    expect(rest.body.data.map((contact: Listed) => contact.id)).toEqual(newestFirst.slice(2, 4));
  });

  it("issues cursors of at most 80 characters on every list", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    await createContacts(client, 3);
    for (const name of ["vip", "lead", "churned"]) await client.post("/tags", { body: { name } });
    for (const name of ["Plan", "Region", "A custom field with a rather long name"]) {
      await client.post("/custom-fields", { body: { name } });
    }
    for (const path of ["/contacts", "/tags", "/custom-fields"]) {
      const pages = await walk(client, path, 1);
      expect(pages).toHaveLength(3);
      for (const page of pages.slice(0, -1)) {
        expect(page.body.pagination.next_cursor.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
      }
    }
  });
});

describe("cursors the service did not issue for this list: 422 invalid_cursor", () => {
  it("refuses forged cursors", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    await createContacts(client, 3);
    const forged = [
      "",
      "abc",
      "abc.def",
      "a.b.c",
      Buffer.from(`${Date.now().toString(36)}~cnt_00000000000000000000000000`).toString("base64url"),
      `${Buffer.from(`${Date.now().toString(36)}~cnt_00000000000000000000000000`).toString("base64url")}.AAAAAAAAAAAAAAAA`,
      "eyJpZCI6ImNudF8xIn0",
    ];
    for (const after of forged) expectInvalidCursor(await client.get("/contacts", { query: { after } }));
  });

  it("refuses a tampered cursor", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    await createContacts(client, 3);
    const cursor = await cursorOf(client, "/contacts");
    expect((await client.get("/contacts", { query: { after: cursor } })).status).toBe(200);
    const [payload = "", signature = ""] = cursor.split(".");
    const flip = (text: string, index: number) =>
      text.slice(0, index) + (text[index] === "A" ? "B" : "A") + text.slice(index + 1);
    const tampered = [
      `${flip(payload, 0)}.${signature}`,
      `${flip(payload, payload.length - 2)}.${signature}`,
      `${payload}.${flip(signature, 3)}`,
      `${payload}.${signature.slice(0, -1)}`,
      `${payload}.${signature}A`,
      `${payload}${signature}`,
      cursor.toUpperCase(),
    ];
    for (const after of tampered) {
      expect(after).not.toBe(cursor);
      expectInvalidCursor(await client.get("/contacts", { query: { after } }));
    }
  });

  it("refuses a cursor longer than 80 characters", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    await createContacts(client, 3);
    const cursor = await cursorOf(client, "/contacts");
    for (const after of [cursor + "x".repeat(MAX_CURSOR_LENGTH + 1 - cursor.length), "x".repeat(500)]) {
      expect(after.length).toBeGreaterThan(MAX_CURSOR_LENGTH);
      expectInvalidCursor(await client.get("/contacts", { query: { after } }));
    }
  });

  it("refuses a cursor of another list", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    await createContacts(client, 3);
    for (const name of ["vip", "lead", "churned"]) await client.post("/tags", { body: { name } });
    for (const name of ["Plan", "Region"]) await client.post("/custom-fields", { body: { name } });
    const tagCursor = await cursorOf(client, "/tags");
    const contactCursor = await cursorOf(client, "/contacts");
    const fieldCursor = await cursorOf(client, "/custom-fields");

    expectInvalidCursor(await client.get("/contacts", { query: { after: tagCursor } }));
    expectInvalidCursor(await client.get("/contacts", { query: { after: fieldCursor } }));
    expectInvalidCursor(await client.get("/tags", { query: { after: contactCursor } }));
    expectInvalidCursor(await client.get("/custom-fields", { query: { after: tagCursor } }));
    expect((await client.get("/tags", { query: { after: tagCursor } })).status).toBe(200);
  });

  it("refuses a cursor of another organization", async () => {
    const mine = as(api, (await createTestOrganization(api)).test);
    const theirs = as(api, (await createTestOrganization(api)).test);
    await createContacts(mine, 3);
    await createContacts(theirs, 3);
    const foreign = await cursorOf(theirs, "/contacts");

    expectInvalidCursor(await mine.get("/contacts", { query: { after: foreign } }));
    expect((await theirs.get("/contacts", { query: { after: foreign } })).status).toBe(200);
  });

  it("refuses a cursor of the other environment", async () => {
    const org = await createTestOrganization(api);
    const live = as(api, org.live);
    const test = as(api, org.test);
    await createContacts(live, 3);
    await createContacts(test, 3);

    expectInvalidCursor(await live.get("/contacts", { query: { after: await cursorOf(test, "/contacts") } }));
    expectInvalidCursor(await test.get("/contacts", { query: { after: await cursorOf(live, "/contacts") } }));
  });

  it("refuses a bad cursor even when the list is empty", async () => {
    const client = as(api, (await createTestOrganization(api)).test);
    expectInvalidCursor(await client.get("/contacts", { query: { after: "abc.def" } }));
    expectInvalidCursor(await client.get("/tags", { query: { after: "abc.def" } }));
  });
});
