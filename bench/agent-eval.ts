/**
 * The evaluation suite (src/eval/, `wa eval`) as a bench: success, steps, tokens, cost and wall
 * time per task and in total.
 *
 *   node bench/agent-eval.ts [--tasks NAME ...] [--repeat N] [--concurrency N] [--json]
 *
 * Which service and model:
 * - WA_URL (with WA_API_KEY and WA_PROJECT) set: that running service, with whatever model it is
 *   configured with (it must allow private networks: WA_ALLOW_PRIVATE_NETWORKS=true).
 * - else, a model named in the environment (WA_MODEL_BASE_URL / WA_MODEL / WA_MODEL_PROVIDER /
 *   WA_MODEL_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY, as `wa serve` reads them): a fresh
 *   service on a temporary data dir with that model, allowed to reach the loopback fixture sites.
 * - else: a fresh service on the deterministic plan-following model (src/eval/scripted-model.ts),
 *   with vision on (the vision tasks read the screenshot), the figures CI checks (every task passes).
 */
import { startPlanModel } from "../src/eval/scripted-model.ts"
import { reportTable, resultLine, runEval } from "../src/eval/runner.ts"
import { type Service, scriptedAgentEnv, startService, stopAndClean } from "../test/support/service.ts"

const args = process.argv.slice(2)
const tasks: Array<string> = []
let repeat = 1
let concurrency = 4
let json = false
for (let i = 0; i < args.length; i++) {
  const arg = args[i]!
  if (arg === "--json") json = true
  else if (arg === "--repeat") repeat = Number(args[++i])
  else if (arg === "--concurrency") concurrency = Number(args[++i])
  else if (arg === "--tasks") while (args[i + 1] !== undefined && !args[i + 1]!.startsWith("--")) tasks.push(args[++i]!)
  else throw new Error(`unknown argument ${arg}`)
}

const modelVariables = ["WA_MODEL_BASE_URL", "WA_MODEL", "WA_MODEL_PROVIDER", "WA_MODEL_API_KEY", "WA_MODEL_VISION", "WA_MODEL_PRICE_PER_MTOK"]
const ownModel = Object.fromEntries(modelVariables.flatMap((name) => process.env[name] ? [[name, process.env[name]!]] : []))
const external = process.env["WA_URL"]

let service: Service | undefined
let planModel: Awaited<ReturnType<typeof startPlanModel>> | undefined
let connection: { url: string; apiKey: string; projectId: string }
if (external !== undefined && external !== "") {
  const apiKey = process.env["WA_API_KEY"], projectId = process.env["WA_PROJECT"]
  if (!apiKey || !projectId) throw new Error("WA_URL needs WA_API_KEY and WA_PROJECT")
  connection = { url: external, apiKey, projectId }
} else {
  const hasOwnModel = ownModel["WA_MODEL_BASE_URL"] !== undefined || ownModel["WA_MODEL"] !== undefined || ownModel["WA_MODEL_PROVIDER"] !== undefined
  const env = hasOwnModel
    ? { WA_ALLOW_PRIVATE_NETWORKS: "true", WA_MAX_CONCURRENT_SESSIONS: "100", WA_STEP_SCREENSHOTS: "false", ...ownModel }
    : scriptedAgentEnv((planModel = await startPlanModel()).baseUrl, { WA_STEP_SCREENSHOTS: "false", WA_MODEL_VISION: "on" })
  service = await startService({ env })
  connection = { url: service.url, apiKey: service.apiKey, projectId: service.projectId }
}

try {
  const report = await runEval({
    connection,
    tasks,
    repeat,
    concurrency,
    onResult: (result) => {
      if (!json) process.stderr.write(`${resultLine(result)}\n`)
    }
  })
  process.stdout.write(json ? `${JSON.stringify(report)}\n` : `${reportTable(report)}\n`)
  process.exitCode = report.totals.passed === report.totals.runs ? 0 : 1
} finally {
  await stopAndClean(service)
  await planModel?.close()
}
