/**
 * The pages of mailed links (src/accounts/account-mail.ts), usable signed in or not:
 * - /console/forgot-password: asks for a reset mail (the answer is the same whether an account
 *   has the email);
 * - /console/reset-password?token=...: sets the new password, which ends every session of the
 *   account and confirms the address; then sign in.
 * - /console/verify-email?token=...: confirms the address, which only a session of the account
 *   itself can do (a click in someone else's browser verifies nothing).
 */
import { type FormEvent, useState } from "react"
import { Api, ApiError, describeError } from "../api.ts"
import type { ForgotPasswordAnswer, ForgotPasswordBody, Me, ResetPasswordAnswer, ResetPasswordBody, VerifyEmailAnswer, VerifyEmailBody } from "../wire.ts"

const explainToken = (failure: unknown, what: string): string => {
  if (!(failure instanceof ApiError)) return describeError(failure)
  switch (failure.code) {
    case "token_not_found": return `This ${what} link is not valid${what === "verification" ? " for the account you are signed in with" : ""}.`
    case "token_used": return `This ${what} link was already used; ask for a new one.`
    case "token_expired": return `This ${what} link has expired; ask for a new one.`
    default: return describeError(failure)
  }
}

export const ForgotPasswordPage = () => {
  const [email, setEmail] = useState("")
  const [sent, setSent] = useState(false)
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      await new Api(null).post<ForgotPasswordAnswer>("/v1/auth/password/forgot", { email: email.trim() } satisfies ForgotPasswordBody)
      setSent(true)
    } catch (failure) {
      setError(failure instanceof ApiError && failure.status === 429 ? `Too many requests; try again later. (${failure.detail})` : describeError(failure))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="signin">
      <div className="card">
        <h1>Reset your password</h1>
        {sent ? (
          <div className="notice" role="status">If an account has this email, a link to choose a new password is on its way. It works once, for 30 minutes.</div>
        ) : (
          <form onSubmit={submit} aria-label="forgot password">
            <p className="muted">We mail a link to the address of your account. Setting the new password signs out every session of the account.</p>
            <label>Email<input name="email" type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required maxLength={255} /></label>
            {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
            <button type="submit" disabled={busy}>{busy ? "Sending…" : "Mail me a link"}</button>
          </form>
        )}
        <p className="small"><a href="/console/">Back to sign-in</a></p>
      </div>
    </div>
  )
}

export const ResetPasswordPage = () => {
  const token = new URLSearchParams(location.search).get("token") ?? ""
  const [password, setPassword] = useState("")
  const [repeat, setRepeat] = useState("")
  const [done, setDone] = useState(false)
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    if (password.length < 8) return setError("The password needs at least 8 characters.")
    if (password !== repeat) return setError("The passwords differ.")
    setBusy(true)
    try {
      await new Api(null).post<ResetPasswordAnswer>("/v1/auth/password/reset", { token, new_password: password } satisfies ResetPasswordBody)
      setDone(true)
    } catch (failure) {
      setError(explainToken(failure, "password reset"))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="signin">
      <div className="card">
        <h1>Choose a new password</h1>
        {token === "" ? <div className="error" role="alert">This link has no reset token.</div> : done ? (
          <div className="notice" role="status">Your password is set and every session of the account was signed out. Sign in with the new password.</div>
        ) : (
          <form onSubmit={submit} aria-label="reset password">
            <label>New password<input name="password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required minLength={8} maxLength={200} /></label>
            <label>Repeat the password<input name="repeat" type="password" autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.target.value)} required maxLength={200} /></label>
            {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
            <button type="submit" disabled={busy}>{busy ? "Saving…" : "Set the password"}</button>
          </form>
        )}
        <p className="small"><a href="/console/">Sign in</a> · <a href="/console/forgot-password">Ask for a new link</a></p>
      </div>
    </div>
  )
}

export const VerifyEmailPage = ({ me }: { me: Me | null }) => {
  const token = new URLSearchParams(location.search).get("token") ?? ""
  const [done, setDone] = useState(false)
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const verify = async () => {
    setError(undefined)
    setBusy(true)
    try {
      await new Api(null).post<VerifyEmailAnswer>("/v1/auth/email/verify", { token } satisfies VerifyEmailBody)
      setDone(true)
    } catch (failure) {
      setError(explainToken(failure, "verification"))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="signin">
      <div className="card">
        <h1>Verify your email address</h1>
        {token === "" ? <div className="error" role="alert">This link has no verification token.</div> : me === null ? (
          <p>Sign in to the account this link is for, then open the link again. If you did not make an account here, do not: someone else may have
            used your address; <a href="/console/forgot-password">reset its password</a> instead, which proves the address is yours.</p>
        ) : done ? (
          <div className="notice" role="status">{me.email} is verified.</div>
        ) : (
          <div className="stack">
            <p>Confirm that <strong>{me.email}</strong> is your address?</p>
            {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
            <div><button onClick={verify} disabled={busy}>Verify {me.email}</button></div>
          </div>
        )}
        <p className="small"><a href="/console/">Open the console</a></p>
      </div>
    </div>
  )
}
