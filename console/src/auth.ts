/**
 * Who the console acts as, kept in sessionStorage (it lives as long as the tab, never on disk):
 * - `api_key`: a key pasted once with its project id; every request carries it as a bearer token.
 * - `session`: a console account signed in with email and password (or SSO). The session itself
 *   is the HttpOnly `wa_session` cookie the API set, which script never sees; what is kept here is
 *   only the project the person picked (and its tenant and their role there, for the navigation).
 *   Writes carry `X-CSRF-Token` read from the `wa_csrf` cookie.
 * Everything else in the console reads `projectId` and the Api's headers, so pages do not care
 * which kind it is.
 */
export interface ApiKeyCredentials {
  readonly kind: "api_key"
  /** The bearer token every request carries. */
  readonly token: string
  readonly projectId: string
}

export interface SessionCredentials {
  readonly kind: "session"
  readonly projectId: string
  readonly tenantId: string
  readonly tenantName: string
  readonly role: "admin" | "member"
  readonly userId: string
  readonly email: string
}

export type Credentials = ApiKeyCredentials | SessionCredentials

const storageKey = "wa.console.credentials"

const isString = (value: unknown): value is string => typeof value === "string"

export const loadCredentials = (): Credentials | undefined => {
  try {
    const raw = sessionStorage.getItem(storageKey)
    if (raw === null) return undefined
    const parsed = JSON.parse(raw) as Record<string, unknown>
    if (parsed["kind"] === "api_key" && isString(parsed["token"]) && isString(parsed["projectId"])) {
      return { kind: "api_key", token: parsed["token"], projectId: parsed["projectId"] }
    }
    if (
      parsed["kind"] === "session" && isString(parsed["projectId"]) && isString(parsed["tenantId"]) && isString(parsed["tenantName"]) &&
      (parsed["role"] === "admin" || parsed["role"] === "member") && isString(parsed["userId"]) && isString(parsed["email"])
    ) {
      return {
        kind: "session", projectId: parsed["projectId"], tenantId: parsed["tenantId"], tenantName: parsed["tenantName"],
        role: parsed["role"], userId: parsed["userId"], email: parsed["email"]
      }
    }
    return undefined
  } catch {
    return undefined
  }
}

export const saveCredentials = (credentials: Credentials) => sessionStorage.setItem(storageKey, JSON.stringify(credentials))

export const clearCredentials = () => sessionStorage.removeItem(storageKey)

/** The CSRF token of the cookie session (the `wa_csrf` cookie is readable by script by design). */
export const csrfToken = (): string | undefined => {
  for (const part of document.cookie.split(";")) {
    const [name, ...value] = part.trim().split("=")
    if (name === "wa_csrf") return decodeURIComponent(value.join("="))
  }
  return undefined
}

/** The key's shape (wa_ + 36 base62 characters); the server checks the rest. */
export const looksLikeApiKey = (text: string) => /^wa_[0-9A-Za-z]{28,}$/.test(text)

/**
 * What a person pasted: a key, or the JSON that `wa keys create` and the first start print
 * (`{project_id, secret_token}`), from which both fields are taken.
 */
export const parsePasted = (text: string): { token?: string; projectId?: string } => {
  const trimmed = text.trim()
  if (trimmed.startsWith("{")) {
    try {
      const parsed = JSON.parse(trimmed) as { project_id?: unknown; secret_token?: unknown }
      return {
        ...(typeof parsed.secret_token === "string" ? { token: parsed.secret_token } : {}),
        ...(typeof parsed.project_id === "string" ? { projectId: parsed.project_id } : {})
      }
    } catch {
      return {}
    }
  }
  return { token: trimmed }
}
