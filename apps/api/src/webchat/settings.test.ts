import { describe, expect, it } from "vitest";
import { createTestOrganization, expectError, useTestApi } from "../../test/harness.js";
import { connectLiveWebchat, visitor } from "../../test/webchat-helpers.js";
import { updateChannelSettings } from "../channels/lifecycle.js";
import { ChannelSettingsError } from "../channels/service.js";

const api = useTestApi();

const connect = (organizationId: string, settings: Record<string, unknown>) =>
  connectLiveWebchat(api, organizationId, settings, "Site chat");

describe("the web chat channel's settings", () => {
  it("are checked at connect-channel, with defaults for what is not given", async () => {
    const org = await createTestOrganization(api);
    await expect(connect(org.id, { prechat_email: "always" })).rejects.toBeInstanceOf(ChannelSettingsError);
    await expect(connect(org.id, { greeting: "x".repeat(501) })).rejects.toBeInstanceOf(ChannelSettingsError);
    await expect(connect(org.id, { color: "red;}" })).rejects.toBeInstanceOf(ChannelSettingsError);
    await expect(connect(org.id, { position: "top" })).rejects.toBeInstanceOf(ChannelSettingsError);
    const channel = await connect(org.id, { greeting: "Hi! Ask us anything.", prechat_email: "required" });
    const [row] = await api.client.sql<{ settings: Record<string, unknown> }[]>`
      select settings from channels where id = ${channel.id}`;
    expect(row?.settings).toEqual({
      greeting: "Hi! Ask us anything.",
      prechat_name: "off",
      prechat_email: "required",
      position: "right",
    });
  });

  it("make a required pre-chat answer required of the visitor API too, not only of the page's form", async () => {
    const org = await createTestOrganization(api);
    const channel = await connect(org.id, { prechat_name: "required", prechat_email: "required" });
    const sessions = `/channels/${channel.id}/sessions`;
    expectError(await visitor(api).post(sessions, { email: "ada@example.com" }), 422, "validation_error", "name");
    expectError(await visitor(api).post(sessions, { name: "Ada" }), 422, "validation_error", "email");
    expectError(await visitor(api).post(sessions, { name: "Ada", email: "ada@" }), 422, "validation_error", "email");
    const [refused] = await api.client
      .sql`select count(*)::int as n from webchat_sessions where channel_id = ${channel.id}`;
    expect(refused?.n).toBe(0);
    const started = await visitor(api).post(sessions, { name: "Ada", email: "ada@example.com" });
    expect(started.status).toBe(201);
    // An optional field may be left out.
    const optional = await connect(org.id, { prechat_name: "optional", prechat_email: "optional" });
    expect((await visitor(api).post(`/channels/${optional.id}/sessions`, {})).status).toBe(201);
  });

  it("change in place with update-channel: the next page and session follow them", async () => {
    const org = await createTestOrganization(api);
    const channel = await connect(org.id, {});
    const page = () => fetch(`${api.baseUrl.replace(/\/v1$/, "")}/webchat/${channel.id}`).then((r) => r.text());
    expect(await page()).not.toContain("We answer within the hour.");
    const update = (settings: Record<string, unknown>) =>
      updateChannelSettings(api.context.db, api.context.secretBox, { channelId: channel.id, settings });
    await expect(update({ prechat_phone: "required" })).rejects.toBeInstanceOf(ChannelSettingsError);
    await expect(update({ color: "url(x)" })).rejects.toBeInstanceOf(ChannelSettingsError);
    await update({ greeting: "We answer within the hour.", prechat_email: "required", color: "#0f766e" });
    expect(await page()).toContain("We answer within the hour.");
    const sessions = `/channels/${channel.id}/sessions`;
    expectError(await visitor(api).post(sessions, {}), 422, "validation_error", "email");
    // An empty value removes an optional setting; the others stay.
    await update({ greeting: "" });
    expect(await page()).not.toContain("We answer within the hour.");
    const [row] = await api.client.sql<{ settings: Record<string, unknown> }[]>`
      select settings from channels where id = ${channel.id}`;
    expect(row?.settings).toMatchObject({ prechat_email: "required", color: "#0f766e" });
  });
});
