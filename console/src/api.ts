/**
 * The console's client of the public API: every call carries the signed-in credentials as a
 * bearer token, writes carry a fresh Idempotency-Key, and a non-2xx answer becomes an ApiError
 * with the envelope's `code` (which the pages branch on) and `detail` (which they show).
 */
import type { Credentials } from "./auth.ts"

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {}
  ) {
    super(`${code}: ${detail}`)
  }
}

/** Dispatched on window when the API answers 401: the console signs out. */
export const unauthorizedEvent = "wa-console-unauthorized"

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly next_cursor: string | null
}

export class Api {
  constructor(readonly credentials: Credentials) {}

  get projectId(): string {
    return this.credentials.projectId
  }

  /** A path under the signed-in project, e.g. project("/do_anything/sessions"). */
  project(path: string): string {
    return `/v1/projects/${encodeURIComponent(this.credentials.projectId)}${path}`
  }

  authorization(): Record<string, string> {
    return { authorization: `Bearer ${this.credentials.token}` }
  }

  async request<A>(method: string, path: string, body?: unknown): Promise<A> {
    const headers: Record<string, string> = { ...this.authorization(), accept: "application/json" }
    if (body !== undefined) headers["content-type"] = "application/json"
    // One key per logical action: a retried click after a network error replays instead of doubling.
    if (method !== "GET") headers["idempotency-key"] = crypto.randomUUID()
    const response = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
    const text = await response.text()
    let json: unknown = undefined
    try {
      json = text === "" ? undefined : JSON.parse(text)
    } catch {
      // not JSON: handled below
    }
    if (!response.ok) {
      // The key stopped working (revoked past its grace window, or the database was reset).
      if (response.status === 401) window.dispatchEvent(new Event(unauthorizedEvent))
      const envelope = (json ?? {}) as { code?: string; detail?: string; extra?: Record<string, unknown> }
      throw new ApiError(response.status, envelope.code ?? `http_${response.status}`, envelope.detail ?? (text.slice(0, 200) || response.statusText), envelope.extra ?? {})
    }
    return json as A
  }

  /** A text resource (an artifact such as final.md). */
  async text(path: string): Promise<string> {
    const response = await fetch(path, { headers: this.authorization() })
    if (!response.ok) throw new ApiError(response.status, `http_${response.status}`, await response.text())
    return response.text()
  }

  get<A>(path: string) {
    return this.request<A>("GET", path)
  }
  post<A>(path: string, body: unknown = {}) {
    return this.request<A>("POST", path, body)
  }
}

/** What a failed call says to a person. */
export const describeError = (error: unknown): string =>
  error instanceof ApiError ? `${error.detail} (${error.code})` : error instanceof Error ? error.message : String(error)
