import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file starts its own server and embedded PostgreSQL; two cores run two files at a time.
    fileParallelism: true,
    maxWorkers: 2
  }
})
