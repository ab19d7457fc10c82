/**
 * The one error the SDK's promise API throws for a refused request: the spec's envelope
 * `{code, detail, extra}` with the HTTP status. Branch on `code`, never on `detail`.
 * Status 0 means no HTTP answer at all (network error after the retries).
 */
export class WebAgentError extends Error {
  override readonly name = "WebAgentError"
  readonly status: number
  readonly code: string
  readonly detail: string
  readonly extra: Record<string, unknown>
  constructor(status: number, code: string, detail: string, extra: Record<string, unknown> = {}) {
    super(`${status === 0 ? "network error" : status} ${code}: ${detail}`)
    this.status = status
    this.code = code
    this.detail = detail
    this.extra = extra
  }

  /** Whether the same call may succeed later (rate limit, server error, network). */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500
  }
}

/** Reads an error response's envelope into a WebAgentError. */
export const errorFromResponse = async (response: Response): Promise<WebAgentError> => {
  const text = await response.text().catch(() => "")
  try {
    const body = JSON.parse(text) as { code?: unknown; detail?: unknown; extra?: unknown }
    if (typeof body.code === "string") {
      return new WebAgentError(
        response.status,
        body.code,
        typeof body.detail === "string" ? body.detail : "",
        typeof body.extra === "object" && body.extra !== null ? body.extra as Record<string, unknown> : {}
      )
    }
  } catch {
    // not the envelope: fall through
  }
  return new WebAgentError(response.status, response.status >= 500 ? "internal_error" : "http_error", text.slice(0, 500))
}
