import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";

export interface Profile {
  apiKey: string;
  baseUrl?: string;
}

export interface Config {
  profiles: Record<string, Profile>;
}

export function configPath(): string {
  const base = process.env.XDG_CONFIG_HOME || path.join(homedir(), ".config");
  return path.join(base, "parley", "config.json");
}

export async function readConfig(): Promise<Config> {
  try {
    const parsed: unknown = JSON.parse(await readFile(configPath(), "utf8"));
    if (parsed && typeof parsed === "object" && "profiles" in parsed) return parsed as Config;
  } catch (error) {
    // A missing file is simply no profiles yet; anything else (bad JSON, permissions) must surface.
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return { profiles: {} };
}

export async function saveProfile(name: string, profile: Profile): Promise<string> {
  const config = await readConfig();
  config.profiles[name] = profile;
  const file = configPath();
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  // The file holds secret keys: only the owner may read it, even if it existed with looser rights.
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}
