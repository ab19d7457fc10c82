/**
 * The operator's probes of an API node, as services: /readyz asks Readiness, /metrics asks
 * NodeMetrics. Their implementations stand on what they read (the applied migrations,
 * src/store/readiness.ts; the cluster's and the browser pool's figures, src/cluster/node-metrics.ts),
 * so the HTTP handlers reach neither the store nor the cluster.
 */
import { Context, type Effect, Schema } from "effect"

/** Why the node is not ready: the database does not answer, or its migrations are not all applied. */
export class NotReady extends Schema.TaggedError<NotReady>()("NotReady", {
  detail: Schema.String
}) {}

export class Readiness extends Context.Service<Readiness, {
  /** Succeeds when the database answers (within 2 s) and has every migration of this build applied. */
  readonly check: Effect.Effect<void, NotReady>
}>()("wa/observability/Readiness") {}

export class NodeMetrics extends Context.Service<NodeMetrics, {
  /** This process's metrics in the Prometheus text format. */
  readonly render: Effect.Effect<string>
}>()("wa/observability/NodeMetrics") {}
