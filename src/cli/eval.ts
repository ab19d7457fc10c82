/**
 * `wa eval`: the evaluation suite (src/eval/) against a running service, with whatever model it is
 * configured with.
 *
 *   wa eval [--tasks all|NAME|CLASS ...] [--repeat N] [--concurrency N] [--timeout SEC] [--json] [--list]
 *           [--site-host HOST] [--site-public-host HOST]
 *
 * Connection as the other client verbs (src/cli/config.ts): --url/WA_URL, --key/WA_API_KEY,
 * --project/WA_PROJECT, --config. The fixture sites listen on loopback in this process, so the
 * service must be allowed to reach private addresses (WA_ALLOW_PRIVATE_NETWORKS=true on the
 * service); a service in a container reaches them with --site-host 0.0.0.0 --site-public-host
 * host.docker.internal (or the host's address).
 *
 * Prints a line per task as it ends (stderr) and the table with the totals (stdout), or one JSON
 * report with --json. Exit code 0 when every task passed, 1 when one failed, 2 for usage errors,
 * and the client verbs' codes for refusals of the API.
 */
import { WebAgentError } from "../client/index.ts"
import { ConfigError, resolveConnection } from "./config.ts"

export const evalUsage = `usage: wa eval [--tasks all|NAME|CLASS ...] [--repeat N] [--concurrency N] [--timeout SEC] [--json] [--list] [--site-host HOST] [--site-public-host HOST]`

class EvalArgsError extends Error {}

interface EvalArgs {
  readonly tasks: Array<string>
  readonly flags: Map<string, string>
  readonly bools: Set<string>
}

const VALUE_FLAGS = new Set(["repeat", "concurrency", "timeout", "site-host", "site-public-host", "url", "key", "project", "config"])
const BOOLEAN_FLAGS = new Set(["json", "list", "help"])

const parse = (args: ReadonlyArray<string>): EvalArgs => {
  const tasks: Array<string> = []
  const flags = new Map<string, string>()
  const bools = new Set<string>()
  let inTasks = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith("--")) {
      if (!inTasks) throw new EvalArgsError(`unexpected argument ${arg}\n${evalUsage}`)
      tasks.push(arg)
      continue
    }
    inTasks = false
    const eq = arg.indexOf("=")
    const name = arg.slice(2, eq === -1 ? undefined : eq)
    const inline = eq === -1 ? undefined : arg.slice(eq + 1)
    if (name === "tasks") {
      inTasks = true
      if (inline !== undefined) tasks.push(inline)
    } else if (BOOLEAN_FLAGS.has(name)) {
      if (inline !== undefined) throw new EvalArgsError(`--${name} takes no value`)
      bools.add(name)
    } else if (VALUE_FLAGS.has(name)) {
      const value = inline ?? args[++i]
      if (value === undefined) throw new EvalArgsError(`--${name} needs a value`)
      flags.set(name, value)
    } else {
      throw new EvalArgsError(`unknown flag --${name}\n${evalUsage}`)
    }
  }
  return { tasks, flags, bools }
}

const whole = (args: EvalArgs, name: string, min: number, max: number): number | undefined => {
  const raw = args.flags.get(name)
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) throw new EvalArgsError(`--${name} is a whole number from ${min} to ${max}`)
  return value
}

export const runEvalCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  let json = false
  try {
    const args = parse(argv)
    json = args.bools.has("json")
    if (args.bools.has("help")) {
      process.stdout.write(`${evalUsage}\n`)
      return 0
    }
    const { evalTasks } = await import("../eval/tasks.ts")
    if (args.bools.has("list")) {
      if (json) process.stdout.write(JSON.stringify(evalTasks.map((t) => ({ name: t.name, category: t.category, goal: t.goal }))) + "\n")
      else for (const t of evalTasks) process.stdout.write(`${t.name.padEnd(22)} ${t.category.padEnd(16)} ${t.goal}\n`)
      return 0
    }
    const { EvalUsageError, reportTable, resultLine, runEval, selectTasks } = await import("../eval/runner.ts")
    try {
      selectTasks(args.tasks)
    } catch (error) {
      if (error instanceof EvalUsageError) throw new EvalArgsError(error.message)
      throw error
    }
    const connection = resolveConnection({
      url: args.flags.get("url"),
      key: args.flags.get("key"),
      project: args.flags.get("project"),
      config: args.flags.get("config")
    })
    const timeout = whole(args, "timeout", 10, 86_400)
    const repeat = whole(args, "repeat", 1, 100)
    const concurrency = whole(args, "concurrency", 1, 64)
    const siteHost = args.flags.get("site-host")
    const sitePublicHost = args.flags.get("site-public-host")
    const report = await runEval({
      connection,
      tasks: args.tasks,
      ...(repeat !== undefined ? { repeat } : {}),
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(timeout !== undefined ? { taskTimeoutMs: timeout * 1000 } : {}),
      ...(siteHost !== undefined ? { siteHost } : {}),
      ...(sitePublicHost !== undefined ? { sitePublicHost } : {}),
      onResult: (result) => {
        if (!json) process.stderr.write(`${resultLine(result)}\n`)
      }
    })
    process.stdout.write(json ? `${JSON.stringify(report)}\n` : `${reportTable(report)}\n`)
    return report.totals.passed === report.totals.runs ? 0 : 1
  } catch (error) {
    if (error instanceof EvalArgsError || error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`)
      return 2
    }
    const { exitForError } = await import("./client.ts")
    if (json && error instanceof WebAgentError) {
      process.stdout.write(JSON.stringify({ error: { status: error.status, code: error.code, detail: error.detail, extra: error.extra } }) + "\n")
    }
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    return exitForError(error)
  }
}

/** Runs `wa eval` and ends the process with its exit code once stdout is flushed. */
export const mainEval = async (argv: ReadonlyArray<string>): Promise<never> => {
  const code = await runEvalCommand(argv)
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()))
  process.exit(code)
}
