/**
 * Who the console acts as. Today: an API key pasted once (with its project id), kept in
 * sessionStorage, so it lives as long as the tab and is never written to disk or sent anywhere but
 * this service's API. Console accounts (email and password, SSO) will add a second kind here: a
 * sign-in that yields a bearer token and the projects it may use; everything else in the console
 * only reads `token` and `projectId`, so nothing else changes.
 */
export interface Credentials {
  readonly kind: "api_key"
  /** The bearer token every request carries. */
  readonly token: string
  readonly projectId: string
}

const storageKey = "wa.console.credentials"

export const loadCredentials = (): Credentials | undefined => {
  try {
    const raw = sessionStorage.getItem(storageKey)
    if (raw === null) return undefined
    const parsed = JSON.parse(raw) as Partial<Credentials>
    return parsed.kind === "api_key" && typeof parsed.token === "string" && typeof parsed.projectId === "string"
      ? { kind: "api_key", token: parsed.token, projectId: parsed.projectId }
      : undefined
  } catch {
    return undefined
  }
}

export const saveCredentials = (credentials: Credentials) => sessionStorage.setItem(storageKey, JSON.stringify(credentials))

export const clearCredentials = () => sessionStorage.removeItem(storageKey)

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
