import { describe, expect, it } from "vitest";
import vectors from "../test-vectors.json" with { type: "json" };
import {
  constructEvent,
  MalformedSignatureError,
  MissingSignatureError,
  NoMatchingSignatureError,
  signPayload,
  TimestampOutsideToleranceError,
  verifySignature,
} from "./index.js";

describe("the shared test vectors", () => {
  for (const vector of vectors.vectors) {
    it(`verifies ${vector.name} with each of its secrets`, async () => {
      for (const secret of vector.secrets) {
        await expect(
          verifySignature(vector.body, vector.header, secret, { now: vector.timestamp }),
        ).resolves.toBeUndefined();
      }
    });

    it(`refuses ${vector.name} with another secret or a changed body`, async () => {
      const [secret = ""] = vector.secrets;
      await expect(
        verifySignature(vector.body, vector.header, `${secret}x`, { now: vector.timestamp }),
      ).rejects.toThrow(NoMatchingSignatureError);
      await expect(
        verifySignature(`${vector.body} `, vector.header, secret, { now: vector.timestamp }),
      ).rejects.toThrow(NoMatchingSignatureError);
    });

    it(`signs ${vector.name} like Parley does`, async () => {
      const [secret = ""] = vector.secrets;
      const single = vector.header.split(",").slice(0, 2).join(",");
      expect(await signPayload(vector.body, secret, vector.timestamp)).toBe(single);
    });
  }
});

describe("verifySignature", () => {
  const [vector] = vectors.vectors;
  if (!vector) throw new Error("no test vectors");
  const secret = vector.secrets[0] ?? "";

  it("accepts the raw body as bytes", async () => {
    const bytes = new TextEncoder().encode(vector.body);
    await expect(verifySignature(bytes, vector.header, secret, { now: vector.timestamp })).resolves.toBeUndefined();
  });

  it("refuses a missing header", async () => {
    await expect(verifySignature(vector.body, undefined, secret)).rejects.toThrow(MissingSignatureError);
    await expect(verifySignature(vector.body, "", secret)).rejects.toThrow(MissingSignatureError);
  });

  it("refuses a malformed header", async () => {
    for (const header of ["v1=abc", "t=123", "t=abc,v1=00", "garbage"]) {
      await expect(verifySignature(vector.body, header, secret, { now: 123 })).rejects.toThrow(MalformedSignatureError);
    }
  });

  it("refuses a timestamp outside the tolerance, either way, and accepts one at its edge", async () => {
    const options = (now: number) => ({ now, tolerance: 300 });
    await expect(verifySignature(vector.body, vector.header, secret, options(vector.timestamp + 301))).rejects.toThrow(
      TimestampOutsideToleranceError,
    );
    await expect(verifySignature(vector.body, vector.header, secret, options(vector.timestamp - 301))).rejects.toThrow(
      TimestampOutsideToleranceError,
    );
    await expect(
      verifySignature(vector.body, vector.header, secret, options(vector.timestamp + 300)),
    ).resolves.toBeUndefined();
  });

  it("refuses a signature that is not hex", async () => {
    await expect(
      verifySignature(vector.body, `t=${vector.timestamp},v1=zz`, secret, { now: vector.timestamp }),
    ).rejects.toThrow(NoMatchingSignatureError);
  });

  it("constructs the typed event from a verified body", async () => {
    const event = await constructEvent(vector.body, vector.header, secret, { now: vector.timestamp });
    expect(event.type).toBe("contact.created");
    expect(event.id).toBe("evt_01JZ8Q2K3M4N5P6Q7R8S9T0V1W");
  });
});
