/**
 * What `wa --help` prints and which verbs are client verbs: kept apart from the commands
 * themselves so that neither the help nor the choice of a verb loads the server or the SDK.
 */

/** Verbs that talk to a running service over its API (src/cli/client.ts). */
export const clientCommands: ReadonlySet<string> = new Set(["run", "research", "search", "monitors", "mcp"])

/** The client verbs: src/cli/client.ts. */
export const clientUsage = `usage:
  wa run "instructions" [--follow] [--no-wait] [--keep-alive] [--max-duration MIN] [--output-schema JSON]
  wa research "topic" [--follow] [--approve] [--depth light|standard|deep] [--audience TEXT] [--no-outline] [--no-wait]
  wa search "query" ["query" ...] [--engines a,b] [--max-results N] [--summarize] [--language L] [--objective TEXT]
  wa monitors create --intent TEXT [--target URL]... [--interval SECONDS | --cron EXPR [--tz TZ]] [--notify inbox|URL|webhook:ID]
  wa monitors list [--status S] [--page N]
  wa monitors show MONITOR_ID
  wa mcp [--http PORT]
  wa eval [--tasks all|NAME|CLASS ...] [--repeat N] [--concurrency N] [--timeout SEC] [--json] [--list] [--site-host HOST] [--site-public-host HOST]
common: --json  --url URL (WA_URL)  --key KEY (WA_API_KEY)  --project PID (WA_PROJECT)  --config FILE (WA_CONFIG, ~/.config/wa/config.json)
exit codes: 0 ok, 1 task failed, 2 usage, 3 auth, 4 not found, 5 rejected, 6 rate limited, 7 unavailable, 8 canceled, 9 needs input`


/** The operator verbs: src/cli/operator.ts (serve and runner: src/server.ts). */
export const operatorUsage = `usage: wa [serve | runner | migrate | projects create --name N | keys create --project P [--name N] [--scope admin|run] | credits grant --project P --usd N [--bucket additional|monthly] | plans list | plans set --project P --plan ID | plans unset --project P | budget set --project P --usd N|none | budget show --project P | users create --email E --password-stdin [--name N] [--tenant T] [--role admin|member] | users reset-password --email E --password-stdin]`
