import * as fs from "node:fs";
import { usePathReader } from "./uploads.js";

// `@parley/sdk` on Node (and Deno, Bun): the whole client, plus uploads from a file path.
// The main entry imports nothing of Node's, so that browsers and edge runtimes bundle it.
usePathReader(async (path) =>
  typeof fs.openAsBlob === "function" ? fs.openAsBlob(path) : new Blob([await fs.promises.readFile(path)]),
);

export * from "./index.js";
export { default } from "./index.js";
