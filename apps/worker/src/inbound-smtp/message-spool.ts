import { randomUUID } from "node:crypto";
import { type FileHandle, open, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { SMTPServerDataStream } from "smtp-server";

/** Bytes of a message kept in memory as it arrives; past them it waits in a temporary file. */
export const IN_MEMORY_BYTES = 1024 * 1024;

export interface ReadMessageOptions {
  /** Above this many bytes the message is refused (null). */
  limit: number;
  /** Where a message above `inMemoryBytes` waits; the system's temporary directory by default. */
  directory?: string;
  inMemoryBytes?: number;
  /** Told the size of every chunk read, kept or not. */
  onBytes?: (bytes: number) => void;
}

/**
 * The message's bytes, or null when it passed `limit`. Its first `inMemoryBytes` are kept
 * in memory; a longer message is written on to a temporary file, unlinked as soon as it
 * is open (a crash leaves nothing on disk), and read back once the message ended within
 * the limit. Past the limit nothing is kept (the file is closed) and the rest is read and
 * discarded, so the client gets its 552 after the final dot while the process held at
 * most `inMemoryBytes` of the message.
 */
export async function readMessage(stream: SMTPServerDataStream, options: ReadMessageOptions): Promise<Buffer | null> {
  const { limit, inMemoryBytes = IN_MEMORY_BYTES, onBytes } = options;
  let kept: Buffer[] = [];
  let length = 0;
  let file: SpoolFile | undefined;
  let tooLarge = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      onBytes?.(chunk.length);
      if (tooLarge) continue;
      length += chunk.length;
      if (length > limit || stream.sizeExceeded) {
        tooLarge = true;
        kept = [];
        await file?.close();
        file = undefined;
      } else if (file) {
        await file.append(chunk);
      } else if (length > inMemoryBytes) {
        file = await SpoolFile.open(options.directory ?? tmpdir());
        await file.append(Buffer.concat([...kept, chunk], length));
        kept = [];
      } else {
        kept.push(chunk);
      }
    }
    if (tooLarge || stream.sizeExceeded) return null;
    return file ? await file.readAll() : Buffer.concat(kept, length);
  } finally {
    await file?.close();
  }
}

/** A temporary file readable and writable by this process only, unlinked while open where the system allows. */
class SpoolFile {
  private size = 0;
  private closed = false;

  private constructor(
    private readonly handle: FileHandle,
    /** Set when the file could not be unlinked while open (Windows): unlinked on close. */
    private readonly linkedPath: string | undefined,
  ) {}

  static async open(directory: string): Promise<SpoolFile> {
    const file = path.join(directory, `parley-inbound-${randomUUID()}.eml`);
    const handle = await open(file, "wx+", 0o600);
    const unlinked = await unlink(file).then(
      () => true,
      () => false,
    );
    return new SpoolFile(handle, unlinked ? undefined : file);
  }

  async append(chunk: Buffer): Promise<void> {
    for (let offset = 0; offset < chunk.length; ) {
      const { bytesWritten } = await this.handle.write(chunk, offset, chunk.length - offset, this.size + offset);
      offset += bytesWritten;
    }
    this.size += chunk.length;
  }

  async readAll(): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(this.size);
    for (let offset = 0; offset < this.size; ) {
      const { bytesRead } = await this.handle.read(buffer, offset, this.size - offset, offset);
      if (bytesRead === 0) throw new Error("the temporary file of an inbound message ended early");
      offset += bytesRead;
    }
    return buffer;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
    if (this.linkedPath) await unlink(this.linkedPath).catch(() => {});
  }
}
