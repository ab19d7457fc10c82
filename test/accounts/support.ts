/** Helpers of the account suites: `wa users create|reset-password` with the password on stdin, and sign-ins. */
import { spawn } from "node:child_process"
import * as path from "node:path"
import { expect } from "vitest"
import type { Browser, Cookie } from "playwright-core"
import type { ApiResponse, Service } from "../support/service.ts"
import { watchBrowser } from "../support/contract-browser.ts"
import { waEntry } from "../support/entry.ts"

const root = path.resolve(import.meta.dirname, "../..")

/** Runs `wa users create` against the service's data dir, writing `password` to its stdin. */
export const cliUsersCreate = (service: Service, args: ReadonlyArray<string>, password: string) => cliUsers(service, "create", args, password)

/** Runs `wa users <verb>` against the service's data dir, writing `password` to its stdin. */
export const cliUsers = (service: Service, verb: string, args: ReadonlyArray<string>, password: string) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL") env[name] = value
    }
    env["WA_DATA_DIR"] = service.dataDir
    env["WA_LOG_LEVEL"] = "Warn"
    const child = spawn(process.execPath, [waEntry, "users", verb, ...args], { cwd: root, env })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c) => (stdout += c))
    child.stderr.on("data", (c) => (stderr += c))
    child.on("exit", (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(password + "\n")
  })

export const createUser = async (service: Service, email: string, password: string, extra: ReadonlyArray<string> = []) => {
  const result = await cliUsersCreate(service, ["--email", email, "--password-stdin", ...extra], password)
  expect(result.code, result.stderr).toBe(0)
  return JSON.parse(result.stdout) as { user_id: string; email: string; tenant_id: string | null; role: string | null }
}

export const loginBearer = async (service: Service, email: string, password: string) => {
  const response = await service.request("POST", "/v1/auth/login", { key: null, body: { email, password, session: "bearer" } })
  expect(response.status, response.text).toBe(200)
  return response.json.session_token as string
}

export interface CookieSession {
  readonly cookie: string
  readonly csrf: string
  readonly setCookies: ReadonlyArray<string>
}

export const loginCookie = async (service: Service, email: string, password: string): Promise<CookieSession> => {
  const response = await service.request("POST", "/v1/auth/login", { key: null, body: { email, password } })
  expect(response.status, response.text).toBe(200)
  const setCookies = response.headers.getSetCookie()
  const session = setCookies.find((c) => c.startsWith("wa_session="))!
  return { cookie: session.split(";")[0]!, csrf: response.json.csrf_token, setCookies }
}

/** A request with a bearer credential (a session token or an API key), or none. */
export const as = (service: Service, token: string | null) =>
  (method: string, pathname: string, body?: unknown): Promise<ApiResponse> =>
    service.request(method, pathname, { key: token, ...(body === undefined ? {} : { body }) })

/** A request with a session cookie, with or without the CSRF header. */
export const withCookie = (service: Service, session: CookieSession, csrf: string | null = session.csrf) =>
  (method: string, pathname: string, body?: unknown): Promise<ApiResponse> =>
    service.request(method, pathname, {
      key: null,
      headers: { cookie: session.cookie, ...(csrf === null ? {} : { "x-csrf-token": csrf }) },
      ...(body === undefined ? {} : { body })
    })

export const expectEnvelope = (response: ApiResponse, status: number, code?: string) => {
  expect(response.status, response.text).toBe(status)
  expect(Object.keys(response.json).sort()).toEqual(["code", "detail", "extra"])
  if (code !== undefined) expect(response.json.code).toBe(code)
}

/**
 * Signs in at the OIDC fixture's provider (`corp`) as `login` in a fresh browser context and
 * returns where the service left the browser: the page's URL and text, and the service's cookies.
 */
export const ssoSignIn = async (browser: Browser, service: Service, login: string, returnTo = "/v1/auth/me"): Promise<{ url: string; text: string; cookies: Array<Cookie> }> => {
  const context = await browser.newContext()
  // What the browser gets from the service goes through the contract hook; a mismatch fails the caller.
  const watch = watchBrowser(service.url)
  watch.watch(context)
  try {
    // Only loopback: the provider's pages import a web font that must not be fetched.
    await context.route((url) => url.hostname !== "127.0.0.1", (route) => route.abort())
    const page = await context.newPage()
    await page.goto(`${service.url}/v1/auth/sso/corp/start?return_to=${encodeURIComponent(returnTo)}`, { waitUntil: "domcontentloaded" })
    await page.fill("input[name=login]", login)
    await page.fill("input[name=password]", "anything")
    await Promise.all([page.waitForURL(/\/interaction\//, { waitUntil: "domcontentloaded" }), page.click("button[type=submit]")])
    // Back at the service: the page it answered (the return_to page, or the callback's error).
    await Promise.all([page.waitForURL((url) => url.port === new URL(service.url).port, { waitUntil: "domcontentloaded" }), page.click("button[type=submit]")])
    const result = { url: page.url(), text: await page.locator("body").innerText(), cookies: await context.cookies(service.url) }
    const mismatches = await watch.takeMismatches()
    if (mismatches.length > 0) throw new Error(mismatches.join("\n"))
    return result
  } finally {
    await context.close()
  }
}
