/**
 * Waiting on the service from the outside: `eventually` polls any probe, `waitForRunStatus` polls
 * a run's GET endpoint until it reaches one of the awaited statuses. Every suite waits through
 * these two, so a timeout always says what was awaited and what was last seen.
 */
import type { ApiResponse, RequestOptions } from "./service.ts"

/** Statuses a run ends in (Convention B reports `succeeded` where A reports `done`). */
export const TERMINAL: ReadonlyArray<string> = ["done", "succeeded", "failed", "canceled"]

export interface PollOptions {
  /** Give up after this long (default 60 s). */
  readonly timeoutMs?: number
  /** Pause between probes (default 50 ms). */
  readonly everyMs?: number
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Polls `probe` until it returns something other than undefined, and returns that. A probe that
 * throws counts as "not yet" (a node may be restarting); on timeout the error names `what` and
 * the last error the probe threw, if any.
 */
export const eventually = async <A>(what: string, probe: () => Promise<A | undefined> | A | undefined, options: PollOptions = {}): Promise<A> => {
  const timeoutMs = options.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value !== undefined) return value
      lastError = undefined
    } catch (error) {
      lastError = error
    }
    if (Date.now() >= deadline) {
      const why = lastError === undefined ? "" : `; the last probe threw: ${lastError instanceof Error ? lastError.message : String(lastError)}`
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`)
    }
    await pause(options.everyMs ?? 50)
  }
}

/** Anything that answers API requests like the test service (a `wa serve` node). */
export interface RunReader {
  readonly request: (method: string, pathname: string, options?: RequestOptions) => Promise<ApiResponse>
}

export interface WaitForRunOptions extends PollOptions {
  /** A further condition the run must meet besides its status (e.g. a step count). */
  readonly where?: (run: any) => boolean
  /** Says what `where` checks, for the failure message. */
  readonly whereDescription?: string
}

const seen = (response: ApiResponse | undefined, error: unknown): string => {
  if (error !== undefined) return `the last GET threw ${error instanceof Error ? error.message : String(error)}`
  if (response === undefined) return "no answer yet"
  if (response.status !== 200) return `the last GET answered ${response.status} ${response.text.slice(0, 300)}`
  const run = response.json ?? {}
  const detail = { status: run.status, step_count: run.step_count, phase: run.phase, error: run.error }
  return `last seen status ${JSON.stringify(run.status)} (${JSON.stringify(detail)})`
}

/**
 * Polls GET `path` (a run's URL under the service) until the run's status is one of `statuses`
 * (and `options.where` holds), and returns the run. A 4xx other than 429 fails at once (the path
 * or key is wrong, waiting will not help); on timeout the error names the run, the statuses
 * awaited and the last status seen.
 */
export const waitForRunStatus = async (
  service: RunReader,
  path: string,
  statuses: ReadonlyArray<string>,
  options: WaitForRunOptions = {}
): Promise<any> => {
  const timeoutMs = options.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  const awaited = `${statuses.join(" or ")}${options.whereDescription !== undefined ? ` with ${options.whereDescription}` : options.where !== undefined ? " (and its condition)" : ""}`
  let last: ApiResponse | undefined
  let lastError: unknown
  for (;;) {
    try {
      last = await service.request("GET", path)
      lastError = undefined
    } catch (error) {
      lastError = error
    }
    if (last !== undefined && lastError === undefined) {
      if (last.status === 200 && statuses.includes(last.json?.status) && (options.where?.(last.json) ?? true)) return last.json
      if (last.status >= 400 && last.status < 500 && last.status !== 429) {
        throw new Error(`run ${path}: waiting for ${awaited}, but ${seen(last, undefined)}`)
      }
    }
    if (Date.now() >= deadline) throw new Error(`run ${path} did not reach ${awaited} within ${timeoutMs} ms; ${seen(last, lastError)}`)
    await pause(options.everyMs ?? 50)
  }
}
