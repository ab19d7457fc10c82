import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each process-level file starts its own server and embedded PostgreSQL; two cores run two files at a time.
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "process",
          include: ["test/**/*.test.ts"],
          exclude: ["test/in-process/**"]
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
