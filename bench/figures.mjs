// What `pnpm bench` measures and how a run is judged: the figures with their targets, the
// phases and their order, and a figure's result from its repetitions (the worst counts).
// No I/O: run.mjs measures, this decides; test/figures.test.mjs holds it to bench/README.md.

// The figures: one entry per measured number, each with its target. `phase` is the
// measurement that produces it (and a key BENCH_ONLY accepts).

export const FIGURES = [
  {
    key: "send_rps",
    phase: "send",
    name: "POST /messages throughput",
    unit: "req/s",
    target: ">= 0.85x baseline",
    met: (f) => f.ratio !== null && f.ratio >= 0.85,
  },
  {
    key: "sustained_rps",
    phase: "send",
    name: "POST /messages throughput with the worker delivering on the same machine (backlog flat)",
    unit: "req/s",
    target: ">= 0.5x baseline send, backlog flat",
    met: (f) => f.ratio !== null && f.ratio >= 0.5 && f.flat === true,
  },
  {
    key: "delivery_rps",
    phase: "send",
    name: "Sandbox deliveries by one worker (queued -> sent -> delivered, with events)",
    unit: "deliveries/s",
    target: ">= 2000 deliveries/s",
    met: (f) => f.value >= 2000,
  },
  {
    key: "send_p99",
    phase: "send",
    name: "POST /messages p99 latency",
    unit: "ms",
    // At 50 connections the latency is the throughput's other face (Little's law): the p99
    // may exceed the baseline's by what the throughput may fall short of it (1 / 0.85).
    target: "<= 1.2x baseline",
    met: (f) => f.ratio !== null && f.ratio <= 1.2,
  },
  {
    key: "list_rps",
    phase: "list",
    name: "GET /conversations/{id}/messages (page of 25) throughput",
    unit: "req/s",
    target: ">= 0.75x baseline",
    met: (f) => f.ratio !== null && f.ratio >= 0.75,
  },
  {
    key: "list_p99",
    phase: "list",
    name: "GET /conversations/{id}/messages (page of 25) p99 latency",
    unit: "ms",
    // As the send's p99: 1 / 0.75 of the baseline's, the page's throughput target.
    target: "<= 1.35x baseline",
    met: (f) => f.ratio !== null && f.ratio <= 1.35,
  },
  {
    key: "spread_send_rps",
    phase: "spread",
    name: "POST /messages throughput, each to one of 2,000 conversations at random (worst round)",
    unit: "req/s",
    target: ">= 0.85x baseline",
    met: (f) => f.ratio !== null && f.ratio >= 0.85,
  },
  {
    key: "spread_list_rps",
    phase: "spread",
    name: "GET a page of 25 of one of 2,000 conversations at random: throughput (worst round)",
    unit: "req/s",
    target: ">= 0.75x baseline",
    met: (f) => f.ratio !== null && f.ratio >= 0.75,
  },
  {
    key: "deep_page",
    phase: "deep_page",
    name: "Page deep in a long list: p50 latency (baseline = the first page)",
    unit: "ms",
    target: "<= 1.2x the first page",
    met: (f) => f.ratio !== null && f.ratio <= 1.2,
  },
  {
    key: "webhook_latency_p50",
    phase: "webhook_latency",
    name: "API call -> webhook at a local receiver, 100 events/s: p50 (worst repetition)",
    unit: "ms",
    target: "<= 10 ms",
    met: (f) => f.value <= 10,
  },
  {
    key: "webhook_latency_p99",
    phase: "webhook_latency",
    name: "API call -> webhook at a local receiver, 100 events/s: p99 (worst repetition)",
    unit: "ms",
    target: "<= 50 ms",
    met: (f) => f.value <= 50,
  },
  {
    key: "webhook_throughput",
    phase: "webhook_throughput",
    name: "Webhook deliveries to a fast local receiver",
    unit: "events/s",
    target: ">= 3000 events/s",
    met: (f) => f.value >= 3000,
  },
  {
    key: "delivered_p50",
    phase: "delivered",
    name: "Send -> delivered, sandbox with zero delay: p50 (worst repetition)",
    unit: "ms",
    target: "<= 20 ms",
    met: (f) => f.value <= 20,
  },
  {
    key: "delivered_p99",
    phase: "delivered",
    name: "Send -> delivered, sandbox with zero delay: p99 (worst repetition)",
    unit: "ms",
    target: "<= 50 ms",
    met: (f) => f.value <= 50,
  },
  {
    key: "upload_p50",
    phase: "upload",
    name: "Upload of a 5 MB JPEG (strip + resize): p50 (worst repetition)",
    unit: "ms",
    target: "<= 150 ms",
    met: (f) => f.value <= 150,
  },
  {
    key: "memory_rss",
    phase: "send",
    name: "API process memory under the send load (max RSS)",
    unit: "MB",
    target: "<= 250 MB",
    met: (f) => f.value <= 250,
  },
];

export const PHASES = [
  "send",
  "list",
  "spread",
  "webhook_throughput",
  "webhook_latency",
  "delivered",
  "upload",
  "deep_page",
];
// Measured `settings.repetitions` times, in rounds of one each: a figure of theirs is its
// worst repetition, so a target met only by a lucky run is not met.
export const REPEATED_PHASES = ["webhook_latency", "delivered", "upload"];
// Run only when asked for by name: not a figure of the issue, a breakdown of one.
export const OPT_IN_PHASES = ["layers", "levers"];

/**
 * The phases a run measures, from `--only=` or BENCH_ONLY (`raw`: a comma list of phase
 * keys or figure keys): every default phase when empty. An unknown key is an error that
 * lists the known ones.
 */
export function selectedPhases(raw) {
  const wanted = raw
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
  if (wanted.length === 0) return new Set(PHASES);
  const phases = new Set();
  for (const item of wanted) {
    const aliases = { memory: "send", memory_rss: "send" };
    const phase =
      PHASES.includes(item) || OPT_IN_PHASES.includes(item)
        ? item
        : (aliases[item] ?? FIGURES.find((f) => f.key === item)?.phase);
    if (!phase) {
      const known = [...PHASES, ...OPT_IN_PHASES, ...FIGURES.map((f) => f.key)].join(", ");
      throw new Error(`BENCH_ONLY: unknown figure '${item}'; known: ${known}`);
    }
    phases.add(phase);
  }
  return phases;
}

/** Units where a higher value is the worse one (latency, memory); for rates the lower is. */
const higherIsWorse = (figure) => figure.unit === "ms" || figure.unit === "MB";

/**
 * The worst of a figure's measurements, by its ratio to the baseline where it has one (each
 * round's own baseline), else by its value.
 */
export function worstOf(figure, measurements) {
  const usable = measurements.filter((each) => each.value !== null && Number.isFinite(each.value));
  if (usable.length === 0) return measurements[0];
  const score = (each) => (each.ratio === null || each.ratio === undefined ? each.value : each.ratio);
  const worse = (a, b) => (higherIsWorse(figure) ? score(a) > score(b) : score(a) < score(b));
  return usable.reduce((worst, each) => (worse(each, worst) ? each : worst));
}

/** `value` to `digits` decimals; null stays null. */
export const round = (value, digits = 1) =>
  value === null || value === undefined ? null : Number(value.toFixed(digits));

/**
 * A figure's entry in the results from its measurements (every repetition or round, in
 * order): the worst of them is its value, and its target is met only when that worst one
 * meets it. With more than one, the entry lists each and its notes start with them.
 */
export function figureResult(figure, measurements) {
  const digits = figure.unit === "ms" || figure.unit === "MB" ? 1 : 0;
  const measured = worstOf(figure, measurements);
  const value = measured?.value ?? null;
  const entry = {
    key: figure.key,
    name: figure.name,
    value: round(value, digits),
    unit: figure.unit,
    target: figure.target,
    baseline: round(measured?.baseline ?? null, digits),
    ratio: round(measured?.ratio ?? null, 2),
    met: null,
    notes: measured?.notes ?? "not measured: the harness failed in this phase",
    ...(measured?.flat === undefined ? {} : { flat: measured.flat }),
  };
  if (measurements.length > 1) {
    entry.repetitions = measurements.map((each) => ({
      value: round(each.value, digits),
      ratio: round(each.ratio ?? null, 2),
    }));
    const listed = measurements
      .map((each) => ((each.ratio ?? null) === null ? `${round(each.value, digits)}` : `${round(each.ratio, 2)}x`))
      .join(", ");
    entry.notes = `the worst of ${measurements.length} (${listed}); ${entry.notes}`;
  }
  if (value !== null && Number.isFinite(value)) {
    entry.met = figure.met({
      value,
      ratio: measured?.ratio ?? null,
      baseline: measured?.baseline ?? null,
      flat: measured?.flat,
    });
  }
  return entry;
}

/**
 * The phases of a run in order, each with its repetition (0 when not repeated): the repeated
 * ones `repetitions` times in rounds (each once, then each again), where the first of them
 * stands in PHASES.
 */
export function phaseOrder(phases, repetitions) {
  const order = [];
  const repeated = REPEATED_PHASES.filter((phase) => phases.has(phase));
  for (const phase of [...PHASES, ...OPT_IN_PHASES]) {
    if (!phases.has(phase)) continue;
    if (!REPEATED_PHASES.includes(phase)) {
      order.push([phase, 0]);
      continue;
    }
    if (phase !== repeated[0]) continue;
    for (let repetition = 1; repetition <= repetitions; repetition++) {
      for (const each of repeated) order.push([each, repetitions > 1 ? repetition : 0]);
    }
  }
  return order;
}
