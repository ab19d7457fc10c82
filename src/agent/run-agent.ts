/**
 * The agent loop of one DoAnything run. Each step: take queued user messages, observe the page,
 * ask the model (tools only: the allowed subset), let the tools act, price the tokens. The loop
 * ends when `done` accepts an output, the run is canceled, the step budget runs out (the run is
 * marked expired), or the model or browser fails. The run's lifecycle around it (its start or
 * resume, its deadline, its failure's code written once, "run ended") is the run kernel's
 * (src/runs/kernel.ts): the Session entity (src/do-anything/executor.ts) calls this after `begin`.
 */
import { Ajv } from "ajv"
import { Effect, Layer, Option, Queue, Ref, Schema, Stream } from "effect"
import { LanguageModel, Prompt, Toolkit } from "effect/ai"
import { refusedMessages, screenshot } from "../browser/actions.ts"
import { awaitInputAnswer } from "../events/input-answer.ts"
import { snapshotFormatHelp } from "../browser/observe.ts"
import { markedScreenshot, type MarkedScreenshot } from "../browser/marks.ts"
import type { ContextLease } from "../browser/pool.ts"
import { RunFailure } from "../domain/run-failure.ts"
import { isTerminal } from "../domain/run-state.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import type { DoAnythingRequest, Run, RunId } from "../domain/run.ts"
import type { ExecutionToken } from "../domain/id-schemas.ts"
import { type Checkpoint, RunStore } from "../store/runs.ts"
import { SessionStore } from "../store/sessions.ts"
import { ScreenshotStore } from "../store/screenshots.ts"
import { AgentModel } from "./model.ts"
import { AgentToolkitHandlers, noSecrets, observeForModel, redactDeep, RunContext, type RunSecrets, SecretVault, toolkitFor } from "./tools.ts"
import { FileToolContext, FileToolkitHandlers, fileToolNames, watchDownloads, workspacePrompt } from "./file-tools.ts"
import { AgentInbox, inboxPrompt, MailToolContext, MailToolkitHandlers, mailToolNames, noInbox } from "./mail-tools.ts"
import { WorkspaceStore } from "../store/workspace-store.ts"
import { budgetExceededDetail, type Exhausted } from "../domain/billing.ts"
import { autonomousBoundsOfRun, proposeNextRun } from "../store/autonomous-schedules.ts"
import { SafetyPolicies } from "../safety/service.ts"
import { makeRecorder, planStep, startOriginOf, stepSummary } from "../cache/script.ts"
import type { CachedStep } from "../domain/cache-script.ts"
import { cacheKeyOf, type CacheScript, CacheScriptStore } from "../store/cache-scripts.ts"
import { SkillStore } from "../store/skills.ts"
import { skillToolkit } from "./skill-tools.ts"

/** The DoAnything fields of a run's request (a run of another product has none). */
const requestOf = (run: Run): Partial<DoAnythingRequest> => run.request._tag === "DoAnything" ? run.request : {}

/** The prompt's lines about the run's secrets: placeholders, what they are for and where they work; never a value. */
const secretsPrompt = (secrets: RunSecrets): string => {
  if (secrets.listed.length === 0) return ""
  const lines = secrets.listed.map((secret) =>
    `- {{${secret.kind}:${secret.name}}}${secret.kind === "totp" ? " (the current one-time code)" : ""}` +
    `${secret.description ? `: ${secret.description.replace(/\s+/g, " ")}` : ""}; only on ${secret.origins.join(", ")}`
  )
  return [
    "The user gave you secrets that you can type without seeing them. Write the placeholder exactly as shown in the text of type or type_at,",
    "alone or within other text, and the browser puts the value into the field; fields holding a secret show as dots. A placeholder works",
    "only in a field of a page on its origins (and never in a URL); elsewhere the action fails. Never ask the user for these values.",
    ...lines
  ].join("\n")
}

const systemPrompt = (
  run: Run,
  autonomous?: { readonly min_interval_seconds: number; readonly max_interval_seconds: number },
  secrets: RunSecrets = noSecrets
) => {
  const request = requestOf(run)
  return [
    "You are a web agent operating a real Chromium browser to carry out the user's task.",
    "Each turn you get the current page (URL, tabs, and a snapshot of what is visible) and act by calling tools.",
    snapshotFormatHelp,
    "Work step by step; after each action you will see the page again. If an action fails, read the error and try another way.",
    "Use ask_human only when you cannot proceed without the user (captcha, 2FA code, a decision that is theirs).",
    "When the task is complete call done with the final output.",
    request.output_schema
      ? `The output passed to done must be JSON matching this JSON schema:\n${JSON.stringify(request.output_schema)}`
      : "",
    request.skills && request.skills.length > 0
      ? `Skills the user enabled, each a tool skill_<name>: ${request.skills.join(", ")}. Use a skill when it does what the task needs next.`
      : "",
    secretsPrompt(secrets),
    autonomous === undefined ? "" :
      `This task runs on a schedule you decide: when you call done, you may pass next_run_at (an ISO 8601 date-time) for its next run, ` +
      `between ${autonomous.min_interval_seconds} and ${autonomous.max_interval_seconds} seconds from now (it is clamped to that range). ` +
      `The current time is ${new Date().toISOString()}.`
  ].filter((line) => line !== "").join("\n")
}

const ajv = new Ajv({ allErrors: true, strict: false })

// The conversation is checkpointed as JSON (history holds no images: step screenshots are not kept).
const encodePrompt = Schema.encodeSync(Prompt.Prompt)
const decodePrompt = Schema.decodeUnknownSync(Prompt.Prompt)

export interface AgentSettings {
  readonly stepScreenshots: boolean
  readonly vision: boolean
}

/**
 * Runs a started run (the kernel's `begin` made it running, or announced its resume) to a
 * terminal state inside the session's browser context. Ends the run itself when it is done, out
 * of steps or budget, or outside the safety boundary; fails with RunFailure when it cannot go on
 * (model_not_configured, secret_unavailable, model_error, agent_error, browser_crashed), which
 * the kernel writes.
 */
export const runAgent = Effect.fn("runAgent")(function*(
  runId: RunId,
  lease: ContextLease,
  settings: AgentSettings,
  /** The token of this execution (the kernel's `begin`): every write is refused once superseded. */
  executor: ExecutionToken,
  /** Set when another runner died during this run: go on from its last completed step. */
  resume?: { readonly checkpoint: Checkpoint | undefined },
  /**
   * Runs just before the agent ends the run (done, or failed by the agent's own rules): what must
   * be there once a client sees the run ended, the run's recording (src/recordings/), is stored.
   */
  beforeEnd: Effect.Effect<void> = Effect.void
) {
  const store = yield* RunStore
  const sessionStore = yield* SessionStore
  const bus = yield* RunEventBus
  const screenshots = yield* ScreenshotStore
  const configured = yield* AgentModel
  if (Option.isNone(configured)) return yield* new RunFailure({ code: "model_not_configured", detail: modelNotConfigured })
  const model = configured.value
  if (resume !== undefined) yield* store.rewindSteps(runId, resume.checkpoint?.step ?? 0)
  const run = yield* store.getRun(runId)
  if (run === undefined || isTerminal(run.status)) return

  const request = requestOf(run)
  // The secrets the run names (src/secrets/), opened for this execution only; a name the project
  // does not have (deleted since the run was created) fails the run before its first step.
  const vault = yield* SecretVault
  let secrets: RunSecrets = noSecrets
  if ((request.secrets ?? []).length > 0) {
    const loaded = yield* Effect.result(vault.forRun(run.project_id, request.secrets ?? []))
    if (loaded._tag === "Failure") return yield* new RunFailure({ code: "secret_unavailable", detail: loaded.failure.detail })
    secrets = loaded.success
  }
  const redact = secrets.redact
  // The project's safety boundary (src/safety/), as it is when the run starts: the guard refuses
  // documents outside its domains (the run then ends below), clicks in its categories ask first.
  const safety = yield* (yield* SafetyPolicies).forRun(run.project_id)
  yield* Effect.promise(() => lease.guard.setPolicy(safety.checksDomains ? safety.navigation : undefined))
  /** Ends the run failed (safety_boundary_violated) when the guard refused a page outside the boundary; the step is not charged. */
  const endedOnBoundary = Effect.gen(function*() {
    const violation = lease.guard.violation()
    if (violation === undefined) return false
    yield* beforeEnd
    yield* store.transition(runId, "failed", {
      executor,
      terminalReason: "failed",
      errorCode: "safety_boundary_violated",
      errorDetail: redact(violation.reason),
      data: { reason: redact(violation.reason) }
    }).pipe(Effect.ignore)
    return true
  })
  const validate = request.output_schema ? ajv.compile(request.output_schema) : undefined
  const finalOutput = yield* Ref.make<Option.Option<unknown>>(Option.none())
  // A run of an autonomous schedule may propose its next run with done's next_run_at.
  const autonomous = yield* autonomousBoundsOfRun(runId)
  const proposedNext = yield* Ref.make<Date | undefined>(undefined)

  // cache_script (src/cache/): a run that ends done saves its actions as the task's script; a run
  // whose task has one replays it without the model, handing the steps it cannot replay to the
  // model. A resumed execution neither replays nor saves (its earlier actions were not recorded here).
  const caching = request.cache_script === true && resume === undefined && run.instructions !== null
  const cacheScripts = yield* CacheScriptStore
  const recorder = caching ? makeRecorder(lease) : undefined
  const startOrigin = startOriginOf(lease)
  const script: CacheScript | undefined = caching
    ? yield* cacheScripts.find(run.project_id, cacheKeyOf(run.instructions ?? "", startOrigin, request.output_schema ?? null))
    : undefined

  const ctx = RunContext.of({
    runId,
    lease,
    recorder,
    allowPrivateNetworks: lease.allowPrivateNetworks,
    secrets,
    safety,
    emit: (type, data) => store.appendEvent(runId, type, data, executor).pipe(Effect.asVoid),
    publishScreenshot: (jpeg) =>
      Effect.gen(function*() {
        const url = yield* screenshots.save(runId, jpeg)
        yield* store.appendEvent(runId, "run.screenshot", { url }, executor)
        return url
      }),
    askHuman: (prompt, schema) =>
      Effect.gen(function*() {
        yield* waitWhilePaused
        const requestId = yield* store.createInputRequest(runId, prompt, schema, executor).pipe(Effect.orDie)
        // No hand-over on a draining runner: the person may be solving a captcha in this browser;
        // the run moves when the runner stops (src/do-anything/executor.ts).
        const answer = yield* awaitInputAnswer({ store, bus }, runId, requestId)
        switch (answer._tag) {
          case "Answered":
            return answer.response
          case "Withdrawn":
            // A person took control instead of answering (src/control/take-control.ts).
            yield* waitWhilePaused
            return "No answer: a person took control of the browser to handle this themselves and has handed it back. Look at the page again before going on."
          default:
            return yield* Effect.interrupt
        }
      }),
    finish: (rawOutput, nextRunAt) =>
      Effect.gen(function*() {
        const output = redactDeep(rawOutput, redact)
        if (validate !== undefined && !validate(output)) {
          return `the output does not match output_schema: ${ajv.errorsText(validate.errors)}. Fix it and call done again.`
        }
        if (autonomous !== undefined && nextRunAt !== undefined) {
          const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(nextRunAt) ? new Date(nextRunAt) : undefined
          if (at === undefined || Number.isNaN(at.getTime())) {
            return `next_run_at must be an ISO 8601 date-time with Z or an offset, such as 2030-01-01T08:00:00Z; got ${JSON.stringify(nextRunAt)}. Call done again.`
          }
          yield* Ref.set(proposedNext, at)
        }
        yield* Ref.set(finalOutput, Option.some(output))
        return undefined
      })
  })

  // Take control (src/control/): while a person holds the browser the run is paused; the agent
  // finishes the step under way, waits here, then observes the page afresh before it acts.
  let personHadControl = false
  /** Said to the model with its next observation: why a cached script's step comes to it (src/cache/). */
  let cacheNote: string | undefined
  const waitWhilePaused = Effect.scoped(Effect.gen(function*() {
    const wakeups = yield* bus.wakeups(runId)
    while (true) {
      const current = yield* store.getRun(runId)
      if (current === undefined || current.status !== "paused") return
      personHadControl = true
      yield* Queue.take(wakeups).pipe(Effect.timeoutOption("2 seconds"))
    }
  }))


  // The session's workspace (if any) gives the file tools, and the pages' downloads are saved there.
  const workspaces = yield* WorkspaceStore
  const session = run.session_id === null ? undefined : yield* sessionStore.getSession(run.project_id, run.session_id)
  const workspaceId = session?.workspace_id ?? null
  const emit = ctx.emit
  const downloads = workspaceId === null ? undefined : yield* watchDownloads({ lease, workspaceId, store: workspaces, emit })
  const settleDownloads = downloads?.settle ?? Effect.void
  const fileHandlers = FileToolkitHandlers.pipe(Layer.provide(Layer.succeed(FileToolContext, FileToolContext.of({
    workspaceId,
    lease,
    store: workspaces,
    emit,
    settleDownloads
  }))))

  // The session's inbox (agentmail, src/mail/inbound/) gives the mail tools and a line of the prompt.
  const inbox = Option.getOrElse(yield* Effect.serviceOption(AgentInbox), () => noInbox)
  const inboxAddress = run.session_id === null ? null : yield* inbox.addressOf(run.session_id)
  const mailHandlers = MailToolkitHandlers.pipe(Layer.provide(Layer.succeed(MailToolContext, MailToolContext.of({
    sessionId: run.session_id,
    address: inboxAddress,
    inbox,
    emit,
    redact
  }))))

  const toolkit = toolkitFor(
    request.allowed_actions ?? [],
    request.output_schema as Record<string, unknown> | null | undefined,
    [...(workspaceId === null ? fileToolNames : []), ...(inboxAddress === null ? mailToolNames : [])],
    autonomous !== undefined
  )
  const handlers = Layer.mergeAll(AgentToolkitHandlers.pipe(Layer.provide(Layer.succeed(RunContext, ctx))), fileHandlers, mailHandlers)

  /** Runs one tool through the run's handlers, as a model's call would (events, secrets, safety); its failure message, if it failed. */
  const runTool = (name: string, params: Record<string, unknown>) =>
    Effect.gen(function*() {
      const withHandlers = yield* toolkit
      const stream = yield* (withHandlers.handle as unknown as (name: string, params: unknown) => Effect.Effect<Stream.Stream<{ readonly isFailure: boolean; readonly result: unknown }, unknown>, unknown>)(name, params)
      const results = yield* Stream.runCollect(stream)
      const last = results[results.length - 1]
      if (last === undefined) return "the tool gave no result"
      return last.isFailure ? String((last.result as { error?: unknown }).error ?? "the action failed") : undefined
    }).pipe(
      Effect.provide(handlers),
      Effect.catch((error) => Effect.succeed(error instanceof Error ? error.message : String(error)))
    )

  // The skills the run lists (src/agent/skill-tools.ts), each a tool skill_<name> beside the others;
  // a skill deleted since the run was created is not offered.
  const skillStore = yield* SkillStore
  const runSkills = (yield* skillStore.forRun(run.project_id, request.skills ?? [])).skills
  const skills = skillToolkit(runSkills, {
    lease,
    // A skill's arguments and failure reasons come from the model and the page: its events pass
    // through the run's secrets' redaction like every other tool's.
    emit: (type, data) => emit(type, redactDeep(data, redact) as typeof data),
    observe: observeForModel.pipe(Effect.provideService(RunContext, ctx), Effect.map((observed) => redact(observed.text))),
    runTool,
    recordCall: skillStore.recordCall
  })
  // Typed as the base toolkit: the skills' tools are only known at run time.
  const modelToolkit = runSkills.length === 0 ? toolkit : Toolkit.merge(toolkit, skills.toolkit) as unknown as typeof toolkit
  const modelHandlers = runSkills.length === 0 ? handlers : Layer.merge(handlers, skills.layer)
  let history = resume?.checkpoint !== undefined
    ? decodePrompt(resume.checkpoint.history)
    : Prompt.make([
      {
        role: "system",
        content: [systemPrompt(run, autonomous, secrets), workspaceId === null ? "" : workspacePrompt, inboxAddress === null ? "" : inboxPrompt(inboxAddress)]
          .filter((part) => part !== "").join("\n")
      },
      { role: "user", content: `Task:\n${run.instructions ?? "(continue the previous task)"}` }
    ])

  const step = Effect.gen(function*() {
    if (yield* endedOnBoundary) return
    const stepNumber = yield* store.recordStep(runId, executor)
    const messages = yield* store.takeMessages(runId)
    // What the guard refused while no action ran (a pop-up a page's late timer opened, a page's own
    // redirect): an action reports its own refusals, and the next one would drop these unsaid.
    const refusedMeanwhile = refusedMessages([...lease.guard.takeRefusals(), ...lease.takeBlockedConnections()]).map(redact)
    const observed = yield* observeForModel.pipe(Effect.provideService(RunContext, ctx))
    const observation = { ...observed, url: redact(observed.url), title: redact(observed.title), text: redact(observed.text) }
    recorder?.observed(observation.text)
    let image: Uint8Array | undefined
    let imageNote = ""
    // A blank tab (the first step of a fresh session) has nothing to show.
    if (settings.vision && observation.url !== "about:blank") {
      // One capture: published plain, sent to the model with the refs' marks (src/browser/marks.ts).
      const shot = yield* Effect.result(markedScreenshot(ctx.lease, observation.text))
      if (shot._tag === "Success") {
        image = shot.success.jpeg
        imageNote = visionNote(shot.success)
        if (settings.stepScreenshots) yield* ctx.publishScreenshot(shot.success.plain)
      }
    } else if (settings.stepScreenshots && observation.url !== "about:blank") {
      const shot = yield* Effect.result(takeScreenshot(ctx))
      if (shot._tag === "Success") yield* ctx.publishScreenshot(shot.success)
    }
    const userText = [
      ...messages.map((message) => `Message from the user: ${message}`),
      ...(personHadControl
        ? ["A person took control of the browser and has handed it back; the page may have changed. Look at the current page below before acting."]
        : []),
      ...(refusedMeanwhile.length === 0
        ? []
        : [`Since your last action the browser refused what the page tried to open: ${refusedMeanwhile.join("; ")}`]),
      ...(cacheNote === undefined ? [] : [cacheNote]),
      `Step ${stepNumber}. Current page:\n${observation.text}`,
      ...(imageNote === "" ? [] : [imageNote])
    ].join("\n\n")
    const turn = Prompt.make([{
      role: "user",
      content: settings.vision && image !== undefined
        ? [{ type: "text", text: userText }, { type: "file", mediaType: "image/jpeg", data: image }]
        : userText
    }])
    const response = yield* LanguageModel.generateText({
      prompt: redactPrompt(Prompt.concat(history, turn), secrets),
      toolkit: modelToolkit,
      toolChoice: "required"
    }).pipe(Effect.provide(Layer.merge(model.layer, modelHandlers)))
    // The step's actions left the boundary: the run ends and this step is not charged.
    if (yield* endedOnBoundary) return

    personHadControl = false
    cacheNote = undefined
    if (response.text.trim() !== "") yield* ctx.emit("run.message", { role: "agent", content: redact(response.text) })

    // Old observations are dropped from the history: the next turn carries a fresh one.
    const compacted = Prompt.make([{
      role: "user",
      content: [...messages.map((m) => `Message from the user: ${m}`), `Step ${stepNumber}: observed ${observation.url} (${observation.title}).`].join("\n")
    }])
    history = Prompt.concat(Prompt.concat(history, compacted), Prompt.fromResponseParts(response.content))
    if (response.toolCalls.length === 0) {
      history = Prompt.concat(history, Prompt.make([{ role: "user", content: "Act by calling a tool; call done when the task is complete." }]))
    }

    // The step is complete: charge it and checkpoint it together (see RunStore.completeStep).
    const usage = response.usage
    const storageState = yield* Effect.tryPromise(() => lease.context.storageState()).pipe(
      Effect.timeoutOption("5 seconds"),
      Effect.map(Option.getOrUndefined),
      Effect.orElseSucceed(() => undefined)
    )
    const active = lease.page()
    const dirtyForm = active === undefined ? false : yield* Effect.tryPromise(() => active.evaluate(hasUnsubmittedInput)).pipe(
      Effect.timeoutOption("2 seconds"),
      Effect.map((result) => Option.getOrElse(result, () => false)),
      Effect.orElseSucceed(() => false)
    )
    const charged = yield* store.completeStep(runId, model.costUsd(usage.inputTokens.total ?? 0, usage.outputTokens.total ?? 0), {
      step: stepNumber,
      history: encodePrompt(history),
      url: active?.url() ?? null,
      tabs: lease.pages().map((page) => page.url()),
      dirtyForm,
      storageState
    }, executor, [{
      // The tokens the step's model call used: what users compare agents by (wa eval reads them).
      type: "run.usage",
      data: { step: stepNumber, input_tokens: usage.inputTokens.total ?? 0, output_tokens: usage.outputTokens.total ?? 0 }
    }])
    exhausted = charged.exhausted
  })

  // The replay of a cached script: the index of its next step (the script's length once it is
  // used up or when there is none), the step the replay could not take (handed to the model until
  // the model's own action succeeds), and how many steps the model took in place of the script's.
  const cachedSteps: ReadonlyArray<CachedStep> = script?.steps ?? []
  let replayAt = 0
  let missed: { readonly index: number; readonly step: CachedStep; readonly reason: string; readonly recordedBefore: number } | undefined
  let healedSteps = 0
  if (caching) {
    yield* script === undefined
      ? ctx.emit("run.cache.miss", { reason: "no_script" })
      : ctx.emit("run.cache.hit", { script_id: script.id, version: script.version, steps: cachedSteps.length })
  }

  /** One step of the cached script, without the model: checked, found in the page, acted. */
  const replayStep = Effect.gen(function*() {
    if (yield* endedOnBoundary) return
    const cached = cachedSteps[replayAt]!
    const index = replayAt
    replayAt += 1
    // A step with no element (navigate) needs no look at the page first.
    const needsPage = cached.target !== null || cached.to_target !== null || cached.tool === "done"
    const snapshot = needsPage ? redact((yield* observeForModel.pipe(Effect.provideService(RunContext, ctx))).text) : ""
    recorder?.observed(snapshot)
    const plan = yield* planStep(lease, cached, snapshot)
    if (plan._tag === "miss") {
      missed = { index, step: cached, reason: plan.reason, recordedBefore: recorder?.steps().length ?? 0 }
      return
    }
    const stepNumber = yield* store.recordStep(runId, executor)
    const recordedBefore = recorder?.steps().length ?? 0
    if (!plan.byCss) recorder?.replays(cached)
    const failure = yield* runTool(plan.tool, plan.params)
    if (yield* endedOnBoundary) return
    if (failure !== undefined) missed = { index, step: cached, reason: redact(failure), recordedBefore }
    else if (plan.byCss) {
      // Found by its CSS path only: the element was renamed or its role changed. The step is
      // healed without the model; the saved script describes the element as it is now.
      healedSteps += 1
      const now = recorder?.steps()[recordedBefore]
      yield* ctx.emit("run.cache.step_healed", {
        step: index + 1,
        by: "css_path",
        reason: `the page has no ${cached.target?.role} ${JSON.stringify(cached.target?.name)}; found by its CSS path`,
        old: stepSummary(cached),
        new: now === undefined ? null : stepSummary(now)
      })
    }
    const active = lease.page()
    // No model call: the step costs browser time only (charged by completeStep).
    const charged = yield* store.completeStep(runId, 0, {
      step: stepNumber,
      history: encodePrompt(history),
      url: active?.url() ?? null,
      tabs: lease.pages().map((page) => page.url()),
      dirtyForm: false,
      storageState: undefined
    }, executor)
    exhausted = charged.exhausted
  })

  /** The model takes the step the replay missed; once one of its actions succeeds the replay goes on. */
  const healStep = Effect.gen(function*() {
    const miss = missed!
    const replayed = recorder?.steps().slice(0, miss.recordedBefore).map((step) => `${step.tool}${step.target === null ? "" : ` ${step.target.role} ${JSON.stringify(step.target.name)}`}`) ?? []
    cacheNote = [
      replayed.length === 0 ? "This task has a saved script of its actions." : `The first actions of this task were replayed from its saved script: ${replayed.join("; ")}.`,
      `The script's next action (${miss.step.tool}${miss.step.target === null ? "" : ` on ${miss.step.target.role} ${JSON.stringify(miss.step.target.name)}`}) could not be replayed: ${miss.reason}.`,
      "Take that step yourself on the current page (or what the page needs instead), then go on with the task."
    ].join(" ")
    yield* step
    const steps = recorder?.steps() ?? []
    if (steps.length > miss.recordedBefore) {
      healedSteps += 1
      yield* ctx.emit("run.cache.step_healed", {
        step: miss.index + 1,
        by: "model",
        reason: miss.reason,
        old: stepSummary(miss.step),
        new: stepSummary(steps[miss.recordedBefore]!)
      })
      missed = undefined
    }
  })

  /** At done: the first run of a task saves its script; a replay that healed saves the healed script as its next version. */
  const saveScript = Effect.gen(function*() {
    if (recorder === undefined || run.instructions === null) return
    if (script !== undefined && healedSteps === 0 && missed === undefined) {
      yield* cacheScripts.recordUse(script.id, false)
      return
    }
    const saved = yield* cacheScripts.save({
      projectId: run.project_id,
      instructions: run.instructions,
      startOrigin,
      outputSchema: request.output_schema ?? null,
      steps: recorder.steps(),
      sourceRunId: runId,
      healedSteps
    })
    if (script !== undefined) yield* cacheScripts.recordUse(script.id, true)
    yield* ctx.emit("run.cache.saved", { script_id: saved.id, version: saved.version, steps: recorder.steps().length, healed_steps: healedSteps })
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("the run's cached script was not saved", cause)))

  // Set when a step's charge left the project unable to pay for more (billing on): the run ends
  // failed with budget_exceeded before its next step; what it spent stays charged.
  let exhausted: Exhausted | null = null

  const loop = Effect.gen(function*() {
    while (true) {
      const current = yield* store.getRun(runId)
      if (current === undefined || isTerminal(current.status)) return
      if (current.status === "paused") {
        yield* waitWhilePaused
        continue
      }
      const output = yield* Ref.get(finalOutput)
      if (Option.isSome(output)) {
        yield* settleDownloads // a file the page is still downloading belongs to this run's result
        yield* saveScript
        const proposed = yield* Ref.get(proposedNext)
        if (proposed !== undefined) {
          // Applied before the run ends: a resumed run calls done again and proposes again.
          const next = yield* proposeNextRun(runId, proposed)
          if (next !== undefined) {
            yield* store.appendEvent(runId, "run.next_run_scheduled", { run_id: runId, proposed_at: proposed.toISOString(), next_run_at: next.toISOString() }, executor)
          }
        }
        yield* beforeEnd
        yield* store.transition(runId, "done", { output: output.value, terminalReason: "done", executor }).pipe(Effect.ignore)
        return
      }
      if (exhausted !== null) {
        yield* beforeEnd
        yield* store.transition(runId, "failed", {
          executor,
          terminalReason: "budget_exceeded",
          errorCode: "budget_exceeded",
          errorDetail: budgetExceededDetail(exhausted)
        }).pipe(Effect.ignore)
        return
      }
      if (current.step_count >= current.max_steps) {
        yield* beforeEnd
        yield* store.transition(runId, "failed", {
          executor,
          expired: true,
          terminalReason: "expired",
          errorCode: "max_steps_exceeded",
          errorDetail: `the run used its ${current.max_steps} steps without finishing; POST .../continue to go on with a fresh budget`
        }).pipe(Effect.ignore)
        return
      }
      if (missed !== undefined) yield* healStep
      else if (replayAt < cachedSteps.length) yield* replayStep
      else yield* step
    }
  })

  // A step that failed ends the run with what failed: the browser, the model, or the agent's work.
  yield* loop.pipe(Effect.catch((failure) => {
    if (failure instanceof RunFailure) return Effect.fail(failure)
    const error = failure as { _tag?: string; message?: string }
    const crashed = error._tag === "BrowserCrashed" || lease.crashed()
    return Effect.fail(new RunFailure({
      code: crashed ? "browser_crashed" : error._tag === "AiError" ? "model_error" : "agent_error",
      detail: crashed ? "the browser of this session crashed; the session's next run gets a fresh browser" : redact(error.message ?? String(error))
    }))
  }))
}, Effect.scoped)

/** The detail of a run that needs the model when none is configured. */
export const modelNotConfigured = "no language model is configured; set WA_MODEL_BASE_URL or WA_MODEL_API_KEY (and WA_MODEL)"

const takeScreenshot = (ctx: RunContext["Service"]) => screenshot(ctx.lease)

/** What the model is told about the image that comes with the observation. */
const visionNote = (shot: MarkedScreenshot): string =>
  `Screenshot of the viewport attached (${shot.width}x${shot.height} px` +
  (shot.scale === 1 ? ", the CSS pixels click_at and type_at take)" : `; divide image coordinates by ${Number(shot.scale.toFixed(4))} for click_at and type_at)`) +
  (shot.marks.length > 0 ? ". Boxes labelled with refs mark the elements of the snapshot; use click_at only where there is no ref." : ".")

/**
 * The conversation as the model gets it, with the run's secrets redacted in every text and tool
 * result (file tools' results and anything else the tools did not redact themselves); images are
 * left as they are (fields holding a secret are masked on the page).
 */
const structural = new Set(["role", "type", "id", "name", "mediaType", "providerName", "providerExecuted", "isFailure"])
const redactPrompt = (prompt: Prompt.Prompt, secrets: RunSecrets): Prompt.Prompt => {
  if (secrets.listed.length === 0) return prompt
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return secrets.redact(value)
    if (Array.isArray(value)) return value.map(walk)
    if (value !== null && typeof value === "object") {
      if ((value as { type?: unknown }).type === "file") return value
      // The structure's own strings (roles, part types, tool names and call ids) stay as they are.
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, structural.has(key) ? item : walk(item)]))
    }
    return value
  }
  return decodePrompt(walk(encodePrompt(prompt)))
}

/** Runs in the page: whether any field holds a value the user typed or chose but did not submit. */
const hasUnsubmittedInput = () =>
  Array.from(document.querySelectorAll("input, textarea, select")).some((element) => {
    if (element instanceof HTMLInputElement) {
      if (element.type === "checkbox" || element.type === "radio") return element.checked !== element.defaultChecked
      return !["hidden", "submit", "button", "reset", "image"].includes(element.type) && element.value !== element.defaultValue
    }
    if (element instanceof HTMLTextAreaElement) return element.value !== element.defaultValue
    if (element instanceof HTMLSelectElement) return Array.from(element.options).some((option) => option.selected !== option.defaultSelected)
    return false
  })
