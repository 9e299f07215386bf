import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Builds the API and everything it depends on (turbo skips what is up to date). Its
 * output goes to stderr, so that `pnpm --silent admin ... --json` prints only its JSON.
 */
export function buildApi() {
  const turbo = process.platform === "win32" ? "turbo.cmd" : "turbo";
  const result = spawnSync(
    `${root}/node_modules/.bin/${turbo}`,
    ["run", "build", "--filter=@parley/api...", "--output-logs=errors-only", "--log-prefix=none"],
    { cwd: root, stdio: ["ignore", process.stderr, process.stderr] },
  );
  if (result.status !== 0) {
    process.stderr.write("Build failed; see the output above.\n");
    process.exit(result.status ?? 1);
  }
}
