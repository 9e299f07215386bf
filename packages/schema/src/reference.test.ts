import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderReference } from "./reference.js";

const directory = fileURLToPath(new URL("../../../docs/reference/", import.meta.url));

describe("docs/reference", () => {
  it("is what `pnpm run docs` generates from the catalogue (run it after changing the catalogue)", async () => {
    const expected = renderReference();
    const committed = (await readdir(directory)).filter((name) => name.endsWith(".md")).sort();
    expect(committed).toEqual([...expected.keys()].sort());
    for (const [name, content] of expected) {
      expect(await readFile(`${directory}${name}`, "utf8"), `docs/reference/${name} is stale`).toBe(content);
    }
  });
});
