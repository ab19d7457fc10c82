/**
 * /console/accept-invitation?token=... (the link of an invitation). Signed in: accept as that
 * account (the API checks it is the invited email). Not signed in: set a password and a display
 * name, which creates the account for the invited email; the console then signs in with it (the
 * person types the invited email, which the link does not reveal) and opens the console.
 */
import { type FormEvent, useState } from "react"
import { signIn } from "../account.ts"
import { Api, ApiError, describeError } from "../api.ts"
import type { AcceptInvitationBody, InvitationAccepted, Me } from "../wire.ts"

const explain = (failure: unknown): string => {
  if (!(failure instanceof ApiError)) return describeError(failure)
  switch (failure.code) {
    case "invitation_not_found": return "This invitation link is not valid."
    case "invitation_expired": return "This invitation has expired; ask for a new one."
    case "invitation_revoked": return "This invitation was revoked."
    case "invitation_accepted": return "This invitation was already accepted; sign in instead."
    case "email_taken": return "An account with the invited email exists: sign in with it first, then open the link again."
    default: return failure.status === 403 ? `This invitation is for another email than the one you are signed in with. (${failure.detail})` : describeError(failure)
  }
}

export const AcceptInvitationPage = ({ me, onAccepted, onSignOut }: { me: Me | null; onAccepted: (tenantId: string) => void; onSignOut: () => void }) => {
  const token = new URLSearchParams(location.search).get("token") ?? ""
  const [email, setEmail] = useState("")
  const [name, setName] = useState("")
  const [password, setPassword] = useState("")
  const [repeat, setRepeat] = useState("")
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const [created, setCreated] = useState(false)

  const accept = async (body: Omit<AcceptInvitationBody, "token">) => new Api(null).post<InvitationAccepted>("/v1/invitations/accept", { token, ...body } satisfies AcceptInvitationBody)

  const acceptSignedIn = async () => {
    setError(undefined)
    setBusy(true)
    try {
      const result = await accept({})
      onAccepted(result.tenant_id)
    } catch (failure) {
      setError(explain(failure))
    } finally {
      setBusy(false)
    }
  }

  const acceptNew = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    if (!created && password.length < 8) return setError("The password needs at least 8 characters.")
    if (!created && password !== repeat) return setError("The passwords differ.")
    setBusy(true)
    try {
      const result = created ? undefined : await accept({ password, display_name: name.trim() || null })
      setCreated(true)
      try {
        await signIn(email.trim(), password)
      } catch (failure) {
        setError(`Your account was created, but signing in failed: ${failure instanceof ApiError && failure.status === 401 ? "use the invited email address." : describeError(failure)}`)
        return
      }
      onAccepted(result?.tenant_id ?? "")
    } catch (failure) {
      setError(explain(failure))
    } finally {
      setBusy(false)
    }
  }

  return (
    <div className="signin">
      <div className="card">
        <h1>Join a team</h1>
        {token === "" ? <div className="error" role="alert">This link has no invitation token.</div> : me !== null ? (
          <div className="stack">
            <p>You are signed in as <strong>{me.email}</strong>. Accept the invitation with this account?</p>
            {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
            <div className="row">
              <button onClick={acceptSignedIn} disabled={busy}>Accept invitation</button>
              <button className="link" onClick={onSignOut}>Sign out (to use another account)</button>
            </div>
          </div>
        ) : (
          <form onSubmit={acceptNew} aria-label="accept invitation">
            <p className="muted">{created
              ? "Your account exists: sign in with the invited email and the password you chose."
              : "Create your account: the invited email address, a display name and a password. Already have an account? Sign in first, then open the link again."}</p>
            <label>Email (the invited address)<input name="email" type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required maxLength={255} /></label>
            {created ? null : <label>Display name<input name="display_name" autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} maxLength={100} /></label>}
            <label>Password<input name="password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required minLength={8} maxLength={200} /></label>
            {created ? null : <label>Repeat the password<input name="repeat" type="password" autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.target.value)} required maxLength={200} /></label>}
            {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
            <button type="submit" disabled={busy}>{created ? "Sign in" : busy ? "Joining…" : "Create account and join"}</button>
            <p className="small"><a href="/console/">Sign in instead</a></p>
          </form>
        )}
      </div>
    </div>
  )
}
