/**
 * Where the client commands find the service and the key: flags first (`--url`, `--key`,
 * `--project`), then the environment (`WA_URL`, `WA_API_KEY`, `WA_PROJECT`), then the config file
 * (`--config PATH`, else `WA_CONFIG`, else `$XDG_CONFIG_HOME/wa/config.json`, else
 * `~/.config/wa/config.json`): `{"url": "...", "api_key": "wa_...", "project_id": "proj_..."}`.
 */
import { readFileSync } from "node:fs"
import { homedir } from "node:os"
import * as path from "node:path"

export interface Connection {
  readonly url: string
  readonly apiKey: string
  readonly projectId: string
}

export class ConfigError extends Error {}

export const configPath = (flag: string | undefined, env: NodeJS.ProcessEnv): string =>
  flag ?? env["WA_CONFIG"] ?? path.join(env["XDG_CONFIG_HOME"] ?? path.join(homedir(), ".config"), "wa", "config.json")

const readConfigFile = (file: string, explicit: boolean): Record<string, unknown> => {
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (error) {
    if (!explicit && (error as NodeJS.ErrnoException).code === "ENOENT") return {}
    throw new ConfigError(`cannot read the config file ${file}: ${(error as Error).message}`)
  }
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object")
    return parsed as Record<string, unknown>
  } catch (error) {
    throw new ConfigError(`the config file ${file} is not valid: ${(error as Error).message}`)
  }
}

export const resolveConnection = (
  flags: { readonly url?: string | undefined; readonly key?: string | undefined; readonly project?: string | undefined; readonly config?: string | undefined },
  env: NodeJS.ProcessEnv = process.env
): Connection => {
  const explicit = flags.config !== undefined || env["WA_CONFIG"] !== undefined
  const file = configPath(flags.config, env)
  const fromFile = readConfigFile(file, explicit)
  const pick = (flag: string | undefined, envName: string, key: string) => {
    const value = flag ?? env[envName] ?? fromFile[key]
    return typeof value === "string" && value !== "" ? value : undefined
  }
  const url = pick(flags.url, "WA_URL", "url") ?? "http://127.0.0.1:8080"
  const apiKey = pick(flags.key, "WA_API_KEY", "api_key")
  const projectId = pick(flags.project, "WA_PROJECT", "project_id")
  const missing = [apiKey === undefined ? "the API key (--key, WA_API_KEY or api_key)" : undefined, projectId === undefined ? "the project (--project, WA_PROJECT or project_id)" : undefined]
    .filter((m) => m !== undefined)
  if (missing.length > 0) throw new ConfigError(`missing ${missing.join(" and ")}; flags, the environment or ${file} give them`)
  try {
    new URL(url)
  } catch {
    throw new ConfigError(`the service URL is not a URL: ${url}`)
  }
  return { url, apiKey: apiKey!, projectId: projectId! }
}
