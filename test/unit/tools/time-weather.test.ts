import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '#shared/tools/registry';
import { simulateWeather } from '#shared/tools/weather/simulator';

const clock = () => new Date('2024-03-10T12:30:00Z');

describe('get_current_time', () => {
  it('formats the injected clock in an IANA zone, UTC by default', async () => {
    const reg = await buildToolRegistry({ tools: [{ kind: 'get_current_time', config: {} }] }, { clock });
    // New York is on EST (UTC-5) until 2024-03-10 07:00 UTC... that day it switches at 2am local: 12:30Z is 08:30 EDT.
    expect(
      (await reg.call({ name: 'get_current_time', arguments: { timezone: 'America/New_York' } })).output,
    ).toBe('2024-03-10T08:30:00-04:00 (Sunday) America/New_York');
    expect(
      (await reg.call({ name: 'get_current_time', arguments: { timezone: 'Asia/Kolkata' } })).output,
    ).toBe('2024-03-10T18:00:00+05:30 (Sunday) Asia/Kolkata');
    expect((await reg.call({ name: 'get_current_time', arguments: {} })).output).toBe(
      '2024-03-10T12:30:00+00:00 (Sunday) UTC',
    );
    const bad = await reg.call({ name: 'get_current_time', arguments: { timezone: 'Mars/Olympus' } });
    expect(bad.error).toEqual({
      type: 'invalid_arguments',
      message: 'unknown time zone "Mars/Olympus"; use an IANA name like "Asia/Tokyo"',
    });
  });
});

describe('weather_query', () => {
  it('simulates deterministically: same place and day, same report; another day may differ', async () => {
    const reg = await buildToolRegistry({ tools: [{ kind: 'weather_query', config: {} }] }, { clock });
    const a = await reg.call({ name: 'weather_query', arguments: { location: 'Paris' } });
    const b = await reg.call({ name: 'weather_query', arguments: { location: '  paris ' } });
    expect(a.ok).toBe(true);
    expect(JSON.parse(a.output)).toEqual({ ...JSON.parse(b.output), location: 'Paris' });
    const report = JSON.parse(a.output);
    expect(report).toMatchObject({ date: '2024-03-10', units: 'celsius', source: 'simulated' });
    expect(report.temperature).toBeGreaterThanOrEqual(-10);
    expect(report.temperature).toBeLessThanOrEqual(35);
    const f = JSON.parse(
      (await reg.call({ name: 'weather_query', arguments: { location: 'Paris', units: 'fahrenheit' } }))
        .output,
    );
    expect(f.temperature).toBe(Math.round((report.temperature * 9) / 5 + 32));
    const days = new Set(
      Array.from({ length: 10 }, (_, d) =>
        JSON.stringify(simulateWeather('Paris', new Date(Date.UTC(2024, 0, d + 1)), 'celsius')),
      ),
    );
    expect(days.size).toBeGreaterThan(1);
    expect(
      (await reg.call({ name: 'weather_query', arguments: { location: 'Paris', units: 'kelvin' } })).error
        ?.type,
    ).toBe('invalid_arguments');
  });

  describe('open-meteo provider', () => {
    let server: Server;
    let base: string;
    beforeAll(async () => {
      // Stands in for the public API (no network here), answering in Open-Meteo's shapes.
      server = createServer((req, res) => {
        const u = new URL(req.url ?? '/', 'http://x');
        res.setHeader('content-type', 'application/json');
        if (u.pathname === '/v1/search')
          return res.end(
            JSON.stringify(
              u.searchParams.get('name') === 'Atlantis'
                ? {}
                : { results: [{ name: 'Oslo', latitude: 59.91, longitude: 10.75, country: 'Norway' }] },
            ),
          );
        expect(u.searchParams.get('latitude')).toBe('59.91');
        res.end(
          JSON.stringify({
            current: {
              time: '2024-03-10T12:30',
              temperature_2m: u.searchParams.get('temperature_unit') === 'fahrenheit' ? 35.6 : 2.0,
              relative_humidity_2m: 81,
              wind_speed_10m: 12.5,
              weather_code: 71,
            },
          }),
        );
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(() => server.close());

    it('geocodes, then reads current conditions', async () => {
      const reg = await buildToolRegistry({
        tools: [
          {
            kind: 'weather_query',
            config: {
              provider: 'open-meteo',
              geocoding_url: `${base}/v1/search`,
              forecast_url: `${base}/v1/forecast`,
            },
          },
        ],
      });
      const r = await reg.call({
        name: 'weather_query',
        arguments: { location: 'Oslo', units: 'fahrenheit' },
      });
      expect(JSON.parse(r.output)).toEqual({
        location: 'Oslo, Norway',
        date: '2024-03-10',
        condition: 'snow',
        temperature: 35.6,
        units: 'fahrenheit',
        humidity: 81,
        wind_kph: 12.5,
        source: 'open-meteo',
      });
      const missing = await reg.call({ name: 'weather_query', arguments: { location: 'Atlantis' } });
      expect(missing.error).toEqual({
        type: 'execution_error',
        message: 'no place named "Atlantis" was found',
      });
    });
  });
});
