/**
 * Shared pieces of the DeepResearch suites: the service environment (scripted model, fake search
 * engines, the research web on loopback), paths of the three conventions, polling and events.
 */
import { expect } from "vitest"
import { type FakeEngineName, type FakeEngines, type FakeHit, startFakeEngines } from "../fixtures/engines/fake-engines.ts"
import { type ScriptedModel, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type ResearchWeb, startResearchWeb } from "../fixtures/sites/research-web.ts"
import type { Service } from "../support/service.ts"
import { readSse, type SseEvent } from "../support/sse.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"

export { TERMINAL } from "../support/runs.ts"

/** Environment of a service with the scripted model and SearXNG (the only configured engine) faked. */
export const researchEnv = (model: ScriptedModel | undefined, engines: FakeEngines, extra: Record<string, string> = {}) => ({
  ...(model === undefined ? {} : { WA_MODEL_BASE_URL: model.baseUrl, WA_MODEL: "scripted" }),
  WA_SEARXNG_URL: engines.url,
  WA_ALLOW_PRIVATE_NETWORKS: "true",
  WA_WEBHOOK_RETRY_BASE_MS: "100",
  ...extra
})

/** The query an engine was asked, without the site operators the adapter appended. */
export const bareQuery = (query: string) =>
  query.split(/\s+/).filter((token) => token !== "" && !token.includes("site:") && token !== "OR").join(" ")

/** Fake engine results from a table query -> URLs (in rank order). */
export const resultsFrom = (table: () => Record<string, ReadonlyArray<string>>) => (_engine: FakeEngineName, query: string): Array<FakeHit> =>
  (table()[bareQuery(query)] ?? []).map((url, i) => ({ title: `Hit ${i + 1} for ${bareQuery(query)}`, url, snippet: `A result about ${bareQuery(query)}` }))

/** What every DeepResearch suite runs against: the research web, SearXNG faked, a scripted model. */
export interface ResearchFixtures {
  readonly web: ResearchWeb
  readonly engines: FakeEngines
  readonly model: ScriptedModel
  readonly close: () => Promise<void>
}

/** Starts the fixtures; the engines answer from `table()`, the model's script is set by each test. */
export const startResearchFixtures = async (table: () => Record<string, ReadonlyArray<string>>): Promise<ResearchFixtures> => {
  const web = await startResearchWeb()
  const engines = await startFakeEngines({ results: resultsFrom(table) })
  const model = await startScriptedModel(() => ({ text: "{}" }))
  return {
    web,
    engines,
    model,
    close: async () => {
      await model.close()
      await engines.close()
      await web.close()
    }
  }
}

export type Convention = "A" | "B" | "standalone"

export const basePath = (service: Service, convention: Convention = "A") =>
  convention === "A"
    ? `/v1/projects/${service.projectId}/deep_research/runs`
    : convention === "B"
    ? `/api/v1/projects/${service.projectId}/deep_research/runs`
    : `/v1/deep_research`

export const createRun = async (service: Service, body: Record<string, unknown>, convention: Convention = "A") => {
  const response = await service.request("POST", basePath(service, convention), { body })
  expect(response.status, response.text).toBe(202)
  return response.json
}

export const getRun = async (service: Service, rid: string, convention: Convention = "A") => {
  const response = await service.request("GET", `${basePath(service, convention)}/${rid}`)
  expect(response.status, response.text).toBe(200)
  return response.json
}

export const waitForTerminal = (service: Service, rid: string, convention: Convention = "A") =>
  waitForRunStatus(service, `${basePath(service, convention)}/${rid}`, TERMINAL, { timeoutMs: 120_000 })

export const waitForGate = (service: Service, rid: string, convention: Convention = "A") =>
  waitForRunStatus(service, `${basePath(service, convention)}/${rid}`, ["awaiting_input", ...TERMINAL], { timeoutMs: 120_000 })

/** Every event of a finished run (the stream ends after the terminal event). */
export const allEvents = async (service: Service, rid: string, convention: Convention = "A", headers: Record<string, string> = {}) => {
  const stream = await readSse(`${service.url}${basePath(service, convention)}/${rid}/events`, {
    authorization: `Bearer ${service.apiKey}`,
    ...headers
  }, { timeoutMs: 30_000 })
  return { ...stream, events: stream.events.filter((e) => e.event !== "stream.heartbeat") }
}

export const dataOf = (event: SseEvent) => event.data?.data

/** [n] citation markers of a Markdown text (not link texts like [title](url)). */
export const markersOf = (markdown: string): Array<number> =>
  [...markdown.matchAll(/\[(\d{1,4})\](?!\()/g)].map((m) => Number(m[1]))

/** Lines `n. [title](url)` of the `## Sources` part of a report. */
export const sourcesListOf = (markdown: string): Array<{ n: number; title: string; url: string }> => {
  const at = markdown.indexOf("## Sources")
  if (at < 0) return []
  return [...markdown.slice(at).matchAll(/^(\d+)\. \[(.*)\]\((\S+)\)\s*$/gm)].map((m) => ({ n: Number(m[1]), title: m[2]!, url: m[3]! }))
}

export const hostnameOf = (url: string) => new URL(url).hostname.replace(/^www\./, "")

/** A stable canonical key for loopback fixture URLs (no tracking query, no trailing slash). */
export const pageKey = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port}${parsed.pathname.replace(/\/+$/, "")}`
}

/** The body of each `## heading` of a report, by heading. */
export const sectionsOf = (markdown: string) => {
  const parts = new Map<string, string>()
  const matches = [...markdown.matchAll(/^## (.*)$/gm)]
  matches.forEach((m, i) => parts.set(m[1]!.trim(), markdown.slice(m.index! + m[0].length, matches[i + 1]?.index ?? markdown.length)))
  return parts
}
