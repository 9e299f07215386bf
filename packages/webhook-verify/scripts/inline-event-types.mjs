// After tsup: replace the type-only import of `@parley/schema/event-types` in the
// declarations with the catalogue's event types themselves.
import { readFile, writeFile } from "node:fs/promises";
import { eventTypes } from "@parley/schema";

const union = eventTypes.map((type) => JSON.stringify(type)).join(" | ");
for (const file of ["dist/index.d.ts", "dist/index.d.cts"]) {
  const text = await readFile(file, "utf8");
  const inlined = text.replace(
    /import (type )?\{ EventType \} from ['"]@parley\/schema\/event-types['"];/,
    `/** The event types of the Parley API. */\ntype EventType = ${union};`,
  );
  if (inlined === text) throw new Error(`${file}: the EventType import was not found`);
  await writeFile(file, inlined);
}
