import { createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Parley } from "@parley/sdk";
import { Command } from "commander";
import { body, example, listOptions, listQuery, run, type SecondOf, str } from "../context.js";
import { UsageError } from "../errors.js";
import { uploadFile } from "../upload.js";

type Messages = Parley["messages"];
const columns = [
  { header: "id", path: "id" },
  { header: "direction", path: "direction" },
  { header: "type", path: "type" },
  { header: "status", path: "status" },
  { header: "text", path: "text" },
  { header: "created", path: "created_at" },
];

/** The message type the server expects for an attachment of this content type. */
export function messageTypeFor(contentType: string): "image" | "video" | "audio" | "document" {
  if (contentType.startsWith("image/")) return "image";
  if (contentType.startsWith("video/")) return "video";
  if (contentType.startsWith("audio/")) return "audio";
  return "document";
}

export function messagesCommand(): Command {
  const messages = new Command("messages").description("Send and read messages");
  example(
    messages
      .command("send")
      .description("Send a text, or a file as image, video, audio or document")
      .requiredOption("--conversation <id>", "the conversation")
      .option("--text <text>", "the text, or the caption of a file")
      .option("--file <path>", "upload this file and send it")
      .option("--data <json>", "other body fields as a JSON object (metadata)")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const text = str(o.text);
          const file = str(o.file);
          if (text === undefined && file === undefined) throw new UsageError("give --text or --file");
          const parley = await ctx.client();
          let fields: Record<string, unknown>;
          if (file !== undefined) {
            const attachment = await uploadFile(parley, file);
            fields = body(o, {
              conversation_id: str(o.conversation),
              type: messageTypeFor(attachment.content_type),
              attachment_id: attachment.id,
              text,
            });
          } else {
            fields = body(o, { conversation_id: str(o.conversation), type: "text", text });
          }
          ctx.object(await parley.messages.send(fields as Parameters<Messages["send"]>[0]));
        }),
      ),
    'parley messages send --conversation conv_01J... --text "Hello!"\n  parley messages send --conversation conv_01J... --file ./invoice.pdf --text "Your invoice"',
  );
  example(
    listOptions(messages.command("list").description("List a conversation's messages, newest first"))
      .requiredOption("--conversation <id>", "the conversation")
      .option("--direction <direction>", "inbound or outbound")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const query = { ...listQuery(o), ...body({}, { direction: str(o.direction) }) } as SecondOf<Messages["list"]>;
          await ctx.list((await ctx.client()).messages.list(String(o.conversation), query), columns);
        }),
      ),
    "parley messages list --conversation conv_01J... --limit 50",
  );
  example(
    messages
      .command("get <id>")
      .description("Show a message")
      .action(run(async (ctx, id) => ctx.object(await (await ctx.client()).messages.get(id)))),
    "parley messages get msg_01J...",
  );
  return messages;
}

export function uploadsCommand(): Command {
  const uploads = new Command("uploads").description("Upload files to send later");
  example(
    uploads
      .command("create <path>")
      .description("Upload a file; prints the attachment")
      .action(run(async (ctx, file) => ctx.object(await uploadFile(await ctx.client(), file)))),
    "parley uploads create ./photo.jpg",
  );
  return uploads;
}

export function attachmentsCommand(): Command {
  const attachments = new Command("attachments").description("Download attachments");
  example(
    attachments
      .command("download <id>")
      .description("Download an attachment to a file (--output) or stdout")
      .option("-o, --output <path>", "file or directory to write; - for stdout (default)")
      .action(
        run(async (ctx, id) => {
          const file = await (await ctx.client()).attachments.download(id);
          const source = Readable.fromWeb(file.stream as NodeReadableStream<Uint8Array>);
          const output = str(ctx.options.output);
          if (output === undefined || output === "-") {
            await pipeline(source, process.stdout, { end: false });
            return;
          }
          const isDirectory = await stat(output).then(
            (s) => s.isDirectory(),
            () => false,
          );
          const target = isDirectory ? path.join(output, file.filename ?? id) : output;
          await pipeline(source, createWriteStream(target));
          process.stderr.write(`saved ${target} (${file.contentType})\n`);
        }),
      ),
    "parley attachments download att_01J... -o ./downloads/",
  );
  return attachments;
}
