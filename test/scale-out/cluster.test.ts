/**
 * Scale-out on loopback: two `wa serve` nodes (API + runner) and one `wa runner` on one external
 * PostgreSQL and Redis, as socket runners of one Effect Cluster. Real Chromium, local fixture
 * sites, the scripted model. Runs only where TEST_DATABASE_URL and TEST_REDIS_URL are set.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { type ChatRequest, lastUserText, promptText, refOf, type ScriptedModel, type ScriptedReply, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"
import { contractFetch } from "../support/contract-hook.ts"
import { clusterNodeEnv, eventually, type RunnerNode, scrape, shardsSettled, startRunner } from "./nodes.ts"
import { insideOneWindow, roomyWindow } from "../support/rate-window.ts"
import { waitForRunStatus } from "../support/runs.ts"

const databaseUrl = process.env["TEST_DATABASE_URL"] || undefined
const redisUrl = process.env["TEST_REDIS_URL"] || undefined

const terminal = ["done", "failed", "canceled"]

/** Model gates by task name: a run whose task is `hold <name>` waits until the gate opens. */
const gates = new Map<string, { opened: Promise<void>; open: () => void }>()
const gate = (name: string) => {
  let entry = gates.get(name)
  if (entry === undefined) {
    let open: () => void = () => {}
    const opened = new Promise<void>((resolve) => (open = resolve))
    gates.set(name, entry = { opened, open })
  }
  return entry
}

describe.skipIf(databaseUrl === undefined || redisUrl === undefined)("scale-out: three API nodes and a runner on one database", () => {
  let site: FixtureSites
  let model: ScriptedModel
  let database: Awaited<ReturnType<typeof externalDatabase>>
  let a: Service
  let b: Service
  let e: Service
  let c: RunnerNode
  /** API nodes started by later tests (they need a live API node besides the one they disturb). */
  const extra: Array<Service> = []
  let clusterEnv: Record<string, string> = {}
  let rateLimitedKey: string
  /** An hour or a little more, with room left in the current window for the whole file: the rate-limit test does not wait for a fresh one. */
  const rateWindow = roomyWindow(3600, 1200)

  /** Stateless per request, so concurrent sessions of several tasks can share the model. */
  const script = async (request: ChatRequest): Promise<ScriptedReply> => {
    const prompt = promptText(request)
    const page = lastUserText(request)
    const task = prompt.match(/Task:\n(.*)/)?.[1] ?? ""
    if (task.startsWith("hold ")) {
      await gate(task.slice(5)).opened
      return { tool: "done", args: { output: "released" } }
    }
    if (task === "Log in as ada") {
      if (page.includes("Logged in as ada")) return { tool: "done", args: { output: { page: "logged-in" } } }
      const textbox = refOf(page, "textbox")
      if (textbox !== undefined && page.includes("/login")) return { tool: "type", args: { ref: textbox, text: "ada", submit: true } }
      return { tool: "navigate", args: { url: `${site.url}/login` } }
    }
    if (task === "resume ada") {
      // Logs in (steps 1 and 2), then waits on the gate while its runner is killed (step 3).
      const step = Number(page.match(/Step (\d+)\./)?.[1])
      if (page.includes("Logged in as ada")) {
        await gate("resume").opened
        return { tool: "done", args: { output: { state: "logged-in", step } } }
      }
      const textbox = refOf(page, "textbox")
      if (textbox !== undefined && page.includes("/login")) return { tool: "type", args: { ref: textbox, text: "ada", submit: true } }
      return { tool: "navigate", args: { url: `${site.url}/login` } }
    }
    if (task === "Who am I logged in as?") {
      if (!page.includes(`${site.url}/account`)) return { tool: "navigate", args: { url: `${site.url}/account` } }
      return { tool: "done", args: { output: { state: page.match(/Logged in as \w+|Not logged in/)?.[0] } } }
    }
    return { tool: "done", args: { output: "ok" } }
  }

  beforeAll(async () => {
    site = await startFixtureSites()
    model = await startScriptedModel(script)
    database = await externalDatabase()
    const env = clusterNodeEnv(database!.url, redisUrl!, model.baseUrl, {
      WA_MAX_CONCURRENT_SESSIONS: "100",
      WA_RATE_LIMIT_REQUESTS: "1500",
      WA_RATE_LIMIT_WINDOW_SECONDS: String(rateWindow),
      WA_CLUSTER_HEALTH_CHECK_SECONDS: "1",
      WA_CLUSTER_LOCK_EXPIRATION_SECONDS: "6",
      // Long enough for the drain tests to act while a runner drains (they end it sooner).
      WA_DRAIN_SECONDS: "10"
    })
    clusterEnv = env
    a = await startService({ env })
    const credentials = { projectId: a.projectId, apiKey: a.apiKey }
    ;[b, e, c] = await Promise.all([startService({ env, credentials }), startService({ env, credentials }), startRunner(env)])
    const key = await a.cli("keys", "create", "--project", a.projectId, "--name", "rate-limit")
    rateLimitedKey = JSON.parse(key.stdout).secret_token
    // The runners' split of the shards settles before the tests place sessions.
    await shardsSettled("the shards split over four runners", [a.url, b.url, e.url, c.url])
  }, 180_000)

  afterAll(async () => {
    for (const entry of gates.values()) entry.open()
    await Promise.all([stopAndClean(a), stopAndClean(b), stopAndClean(e), c?.stop(), ...extra.map((node) => stopAndClean(node))])
    await database?.drop()
    await model?.close()
    await site?.close()
  }, 120_000)

  const base = (node: Service) => `/v1/projects/${node.projectId}/do_anything`
  const nodes = () => [a, b]
  /** Every runner, API nodes first (indexes 0..2 are a, b, e; 3 is the runner-only node). */
  const runners = () => [a, b, e, c, ...extra] as const
  const runnerUrls = () => runners().map((node) => node.url)
  /** Every API node, including those started by later tests. */
  const apiNodes = () => [a, b, e, ...extra]
  const alive = (node: { process: { exitCode: number | null; signalCode: string | null } }) => node.process.exitCode === null && node.process.signalCode === null
  const exited = (node: { process: import("node:child_process").ChildProcess }) =>
    alive(node) ? new Promise<void>((resolve) => node.process.once("exit", () => resolve())) : Promise.resolve()

  /** Starts one more API node and waits until the live runners' split of the shards has settled. */
  const addApiNode = async () => {
    extra.push(await startService({ env: clusterEnv, credentials: { projectId: a.projectId, apiKey: a.apiKey } }))
    await shardsSettled("shards rebalanced onto the fresh node", runners().filter(alive).map((node) => node.url))
  }

  const createSession = async (via: Service, body: Record<string, unknown>) => {
    const response = await via.request("POST", `${base(via)}/sessions`, { body })
    expect(response.status, response.text).toBe(201)
    return { sid: response.json.id as string, rid: response.json.latest_run_id as string }
  }
  const runPath = (via: Service, sid: string, rid: string) => `${base(via)}/sessions/${sid}/runs/${rid}`
  const waitForStatus = (via: Service, sid: string, rid: string, statuses: ReadonlyArray<string>) =>
    waitForRunStatus(via, runPath(via, sid, rid), statuses, { timeoutMs: 120_000 })
  /** The runner (index into runnerUrls) executing the only run in flight. */
  const runnerExecuting = () =>
    eventually("a runner with the run in flight", async () => {
      const inFlight = await Promise.all(runners().map(async (node) => alive(node) ? (await scrape(node.url)).get("wa_runs_in_flight") ?? 0 : 0))
      const index = inFlight.findIndex((n) => n > 0)
      return index >= 0 ? index : undefined
    })

  it("every node is ready and exposes its runner metrics", async () => {
    for (const url of runnerUrls()) {
      expect((await contractFetch(url)(`${url}/readyz`)).status).toBe(200)
      const metrics = await scrape(url)
      for (const name of ["effect_cluster_shards", "wa_runs_in_flight", "wa_browser_contexts_in_use", "wa_cluster_entities_resident"]) {
        expect(metrics.has(name), `${name} on ${url}`).toBe(true)
      }
    }
    const response = await contractFetch(c.url)(`${c.url}/metrics`)
    expect(response.headers.get("content-type")).toContain("text/plain")
    // The runner-only node serves no API.
    expect((await contractFetch(c.url)(`${c.url}/v1/projects/${a.projectId}/do_anything/sessions`)).status).toBe(404)
    // 300 shards, split over four runners once the hand-offs of the joins settle.
    expect(await shardsSettled("all 300 shards held, split evenly", runnerUrls())).toEqual([75, 75, 75, 75])
  })

  // Twelve agent runs at once on two runners: over a minute on a loaded 2-core host.
  it("sessions created through either API node spread over the runners", { timeout: 180_000 }, async () => {
    const created = await Promise.all(Array.from({ length: 12 }, (_, i) => createSession(nodes()[i % 2]!, { instructions: "spread", keep_alive: true })))
    for (const { sid, rid } of created) expect((await waitForStatus(a, sid, rid, terminal)).status).toBe("done")
    // Where each session ran, from the runners' own "run started" lines: every session started,
    // and the sessions over more than one runner. (The resident-entity gauges are not used: under
    // a loaded host a runner's shard leases can lapse and come back, which stops its idle
    // kept-alive entities. For the same reason a run may be started twice: its shard moved after
    // one runner logged the start and before its run went running; the second start supersedes
    // the first, whose writes are refused, see the SIGSTOP test below.)
    const ranOn = runners().map((node) => new Set(node.logs
      .filter((line) => line.message === "run started")
      .map((line) => String(line.annotations?.["session_id"]))
      .filter((sid) => created.some((c) => c.sid === sid))))
    const perRunner = ranOn.map((sessions) => sessions.size)
    // On failure: every runner's lines about the sessions no runner logged a start for.
    const seen = new Set(ranOn.flatMap((sessions) => [...sessions]))
    const unseen = created.filter((c) => !seen.has(c.sid))
    const about = runners().flatMap((node, i) => node.logs
      .filter((line) => unseen.some((c) => line.annotations?.["session_id"] === c.sid || line.annotations?.["run_id"] === c.rid))
      .map((line) => `runner ${i}: ${line.message} ${JSON.stringify(line.annotations)}`))
    expect(seen.size, `sessions started per runner: ${perRunner.join(", ")}; lines about the others:\n${about.join("\n")}`).toBe(12)
    expect(perRunner.filter((n) => n > 0).length, `sessions started per runner: ${perRunner.join(", ")}`).toBeGreaterThanOrEqual(2)
    await Promise.all(created.map(({ sid }) => a.request("POST", `${base(a)}/sessions/${sid}/close`)))
  })

  it("a follow-up run sent through node B runs in the browser context of the session created through node A", async () => {
    const { sid, rid } = await createSession(a, { instructions: "Log in as ada", keep_alive: true })
    const first = await waitForStatus(a, sid, rid, terminal)
    expect(first.status).toBe("done")
    expect(first.output).toEqual({ page: "logged-in" })

    const followUp = await b.request("POST", `${base(b)}/sessions/${sid}/runs`, { body: { instructions: "Who am I logged in as?", keep_alive: false } })
    expect(followUp.status, followUp.text).toBe(201)
    const second = await waitForStatus(b, sid, followUp.json.id, terminal)
    expect(second.status).toBe("done")
    expect(second.output).toEqual({ state: "Logged in as ada" })
  })

  it("SSE through an API node streams a run executing on another runner", async () => {
    const { sid, rid } = await createSession(a, { instructions: "hold sse", keep_alive: false })
    await waitForStatus(a, sid, rid, ["running"])
    const owner = await runnerExecuting()
    // An API node that is not the runner executing the run (both qualify when the runner-only node has it).
    const via = [a, b, e].find((_, index) => index !== owner)!
    const reading = readSse(`${via.url}${base(via)}/sessions/${sid}/runs/${rid}/events`, { authorization: `Bearer ${via.apiKey}` })
    gate("sse").open()
    const { status, events } = await reading
    expect(status).toBe(200)
    const ids = events.map((e) => e.id).filter((id) => id !== undefined)
    expect(ids).toEqual([...ids].sort((x, y) => x! - y!))
    expect(events.map((e) => e.event)).toContain("run.completed")
    expect((await waitForStatus(via, sid, rid, terminal)).status).toBe("done")
  })

  it("one key gets one rate-limit budget across both API nodes (Redis)", async () => {
    // 1500 requests a window (about an hour) for the key: spend them alternately through A and B, then both refuse.
    await insideOneWindow(rateWindow, 120)
    const path = `/v1/projects/${a.projectId}/do_anything/sessions`
    let passed = 0
    for (let batch = 0; batch < 15; batch++) {
      const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => nodes()[i % 2]!.request("GET", path, { key: rateLimitedKey })))
      passed += responses.filter((r) => r.status === 200).length
    }
    expect(passed).toBe(1500)
    for (const node of nodes()) {
      const refused = await node.request("GET", path, { key: rateLimitedKey })
      expect(refused.status).toBe(429)
      expect(refused.json.code).toBe("rate_limit_exceeded")
    }
  }, 240_000) // the wait for a fresh window (at most 120 s) fits in this timeout

  it("SIGTERM: the runner drains its run in flight, then hands its shards over and exits", async () => {
    const { sid, rid } = await createSession(a, { instructions: "hold drain", keep_alive: false })
    await waitForStatus(a, sid, rid, ["running"])
    const owner = runners()[await runnerExecuting()]
    const survivor = [a, b, e].find((node) => node !== owner)!
    const gone = exited(owner)
    owner.process.kill("SIGTERM")
    await eventually("the drain to start", async () => owner.logs.some((line) => line.message === "draining: waiting for runs in flight") ? true : undefined)
    gate("drain").open()
    await gone
    expect(owner.process.exitCode).toBe(0)
    expect(owner.logs.some((line) => line.message === "drained")).toBe(true)
    const run = await waitForStatus(survivor, sid, rid, terminal)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("released")
    // The remaining runners hold every shard again.
    await eventually("shards handed over", async () => {
      const held = await Promise.all(runners().filter(alive).map(async (node) => (await scrape(node.url)).get("effect_cluster_shards") ?? 0))
      return held.reduce((x, y) => x + y, 0) === 300 ? true : undefined
    })
  })

  it("SIGTERM: a draining runner starts no new run; the runner that takes the shard runs it", async () => {
    // This test stops a node: a fresh API node keeps enough of them for the tests after it.
    await addApiNode()
    const via = apiNodes().find(alive)!
    const held = await createSession(via, { instructions: "hold drain-new", keep_alive: false })
    await waitForStatus(via, held.sid, held.rid, ["running"])
    const owner = runners()[await runnerExecuting()]
    // A second session living on the same runner: one whose entity made that runner's count grow.
    const sessionsOn = async (node: { url: string }) => (await scrape(node.url)).get(`effect_cluster_entities{type="Session"}`) ?? 0
    let neighbour: { sid: string; rid: string } | undefined
    for (let attempt = 0; attempt < 40 && neighbour === undefined; attempt++) {
      const before = await sessionsOn(owner)
      const created = await createSession(via, { instructions: "neighbour", keep_alive: true })
      expect((await waitForStatus(via, created.sid, created.rid, terminal)).status).toBe("done")
      if (await sessionsOn(owner) > before) neighbour = created
      else await via.request("POST", `${base(via)}/sessions/${created.sid}/close`)
    }
    expect(neighbour, "a session on the runner executing the held run").toBeDefined()
    const survivor = apiNodes().find((node) => node !== owner && alive(node))!

    const gone = exited(owner)
    owner.process.kill("SIGTERM")
    await eventually("the drain to start", async () => owner.logs.some((line) => line.message === "draining: waiting for runs in flight") ? true : undefined)
    // A follow-up on the draining runner's session, through another API node.
    const followUp = await survivor.request("POST", `${base(survivor)}/sessions/${neighbour!.sid}/runs`, { body: { instructions: "after the handover", keep_alive: true } })
    expect(followUp.status, followUp.text).toBe(201)
    const rid = followUp.json.id as string
    await eventually("the draining runner to leave the follow-up", async () =>
      owner.logs.some((line) => line.message === "draining: run left for the runner that takes its shard" && line.annotations["run_id"] === rid) ? true : undefined)
    // It does not start there: after a while the run is still pending, with no step, while the
    // runner keeps draining its held run.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const waiting = (await survivor.request("GET", `${base(survivor)}/sessions/${neighbour!.sid}/runs/${rid}`)).json
    expect(waiting.status).toBe("pending")
    expect(waiting.step_count).toBe(0)
    expect(alive(owner)).toBe(true)

    // The held run still finishes on its runner, which then exits; the follow-up runs elsewhere.
    gate("drain-new").open()
    await gone
    expect(owner.process.exitCode).toBe(0)
    expect(owner.logs.some((line) => line.message === "drained")).toBe(true)
    const first = await waitForStatus(survivor, held.sid, held.rid, terminal)
    expect(first.status, JSON.stringify(first.error)).toBe("done")
    expect(first.output).toBe("released")
    const run = await waitForStatus(survivor, neighbour!.sid, rid, terminal)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    expect(run.output).toBe("ok")
    // Started once, from pending, on the new owner: no resume, contiguous events.
    const { events } = await readSse(`${survivor.url}${base(survivor)}/sessions/${neighbour!.sid}/runs/${rid}/events`, { authorization: `Bearer ${survivor.apiKey}` })
    const ids = events.filter((event) => event.id !== undefined).map((event) => event.id)
    expect(ids).toEqual(ids.map((_, i) => i + 1))
    expect(events.some((event) => event.event === "run.resumed")).toBe(false)
    expect(events.filter((event) => event.event === "run.completed")).toHaveLength(1)
    // The handover left the session open (its run went on): it takes further runs.
    const session = (await survivor.request("GET", `${base(survivor)}/sessions/${neighbour!.sid}`)).json
    expect(session.status).not.toBe("closed")
    await survivor.request("POST", `${base(survivor)}/sessions/${neighbour!.sid}/close`)
  }, 240_000)

  it("SIGTERM: an idle kept-alive session moves with its shard and keeps its cookies", async () => {
    // This test stops a node: a fresh API node keeps enough of them for the tests after it.
    await addApiNode()
    const via = apiNodes().find(alive)!
    const { sid, rid } = await createSession(via, { instructions: "Log in as ada", keep_alive: true })
    expect((await waitForStatus(via, sid, rid, terminal)).output).toEqual({ page: "logged-in" })
    // The runner hosting the session logged that it started the run.
    const owner = runners().find((node) => node.logs.some((line) => line.message === "run started" && line.annotations["run_id"] === rid))
    expect(owner, "the runner hosting the session").toBeDefined()
    const survivor = apiNodes().find((node) => node !== owner && alive(node))!

    const gone = exited(owner!)
    owner!.process.kill("SIGTERM")
    await gone
    expect(owner!.process.exitCode).toBe(0)
    // Still open after its runner left; its next run, on the new owner, is still logged in.
    expect((await survivor.request("GET", `${base(survivor)}/sessions/${sid}`)).json.status).not.toBe("closed")
    const followUp = await survivor.request("POST", `${base(survivor)}/sessions/${sid}/runs`, { body: { instructions: "Who am I logged in as?", keep_alive: false } })
    expect(followUp.status, followUp.text).toBe(201)
    const second = await waitForStatus(survivor, sid, followUp.json.id, terminal)
    expect(second.status, JSON.stringify(second.error)).toBe("done")
    expect(second.output).toEqual({ state: "Logged in as ada" })
    const startedOn = runners().find((node) => node.logs.some((line) => line.message === "run started" && line.annotations["run_id"] === followUp.json.id))
    expect(startedOn).not.toBe(owner)
    expect(startedOn!.logs.find((line) => line.message === "run started" && line.annotations["run_id"] === followUp.json.id)!.annotations["restored"]).toBe(true)
  }, 240_000)

  it("SIGKILL of the runner executing a run: a survivor resumes it from its last completed step", async () => {
    const via = apiNodes().find(alive)!
    const { sid, rid } = await createSession(via, { instructions: "resume ada", keep_alive: false })
    // Steps 1 and 2 (log in) are checkpointed; step 3 waits on the gate.
    await waitForRunStatus(via, runPath(via, sid, rid), ["running"], { where: (run) => run.step_count === 3, whereDescription: "step_count 3" })
    const owner = runners()[await runnerExecuting()]
    const survivor = apiNodes().find((node) => node !== owner && alive(node))!
    owner.process.kill("SIGKILL")
    await exited(owner)
    gate("resume").open()
    const run = await waitForStatus(survivor, sid, rid, terminal)
    expect(run.status, JSON.stringify(run.error)).toBe("done")
    // Resumed at step 3 in a context rebuilt from the checkpoint: still logged in, no step redone.
    expect(run.output).toEqual({ state: "logged-in", step: 3 })
    expect(run.step_count).toBe(3)
    const { events } = await readSse(`${survivor.url}${base(survivor)}/sessions/${sid}/runs/${rid}/events`, { authorization: `Bearer ${survivor.apiKey}` })
    const ids = events.filter((event) => event.id !== undefined).map((event) => event.id)
    expect(ids).toEqual(ids.map((_, i) => i + 1))
    const resumed = events.find((event) => event.event === "run.resumed")
    expect(resumed?.data.data).toMatchObject({ from_step: 2 })
    // Each of the three steps is charged once (the interrupted attempt of step 3 never was), then
    // the browser time up to the end (`final`, without a step).
    const charges = events.filter((event) => event.event === "run.cost_update").map((event) => event.data.data.step ?? "final")
    expect(charges).toEqual([1, 2, 3, "final"])
    // The cluster keeps taking work on the survivors.
    const next = await createSession(survivor, { instructions: "after failover", keep_alive: false })
    expect((await waitForStatus(survivor, next.sid, next.rid, terminal)).status).toBe("done")
  })

  it("a runner frozen past its lock expiry (SIGSTOP) loses the run to a survivor and, thawed, writes nothing more", async () => {
    // The earlier tests stopped two runners: a fresh API node makes sure one stays to watch from.
    const fresh = await startService({ env: clusterEnv, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
    extra.push(fresh)
    await eventually("shards on the fresh node", async () => ((await scrape(fresh.url)).get("effect_cluster_shards") ?? 0) > 0 ? true : undefined)
    const via = apiNodes().find(alive)!
    const { sid, rid } = await createSession(via, { instructions: "hold frozen", keep_alive: false })
    await waitForStatus(via, sid, rid, ["running"])
    const owner = runners()[await runnerExecuting()]
    const survivor = apiNodes().find((node) => node !== owner && alive(node))!
    const eventsUrl = `${survivor.url}${base(survivor)}/sessions/${sid}/runs/${rid}/events`
    const headers = { authorization: `Bearer ${survivor.apiKey}` }
    owner.process.kill("SIGSTOP")
    try {
      // Once the frozen runner's locks expire, a survivor takes its shards and resumes the run.
      await readSse(eventsUrl, headers, { timeoutMs: 90_000, stopAfter: (seen) => seen.some((event) => event.event === "run.resumed") })
      // The take-over is the survivor's to announce: its log names the run it resumed.
      const resumedOn = await eventually("a survivor's log line announcing it resumed the run", async () =>
        runners().find((node) => node !== owner && node.logs.some((line) => line.message === "run resumed" && line.annotations["run_id"] === rid)))
      expect(resumedOn).not.toBe(owner)
      gate("frozen").open()
      const run = await waitForStatus(survivor, sid, rid, terminal)
      expect(run.status).toBe("done")
      expect(run.output).toBe("released")
    } finally {
      owner.process.kill("SIGCONT")
    }
    // Thawed, the old execution receives its own model answer and acts on it, but every write it
    // attempts is refused: the run's log and charges stay as the survivor left them.
    const before = (await readSse(eventsUrl, headers)).events
    // The thawed runner says when its execution stopped: only then is "nothing more was written" a
    // finding rather than a race. It stops either at its first refused write (taken over) or,
    // when the runner notices first that its shards moved, with its entity.
    const stopped = ["run taken over by another runner; this execution stopped", "run execution stopped with its entity on this runner"]
    await eventually("the thawed runner to log that its execution stopped", async () =>
      owner.logs.some((line) => stopped.includes(line.message) && line.annotations["run_id"] === rid) ? true : undefined)
    const after = (await readSse(eventsUrl, headers)).events
    expect(after.map((event) => event.id)).toEqual(before.map((event) => event.id))
    const ids = after.map((event) => event.id)
    expect(ids).toEqual(ids.map((_, i) => i + 1))
    expect(after.filter((event) => event.event === "run.completed")).toHaveLength(1)
    expect(after.filter((event) => event.event === "run.cost_update").map((event) => event.data.data.step ?? "final")).toEqual([1, "final"])
    expect((await survivor.request("GET", `${base(survivor)}/sessions/${sid}/runs/${rid}`)).json.status).toBe("done")
  }, 240_000)
})
