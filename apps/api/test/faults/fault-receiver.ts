import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach } from "vitest";

/** One POST as the receiver saw it, with how it answered. */
export interface Arrival {
  /** The envelope's `id`: the event. */
  eventId: string;
  /** `X-Parley-Delivery`: the attempt. */
  deliveryId: string;
  body: string;
  /** `Date.now()` when the whole body had arrived. */
  receivedAt: number;
  /** The status answered; null while held (or never answered). */
  status: number | null;
}

/**
 * How the receiver answers: a status, at once or after `delayMs` (a slow receiver), or
 * never (`hold`: the request is held open until `release()` or the sender gives up).
 */
export type Answer = { status: number; delayMs?: number } | "hold";

/**
 * A webhook receiver with its own port, for faults: it can go down (connection refused on
 * the same port) and come back, answer errors, or hold requests open and release them.
 */
export interface FaultReceiver {
  readonly url: string;
  /** Every request whose body arrived, in order of arrival, whatever the answer. */
  readonly arrivals: Arrival[];
  /** How the next requests are answered (`{ status: 200 }` to begin with). */
  answer: Answer;
  /** Stops listening and drops every connection: connections are refused until `up()`. */
  down(): Promise<void>;
  /** Listens again, on the same port. */
  up(): Promise<void>;
  /** Requests held open now (the sender has not given up on them). */
  held(): number;
  /** Answers every held request with `status`. */
  release(status?: number): void;
  /** Arrivals answered 2xx, by event id: how often each event was delivered. */
  deliveredCounts(): Map<string, number>;
}

export function startFaultReceiver(): Promise<FaultReceiver & { close(): Promise<void> }> {
  const arrivals: Arrival[] = [];
  const sockets = new Set<Socket>();
  const held = new Map<ServerResponse, Arrival>();
  let port = 0;
  let listening = false;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let eventId = "";
      try {
        eventId = String(JSON.parse(body).id ?? "");
      } catch {
        // Not an envelope: kept with an empty id, which no event has.
      }
      const deliveryHeader = req.headers["x-parley-delivery"];
      const arrival: Arrival = {
        eventId,
        deliveryId: Array.isArray(deliveryHeader) ? deliveryHeader.join(",") : (deliveryHeader ?? ""),
        body,
        receivedAt: Date.now(),
        status: null,
      };
      arrivals.push(arrival);
      const choice = receiver.answer;
      if (choice === "hold") {
        held.set(res, arrival);
        res.once("close", () => held.delete(res));
        return;
      }
      const respond = () => {
        if (res.destroyed) return;
        arrival.status = choice.status;
        res.writeHead(choice.status, { "content-type": "text/plain" }).end(choice.status < 300 ? "ok" : "unavailable");
      };
      if (choice.delayMs) setTimeout(respond, choice.delayMs);
      else respond();
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        port = (server.address() as AddressInfo).port;
        listening = true;
        resolve();
      });
    });
  const stopListening = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    held.clear();
    await closed;
  };

  const receiver = {
    get url() {
      return `http://127.0.0.1:${port}/hook`;
    },
    arrivals,
    answer: { status: 200 } as Answer,
    down: stopListening,
    up: listen,
    held: () => held.size,
    release(status = 200) {
      for (const [res, arrival] of held) {
        arrival.status = status;
        res.writeHead(status, { "content-type": "text/plain" }).end("late");
      }
      held.clear();
    },
    deliveredCounts() {
      const counts = new Map<string, number>();
      for (const arrival of arrivals) {
        if (arrival.status !== null && arrival.status >= 200 && arrival.status < 300) {
          counts.set(arrival.eventId, (counts.get(arrival.eventId) ?? 0) + 1);
        }
      }
      return counts;
    },
    close: stopListening,
  };
  return listen().then(() => receiver);
}

/** Receivers a test starts with `start()`; each is closed after its test. */
export function useFaultReceivers() {
  const open = new Set<FaultReceiver & { close(): Promise<void> }>();
  afterEach(async () => {
    await Promise.all([...open].map((receiver) => receiver.close()));
    open.clear();
  });
  return {
    async start(): Promise<FaultReceiver> {
      const receiver = await startFaultReceiver();
      open.add(receiver);
      return receiver;
    },
  };
}
