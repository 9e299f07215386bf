import type { Parley } from "@parley/sdk";
import { Command } from "commander";
import { type BodyOf, body, example, listOptions, listQuery, run, type SecondOf, str } from "../context.js";

type Conversations = Parley["conversations"];
const columns = [
  { header: "id", path: "id" },
  { header: "status", path: "status" },
  { header: "contact", path: "contact_id" },
  { header: "channel", path: "channel_id" },
  { header: "updated", path: "updated_at" },
];

export function conversationsCommand(): Command {
  const conv = new Command("conversations").description("Manage conversations");
  const client = async (ctx: { client(): Promise<Parley> }) => (await ctx.client()).conversations;
  example(
    listOptions(conv.command("list").description("List conversations"))
      .option("--status <status>", "open, pending or closed")
      .option("--contact <id>")
      .option("--channel <id>")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const query = {
            ...listQuery(o),
            ...body({}, { status: str(o.status), contact_id: str(o.contact), channel_id: str(o.channel) }),
          } as BodyOf<Conversations["list"]>;
          await ctx.list((await client(ctx)).list(query), columns);
        }),
      ),
    "parley conversations list --status open --all",
  );
  example(
    conv
      .command("get <id>")
      .description("Show a conversation")
      .action(run(async (ctx, id) => ctx.object(await (await client(ctx)).get(id)))),
    "parley conversations get conv_01J...",
  );
  example(
    conv
      .command("create")
      .description("Open a conversation with a contact")
      .requiredOption("--contact <id>", "the contact")
      .option("--channel <id>", "the channel (default: the contact's usual one)")
      .option("--external-id <id>")
      .option("--data <json>", "other body fields as a JSON object")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const fields = body(o, {
            contact_id: str(o.contact),
            channel_id: str(o.channel),
            external_id: str(o.externalId),
          });
          ctx.object(await (await client(ctx)).create(fields as BodyOf<Conversations["create"]>));
        }),
      ),
    "parley conversations create --contact cnt_01J... --channel chn_01J...",
  );
  example(
    conv
      .command("update <id>")
      .description("Update a conversation")
      .option("--status <status>", "open, pending or closed")
      .option("--external-id <id>")
      .option("--data <json>", "other body fields as a JSON object")
      .action(
        run(async (ctx, id) => {
          const o = ctx.options;
          const fields = body(o, { status: str(o.status), external_id: str(o.externalId) });
          ctx.object(await (await client(ctx)).update(id, fields as SecondOf<Conversations["update"]>));
        }),
      ),
    "parley conversations update conv_01J... --status pending",
  );
  for (const [verb, text] of [
    ["close", "Close a conversation"],
    ["reopen", "Reopen a closed conversation"],
    ["unassign", "Remove the agent and team"],
  ] as const) {
    example(
      conv
        .command(`${verb} <id>`)
        .description(text)
        .action(run(async (ctx, id) => ctx.object(await (await client(ctx))[verb](id)))),
      `parley conversations ${verb} conv_01J...`,
    );
  }
  example(
    conv
      .command("typing <id>")
      .description("Web chat: show the visitor typing dots for a few seconds (--stop hides them)")
      .option("--stop", "the agent stopped typing")
      .action(run(async (ctx, id) => ctx.object(await (await client(ctx)).typing(id, { typing: !ctx.options.stop })))),
    "parley conversations typing conv_01J...",
  );
  example(
    conv
      .command("assign <id>")
      .description("Assign to an agent and/or a team")
      .option("--user <id>")
      .option("--team <id>")
      .action(
        run(async (ctx, id) => {
          const fields = body({}, { user_id: str(ctx.options.user), team_id: str(ctx.options.team) });
          ctx.object(await (await client(ctx)).assign(id, fields as SecondOf<Conversations["assign"]>));
        }),
      ),
    "parley conversations assign conv_01J... --user usr_01J...",
  );
  example(
    listOptions(conv.command("notes <id>").description("List the internal notes, or add one with --add"))
      .option("--add <text>", "add a note with this text")
      .action(
        run(async (ctx, id) => {
          const add = str(ctx.options.add);
          const notes = (await client(ctx)).notes;
          if (add !== undefined) {
            ctx.object(await notes.create(id, { body: add }));
            return;
          }
          const query = listQuery(ctx.options) as SecondOf<Conversations["notes"]["list"]>;
          await ctx.list(notes.list(id, query), [
            { header: "id", path: "id" },
            { header: "created", path: "created_at" },
            { header: "body", path: "body" },
          ]);
        }),
      ),
    'parley conversations notes conv_01J... --add "Called back"',
  );
  example(
    conv
      .command("edit-note <id> <note_id>")
      .description("Edit a note this API key wrote")
      .requiredOption("--body <text>", "the new text")
      .action(
        run(async (ctx, id, note = "") =>
          ctx.object(await (await client(ctx)).notes.update(id, note, { body: String(ctx.options.body) })),
        ),
      ),
    'parley conversations edit-note conv_01J... note_01J... --body "Called back twice"',
  );
  example(
    conv
      .command("delete-note <id> <note_id>")
      .description("Delete a note this API key wrote")
      .action(run(async (ctx, id, note = "") => ctx.object(await (await client(ctx)).notes.delete(id, note)))),
    "parley conversations delete-note conv_01J... note_01J...",
  );
  example(
    conv
      .command("tag <id> <tag>")
      .description("Tag a conversation")
      .action(run(async (ctx, id, tag = "") => ctx.object(await (await client(ctx)).tags.add(id, { tag_id: tag })))),
    "parley conversations tag conv_01J... tag_01J...",
  );
  example(
    conv
      .command("untag <id> <tag>")
      .description("Remove a tag from a conversation")
      .action(run(async (ctx, id, tag = "") => ctx.object(await (await client(ctx)).tags.remove(id, tag)))),
    "parley conversations untag conv_01J... tag_01J...",
  );
  return conv;
}
