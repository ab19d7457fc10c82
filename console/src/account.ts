/** The signed-in console account (GET /v1/auth/me) and the calls around signing in and out. */
import { Api, ApiError } from "./api.ts"
import { csrfToken } from "./auth.ts"
import type { LoginBody, Me, SignedIn, SignedOutAnswer } from "./wire.ts"

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
  new Api(null).post<SignedIn>("/v1/auth/login", { email, password, session: "cookie" } satisfies LoginBody)

/** Ends the cookie session (the API clears the cookies); a session already gone is fine. */
export const signOutAccount = async () => {
  try {
    await new Api(null).post<SignedOutAnswer>("/v1/auth/logout")
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) throw error
  }
}
