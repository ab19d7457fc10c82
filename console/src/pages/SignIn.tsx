/**
 * Sign-in. The default is a console account: email and password (the API sets an HttpOnly session
 * cookie), or one of the SSO providers of GET /v1/auth/providers (a full-page redirect through the
 * provider, back to /console/). The alternative is an API key with its project id (the first
 * start prints both, `wa keys create` prints them as JSON, which can be pasted whole); the pair
 * is checked against the API before it is kept: 401 means the key is wrong or revoked, 403 that
 * it belongs to another project.
 */
import { type FormEvent, useEffect, useState } from "react"
import { signIn } from "../account.ts"
import { Api, ApiError, describeError } from "../api.ts"
import { type Credentials, looksLikeApiKey, parsePasted } from "../auth.ts"

import type { BillingAccount, Provider, Providers } from "../wire.ts"

const AccountForm = ({ onSignedIn }: { onSignedIn: () => void }) => {
  const [email, setEmail] = useState("")
  const [password, setPassword] = useState("")
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const [providers, setProviders] = useState<ReadonlyArray<Provider>>([])
  useEffect(() => {
    new Api(null).get<Providers>("/v1/auth/providers").then((r) => setProviders(r.providers), () => setProviders([]))
  }, [])
  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      await signIn(email.trim(), password)
      setPassword("")
      onSignedIn()
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401 ? "Wrong email or password."
          : failure instanceof ApiError && failure.status === 429 ? `Too many sign-in attempts; try again later. (${failure.detail})`
          : describeError(failure)
      )
    } finally {
      setBusy(false)
    }
  }
  return (
    <form onSubmit={submit} aria-label="account sign-in">
      <label>
        Email
        <input name="email" type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required maxLength={255} />
      </label>
      <label>
        Password
        <input name="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required maxLength={128} />
      </label>
      {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
      <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
      <p className="small"><a href="/console/forgot-password">Forgot your password?</a></p>
      {providers.length > 0 ? (
        <div className="sso" aria-label="single sign-on">
          <div className="muted small">or</div>
          {providers.map((p) => (
            <a key={p.provider_id} className="button secondary" href={`/v1/auth/sso/${encodeURIComponent(p.provider_id)}/start?return_to=${encodeURIComponent("/console/")}`}>
              Sign in with {p.display_name}
            </a>
          ))}
        </div>
      ) : null}
    </form>
  )
}

const ApiKeyForm = ({ onSignedIn }: { onSignedIn: (credentials: Credentials) => void }) => {
  const [token, setToken] = useState("")
  const [projectId, setProjectId] = useState("")
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)

  const onKeyChange = (text: string) => {
    const pasted = parsePasted(text)
    setToken(pasted.token ?? text)
    if (pasted.projectId !== undefined) setProjectId(pasted.projectId)
  }

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(undefined)
    const key = token.trim()
    const pid = projectId.trim()
    if (!looksLikeApiKey(key)) return setError("An API key starts with wa_ followed by at least 28 letters and digits.")
    if (!/^proj_[A-Za-z0-9_-]+$/.test(pid)) return setError("A project id starts with proj_.")
    const credentials: Credentials = { kind: "api_key", token: key, projectId: pid }
    setBusy(true)
    try {
      await new Api(credentials).get<BillingAccount>(new Api(credentials).project("/billing/account"))
      onSignedIn(credentials)
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401 ? "This API key is not valid (unknown, malformed, or revoked)."
          : failure instanceof ApiError && failure.status === 403 ? "This API key belongs to another project."
          : describeError(failure)
      )
    } finally {
      setBusy(false)
    }
  }

  return (
    <form onSubmit={submit} aria-label="key sign-in">
      <p className="muted">The key is kept in this tab only (session storage) and sent only to this service.</p>
      <label>
        API key
        <input name="api_key" type="password" autoComplete="off" spellCheck={false} placeholder="wa_… (or paste the JSON of wa keys create)"
          value={token} onChange={(e) => onKeyChange(e.target.value)} required />
      </label>
      <label>
        Project id
        <input name="project_id" autoComplete="off" spellCheck={false} placeholder="proj_…" value={projectId} onChange={(e) => setProjectId(e.target.value)} required />
      </label>
      {error !== undefined ? <div className="error" role="alert">{error}</div> : null}
      <button type="submit" disabled={busy}>{busy ? "Checking…" : "Sign in"}</button>
      <p className="muted small">The first start of the service prints a project id and an admin key; <code>wa keys create --project proj_…</code> makes more.</p>
    </form>
  )
}

export const SignIn = ({ onApiKey, onAccount, notice, initialMode = "account" }: {
  onApiKey: (credentials: Credentials) => void
  onAccount: () => void
  notice?: string | undefined
  initialMode?: "account" | "api_key"
}) => {
  const [mode, setMode] = useState<"account" | "api_key">(initialMode)
  return (
    <div className="signin">
      <div className="card">
        <h1>Web Agent Service</h1>
        {notice !== undefined ? <div className="notice" role="status">{notice}</div> : null}
        {mode === "account" ? <AccountForm onSignedIn={onAccount} /> : <ApiKeyForm onSignedIn={onApiKey} />}
        <p className="small">
          {mode === "account"
            ? <button className="link" onClick={() => setMode("api_key")}>Use an API key instead</button>
            : <button className="link" onClick={() => setMode("account")}>Use email and password instead</button>}
        </p>
      </div>
    </div>
  )
}
