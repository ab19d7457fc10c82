/**
 * What the safety suites share: the project's safety policy and DoAnything runs through the API of
 * the file's service (given as a getter: it is started in the file's beforeAll), and a loopback
 * listener for fixture sites.
 */
import type { Server } from "node:http"
import { expect } from "vitest"
import { listenOnLoopback } from "../support/listen.ts"
import type { Service } from "../support/service.ts"
import { readSse } from "../support/sse.ts"

export const terminal = ["done", "failed", "canceled"]

/** Listens on a free loopback port; the port. */
export const listen = async (server: Server) => (await listenOnLoopback(server)).port

export const safetyClient = (service: () => Service) => {
  const safetyPath = () => `/v1/projects/${service().projectId}/safety`
  const sessionsPath = () => `/v1/projects/${service().projectId}/do_anything/sessions`
  /** PUT the project's policy (200 expected); the policy the server answers with. */
  const putPolicy = async (body: Record<string, unknown>) => {
    const response = await service().request("PUT", safetyPath(), { body })
    expect(response.status, response.text).toBe(200)
    return response.json
  }
  /** Creates a session with one run of `instructions`; its ids and the run's path. */
  const startRun = async (instructions: string) => {
    const created = await service().request("POST", sessionsPath(), { body: { keep_alive: false, instructions } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    return { sid, rid, runPath: `${sessionsPath()}/${sid}/runs/${rid}` }
  }
  /** The run's events, to its end or until one of type `stopAt`. */
  const eventsOf = async (runPath: string, stopAt?: string) =>
    (await readSse(`${service().url}${runPath}/events`, { authorization: `Bearer ${service().apiKey}` }, {
      ...(stopAt !== undefined ? { stopAfter: (seen) => seen.some((e) => e.event === stopAt) } : {})
    })).events
  return { safetyPath, sessionsPath, putPolicy, startRun, eventsOf }
}
