/**
 * The console's client of the public API: with an API key every call carries it as a bearer
 * token; with a console account the browser sends the HttpOnly session cookie by itself
 * (same origin) and writes add `X-CSRF-Token` from the `wa_csrf` cookie. Writes carry a fresh
 * Idempotency-Key, and a non-2xx answer becomes an ApiError with the envelope's `code` (which
 * the pages branch on) and `detail` (which they show).
 */
import { type Credentials, csrfToken } from "./auth.ts"

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

/** Calls whose 401 is about what the person typed (a password), not about the signed-in credentials. */
const ownCredentialChecks = new Set(["/v1/auth/login", "/v1/auth/password", "/v1/invitations/accept"])

export class Api {
  /** `null`: a console account signed in (cookie session) that has not picked a project yet. */
  constructor(readonly credentials: Credentials | null) {}

  get projectId(): string {
    if (this.credentials === null) throw new Error("no project picked")
    return this.credentials.projectId
  }

  /** A path under the signed-in project, e.g. project("/do_anything/sessions"). */
  project(path: string): string {
    return `/v1/projects/${encodeURIComponent(this.projectId)}${path}`
  }

  /** The user's session (cookie) rather than an API key. */
  get isAccount(): boolean {
    return this.credentials === null || this.credentials.kind === "session"
  }

  /** The role of the signed-in user in the project's tenant; an API key is treated as the key's own scope by the server. */
  get role(): "admin" | "member" | undefined {
    return this.credentials?.kind === "session" ? this.credentials.role : undefined
  }

  authorization(): Record<string, string> {
    return this.credentials?.kind === "api_key" ? { authorization: `Bearer ${this.credentials.token}` } : {}
  }

  /**
   * `A` is the type of the operation's success body, always one of console/src/wire.ts (derived
   * from the contract's schemas). The body is not decoded: see the cast at the end.
   */
  async request<A>(method: string, path: string, body?: unknown): Promise<A> {
    const headers: Record<string, string> = { ...this.authorization(), accept: "application/json" }
    if (body !== undefined) headers["content-type"] = "application/json"
    if (method !== "GET" && this.isAccount) {
      const csrf = csrfToken()
      if (csrf !== undefined) headers["x-csrf-token"] = csrf
    }
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
      // The key or session stopped working (revoked past its grace window, signed out elsewhere, expired).
      // (A wrong password at sign-in, at a password change or an invitation is a 401 too; the page says it.)
      if (response.status === 401 && !ownCredentialChecks.has(path)) window.dispatchEvent(new Event(unauthorizedEvent))
      const envelope = (json ?? {}) as { code?: string; detail?: string; extra?: Record<string, unknown> }
      throw new ApiError(response.status, envelope.code ?? `http_${response.status}`, envelope.detail ?? (text.slice(0, 200) || response.statusText), envelope.extra ?? {})
    }
    // Not decoded, on purpose. `A` is the encoded side of the very schema the server encodes this
    // body with and the OpenAPI document is generated from (console/src/wire.ts), and the console
    // suites hold every response the console's browser gets to that document (the contract hook,
    // test/support/contract-browser.ts). Decoding here as the SDK does would put effect's Schema
    // and the schemas in the bundle (measured: 88.7 KB gzipped becomes 141 KB, +59 %) to catch a
    // mismatch the tests already catch, and would turn a field the page does not even read into a
    // page that fails to load. test/console/bundle.test.ts keeps the schemas out of the bundle.
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
  patch<A>(path: string, body: unknown) {
    return this.request<A>("PATCH", path, body)
  }
  delete<A>(path: string) {
    return this.request<A>("DELETE", path)
  }
}

/** What a failed call says to a person. */
export const describeError = (error: unknown): string =>
  error instanceof ApiError ? `${error.detail} (${error.code})` : error instanceof Error ? error.message : String(error)
