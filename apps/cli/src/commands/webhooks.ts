import { eventTypes } from "@parley/schema/runtime";
import type { Parley } from "@parley/sdk";
import { Command } from "commander";
import { type BodyOf, body, example, listOptions, listQuery, run, type SecondOf, str } from "../context.js";

type Webhooks = Parley["webhooks"];
const columns = [
  { header: "id", path: "id" },
  { header: "url", path: "url" },
  { header: "events", path: "events" },
  { header: "enabled", path: "enabled" },
];

export function webhooksCommand(): Command {
  const hooks = new Command("webhooks").description("Webhook endpoints and their deliveries");
  example(
    listOptions(hooks.command("list").description("List webhook endpoints")).action(
      run(async (ctx) => {
        const query = listQuery(ctx.options) as BodyOf<Webhooks["list"]>;
        await ctx.list((await ctx.client()).webhooks.list(query), columns);
      }),
    ),
    "parley webhooks list",
  );
  example(
    hooks
      .command("create <url>")
      .description("Create an endpoint; prints its signing secret once")
      .option("--events <types>", "comma-separated event types (default: all)")
      .option("--description <text>")
      .action(
        run(async (ctx, url) => {
          const o = ctx.options;
          const input = body(
            {},
            {
              url,
              // The API wants the list explicitly; no --events means every type, as the help says.
              events: str(o.events)?.split(",").filter(Boolean) ?? [...eventTypes],
              description: str(o.description),
            },
          );
          ctx.object(await (await ctx.client()).webhooks.create(input as BodyOf<Webhooks["create"]>));
        }),
      ),
    "parley webhooks create https://example.com/hooks --events message.received,message.failed",
  );
  example(
    hooks
      .command("update <id>")
      .description("Change an endpoint")
      .option("--url <url>")
      .option("--events <types>", "comma-separated event types")
      .option("--description <text>")
      .option("--enable", "enable it (also clears the failure counter)")
      .option("--disable", "disable it")
      .action(
        run(async (ctx, hook) => {
          const o = ctx.options;
          const input = body(
            {},
            {
              url: str(o.url),
              events: str(o.events)?.split(",").filter(Boolean),
              description: str(o.description),
              enabled: o.enable === true ? true : o.disable === true ? false : undefined,
            },
          );
          ctx.object(await (await ctx.client()).webhooks.update(hook, input as SecondOf<Webhooks["update"]>));
        }),
      ),
    "parley webhooks update wh_01J... --disable",
  );
  example(
    hooks
      .command("delete <id>")
      .description("Delete an endpoint")
      .action(run(async (ctx, hook) => ctx.object(await (await ctx.client()).webhooks.delete(hook)))),
    "parley webhooks delete wh_01J...",
  );
  example(
    listOptions(hooks.command("deliveries <id>").description("List an endpoint's delivery attempts")).action(
      run(async (ctx, hook) => {
        const query = listQuery(ctx.options) as SecondOf<Webhooks["deliveries"]["list"]>;
        await ctx.list((await ctx.client()).webhooks.deliveries.list(hook, query), [
          { header: "id", path: "id" },
          { header: "event", path: "event_id" },
          { header: "status", path: "status" },
          { header: "response", path: "response_status" },
          { header: "created", path: "created_at" },
        ]);
      }),
    ),
    "parley webhooks deliveries wh_01J...",
  );
  example(
    hooks
      .command("test <id>")
      .description("Send a test event to an endpoint")
      .action(run(async (ctx, hook) => ctx.object(await (await ctx.client()).webhooks.test(hook)))),
    "parley webhooks test wh_01J...",
  );
  return hooks;
}

export function eventsCommand(): Command {
  const events = new Command("events").description("The event log");
  const columns = [
    { header: "id", path: "id" },
    { header: "type", path: "type" },
    { header: "created", path: "created_at" },
  ];
  example(
    listOptions(events.command("list").description("List events, newest first"))
      .option("--type <type>", "only this event type")
      .action(
        run(async (ctx) => {
          const query = { ...listQuery(ctx.options), ...body({}, { type: str(ctx.options.type) }) };
          await ctx.list((await ctx.client()).events.list(query as BodyOf<Parley["events"]["list"]>), columns);
        }),
      ),
    "parley events list --type message.received --limit 5",
  );
  example(
    events
      .command("get <id>")
      .description("Show an event")
      .action(run(async (ctx, event) => ctx.object(await (await ctx.client()).events.get(event)))),
    "parley events get evt_01J...",
  );
  return events;
}
