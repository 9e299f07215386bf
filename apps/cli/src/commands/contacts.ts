import type { Parley } from "@parley/sdk";
import { Command } from "commander";
import { type BodyOf, body, example, listOptions, listQuery, run, type SecondOf, str } from "../context.js";

type Contacts = Parley["contacts"];
const columns = [
  { header: "id", path: "id" },
  { header: "name", path: "name" },
  { header: "email", path: "email" },
  { header: "phone", path: "phone" },
  { header: "created", path: "created_at" },
];

function fieldOptions(command: Command): Command {
  return command
    .option("--name <name>")
    .option("--first-name <name>")
    .option("--last-name <name>")
    .option("--email <email>")
    .option("--phone <phone>")
    .option("--external-id <id>")
    .option("--tags <ids>", "comma-separated tag ids")
    .option("--data <json>", "other body fields as a JSON object");
}

function fields(o: Record<string, unknown>): Record<string, unknown> {
  return body(o, {
    name: str(o.name),
    first_name: str(o.firstName),
    last_name: str(o.lastName),
    email: str(o.email),
    phone: str(o.phone),
    external_id: str(o.externalId),
    tags: str(o.tags)?.split(",").filter(Boolean),
  });
}

export function contactsCommand(): Command {
  const contacts = new Command("contacts").description("Manage contacts");
  example(
    listOptions(contacts.command("list").description("List contacts, newest first"))
      .option("--query <text>", "search name, email, phone and external id")
      .option("--email <email>")
      .option("--tag <id>", "only contacts with this tag")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const query = {
            ...listQuery(o),
            ...body({}, { query: str(o.query), email: str(o.email), tag_id: str(o.tag) }),
          } as BodyOf<Contacts["list"]>;
          await ctx.list((await ctx.client()).contacts.list(query), columns);
        }),
      ),
    "parley contacts list --query ada --limit 10",
  );
  example(
    contacts
      .command("get <id>")
      .description("Show a contact")
      .action(run(async (ctx, id) => ctx.object(await (await ctx.client()).contacts.get(id)))),
    "parley contacts get cnt_01J...",
  );
  example(
    fieldOptions(contacts.command("create").description("Create a contact")).action(
      run(async (ctx) =>
        ctx.object(await (await ctx.client()).contacts.create(fields(ctx.options) as BodyOf<Contacts["create"]>)),
      ),
    ),
    'parley contacts create --name "Ada Lovelace" --email ada@example.com',
  );
  example(
    fieldOptions(contacts.command("update <id>").description("Update a contact")).action(
      run(async (ctx, id) =>
        ctx.object(await (await ctx.client()).contacts.update(id, fields(ctx.options) as SecondOf<Contacts["update"]>)),
      ),
    ),
    "parley contacts update cnt_01J... --phone +447700900123",
  );
  example(
    contacts
      .command("delete <id>")
      .description("Delete a contact with its conversations and messages")
      .action(run(async (ctx, id) => ctx.object(await (await ctx.client()).contacts.delete(id)))),
    "parley contacts delete cnt_01J...",
  );
  example(
    listOptions(
      contacts.command("opt-outs <id>").description("List the SMS channels the contact texted STOP to, newest first"),
    ).action(
      run(async (ctx, id) => {
        const query = listQuery(ctx.options) as SecondOf<Contacts["optOuts"]["list"]>;
        await ctx.list((await ctx.client()).contacts.optOuts.list(id, query), [
          { header: "channel", path: "channel_id" },
          { header: "keyword", path: "keyword" },
          { header: "since", path: "created_at" },
        ]);
      }),
    ),
    "parley contacts opt-outs cnt_01J...",
  );
  return contacts;
}
