// Benchmarks of the messages issue: POST /messages throughput and a 5 MB image upload
// end to end. Prints figures; never fails on timing. Run: pnpm bench:messages
import autocannon from "autocannon";
import sharp from "sharp";
import { client, percentile, printTable, startParley } from "./lib.mjs";

const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = 50;
const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 20);

async function fiveMegabyteJpeg() {
  // Noise does not compress: a 2500 x 2000 JPEG at quality 100 is about 5 MB.
  const width = 2500;
  const height = 2000;
  const noise = Buffer.alloc(width * height * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  return sharp(noise, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 100 })
    .withExif({ IFD0: { Copyright: "bench" } })
    .toBuffer();
}

async function benchUploads(parley) {
  const image = await fiveMegabyteJpeg();
  const latencies = [];
  for (let i = 0; i < UPLOADS; i++) {
    const form = new FormData();
    form.append("file", new Blob([image], { type: "image/jpeg" }), "photo.jpg");
    const started = performance.now();
    const response = await fetch(`${parley.baseUrl}/uploads`, {
      method: "POST",
      headers: { authorization: `Bearer ${parley.testKey}` },
      body: form,
    });
    await response.arrayBuffer();
    if (response.status !== 201) throw new Error(`upload answered ${response.status}`);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  return { bytes: image.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function benchSends(parley) {
  const api = client(parley.baseUrl, parley.testKey);
  const channels = await api("GET", "/channels?type=whatsapp");
  const contact = await api("POST", "/contacts", { name: "Bench" });
  const conversation = await api("POST", "/conversations", { contact_id: contact.id, channel_id: channels.data[0].id });
  let counter = 0;
  const result = await autocannon({
    url: `${parley.baseUrl}/messages`,
    method: "POST",
    connections: CONNECTIONS,
    duration: DURATION_SECONDS,
    headers: { authorization: `Bearer ${parley.testKey}`, "content-type": "application/json" },
    body: JSON.stringify({ conversation_id: conversation.id, type: "text", text: "x".repeat(200) }),
    setupClient: (c) => {
      c.setHeaders({
        authorization: `Bearer ${parley.testKey}`,
        "content-type": "application/json",
        "idempotency-key": `bench-${process.pid}-${counter++}`,
      });
    },
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, "idempotency-key": `bench-${process.pid}-${counter++}` },
        }),
      },
    ],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

const parley = await startParley();
try {
  const sends = await benchSends(parley);
  const uploads = await benchUploads(parley);
  printTable([
    {
      figure: "POST /messages (text, Idempotency-Key)",
      value: `${sends.rps.toFixed(0)} req/s`,
      p50: `${sends.p50} ms`,
      p99: `${sends.p99} ms`,
      notes: `${CONNECTIONS} connections, ${DURATION_SECONDS} s, non-2xx ${sends.non2xx}, errors ${sends.errors}`,
    },
    {
      figure: "POST /uploads 5 MB JPEG (strip + resize)",
      value: `${UPLOADS} uploads`,
      p50: `${uploads.p50.toFixed(0)} ms`,
      p99: `${uploads.p99.toFixed(0)} ms`,
      notes: `${(uploads.bytes / 1024 / 1024).toFixed(1)} MB each`,
    },
  ]);
} finally {
  await parley.stop();
}
