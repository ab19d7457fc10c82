/**
 * The layers of `wa serve` (API + cluster runner + embedded database) and `wa runner` (a cluster
 * runner with probes and metrics only). Loaded only by those two verbs (src/cli/operator.ts), so
 * `wa --help` and the client verbs do not load the server.
 */
import { Layer } from "effect"
import { ApiKeys } from "./auth/api-keys.ts"
import { BootstrapLive } from "./auth/bootstrap.ts"
import { Projects } from "./auth/projects.ts"
import { AgentModel } from "./agent/model.ts"
import { BrowserPool } from "./browser/pool.ts"
import { ClusterLive } from "./cluster/cluster.ts"
import { DrainLive, RunnerLifecycle } from "./cluster/lifecycle.ts"
import { RunnerHttpLive } from "./cluster/runner-http.ts"
import { StartupRecoveryLive } from "./entities/startup-recovery.ts"
import { RunEventBus } from "./events/run-event-bus.ts"
import { RunStore } from "./store/runs.ts"
import { SessionStore } from "./store/sessions.ts"
import { ScreenshotStore } from "./store/screenshots.ts"
import { ArtifactStore } from "./store/artifacts.ts"
import { WorkspaceStore } from "./store/workspace-store.ts"
import { TakeControl } from "./control/take-control.ts"
import { Reader } from "./reader/reader.ts"
import { ReaderBrowser } from "./reader/reader-browser.ts"
import { WebSearch } from "./engines/web-search.ts"
import { SearchLive } from "./search/live.ts"
import { ResearchLive } from "./research/live.ts"
import { DoAnythingLive } from "./do-anything/live.ts"
import { UndispatchedRunsLive } from "./runs/undispatched.ts"
import { Callbacks } from "./webhooks/callbacks.ts"
import { RunNotifier } from "./webhooks/run-notifier.ts"
import { NotificationChannelsLive } from "./webhooks/notification-channels.ts"
import { SchedulesLive } from "./schedules/schedules.ts"
import { TrackLive } from "./track/live.ts"
import { callbackView } from "./http/views/callback-view.ts"
import { AppConfig } from "./config/config.ts"
import { HttpLive, logListening, RequestBase } from "./http/server/app.ts"
import { logLayer } from "./observability/log-layer.ts"
import { tracingLayer } from "./observability/tracing.ts"
import { databaseLayer } from "./store/database.ts"
import { AutoRechargeLive } from "./billing/auto-recharge.ts"
import { MailInboxStore } from "./mail/inbound/inbox-store.ts"
import { AgentInboxLive } from "./mail/inbound/agent-inbox.ts"
import { InboundMailLive } from "./mail/inbound/listener.ts"

/**
 * Services of the products, over the database and the cluster: one layer per product
 * (src/<product>/live.ts: its service, its entity, what else it owns). The sweep for undispatched
 * runs sends to the products' entities, so it starts once they are bound.
 */
const ProductServices = UndispatchedRunsLive.pipe(
  Layer.provideMerge(Layer.mergeAll(DoAnythingLive, ResearchLive, SearchLive, TrackLive)),
  Layer.provideMerge(StartupRecoveryLive),
  Layer.provideMerge(RunNotifier.layer(callbackView)),
  Layer.provideMerge(TakeControl.layer),
  Layer.provideMerge(NotificationChannelsLive),
  Layer.provideMerge(SchedulesLive),
  Layer.provideMerge(WebSearch.layerFetch),
  Layer.provideMerge(Reader.layer.pipe(Layer.provide(ReaderBrowser.layerFromPool))),
  Layer.provideMerge(Layer.mergeAll(
    RunStore.layer,
    SessionStore.layer,
    RunEventBus.layer,
    ScreenshotStore.layer,
    ArtifactStore.layer,
    WorkspaceStore.layer,
    AgentModel.layer,
    BrowserPool.layerFromAppConfig,
    Callbacks.layer,
    // Session inboxes (agentmail): what the agent's mail tools read.
    AgentInboxLive.pipe(Layer.provideMerge(MailInboxStore.layer))
  )),
  Layer.provideMerge(ClusterLive)
)

/** What `serve` and `runner` both stand on: the products, the runner lifecycle, the stores, the
 * database, the logger and the config. */
const RunnerFoundation = ProductServices.pipe(
  Layer.provideMerge(RunnerLifecycle.layer),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, Projects.layer)),
  Layer.provideMerge(databaseLayer("own")),
  // What request fibers start from (src/http/server/app.ts): the config and the logging below it.
  Layer.provideMerge(RequestBase.layer),
  Layer.provideMerge(Layer.merge(logLayer("Info"), tracingLayer)),
  Layer.provideMerge(AppConfig.layer)
)

// On SIGTERM the layers close in reverse order: HTTP first, then the drain (runs in flight may
// finish), then the entities and the cluster (shards handed over). See src/cluster/lifecycle.ts.
export const serve = Layer.mergeAll(
  Layer.effectDiscard(logListening).pipe(Layer.provideMerge(HttpLive)),
  BootstrapLive,
  AutoRechargeLive,
  // The SMTP listener of session inboxes (WA_SMTP_LISTEN; off unless set).
  InboundMailLive
).pipe(
  Layer.provide(DrainLive),
  Layer.provide(RunnerFoundation)
)

/** A runner only: the entities and the cluster, with probes and metrics on WA_PORT (no API). */
export const runner = DrainLive.pipe(
  Layer.provideMerge(Layer.effectDiscard(logListening).pipe(Layer.provideMerge(RunnerHttpLive))),
  Layer.provide(RunnerFoundation)
)

