import {
  startTwilioSimulator,
  type TwilioCallback,
  type TwilioRecordedRequest,
  type TwilioSimulator,
} from "@parley/channels/testing";
import { afterAll, beforeAll, expect } from "vitest";
import { connectChannel } from "../src/channels/service.js";
import type { Client, TestApi } from "./harness.js";

/**
 * Twilio's side of the live SMS channels for the sms-twilio*.test.ts files: the REST API
 * simulator the worker talks to, live channels connected to it, and webhooks Twilio signs.
 */

export interface TwilioHandle {
  simulator: TwilioSimulator;
}

/**
 * Starts the Twilio simulator for the file. Register it before `useTestWorker`, whose options
 * read the simulator's address when the worker starts (and whose `afterAll` then runs first).
 */
export function useTwilioSimulator(): TwilioHandle {
  const handle = {} as TwilioHandle;
  beforeAll(async () => {
    handle.simulator = await startTwilioSimulator();
  });
  afterAll(() => handle.simulator?.close());
  return handle;
}

/** A US number of Twilio's kind (+1 415 and 7 random digits), unique enough for a file. */
export function usNumber(): string {
  return `+1415${String(Math.floor(Math.random() * 10_000_000)).padStart(7, "0")}`;
}

export interface TwilioChannel {
  id: string;
  /** The sender: `from`, or the Messaging Service SID. */
  account: string;
}

/** A live Twilio SMS channel of the organization, on the simulator's account, connected as `admin connect-channel --no-check` does. */
export async function connectTwilioChannel(
  api: TestApi,
  simulator: TwilioSimulator,
  organizationId: string,
  settings: Record<string, unknown> = {},
): Promise<TwilioChannel> {
  const merged: Record<string, unknown> = {
    account_sid: simulator.accountSid,
    auth_token: simulator.authToken,
    ...(settings.messaging_service_sid ? {} : { from: usNumber() }),
    ...settings,
  };
  const channel = await connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type: "sms",
    name: "Live SMS",
    provider: "twilio",
    settings: merged,
  });
  return { id: channel.id, account: String(merged.messaging_service_sid ?? merged.from) };
}

/** Where Twilio POSTs: `PUBLIC_BASE_URL` (the test server's address) and the route. */
export function twilioWebhookUrl(api: TestApi): string {
  return `${api.baseUrl}/channels/webhooks/twilio`;
}

/** A contact with this phone (as typed) and a live conversation with it on the channel. */
export async function smsConversation(live: Client, channelId: string, phone = usNumber()) {
  const contact = await live.post("/contacts", { body: { name: "Ada", phone } });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const conversation = await live.post("/conversations", {
    body: { contact_id: contact.body.id, channel_id: channelId },
  });
  expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
  return { contact: contact.body, conversation: conversation.body, phone };
}

/** The simulator's `POST .../Messages.json` requests sent from this sender (From or MessagingServiceSid). */
export function sendRequestsFrom(simulator: TwilioSimulator, sender: string): TwilioRecordedRequest[] {
  return simulator.requests.filter(
    (request) =>
      request.method === "POST" &&
      request.path.endsWith("/Messages.json") &&
      (request.form.From === sender || request.form.MessagingServiceSid === sender),
  );
}

/** Posts a signed webhook as Twilio does; expects the empty TwiML answer. */
export async function deliverTwilio(simulator: TwilioSimulator, callback: TwilioCallback) {
  const answer = await simulator.send(callback);
  expect(answer, "Twilio's webhook answer").toEqual({
    status: 200,
    body: '<?xml version="1.0" encoding="UTF-8"?><Response/>',
  });
}
