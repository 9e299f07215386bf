// Benchmarks of the delivery issue, in the sandbox with the simulated provider delay at
// zero: sends per second end to end (201 to `delivered`), and the latency from a send to
// `delivered`. Prints figures; never fails on timing. Run: pnpm bench:delivery
import { client, percentile, printTable, startParley } from "./lib.mjs";

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 2000);
const CONCURRENCY = 50;
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);

async function conversationOn(api, type) {
  const channels = await api("GET", `/channels?type=${type}`);
  const contact = await api("POST", "/contacts", { name: `Bench ${type}` });
  return api("POST", "/conversations", { contact_id: contact.id, channel_id: channels.data[0].id });
}

async function throughput(api) {
  const conversation = await conversationOn(api, "messenger");
  const ids = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < MESSAGES) {
        next++;
        const message = await api("POST", "/messages", {
          conversation_id: conversation.id,
          type: "text",
          text: "bench",
        });
        ids.push(message.id);
      }
    }),
  );
  const accepted = performance.now();
  // Walk the conversation until every message is delivered.
  for (;;) {
    let delivered = 0;
    let after = "";
    for (;;) {
      const page = await api("GET", `/conversations/${conversation.id}/messages?limit=100${after}`);
      delivered += page.data.filter((message) => message.status === "delivered").length;
      if (!page.pagination.has_more) break;
      after = `&after=${page.pagination.next_cursor}`;
    }
    if (delivered >= ids.length) break;
    if (performance.now() - started > 300_000) throw new Error(`only ${delivered} of ${ids.length} delivered`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const done = performance.now();
  return { accepted: ids.length / ((accepted - started) / 1000), delivered: ids.length / ((done - started) / 1000) };
}

async function latency(api) {
  const conversation = await conversationOn(api, "messenger");
  const samples = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const started = performance.now();
    const message = await api("POST", "/messages", { conversation_id: conversation.id, type: "text", text: "ping" });
    for (;;) {
      const current = await api("GET", `/messages/${message.id}`);
      if (current.status === "delivered") break;
      if (performance.now() - started > 30_000) throw new Error("a message was not delivered within 30 s");
    }
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const parley = await startParley({ SANDBOX_DELIVERY_DELAY_MS: "0", SANDBOX_READ_DELAY_MS: "0" });
try {
  const api = client(parley.baseUrl, parley.testKey);
  const sends = await throughput(api);
  const timing = await latency(api);
  printTable([
    {
      figure: "sends accepted (201) through the API",
      value: `${sends.accepted.toFixed(0)} msg/s`,
      notes: `${MESSAGES} messages, ${CONCURRENCY} concurrent clients`,
    },
    {
      figure: "sends delivered end to end (201 to delivered)",
      value: `${sends.delivered.toFixed(0)} msg/s`,
      notes: "",
    },
    {
      figure: "send -> delivered latency, sandbox delay 0",
      value: `p50 ${timing.p50.toFixed(1)} ms, p99 ${timing.p99.toFixed(1)} ms`,
      notes: `${LATENCY_SAMPLES} sequential sends, polled with GET /messages/{id}`,
    },
  ]);
} finally {
  await parley.stop();
}
