/**
 * The SDK's transport: a `fetch` that adds the bearer token, gives every write one
 * `Idempotency-Key` (kept across its retries, so a retried write is never done twice), and retries
 * 429, 5xx and network errors with the spec's backoff (exponential from 0.5 s, capped at 8 s, plus
 * up to 0.25 s of jitter, 4 attempts), waiting what `Retry-After` says when the server sends it.
 * Plain `fetch` underneath: it runs in Node and in browsers.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included (default 4). */
  readonly attempts: number
  /** First delay in ms, doubled each retry (default 500). */
  readonly baseMs: number
  /** Largest delay in ms (default 8000). */
  readonly capMs: number
  /** Random extra delay in ms, at most (default 250). */
  readonly jitterMs: number
  /** The longest Retry-After the client waits, in ms (default 60000); longer fails at once. */
  readonly maxRetryAfterMs: number
}

export const defaultRetryPolicy: RetryPolicy = { attempts: 4, baseMs: 500, capMs: 8000, jitterMs: 250, maxRetryAfterMs: 60_000 }

export interface TransportOptions {
  readonly token: string
  readonly retry?: Partial<RetryPolicy> | undefined
  /** The fetch to call (default: globalThis.fetch). */
  readonly fetch?: typeof globalThis.fetch | undefined
  /** Called before each retry (for logs and tests). */
  readonly onRetry?: ((info: RetryInfo) => void) | undefined
}

export interface RetryInfo {
  readonly attempt: number
  readonly delayMs: number
  readonly status: number | undefined
  readonly error: unknown
  readonly url: string
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"])
const RETRY_STATUSES = new Set([429, 500, 502, 503, 504])

/** The delay before retry number `retry` (1-based): exponential, capped, with jitter. */
export const backoffDelay = (retry: number, policy: RetryPolicy, random: () => number = Math.random): number =>
  Math.min(policy.capMs, policy.baseMs * 2 ** (retry - 1)) + Math.floor(random() * policy.jitterMs)

/** Retry-After in ms (seconds or an HTTP date), or undefined when absent or unreadable. */
export const retryAfterMs = (header: string | null, now: number = Date.now()): number | undefined => {
  if (header === null || header.trim() === "") return undefined
  if (/^\s*[-+]?[\d.]+\s*$/.test(header)) {
    const seconds = Number(header)
    return Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds * 1000) : undefined
  }
  // An HTTP date names its weekday and month; anything else is not one.
  if (!/[a-z]{3}/i.test(header)) return undefined
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const sleep = (ms: number, signal: AbortSignal | null | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener("abort", onAbort, { once: true })
  })

const newIdempotencyKey = () => globalThis.crypto.randomUUID()

/** A body that can be sent again (not a one-shot stream). */
const replayable = (body: unknown) => body === undefined || body === null || !(body instanceof ReadableStream)

/**
 * A fetch with the token, idempotency keys and retries. A caller-provided `Idempotency-Key`
 * header is kept as is.
 */
export const makeFetch = (options: TransportOptions): typeof globalThis.fetch => {
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry }
  const base = options.fetch ?? globalThis.fetch.bind(globalThis)
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : undefined
    const url = request?.url ?? String(input)
    const method = (init?.method ?? request?.method ?? "GET").toUpperCase()
    const headers = new Headers(init?.headers ?? request?.headers)
    if (!headers.has("authorization")) headers.set("authorization", `Bearer ${options.token}`)
    if (WRITE_METHODS.has(method) && !headers.has("idempotency-key")) headers.set("idempotency-key", newIdempotencyKey())
    const body = init?.body ?? (request !== undefined && request.body !== null ? await request.arrayBuffer() : undefined)
    const signal = init?.signal ?? request?.signal
    const canRetry = replayable(body)
    for (let attempt = 1;; attempt++) {
      let response: Response | undefined
      let error: unknown
      try {
        response = await base(url, { ...init, method, headers, ...(body !== undefined ? { body } : {}), ...(signal ? { signal } : {}) })
      } catch (cause) {
        if (signal?.aborted) throw cause
        error = cause
      }
      const retryable = response === undefined || RETRY_STATUSES.has(response.status)
      if (!retryable || !canRetry || attempt >= policy.attempts) {
        if (response !== undefined) return response
        throw error
      }
      const after = response === undefined ? undefined : retryAfterMs(response.headers.get("retry-after"))
      if (after !== undefined && after > policy.maxRetryAfterMs) return response!
      const delayMs = after ?? backoffDelay(attempt, policy)
      // Free the connection of the answer we do not read.
      await response?.body?.cancel().catch(() => {})
      options.onRetry?.({ attempt, delayMs, status: response?.status, error, url })
      await sleep(delayMs, signal)
    }
  }) as typeof globalThis.fetch
}
