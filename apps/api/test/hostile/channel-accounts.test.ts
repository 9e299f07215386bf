import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ChannelAlreadyConnectedError, connectChannel } from "../../src/channels/service.js";
import { createTestOrganization, type TestApi, useTestApi } from "../harness.js";

/**
 * One provider account (a WhatsApp number, a Page, an Instagram account, an inbound email
 * address) is connected to one channel only, across organizations: otherwise its inbound
 * traffic would be routed to whichever channel a query happened to pick (issue 21, item 11).
 */
const api: TestApi = useTestApi({}, { ownDatabase: true });

const metaSecrets = () => ({
  access_token: `token_${randomBytes(8).toString("hex")}`,
  app_secret: `secret_${randomBytes(8).toString("hex")}`,
  verify_token: `verify_${randomBytes(8).toString("hex")}`,
});

let nextId = 200_000_000_000_000 + Math.floor(Math.random() * 1_000_000_000);
const metaId = () => String(nextId++);

type Live = { type: "whatsapp" | "messenger" | "instagram" | "email"; settings: Record<string, unknown> };

function connect(organizationId: string, { type, settings }: Live) {
  return connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type,
    name: `Live ${type}`,
    provider: type === "email" ? "smtp" : "meta",
    settings,
  });
}

async function channelsNamed(column: string, value: string) {
  return api.client.sql<{ id: string; organization_id: string }[]>`
    select id, organization_id from channels where lower(settings->>${column}) = lower(${value})`;
}

describe("one account, one channel", () => {
  const cases: [string, string, (value: string) => Live, string, string][] = [
    [
      "a WhatsApp phone number id",
      "phone_number_id",
      (id) => ({ type: "whatsapp", settings: { phone_number_id: id, ...metaSecrets() } }),
      metaId(),
      "",
    ],
    [
      "a Facebook Page id",
      "page_id",
      (id) => ({ type: "messenger", settings: { page_id: id, ...metaSecrets() } }),
      metaId(),
      "",
    ],
    [
      "an Instagram account id",
      "instagram_account_id",
      (id) => ({ type: "instagram", settings: { instagram_account_id: id, ...metaSecrets() } }),
      metaId(),
      "",
    ],
    [
      "an inbound email address, in another case",
      "address",
      (address) => ({ type: "email", settings: { address, smtp_url: "smtp://relay.example:587" } }),
      `support-${randomBytes(4).toString("hex")}@acme.example`,
      "upper",
    ],
  ];

  for (const [what, setting, live, value, variant] of cases) {
    it(`refuses ${what} another organization connected, naming the channel that holds it`, async () => {
      const first = await createTestOrganization(api);
      const second = await createTestOrganization(api);
      const held = await connect(first.id, live(value));
      const again = variant === "upper" ? value.toUpperCase() : value;
      const refused = await connect(second.id, live(again)).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ChannelAlreadyConnectedError);
      const message = (refused as Error).message;
      expect(message).toContain(`${setting} '${again}' is already connected`);
      expect(message).toContain(held.id);
      expect(message).toContain(first.id);
      // The same organization cannot connect it twice either.
      await expect(connect(first.id, live(value))).rejects.toBeInstanceOf(ChannelAlreadyConnectedError);
      expect(await channelsNamed(setting, value)).toEqual([{ id: held.id, organization_id: first.id }]);
    });
  }

  it("is kept by the database itself: a row written past the service is refused (unique index)", async () => {
    const first = await createTestOrganization(api);
    const second = await createTestOrganization(api);
    const address = `help-${randomBytes(4).toString("hex")}@acme.example`;
    await connect(first.id, { type: "email", settings: { address, smtp_url: "smtp://relay.example:587" } });
    const insert = api.client.sql`
      insert into channels (id, organization_id, environment, type, name, provider, settings)
      values (${`chn_forged${randomBytes(6).toString("hex")}`}, ${second.id}, 'live', 'email', 'Forged', 'smtp',
              ${JSON.stringify({ address: address.toUpperCase() })}::jsonb)`;
    await expect(insert).rejects.toMatchObject({ code: "23505", constraint_name: "channels_provider_account_key" });
  });

  it("lets exactly one of two concurrent connections of the same number win", async () => {
    const organizations = await Promise.all([createTestOrganization(api), createTestOrganization(api)]);
    const phoneNumberId = metaId();
    const outcomes = await Promise.allSettled(
      organizations.map((organization) =>
        connect(organization.id, { type: "whatsapp", settings: { phone_number_id: phoneNumberId, ...metaSecrets() } }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
    const rejected = outcomes.filter((outcome) => outcome.status === "rejected");
    expect(rejected.map((outcome) => outcome.reason)).toEqual([expect.any(ChannelAlreadyConnectedError)]);
    expect(await channelsNamed("phone_number_id", phoneNumberId)).toHaveLength(1);
  });

  it("leaves different accounts, and the same id under another channel type, free", async () => {
    const organization = await createTestOrganization(api);
    const id = metaId();
    await connect(organization.id, { type: "whatsapp", settings: { phone_number_id: id, ...metaSecrets() } });
    await connect(organization.id, { type: "whatsapp", settings: { phone_number_id: metaId(), ...metaSecrets() } });
    // Meta's ids do not collide across kinds; a Page id equal to a number id is another account.
    await connect(organization.id, { type: "messenger", settings: { page_id: id, ...metaSecrets() } });
    const [row] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from channels where organization_id = ${organization.id} and provider = 'meta'`;
    expect(row?.count).toBe(3);
  });
});
