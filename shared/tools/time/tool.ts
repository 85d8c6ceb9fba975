// `get_current_time`: the current time in an IANA time zone, from the injectable clock (tests pin it).
import { z } from 'zod';
import { defineToolKind } from '../kind.ts';
import { ToolFailure } from '../types.ts';

const Config = z.object({
  /** Zone used when the call gives none. */
  default_timezone: z.string().default('UTC'),
});

/** Formats `date` in `timeZone` as ISO-8601 local time with its offset, e.g. 2024-03-10T07:30:00-05:00. */
export function formatInZone(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'long',
      timeZoneName: 'longOffset',
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  // longOffset is "GMT-05:00", or plain "GMT" at UTC+0.
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : String(parts.timeZoneName).replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset} (${parts.weekday})`;
}

export function isValidTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const timeKind = defineToolKind({
  kind: 'get_current_time',
  defaults: { timeoutS: 2, numWorkers: 16 },
  config: Config,
  build: (options, { env }) => {
    if (!isValidTimeZone(options.default_timezone))
      throw new Error(
        `tool get_current_time: bad config: default_timezone: unknown time zone ${options.default_timezone}`,
      );
    return {
      tools: [
        {
          schema: {
            type: 'function',
            function: {
              name: 'get_current_time',
              description: 'Get the current date and time in a time zone.',
              parameters: {
                type: 'object',
                properties: {
                  timezone: {
                    type: 'string',
                    description: `IANA time zone such as "Europe/Paris" or "America/New_York" (default ${options.default_timezone}).`,
                  },
                },
                additionalProperties: false,
              },
            },
          },
          execute: async (args) => {
            const zone =
              typeof args.timezone === 'string' && args.timezone ? args.timezone : options.default_timezone;
            if (!isValidTimeZone(zone))
              throw new ToolFailure(
                'invalid_arguments',
                `unknown time zone "${zone}"; use an IANA name like "Asia/Tokyo"`,
              );
            return `${formatInZone(env.clock(), zone)} ${zone}`;
          },
        },
      ],
    };
  },
});
