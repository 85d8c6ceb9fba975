// A TCP relay in front of LocalStack that can be taken down: while down, nothing listens on its port (a client's
// connect is refused, as when the endpoint restarts) and every connection it was relaying is cut (a call in flight
// fails with a reset). The AWS clients under test point at it; LocalStack itself is never touched.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class Outage {
  private server: Server | undefined;
  private readonly open = new Set<Socket>();
  /** Connections accepted while up (relayed to LocalStack). */
  accepted = 0;
  /** Times the relay went down. */
  outages = 0;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  /** A relay to `endpoint` (http://host:port) on a free local port, up. */
  static async start(endpoint: string): Promise<Outage> {
    const u = new URL(endpoint);
    const probe = createServer();
    const port = await new Promise<number>((resolve) =>
      probe.listen(0, '127.0.0.1', () => resolve((probe.address() as { port: number }).port)),
    );
    await new Promise((r) => probe.close(r));
    const o = new Outage({ host: u.hostname, port: Number(u.port) }, port);
    await o.up();
    return o;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get isUp(): boolean {
    return this.server !== undefined;
  }

  /** Listens again (after `down`). */
  async up(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.server) return;
    const server = createServer((client) => {
      this.accepted++;
      const upstream = createConnection(this.target);
      this.open.add(client).add(upstream);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.open.delete(client);
        this.open.delete(upstream);
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  /** Stops listening and cuts every relayed connection; up again after `ms` when given. */
  down(ms?: number): void {
    if (!this.server) return;
    this.outages++;
    this.server.close();
    this.server = undefined;
    for (const s of this.open) s.destroy();
    this.open.clear();
    if (ms !== undefined) this.timer = setTimeout(() => void this.up(), ms);
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    const s = this.server;
    this.server = undefined;
    for (const c of this.open) c.destroy();
    if (s) await new Promise((r) => s.close(r));
  }
}
