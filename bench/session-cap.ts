/**
 * The per-key session cap under concurrency: 50 parallel session creates with one key against a
 * cap of 5, on one node (embedded PostgreSQL) and on two API nodes sharing a database (needs
 * TEST_DATABASE_URL and TEST_REDIS_URL). Target: exactly 5 × 201 and 45 × 429 each time.
 *
 *   node bench/session-cap.ts [rounds=3]
 */
import { startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { clusterNodeEnv } from "../test/scale-out/nodes.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../test/support/service.ts"

const rounds = Number(process.argv[2] ?? 3)
// Every run waits for a person, so its session stays open and holds its slot.
const model = await startScriptedModel(() => ({ tool: "ask_human", args: { prompt: "hold" } }))
const common = { WA_MAX_CONCURRENT_SESSIONS: "5", WA_RATE_LIMIT_REQUESTS: "100000", WA_DRAIN_SECONDS: "1", WA_STEP_SCREENSHOTS: "false" }

const burst = async (nodes: ReadonlyArray<Service>) => {
  const path = `/v1/projects/${nodes[0]!.projectId}/do_anything/sessions`
  const responses = await Promise.all(Array.from({ length: 50 }, (_, i) =>
    nodes[i % nodes.length]!.request("POST", path, { body: { instructions: `parallel ${i}` } })))
  const created = responses.filter((r) => r.status === 201)
  const refused = responses.filter((r) => r.status === 429).length
  // Close what was opened, so the next round starts from zero.
  for (const response of created) await nodes[0]!.request("POST", `${path}/${response.json.id}/close`)
  return `${created.length} × 201, ${refused} × 429, other ${50 - created.length - refused}`
}

const report = async (label: string, nodes: ReadonlyArray<Service>) => {
  for (let round = 1; round <= rounds; round++) console.log(`${label}, round ${round}: ${await burst(nodes)}`)
}

const single = await startService({ env: { ...common, WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted" } })
await report("one node, cap 5", [single])
await stopAndClean(single)

const databaseUrl = process.env["TEST_DATABASE_URL"]
const redisUrl = process.env["TEST_REDIS_URL"]
if (databaseUrl && redisUrl) {
  const database = (await externalDatabase())!
  const env = clusterNodeEnv(database.url, redisUrl, model.baseUrl, common)
  const a = await startService({ env })
  const b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
  await report("two API nodes, cap 5", [a, b])
  await Promise.all([stopAndClean(a), stopAndClean(b)])
  await database.drop()
} else {
  console.log("two API nodes: skipped (set TEST_DATABASE_URL and TEST_REDIS_URL)")
}
await model.close()
