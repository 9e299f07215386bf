// bench/report.html from the results object of bench/run.mjs: one self-contained page
// (inline CSS and SVG, no scripts, nothing fetched) with the figures table, latency
// distributions and throughput over time.

const COLORS = {
  parley: "#2563eb",
  baseline: "#9ca3af",
  second: "#ea580c",
  third: "#16a34a",
  fourth: "#9333ea",
  sustained: "#0891b2",
};

function escapeHtml(value) {
  return String(value)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

/** A "nice" upper bound and step for an axis from 0 to `max`. */
function niceScale(max, ticks = 5) {
  if (!(max > 0)) return { max: 1, step: 0.2 };
  const rough = max / ticks;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? 10 * magnitude;
  return { max: Math.ceil(max / step) * step, step };
}

function formatTick(value) {
  if (value === 0) return "0";
  if (Math.abs(value) >= 1000) return `${Number((value / 1000).toFixed(1))}k`;
  return String(Number(value.toPrecision(3)));
}

// Percentiles on a "nines" axis: 0, 90, 99, 99.9, 99.99 evenly spaced, then the maximum.
const NINES_MAX = 4.5;
function ninesX(p) {
  if (p >= 100) return NINES_MAX;
  return Math.min(4, -Math.log10(1 - p / 100));
}
const NINES_TICKS = [
  [0, "min"],
  [1, "p90"],
  [2, "p99"],
  [3, "p99.9"],
  [4, "p99.99"],
  [NINES_MAX, "max"],
];

/**
 * A line chart as inline SVG. `series`: [{ name, color, points: [[x, y], ...], dashed, scatter }];
 * `xAxis`: "nines" for percentile curves, else linear from 0; `lines`: horizontal
 * reference lines [{ y, label }] (targets).
 */
function lineChart({ title, xLabel, yLabel, series, xAxis = "linear", lines = [] }) {
  const width = 620;
  const height = 300;
  const margin = { top: 48, right: 20, bottom: 46, left: 60 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const drawn = series.filter((s) => s.points && s.points.length > 0);
  const head = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(title)}">
  <text x="${width / 2}" y="20" text-anchor="middle" class="title">${escapeHtml(title)}</text>`;
  if (drawn.length === 0) {
    return `${head}<text x="${width / 2}" y="${height / 2}" text-anchor="middle" class="muted">not measured in this run</text></svg>`;
  }
  const xOf = xAxis === "nines" ? ninesX : (x) => x;
  const allY = [...drawn.flatMap((s) => s.points.map(([, y]) => y)), ...lines.map((l) => l.y)];
  const yScale = niceScale(Math.max(...allY) * 1.05);
  const xMaxRaw = xAxis === "nines" ? NINES_MAX : Math.max(...drawn.flatMap((s) => s.points.map(([x]) => x)));
  const xScale = xAxis === "nines" ? { max: NINES_MAX } : niceScale(xMaxRaw, 6);
  const px = (x) => margin.left + (xOf(x) / xScale.max) * plotW;
  const py = (y) => margin.top + plotH - (Math.min(y, yScale.max) / yScale.max) * plotH;

  const parts = [head];
  // Grid and y ticks.
  for (let y = 0; y <= yScale.max + 1e-9; y += yScale.step) {
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${py(y)}" y2="${py(y)}" class="grid"/>`,
      `<text x="${margin.left - 6}" y="${py(y) + 4}" text-anchor="end" class="tick">${formatTick(y)}</text>`,
    );
  }
  // x ticks.
  const xTicks =
    xAxis === "nines"
      ? NINES_TICKS.map(([x, label]) => [margin.left + (x / NINES_MAX) * plotW, label])
      : Array.from({ length: Math.round(xScale.max / xScale.step) + 1 }, (_, i) => i * xScale.step).map((x) => [
          px(x),
          formatTick(x),
        ]);
  for (const [x, label] of xTicks) {
    parts.push(
      `<line x1="${x}" x2="${x}" y1="${margin.top + plotH}" y2="${margin.top + plotH + 4}" class="axis"/>`,
      `<text x="${x}" y="${margin.top + plotH + 17}" text-anchor="middle" class="tick">${escapeHtml(label)}</text>`,
    );
  }
  parts.push(
    `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${margin.top + plotH}" y2="${margin.top + plotH}" class="axis"/>`,
    `<line x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${margin.top + plotH}" class="axis"/>`,
    `<text x="${margin.left + plotW / 2}" y="${height - 8}" text-anchor="middle" class="label">${escapeHtml(xLabel)}</text>`,
    `<text transform="translate(14 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle" class="label">${escapeHtml(yLabel)}</text>`,
  );
  // Reference lines (targets).
  for (const line of lines) {
    if (line.y > yScale.max) continue;
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${py(line.y)}" y2="${py(line.y)}" class="target"/>`,
      `<text x="${margin.left + plotW - 4}" y="${py(line.y) - 4}" text-anchor="end" class="target-label">${escapeHtml(line.label)}</text>`,
    );
  }
  // Series.
  for (const s of drawn) {
    if (s.scatter) {
      for (const [x, y] of s.points) {
        parts.push(
          `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="1.8" fill="${s.color}" fill-opacity="0.6"/>`,
        );
      }
      continue;
    }
    const d = s.points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(" ");
    parts.push(
      `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 4"' : ""}/>`,
    );
    if (s.points.length <= 40) {
      for (const [x, y] of s.points) {
        parts.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="2.5" fill="${s.color}"/>`);
      }
    }
  }
  // Legend.
  drawn.forEach((s, i) => {
    const x = margin.left + 10 + i * 150;
    parts.push(
      `<rect x="${x}" y="${margin.top - 14}" width="12" height="3" fill="${s.color}"/>`,
      `<text x="${x + 16}" y="${margin.top - 9}" class="legend">${escapeHtml(s.name)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n  ");
}

/** The percentile curve ([p, ms] points) of a run or a summary, or none. */
const curve = (run) => run?.curve ?? [];

function figuresTable(figures) {
  const rows = figures.map((f) => {
    const status =
      f.met === null
        ? '<td class="na">n/a</td>'
        : f.met
          ? '<td class="met">met</td>'
          : '<td class="missed">missed</td>';
    const value = f.value === null ? "-" : `${f.value} ${escapeHtml(f.unit)}`;
    const baseline = f.baseline === null ? "-" : `${f.baseline} ${escapeHtml(f.unit)}`;
    const ratio = f.ratio === null ? "-" : `${f.ratio}x`;
    return `<tr>${status}<td>${escapeHtml(f.name)}</td><td class="num">${value}</td><td>${escapeHtml(f.target)}</td><td class="num">${baseline}</td><td class="num">${ratio}</td><td class="notes">${escapeHtml(f.notes)}</td></tr>`;
  });
  return `<table>
  <thead><tr><th></th><th>figure</th><th>value</th><th>target</th><th>baseline</th><th>ratio</th><th>notes</th></tr></thead>
  <tbody>
  ${rows.join("\n  ")}
  </tbody>
</table>`;
}

function machineList(machine) {
  const { settings, ...rest } = machine;
  const items = Object.entries(rest).map(
    ([key, value]) =>
      `<li><b>${escapeHtml(key)}</b>: ${escapeHtml(Array.isArray(value) ? value.join(", ") : String(value))}</li>`,
  );
  const run = settings
    ? `<li><b>settings</b>: ${escapeHtml(
        Object.entries(settings)
          .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join("+") : value}`)
          .join(", "),
      )}</li>`
    : "";
  return `<ul class="machine">${items.join("")}${run}</ul>`;
}

export function renderReport(results) {
  const { machine, figures, series } = results;
  const figure = (key) => figures.find((f) => f.key === key);
  const targetLine = (key, label) => {
    const f = figure(key);
    const match = f ? /([\d.,]+)\s*(ms|req\/s|events\/s|deliveries\/s|MB)/.exec(f.target) : null;
    return match ? [{ y: Number(match[1].replaceAll(",", "")), label: `${label} ${match[0]}` }] : [];
  };
  // A throughput target is a ratio to the baseline of the same run: drawn at that level.
  const ratioLine = (key, label, ratio) => {
    const f = figure(key);
    return f?.baseline ? [{ y: f.baseline * ratio, label: `${label} ${ratio}x baseline` }] : [];
  };
  const send = series.send;
  const list = series.list;
  const charts = [
    lineChart({
      title: "POST /messages: latency distribution",
      xLabel: "percentile",
      yLabel: "ms",
      xAxis: "nines",
      series: [
        { name: "Parley", color: COLORS.parley, points: curve(send?.parley) },
        { name: "Parley, worker delivering", color: COLORS.sustained, points: curve(send?.sustained) },
        { name: "baseline", color: COLORS.baseline, points: curve(send?.baseline) },
      ],
      lines: targetLine("send_p99", "p99 target"),
    }),
    lineChart({
      title: "POST /messages: throughput over time",
      xLabel: "seconds",
      yLabel: "responses/s",
      series: [
        { name: "Parley", color: COLORS.parley, points: send?.parley.perSecond ?? [] },
        { name: "Parley, worker delivering", color: COLORS.sustained, points: send?.sustained?.perSecond ?? [] },
        { name: "baseline", color: COLORS.baseline, points: send?.baseline.perSecond ?? [] },
      ],
      lines: ratioLine("send_rps", "target", 0.85),
    }),
    lineChart({
      title: "POST /messages with the worker delivering: messages still queued",
      xLabel: "seconds",
      yLabel: "messages queued",
      series: [{ name: "backlog (sampled every second)", color: COLORS.sustained, points: send?.backlog ?? [] }],
    }),
    lineChart({
      title: "GET a page of 25: latency distribution",
      xLabel: "percentile",
      yLabel: "ms",
      xAxis: "nines",
      series: [
        { name: "Parley", color: COLORS.parley, points: curve(list?.parley) },
        { name: "baseline", color: COLORS.baseline, points: curve(list?.baseline) },
      ],
      lines: targetLine("list_p99", "p99 target"),
    }),
    lineChart({
      title: "GET a page of 25: throughput over time",
      xLabel: "seconds",
      yLabel: "responses/s",
      series: [
        { name: "Parley", color: COLORS.parley, points: list?.parley.perSecond ?? [] },
        { name: "baseline", color: COLORS.baseline, points: list?.baseline.perSecond ?? [] },
      ],
      lines: ratioLine("list_rps", "target", 0.75),
    }),
    lineChart({
      title: "API call -> webhook, and send -> delivered: latency distribution",
      xLabel: "percentile",
      yLabel: "ms",
      xAxis: "nines",
      series: [
        { name: "API call -> webhook", color: COLORS.parley, points: curve(series.webhookLatency) },
        { name: "send -> delivered", color: COLORS.second, points: curve(series.delivered?.polled) },
        {
          name: "send -> delivered webhook",
          color: COLORS.third,
          points: curve(series.delivered?.webhook),
          dashed: true,
        },
      ],
    }),
    lineChart({
      title: "API call -> webhook at 100 events/s, over time",
      xLabel: "seconds (request start)",
      yLabel: "ms",
      series: [
        {
          name: "latency of each event",
          color: COLORS.parley,
          points: series.webhookLatency?.overTime ?? [],
          scatter: true,
        },
      ],
      lines: targetLine("webhook_latency_p99", "p99 target"),
    }),
    lineChart({
      title: "Sandbox message deliveries from a backlog by one worker, over time",
      xLabel: "seconds since the first delivery",
      yLabel: "deliveries/s",
      series: [{ name: "delivered (0.5 s bins)", color: COLORS.parley, points: series.delivery?.overTime ?? [] }],
      lines: targetLine("delivery_rps", "target"),
    }),
    lineChart({
      title: "Webhook deliveries from a backlog, over time",
      xLabel: "seconds since the first arrival",
      yLabel: "events/s",
      series: [
        { name: "arrivals (0.5 s bins)", color: COLORS.parley, points: series.webhookThroughput?.overTime ?? [] },
      ],
      lines: targetLine("webhook_throughput", "target"),
    }),
    lineChart({
      title: "Long list: first page vs deep page, latency distribution",
      xLabel: "percentile",
      yLabel: "ms",
      xAxis: "nines",
      series: [
        { name: "first page", color: COLORS.baseline, points: curve(series.deep?.first) },
        { name: "deep page", color: COLORS.parley, points: curve(series.deep?.deep) },
      ],
    }),
    lineChart({
      title: "Upload of a 5 MB JPEG: latency distribution",
      xLabel: "percentile",
      yLabel: "ms",
      xAxis: "nines",
      series: [{ name: "POST /uploads", color: COLORS.parley, points: curve(series.upload) }],
      lines: targetLine("upload_p50", "p50 target"),
    }),
    lineChart({
      title: "Memory (RSS) during the send load",
      xLabel: "seconds",
      yLabel: "MB",
      series: [
        { name: "Parley API", color: COLORS.parley, points: send?.parley.rss.series.api ?? [] },
        { name: "Parley worker", color: COLORS.fourth, points: send?.parley.rss.series.worker ?? [] },
        { name: "baseline", color: COLORS.baseline, points: send?.baseline.rss.series.baseline ?? [] },
      ],
      lines: targetLine("memory_rss", "API target"),
    }),
  ];
  const met = figures.filter((f) => f.met === true).length;
  const measured = figures.filter((f) => f.met !== null).length;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Parley benchmark report</title>
<style>
  body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1320px; padding: 0 16px; color: #111827; }
  h1 { font-size: 22px; margin-bottom: 4px; }
  h2 { font-size: 17px; margin-top: 28px; }
  .muted, .summary { color: #6b7280; }
  table { border-collapse: collapse; width: 100%; font-size: 13px; }
  th, td { border-bottom: 1px solid #e5e7eb; padding: 6px 8px; text-align: left; vertical-align: top; }
  th { background: #f9fafb; }
  td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
  td.met { color: #15803d; font-weight: 600; }
  td.missed { color: #b91c1c; font-weight: 600; }
  td.na { color: #6b7280; }
  td.notes { color: #4b5563; font-size: 12px; max-width: 460px; }
  .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
  .charts svg { width: 100%; height: auto; border: 1px solid #e5e7eb; border-radius: 6px; background: #fff; }
  svg .title { font-size: 14px; font-weight: 600; fill: #111827; }
  svg .tick { font-size: 11px; fill: #6b7280; }
  svg .label, svg .legend { font-size: 12px; fill: #374151; }
  svg .muted { font-size: 13px; fill: #9ca3af; }
  svg .grid { stroke: #f1f5f9; }
  svg .axis { stroke: #9ca3af; }
  svg .target { stroke: #dc2626; stroke-dasharray: 3 3; }
  svg .target-label { font-size: 11px; fill: #dc2626; }
  ul.machine { columns: 2; font-size: 13px; }
</style>
</head>
<body>
<h1>Parley benchmark report</h1>
<p class="summary">${escapeHtml(machine.date)} &middot; ${met} of ${measured} targets met &middot; generated by <code>pnpm bench</code> (bench/run.mjs); figures from one run on the machine below, never pass/fail.</p>
<h2>Figures</h2>
${figuresTable(figures)}
<h2>Charts</h2>
<p class="muted">Latency distributions are percentile curves (x: percentile on a "nines" scale). Dashed red lines are targets. The baseline is bench/baseline/server.mjs (express 5 + zod + postgres.js, one transaction of three INSERTs) under the same autocannon settings.</p>
<div class="charts">
${charts.join("\n")}
</div>
<h2>Machine</h2>
${machineList(machine)}
</body>
</html>
`;
}
