import { describe, expect, it } from "vitest";
import { Parley, ParleyError } from "./index.js";

// The main entry, as browsers and edge runtimes load it: nothing of Node's, so no file paths.
describe("the main entry without Node", () => {
  it("refuses a file path with a clear error and sends nothing", async () => {
    let requests = 0;
    const parley = new Parley({
      apiKey: "parley_test_x",
      fetch: async () => {
        requests++;
        return new Response("{}");
      },
    });
    const refused = await parley.uploads.create("./invoice.pdf").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ParleyError);
    expect((refused as Error).message).toContain("@parley/sdk/node");
    expect(requests).toBe(0);
  });

  it("still uploads bytes", async () => {
    const seen: string[] = [];
    const parley = new Parley({
      apiKey: "parley_test_x",
      fetch: async (input, init) => {
        seen.push(`${init?.method} ${String(input)}`);
        return new Response(JSON.stringify({ object: "attachment", id: "att_1" }), {
          status: 201,
          headers: { "content-type": "application/json" },
        });
      },
    });
    await parley.uploads.create(new Uint8Array([1, 2, 3]), { filename: "a.txt" });
    expect(seen).toEqual(["POST http://localhost:3000/v1/uploads"]);
  });
});
