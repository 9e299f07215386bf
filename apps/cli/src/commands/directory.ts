import type { Parley } from "@parley/sdk";
import { Command } from "commander";
import { type BodyOf, body, example, listOptions, listQuery, run, type SecondOf, str } from "../context.js";

/** Channels, users, teams, tags and custom fields: the organization's reference data. */
const id = { header: "id", path: "id" };
const name = { header: "name", path: "name" };

export function channelsCommand(): Command {
  const channels = new Command("channels").description("List the connected channels");
  example(
    listOptions(channels.command("list").description("List channels"))
      .option("--type <type>", "whatsapp, instagram, messenger, email, webchat or sms")
      .action(
        run(async (ctx) => {
          const query = { ...listQuery(ctx.options), ...body({}, { type: str(ctx.options.type) }) };
          await ctx.list((await ctx.client()).channels.list(query as BodyOf<Parley["channels"]["list"]>), [
            id,
            { header: "type", path: "type" },
            name,
            { header: "environment", path: "environment" },
          ]);
        }),
      ),
    "parley channels list --type whatsapp",
  );
  example(
    channels
      .command("get <id>")
      .description("Show a channel and its capabilities")
      .action(run(async (ctx, channel) => ctx.object(await (await ctx.client()).channels.get(channel)))),
    "parley channels get chn_01J...",
  );
  return channels;
}

export function usersCommand(): Command {
  const users = new Command("users").description("The organization's agents");
  example(
    listOptions(users.command("list").description("List agents")).action(
      run(async (ctx) => {
        const query = listQuery(ctx.options) as BodyOf<Parley["users"]["list"]>;
        await ctx.list((await ctx.client()).users.list(query), [
          id,
          name,
          { header: "email", path: "email" },
          { header: "role", path: "role" },
        ]);
      }),
    ),
    "parley users list --all",
  );
  return users;
}

export function teamsCommand(): Command {
  const teams = new Command("teams").description("Teams of agents");
  example(
    listOptions(teams.command("list").description("List teams")).action(
      run(async (ctx) => {
        const query = listQuery(ctx.options) as BodyOf<Parley["teams"]["list"]>;
        await ctx.list((await ctx.client()).teams.list(query), [id, name]);
      }),
    ),
    "parley teams list",
  );
  example(
    teams
      .command("create <name>")
      .description("Create a team")
      .action(run(async (ctx, team) => ctx.object(await (await ctx.client()).teams.create({ name: team })))),
    'parley teams create "Support"',
  );
  example(
    listOptions(teams.command("members <id>").description("List a team's agents")).action(
      run(async (ctx, team) => {
        const query = listQuery(ctx.options) as SecondOf<Parley["teams"]["users"]["list"]>;
        await ctx.list((await ctx.client()).teams.users.list(team, query), [
          id,
          name,
          { header: "email", path: "email" },
        ]);
      }),
    ),
    "parley teams members team_01J...",
  );
  example(
    teams
      .command("update <id>")
      .description("Rename a team")
      .requiredOption("--name <name>")
      .action(
        run(async (ctx, team) =>
          ctx.object(await (await ctx.client()).teams.update(team, { name: String(ctx.options.name) })),
        ),
      ),
    'parley teams update team_01J... --name "Tier 2"',
  );
  example(
    teams
      .command("delete <id>")
      .description("Delete a team (its conversations keep their agent)")
      .action(run(async (ctx, team) => ctx.object(await (await ctx.client()).teams.delete(team)))),
    "parley teams delete team_01J...",
  );
  example(
    teams
      .command("add-member <id> <user_id>")
      .description("Add an agent to a team")
      .action(
        run(async (ctx, team, user) => ctx.object(await (await ctx.client()).teams.users.add(team, { user_id: user }))),
      ),
    "parley teams add-member team_01J... usr_01J...",
  );
  example(
    teams
      .command("remove-member <id> <user_id>")
      .description("Remove an agent from a team")
      .action(run(async (ctx, team, user) => ctx.object(await (await ctx.client()).teams.users.remove(team, user)))),
    "parley teams remove-member team_01J... usr_01J...",
  );
  return teams;
}

export function tagsCommand(): Command {
  const tags = new Command("tags").description("Tags for contacts and conversations");
  const columns = [id, name, { header: "color", path: "color" }];
  example(
    listOptions(tags.command("list").description("List tags")).action(
      run(async (ctx) => {
        const query = listQuery(ctx.options) as BodyOf<Parley["tags"]["list"]>;
        await ctx.list((await ctx.client()).tags.list(query), columns);
      }),
    ),
    "parley tags list",
  );
  example(
    tags
      .command("create <name>")
      .description("Create a tag")
      .option("--color <hex>", "#RRGGBB")
      .action(
        run(async (ctx, tag) => {
          const fields = body({}, { name: tag, color: str(ctx.options.color) });
          ctx.object(await (await ctx.client()).tags.create(fields as BodyOf<Parley["tags"]["create"]>));
        }),
      ),
    'parley tags create vip --color "#FFAA00"',
  );
  example(
    tags
      .command("update <id>")
      .description("Rename or recolour a tag")
      .option("--name <name>")
      .option("--color <hex>", "#RRGGBB")
      .action(
        run(async (ctx, tag) => {
          const fields = body({}, { name: str(ctx.options.name), color: str(ctx.options.color) });
          ctx.object(await (await ctx.client()).tags.update(tag, fields as SecondOf<Parley["tags"]["update"]>));
        }),
      ),
    "parley tags update tag_01J... --name gold",
  );
  example(
    tags
      .command("delete <id>")
      .description("Delete a tag")
      .action(run(async (ctx, tag) => ctx.object(await (await ctx.client()).tags.delete(tag)))),
    "parley tags delete tag_01J...",
  );
  return tags;
}

export function customFieldsCommand(): Command {
  const fields = new Command("custom-fields").description("Custom fields of contacts and the organization");
  example(
    listOptions(fields.command("list").description("List custom fields")).action(
      run(async (ctx) => {
        const query = listQuery(ctx.options) as BodyOf<Parley["customFields"]["list"]>;
        await ctx.list((await ctx.client()).customFields.list(query), [
          id,
          { header: "key", path: "key" },
          name,
          { header: "scope", path: "scope" },
        ]);
      }),
    ),
    "parley custom-fields list",
  );
  example(
    fields
      .command("create <name>")
      .description("Create a custom field")
      .option("--key <key>", "the key (default: from the name)")
      .option("--scope <scope>", "contact or organization")
      .option("--value <value>", "the value, for organization fields")
      .action(
        run(async (ctx, field) => {
          const o = ctx.options;
          const input = body({}, { name: field, key: str(o.key), scope: str(o.scope), value: str(o.value) });
          ctx.object(await (await ctx.client()).customFields.create(input as BodyOf<Parley["customFields"]["create"]>));
        }),
      ),
    'parley custom-fields create "Plan" --key plan',
  );
  example(
    fields
      .command("update <id>")
      .description("Rename a custom field or set an organization field's value")
      .option("--name <name>")
      .option("--value <value>", "the value, for organization fields")
      .action(
        run(async (ctx, field) => {
          const input = body({}, { name: str(ctx.options.name), value: str(ctx.options.value) });
          ctx.object(
            await (await ctx.client()).customFields.update(field, input as SecondOf<Parley["customFields"]["update"]>),
          );
        }),
      ),
    'parley custom-fields update cf_01J... --name "Billing plan"',
  );
  example(
    fields
      .command("delete <id>")
      .description("Delete a custom field and its value on every contact")
      .action(run(async (ctx, field) => ctx.object(await (await ctx.client()).customFields.delete(field)))),
    "parley custom-fields delete cf_01J...",
  );
  return fields;
}
