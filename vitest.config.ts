import { tmpdir } from "node:os"
import * as path from "node:path"
import { defineConfig } from "vitest/config"

// Every process-level test starts `node src/main.ts` (the service, `wa` commands, runners) dozens
// of times; Node's compile cache keeps the stripped TypeScript and V8's code of those modules
// between starts (checked against each file's contents), which takes about 40 % off each start's
// CPU. Set before the workers fork, so they and every process they spawn inherit it.
if (process.env["NODE_COMPILE_CACHE"] === undefined && process.env["NODE_DISABLE_COMPILE_CACHE"] === undefined) {
  process.env["NODE_COMPILE_CACHE"] = path.join(tmpdir(), "wa-node-compile-cache")
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // expect.poll waits for what a person would wait for (a page reacting to a server answer);
    // vitest's 1 s default is shorter than a loaded 2-core machine's scrypt sign-in plus a render.
    expect: { poll: { timeout: 15_000 } },
    // Each process-level file starts its own server and embedded PostgreSQL; two cores run two files at a time.
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "process",
          include: ["test/**/*.test.ts"],
          exclude: ["test/in-process/**"],
          // One initialised and migrated data dir per run, copied for each fresh service (service.ts).
          globalSetup: ["test/support/build-server.ts", "test/support/seed-data-dir.ts"]
        }
      },
      {
        // The real services in the test's process on one shared embedded PostgreSQL (one database per file).
        extends: true,
        test: {
          name: "in-process",
          include: ["test/in-process/**/*.test.ts"],
          globalSetup: ["test/in-process/global-setup.ts"]
        }
      }
    ]
  }
})
