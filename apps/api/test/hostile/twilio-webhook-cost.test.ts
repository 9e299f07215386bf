import { startTwilioSimulator, twilioSid } from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import { createTestOrganization, useTestApi } from "../harness.js";
import { connectTwilioChannel, twilioWebhookUrl, usNumber } from "../twilio-helpers.js";

/**
 * The Twilio webhook is reachable by anyone (issue 40, item 9): before a webhook is
 * authenticated, finding the channel whose Auth Token checks it costs one probe of the
 * provider-account index, whatever the number of channels, and at most three signatures are
 * computed. Judged by the plan of the statement the route sends, among 1,000 channels.
 */
const statements: string[] = [];
const api = useTestApi({}, { ownDatabase: true, onQuery: (query) => statements.push(query) });

describe("the Twilio webhook's cost before authentication", () => {
  it("finds its candidate channels through the provider_account index among 1,000 channels", async () => {
    const simulator = await startTwilioSimulator();
    try {
      const { id } = await createTestOrganization(api);
      const target = await connectTwilioChannel(api, simulator, id);
      // 999 more channels of other Twilio accounts, inserted at once (their settings need no secrets here).
      await api.client.sql`
        insert into channels (id, organization_id, environment, type, name, provider, settings)
        select 'chn_' || lpad(i::text, 26, '0'), ${id}, 'live', 'sms', 'SMS ' || i, 'twilio',
               jsonb_build_object('account_sid', 'AC' || md5(i::text), 'from', '+1628' || lpad(i::text, 7, '0'))
        from generate_series(1, 999) as i`;
      await api.client.sql`analyze channels`;
      statements.length = 0;

      const forged = simulator.inboundMessage(twilioWebhookUrl(api), {
        from: usNumber(),
        to: target.account,
        body: "Forged",
        messagingServiceSid: twilioSid("MG"),
      });
      const answer = await simulator.send(forged, { signature: "Zm9yZ2Vk" });
      expect(answer.status).toBe(403);

      const lookup = statements.find((statement) => statement.includes('"provider_account" in'));
      expect(lookup, statements.join("\n")).toBeDefined();
      const plan = await api.client.sql.unsafe(`explain (generic_plan) ${lookup}`);
      const text = plan.map((row) => Object.values(row).join("")).join("\n");
      expect(text).toContain("channels_provider_account_key");
      expect(text).not.toMatch(/Seq Scan on channels/);
    } finally {
      await simulator.close();
    }
  });
});
