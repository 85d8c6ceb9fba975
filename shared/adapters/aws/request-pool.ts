// Entries of concurrent calls pooled into SQS batch requests (SendMessageBatch, DeleteMessageBatch): at most
// `maxInFlight` requests per queue at once; entries that arrive while they are all in flight wait and go together
// in the next (up to the batch's limits). With nothing in flight an entry goes at once (with those submitted in the
// same turn), so pooling costs no latency when the queue is quiet and saves requests when many records finish together (the AWS SDK for Java's buffered SQS
// client pools the same way; the JavaScript SDK has no such client).

interface Waiting<E, R> {
  readonly entry: E;
  readonly resolve: (r: R) => void;
  readonly reject: (err: unknown) => void;
}

/** What a batch request returns for each entry of its chunk, in order: a result, or the error of that entry. */
export type EntryResults<R> = (R | Error)[];

export class RequestPool<E, R> {
  private readonly waiting: Waiting<E, R>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly maxInFlight: number,
    /** The first request's entries out of those waiting (the batch limits: count, bytes); at least one. */
    private readonly firstChunk: (entries: readonly E[]) => number,
    private readonly request: (chunk: E[]) => Promise<EntryResults<R>>,
  ) {}

  /** Each entry's result once the request that carried it is answered; rejects if any of them failed. */
  submit(entries: readonly E[]): Promise<R[]> {
    const done = Promise.all(
      entries.map(
        (entry) => new Promise<R>((resolve, reject) => this.waiting.push({ entry, resolve, reject })),
      ),
    );
    // After the calls made in the same turn: records that finish together go in one request.
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        this.pump();
      });
    }
    return done;
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      const n = Math.max(1, this.firstChunk(this.waiting.map((w) => w.entry)));
      const items = this.waiting.splice(0, n);
      this.inFlight++;
      this.request(items.map((i) => i.entry))
        .then(
          (results) =>
            items.forEach((item, i) => {
              const r = results[i];
              if (r instanceof Error) item.reject(r);
              else if (r === undefined) item.reject(new Error('no result for an entry of the batch'));
              else item.resolve(r);
            }),
          (err: unknown) => {
            for (const item of items) item.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}
