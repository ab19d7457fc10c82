/**
 * The `wa` command: `serve` (default: API + cluster runner + embedded database), `runner` (a
 * cluster runner without the API: /healthz, /readyz and /metrics only; needs DATABASE_URL), `migrate`,
 * `projects create --name N`, `keys create --project P [--name N] [--scope admin|run]` (admin by default:
 * the operator runs it), `credits grant --project P --usd N [--bucket additional|monthly]` (src/billing/ledger.ts),
 * `plans list`, `plans set --project P --plan ID`, `plans unset --project P` (src/billing/plans.ts).
 * `budget set --project P --usd N|none` and `budget show --project P` (src/billing/budget.ts).
 * `users create --email E --password-stdin [--name N] [--tenant T] [--role admin|member]`,
 * `users reset-password --email E --password-stdin` (src/accounts/).
 * Commands other than `serve`
 * print one JSON document on stdout and work whether or not the service runs on the same data dir.
 * Client commands (`run`, `research`, `search`, `monitors`, `mcp`) talk to a service over its API:
 * src/cli/client.ts.
 *
 * This file only picks the verb: each kind of verb loads its own modules, so `wa --help` loads
 * nothing of the server and a client verb nothing but the SDK.
 */
import { existsSync } from "node:fs"
import { enableCompileCache } from "node:module"
import { join } from "node:path"
import { clientCommands, clientUsage, operatorUsage } from "./cli/usage.ts"

// Node keeps the compiled code of our modules (and the stripped TypeScript) between starts, checked
// against each file's contents: loading the server's module graph takes about 40 % less CPU.
// NODE_COMPILE_CACHE, when set, names the directory; NODE_DISABLE_COMPILE_CACHE turns it off.
enableCompileCache()

const argv = process.argv.slice(2)
if (argv[0] === "--help" || argv[0] === "help") {
  console.log(`${operatorUsage}\n${clientUsage}`)
} else if (argv[0] === "eval") {
  await (await import("./cli/eval.ts")).mainEval(argv.slice(1))
} else if (clientCommands.has(argv[0] ?? "")) {
  // Client commands use the API of a running service, not this machine's server configuration.
  await (await import("./cli/client.ts")).mainClient(argv)
} else {
  // `serve` on an embedded database that exists already: start PostgreSQL now, so that it comes
  // up while the server's modules load (see prestartEmbeddedPostgres); its failure is reported by
  // the start. A first start (initdb) waits for the configuration to be validated instead, so a
  // bad setting never creates a database.
  // Env read before any layer exists (AppConfig later reads and validates WA_DATA_DIR and DATABASE_URL).
  const dataDir = process.env["WA_DATA_DIR"] || "./data"
  if ((argv[0] ?? "serve") === "serve" && !process.env["DATABASE_URL"] && existsSync(join(dataDir, "postgres.password"))) {
    const { prestartEmbeddedPostgres } = await import("./store/embedded-postgres.ts")
    prestartEmbeddedPostgres(dataDir)
  }
  // WA_EXIT_WITH_PARENT=1 (test harnesses, supervisors that hold the server's stdin): when the
  // parent dies, however it ends, its end of the pipe closes and the server stops as on SIGTERM,
  // so no server outlives the process that started it.
  // Env read before any layer exists: the stdin watch must be in place while the server's modules load.
  if (process.env["WA_EXIT_WITH_PARENT"] === "1" && ["serve", "runner"].includes(argv[0] ?? "serve")) {
    process.stdin.on("end", () => process.kill(process.pid, "SIGTERM")).on("error", () => {}).resume()
    ;(process.stdin as unknown as { unref?: () => void }).unref?.()
  }
  await (await import("./cli/operator.ts")).runOperatorCommand(argv)
}
