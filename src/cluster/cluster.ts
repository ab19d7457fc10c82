/**
 * Effect Cluster of the service, in one of two modes (WA_CLUSTER, see README "Scale out"):
 *
 * - `single` (default without DATABASE_URL): a SingleRunner whose message and runner storage are
 *   tables in the service's own PostgreSQL, so entities survive restarts of the one process.
 * - `socket` (default with DATABASE_URL): a socket runner (@effect/platform-node) joining every
 *   other runner on the same database. Shards are spread over the runners registered in the SQL
 *   runner table, messages go through the SQL message storage, and runners call each other over
 *   TCP at the address each one advertises.
 *
 * The socket runner's ShardingConfig is built from AppConfig only: Effect's `layerFromEnv` would
 * read HOST / PORT (ours is WA_PORT) and tuning knobs from unrelated variables.
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { Cause, Duration, Effect, Layer, Option } from "effect"
import { MessageStorage, RunnerAddress, RunnerHealth, Runners, Sharding, ShardingConfig, SingleRunner, SocketRunner, SqlMessageStorage, SqlRunnerStorage } from "effect/cluster"
import type { SqlClient } from "effect/sql"
import type { ConfigError } from "effect/Config"
import { RpcSerialization } from "effect/rpc"
import { SocketServer } from "effect/socket"
import { AppConfig, type AppConfigShape, clusterMode } from "../config/config.ts"

/** What every mode provides to the entities and their clients. */
export type ClusterLayer = Layer.Layer<Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage, ConfigError, SqlClient.SqlClient>

/**
 * The all-in-one cluster. Messages are stored in PostgreSQL (entities survive restarts); runner and
 * shard-lock state is in memory: the data dir's lock already makes this process the only runner,
 * and shard locks refreshed through a busy connection pool would time out under load and make the
 * runner drop (and re-acquire) every shard.
 */
export const SingleRunnerLive: ClusterLayer = SingleRunner.layer({ runnerStorage: "memory" }).pipe(
  Layer.provide(NodeCrypto.layerDigest)
)

/** ShardingConfig of a socket runner advertising `advertised` and listening on `listen`. */
export const socketShardingConfig = (config: AppConfigShape, advertised: RunnerAddress.RunnerAddress, listen: RunnerAddress.RunnerAddress) =>
  ShardingConfig.layer({
    runnerAddress: Option.some(advertised),
    runnerListenAddress: Option.some(listen),
    shardsPerGroup: config.clusterShards,
    runnerHealthCheckInterval: Duration.seconds(config.clusterHealthCheckSeconds),
    shardLockExpiration: Duration.seconds(config.clusterLockExpirationSeconds),
    // Persisted messages are normally announced to their runner at once; the poll only picks up
    // what an announcement missed (a runner that died), so it can be short without much load.
    entityMessagePollInterval: Duration.seconds(2),
    refreshAssignmentsInterval: Duration.seconds(2),
    entityTerminationTimeout: Duration.seconds(Math.max(5, config.drainSeconds))
  })

/**
 * A socket runner. The socket is bound first, so WA_RUNNER_PORT=0 works: the runner advertises
 * the port the OS actually gave it, not 0.
 */
const socketRunner = (config: AppConfigShape): ClusterLayer => {
  const listenHost = Option.getOrElse(config.runnerListenHost, () => config.runnerHost)
  return Layer.unwrap(Effect.gen(function*() {
    const server = yield* SocketServer.SocketServer
    const bound = server.address
    const port = bound._tag === "UnixPathAddress" ? config.runnerPort : bound.port
    const advertised = RunnerAddress.make(config.runnerHost, port)
    const listen = RunnerAddress.make(listenHost, port)
    yield* Effect.logInfo("cluster runner").pipe(Effect.annotateLogs({ mode: "socket", runner: `${config.runnerHost}:${port}`, listen: `${listenHost}:${port}` }))
    const shardingConfig = socketShardingConfig(config, advertised, listen)
    const clientProtocol = NodeClusterSocket.layerClientProtocol
    const runnerHealth = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))
    return SocketRunner.layer.pipe(
      Layer.provide(clientProtocol),
      Layer.provide(runnerHealth),
      Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
      Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
      Layer.provideMerge(shardingConfig),
      Layer.provide(RpcSerialization.layerSchemaBinary())
    )
  })).pipe(
    Layer.provide(Layer.effect(
      SocketServer.SocketServer,
      NodeSocketServer.make({ host: listenHost, port: config.runnerPort }).pipe(
        Effect.catchCause((cause) =>
          Effect.die(new Error(`cannot listen for cluster runners on ${listenHost}:${config.runnerPort}: ${Cause.pretty(cause).split("\n")[0]}`))
        )
      )
    ))
  )
}

/** The cluster for the configured mode (WA_CLUSTER, defaulted from DATABASE_URL). */
export const ClusterLive: Layer.Layer<
  Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage,
  ConfigError,
  SqlClient.SqlClient | AppConfig
> = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  if (clusterMode(config) === "single") {
    yield* Effect.logInfo("cluster runner").pipe(Effect.annotateLogs({ mode: "single" }))
    return SingleRunnerLive
  }
  return socketRunner(config)
}))
