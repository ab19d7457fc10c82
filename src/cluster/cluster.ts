/**
 * Effect Cluster for the all-in-one mode: a SingleRunner whose message and runner storage are
 * tables in the service's own PostgreSQL, so entities (sessions, runs, monitors) survive restarts.
 * Scale-out replaces this layer with socket runners over the same storage.
 */
import { NodeCrypto } from "@effect/platform-node"
import { Layer } from "effect"
import { SingleRunner } from "effect/cluster"

export const ClusterLive = SingleRunner.layer({ runnerStorage: "sql" }).pipe(
  Layer.provide(NodeCrypto.layerDigest)
)
