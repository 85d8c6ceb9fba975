// The one bound the suite puts on a test, a hook or a child process: long enough that no machine, however slow or
// loaded (a training test took 15 minutes at load 25 on 2 cores), reaches it while the work still progresses, so
// it only turns a real hang into a failure. No test bounds work by how fast the machine is (vitest.config.ts
// gives every test this timeout; child processes get it through `timeout: HANG_MS`).
export const HANG_MS = 1_800_000;
