/**
 * Idempotency across a crash, for the keyed creates not in idempotency-crash.test.ts: tenant
 * invitations and tenant projects (by a signed-in user), profiles, profile logins (a profile and the login session
 * holding it), bug reports, follow-up runs added to a session (POST .../sessions/{sid}/runs) and
 * schedule triggers (a firing). A burst of each is cut by SIGKILL at a random moment, several
 * times; after each restart every request is retried with its Idempotency-Key and body once the
 * claim's lease is over. Every key ends with exactly one resource, and the retry of a request
 * that was answered returns that first answer.
 */
import { randomUUID } from "node:crypto"
import { afterEach, describe, expect, it, vi } from "vitest"
import { createUser, loginBearer } from "../accounts/support.ts"
import { type ApiResponse, embeddedDatabaseClient, type Service, startService, stopAndClean } from "../support/service.ts"

vi.setConfig({ testTimeout: 600_000 })

const LEASE_SECONDS = 1
const ROUNDS = 3
const WORKERS_PER_KIND = 2

const env = {
  WA_RATE_LIMIT_REQUESTS: "1000000",
  WA_IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS),
  WA_MAX_CONCURRENT_SESSIONS: "100000",
  WA_MAX_PENDING_INVITATIONS: "100000",
  // Session runs end at once (no browser to lease): the burst measures the creates, not the agent.
  CHROMIUM_PATH: "/nonexistent/idempotency-crash-no-browser",
  WA_DRAIN_SECONDS: "1"
}

type Kind = "invitation" | "tenant_project" | "profile" | "profile_login" | "bug_report" | "followup" | "trigger"
const kinds: ReadonlyArray<Kind> = ["invitation", "tenant_project", "profile", "profile_login", "bug_report", "followup", "trigger"]
const created = (kind: Kind) => kind === "followup" ? [201, 202] : kind === "trigger" ? [200, 201, 202] : [201]

interface Keyed {
  readonly kind: Kind
  readonly key: string
  readonly marker: string
  readonly path: string
  readonly body: Record<string, unknown>
  /** The first answer, when one came back before the kill. */
  first?: ApiResponse
}

/** What each kind needs that is made before the bursts: the user's tenant and token, sessions. */
interface Setup {
  readonly tenantId: string
  readonly userToken: string
  /** One session per follow-up worker: a worker adds its runs to its own session, one after another. */
  followupSessions: ReadonlyArray<string>
  /** One event schedule per trigger worker. */
  readonly schedules: ReadonlyArray<string>
}

const request = (service: Service, setup: Setup, keyed: Keyed) =>
  service.request("POST", keyed.path, {
    body: keyed.body,
    headers: { "idempotency-key": keyed.key },
    ...(keyed.kind === "invitation" || keyed.kind === "tenant_project" ? { key: setup.userToken } : {})
  })

const make = (kind: Kind, service: Service, setup: Setup, worker: number): Keyed => {
  const marker = `crash-${randomUUID()}`
  const base = `/v1/projects/${service.projectId}`
  const [path, body]: [string, Record<string, unknown>] = kind === "invitation"
    ? [`/v1/tenants/${setup.tenantId}/invitations`, { email: `${marker}@example.com` }]
    : kind === "tenant_project"
    ? [`/v1/tenants/${setup.tenantId}/projects`, { name: marker }]
    : kind === "profile"
    ? [`${base}/profiles`, { name: marker }]
    : kind === "profile_login"
    ? [`${base}/profiles/login`, { name: marker, start_url: "http://127.0.0.1:9/login", site_id: "example" }]
    : kind === "bug_report"
    ? [`${base}/bug_reports`, { message: marker, page_path: "/console" }]
    : kind === "followup"
    ? [`${base}/do_anything/sessions/${setup.followupSessions[worker]}/runs`, { instructions: marker, keep_alive: true }]
    : [`${base}/schedules/${setup.schedules[worker]}/trigger`, { payload: { marker } }]
  return { kind, key: randomUUID(), marker, path, body }
}

/** The id of the resource an answer names. */
const idOf = (kind: Kind, json: any): string | undefined =>
  kind === "invitation" ? json?.invitation_id
    : kind === "profile_login" ? json?.profile_id
    : kind === "trigger" ? (json?.schedule_id === undefined ? undefined : `${json.schedule_id}@${json.slot_at}`)
    : json?.id

/** What a replay shows of a first answer: its secret fields as null. */
const replayed = (kind: Kind, json: any) => kind === "invitation" ? { ...json, invite_url: null } : json

const running: Array<Service> = []
afterEach(async () => {
  const last = running.at(-1)
  running.length = 0
  await stopAndClean(last)
})

const terminal = new Set(["succeeded", "failed", "canceled", "cancelled", "timed_out", "expired"])

/** Until the session's latest run has ended (a session runs one run at a time). */
const settled = async (service: Service, sessionId: string) => {
  for (const started = Date.now(); ;) {
    if (Date.now() - started > 120_000) throw new Error(`session ${sessionId}: its latest run did not end within 120 s`)
    const response = await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions/${sessionId}`)
    if (response.status !== 200) throw new Error(`session ${sessionId}: ${response.status} ${response.text}`)
    const runs: Array<{ status: string }> = response.json.runs ?? []
    if (runs.every((run) => terminal.has(run.status))) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const burstUntilKilled = async (service: Service, setup: Setup, killAfterMs: number): Promise<Array<Keyed>> => {
  const sent: Array<Keyed> = []
  let killed = false
  let firstAnswer: (() => void) | undefined
  const answered = new Promise<void>((resolve) => (firstAnswer = resolve))
  const worker = async (kind: Kind, index: number) => {
    while (!killed) {
      try {
        if (kind === "followup") await settled(service, setup.followupSessions[index]!)
      } catch {
        return
      }
      if (killed) return
      const keyed = make(kind, service, setup, index)
      sent.push(keyed)
      try {
        keyed.first = await request(service, setup, keyed)
      } catch {
        return // the service is gone: this request's outcome is unknown
      }
      if (!created(kind).includes(keyed.first.status)) throw new Error(`unexpected ${keyed.first.status} for ${kind}: ${keyed.first.text}`)
      firstAnswer?.()
    }
  }
  const workers = kinds.flatMap((kind) => Array.from({ length: WORKERS_PER_KIND }, (_, i) => worker(kind, i)))
  // A service that answers nothing fails the test here rather than hanging it.
  await Promise.race([answered, new Promise((_, reject) => setTimeout(() => reject(new Error("no create of the burst was answered within 60 s")), 60_000))])
  await new Promise((resolve) => setTimeout(resolve, killAfterMs))
  killed = true
  service.process.kill("SIGKILL")
  await Promise.all(workers)
  return sent
}

/** Retries a request with its key until the claim of the killed attempt has expired (409 before). */
const retry = async (service: Service, setup: Setup, keyed: Keyed): Promise<ApiResponse> => {
  for (let attempt = 0; ; attempt++) {
    const response = await request(service, setup, keyed)
    // Only the 409 of a key in flight is waited out; another 409 (a closed session) is the answer.
    if (response.status !== 409 || !String(response.json?.detail).includes("Idempotency-Key") || attempt >= 100) return response
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe("Idempotency-Key across SIGKILL: invitations, tenant projects, profiles, logins, bug reports, follow-up runs, triggers", () => {
  it("every key of a burst cut by SIGKILL ends with exactly one resource, and a retry returns the first answer", async () => {
    let service = await startService({ env })
    running.push(service)
    const { projectId, apiKey, dataDir } = service
    const email = `owner-${randomUUID()}@example.com`
    await createUser(service, email, "a long enough password 1")
    const userToken = await loginBearer(service, email, "a long enough password 1")
    const tenant = await service.request("POST", "/v1/tenants", { key: userToken, body: { name: "crash" } })
    expect(tenant.status, tenant.text).toBe(201)
    const tenantId = tenant.json.tenant_id as string
    const session = async (extra: Record<string, unknown>) => {
      const response = await service.request("POST", `/v1/projects/${projectId}/do_anything/sessions`, {
        body: { instructions: "setup", keep_alive: true, ...extra }
      })
      expect(response.status, response.text).toBe(201)
      return response.json.id as string
    }
    const schedules = await Promise.all(Array.from({ length: WORKERS_PER_KIND }, async () => {
      const sessionId = await session({ schedule: { kind: "event" } })
      const listed = await service.request("GET", `/v1/projects/${projectId}/schedules?session_id=${sessionId}`)
      expect(listed.status, listed.text).toBe(200)
      return listed.json.items[0].id as string
    }))
    const setup: Setup = { tenantId, userToken, followupSessions: [], schedules }

    const all: Array<Keyed> = []
    const closedFollowups = new Set<string>()
    let unanswered = 0
    for (let round = 0; round < ROUNDS; round++) {
      // A restart closes idle sessions (their browsers are gone): each round adds runs to new ones.
      setup.followupSessions = await Promise.all(Array.from({ length: WORKERS_PER_KIND }, () => session({})))
      const sent = await burstUntilKilled(service, setup, 300 + Math.floor(Math.random() * 1200))
      const killedAt = Date.now()
      await service.kill()
      all.push(...sent)
      service = await startService({ env, dataDir, credentials: { projectId, apiKey } })
      running.push(service)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + LEASE_SECONDS * 1000 + 500 - Date.now())))
      for (const keyed of sent) {
        // A follow-up is added once the run before it on its session has ended (resumed after the restart).
        if (keyed.kind === "followup" && keyed.first === undefined) await settled(service, keyed.path.split("/").at(-2)!)
        const again = await retry(service, setup, keyed)
        if (keyed.kind === "followup" && keyed.first === undefined && again.status === 409 && again.json.extra?.session_id !== undefined) {
          // The first attempt never committed, and the restart closed its session (idle sessions
          // lose their browser): nothing may be made for that key, which the count below checks.
          keyed.first = again
          closedFollowups.add(keyed.marker)
          continue
        }
        expect(created(keyed.kind), `${keyed.kind} retry: ${again.status} ${again.text}`).toContain(again.status)
        if (keyed.first === undefined) {
          unanswered++
          keyed.first = again
          if (keyed.kind === "invitation" && again.headers.get("idempotent-replayed") === null) {
            // No answer ever left the service: the invitation recovered after the kill comes with a token that works.
            expect(again.json.invite_url).toEqual(expect.stringContaining("token="))
          }
        } else {
          expect(again.headers.get("idempotent-replayed"), `${keyed.kind} retry of an answered request`).toBe("true")
          expect(again.json).toEqual(replayed(keyed.kind, keyed.first.json))
        }
      }
    }
    expect(unanswered).toBeGreaterThan(0)

    const db = await embeddedDatabaseClient(dataDir)
    try {
      const queries: Record<Kind, string> = {
        invitation: "SELECT split_part(email, '@', 1) AS marker, count(*)::int AS n FROM invitations WHERE split_part(email, '@', 1) = ANY($1) GROUP BY 1",
        tenant_project: "SELECT name AS marker, count(*)::int AS n FROM projects WHERE name = ANY($1) GROUP BY name",
        profile: "SELECT name AS marker, count(*)::int AS n FROM profiles WHERE name = ANY($1) GROUP BY name",
        // A login's profile, and the one login session holding it.
        profile_login:
          "SELECT p.name AS marker, count(DISTINCT p.id)::int * 1000 + count(s.id)::int AS n FROM profiles p LEFT JOIN sessions s ON s.profile_id = p.id WHERE p.name = ANY($1) GROUP BY p.name",
        bug_report: "SELECT message AS marker, count(*)::int AS n FROM bug_reports WHERE message = ANY($1) GROUP BY message",
        followup: "SELECT instructions AS marker, count(*)::int AS n FROM runs WHERE instructions = ANY($1) GROUP BY instructions",
        trigger: "SELECT payload->>'marker' AS marker, count(*)::int AS n FROM session_schedule_firings WHERE payload->>'marker' = ANY($1) GROUP BY 1"
      }
      const expected = (kind: Kind) => kind === "profile_login" ? 1001 : 1
      for (const kind of kinds) {
        const ofKind = all.filter((keyed) => keyed.kind === kind)
        expect(ofKind.length, `${kind}: requests sent`).toBeGreaterThan(0)
        const rows = (await db.query(queries[kind], [ofKind.map((keyed) => keyed.marker)])).rows as Array<{ marker: string; n: number }>
        const counts = new Map(rows.map((row) => [row.marker, row.n]))
        const want = (keyed: Keyed) => closedFollowups.has(keyed.marker) ? undefined : expected(kind)
        const wrong = ofKind.filter((keyed) => counts.get(keyed.marker) !== want(keyed)).map((keyed) => `${keyed.key}: ${counts.get(keyed.marker) ?? 0}`)
        expect(wrong, `${kind}: keys without exactly one resource`).toEqual([])
        for (const keyed of ofKind) {
          if (!closedFollowups.has(keyed.marker)) expect(idOf(kind, keyed.first?.json), `${kind}: the answer names its resource`).toEqual(expect.any(String))
        }
      }
    } finally {
      await db.end()
    }
  })
})
