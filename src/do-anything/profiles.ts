/**
 * Profiles: the product service of browser identities. CRUD, and the interactive login:
 *
 * - `startLogin` creates (or takes) a profile and opens a login session: a kept-alive DoAnything
 *   session holding the profile. Without `instructions` its first run needs no model: it opens
 *   the start URL and holds the page for a person (src/profiles/login-hold.ts); with them it is an
 *   ordinary agent run (which needs a configured model: 422 otherwise). Once the run is `running`
 *   (waited for, up to LOGIN_RUN_START), a take-control URL with reason "interactive login" is
 *   issued on it and returned: the person opens it, which pauses the run, and signs in themselves
 *   on the live page; then the caller confirms.
 * - `confirm` closes the login session if it is still open (its Session entity saves the browser
 *   state into the profile, encrypted, before the session is closed), then asks the Profile entity
 *   to probe the saved state on the start URL (src/profiles/probe.ts) and records the result:
 *   `logged_in` → state `active` and `last_alive_at`; `logged_out` → state `logged_out` and
 *   `last_failure_reason`.
 */
import { Context, Effect, Layer, Option, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { AgentModel } from "../agent/model.ts"
import type { IssuedUrl } from "../control/take-control.ts"
import { isTerminal } from "../domain/run-state.ts"
import type { Principal, ProjectId, Run, RunId, SessionId } from "../domain/run.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import type { BudgetExceeded, InsufficientCredits, LoginNotStarted, MissingFields, ProfileInUse, ProfileNotFound, SessionCapReached, UnknownNames, WorkspaceNotFound } from "../domain/errors.ts"
import { InvalidField, LoginNotStarted as LoginNotStartedError } from "../domain/errors.ts"
import { type Profile, ProfileId, type ProfileState } from "../domain/profile.ts"
import { ProfileEntity } from "../entities/profile.ts"
import { Sessions } from "./service.ts"
import { RunStore } from "../store/runs.ts"
import { SessionStore } from "../store/sessions.ts"
import { createOnce, KeyedRequest } from "../store/keyed-create.ts"
import { type ProfileFields, ProfileStore } from "../profiles/profile-store.ts"
import { loginInstructions } from "../profiles/login-hold.ts"
import type { ProbeResult } from "../profiles/probe.ts"
import { withMethodSpans } from "../observability/spans.ts"

export { loginInstructions } from "../profiles/login-hold.ts"

/** How long login waits for its run to be `running` before it answers without a control URL. */
export const LOGIN_RUN_START = "30 seconds"
/** The take-control reason of a login's control URL (in run.take_control_pending and run.user_paused). */
export const LOGIN_CONTROL_REASON = "interactive login"

export interface StartLogin {
  readonly profile_id?: ProfileId | null | undefined
  readonly name?: string | null | undefined
  readonly customer_user_id?: string | null | undefined
  readonly start_url: string
  readonly site_id: string
  readonly display_label?: string | null | undefined
  readonly instructions?: string | null | undefined
  readonly logged_in_selector?: string | null | undefined
  readonly logged_out_selector?: string | null | undefined
}

export interface LoginStarted {
  readonly profile: Profile
  readonly sessionId: SessionId
  readonly runId: RunId
  /** The take-control URL of the login run; null when the run was not running in time (or already ended). */
  readonly control: IssuedUrl | null
}

export interface Confirmed {
  readonly profile_id: ProfileId
  readonly state: ProfileState
  readonly probe_result: ProbeResult
  readonly final_url: string | null
  readonly reason: string
}

export class Profiles extends Context.Service<Profiles, {
  readonly create: (projectId: ProjectId, fields: ProfileFields) => Effect.Effect<Profile>
  readonly list: (projectId: ProjectId, options: { readonly limit: number; readonly beforeId?: string | undefined; readonly customerUserId?: string | undefined }) => Effect.Effect<{ readonly items: ReadonlyArray<Profile>; readonly total: number }>
  readonly get: (projectId: ProjectId, profileId: ProfileId) => Effect.Effect<Profile, ProfileNotFound>
  readonly update: (projectId: ProjectId, profileId: ProfileId, fields: ProfileFields) => Effect.Effect<Profile, ProfileNotFound>
  readonly remove: (projectId: ProjectId, profileId: ProfileId) => Effect.Effect<void, ProfileNotFound | ProfileInUse>
  /** `baseUrl`: where the control URL points (WA_PUBLIC_URL, else the host the caller reached). */
  readonly startLogin: (key: { readonly projectId: ProjectId; readonly keyId: Principal }, request: StartLogin, baseUrl: string) => Effect.Effect<
    LoginStarted,
    ProfileNotFound | ProfileInUse | SessionCapReached | UnknownNames | MissingFields | InvalidField | WorkspaceNotFound | InsufficientCredits | BudgetExceeded
  >
  readonly confirm: (projectId: ProjectId, profileId: ProfileId, request: { readonly site_id: string; readonly display_label?: string | null | undefined }) => Effect.Effect<
    Confirmed,
    ProfileNotFound | LoginNotStarted
  >
}>()("wa/profiles/Profiles") {
  static readonly layer = Layer.effect(
    Profiles,
    Effect.gen(function*() {
      const store = yield* ProfileStore
      const sessions = yield* Sessions
      const runs = yield* RunStore
      const sessionStore = yield* SessionStore
      const entityFor = yield* ProfileEntity.client
      const model = yield* AgentModel
      const bus = yield* RunEventBus
      const sql = yield* SqlClient.SqlClient

      /** A profile by id, undefined when gone: what a keyed create's retry finds of its first attempt. */
      const existing = (projectId: ProjectId) => (id: string) =>
        store.get(projectId, ProfileId.make(id)).pipe(Effect.catchTag("ProfileNotFound", () => Effect.succeed(undefined)))
      /** Under an Idempotency-Key, a crash between the commit and the answer leaves one profile (src/store/keyed-create.ts). */
      const createProfile = (projectId: ProjectId, fields: ProfileFields) =>
        createOnce(sql, store.create(projectId, fields), (profile) => profile.id, existing(projectId))
      /**
       * The first session that held a profile: for a profile made by a login, that login's session
       * (open or closed since; ids are ordered by time).
       */
      const holderOf = (profileId: ProfileId) => sessionStore.firstHolderOf(profileId)

      /** The run once it is `running` (or has ended), or undefined if it did not start within LOGIN_RUN_START. */
      const startedRun = (run: Run) =>
        Effect.scoped(Effect.gen(function*() {
          const wakeups = yield* bus.wakeups(run.id)
          while (true) {
            const current = yield* runs.getRun(run.id)
            if (current === undefined || current.status === "running" || isTerminal(current.status)) return current
            yield* Queue.take(wakeups).pipe(Effect.timeoutOption("500 millis"))
          }
        })).pipe(Effect.timeoutOption(LOGIN_RUN_START), Effect.map(Option.getOrUndefined))

      return Profiles.of({
        ...withMethodSpans("Profiles", {
          create: createProfile,
          list: store.list,
          get: store.get,
          update: store.update,
          remove: store.remove
        }),
        startLogin: Effect.fn("Profiles.startLogin")(function*(key, request, baseUrl) {
          const given = request.profile_id ?? null
          if (given !== null && ((request.name ?? null) !== null || (request.customer_user_id ?? null) !== null)) {
            return yield* new InvalidField({
              field: ["name"],
              detail: "give profile_id (an existing profile) or name/customer_user_id (a new one), not both",
              msg: "not allowed with profile_id",
              type: "value_error"
            })
          }
          const instructions = request.instructions ?? null
          if (instructions !== null && Option.isNone(model)) {
            // Without instructions the login run needs no model; with them it is the agent's run.
            return yield* new InvalidField({
              field: ["instructions"],
              detail: "instructions make the login run an agent run, which needs a language model, and none is configured " +
                "(WA_MODEL_BASE_URL / WA_MODEL_API_KEY); leave instructions out: the login session then opens start_url and waits for a person",
              msg: "needs a configured language model",
              type: "model_not_configured"
            })
          }
          // Under an Idempotency-Key the request's one recorded create is its new profile (or, with
          // profile_id, its session): a retry after a crash takes the profile the first attempt
          // made, and the login session holding it, instead of making second ones.
          const profile = given !== null ? yield* store.get(key.projectId, given) : yield* createProfile(key.projectId, {
            name: request.name ?? null,
            customer_user_id: request.customer_user_id ?? null
          })
          const claim = yield* KeyedRequest
          const sessionClaim = given !== null || claim === undefined ? claim : { ...claim, createdId: yield* holderOf(profile.id) }
          const created = yield* sessions.create(key, {
            _tag: "DoAnything",
            instructions: instructions ?? loginInstructions(request.start_url, request.site_id),
            profile_id: profile.id,
            keep_alive: true
          }, {
            // Recorded before the run is executed: the Session entity reads it to know its login run.
            beforeExecute: (created) =>
              Effect.andThen(
                store.startLogin({
                  profile_id: profile.id,
                  site_id: request.site_id,
                  start_url: request.start_url,
                  display_label: request.display_label ?? null,
                  session_id: created.session.id,
                  logged_in_selector: request.logged_in_selector ?? null,
                  logged_out_selector: request.logged_out_selector ?? null
                }),
                store.setState(profile.id, "login_pending")
              )
          }).pipe(
            Effect.provideService(KeyedRequest, sessionClaim),
            // A profile made for this login does not outlive a login that could not start.
            Effect.tapError(() => given === null ? store.remove(key.projectId, profile.id).pipe(Effect.ignore) : Effect.void)
          )
          const running = yield* startedRun(created.run)
          const control = running?.status === "running"
            ? yield* sessions.takeControl(running, LOGIN_CONTROL_REASON, baseUrl).pipe(
              Effect.map(({ url }) => url),
              Effect.catchTag("ControlNotAvailable", () => Effect.succeed(null))
            )
            : null
          if (control === null) {
            yield* Effect.logWarning("interactive login answered without a control URL").pipe(
              Effect.annotateLogs({ run_id: created.run.id, status: running?.status ?? "not started" })
            )
          }
          yield* Effect.logInfo("interactive login started").pipe(Effect.annotateLogs({ profile_id: profile.id, site_id: request.site_id, session_id: created.session.id }))
          return { profile: yield* store.get(key.projectId, profile.id), sessionId: created.session.id, runId: created.run.id, control }
        }),
        confirm: Effect.fn("Profiles.confirm")(function*(projectId, profileId, request) {
          yield* store.get(projectId, profileId)
          const login = yield* store.findLogin(profileId, request.site_id)
          if (login === undefined) return yield* new LoginNotStartedError({ profileId, siteId: request.site_id })
          if (login.session_id !== null) {
            const session = yield* sessionStore.getSession(projectId, login.session_id)
            if (session !== undefined && session.status !== "closed") {
              // Closing saves the login session's browser state into the profile first.
              yield* sessions.close(projectId, session.id).pipe(Effect.ignore)
            }
          }
          const probed = yield* entityFor(profileId).Probe({ siteId: request.site_id, displayLabel: request.display_label }).pipe(Effect.orDie)
          return { profile_id: profileId, state: probed.state, probe_result: probed.probe_result, final_url: probed.final_url, reason: probed.reason }
        })
      })
    })
  ).pipe(Layer.provide(ProfileStore.layer))
}
