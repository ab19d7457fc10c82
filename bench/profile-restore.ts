/**
 * Profile restore: session start with a profile (its saved cookies, local storage and IndexedDB
 * decrypted and loaded into the new browser context) against session start without one, measured
 * the same way as bench/session-start.ts: from `POST /sessions` to the agent's first navigation
 * reaching a local page, with a scripted model that answers at once. The two kinds alternate.
 * Two profiles: a cookie and local storage (the common case), and the same plus an IndexedDB
 * database (restored by Playwright, which opens a page per such origin).
 * Goal: p50 with a profile <= p50 without + 50 ms.
 *
 *   node bench/profile-restore.ts [iterations=20]
 */
import { lastUserText, refOf, startScriptedModel } from "../test/fixtures/model/scripted-model.ts"
import { startFixtureSites } from "../test/fixtures/sites/server.ts"
import { startService, stopAndClean } from "../test/support/service.ts"
import { startTaggedPages } from "./tagged-pages.ts"

const iterations = Number(process.argv[2] ?? 20)
const percentile = (values: Array<number>, p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!
const round = (value: number) => Math.round(value * 10) / 10

const pages = await startTaggedPages()
const site = await startFixtureSites()

const model = await startScriptedModel((request) => {
  const task = JSON.stringify(request.messages).match(/Task:\\n([a-z0-9 =_-]+)/i)?.[1] ?? ""
  const page = lastUserText(request)
  if (task.startsWith("seed")) {
    // Local storage (and IndexedDB with "seed idb") on the fixture origin, then a login cookie.
    const idb = task.startsWith("seed idb")
    if (page.includes("Logged in as bench")) return { tool: "done", args: { output: "seeded" } }
    if (page.includes(idb ? "IDB token: tok" : "IDB token: skipped")) return { tool: "navigate", args: { url: `${site.url}/login` } }
    const textbox = refOf(page, "textbox")
    if (textbox !== undefined && page.includes("/login")) return { tool: "type", args: { ref: textbox, text: "bench", submit: true } }
    if (page.includes("/storage")) return { tool: "scroll", args: { direction: "down" } }
    return { tool: "navigate", args: { url: `${site.url}/storage?set=tok${idb ? "" : "&idb=0"}` } }
  }
  const tag = task.match(/tag=(\w+)/)?.[1] ?? "none"
  return page.includes(`tag=${tag}`) ? { tool: "done", args: { output: "ok" } } : { tool: "navigate", args: { url: `${pages.url}?tag=${tag}` } }
})

const service = await startService({
  env: {
    WA_MODEL_BASE_URL: model.baseUrl,
    WA_MODEL: "scripted",
    WA_ALLOW_PRIVATE_NETWORKS: "true",
    WA_MAX_CONCURRENT_SESSIONS: "1000",
    WA_RATE_LIMIT_REQUESTS: "100000",
    WA_STEP_SCREENSHOTS: "false"
  }
})
const base = `/v1/projects/${service.projectId}`

const waitClosed = async (sessionId: string) => {
  for (;;) {
    const session = (await service.request("GET", `${base}/do_anything/sessions/${sessionId}`)).json
    if (session.status === "closed") return
    await new Promise((r) => setTimeout(r, 20))
  }
}

const startSession = async (tag: string, profileId: string | null) => {
  const started = performance.now()
  const response = await service.request("POST", `${base}/do_anything/sessions`, {
    body: { instructions: `Open the page with tag=${tag}`, keep_alive: false, ...(profileId === null ? {} : { profile_id: profileId }) }
  })
  if (response.status !== 201) throw new Error(`session create failed: ${response.status} ${response.text}`)
  const ms = (await pages.firstArrival(tag)) - started
  await waitClosed(response.json.id)
  return ms
}

const seededProfile = async (task: string) => {
  const profile = (await service.request("POST", `${base}/profiles`, { body: { name: task } })).json
  const seeded = await service.request("POST", `${base}/do_anything/sessions`, { body: { instructions: task, keep_alive: false, profile_id: profile.id } })
  await waitClosed(seeded.json.id)
  const stored = (await service.request("GET", `${base}/profiles/${profile.id}`)).json
  if (stored.has_saved_state !== true) throw new Error("the profile has no saved state after seeding")
  return profile.id as string
}
// A cookie and local storage (the common case), and the same with an IndexedDB database.
const plain = await seededProfile("seed")
const withIdb = await seededProfile("seed idb")

// Warm-up: the browser is launched by the first session.
await startSession("warm1", null)
await startSession("warm2", plain)
await startSession("warm3", withIdb)

const withProfile: Array<number> = []
const withIndexedDb: Array<number> = []
const without: Array<number> = []
for (let i = 0; i < iterations; i++) {
  without.push(await startSession(`n${i}`, null))
  withProfile.push(await startSession(`p${i}`, plain))
  withIndexedDb.push(await startSession(`i${i}`, withIdb))
}

const p50With = percentile(withProfile, 0.5)
const p50Without = percentile(without, 0.5)
console.log(JSON.stringify({
  bench: "profile-restore",
  iterations,
  with_profile_p50_ms: round(p50With),
  without_profile_p50_ms: round(p50Without),
  overhead_p50_ms: round(p50With - p50Without),
  with_profile_p95_ms: round(percentile(withProfile, 0.95)),
  with_indexeddb_profile_p50_ms: round(percentile(withIndexedDb, 0.5)),
  indexeddb_overhead_p50_ms: round(percentile(withIndexedDb, 0.5) - p50Without),
  without_profile_p95_ms: round(percentile(without, 0.95)),
  goal_overhead_ms: 50,
  with_profile_ms: withProfile.map(Math.round),
  with_indexeddb_profile_ms: withIndexedDb.map(Math.round),
  without_profile_ms: without.map(Math.round)
}, null, 2))

await stopAndClean(service)
await model.close()
await site.close()
await pages.close()
process.exit(0)
