import { defineConfig } from 'vitest/config';
import { HANG_MS } from './test/helpers/hang.ts';

// Two projects: `unit` (unit, embedded integration and CDK assertion tests; no server needed)
// and `e2e` (needs LocalStack at AWS_ENDPOINT_URL, started by scripts/e2e.sh; its global setup synthesizes the
// template every e2e file deploys through LocalStack's CloudFormation).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/infra/**/*.test.ts'],
          testTimeout: HANG_MS,
          hookTimeout: HANG_MS,
          pool: 'forks',
          globalSetup: ['test/helpers/global-setup.ts'],
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: HANG_MS,
          hookTimeout: HANG_MS,
          pool: 'forks',
          fileParallelism: false,
          globalSetup: ['test/e2e/support/global-setup.ts'],
        },
      },
    ],
  },
});
