/** The signed-in console account (GET /v1/auth/me) and the calls around signing in and out. */
import { Api, ApiError } from "./api.ts"
import { csrfToken } from "./auth.ts"

export interface Membership {
  readonly tenant_id: string
  readonly name: string
  readonly role: "admin" | "member"
  readonly status: "active" | "disabled"
  readonly created_at: string
}

export interface Me {
  readonly user_id: string
  readonly email: string
  readonly display_name: string | null
  /** Whether the address is proven (a mailed link, SSO, or an account the operator made). */
  readonly email_verified: boolean
  readonly session: "cookie" | "bearer"
  readonly expires_at: string
  readonly tenants: ReadonlyArray<Membership>
}

export interface TenantProject {
  readonly id: string
  readonly name: string
  readonly tenant_id: string
  readonly created_at: string
}

/** The cookie session's account, or null when there is none (no cookie, or the session ended). */
export const loadMe = async (): Promise<Me | null> => {
  // The wa_csrf cookie comes with the HttpOnly session cookie: without it there is no session to ask about.
  if (csrfToken() === undefined) return null
  try {
    return await new Api(null).get<Me>("/v1/auth/me")
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return null
    throw error
  }
}

/** Email and password sign-in; the API sets the session cookies. */
export const signIn = (email: string, password: string) =>
  new Api(null).post<{ user_id: string; csrf_token: string | null }>("/v1/auth/login", { email, password, session: "cookie" })

/** Ends the cookie session (the API clears the cookies); a session already gone is fine. */
export const signOutAccount = async () => {
  try {
    await new Api(null).post("/v1/auth/logout")
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) throw error
  }
}
