import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { Attachment, Parley } from "@parley/sdk";
import { UsageError } from "./errors.js";

/** Uploads a file from disk, drawing a progress bar on stderr when it is a terminal. */
export async function uploadFile(parley: Parley, file: string): Promise<Attachment> {
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw new UsageError(`no such file: ${file}`);
  const total = info.size;
  const tty = process.stderr.isTTY === true;
  let sent = 0;
  const draw = () => {
    const width = 30;
    const ratio = total === 0 ? 1 : sent / total;
    const filled = Math.round(ratio * width);
    process.stderr.write(
      `\r${path.basename(file)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${Math.round(ratio * 100)}%`,
    );
  };
  // Counting bytes as the SDK reads them is what the progress bar shows; without a terminal it stays silent.
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of createReadStream(file)) {
      const bytes = chunk as Buffer;
      sent += bytes.length;
      if (tty) draw();
      yield new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
    }
  }
  try {
    return await parley.uploads.create(tty ? counted() : file, { filename: path.basename(file) });
  } finally {
    if (tty) process.stderr.write("\n");
  }
}
