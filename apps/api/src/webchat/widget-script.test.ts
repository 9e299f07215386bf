import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { useTestApi } from "../../test/harness.js";

const api = useTestApi();

function widgetUrl(): string {
  return `${api.baseUrl.replace(/\/v1$/, "")}/webchat/widget.js`;
}

describe("GET /webchat/widget.js", () => {
  it("serves the launcher as cacheable JavaScript that a page on any site may load", async () => {
    const response = await fetch(widgetUrl(), { headers: { "accept-encoding": "identity" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("public, max-age=600");
    expect(response.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("set-cookie")).toBeNull();
    const etag = response.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(await response.text()).toContain("Parley web chat launcher");

    // Revalidation costs no body.
    const again = await fetch(widgetUrl(), { headers: { "accept-encoding": "identity", "if-none-match": `${etag}` } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    const changed = await fetch(widgetUrl(), { headers: { "accept-encoding": "identity", "if-none-match": '"old"' } });
    expect(changed.status).toBe(200);
  });

  it("weighs at most 10 kB gzipped, and is sent gzipped to a browser that accepts it", async () => {
    const plain = Buffer.from(
      await (await fetch(widgetUrl(), { headers: { "accept-encoding": "identity" } })).arrayBuffer(),
    );
    expect(gzipSync(plain, { level: 9 }).byteLength).toBeLessThanOrEqual(10 * 1024);

    // Node's fetch would decompress; read the bytes as they travel.
    const { request } = await import("node:http");
    const raw = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(widgetUrl(), { headers: { "accept-encoding": "gzip" } }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
      })
        .on("error", reject)
        .end();
    });
    expect(raw.headers["content-encoding"]).toBe("gzip");
    expect(raw.headers.vary).toBe("Accept-Encoding");
    expect(raw.body.byteLength).toBeLessThanOrEqual(10 * 1024);
    expect(gunzipSync(raw.body).equals(plain)).toBe(true);
  });
});
