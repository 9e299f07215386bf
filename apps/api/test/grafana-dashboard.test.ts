import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * docs/grafana/parley-dashboard.json (issue 24): every panel queries a metric that the API
 * or the worker really exports, so the dashboard never shows an empty panel after a rename.
 */
const root = path.resolve(import.meta.dirname, "../../..");

async function exportedMetricNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const file of ["apps/api/src/http/metrics.ts", "apps/worker/src/metrics.ts"]) {
    const source = await readFile(path.join(root, file), "utf8");
    for (const match of source.matchAll(/name: "(parley_[a-z_]+)"/g)) if (match[1]) names.add(match[1]);
  }
  return names;
}

describe("the Grafana dashboard", () => {
  it("is a dashboard whose every query names exported metrics", async () => {
    const dashboard = JSON.parse(await readFile(path.join(root, "docs/grafana/parley-dashboard.json"), "utf8")) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const exported = await exportedMetricNames();
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(8);
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets) {
        const used = [...expr.matchAll(/parley_[a-z_]+/g)].map((match) => match[0].replace(/_(bucket|sum|count)$/, ""));
        expect(used.length, expr).toBeGreaterThan(0);
        for (const name of used) expect(exported, `${panel.title}: ${name}`).toContain(name);
      }
    }
  });
});
