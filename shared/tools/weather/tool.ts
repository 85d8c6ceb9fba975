// `weather_query`: current weather for a place; the deterministic simulator by default, or a real
// Open-Meteo-compatible provider with `provider: open-meteo`.
import { z } from 'zod';
import { defineToolKind } from '../kind.ts';
import { ToolFailure } from '../types.ts';
import { openMeteoWeather } from './open-meteo.ts';
import { simulateWeather } from './simulator.ts';

const Config = z.object({
  provider: z.enum(['simulated', 'open-meteo']).default('simulated'),
  geocoding_url: z.url().default('https://geocoding-api.open-meteo.com/v1/search'),
  forecast_url: z.url().default('https://api.open-meteo.com/v1/forecast'),
  default_units: z.enum(['celsius', 'fahrenheit']).default('celsius'),
});

export const weatherKind = defineToolKind({
  kind: 'weather_query',
  defaults: { timeoutS: 10, numWorkers: 8 },
  config: Config,
  build: (options, { limits }) => ({
    tools: [
      {
        schema: {
          type: 'function',
          function: {
            name: 'weather_query',
            description: 'Get the current weather (condition, temperature, humidity, wind) for a city.',
            parameters: {
              type: 'object',
              properties: {
                location: { type: 'string', description: 'City name, e.g. "Paris" or "Austin, TX".' },
                units: {
                  type: 'string',
                  enum: ['celsius', 'fahrenheit'],
                  description: `Default ${options.default_units}.`,
                },
              },
              required: ['location'],
              additionalProperties: false,
            },
          },
        },
        execute: async (args, ctx) => {
          const location = String(args.location).trim();
          if (!location) throw new ToolFailure('invalid_arguments', 'location is empty');
          if (location.length > 200)
            throw new ToolFailure('invalid_arguments', 'location is longer than 200 characters');
          const units = (args.units as 'celsius' | 'fahrenheit' | undefined) ?? options.default_units;
          const report =
            options.provider === 'simulated'
              ? simulateWeather(location, ctx.clock(), units)
              : await openMeteoWeather(location, units, {
                  geocodingUrl: options.geocoding_url,
                  forecastUrl: options.forecast_url,
                  signal: ctx.signal,
                  maxRetries: limits.maxRetries,
                  retryBaseMs: limits.retryBaseMs,
                });
          return JSON.stringify(report);
        },
      },
    ],
  }),
});
