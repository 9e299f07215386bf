import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { eventTypes } from "@parley/schema/runtime";
import type { Parley } from "@parley/sdk";
import { Command } from "commander";
import { type BodyOf, example, run, str } from "../context.js";
import { dim, red } from "../output.js";

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function listenCommand(): Command {
  return example(
    new Command("listen")
      .description("Receive events through a temporary webhook endpoint and forward them to a local URL")
      .requiredOption("--forward-to <url>", "where to POST each event, e.g. http://localhost:4000/hooks")
      .option("--events <types>", "comma-separated event types (default: all)")
      .option("--host <host>", "address Parley can reach this machine at", "127.0.0.1")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const forwardTo = String(o.forwardTo);
          const parley = await ctx.client();
          let secret = "";
          const server = createServer(async (req, res) => {
            const raw = await readBody(req);
            res.writeHead(200).end();
            const signature = req.headers["x-parley-signature"];
            const header = Array.isArray(signature) ? signature[0] : signature;
            let line: string;
            try {
              const event = await parley.webhooks.constructEvent(raw, header, secret);
              line = `${event.created_at ?? new Date().toISOString()}  ${event.type}  ${event.id}`;
            } catch (error) {
              line = red(`unverified delivery: ${(error as Error).message}`, process.stdout);
            }
            if (ctx.mode === "json") process.stdout.write(`${raw.toString("utf8")}\n`);
            // Forward byte-for-byte with the original X-Parley-* headers, so the local app verifies with the same secret.
            const headers: Record<string, string> = {
              "content-type": req.headers["content-type"] ?? "application/json",
            };
            for (const [name, value] of Object.entries(req.headers)) {
              if (name.startsWith("x-parley-") && typeof value === "string") headers[name] = value;
            }
            try {
              const answer = await fetch(forwardTo, { method: "POST", headers, body: raw });
              if (ctx.mode !== "json") process.stdout.write(`${line}  -> ${answer.status}\n`);
            } catch (error) {
              if (ctx.mode !== "json") process.stdout.write(`${line}  -> ${red("unreachable", process.stdout)}\n`);
              process.stderr.write(`forwarding failed: ${(error as Error).message}\n`);
            }
          });
          await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
          const { port } = server.address() as AddressInfo;
          const events = str(o.events)?.split(",").filter(Boolean);
          const endpoint = await parley.webhooks.create({
            url: `http://${String(o.host)}:${port}/`,
            description: "parley listen (temporary)",
            events: events ?? [...eventTypes],
          } as BodyOf<Parley["webhooks"]["create"]>);
          secret = endpoint.secret ?? "";
          process.stderr.write(
            `Ready: endpoint ${endpoint.id}, forwarding to ${forwardTo}\n` +
              `Signing secret: ${secret}\n${dim("Ctrl-C to stop and delete the endpoint", process.stderr)}\n`,
          );
          await new Promise<void>((resolve) => {
            const stop = () => resolve();
            process.once("SIGINT", stop);
            process.once("SIGTERM", stop);
          });
          // The endpoint is temporary: leave nothing behind in the account.
          await parley.webhooks.delete(endpoint.id);
          server.close();
          process.stderr.write(`deleted endpoint ${endpoint.id}\n`);
        }),
      ),
    "parley listen --forward-to http://localhost:4000/hooks --events message.received",
  );
}
