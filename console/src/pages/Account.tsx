/** The signed-in account: who, and a password change (which ends the user's other sessions). */
import { type FormEvent, useState } from "react"
import { type Api, ApiError, describeError } from "../api.ts"
import { ErrorBox, Section, Time, useLoad } from "../ui.tsx"
import type { ChangePasswordBody, EmailVerificationAnswer, Me, PasswordChangedAnswer } from "../wire.ts"

/** An unverified address: mail a link that proves it (to be opened where this account is signed in). */
const VerifyButton = ({ api }: { api: Api }) => {
  const [state, setState] = useState<string>()
  const send = async () => {
    try {
      const result = await api.post<EmailVerificationAnswer>("/v1/auth/email/verification")
      setState(result.mail_sent ? "A verification link was mailed; open it in this browser." : "The mail could not be sent; try again later.")
    } catch (failure) {
      setState(describeError(failure))
    }
  }
  return <>not verified {state === undefined ? <button className="link" onClick={send}>Mail me a verification link</button> : <span className="muted">{state}</span>}</>
}

export const AccountPage = ({ api }: { api: Api }) => {
  const me = useLoad(() => api.get<Me>("/v1/auth/me"), [api])
  const [current, setCurrent] = useState("")
  const [next, setNext] = useState("")
  const [repeat, setRepeat] = useState("")
  const [error, setError] = useState<string>()
  const [done, setDone] = useState<string>()
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    setDone(undefined)
    if (next.length < 8) return setError("The new password needs at least 8 characters.")
    if (next !== repeat) return setError("The new passwords differ.")
    try {
      const result = await api.post<PasswordChangedAnswer>("/v1/auth/password", { current_password: current, new_password: next } satisfies ChangePasswordBody)
      setCurrent("")
      setNext("")
      setRepeat("")
      setDone(`Password changed.${result.other_sessions_ended ? " Your other sessions were signed out." : ""}`)
    } catch (failure) {
      // A wrong current password is a 401 the App must not take for an ended session: say it here.
      setError(failure instanceof ApiError && failure.status === 401 ? "The current password is wrong." : describeError(failure))
    }
  }
  return (
    <>
      <Section title="Account">
        <ErrorBox error={me.error} />
        {me.data ? (
          <dl className="facts">
            <dt>Email</dt><dd data-testid="account-email">{me.data.email}</dd>
            <dt>Address</dt><dd data-testid="account-email-verified">{me.data.email_verified ? "verified" : <VerifyButton api={api} />}</dd>
            <dt>Name</dt><dd>{me.data.display_name ?? "–"}</dd>
            <dt>User id</dt><dd><code>{me.data.user_id}</code></dd>
            <dt>Session ends</dt><dd><Time value={me.data.expires_at} /></dd>
            <dt>Tenants</dt><dd>{me.data.tenants.map((t) => `${t.name} (${t.role}${t.status === "disabled" ? ", disabled" : ""})`).join(", ") || "–"}</dd>
          </dl>
        ) : null}
      </Section>
      <Section title="Change password">
        <form onSubmit={submit} aria-label="change password" className="stack">
          <label>Current password<input type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} required maxLength={200} /></label>
          <label>New password<input type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)} required minLength={8} maxLength={200} /></label>
          <label>Repeat the new password<input type="password" autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.target.value)} required maxLength={200} /></label>
          <ErrorBox error={error} />
          {done ? <div className="notice" role="status">{done}</div> : null}
          <div><button type="submit">Change password</button></div>
        </form>
      </Section>
    </>
  )
}
