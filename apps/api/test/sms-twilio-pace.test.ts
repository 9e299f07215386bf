import { describe, expect, it } from "vitest";
import { waitForStatus } from "./delivery-helpers.js";
import { setupOrganization, useTestApi, useTestWorker } from "./harness.js";
import { postMessage } from "./meta-helpers.js";
import { connectTwilioChannel, sendRequestsFrom, smsConversation, useTwilioSimulator } from "./twilio-helpers.js";

/**
 * Twilio's pace per sender (issue 40, item 7): each channel's sends leave at most `mps` a
 * second (Twilio queues, then refuses, a faster sender), and one number's pace does not hold
 * up another's. Timed: judged by when the simulator took each request, so it runs alone
 * (apps/api/vitest.config.ts, TIMED).
 */
const twilio = useTwilioSimulator();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, () => ({ twilio: twilio.simulator.options() }));

describe("Twilio's pace per sender", () => {
  it("sends 1 message a second from a long code (mps=1), each number at its own pace", async () => {
    const { org, live } = await setupOrganization(api);
    const first = await connectTwilioChannel(api, twilio.simulator, org.id, { mps: "1" });
    const second = await connectTwilioChannel(api, twilio.simulator, org.id, { mps: "1" });
    const conversations = await Promise.all(
      [first, second].map(async (channel) => (await smsConversation(live, channel.id)).conversation.id),
    );

    const queued = [];
    for (let i = 0; i < 3; i++) {
      for (const conversationId of conversations) {
        queued.push(await postMessage(live, { conversation_id: conversationId, type: "text", text: `Burst ${i}` }));
      }
    }
    for (const message of queued) await waitForStatus(api, live, message.id, "sent", 20_000);

    const arrivals = [first, second].map((channel) =>
      sendRequestsFrom(twilio.simulator, channel.account)
        .map((request) => request.arrivedAt)
        .sort((a, b) => a - b),
    );
    // A second apart on each number: judged with 100 ms of slack for this process's event loop.
    for (const times of arrivals) {
      expect(times).toHaveLength(3);
      for (let i = 1; i < times.length; i++) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThanOrEqual(900);
    }
    // Not one pace for the account: the second number's first send does not wait for the first's three.
    const [one = [], two = []] = arrivals;
    expect(Math.abs((two[0] ?? 0) - (one[0] ?? 0))).toBeLessThan(900);
  });

  it("sends faster from a number whose mps says so (5: 200 ms apart), read from the channel's sealed settings too", async () => {
    const { org, live } = await setupOrganization(api);
    const channel = await connectTwilioChannel(api, twilio.simulator, org.id, { mps: "5" });
    const { conversation } = await smsConversation(live, channel.id);

    const queued = [];
    for (let i = 0; i < 4; i++) {
      queued.push(await postMessage(live, { conversation_id: conversation.id, type: "text", text: `Quick ${i}` }));
    }
    for (const message of queued) await waitForStatus(api, live, message.id, "sent");

    const times = sendRequestsFrom(twilio.simulator, channel.account)
      .map((request) => request.arrivedAt)
      .sort((a, b) => a - b);
    expect(times).toHaveLength(4);
    // 200 ms apart, with 50 ms of slack; at a long code's 1 a second the three gaps would take 3 s.
    for (let i = 1; i < times.length; i++) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThanOrEqual(150);
    expect((times.at(-1) ?? 0) - (times[0] ?? 0)).toBeLessThan(1500);
  });
});
