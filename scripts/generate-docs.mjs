import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { renderReference, renderRouteTable } from "../packages/schema/dist/index.js";

// `pnpm docs`: writes docs/reference/ from the catalogue. A test fails when it is stale.
const directory = fileURLToPath(new URL("../docs/reference", import.meta.url));
await mkdir(directory, { recursive: true });
const files = renderReference();
for (const name of await readdir(directory)) {
  if (name.endsWith(".md") && !files.has(name)) await rm(path.join(directory, name));
}
for (const [name, content] of files) await writeFile(path.join(directory, name), content);
process.stdout.write(`docs/reference: ${files.size} files written\n`);
// The route table clients read at run time without zod (`@parley/schema/runtime`).
await writeFile(
  fileURLToPath(new URL("../packages/schema/src/routes.generated.ts", import.meta.url)),
  renderRouteTable(),
);
process.stdout.write("packages/schema/src/routes.generated.ts written\n");
