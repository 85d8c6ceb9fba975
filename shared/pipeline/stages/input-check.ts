// The run-starter's watch over a run's inputs between its config.yaml and its last dataset. Only `.parquet`
// uploads notify (a `.jsonl` rule would fire on the learner's metrics files too, a `.json` one would overlap the
// policy's LATEST.json: shared/topology.ts NOTIFICATIONS), and a file that never comes (a
// `.csv` uploaded instead, a misspelt name) notifies nothing, so the config's own notification starts a series of
// delayed looks (an InputCheck sent to run-events) that start the run once every dataset is there, fail it at once
// when input/ holds a dataset the config does not name, and fail it when its datasets have not all arrived
// INPUT_WAIT_SEC after the config.
import type { Queue } from '#shared/ports/queue';
import type { InputCheck } from '#shared/schemas/messages/run-event';

/** How long after its config.yaml a run waits for the datasets it names before it fails, saying which are missing. */
export const INPUT_WAIT_SEC = 30 * 60;

/**
 * Seconds before each look, by number (then the last one, again): a `.json` dataset uploaded right after its config
 * starts the run within seconds, and a long wait costs one small request a minute.
 */
export const INPUT_CHECK_DELAYS_SEC = [5, 10, 20, 40, 60] as const;

export const inputCheckDelaySec = (check: number): number =>
  INPUT_CHECK_DELAYS_SEC[Math.min(check, INPUT_CHECK_DELAYS_SEC.length) - 1]!;

/**
 * Files a user would mean as a dataset: the formats the pipeline reads, and common ones it does not (a `.csv` left
 * next to a config would otherwise wait forever). Other files in input/ (a README) are left alone.
 */
const DATASET_LIKE = /\.(parquet|jsonl|json|csv|tsv|arrow|feather)(\.gz|\.zst|\.bz2)?$/i;

/** Keys under input/ that look like datasets but are not among the files the config names. */
export function strayInputs(
  inputKeys: readonly string[],
  named: ReadonlySet<string>,
  config: string,
): string[] {
  return inputKeys.filter((k) => k !== config && !named.has(k) && DATASET_LIKE.test(k));
}

/** Sends look number `check` at the run's inputs, delayed per INPUT_CHECK_DELAYS_SEC. */
export async function scheduleInputCheck(queue: Queue, runId: string, check: number): Promise<void> {
  const message: InputCheck = { schemaVersion: 1, kind: 'input-check', runId, check };
  await queue.send(JSON.stringify(message), { delaySec: inputCheckDelaySec(check) });
}
